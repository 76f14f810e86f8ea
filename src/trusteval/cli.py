"""The `trusteval` command: a thin shell over the Python API.

Output contract: with `--json`, stdout carries exactly one JSON object and everything else (progress, logs)
goes to stderr. Errors print one line naming what is wrong and exit non-zero. Heavy libraries are imported
inside the commands, so `trusteval --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trusteval.commands import COMMAND_MODULES
from trusteval.errors import TrustEvalError
from trusteval.jsonout import print_json
from trusteval.safetext import console_text, one_line

if TYPE_CHECKING:
    from trusteval.pipeline import RunSummary
    from trusteval.store import Store

EXIT_COMPLETE = 0
EXIT_INCOMPLETE = 3  # the run is stored but some answers or scores failed: run the same command again
EXIT_CODES_HELP = (
    "exit status: 0 the run is complete; 2 bad input (flag, run spec, data file, model), nothing written; "
    "3 the run is stored but incomplete (some generations or scores failed; run the same command again to "
    "retry them); 130 interrupted (everything finished is stored)"
)

RUN_FLAGS = (
    # (flag, dest, type, help)
    ("--benchmark", "benchmark", str, "benchmark name, e.g. trusteval-toxicity"),
    ("--dataset", "dataset", str, "dataset spec, e.g. cold or cold?split=dev (default: the benchmark's)"),
    ("--limit", "limit", int, "evaluate a seeded sample of N prompts"),
    ("--sample-seed", "sample_seed", int, "seed of the prompt sample (default 0)"),
    ("--temperature", "temperature", float, "sampling temperature (default 0.7)"),
    ("--top-p", "top_p", float, "nucleus sampling top-p (default 0.9)"),
    ("--max-new-tokens", "max_new_tokens", int, "most new tokens per answer (default 512)"),
    ("--template", "template", str, "user message template with {text} (default: the prompt itself)"),
    ("--scorer", "scorer", str, "toxicity scorer spec (default: the offline detector for the language)"),
    ("--threshold", "threshold", float, "toxic when score >= threshold (default 0.5)"),
    (
        "--prompt-toxicity",
        "prompt_toxicity",
        str,
        "scorer (paper) or label: where prompt toxicity comes from",
    ),
    ("--judge", "judge", str, "model spec of the LLM judge (default: the embedded model)"),
    ("--per-category", "per_category", int, "prompts sampled per attribute class (avoidance)"),
    ("--concurrency", "concurrency", int, "requests in flight for API backends (default 8)"),
    ("--timeout", "timeout_s", float, "seconds before an API request times out (default 120)"),
    ("--max-retries", "max_retries", int, "retries of a failed API request (default 6)"),
    ("--resamples", "resamples", int, "bootstrap resamples (default 1000)"),
    ("--store", "store", str, "workspace folder holding the store (default ./trusteval-workspace)"),
    ("--data-dir", "data_dir", str, "local dataset mirror (default: $TRUSTEVAL_DATA_DIR)"),
    (
        "--cache-dir",
        "cache_dir",
        str,
        "cache for downloads and trained detectors (default ~/.cache/trusteval)",
    ),
    ("--shard", "shard", str, "run only slice I of N (I/N, e.g. 0/4) into this store; `trusteval merge` joins"),
    ("--executor", "executor", str, "where generation runs: local (default) or ray (pip install 'trusteval[ray]')"),
    ("--ray-address", "ray_address", str, "Ray cluster to use with --executor ray (host:port, auto or local)"),
    ("--ray-workers", "ray_workers", int, "generation workers (model replicas) on Ray (default: one per node)"),
)

STATUS_NOTES = {
    "running": "its process is still at work (or runs on another host); these tables show what is stored so far",
    "interrupted": "its process ended before it finished; run the same command again to resume it",
    "incomplete": "some answers or scores failed; run the same command again to retry them",
}


def _run_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="evaluate models on a benchmark (resumable)", epilog=EXIT_CODES_HELP)
    run.add_argument("--spec", help="YAML run spec; flags override its keys")
    run.add_argument("--model", dest="models", action="append", help="model spec; repeat for several models")
    run.add_argument("--seeds", help="comma-separated generation seeds (default 42,43,44)")
    for flag, dest, kind, text in RUN_FLAGS:
        run.add_argument(flag, dest=dest, type=kind, help=text)
    run.add_argument("--option", dest="options", action="append", metavar="KEY=VALUE", help="benchmark option")
    run.add_argument("--download", action="store_true", default=None, help="download missing data (verified)")
    run.add_argument(
        "--allow-unpinned-data",
        action="store_true",
        default=None,
        help="use data files that do not match their pinned sha256 (recorded with the run)",
    )
    run.add_argument("--trust-remote-code", action="store_true", default=None, help="allow model-folder code")
    run.add_argument(
        "--force-scorer-language", action="store_true", default=None, help="score text in a foreign language"
    )
    run.add_argument(
        "--require-valid-scorer",
        action="store_true",
        default=None,
        help="refuse to run unless `scorers validate` judged the toxicity scorer valid on this data",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object with the results")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(handler=cmd_run)


def installed_version() -> str:
    """The installed distribution's version; the source tree's own when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trusteval")
    except PackageNotFoundError:
        from trusteval import __version__

        return __version__


class LazyVersion(argparse.Action):
    """`--version`, looked up only when asked: importlib.metadata scans every installed distribution, which
    cost every command about 0.1 s (more on a loaded machine)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {installed_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trusteval",
        description="Measure how trustworthy an LLM is: toxicity, bias, refusal and value alignment "
        "(TrustGPT and TrustEval, end to end).",
    )
    parser.add_argument("--version", action=LazyVersion, help="show the installed version and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    _run_parser(commands)

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

    export = commands.add_parser("export", help="write a run's rows (prompt, response, scores, labels)")
    export.add_argument("run_id", nargs="?", help="run id (default: the latest run)")
    export.add_argument("--store", default=None, help="workspace folder")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--output", "-o", help="output file (default: stdout)")
    export.set_defaults(handler=cmd_export)

    runs = commands.add_parser("runs", help="list the runs in a store")
    runs.add_argument("--store", default=None, help="workspace folder")
    runs.add_argument("--json", action="store_true", help="print one JSON object listing the runs")
    runs.set_defaults(handler=cmd_runs)

    listing = commands.add_parser("list", help="list benchmarks, datasets, backends and scorers")
    listing.set_defaults(handler=cmd_list)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)
    return parser


def _parse_options(values: Sequence[str] | None) -> dict[str, str] | None:
    from trusteval.errors import UsageError

    if not values:
        return None
    options = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise UsageError(f"flag --option {value!r}: expected KEY=VALUE")
        options[key] = text
    return options


def _parse_seeds(value: str | None) -> list[str] | None:
    return [s.strip() for s in value.split(",") if s.strip()] if value else None


def cmd_run(args: argparse.Namespace) -> int:
    from trusteval.config import build_run_spec
    from trusteval.pipeline import execute
    from trusteval.progress import make_progress

    flags: dict[str, Any] = {dest: getattr(args, dest) for _, dest, _, _ in RUN_FLAGS}
    flags.update(
        models=args.models,
        seeds=_parse_seeds(args.seeds),
        options=_parse_options(args.options),
        download=args.download,
        allow_unpinned_data=args.allow_unpinned_data,
        trust_remote_code=args.trust_remote_code,
        force_scorer_language=args.force_scorer_language,
        require_valid_scorer=args.require_valid_scorer,
    )
    spec = build_run_spec(flags, spec_file=args.spec, env=os.environ)
    progress = make_progress(enabled=not args.no_progress)
    with progress:
        summary = execute(spec, env=os.environ, progress=progress)
    if args.json:
        print_json(summary.as_json())
    else:
        _print_summary(summary)
    return EXIT_COMPLETE if summary.status == "complete" else EXIT_INCOMPLETE


def _print_summary(summary: RunSummary) -> None:
    from rich.console import Console

    from trusteval.report.tables import print_tables

    console = Console()
    print_tables(summary.tables, console)
    for note in summary.notes:
        console.print(console_text(note, style="dim"))
    counts = (
        f"run {summary.run_id} ({summary.status}): {summary.generated} generated, {summary.reused} reused, "
        f"{summary.failed} failed, {summary.retries} retries, {summary.scored} scored, "
        f"{summary.unparsed} unparsed"
    )
    console.print(console_text(counts))
    console.print(console_text(f"tables written to {summary.report_dir}"))
    if summary.status != "complete":
        console.print(console_text("the run is incomplete: run the same command again to retry what failed"))


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rich.console import Console

    from trusteval.commands.common import open_run, samples_limit
    from trusteval.errors import UsageError
    from trusteval.report.results import run_results
    from trusteval.report.tables import print_tables, write_tables
    from trusteval.run_owner import run_status

    limit = samples_limit(args.samples)
    store, run_id = open_run(args.store, args.run_ids[0] if args.run_ids else None)
    run_ids = args.run_ids or [run_id]
    try:
        for other in run_ids[1:]:
            _check_run(store, other)
        found = {r: run_results(store, r) for r in run_ids}
        statuses = {r: run_status(store, r, (store.run_info(r) or {}).get("status", "")) for r in run_ids}
        timings = [dict(store.aggregate(r, "timings") or []) for r in run_ids]
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
                raise UsageError(f"flag --out: cannot write the tables to '{folder}': {_os_reason(exc)}") from None
        for note in notes:
            print(one_line(note), file=sys.stderr)
    for r, status in statuses.items():  # after --out, so an output error stays the one line on stderr
        if status != "complete":
            print(f"run {r} is {status}: {STATUS_NOTES.get(status, 'see `trusteval runs`')}", file=sys.stderr)
    return 0


def _os_reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _check_run(store: Store, run_id: str) -> None:
    from trusteval.errors import UsageError

    if store.run_info(run_id) is None:
        raise UsageError(f"no run '{run_id}' in '{store.path.parent}'; `trusteval runs` lists them")


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
    finally:
        store.close()
    return 0


def _export_to_file(store: Store, run_id: str, path: str, fmt: str) -> int:
    from trusteval.errors import UsageError
    from trusteval.report.export import export_rows

    try:
        with open(path, "w", encoding="utf-8", newline="") as handle:
            return export_rows(store, run_id, handle, fmt)
    except OSError as exc:
        raise UsageError(f"flag --output: cannot write '{path}': {_os_reason(exc)}") from None


def cmd_runs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trusteval.folders import store_folder
    from trusteval.run_owner import run_status
    from trusteval.store import STORE_FILENAME, Store

    folder = store_folder(args.store)
    if not (Path(folder) / STORE_FILENAME).is_file():
        print(one_line(f"no store in '{folder}'"), file=sys.stderr)
        return 1
    store = Store.open_read_only(folder)
    try:
        runs = [{**run, "status": run_status(store, run["run_id"], run["status"])} for run in store.runs()]
    finally:
        store.close()
    if args.json:
        print_json({"store": folder, "runs": runs})
        return 0
    for run in runs:
        fields = (run["run_id"], run["benchmark"], run["dataset"], run["status"], f"{run['items']} items")
        print("\t".join(one_line(str(f)) for f in fields))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from trusteval.benchmarks import BENCHMARKS
    from trusteval.data import DATASETS
    from trusteval.models import BACKENDS
    from trusteval.scorers import SCORERS

    for title, registry in (
        ("benchmarks", BENCHMARKS),
        ("datasets", DATASETS),
        ("model backends", BACKENDS),
        ("scorers", SCORERS),
    ):
        print(f"{title}: {', '.join(registry.names())}")
    print("options of one: trusteval options KIND NAME (KIND: backend, scorer, dataset, benchmark)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except TrustEvalError as exc:
        from trusteval.untrusted import safe_text

        print(f"error: {one_line(safe_text(str(exc)))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (e.g. `| head`); not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(
            "interrupted; everything finished is stored: run the same command again to resume",
            file=sys.stderr,
        )
        return 130


if __name__ == "__main__":
    sys.exit(main())
