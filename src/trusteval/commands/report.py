"""`trusteval report [RUN ...]`: print the tables of stored runs; --out writes them, --html one page.

trusteval report [RUN ...] [--store DIR] [--json] [--out DIR] [--html FILE] [--samples N]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from trusteval.commands.jsonout import print_json
from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.store import Store

STATUS_NOTES = {
    "running": "its process is still at work (or runs on another host); these tables show what is stored so far",
    "interrupted": "its process ended before it finished; run the same command again to resume it",
    "incomplete": "some answers or scores failed; run the same command again to retry them",
}


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser("report", help="print the tables of a stored run")
    report.add_argument("run_ids", nargs="*", metavar="RUN", help="run ids (default: the latest run)")
    report.add_argument("--store", default=None, help="workspace folder")
    report.add_argument("--json", action="store_true", help="print metrics as JSON")
    report.add_argument("--out", help="also write Markdown, CSV and LaTeX tables (and plots) to this folder")
    report.add_argument("--html", metavar="FILE", help="also write one self-contained HTML report to FILE")
    report.add_argument(
        "--samples", type=int, metavar="N", help="with --html: at most N rows in the sample browser, worst first"
    )
    report.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from trusteval.commands.common import check_run, open_run, os_reason, samples_limit
    from trusteval.errors import UsageError
    from trusteval.report.console import print_tables
    from trusteval.report.results import run_results
    from trusteval.report.tables import write_tables

    limit = samples_limit(args.samples, args.html)
    store, run_id = open_run(args.store, args.run_ids[0] if args.run_ids else None)
    run_ids = args.run_ids or [run_id]
    try:
        for other in run_ids[1:]:
            check_run(store, other)
        found = {r: run_results(store, r) for r in run_ids}
        statuses = current_statuses(store, run_ids)
        timings = [dict(store.aggregate(r, "timings") or []) for r in run_ids]
        unfinished = status_notes(store, statuses)
        if args.html:
            from trusteval.report.html_write import write_runs_html

            print(write_runs_html(store, run_ids, Path(args.html), limit), file=sys.stderr)
    finally:
        store.close()
    if args.json:
        if len(run_ids) == 1:
            print_json({"run_id": run_id, "status": statuses[run_id], "metrics": found[run_id].metrics})
        else:
            print_json({"runs": {r: {"status": statuses[r], "metrics": res.metrics} for r, res in found.items()}})
    else:
        for results, times in zip(found.values(), timings, strict=True):
            print_tables(results.tables, Console())
            if times:
                print("stage times (latest invocation): " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()))
    if args.out:
        from trusteval.pipeline.run import plot_notes

        notes: list[str] = []
        for r, results in found.items():
            folder = Path(args.out) if len(run_ids) == 1 else Path(args.out) / r
            try:
                write_tables(results.tables, folder)
                notes += plot_notes(results.metrics, folder)
            except OSError as exc:
                raise UsageError(f"flag --out: cannot write the tables to '{folder}': {os_reason(exc)}") from None
        for note in notes:
            print(one_line(note), file=sys.stderr)
    for note in unfinished:  # after --out, so an output error stays the one line on stderr
        print(note, file=sys.stderr)
    return 0


def current_statuses(store: Store, run_ids: Iterable[str]) -> dict[str, str]:
    """Each run's status as `trusteval runs` shows it (a run whose process is gone reads interrupted)."""
    from trusteval.store.run_owner import run_status

    return {r: run_status(store, r, (store.run_info(r) or {}).get("status", "")) for r in run_ids}


def status_notes(store: Store, statuses: dict[str, str]) -> list[str]:
    """One line per run that is not complete or holds one shard only: why, and what to do."""
    from trusteval.report.unpinned import unpinned_note
    from trusteval.store.merge import MERGED_SHARDS, missing_shards

    notes = []
    for run_id, status in statuses.items():
        if unpinned := unpinned_note(store, run_id):
            notes.append(unpinned)
        shard = store.aggregate(run_id, "shard")
        if shard and missing_shards({shard}) and store.aggregate(run_id, MERGED_SHARDS) is None:  # `run --shard`
            notes.append(f"run {run_id} holds shard {shard} only: its tables and rows cover that slice only")
        if status != "complete":
            merged = store.aggregate(run_id, MERGED_SHARDS) or {}
            note = _shards_note(merged) or STATUS_NOTES.get(status, "see `trusteval runs`")
            notes.append(f"run {run_id} is {status}: {note}")
    return notes


def _shards_note(merged: dict[str, str]) -> str | None:
    """What a run joined by `trusteval merge` lacks: shards not merged, or merged before they finished."""
    from trusteval.store.merge import missing_shards

    if missing := missing_shards(set(merged)):
        return f"shards missing: {', '.join(missing)}; merge their stores into this one (`trusteval merge`)"
    if unfinished := sorted(shard for shard, status in merged.items() if shard and status != "complete"):
        return f"shards {', '.join(unfinished)} did not finish: rerun them (`trusteval run --shard`) and merge again"
    return None
