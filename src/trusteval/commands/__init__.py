"""Subcommands beyond run / report / export / runs / list, one module each.

A command module defines `register(commands)`, which adds its argparse parser(s) and sets `handler`. Modules
import only argparse-level things at the top, so `trusteval --help` stays fast; the work is imported inside
the handler.
"""

from __future__ import annotations

COMMAND_MODULES: tuple[str, ...] = (
    "trusteval.commands.tables",
    "trusteval.commands.judge",
    "trusteval.commands.datasets",
    "trusteval.commands.scorers",
    "trusteval.commands.translate",
    "trusteval.commands.merge",
    "trusteval.commands.compare",
    "trusteval.commands.options",
)
