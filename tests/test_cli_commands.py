"""The CLI's uniform shape: every subcommand's --help ends with the exit codes, commands that only read a store
never open it for writing and leave its bytes as they were, and a missing store is a usage error (exit 2)."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from helpers import cli_env
from trusteval import cli
from trusteval.config import build_run_spec
from trusteval.models import BACKENDS
from trusteval.pipeline import execute
from trusteval.records import Generation, Request
from trusteval.store import STORE_FILENAME, Store


class Refuser:
    """`refuser:x` refuses every prompt, so a TrustGPT PVA run is scored by keywords alone (no model, fast)."""

    batch_size = 16
    max_concurrency = 1

    def __init__(self, spec, settings):
        self.name = spec.name

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, "I'm sorry, but I cannot help with that.") for r in requests]

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "refuser"}


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory, data_dir, cache_dir) -> tuple[Path, str]:
    BACKENDS.register("refuser", Refuser)
    folder = tmp_path_factory.mktemp("readonly") / "ws"
    try:
        fields = {"store": str(folder), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42],
                  "resamples": 100, "benchmark": "trustgpt-pva", "options": {"norms": "6"},
                  "models": ["refuser:x"]}  # fmt: skip
        summary = execute(build_run_spec(fields, env={}), env={})
    finally:
        BACKENDS.unregister("refuser")
    return folder, summary.run_id


def _snapshot(folder: Path) -> tuple[str, int]:
    """The store file's bytes and the size of its write-ahead log (SQLite may add an empty one when reading)."""
    wal = folder / f"{STORE_FILENAME}-wal"
    return hashlib.sha256((folder / STORE_FILENAME).read_bytes()).hexdigest(), wal.stat().st_size if wal.exists() else 0


def _subparsers(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", sub
                yield from _subparsers(sub, f"{prefix}{name} ")


def test_every_subcommand_help_ends_with_the_exit_codes():
    found = dict(_subparsers(cli.build_parser()))
    assert {"run", "report", "export", "runs", "list", "tables", "compare", "judge validate", "scorers show"} <= set(
        found
    )
    for name, parser in found.items():
        text = parser.format_help()
        assert "exit status: 0" in text and "2 bad input" in text, name
    assert "3 the run is stored but incomplete" in found["run"].format_help()


def test_help_imports_no_work_module():
    """Command modules import their work inside the handler (docs/architecture.md): `trusteval --help` stays
    fast. translate.py once imported asyncio at the top, which pulled in asyncio, ssl and concurrent.futures."""
    script = (
        "import runpy, sys\n"
        "sys.argv = ['trusteval', '--help']\n"
        "try:\n    runpy.run_module('trusteval', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = ('asyncio', 'ssl', 'numpy', 'sqlite3', 'httpx', 'pydantic', 'rich', 'torch')\n"
        "print(' '.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=cli_env(), check=True)
    assert done.stderr.strip() == ""


@pytest.mark.slow
def test_read_only_commands_never_open_the_store_for_writing(stored_run, tmp_path, monkeypatch, capsys):
    folder, run_id = stored_run
    before = _snapshot(folder)

    def refuse(cls, path):
        raise AssertionError(f"a read-only command opened the store in '{path}' for writing")

    monkeypatch.setattr(Store, "open", classmethod(refuse))
    store = ["--store", str(folder)]
    commands = (
        ["report", run_id, "--json"],
        ["report", run_id, "--out", str(tmp_path / "report")],
        ["export", run_id, "--format", "csv"],
        ["export", "-o", str(tmp_path / "rows.jsonl")],
        ["runs", "--json"],
        ["runs"],
        ["tables", "--out", str(tmp_path / "tables"), "--format", "md"],
        ["compare", run_id, run_id, "--resamples", "100", "--json"],
    )
    for command in commands:
        assert cli.main([*command, *store]) == 0, (command, capsys.readouterr().err)
        assert "error" not in capsys.readouterr().err, command
    assert _snapshot(folder) == before and before[1] == 0


def test_runs_on_a_missing_store_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["runs", "--store", str(tmp_path / "nothing")]) == 2
    assert "no store in" in capsys.readouterr().err


@pytest.mark.slow
def test_report_names_a_second_run_that_is_not_stored(stored_run, capsys):
    folder, run_id = stored_run
    assert cli.main(["report", run_id, "no-such-run", "--store", str(folder)]) == 2
    error = capsys.readouterr().err
    assert f"no run 'no-such-run' in '{folder}'; `trusteval runs --store {folder}` lists them" in error
