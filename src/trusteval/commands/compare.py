"""`trusteval compare RUN_A RUN_B`: every shared metric side by side, B - A, its interval and a test.

trusteval compare RUN_A RUN_B [--store DIR] [--format console|md|html] [--output FILE] [--resamples N] [--json]
"""

from __future__ import annotations

import argparse
import sys


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser("compare", help="compare two runs: differences with intervals and tests")
    parser.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. before safety tuning)")
    parser.add_argument("run_b", metavar="RUN_B", help="the run compared with it (e.g. after)")
    parser.add_argument("--store", default=None, help="workspace folder (default ./trusteval-workspace)")
    parser.add_argument("--format", choices=("console", "md", "html"), default="console")
    parser.add_argument("--output", "-o", help="write to this file instead of stdout (html needs it)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap and permutation resamples")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every difference")
    parser.set_defaults(handler=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trusteval.commands.common import open_run
    from trusteval.errors import UsageError
    from trusteval.report.compare import compare_runs

    if args.resamples < 100:
        raise UsageError(f"flag --resamples {args.resamples}: use at least 100")
    if args.format == "html" and not args.output:
        raise UsageError("--format html needs --output FILE")
    store, _ = open_run(args.store, args.run_a)
    try:
        comparison = compare_runs(store, args.run_a, args.run_b, args.resamples)
        if args.format == "html":
            from trusteval.report.html_data import ReportDoc, _version, run_facts
            from trusteval.report.html_write import write_html

            doc = ReportDoc(title=f"trusteval compare: {args.run_a} vs {args.run_b}", tables=[comparison.table()],
                            runs=[run_facts(store, r) for r in (args.run_a, args.run_b)], figures=[], samples=[],
                            version=_version())  # fmt: skip
            print(write_html(doc, Path(args.output)), file=sys.stderr)
    finally:
        store.close()
    if args.json:
        from trusteval.commands.jsonout import print_json

        print_json(comparison.as_dict())
    elif args.format == "md":
        from trusteval.report.tables import to_markdown

        _emit(to_markdown(comparison.table()), args.output)
    elif args.format == "console":
        from rich.console import Console

        from trusteval.report.console import print_tables

        print_tables([comparison.table()], Console())
    return 0


def _emit(text: str, output: str | None) -> None:
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)
