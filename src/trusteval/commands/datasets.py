"""`trusteval datasets show NAME`: what a dataset holds and how its labels and classes are made.

A loader module may define `describe(spec, context) -> str` (its mapping tables and counts); `show` prints
that, and otherwise the counts per attribute class and label, the source files' sha256 and the notes.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trusteval.data.sources import DataContext


def add_data_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local dataset mirror (default: $TRUSTEVAL_DATA_DIR)")
    parser.add_argument("--cache-dir", help="cache for downloads and trained detectors (default ~/.cache/trusteval)")
    parser.add_argument("--download", action="store_true", help="download missing data (verified by sha256)")
    parser.add_argument(
        "--allow-unpinned-data", action="store_true", help="use data files that do not match their pinned sha256"
    )


def cache_folder(args: argparse.Namespace, env: Mapping[str, str]) -> Path:
    from trusteval.util.folders import cache_folder as resolve

    return resolve(args.cache_dir, env)


def data_folder(args: argparse.Namespace, env: Mapping[str, str]) -> Path | None:
    value = args.data_dir or env.get("TRUSTEVAL_DATA_DIR")
    return Path(value) if value else None


def data_context(args: argparse.Namespace, env: Mapping[str, str]) -> Any:
    from trusteval.data.sources import DataContext

    return DataContext(
        data_dir=data_folder(args, env),
        cache_dir=cache_folder(args, env) / "data",
        allow_download=bool(args.download),
        allow_unpinned=bool(args.allow_unpinned_data),
    )


def store_folder(value: str | None, env: Mapping[str, str]) -> str:
    from trusteval.util.folders import store_folder as resolve

    return resolve(value, env)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    datasets = commands.add_parser("datasets", help="inspect datasets: counts, label and class mappings")
    actions = datasets.add_subparsers(dest="datasets_command", required=True)
    show = actions.add_parser("show", help="counts per class and label, mapping tables, source hashes")
    show.add_argument("dataset", help="dataset spec, e.g. hatexplain, toxicspans?split=test, file:x.csv?lang=zh")
    add_data_flags(show)
    show.set_defaults(handler=cmd_show)


def describe_dataset(raw: str, context: DataContext) -> str:
    import sys

    from trusteval.data import DATASETS, parse_dataset_spec
    from trusteval.data.summary import count_summary

    spec = parse_dataset_spec(raw)
    loader = DATASETS.get(spec.kind)
    describe = getattr(sys.modules.get(loader.__module__), "describe", None)
    if describe is not None:
        return describe(spec, context)
    loaded = loader(spec, context)
    lines = [f"dataset {loaded.name}"]
    lines += [f"  source {name}: sha256 {digest}" for name, digest in loaded.sources.items()]
    lines += [f"  note: {note}" for note in loaded.notes]
    return "\n".join([*lines, count_summary(loaded.prompts)])


def cmd_show(args: argparse.Namespace) -> int:
    from trusteval.untrusted.safetext import strip_controls

    context = data_context(args, os.environ)
    text = describe_dataset(args.dataset, context)
    print(strip_controls("\n".join([text, *(f"note: {line}" for line in context.unpinned)])))
    return 0
