"""What an HTML report shows, read from the store: each run's header facts, its sample rows and its figures.

Everything here is data (plain strings and numbers); `report.html` does the escaping and the layout. Sample rows
are ordered worst first: the highest response-side score (toxicity, refusal, judge value) on top, rows without
a score after them.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trusteval.benchmarks.trusteval_avoidance import JUDGE_TASK
from trusteval.records import ScoreStatus, TaskSubject, task_subject
from trusteval.report.export import export_records
from trusteval.store import Store
from trusteval.store.run_record import RunRecord
from trusteval.tables.table import Table

GENERATION_FAILED = "failed"  # a sample's outcome when the model gave no response
UNSCORED = frozenset({GENERATION_FAILED, ScoreStatus.UNPARSED, ScoreStatus.ERROR, ScoreStatus.REFUSED})
TEXT_LIMIT = 4000  # characters of a prompt or response kept in the page (the export has the full text)
SPEC_SETTINGS = ("seeds", "sample_seed", "limit", "temperature", "top_p", "max_new_tokens", "template",
                 "scorer", "threshold", "prompt_toxicity", "judge", "per_category", "resamples", "options")  # fmt: skip

# Bidirectional overrides, embeddings, isolates and marks: live, they reorder what a reader sees ("Trojan
# source"); in the sample browser each is shown as its code point instead.
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

NO_JUDGE = "no judge"
JUDGE_PREFIX = "judge/"  # scorers/judge.py: every LLM judge's scorer id starts so
GOOD_WHEN_HIGH = frozenset({JUDGE_TASK})  # avoidance: 1 = avoids harm, so the worst rows are the 0s (complies)


@dataclass
class Sample:
    run_id: str
    model: str
    seed: int
    category: str
    outcome: str
    severity: float | None  # sort key: higher is worse
    prompt: str
    response: str
    scores: dict[str, str]
    verdict: str = NO_JUDGE  # the judge's verdict (avoids, complies, unparsed, ...)
    judge: str = ""  # the judge's id: prompt file and its sha256, judge model identity, settings
    off_language: bool = False  # the response is in another script than the data's language

    def as_list(self, judges: Mapping[str, int]) -> list[Any]:
        """The row as the page's script reads it; the judge as an index into the page's list of judges. Every
        text has its bidirectional controls shown, not applied (`visible_bidi`)."""
        scores = {visible_bidi(k): visible_bidi(v) for k, v in self.scores.items()}
        return [visible_bidi(self.run_id), visible_bidi(self.model), self.seed, visible_bidi(self.category),
                visible_bidi(self.outcome), self.severity, visible_bidi(self.prompt), visible_bidi(self.response),
                scores, visible_bidi(self.verdict), judges.get(self.judge, -1), int(self.off_language)]  # fmt: skip


def visible_bidi(text: str) -> str:
    """The text with each bidirectional control character written as `[U+202E]`, so it reorders nothing."""
    return BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group()):04X}]", text)


SAMPLE_FIELDS = ("run", "model", "seed", "class", "outcome", "severity", "prompt", "response", "scores", "verdict",
                 "judge", "off-language")  # fmt: skip
COUNT_MEANINGS = {
    "failed": "the model call failed: no response (its error is in the row)",
    "unparsed": "a scorer or judge answered, but its answer could not be read as a score: left out of the rates",
    "error": "a scorer or judge call failed: left out of the rates, retried by the next run",
    "refused": "a scoring API declined the text (e.g. Perspective on an empty comment): left out of the rates",
    "empty responses": "the response is empty or only whitespace: never scored, left out of the rates",
}


@dataclass
class RunFacts:
    """The header of one run: each entry is (label, text); `counts` says what was failed, unparsed, empty."""

    run_id: str
    benchmark: str
    entries: list[tuple[str, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    meanings: dict[str, str] = field(default_factory=dict)  # count name -> what it means for the metrics
    off_language_policy: str = "keep"  # the run's option off_language


@dataclass
class Figure:
    name: str
    svg: str


@dataclass
class ReportDoc:
    title: str
    runs: list[RunFacts]
    tables: list[Table]
    figures: list[Figure]
    samples: list[Sample]
    notes: list[str] = field(default_factory=list)
    version: str = ""
    generated_at: float = field(default_factory=time.time)


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch)) if epoch else "n/a"


def _setting(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return "default" if value is None else str(value)


def _made_with(store: Store, run_id: str) -> str:
    """The trusteval version of the run's latest invocation (the report's own version is in the page header)."""
    version = RunRecord(store, run_id).tool_version()
    return f"trusteval {version}" if version else "not recorded (the run predates trusteval recording its version)"


def run_facts(store: Store, run_id: str) -> RunFacts:
    """Models, data with sha256, settings, scorers with their validity, dates and stage timings of a run."""
    info = store.run_info(run_id) or {}
    spec: dict[str, Any] = info.get("spec", {})
    facts = RunFacts(run_id, str(info.get("benchmark", "")))
    facts.off_language_policy = str((spec.get("options") or {}).get("off_language", "keep"))
    facts.entries += [
        ("benchmark", facts.benchmark),
        ("dataset", str(info.get("dataset", ""))),
        ("models", _setting(spec.get("models", []))),
        *_identities(store, run_id),
        ("status", str(info.get("status", ""))),
        ("made with", _made_with(store, run_id)),
        ("started", _when(info.get("created_at"))),
        ("updated", _when(info.get("updated_at"))),
    ]
    record = RunRecord(store, run_id)
    data = record.data()
    for source, digest in (data.sources or {}).items():
        facts.entries.append(("data file", f"{source} sha256 {digest}"))
    facts.entries += [("data note", str(note)) for note in data.notes]
    facts.entries += _sampling_facts(record)
    facts.entries += [(key.replace("_", " "), _setting(spec.get(key))) for key in SPEC_SETTINGS if key in spec]
    facts.entries += _scorer_facts(store, run_id, str(info.get("dataset", "")), data.content_sha256)
    timings = record.timings()
    facts.entries += [(f"time, latest invocation: {stage}", f"{seconds:.2f} s") for stage, seconds in timings.items()]
    return facts


def _sampling_facts(record: RunRecord) -> list[tuple[str, str]]:
    """Each model's stored sampling settings (trusteval.models.sampling), one entry per model."""
    from trusteval.models.sampling import one_line

    return [(f"sampling: {model}", one_line(described)) for model, described in record.sampling().items()]


def _identities(store: Store, run_id: str) -> list[tuple[str, str]]:
    """Each model's identity (what keys its answers: backend, weights file hash, ...) beside its spec."""
    from trusteval.report.collect import model_identities

    return [(f"model identity ({spec})", identity) for spec, identity in model_identities(store, run_id).items()]


def _scorer_facts(store: Store, run_id: str, dataset: str, data_sha256: str | None) -> list[tuple[str, str]]:
    """Each task's scorer or judge id and its validity on this data: a scorer's verdict (valid / weak /
    invalid / not validated) and validation note, a judge's Table 9 line (or that it was not validated)."""
    from trusteval.scorers.judge_validity import stored_validation, validation_line
    from trusteval.scorers.validation import scorer_info

    found = []
    for task, scorer_id in RunRecord(store, run_id).tasks().items():
        found.append((f"scorer ({task})", scorer_id))
        if scorer_id.startswith(JUDGE_PREFIX):
            found.append((f"judge validity ({task})", validation_line(stored_validation(store, scorer_id))))
            continue
        known = scorer_info(store, scorer_id, dataset, data_sha256)
        for key, value in (("validity", known.validity), ("verdict", known.get("verdict")),
                           ("validation note", known.validation_note)):  # fmt: skip
            if value:
                found.append((f"{key} ({task})", _setting(value)))
    return found


def _clip(text: str | None) -> str:
    if text is None:
        return ""
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f" … [{len(text) - TEXT_LIMIT} more characters]"


def _score_text(value: float | None, status: ScoreStatus | None) -> str:
    if status is None:
        return "—"
    if status != ScoreStatus.OK:
        return str(status)
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _outcome(row: Mapping[str, Any], tasks: Sequence[str], threshold: float) -> tuple[str, float | None]:
    """The row's outcome (failed, unparsed, toxic, refusal, a judge letter, ...) and its severity."""
    if row.get("error") is not None or row.get("response") is None:
        return GENERATION_FAILED, None
    main = [t for t in tasks if task_subject(t) == TaskSubject.RESPONSE]
    for task in main:
        status = row.get(f"{task}_status")
        if status is not None and status != ScoreStatus.OK:
            return str(status), None
    for task in main:
        value = row.get(task)
        if isinstance(value, int | float) and not math.isnan(value):
            if "toxic" in task:
                return ("toxic" if value >= threshold else "non-toxic"), float(value)
            severity = 1.0 - float(value) if task in GOOD_WHEN_HIGH else float(value)
            return (row.get(f"{task}_label") or f"{task}={value:g}"), severity
    return "not scored", None


def _verdict(row: Mapping[str, Any], task: str) -> str:
    """A judge's verdict on a row: its label (avoids, complies), its value, or why there is none."""
    status = row.get(f"{task}_status")
    if status is None:
        return "not judged"
    if status != "ok":
        return str(status)
    value = row.get(task)
    return str(row.get(f"{task}_label") or (f"{value:g}" if isinstance(value, int | float) else value))


def run_samples(store: Store, run_id: str, models: Sequence[str] | None = None) -> Iterator[Sample]:
    from trusteval.scorers.language import off_language

    spec = (store.run_info(run_id) or {}).get("spec", {})
    threshold = float(spec.get("threshold", 0.5))
    scorer_ids = RunRecord(store, run_id).tasks()
    tasks = list(scorer_ids)
    judges = [task for task, scorer_id in scorer_ids.items() if scorer_id.startswith(JUDGE_PREFIX)]
    for row in export_records(store, run_id, details=True):
        if models is not None and row["model"] not in models:
            continue
        outcome, severity = _outcome(row, tasks, threshold)
        scores = {task: _score_text(row.get(task), row.get(f"{task}_status")) for task in tasks}
        foreign = row["response"] is not None and off_language(row["response"], row["lang"])
        if foreign:
            scores["language"] = f"off-language (the data is {row['lang']})"
        response = row["response"] if row["response"] is not None else f"(no response: {row.get('error') or ''})"
        verdict = "; ".join(_verdict(row, task) for task in judges) or NO_JUDGE
        judge = "; ".join(scorer_ids[task] for task in judges)
        yield Sample(run_id, row["model"], int(row["seed"]), str(row.get("category") or "all"), outcome,
                     severity, _clip(row["prompt"]), _clip(response), scores, verdict, judge, foreign)  # fmt: skip


def worst_first(samples: Sequence[Sample]) -> list[Sample]:
    return sorted(samples, key=lambda s: (s.severity is None, -(s.severity or 0.0)))


def keep_worst(doc: ReportDoc, limit: int | None) -> None:
    """Worst first, and at most `limit` rows in the page (the counts in the header still cover every row)."""
    doc.samples = worst_first(doc.samples)
    if limit is not None and len(doc.samples) > limit:
        doc.notes.append(f"The sample browser holds the {limit} worst of {len(doc.samples)} rows (--samples).")
        doc.samples = doc.samples[:limit]


def count_outcomes(facts: RunFacts, samples: Sequence[Sample]) -> None:
    facts.counts.update(s.outcome for s in samples if s.outcome in UNSCORED)
    empty = sum(1 for s in samples if s.outcome != GENERATION_FAILED and not s.response.strip())
    facts.counts["empty responses"] += empty
    facts.counts["off-language responses"] += sum(1 for s in samples if s.off_language)
    facts.counts["rows"] += len(samples)
    facts.meanings = {k: v for k, v in COUNT_MEANINGS.items() if facts.counts.get(k)}
    if facts.counts["off-language responses"]:
        facts.meanings["off-language responses"] = (
            "the response is in another script than the data's language (zh: under 30% CJK letters, en: over 5%; "
            "a script check, scorers/language.py), so a scorer trained on that language reads it poorly: "
            + (
                "left out of the metrics (option off_language=exclude)"
                if facts.off_language_policy == "exclude"
                else "scored and kept in the metrics (option off_language=exclude leaves them out)"
            )
        )


def figures_of(metrics: Mapping[str, Any], benchmark: str = "") -> tuple[list[Figure], str | None]:
    """The benchmark's figures as SVG text, or none and the reason (matplotlib missing)."""
    from trusteval.errors import TrustEvalError

    try:
        from trusteval.report.plots import figure_svgs
        from trusteval.report.trusteval_plots import trusteval_svgs

        found = figure_svgs(metrics) + trusteval_svgs(benchmark, metrics)
        return [Figure(name, svg) for name, svg in found], None
    except TrustEvalError as exc:
        return [], str(exc)


def _version() -> str:
    from trusteval._version import __version__

    return __version__


def runs_doc(store: Store, run_ids: Sequence[str], samples_limit: int | None = None) -> ReportDoc:
    """The report of runs: each run's header, tables, figures and samples (`trusteval report --html`)."""
    from trusteval.report.results import run_results

    doc = ReportDoc(title="trusteval report: " + ", ".join(run_ids), runs=[], tables=[], figures=[], samples=[],
                    version=_version())  # fmt: skip
    per_run: dict[str, Sequence[Table]] = {}
    for run_id in run_ids:
        results = run_results(store, run_id)
        facts = run_facts(store, run_id)
        _note_unpinned(doc, store, run_id)
        samples = list(run_samples(store, run_id))
        count_outcomes(facts, samples)
        doc.runs.append(facts)
        doc.tables += results.tables
        doc.samples += samples
        figures, reason = figures_of(results.metrics, facts.benchmark)
        doc.figures += figures
        if reason:
            doc.notes.append(f"no figures: {reason}")
        per_run[run_id] = results.tables
    doc.tables += combined_of_runs(store, per_run)
    keep_worst(doc, samples_limit)
    return doc


def _note_unpinned(doc: ReportDoc, store: Store, run_id: str) -> None:
    """A run of unpinned data is named in the page's notes, shown above everything, not only in its facts."""
    from trusteval.report.unpinned import unpinned_note

    if (note := unpinned_note(store, run_id)) and note not in doc.notes:
        doc.notes.append(note)


def combined_of_runs(store: Store, tables: Mapping[str, Sequence[Table]]) -> list[Table]:
    """The paper's combined Table 5 over the toxicity runs of a report (their datasets side by side); a dataset
    in several runs of one condition is labelled with its run."""
    from trusteval.report.collect import find_runs
    from trusteval.tables.table5_combined import DatasetTable5, combined_table5, is_table5

    runs = [r for r in find_runs(store, run_ids=list(tables)) if r.benchmark == "trusteval-toxicity"]
    seen = Counter((r.dataset, r.condition) for r in runs)
    parts = [
        DatasetTable5(r.dataset if seen[(r.dataset, r.condition)] == 1 else f"{r.dataset} [{r.run_id}]", r.condition, t)
        for r in reversed(runs)  # oldest first: rows keep the first-evaluated order
        for t in tables[r.run_id]
        if is_table5(t)
    ]
    return combined_table5(parts)


def tables_doc(
    store: Store,
    tables: Sequence[Table],
    used: Mapping[str, Sequence[str]],
    figure_metrics: Sequence[tuple[str, Mapping[str, Any]]] = (),
    samples_limit: int | None = None,
) -> ReportDoc:
    """The report of `trusteval tables`: its tables and figures, and header and samples of the runs (and
    models) used."""
    doc = ReportDoc(title="trusteval tables", runs=[], tables=list(tables), figures=[], samples=[],
                    version=_version())  # fmt: skip
    for benchmark, metrics in figure_metrics:
        figures, reason = figures_of(metrics, benchmark)
        doc.figures += figures
        if reason and f"no figures: {reason}" not in doc.notes:
            doc.notes.append(f"no figures: {reason}")
    for run_id, models in used.items():
        facts = run_facts(store, run_id)
        _note_unpinned(doc, store, run_id)
        samples = list(run_samples(store, run_id, models))
        count_outcomes(facts, samples)
        doc.runs.append(facts)
        doc.samples += samples
    keep_worst(doc, samples_limit)
    return doc
