"""One page over several runs or a whole store (`trusteval report RUN RUN ... --html`, `report --all --html`).

Per benchmark and dataset one table with every model as a row and the paper's columns (the tables
`trusteval tables` builds: a model in several runs of a group takes its latest run, a note says so), figures
with every model on one shared scale, each run's header, and one sample browser over every model's rows (its
`view=side` shows every model's answer to a prompt side by side). Runs that no paper table covers keep their
own tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trusteval.errors import UsageError
from trusteval.report.html_data import ReportDoc, count_outcomes, run_facts, run_samples, tables_doc
from trusteval.store import Store


def _runs_used(metrics: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for group in metrics:
        for model, run_id in (group.get("runs") or {}).items():
            used.setdefault(run_id, []).append(model)
    return used


def store_doc(store: Store, run_ids: Sequence[str], samples_limit: int | None = None) -> ReportDoc:
    """The page of several runs: the store's cross-run tables restricted to `run_ids`, their figures, the
    headers and samples of the runs and models the tables used, and the runs no table covers, as they are."""
    from trusteval.report.collect import build_tables
    from trusteval.report.html_data import figures_of, keep_worst
    from trusteval.report.results import run_results

    try:
        collected = build_tables(store, run_ids=list(run_ids))
        tables, metrics = collected.tables, collected.metrics
    except UsageError:  # no run of a paper benchmark among them
        tables, metrics = [], []
    figures = [(m["benchmark"], m.get("metrics", m)) for m in metrics if "benchmark" in m]
    used = _runs_used(metrics)
    doc = tables_doc(store, tables, used, figures, None)
    doc.title = "trusteval report: " + (", ".join(run_ids) if len(run_ids) <= 4 else f"{len(run_ids)} runs")
    for run_id in run_ids:
        if run_id in used:
            continue
        results = run_results(store, run_id)
        facts = run_facts(store, run_id)
        samples = list(run_samples(store, run_id))
        count_outcomes(facts, samples)
        doc.runs.append(facts)
        doc.tables += results.tables
        doc.samples += samples
        found, reason = figures_of(results.metrics, facts.benchmark)
        doc.figures += found
        if reason and f"no figures: {reason}" not in doc.notes:
            doc.notes.append(f"no figures: {reason}")
    doc.notes.insert(0, "Runs: " + ", ".join(run_ids) + ". One table per benchmark and dataset, a row per model; "
                     "the sample browser's 'models side by side' view puts every model's answer to a prompt in "
                     "one row.")  # fmt: skip
    keep_worst(doc, samples_limit)
    return doc
