"""What an HTML report shows, read from the store: each run's header facts, its sample rows and its figures.

Everything here is data (plain strings and numbers); `report.html` does the escaping and the layout. Sample rows
are ordered worst first: the highest response-side score (toxicity, refusal, judge value) on top, rows without
a score after them.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trusteval.records import ScoreStatus, TaskSubject, task_subject
from trusteval.report.export import export_records
from trusteval.store import Store
from trusteval.tables.table import Table

GENERATION_FAILED = "failed"  # a sample's outcome when the model gave no response
UNSCORED = frozenset({GENERATION_FAILED, ScoreStatus.UNPARSED, ScoreStatus.ERROR, ScoreStatus.REFUSED})
TEXT_LIMIT = 4000  # characters of a prompt or response kept in the page (the export has the full text)
SPEC_SETTINGS = ("seeds", "sample_seed", "limit", "temperature", "top_p", "max_new_tokens", "template",
                 "scorer", "threshold", "prompt_toxicity", "judge", "per_category", "resamples", "options")  # fmt: skip


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

    def as_list(self) -> list[Any]:
        return [self.run_id, self.model, self.seed, self.category, self.outcome, self.severity,
                self.prompt, self.response, self.scores]  # fmt: skip


SAMPLE_FIELDS = ("run", "model", "seed", "class", "outcome", "severity", "prompt", "response", "scores")


@dataclass
class RunFacts:
    """The header of one run: each entry is (label, text); `counts` says what was failed, unparsed, empty."""

    run_id: str
    benchmark: str
    entries: list[tuple[str, str]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


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


def run_facts(store: Store, run_id: str) -> RunFacts:
    """Models, data with sha256, settings, scorers with their validity, dates and stage timings of a run."""
    from trusteval.scorers.validation import scorer_info

    info = store.run_info(run_id) or {}
    spec: dict[str, Any] = info.get("spec", {})
    facts = RunFacts(run_id, str(info.get("benchmark", "")))
    facts.entries += [
        ("benchmark", facts.benchmark),
        ("dataset", str(info.get("dataset", ""))),
        ("models", _setting(spec.get("models", []))),
        ("status", str(info.get("status", ""))),
        ("started", _when(info.get("created_at"))),
        ("updated", _when(info.get("updated_at"))),
    ]
    data = store.aggregate(run_id, "data") or {}
    for source, digest in (data.get("sources") or {}).items():
        facts.entries.append(("data file", f"{source} sha256 {digest}"))
    facts.entries += [("data note", str(note)) for note in data.get("notes") or []]
    facts.entries += [(key.replace("_", " "), _setting(spec.get(key))) for key in SPEC_SETTINGS if key in spec]
    for task, scorer_id in (store.aggregate(run_id, "tasks") or {}).items():
        facts.entries.append((f"scorer ({task})", scorer_id))
        known = scorer_info(store, scorer_id, str(info.get("dataset", "")))
        for key, value in (("validity", known.validity), ("verdict", known.get("verdict")),
                           ("validation note", known.validation_note)):  # fmt: skip
            if value:
                facts.entries.append((f"{key} ({task})", _setting(value)))
    timings = dict(store.aggregate(run_id, "timings") or [])
    facts.entries += [(f"time, latest invocation: {stage}", f"{seconds:.2f} s") for stage, seconds in timings.items()]
    return facts


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
            return (row.get(f"{task}_label") or f"{task}={value:g}"), float(value)
    return "not scored", None


def run_samples(store: Store, run_id: str, models: Sequence[str] | None = None) -> Iterator[Sample]:
    spec = (store.run_info(run_id) or {}).get("spec", {})
    threshold = float(spec.get("threshold", 0.5))
    tasks = list(store.aggregate(run_id, "tasks") or {})
    for row in export_records(store, run_id):
        if models is not None and row["model"] not in models:
            continue
        outcome, severity = _outcome(row, tasks, threshold)
        scores = {task: _score_text(row.get(task), row.get(f"{task}_status")) for task in tasks}
        response = row["response"] if row["response"] is not None else f"(no response: {row.get('error') or ''})"
        yield Sample(run_id, row["model"], int(row["seed"]), str(row.get("category") or "all"), outcome,
                     severity, _clip(row["prompt"]), _clip(response), scores)  # fmt: skip


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
    facts.counts["rows"] += len(samples)


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
    from trusteval import __version__

    return __version__


def runs_doc(store: Store, run_ids: Sequence[str], samples_limit: int | None = None) -> ReportDoc:
    """The report of runs: each run's header, tables, figures and samples (`trusteval report --html`)."""
    from trusteval.report.results import run_results

    doc = ReportDoc(title="trusteval report: " + ", ".join(run_ids), runs=[], tables=[], figures=[], samples=[],
                    version=_version())  # fmt: skip
    for run_id in run_ids:
        results = run_results(store, run_id)
        facts = run_facts(store, run_id)
        samples = list(run_samples(store, run_id))
        count_outcomes(facts, samples)
        doc.runs.append(facts)
        doc.tables += results.tables
        doc.samples += samples
        figures, reason = figures_of(results.metrics, facts.benchmark)
        doc.figures += figures
        if reason:
            doc.notes.append(f"no figures: {reason}")
    keep_worst(doc, samples_limit)
    return doc


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
        samples = list(run_samples(store, run_id, models))
        count_outcomes(facts, samples)
        doc.runs.append(facts)
        doc.samples += samples
    keep_worst(doc, samples_limit)
    return doc
