"""A run killed with SIGKILL part-way resumes to exactly one row per request."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time

import pytest

from helpers import cli_command, cli_env, run_cli

pytestmark = pytest.mark.slow


def _stored_generations(db) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT COUNT(*) FROM generations").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_mid_generation_then_resume(tmp_path, cache_dir):
    store = tmp_path / "ws"
    # The default batch answers all 12 in one generate call; each answer is stored as its sequence ends (the
    # backend's answer stream), so the kill lands inside the call with some answers stored.
    args = ("run", "--benchmark", "trusteval-toxicity", "--limit", "12", "--seeds", "42", "--max-new-tokens",
            "64", "--model", "llamacpp:smollm2", "--store", store, "--cache-dir", cache_dir, "--json",
            "--no-progress")  # fmt: skip
    db = store / "trusteval.sqlite"
    process = subprocess.Popen(cli_command(*args), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while _stored_generations(db) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert process.poll() is None, "the run finished before it could be killed; raise --limit"
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = _stored_generations(db)
    assert 3 <= before < 12

    resumed = run_cli(*args)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    out = resumed.json()
    assert out["reused"] == before and out["generated"] == 12 - before and out["failed"] == 0

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        items = conn.execute("SELECT COUNT(*), COUNT(DISTINCT request_key) FROM run_items").fetchone()
        joined = conn.execute(
            "SELECT COUNT(*) FROM run_items i JOIN generations g ON g.key = i.request_key"
        ).fetchone()[0]
    assert items == (12, 12) and joined == 12
