"""The `trusteval` command: a thin shell over the Python API.

Every subcommand lives in `commands/` (one module each: `register` and its handler); this module builds the
parser and maps errors to exit codes. Output contract: with `--json`, stdout carries exactly one JSON object
and everything else (progress, logs) goes to stderr. Errors print one line naming what is wrong and exit
non-zero. Heavy libraries are imported inside the commands, so `trusteval --help` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from trusteval.commands import COMMAND_MODULES
from trusteval.commands.common import COMMAND_EXIT_HELP, EXIT_CODES_HELP, EXIT_COMPLETE, EXIT_INCOMPLETE
from trusteval.errors import TrustEvalError
from trusteval.untrusted.safetext import one_line

__all__ = ["EXIT_CODES_HELP", "EXIT_COMPLETE", "EXIT_INCOMPLETE", "build_parser", "installed_version", "main"]


def installed_version() -> str:
    """The installed distribution's version; the source tree's own when run from a checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trusteval")
    except PackageNotFoundError:
        from trusteval._version import __version__

        return __version__


class CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: its `--help` ends with the exit codes unless the command gives its own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", COMMAND_EXIT_HELP)
        super().__init__(*args, **kwargs)


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
    commands = parser.add_subparsers(dest="command", required=True, parser_class=CommandParser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(commands)
    return parser


def refuse_unknown_arguments(parser: argparse.ArgumentParser, command: str, extras: list[str]) -> None:
    """argparse's 'unrecognized arguments' error, said by the subcommand's parser, with the closest flag of
    that command for each unknown one (`--datset` -> `--dataset`)."""
    import difflib

    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    sub = found[0].choices[command] if found and command in found[0].choices else parser
    flags = [flag for action in sub._actions for flag in action.option_strings]
    hints = []
    for extra in extras:
        if extra.startswith("-"):
            close = difflib.get_close_matches(extra.split("=", 1)[0], flags, n=1, cutoff=0.6)
            hints += [f"{shown_argument(extra.split('=', 1)[0])}: did you mean {close[0]}?"] if close else []
    listed = " ".join(map(shown_argument, extras))
    sub.error(f"unrecognized arguments: {listed}" + ("; " + "; ".join(hints) if hints else ""))


def shown_argument(argument: str) -> str:
    """An argument as typed, with every character that is not printable (an escape sequence, a line break, a
    byte that was not UTF-8) written as its backslash escape, so the terminal shows it instead of obeying it."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode() for c in argument)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        refuse_unknown_arguments(parser, args.command, extras)
    try:
        code = args.handler(args)
        sys.stdout.flush()  # a reader that went away shows here, not as a traceback at exit
        return code
    except TrustEvalError as exc:
        from trusteval.untrusted.answers import safe_text

        print(f"error: {one_line(safe_text(str(exc)))}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # the reader went away (e.g. `| head`); not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SystemExit as exc:
        if exc.code == 1 and raised_in(exc, "on_broken_pipe"):  # Rich's answer to the same: exit 1, no word
            return 0  # (it has pointed stdout at /dev/null already)
        raise
    except KeyboardInterrupt:
        print(
            "interrupted; everything finished is stored: run the same command again to resume",
            file=sys.stderr,
        )
        return 130


def raised_in(exc: BaseException, function: str) -> bool:
    """Whether the innermost frame of the exception's traceback is a function of that name."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_name == function


if __name__ == "__main__":
    sys.exit(main())
