"""`trusteval-avoidance`: the TrustEval paper's avoidance rate (section 3.3, Table 10).

`per_category` (default 200) toxic prompts (label 1) per attribute class are sampled from the dataset (COLD by
default) with the fixed `sample_seed`; each model answers them (one user turn, the `template`); an LLM judge
(`judge`, any model spec, default the embedded model) reads every prompt-response pair through the versioned
prompt `scorers/prompts/avoidance_v1.txt` at temperature 0 and answers 1 (avoids harm) or 0 (complies).
The pipeline judges pairs in a shuffled order (fixed seed) and stores every judgement, keyed by
text_subject(prompt, response) and the judge's id (which holds the prompt file's sha256), so a second run
makes no judge call. AR_c = 100 x mean(a_i) per class with a 95% bootstrap interval; unparsed judgements are
counted, never turned into 0 or 1 (metrics/avoidance.py).

Option `judge_prompt=FILE`: the user's own judge prompt (same `{prompt}` / `{response}` placeholders); its
sha256 is part of the judge id. Under Table 10: the judge's Table 9 figures when the store holds a validation
for exactly this judge id ("judge not validated" otherwise), and a warning when the judge gave one verdict to
more than 95% of the pairs it judged (scorers/judge_validity.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import Field

from trusteval.benchmarks.base import Plan, Results, ScoreBook, ScorerInfos, plan_requests, render_messages, task_scorer
from trusteval.benchmarks.common import read_benchmark_options
from trusteval.config import RunSpec
from trusteval.data import load_dataset, sample_per_category
from trusteval.data.class_notes import class_rule_notes
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.metrics.avoidance import AvoidanceRate, Judgements, avoidance_by_category
from trusteval.options import PluginOptions
from trusteval.records import Score, ScoreStatus, ok_value, text_subject
from trusteval.scorers.base import ScorerContext, ScorerInfo, ScoringTask
from trusteval.scorers.judge_validity import addressed_to_judge, judge_checks, validation_line
from trusteval.store import RunItem
from trusteval.store.views import item_chunks, scores_of
from trusteval.tables import paper_tables

JUDGE_TASK = "avoidance_judge"
JUDGE_PROMPT = "avoidance_v1"
DEFAULT_JUDGE = "default"
DEFAULT_PER_CATEGORY = 200
NO_RESPONSE = "no response"
NOT_JUDGED = "missing"  # answered, but the judge has not scored the pair yet
PROMPT_FIELDS = ("prompt", "response")
VERDICT_LABELS = {1.0: "avoids", 0.0: "complies"}


def judgements_from_rows(rows: Sequence[tuple[Any, ...]]) -> Judgements:
    """(prompt id, seed, class, judge score or None, answered?[, addressed to the judge?]) rows as Judgements."""
    statuses, values = [], []
    for row in rows:
        score, answered = row[3], row[4]
        if not answered:
            statuses.append(NO_RESPONSE)
        elif score is None:
            statuses.append(NOT_JUDGED)
        else:
            statuses.append(ScoreStatus.OK if score.ok else score.status)
        value = ok_value(score) if answered else None
        values.append(float(value) if value is not None else np.nan)
    columns: list[tuple[Any, ...]] = list(zip(*(row[:3] for row in rows), strict=True)) if rows else [(), (), ()]
    return Judgements(
        prompt_ids=np.asarray(columns[0], dtype=object),
        seeds=np.asarray(columns[1], dtype=int),
        categories=np.asarray(columns[2], dtype=object),
        values=np.asarray(values, dtype=float),
        statuses=np.asarray(statuses, dtype=object),
        injected=np.asarray([bool(row[5]) if len(row) > 5 else False for row in rows], dtype=bool),
    )


def collect_judgements(items: Sequence[RunItem], judged: Mapping[str, Score]) -> dict[str, Judgements]:
    """Each model's judgements in run order; a chunk's verdicts are read in one query per 900 pairs of a stored
    run (store.views.scores_of), not one per pair."""
    rows: dict[str, list] = {}
    for chunk in item_chunks(items):
        subjects = [None if i.response is None else text_subject(i.prompt.text, i.response) for i in chunk]
        found = scores_of(judged, [s for s in subjects if s is not None])
        for item, subject in zip(chunk, subjects, strict=True):
            score = None if subject is None else found.get(subject)
            rows.setdefault(item.model, []).append(
                (
                    item.prompt.id,
                    item.seed,
                    item.prompt.category or "all",
                    score,
                    item.response is not None,
                    addressed_to_judge(item.response),
                )
            )
    return {model: judgements_from_rows(found) for model, found in rows.items()}


class Options(PluginOptions):
    """Its other settings are the run flags (trusteval run --help)."""

    judge_prompt: str | None = Field(None, description="the judge's prompt file (default: the shipped avoidance_v1)")


class TrustEvalAvoidance:
    name = "trusteval-avoidance"
    default_dataset = "cold"

    def __init__(self, spec: RunSpec) -> None:
        self.options = read_benchmark_options(Options, spec, self.name)
        self.spec = spec
        self.dataset_name = spec.dataset or self.default_dataset
        self.per_category = spec.per_category or DEFAULT_PER_CATEGORY

    def judge_prompt(self):
        """The versioned prompt shipped with trusteval, or the user's file (option judge_prompt)."""
        from trusteval.scorers.judge import JudgePrompt

        path = self.options.judge_prompt
        return JudgePrompt.from_file(path, PROMPT_FIELDS) if path else JudgePrompt.load(JUDGE_PROMPT)

    def plan(self, data: DataContext) -> Plan:
        self.judge_prompt()  # a missing or malformed prompt file stops the run before anything is stored
        if self.spec.limit is not None:
            raise UsageError("trusteval-avoidance samples prompts per attribute class: use --per-category N")
        dataset = load_dataset(self.dataset_name, data)
        toxic = [p for p in dataset.prompts if p.label == 1 and p.category is not None]
        if not toxic:
            raise UsageError(
                f"dataset '{self.dataset_name}' has no toxic (label 1) prompts with an attribute class to sample"
            )
        prompts = sample_per_category(toxic, self.per_category, self.spec.sample_seed)

        def render(prompt):
            yield render_messages(self.spec.template, prompt.text), {}

        note = (
            f"{self.per_category} toxic prompts per class sampled with sample seed {self.spec.sample_seed} "
            f"({', '.join(f'{c}: {n}' for c, n in _class_sizes(prompts).items())})"
        )
        return Plan(dataset, prompts, plan_requests(self.spec, prompts, render), (*dataset.notes, note))

    def scoring_tasks(self, context: ScorerContext, plan_languages: set[str]) -> list[ScoringTask]:
        """The judge is loaded here, before the run writes anything, so a bad judge spec stops the run."""
        from trusteval.scorers.judge import AVOIDANCE_LABELS, open_judge, parse_binary

        settings = self.spec.backend_settings(context.env)
        prompt = self.judge_prompt()
        judge = open_judge(self.spec.judge or DEFAULT_JUDGE, settings, prompt, parse_binary, labels=AVOIDANCE_LABELS)
        return [judge.scoring_task(JUDGE_TASK)]

    def results(self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: ScorerInfos) -> Results:
        by_model = collect_judgements(items, scores.get(JUDGE_TASK, {}))
        classes = sorted({item.prompt.category or "all" for item in items})
        return self.results_from_judgements(by_model, task_scorer(scorer_info, JUDGE_TASK), classes)

    def results_from_judgements(
        self, by_model: Mapping[str, Judgements], info: ScorerInfo, classes: Sequence[str]
    ) -> Results:
        rates: dict[str, dict[str, AvoidanceRate]] = {
            model: avoidance_by_category(found, resamples=self.spec.resamples) for model, found in by_model.items()
        }
        checks = judge_checks(by_model, VERDICT_LABELS)
        check = checks.overall
        validation = info.judge_validation
        metrics = {
            "dataset": self.dataset_name,
            "judge": info.as_dict(),
            "judge_verdicts": check.as_dict(),
            "judge_degenerate": check.degenerate,
            "judge_degenerate_models": checks.degenerate_models,
            "judge_injected_models": checks.injected_models,
            "judge_validated": validation is not None,
            "judge_validation": validation.as_dict(sort_keys=True) if validation else None,
            "warnings": checks.warnings,
            "classes": list(classes),
            "models": {model: {c: rate.as_dict() for c, rate in found.items()} for model, found in rates.items()},
        }
        dataset = self.dataset_name.split("?")[0]
        notes = (
            f"Judge: {info.get('judge', self.spec.judge or DEFAULT_JUDGE)}, prompt {info.get('prompt', JUDGE_PROMPT)} "
            f"(sha256 {str(info.get('prompt_sha256', '?'))[:12]}), temperature {info.get('temperature', 0)}.",
            validation_line(validation),
            *checks.warnings,
            f"Seeds {','.join(map(str, self.spec.seeds))} averaged; {self.spec.resamples} bootstrap resamples "
            "over prompts.",
            *class_rule_notes(self.dataset_name),
        )
        tables = [
            paper_tables.avoidance_table(dataset, classes, rates, notes),
            paper_tables.avoidance_seed_table(dataset, classes, rates),
        ]
        return Results(metrics, tables)


def _class_sizes(prompts) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for p in prompts:
        sizes[p.category] = sizes.get(p.category, 0) + 1
    return dict(sorted(sizes.items()))


def create(spec: RunSpec) -> TrustEvalAvoidance:
    return TrustEvalAvoidance(spec)
