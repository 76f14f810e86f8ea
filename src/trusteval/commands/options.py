"""`trusteval options KIND [NAME]`: the options a backend, scorer, dataset or benchmark takes.

One way for every kind of plugin: the text comes from the plugin's options model (trusteval.options), so it
lists exactly what the plugin accepts, with type, default and description.
"""

from __future__ import annotations

import argparse
from typing import Any

KINDS = {
    "backend": ("trusteval.models", "BACKENDS", "model backend", "--model 'NAME:MODEL?key=value'"),
    "scorer": ("trusteval.scorers", "SCORERS", "scorer", "--scorer 'NAME?key=value'"),
    "dataset": ("trusteval.data", "DATASETS", "dataset", "--dataset 'NAME?key=value'"),
    "benchmark": ("trusteval.benchmarks", "BENCHMARKS", "benchmark", "--option key=value"),
}
ALIASES = {**{f"{kind}s": kind for kind in KINDS}, "model": "backend", "models": "backend"}


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "options",
        help="the options a backend, scorer, dataset or benchmark takes (type, default, description)",
        description="Print the options of one plugin, or of every plugin of a kind.",
    )
    parser.add_argument("kind", choices=sorted([*KINDS, *ALIASES]), metavar="KIND",
                        help="backend, scorer, dataset or benchmark (plural accepted)")  # fmt: skip
    parser.add_argument("name", nargs="?", help="the plugin's name, e.g. llamacpp, en-tfidf (default: all)")
    parser.set_defaults(handler=cmd_options)


def plugin_help(kind: str, name: str | None = None) -> str:
    """The help text of `name` (all plugins of `kind` when None); an unknown name is a usage error."""
    import importlib

    from trusteval.options import options_help, options_model

    module_name, attribute, title, usage = KINDS[ALIASES.get(kind, kind)]
    registry = getattr(importlib.import_module(module_name), attribute)
    names = [name] if name else registry.names()
    blocks = [options_help(options_model(registry.get(n)), f"{title} {n}") for n in names]
    return "\n\n".join([*blocks, f"give options as {usage}"])


def cmd_options(args: argparse.Namespace) -> int:
    print(plugin_help(args.kind, args.name))
    return 0
