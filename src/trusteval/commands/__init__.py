"""The subcommands of `trusteval`, one module each, registered in this order (the order of `--help`).

A command module defines `register(commands)`, which adds its argparse parser(s) and sets `handler`. Modules
import only argparse-level things at the top, so `trusteval --help` stays fast; the work is imported inside
the handler.
"""

from __future__ import annotations

COMMAND_MODULES: tuple[str, ...] = (
    "trusteval.commands.run",
    "trusteval.commands.report",
    "trusteval.commands.export",
    "trusteval.commands.runs",
    "trusteval.commands.listing",
    "trusteval.commands.tables",
    "trusteval.commands.judge",
    "trusteval.commands.datasets",
    "trusteval.commands.scorers",
    "trusteval.commands.translate",
    "trusteval.commands.merge",
    "trusteval.commands.compare",
    "trusteval.commands.options",
)
