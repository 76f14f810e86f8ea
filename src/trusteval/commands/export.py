"""`trusteval export [RUN]`: write a run's rows (prompt, response, scores, labels) as JSONL or CSV.

trusteval export [RUN] [--store DIR] [--format jsonl|csv] [--output FILE]
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.store import Store


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = commands.add_parser("export", help="write a run's rows (prompt, response, scores, labels)")
    export.add_argument("run_id", nargs="?", help="run id (default: the latest run)")
    export.add_argument("--store", default=None, help="workspace folder")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--output", "-o", help="output file (default: stdout)")
    export.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from trusteval.commands.common import open_run
    from trusteval.report.export import export_rows

    store, run_id = open_run(args.store, args.run_id)
    try:
        if args.output:
            count = _export_to_file(store, run_id, args.output, args.format)
            print(one_line(f"wrote {count} rows of run {run_id} to {args.output}"), file=sys.stderr)
        else:
            export_rows(store, run_id, sys.stdout, args.format)
        for note in _status_notes(store, run_id):
            print(one_line(note), file=sys.stderr)
    finally:
        store.close()
    return 0


def _status_notes(store: Store, run_id: str) -> list[str]:
    """As `report` prints them: the rows of a run that is not complete (or of one shard) are not all of it."""
    from trusteval.commands.report import current_statuses, status_notes

    return status_notes(store, current_statuses(store, [run_id]))


def _export_to_file(store: Store, run_id: str, path: str, fmt: str) -> int:
    from trusteval.commands.common import os_reason
    from trusteval.errors import UsageError
    from trusteval.report.export import export_rows

    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            return export_rows(store, run_id, handle, fmt)
    except OSError as exc:
        raise UsageError(f"flag --output: cannot write '{path}': {os_reason(exc)}") from None
