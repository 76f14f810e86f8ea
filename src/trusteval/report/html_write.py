"""Writing the HTML report of runs (`trusteval report --html`) or of a store's tables (`trusteval tables --html`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trusteval.errors import UsageError
from trusteval.report.html import render_html
from trusteval.report.html_data import ReportDoc, runs_doc, tables_doc
from trusteval.store import Store
from trusteval.tables.table import Table
from trusteval.util.atomic import write_atomic


def write_html(doc: ReportDoc, path: Path) -> str:
    """Write the page through a temporary file (a reader never sees half a page); the line to print."""
    text = render_html(doc)
    try:
        write_atomic(path, text)
    except OSError as exc:
        raise UsageError(f"cannot write the HTML report to '{path}': {exc.strerror or exc}") from exc
    size = len(text.encode("utf-8"))
    return f"HTML report written to {path} ({size / 1e6:.1f} MB, {len(doc.samples)} sample rows)"


def write_runs_html(store: Store, run_ids: Sequence[str], path: Path, samples_limit: int | None = None) -> str:
    """One run: its own page; several runs: one view over them (report.html_store)."""
    if len(run_ids) > 1:
        from trusteval.report.html_store import store_doc

        return write_html(store_doc(store, run_ids, samples_limit), path)
    return write_html(runs_doc(store, run_ids, samples_limit), path)


def write_tables_html(
    store: Store,
    tables: Sequence[Table],
    used: Mapping[str, Sequence[str]],
    path: Path,
    figure_metrics: Sequence[tuple[str, Mapping[str, Any]]] = (),
    samples_limit: int | None = None,
) -> str:
    return write_html(tables_doc(store, tables, used, figure_metrics, samples_limit), path)
