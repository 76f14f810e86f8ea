"""A run's results (metrics and tables) computed from stored rows only: the end of a run and
`trusteval report`, `compare`, `tables` and the HTML report all read results this way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from trusteval.benchmarks import BENCHMARKS
from trusteval.benchmarks.base import Benchmark, Results
from trusteval.config import stored_spec
from trusteval.errors import UsageError
from trusteval.report.unpinned import with_unpinned_note
from trusteval.scorers.base import ScorerInfo
from trusteval.scorers.judge_validity import stored_validation
from trusteval.scorers.validation import scorer_info
from trusteval.store import RunItem, Store
from trusteval.store.run_record import RunRecord
from trusteval.store.views import RunItems, StoredScores
from trusteval.untrusted.answers import ANSWER_REDACTED


def stored_results(store: Store, run_id: str, benchmark: Benchmark, items: Sequence[RunItem]) -> Results:
    """Metrics and tables of a run computed from stored rows only (the run and `trusteval report` share it).

    Scores are looked up as the benchmark asks for them (StoredScores), never all held at once; `items` may be
    a RunItems view, so a run of any size is aggregated in the memory its benchmark's own arrays need."""
    record = RunRecord(store, run_id)
    task_ids = record.tasks()
    book = {name: StoredScores(store, scorer_id) for name, scorer_id in task_ids.items()}
    dataset = benchmark.spec.dataset or (store.run_info(run_id) or {}).get("dataset", "")
    data = record.data()
    data_sha, lang = data.content_sha256, data.language
    info = {
        name: scorer_info(store, scorer_id, dataset, data_sha, lang if name.endswith("toxicity") else None)
        for name, scorer_id in task_ids.items()
    }
    for name, scorer_id in task_ids.items():
        if scorer_id.startswith("judge/"):
            info[name] = replace(info[name], judge_validation=stored_validation(store, scorer_id))
    results = benchmark.results(items, book, info)
    redacted, answers = store.count_marked_answers(run_id, ANSWER_REDACTED)
    metrics = {**results.metrics, "scorers_used": scorers_used(task_ids, info, data_sha)}
    if redacted:  # only then: a run's metrics (and the golden files) stay as they were without a redaction
        metrics["answers_redacted"] = redacted
    note = redacted_note(redacted, answers)
    tables = [replace(t, notes=(*t.notes, note)) for t in results.tables] if note else results.tables
    return Results(metrics, with_unpinned_note(store, [run_id], tables), results.notes)


def redacted_note(redacted: int, answers: int) -> str | None:
    """The note under every table of a run some of whose answers lost an API key (`trusteval.untrusted.redact`)."""
    if not redacted:
        return None
    return (
        f"{redacted} of {answers} answers had an API key cut out by trusteval (finish_reason "
        f"{ANSWER_REDACTED}): they are scored and exported as changed"
    )


def scorers_used(task_ids: Mapping[str, str], info: Mapping[str, ScorerInfo], data_sha: str | None) -> dict[str, Any]:
    """Per scoring task: the scorer id, its threshold and its validity verdict on the run's data."""
    return {
        name: {
            "id": scorer_id,
            "threshold": info[name].get("threshold"),
            "validity": info[name].validity,
            "validity_detail": info[name].validity_detail,
            "validity_on_responses": _on_responses(info[name]),
            "data_sha256": data_sha,
        }
        for name, scorer_id in task_ids.items()
    }


def _on_responses(info: ScorerInfo) -> dict[str, Any] | None:
    """The verdict on the response check set, for --json: None when the data's language has no check set."""
    if info.response_note is None:
        return None
    record = info.response_verdict
    return {"verdict": record.verdict if record else "not validated", "detail": record.as_dict() if record else None}


def run_results(store: Store, run_id: str) -> Results:
    """A stored run's metrics and tables, recomputed from its stored rows (`trusteval report`)."""
    run = store.run_info(run_id)
    if run is None:
        raise UsageError(f"no run '{run_id}' in the store '{store.path}'")
    spec = stored_spec(run["spec"])
    return stored_results(store, run_id, BENCHMARKS.get(spec.benchmark)(spec), RunItems(store, run_id))
