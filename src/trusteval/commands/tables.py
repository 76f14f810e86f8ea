"""`trusteval tables`: the TrustEval paper's Tables 5 to 10 and TrustGPT's tables from every matching run.

    trusteval tables --store DIR [--benchmark B] [--dataset D] [--runs id,id] [--format md,csv,tex]
                     [--out DIR] [--p-adjust none|holm] [--resamples N] [--json] [--html FILE]

One row per model; a model found in several runs of the same benchmark and dataset takes its latest run (a
note says so). Tables are printed, and written in each format to --out (default <store>/reports/tables);
TrustGPT adds the most toxic responses per model. --html also writes one self-contained page.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.store import Store

FORMATS = ("md", "csv", "tex")


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "tables", help="the papers' tables (TrustEval 5-10, TrustGPT) from every matching run in a store"
    )
    parser.add_argument("--store", default=None, help="workspace folder (default ./trusteval-workspace)")
    parser.add_argument("--benchmark", help="only runs of this benchmark (trusteval-*, trustgpt-*)")
    parser.add_argument("--dataset", help="only runs on this dataset (e.g. cold, or the spec given to run)")
    parser.add_argument("--runs", help="only these comma-separated run ids")
    parser.add_argument("--format", default="md,csv,tex", help="comma-separated: md, csv, tex (default all)")
    parser.add_argument("--out", help="folder for the table files (default <store>/reports/tables)")
    parser.add_argument(
        "--p-adjust",
        choices=("none", "holm"),
        default="none",
        help="adjust the pairwise z-test p-values: none (the paper) or holm",
    )
    parser.add_argument("--resamples", type=int, help="bootstrap resamples (default: each run's own, 1000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every table and metric")
    parser.add_argument("--html", metavar="FILE", help="also write one self-contained HTML report to FILE")
    parser.add_argument(
        "--samples", type=int, metavar="N", help="with --html: at most N rows in the sample browser, worst first"
    )
    parser.set_defaults(handler=cmd_tables)


def _formats(value: str) -> list[str]:
    from trusteval.errors import UsageError

    chosen = [f.strip() for f in value.split(",") if f.strip()]
    unknown = sorted(set(chosen) - set(FORMATS))
    if unknown or not chosen:
        raise UsageError(f"flag --format {value!r}: choose from {', '.join(FORMATS)} (comma-separated)")
    return chosen


def cmd_tables(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trusteval.commands.common import open_store, samples_limit
    from trusteval.errors import UsageError
    from trusteval.report.collect import build_tables
    from trusteval.report.tables import write_tables

    formats = _formats(args.format)
    limit = samples_limit(args.samples, args.html)
    if args.resamples is not None and args.resamples < 10:
        raise UsageError(f"flag --resamples {args.resamples}: use at least 10")
    run_ids = [r.strip() for r in args.runs.split(",") if r.strip()] if args.runs else None
    store, folder = open_store(args.store)
    try:
        _check_runs(store, run_ids)
        collected = build_tables(
            store,
            benchmark=args.benchmark,
            dataset=args.dataset,
            run_ids=run_ids,
            adjustment=args.p_adjust,
            resamples=args.resamples,
        )
        unfinished = _unfinished(store, collected.metrics)
        if args.html:
            from trusteval.report.html_write import write_tables_html

            # TrustGPT groups keep their metrics under "metrics", TrustEval groups spread them in the entry
            figures = [(m["benchmark"], m.get("metrics", m)) for m in collected.metrics if "benchmark" in m]
            used = _runs_used(collected.metrics)
            print(write_tables_html(store, collected.tables, used, Path(args.html), figures, limit), file=sys.stderr)
    finally:
        store.close()
    out = Path(args.out) if args.out else Path(folder) / "reports" / "tables"
    written = write_tables(collected.tables, out, formats)
    if args.json:
        from trusteval.commands.jsonout import print_json

        tables = [t.as_dict() for t in collected.tables]
        found = {"tables": tables, "metrics": collected.metrics, "out": str(out)}
        print_json(found)
    else:
        from rich.console import Console

        from trusteval.report.console import print_tables

        print_tables(collected.tables, Console())
    print(one_line(f"{len(written)} table files written to {out}"), file=sys.stderr)
    for note in unfinished:
        print(note, file=sys.stderr)
    return 0


def _unfinished(store: Store, metrics: list[dict[str, Any]]) -> list[str]:
    """The notes of the runs the tables took rows from that are not complete (as `trusteval report` prints)."""
    from trusteval.commands.report import current_statuses, status_notes

    return status_notes(store, current_statuses(store, _runs_used(metrics)))


def _runs_used(metrics: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Run id -> the models whose rows the tables took from it."""
    used: dict[str, list[str]] = {}
    for group in metrics:
        for model, run_id in (group.get("runs") or {}).items():
            used.setdefault(run_id, []).append(model)
    return used


def _check_runs(store: Store, run_ids: list[str] | None) -> None:
    from trusteval.commands.common import check_run
    from trusteval.scorers.judge_validity import VALIDATION_RUN_PREFIX

    for run_id in run_ids or []:
        if not run_id.startswith(VALIDATION_RUN_PREFIX):
            check_run(store, run_id)
