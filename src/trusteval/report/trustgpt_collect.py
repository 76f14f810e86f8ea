"""TrustGPT's tables for every model in a store (`trusteval tables`), and the most toxic outputs per model.

Runs are grouped by benchmark, dataset and condition (options, toxicity scorer, refusal judge), so a table only
puts side by side models measured the same way. A model in several runs of a group takes its latest run. Each
model's numbers are its run's own metrics (recomputed from stored rows, as `trusteval report` does), and the
tables are the benchmark's own table builders, so a row equals that run's report row.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trusteval.benchmarks.base import Results
from trusteval.metrics.trustgpt_results import AvaResult, BiasResult, PvaResult, ToxicityResult
from trusteval.records import ScoreStatus
from trusteval.report.export import export_records
from trusteval.report.unpinned import with_unpinned_note
from trusteval.store import Store
from trusteval.tables import trustgpt_tables
from trusteval.tables.table import Table, TableNotes

# Each reads the merged metrics (their JSON form) back into the benchmark's result type.
BUILDERS: dict[str, Callable[[Mapping[str, Any], TableNotes], list[Table]]] = {
    "trustgpt-toxicity": lambda found, notes: trustgpt_tables.toxicity_tables(ToxicityResult.from_dict(found), notes),
    "trustgpt-bias": lambda found, notes: trustgpt_tables.bias_tables(BiasResult.from_dict(found), notes),
    "trustgpt-ava": lambda found, notes: trustgpt_tables.ava_tables(AvaResult.from_dict(found), notes),
    "trustgpt-pva": lambda found, notes: trustgpt_tables.pva_tables(PvaResult.from_dict(found), notes),
}
TRUSTGPT_BENCHMARKS = tuple(BUILDERS)
MOST_TOXIC = 5  # responses per model in the most-toxic table
RESPONSE_CHARS = 300


@dataclass
class TrustGPTGroup:
    benchmark: str
    dataset: str
    condition: str
    models: dict[str, str] = field(default_factory=dict)  # model -> run id (the latest run with it)


def _condition(spec: Mapping[str, Any]) -> str:
    options = json.dumps(spec.get("options") or {}, sort_keys=True)
    return f"options {options}, scorer {spec.get('scorer') or 'default'}, judge {spec.get('judge') or 'default'}"


def find_groups(store: Store, benchmark: str | None, dataset: str | None, run_ids: Sequence[str] | None) -> list:
    groups: dict[tuple[str, str, str], TrustGPTGroup] = {}
    for run in store.runs():  # newest first
        if run["benchmark"] not in BUILDERS or (benchmark and run["benchmark"] != benchmark):
            continue
        if (run_ids is not None and run["run_id"] not in run_ids) or (dataset and run["dataset"] != dataset):
            continue
        spec = (store.run_info(run["run_id"]) or {}).get("spec", {})
        key = (run["benchmark"], run["dataset"], _condition(spec))
        group = groups.setdefault(key, TrustGPTGroup(*key))
        for model in spec.get("models", []):
            group.models.setdefault(model, run["run_id"])
    return sorted(groups.values(), key=lambda g: (TRUSTGPT_BENCHMARKS.index(g.benchmark), g.dataset, g.condition))


def group_tables(store: Store, group: TrustGPTGroup) -> tuple[list[Table], dict[str, Any]]:
    from trusteval.report.results import run_results

    by_run: dict[str, Results] = {}
    for run_id in dict.fromkeys(group.models.values()):
        by_run[run_id] = run_results(store, run_id)
    latest = by_run[next(iter(by_run))]
    merged = {**latest.metrics, "models": {m: by_run[r].metrics["models"][m] for m, r in group.models.items()
                                           if m in by_run[r].metrics.get("models", {})}}  # fmt: skip
    runs_note = "Runs: " + ", ".join(f"{m} from {r}" for m, r in group.models.items())
    tables = [_suffixed(t, group) for t in BUILDERS[group.benchmark](merged, latest.notes.with_run(runs_note))]
    if group.benchmark == "trustgpt-toxicity":
        tables.append(_suffixed(most_toxic_table(store, group.models), group))
    tables = with_unpinned_note(store, list(group.models.values()), tables)
    return tables, {"benchmark": group.benchmark, "dataset": group.dataset, "condition": group.condition,
                    "runs": dict(group.models), "metrics": merged}  # fmt: skip


def _suffixed(table: Table, group: TrustGPTGroup) -> Table:
    from dataclasses import replace

    return replace(table, notes=(*table.notes, f"Condition: {group.condition}"))


def most_toxic_table(store: Store, models: Mapping[str, str]) -> Table:
    """The paper's most-toxic-outputs table: each model's responses with the highest toxicity score."""
    rows: list[tuple[Any, ...]] = []
    for model, run_id in models.items():
        found = [r for r in export_records(store, run_id) if r["model"] == model and _toxicity(r) is not None]
        found.sort(key=lambda r: -(_toxicity(r) or 0.0))
        for rank, row in enumerate(found[:MOST_TOXIC], start=1):
            text = " ".join((row["response"] or "").split())
            clipped = text if len(text) <= RESPONSE_CHARS else text[:RESPONSE_CHARS] + " …"
            rows.append((model, rank, _toxicity(row), _word(row), clipped))
    return Table(
        name="trustgpt_most_toxic",
        title=f"TrustGPT: the {MOST_TOXIC} most toxic responses per model",
        columns=("Model", "rank", "toxicity", "prompt word", "response"),
        rows=tuple(rows),
        notes=(f"Responses cut at {RESPONSE_CHARS} characters; `trusteval export` has them whole.",),
        digits=3,
    )


def _toxicity(row: Mapping[str, Any]) -> float | None:
    value = row.get("response_toxicity")
    ok = row.get("response_toxicity_status") == ScoreStatus.OK
    return float(value) if ok and isinstance(value, int | float) and not math.isnan(value) else None


def _word(row: Mapping[str, Any]) -> str:
    variant = row.get("variant") or ""
    try:
        return str(json.loads(variant).get("word", "")) if variant else ""
    except (ValueError, AttributeError):
        return ""


def trustgpt_tables_for(
    store: Store, benchmark: str | None, dataset: str | None, run_ids: Sequence[str] | None
) -> tuple[list[Table], list[dict[str, Any]]]:
    tables: list[Table] = []
    metrics: list[dict[str, Any]] = []
    if benchmark is not None and benchmark not in BUILDERS:
        return tables, metrics
    for group in find_groups(store, benchmark, dataset, run_ids):
        found, summary = group_tables(store, group)
        tables += found
        metrics.append(summary)
    return tables, metrics
