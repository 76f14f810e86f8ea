"""`trusteval list`: the registered benchmarks, datasets, model backends and scorers."""

from __future__ import annotations

import argparse


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    listing = commands.add_parser("list", help="list benchmarks, datasets, backends and scorers")
    listing.set_defaults(handler=cmd_list)


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
