"""`trusteval run`: evaluate models on a benchmark (resumable); flags override the run spec's keys.

trusteval run --benchmark B --model SPEC [--model SPEC ...] [--spec run.yaml] [--option KEY=VALUE] [--json]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trusteval.commands.common import EXIT_CODES_HELP, EXIT_COMPLETE, EXIT_INCOMPLETE, first_imports
from trusteval.commands.jsonout import print_json
from trusteval.untrusted.safetext import console_text, one_line

if TYPE_CHECKING:
    from trusteval.pipeline.summary import RunSummary

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


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    with first_imports("trusteval.pipeline"):
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
    from trusteval.dotenv import process_env

    env = process_env()  # os.environ over ./.env (its keys registered for redaction)
    spec = build_run_spec(flags, spec_file=args.spec, env=env)
    progress = make_progress(enabled=not args.no_progress)
    with progress:
        summary = execute(spec, env=env, progress=progress)
    if args.json:
        print_json(summary.as_json())
        for warning in summary.scorer_warnings:  # stdout is the JSON: once on stderr, at the end
            print(one_line(warning.line), file=sys.stderr)
    else:
        _print_summary(summary)
    return EXIT_COMPLETE if summary.status == "complete" else EXIT_INCOMPLETE


def _print_summary(summary: RunSummary) -> None:
    from rich.console import Console

    from trusteval.report.console import print_tables

    console = Console()
    printed = print_tables(summary.tables, console)
    stated = {w.line for w in summary.scorer_warnings if any(w.stated_by(note) for note in printed)}
    for note in summary.notes:
        if note not in printed and note not in stated:  # each warning once: a table's note already said it
            console.print(console_text(note, style="dim"))
    counts = (
        f"run {summary.run_id} ({summary.status}): {summary.generated} generated, {summary.reused} reused, "
        f"{summary.failed} failed, {summary.retries} retries, {summary.scored} scored, "
        f"{summary.unparsed} unparsed"
        + (f", {summary.answers_redacted} answers redacted" if summary.answers_redacted else "")
    )
    console.print(console_text(counts))
    console.print(console_text(f"tables written to {summary.report_dir}"))
    if summary.status != "complete":
        console.print(console_text("the run is incomplete: run the same command again to retry what failed"))
