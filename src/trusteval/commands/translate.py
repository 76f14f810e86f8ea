"""`trusteval translate`: turn a dataset into another language with any model, as a new file dataset.

    trusteval translate --dataset hatexplain --limit 200 --output hatexplain-zh.jsonl [--model SPEC]

Writes `<output>.jsonl` (loadable as `--dataset file:<output>.jsonl`) and `<output>.meta.json` (source,
translator model, prompt template and its sha256, generation parameters). Translations are stored in the
workspace like a run's generations: an interrupted translation resumes, a finished one is never redone.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trusteval.commands.common import EXIT_INCOMPLETE
from trusteval.commands.datasets import add_data_flags, cache_folder, data_context, data_folder, store_folder
from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.config import RunSpec
    from trusteval.translation import TranslationJob


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    translate = commands.add_parser("translate", help="translate a dataset with any model into a new dataset file")
    translate.add_argument("--dataset", required=True, help="source dataset spec, e.g. hatexplain or toxicspans")
    translate.add_argument("--output", "-o", required=True, help="output file, *.jsonl (metadata: *.meta.json)")
    translate.add_argument("--model", default="default", help="translator model spec (default: the embedded model)")
    translate.add_argument("--target-lang", default="zh", help="language code of the translation (default zh)")
    translate.add_argument("--template-file", help="prompt template file with {text} (default: the built-in one)")
    translate.add_argument("--limit", type=int, help="translate a seeded sample of N prompts")
    translate.add_argument("--sample-seed", type=int, default=0, help="seed of the sample (default 0)")
    translate.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    translate.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    translate.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling top-p (default 1)")
    translate.add_argument("--max-new-tokens", type=int, default=256, help="most new tokens per answer (default 256)")
    translate.add_argument("--store", help="workspace folder that caches the translations")
    translate.add_argument("--concurrency", type=int, default=8, help="requests in flight for API backends")
    translate.add_argument("--timeout", type=float, default=120.0, help="seconds per request for API backends")
    translate.add_argument("--max-retries", type=int, default=6, help="retries of a failed API request")
    translate.add_argument("--no-progress", action="store_true", help="no progress bar")
    translate.add_argument("--json", action="store_true", help="print one JSON object with the outcome")
    add_data_flags(translate)
    translate.set_defaults(handler=cmd_translate)


def cmd_translate(args: argparse.Namespace) -> int:
    import asyncio  # in the handler, like the other imports: at the top it cost `trusteval --help` 25 ms

    from trusteval.commands.jsonout import print_json
    from trusteval.errors import UsageError
    from trusteval.models import BackendSettings
    from trusteval.progress import make_progress
    from trusteval.translation import TranslationJob, check_output, template_for, translate

    if args.limit is not None and args.limit < 1:
        raise UsageError("flag --limit: must be at least 1")
    output = Path(args.output)
    check_output(output)
    template, version = template_for(args.target_lang, args.template_file)
    job = TranslationJob(
        dataset=args.dataset, output=output, model=args.model, target_lang=args.target_lang, limit=args.limit,
        sample_seed=args.sample_seed, seed=args.seed, temperature=args.temperature, top_p=args.top_p,
        max_new_tokens=args.max_new_tokens, template=template, template_version=version,
    )  # fmt: skip
    data_dir = data_folder(args, os.environ)
    spec = _checked_spec(job, args, data_dir)
    settings = BackendSettings(
        concurrency=args.concurrency, timeout_s=args.timeout, max_retries=args.max_retries, env=dict(os.environ)
    )
    with make_progress(enabled=not args.no_progress) as progress:
        result = asyncio.run(translate(job, spec, data_context(args, os.environ), settings, progress))
    outcome = {
        "run_id": result.run_id, "output": str(result.output), "metadata": str(result.metadata),
        "written": result.written, "failed": len(result.failed), "generated": result.generated,
        "reused": result.reused,
    }  # fmt: skip
    if args.json:
        print_json(outcome)
    else:
        print(one_line(_summary(outcome)))
    if result.failed:
        first = next(iter(result.failed.items()))
        print(one_line(f"{len(result.failed)} translation(s) failed (first: {first[0]}: {first[1]}); "
                       "run the same command again to retry them"), file=sys.stderr)  # fmt: skip
        return EXIT_INCOMPLETE
    return 0


def _checked_spec(job: TranslationJob, args: argparse.Namespace, data_dir: Path | None) -> RunSpec:
    from pydantic import ValidationError

    from trusteval.errors import UsageError
    from trusteval.translation import run_spec

    try:
        return run_spec(job, store_folder(args.store, os.environ), str(data_dir) if data_dir else None,
                        str(cache_folder(args, os.environ)))  # fmt: skip
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise UsageError(f"translate: {problems}") from None


def _summary(outcome: dict[str, Any]) -> str:
    return (
        f"wrote {outcome['written']} translated rows to {outcome['output']} (metadata {outcome['metadata']}); "
        f"{outcome['generated']} generated, {outcome['reused']} reused, {outcome['failed']} failed"
    )
