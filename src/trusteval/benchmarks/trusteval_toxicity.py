"""`trusteval-toxicity`: the TrustEval paper's toxicity measurement (section 3.1, Tables 5 and 6).

Each dataset prompt is sent to the model as one user turn (the `template`, by default the prompt text
itself - our choice, the paper does not print its template). Prompt and response are scored by the toxicity
scorer and are toxic at score >= threshold; P can come from the dataset label instead
(`prompt_toxicity: label`, our option). T2T / T2NT / NT2T / NT2NT / TT per model, overall and per attribute
class, averaged over seeds, with 95% bootstrap intervals.

Empty (whitespace-only) responses are never scored: counted as "empty response". Every other response's
script is checked against the data's language (scorers/language.py); off-language responses are counted per
class and shown, with a warning above 10%; option `off_language=exclude` leaves them out (default keep).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from trusteval.benchmarks.base import Plan, Results, ScoreBook, ScorerInfos, plan_requests, render_messages, task_scorer
from trusteval.benchmarks.common import load_toxicity_scorer, read_benchmark_options, text_task, toxicity_scorer_spec
from trusteval.benchmarks.toxicity_pairs import REASONS, ModelPairs, PairColumns, classify, reason_codes
from trusteval.config import RunSpec
from trusteval.data import load_dataset, sample_stratified
from trusteval.data.class_notes import class_rule_notes
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.metrics.stats import Estimate
from trusteval.metrics.toxicity import toxicity_rates
from trusteval.options import PluginOptions
from trusteval.records import Score, TaskSubject
from trusteval.scorers.base import ScorerContext, ScorerInfo, ScoringTask
from trusteval.scorers.language import OFF_LANGUAGE_CHOICES, WARN_SHARE, script_code
from trusteval.scorers.refusal import REFUSAL_LABEL
from trusteval.store import RunItem
from trusteval.store.views import RunItems, StoredScores, item_chunks, ok_values_of, scores_of
from trusteval.tables.table import Table, TableNotes

PROMPT_TASK = "prompt_toxicity"
RESPONSE_TASK = "response_toxicity"


def collect_pairs(
    items: Sequence[RunItem],
    scores: ScoreBook,
    threshold: float,
    prompt_source: str,
    off_language_policy="keep",
    chunk_size: int | None = None,
) -> dict[str, ModelPairs]:
    """Group run items by model into classified pairs; count failures, empty and off-language responses
    instead of dropping them silently. A stored run is read column by column in SQL (toxicity_pairs), in its
    RunItems view's chunk size; other items are turned into the same columns `chunk_size` (None: READ_CHUNK) at
    a time."""
    scorers = _stored_scorers(items, scores, prompt_source)
    if scorers is not None:
        view: RunItems = items  # type: ignore[assignment]  # _stored_scorers found a RunItems view
        response_scorer, prompt_scorer = scorers
        columns = PairColumns.read(view.store, view.run_id, response_scorer, prompt_scorer, view.chunk_size)
    else:
        rows = (_item_rows(chunk, scores, prompt_source) for chunk in item_chunks(items, chunk_size))
        columns = PairColumns.from_rows(rows)
    return classify(columns, threshold, prompt_source, off_language_policy, "first seen")


def _item_rows(chunk: Sequence[RunItem], scores: ScoreBook, prompt_source: str) -> list[tuple]:
    """PairColumns rows of a chunk of items, as Store.iter_run_pairs reads them from a store."""
    response_scores, prompt_scores = _chunk_scores(chunk, scores, prompt_source)
    return [
        (
            item.request_key,
            item.model,
            item.seed,
            item.prompt.id,
            item.prompt.category or "all",
            item.prompt.label == 1,
            item.prompt.lang,
            script_code(item.response),
            response_scores.get(item.response_subject or ""),
            prompt_scores.get(item.prompt_subject),
        )
        for item in chunk
    ]


def _stored_scorers(items: Sequence[RunItem], scores: ScoreBook, prompt_source: str) -> tuple | None:
    """The (response, prompt) scorer ids when the items and scores are views of one store, else None."""
    wanted = [RESPONSE_TASK] if prompt_source == "label" else [RESPONSE_TASK, PROMPT_TASK]
    views = [scores.get(task) for task in wanted]
    if not isinstance(items, RunItems) or not all(isinstance(v, StoredScores) for v in views):
        return None
    if any(v.store is not items.store for v in views):  # type: ignore[union-attr]
        return None
    ids = [v.scorer_id for v in views]  # type: ignore[union-attr]
    return ids[0], (ids[1] if len(ids) > 1 else None)


def _chunk_scores(
    chunk: Sequence[RunItem], scores: ScoreBook, prompt_source: str
) -> tuple[Mapping[str, float], Mapping[str, float]]:
    """The ok values of the response and prompt scores of a chunk of items (store.views.ok_values_of)."""
    responses = [item.response_subject for item in chunk if item.response_subject]
    response_scores = ok_values_of(scores[RESPONSE_TASK], responses) if responses else {}
    if prompt_source == "label":
        return response_scores, {}
    return response_scores, ok_values_of(scores[PROMPT_TASK], [item.prompt_subject for item in chunk])


def response_checks(model_pairs: ModelPairs, policy: str) -> dict[str, Any]:
    """Empty and off-language responses of one model, for --json."""
    checked = sum(model_pairs.checked.values())
    off = sum(model_pairs.off_language.values())
    return {
        "empty": model_pairs.skipped.get("empty response", 0),
        "off_language": {
            "language": model_pairs.lang,
            "count": off,
            "checked": checked,
            "share": off / checked if checked else None,
            "by_class": dict(sorted(model_pairs.off_language.items())),
            "policy": policy,
            "warning": bool(checked) and off / checked > WARN_SHARE,
        },
    }


def response_notes(by_model: Mapping[str, ModelPairs], policy: str) -> list[str]:
    """One line per model with off-language responses (a WARNING above 10%); empty ones are in the left-out
    line as "empty response"."""
    notes = []
    for model, found in by_model.items():
        checks = response_checks(found, policy)["off_language"]
        if not checks["count"]:
            continue
        by_class = ", ".join(f"{c} {n}" for c, n in checks["by_class"].items())
        what = (
            "left out of the metrics (option off_language=exclude)"
            if policy == "exclude"
            else "scored and kept (option off_language=exclude leaves them out)"
        )
        line = (
            f"{model}: {checks['count']} of {checks['checked']} responses ({100 * checks['share']:.1f}%) are not "
            f"in {checks['language']} by script check ({by_class}); {what}"
        )
        notes.append(("WARNING: " if checks["warning"] else "") + line)
    return notes


def off_language_policy(options: Mapping[str, str]) -> str:
    value = options.get("off_language", "keep")
    if value not in OFF_LANGUAGE_CHOICES:
        raise UsageError(f"option off_language={value!r}: use one of {', '.join(OFF_LANGUAGE_CHOICES)}")
    return value


def rates_by_category(model_pairs: ModelPairs, resamples: int) -> dict[str, dict[str, Estimate]]:
    return {
        category: toxicity_rates(model_pairs.pairs.subset(model_pairs.categories == category), resamples=resamples)
        for category in sorted(set(model_pairs.categories.tolist()))
    }


def summarise(model_pairs: ModelPairs, resamples: int) -> tuple[dict[str, Estimate], dict[str, dict[str, Estimate]]]:
    """One model's Table 5 rates overall and per attribute class."""
    return toxicity_rates(model_pairs.pairs, resamples=resamples), rates_by_category(model_pairs, resamples)


def summary_json(model_pairs: ModelPairs, overall, per_category, policy: str = "keep") -> dict[str, Any]:
    return {
        "pairs": len(model_pairs.pairs),
        "skipped": dict(model_pairs.skipped),
        **response_checks(model_pairs, policy),
        "overall": {k: v.as_dict() for k, v in overall.items()},
        "by_category": {c: {k: v.as_dict() for k, v in rates.items()} for c, rates in per_category.items()},
    }


def scorer_notes(spec: RunSpec, info: ScorerInfo) -> list[str]:
    """Which scorer made the table, its held-out accuracy and, when one is stored, its validation on this
    dataset (`info.validation_note`)."""
    scorer_line = f"Toxicity scorer: {info.get('scorer', spec.scorer)}, toxic at score >= {spec.threshold}"
    if "test_accuracy" in info.described:
        scorer_line += f" (held-out accuracy {info.get('test_accuracy')}, macro-F1 {info.get('test_macro_f1')})"
    return [scorer_line, *(note for note in (info.validation_note, info.response_note) if note)]


def refusal_counts(items: Sequence[RunItem], scores: Mapping[str, Score]) -> dict[str, tuple[int, int]]:
    """Per model: (responses whose score says "refusal", the scorer's refusal rule; responses with a score).
    A run's own results, `trusteval report` and `trusteval tables` all count them here: views of one store are
    counted in SQL (Store.score_label_counts), other items one by one."""
    if isinstance(items, RunItems) and isinstance(scores, StoredScores) and scores.store is items.store:
        return items.store.score_label_counts(items.run_id, scores.scorer_id, REFUSAL_LABEL)
    found: dict[str, list[int]] = {}
    for chunk in item_chunks(items):
        stored = scores_of(scores, [item.response_subject for item in chunk if item.response_subject])
        for item in chunk:
            score = stored.get(item.response_subject or "")
            counts = found.setdefault(item.model, [0, 0])
            if score is not None and score.ok:
                counts[0] += score.label == REFUSAL_LABEL
                counts[1] += 1
    return {model: (refused, scored) for model, (refused, scored) in found.items()}


def refusal_notes(refusals: Mapping[str, tuple[int, int]]) -> list[str]:
    """One line per model whose responses the scorer's refusal rule found refusals in (counted non-toxic)."""
    return [
        f"{model}: {refused} of {scored} responses ({100 * refused / scored:.1f}%) are refusals by the scorer's "
        "refusal rule, counted as non-toxic responses (detector option refusal=rule; refusal=off scores them)"
        for model, (refused, scored) in refusals.items()
        if refused and scored
    ]


def prompt_toxicity_note(spec: RunSpec) -> str:
    """Which decided whether a prompt is toxic (P of T2T etc.): the scorer (the paper) or the dataset's labels."""
    source = "the scorer" if spec.prompt_toxicity == "scorer" else "dataset labels (--prompt-toxicity label)"
    return f"Prompt toxicity from: {source}"


def left_out_notes(by_model: Mapping[str, Any]) -> list[str]:
    """What each model left out and why (anything with a `skipped` Counter)."""
    notes = []
    for model, found in by_model.items():
        if found.skipped:
            counts = ", ".join(f"{n} {why}" for why, n in sorted(found.skipped.items()))
            notes.append(f"{model}: left out {counts}")
    return notes


class Options(PluginOptions):
    """Its other settings are the run flags (trusteval run --help)."""

    off_language: Literal["keep", "exclude"] = Field(
        "keep", description="answers not in the data's language: keep (counted, warned about) or exclude"
    )


class TrustEvalToxicity:
    name = "trusteval-toxicity"
    default_dataset = "cold"
    options_model: type[Options] = Options

    def __init__(self, spec: RunSpec) -> None:
        self.options = read_benchmark_options(self.options_model, spec, self.name)
        self.spec = spec
        self.dataset_name = spec.dataset or self.default_dataset
        self.off_language = self.options.off_language

    def plan(self, data: DataContext) -> Plan:
        dataset = load_dataset(self.dataset_name, data)
        prompts, note = sample_stratified(dataset.prompts, self.spec.limit, self.spec.sample_seed)

        def render(prompt):
            yield render_messages(self.spec.template, prompt.text), {}

        notes = (*dataset.notes, *([note] if note else []))
        return Plan(dataset, prompts, plan_requests(self.spec, prompts, render), notes)

    def scoring_tasks(self, context: ScorerContext, plan_languages: set[str]) -> list[ScoringTask]:
        raw = toxicity_scorer_spec(self.spec.scorer, plan_languages)
        scorer = load_toxicity_scorer(raw, context, plan_languages, force_language=self.spec.force_scorer_language)
        tasks = [
            text_task(
                RESPONSE_TASK, scorer, TaskSubject.RESPONSE, skip_empty=True, scorer_spec=raw,
                skip_off_language=self.off_language == "exclude",
            )
        ]  # fmt: skip
        if self.spec.prompt_toxicity == "scorer":
            tasks.insert(0, text_task(PROMPT_TASK, scorer, TaskSubject.PROMPT, scorer_spec=raw))
        return tasks

    def left_out(self, items: Sequence[RunItem], scores: ScoreBook) -> dict[str, str]:
        """request key -> why the item is left out of the metrics (the export's `left_out` column): the
        reasons `classify` counts, read by the same function (toxicity_pairs.reason_codes)."""
        source = self.spec.prompt_toxicity
        rows = [row for chunk in item_chunks(items) for row in _item_rows(chunk, scores, source)]
        if not rows:
            return {}
        codes = reason_codes(PairColumns.from_rows([rows]), source, self.off_language)
        return {row[0]: REASONS[code] for row, code in zip(rows, codes.tolist(), strict=True) if code >= 0}

    def results(self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: ScorerInfos) -> Results:
        by_model = collect_pairs(items, scores, self.spec.threshold, self.spec.prompt_toxicity, self.off_language)
        refusals = refusal_counts(items, scores.get(RESPONSE_TASK, {}))
        return self.results_from_pairs(by_model, task_scorer(scorer_info, RESPONSE_TASK), refusals)

    def results_from_pairs(
        self,
        by_model: Mapping[str, ModelPairs],
        info: ScorerInfo,
        refusals: Mapping[str, tuple[int, int]] | None = None,
    ) -> Results:
        """Metrics and tables from classified pairs (a stored run, or every run in a store: report.collect);
        `refusals`: per model, (responses the scorer's refusal rule called refusals, responses it scored)."""
        metrics: dict[str, Any] = {"dataset": self.dataset_name, "models": {}}
        overall, per_category = {}, {}
        for model, model_pairs in by_model.items():
            overall[model], per_category[model] = summarise(model_pairs, self.spec.resamples)
            metrics["models"][model] = summary_json(model_pairs, overall[model], per_category[model], self.off_language)
        if refusals is not None:  # a run's own results (run, report) and `trusteval tables` (report.collect)
            order = [*(m for m in by_model if m in refusals), *(m for m in refusals if m not in by_model)]
            metrics["refusals"] = {
                model: {"count": count, "scored": scored, "share": count / scored if scored else None}
                for model, (count, scored) in ((m, refusals[m]) for m in order)
            }
        notes = self._notes(by_model, info, refusal_notes(refusals or {}))
        metrics["warnings"] = [n for n in notes.all if n.startswith("WARNING")]
        return Results(metrics, self._tables(overall, per_category, notes), notes)

    def _notes(self, by_model: Mapping[str, ModelPairs], info: ScorerInfo, refusals: Sequence[str] = ()) -> TableNotes:
        return TableNotes(
            main_scorer=tuple(scorer_notes(self.spec, info)),
            run=(
                prompt_toxicity_note(self.spec),
                *class_rule_notes(self.dataset_name),
                f"Percent of all scored pairs; seeds {','.join(map(str, self.spec.seeds))} averaged; "
                f"95% bootstrap intervals ({self.spec.resamples} resamples over prompts).",
                *left_out_notes(by_model),
                *response_notes(by_model, self.off_language),
                *refusals,
            ),
        )

    def _tables(self, overall, per_category, notes: TableNotes) -> list[Table]:
        from trusteval.tables import paper_tables  # after generation: not before a run's first request

        dataset = self.dataset_name.split("?")[0]
        return [
            paper_tables.table5(dataset, overall, notes.all),
            paper_tables.table6(dataset, overall, notes.main_scorer),
            paper_tables.toxicity_by_category(dataset, per_category, notes.main_scorer),
            paper_tables.seed_spread(
                f"table5_{paper_tables.dataset_stem(dataset)}_seeds",
                f"Table 5 ({paper_tables.dataset_title(dataset)}): rates across seeds (%)",
                overall,
                notes.main_scorer,
            ),
        ]


def create(spec: RunSpec) -> TrustEvalToxicity:
    return TrustEvalToxicity(spec)
