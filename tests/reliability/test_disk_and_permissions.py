"""A full disk or a store that cannot be written: a clear error, nothing stored lost, nothing corrupted.

Disk full is simulated two ways: a real 900 KiB tmpfs (needs root to mount; skipped otherwise) and SQLite's
`max_page_count` set on the store's connection by a test hook (always runs, in process through `cli.main`).
A store that cannot be written is a read-only bind mount (root) or a chmod-ed folder (other users).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fault_server import FaultConfig, FaultyOpenAIServer
from store_checks import STORE_FILE, integrity, scalar

from helpers import run_cli
from trusteval import cli
from trusteval.store import Store

LIMIT = 120


def _args(server: FaultyOpenAIServer, store: Path, cache_dir: Path, limit: int = LIMIT) -> tuple:
    model = f"openai:disk?base_url={server.base_url}&concurrency=8"
    return ("run", "--benchmark", "trusteval-toxicity", "--limit", str(limit), "--seeds", "42", "--model", model,
            "--resamples", "100", "--store", store, "--cache-dir", cache_dir, "--json", "--no-progress")  # fmt: skip


def _mount(*args: str) -> str | None:
    """None when `mount args` worked, else why not."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return "mounting needs root and the mount command"
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    return None if done.returncode == 0 else f"mount {' '.join(args)} failed: {done.stderr.strip()}"


@contextlib.contextmanager
def mounted(*args: str, target: Path):
    reason = _mount(*args)
    if reason:
        pytest.skip(reason)
    try:
        yield target
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _generations(store: Path) -> int:
    return scalar(store, "SELECT COUNT(*) FROM generations")


@pytest.mark.slow
def test_disk_full_on_a_small_tmpfs_then_resume_after_freeing_space(tmp_path, cache_dir, figures):
    small = tmp_path / "small"
    small.mkdir()
    with (
        mounted("-t", "tmpfs", "-o", "size=900k", "tmpfs", str(small), target=small),
        FaultyOpenAIServer(FaultConfig(answer_repeat=40)) as server,
    ):
        store = small / "ws"
        full = run_cli(*_args(server, store, cache_dir))
        assert full.returncode == 2, full.stderr[-2000:]
        assert "the disk is full; free space and run the same command again" in full.stderr
        assert "Traceback" not in full.stderr
        assert integrity(store) == "ok"
        kept = _generations(store)
        assert 0 < kept < LIMIT

        assert _mount("-o", "remount,size=64m", str(small)) is None
        resumed = run_cli(*_args(server, store, cache_dir))
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        out = resumed.json()
        assert out["reused"] == kept and out["generated"] + out["reused"] == LIMIT and out["failed"] == 0
        assert integrity(store) == "ok"
    figures["disk_full_tmpfs"] = {"tmpfs": "900k", "answers_kept": kept, "resumed_generated": out["generated"]}


@pytest.mark.slow
def test_disk_full_by_max_page_count_keeps_what_was_stored(tmp_path, cache_dir, monkeypatch, capsys, figures):
    store = tmp_path / "ws"
    plain_open = Store.open.__func__

    def open_with_a_page_cap(cls, folder):
        opened = plain_open(cls, folder)
        pages = opened.conn.execute("PRAGMA page_count").fetchone()[0]
        opened.conn.execute(f"PRAGMA max_page_count = {pages + 160}")  # room for the plan and a few answers
        return opened

    with FaultyOpenAIServer(FaultConfig(answer_repeat=40)) as server:
        monkeypatch.setattr(Store, "open", classmethod(open_with_a_page_cap))
        code = cli.main([str(a) for a in _args(server, store, cache_dir)])
        error = capsys.readouterr().err
        assert code == 2 and "the disk is full; free space and run the same command again" in error, error
        kept = _generations(store)
        assert 0 < kept < LIMIT and integrity(store) == "ok"

        monkeypatch.undo()
        assert cli.main([str(a) for a in _args(server, store, cache_dir)]) == 0
        import json

        out = json.loads(capsys.readouterr().out)
    assert out["reused"] == kept and out["generated"] + out["reused"] == LIMIT
    figures["disk_full_max_page_count"] = {"answers_kept": kept, "resumed_generated": out["generated"]}


@contextlib.contextmanager
def read_only(folder: Path):
    """The folder made read-only: a read-only bind mount as root, chmod otherwise."""
    if os.geteuid() == 0:
        with mounted("--bind", str(folder), str(folder), target=folder):
            reason = _mount("-o", "remount,ro,bind", str(folder))
            if reason:
                pytest.skip(reason)
            yield "read-only bind mount"
        return
    files = [folder / name for name in os.listdir(folder)]
    for path in files:
        path.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield "chmod a-w"
    finally:
        folder.chmod(0o755)
        for path in files:
            path.chmod(0o644)


@pytest.mark.slow
def test_a_store_that_cannot_be_written_is_a_clear_error_and_stays_intact(tmp_path, cache_dir, figures):
    store = tmp_path / "ws"
    with FaultyOpenAIServer() as server:
        first = run_cli(*_args(server, store, cache_dir, limit=20))
        assert first.returncode == 0, first.stderr[-2000:]
        before = _sha(store / STORE_FILE)
        with read_only(store) as how:
            refused = run_cli(*_args(server, store, cache_dir, limit=25))
            listed = run_cli("runs", "--store", store, "--json")  # read immutable: no -shm can be made here
            assert _sha(store / STORE_FILE) == before
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert [run["status"] for run in listed.json()["runs"]] == ["complete"]
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "the store is not writable; fix its permissions or pass another --store" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert integrity(store) == "ok" and _generations(store) == 20
    figures["store_not_writable"] = {"made_read_only_by": how, "exit_code": refused.returncode, "store_unchanged": True}


@pytest.mark.slow
def test_tables_that_cannot_be_written_leave_the_run_stored(tmp_path, cache_dir):
    store = tmp_path / "ws"
    store.mkdir()
    (store / "reports").write_text("a file where the reports folder should be")
    with FaultyOpenAIServer() as server:
        result = run_cli(*_args(server, store, cache_dir, limit=10))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cannot write the tables to" in result.stderr and "trusteval report" in result.stderr
    assert scalar(store, "SELECT status FROM runs") == "complete"
    reported = run_cli("report", "--store", store, "--out", tmp_path / "tables")
    assert reported.returncode == 0, reported.stderr
    assert (tmp_path / "tables" / "table5_cold.md").is_file()
