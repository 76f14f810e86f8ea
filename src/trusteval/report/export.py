"""Export a run's rows (prompt, response, labels, scores) as JSONL or CSV.

Each scoring task gives three columns: `<task>` (the value), `<task>_status` and `<task>_label`, the label that
decided the score (a detector's `refusal` / `refusal_overruled` / `detector`, a judge's avoids / complies, a
refusal scorer's refusal / answer), so a share such as the refusal share can be recomputed from the export.

CSV cells that a spreadsheet would read as a formula (= + - @ tab CR at the start) are written with a leading
apostrophe, and lines end in CRLF so a cell holding a line break is always quoted: an exported model response
can never become a live formula.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from typing import IO, Any

from trusteval.records import TaskSubject, task_subject, text_subject
from trusteval.report.tables import CSV_LINE_END, safe_spreadsheet_cell
from trusteval.store import RunItem, Store
from trusteval.store.run_record import RunRecord

OFF_LANGUAGE = "off-language response"


def export_records(store: Store, run_id: str, details: bool = False) -> Iterator[dict[str, Any]]:
    """A run's rows, each task's value, status and label (what decided the score); `details` (the HTML report)
    adds the prompt's language `lang`."""
    tasks = RunRecord(store, run_id).tasks()
    items = store.run_items(run_id)
    subjects = [s for item in items for s in _subjects(item)]
    scores = {name: store.scores(scorer_id, subjects) for name, scorer_id in tasks.items()}
    reasons = left_out_reasons(store, run_id, items, tasks)
    sampling = sampling_by_model(store, run_id)
    for item in items:
        left_out = reasons.get(item.request_key) or ("generation failed" if item.response is None else None)
        row: dict[str, Any] = {
            "run_id": run_id,
            "model": item.model,
            "seed": item.seed,
            "dataset": item.prompt.dataset,
            "prompt_id": item.prompt.id,
            "category": item.prompt.category,
            "label": item.prompt.label,
            "prompt": item.prompt.text,
            "response": item.response,
            "error": item.error,
            "variant": json.dumps(item.variant, ensure_ascii=False) if item.variant else "",
        }
        for name, by_subject in scores.items():
            score = next((by_subject[s] for s in _task_subjects(name, item) if s in by_subject), None)
            if left_out == OFF_LANGUAGE and task_subject(name) != TaskSubject.PROMPT:
                score = None  # never scored by this run (off_language=exclude)
            row[name] = score.value if score else None
            row[f"{name}_status"] = score.status if score else None
            row[f"{name}_label"] = score.label if score else None
        row["left_out"] = left_out
        row["sampling"] = sampling.get(item.model, "")
        if details:
            row["lang"] = item.prompt.lang
        yield row


def sampling_by_model(store: Store, run_id: str) -> dict[str, str]:
    """Each model's stored sampling settings on one line, by the model as rows name it (its spec and its identity);
    empty for a run stored before sampling was recorded."""
    from trusteval.models.sampling import one_line

    record = RunRecord(store, run_id)
    identities = record.models() or {}
    lines: dict[str, str] = {}
    for model, described in record.sampling().items():
        lines[model] = lines[identities.get(model, model)] = one_line(described)
    return lines


def left_out_reasons(store: Store, run_id: str, items: Sequence[RunItem], tasks: dict[str, str]) -> dict[str, str]:
    """request key -> why the run's metrics leave the item out, as its benchmark decides (`left_out`)."""
    from trusteval.benchmarks import BENCHMARKS
    from trusteval.config import stored_spec
    from trusteval.store.views import StoredScores

    run = store.run_info(run_id)
    if run is None:
        return {}
    spec = stored_spec(run["spec"])
    benchmark = BENCHMARKS.get(spec.benchmark)(spec)
    reader = getattr(benchmark, "left_out", None)
    if reader is None:
        return {}
    return reader(items, {name: StoredScores(store, scorer_id) for name, scorer_id in tasks.items()})


def _subjects(item: RunItem) -> list[str]:
    found = [item.prompt_subject]
    if item.response is not None:
        found += [item.response_subject or "", text_subject(item.prompt.text, item.response)]
    return found


def _task_subjects(task: str, item: RunItem) -> list[str]:
    """Where a task's score for this item is stored: a prompt task scores the prompt, any other task the
    response or the (prompt, response) pair. Chosen by role, never by comparing subjects: a response that
    repeats the prompt word for word has the prompt's subject and still has its own response score."""
    if task_subject(task) == TaskSubject.PROMPT:
        return [item.prompt_subject]
    if item.response is None:
        return []
    return [item.response_subject or "", text_subject(item.prompt.text, item.response)]


# JSON leaves these raw with ensure_ascii=False, but Python's str.splitlines(), many line readers and JavaScript
# take them for line ends: a model answer holding one would split its record in two.
_LINE_BREAKS_JSON_KEEPS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def jsonl_line(row: dict[str, Any]) -> str:
    """One JSON Lines record: the row's JSON with every character a line reader could split on escaped."""
    return json.dumps(row, ensure_ascii=False).translate(_LINE_BREAKS_JSON_KEEPS) + "\n"


def export_rows(store: Store, run_id: str, handle: IO[str], fmt: str) -> int:
    count = 0
    writer = None
    for row in export_records(store, run_id):
        if fmt == "jsonl":
            handle.write(jsonl_line(row))
        else:
            if writer is None:
                writer = csv.DictWriter(handle, fieldnames=list(row), lineterminator=CSV_LINE_END)
                writer.writeheader()
            writer.writerow({k: safe_spreadsheet_cell("" if v is None else str(v)) for k, v in row.items()})
        count += 1
    return count
