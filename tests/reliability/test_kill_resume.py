"""SIGKILL at random moments of generation and scoring, 20 times in a row, then resume: nothing lost or doubled.

One store, one spec, a chain of runs: each run is the resume of the one killed before it. Ten kills are aimed
at generation (a seeded random delay after the run's first answer is stored) and ten at scoring (a random
delay after the run finds every answer stored; answers are long, so scoring takes about 2.6 seconds on a
warm detector cache, several times the longest delay of 0.7 s). Where each kill really landed is read from
the store after the kill. The last run completes; the store must then hold
one answer per request and one score per subject, pass `PRAGMA integrity_check`, and give the same metrics as
an uninterrupted run of the same spec.
"""

from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import pytest
from fault_server import FaultConfig, FaultyOpenAIServer
from store_checks import STORE_FILE, connect_ro, duplicates, integrity, scalar

from helpers import cli_command, cli_env, run_cli

pytestmark = pytest.mark.slow

GENERATION_KILLS = 10
SCORING_KILLS = 10
WAIT_LIMIT_S = 120.0


def _poll(store: Path, sql: str) -> int | float | None:
    if not (store / STORE_FILE).exists():
        return None
    try:
        with closing(connect_ro(store)) as conn:
            row = conn.execute(sql).fetchone()
    except sqlite3.OperationalError:  # not created yet, or mid-recovery: look again
        return None
    return row[0] if row else None


def _generations(store: Path) -> int:
    return _poll(store, "SELECT COUNT(*) FROM generations") or 0


def _wait_until(process: subprocess.Popen, condition) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not condition():
        assert process.poll() is None, f"the run ended before it could be killed: {process.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.005)


def _state(store: Path) -> dict[str, int]:
    return {
        "generations": _generations(store),
        "scores": _poll(store, "SELECT COUNT(*) FROM scores") or 0,
        "integrity_ok": int(integrity(store) == "ok"),
    }


def _kill_one(args: tuple, store: Path, target: str, delay_s: float, total: int | None) -> dict:
    before = _generations(store)
    updated = _poll(store, "SELECT MAX(updated_at) FROM runs") or 0.0
    process = subprocess.Popen(cli_command(*args), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if target == "generation":
            _wait_until(process, lambda: _generations(store) > before)
        else:  # this run has recorded itself and every answer is stored: it is scoring now
            _wait_until(
                process,
                lambda: (
                    (_poll(store, "SELECT MAX(updated_at) FROM runs") or 0.0) > updated
                    and _generations(store) == (total or -1)
                ),
            )
        time.sleep(delay_s)
        assert process.poll() is None, "the run finished before the kill; lengthen the stage"
        process.send_signal(signal.SIGKILL)
    finally:
        process.kill()
        process.communicate()
    return {"target": target, "delay_s": round(delay_s, 3), **_state(store)}


def _landed(trial: dict, total_generations: int, total_scores: int) -> str:
    if trial["generations"] < total_generations:
        return "generation"
    return "scoring" if trial["scores"] < total_scores else "after scoring"


def test_twenty_sigkills_then_resume_leave_one_row_per_request_and_score(tmp_path, cache_dir, figures):
    rng = random.Random(20240601)
    config = FaultConfig(latency_s=0.03, answer_repeat=240)
    with FaultyOpenAIServer(config) as server:
        model = f"openai:steady?base_url={server.base_url}&concurrency=4"

        def args(store: Path) -> tuple:
            return ("run", "--benchmark", "trusteval-toxicity", "--limit", "400", "--seeds", "42,43",
                    "--model", model, "--resamples", "100", "--store", store, "--cache-dir", cache_dir,
                    "--json", "--no-progress")  # fmt: skip

        store = tmp_path / "killed"
        trials, total = [], None
        for index in range(GENERATION_KILLS + SCORING_KILLS):
            if index < GENERATION_KILLS:
                trials.append(_kill_one(args(store), store, "generation", rng.uniform(0.05, 0.4), total))
            else:
                config.latency_s = 0.0  # the rest of generation goes fast; the kill waits for scoring anyway
                trials.append(_kill_one(args(store), store, "scoring", rng.uniform(0.05, 0.7), total))
            total = total or scalar(store, "SELECT COUNT(DISTINCT request_key) FROM run_items")
        resumed = run_cli(*args(store))
        reference = run_cli(*args(tmp_path / "uninterrupted"))

    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert reference.returncode == 0, reference.stderr[-3000:]
    out, expected = resumed.json(), reference.json()
    assert out["failed"] == 0 and out["generated"] + out["reused"] == total
    assert out["metrics"] == expected["metrics"]

    subjects = scalar(
        store,
        "SELECT COUNT(*) FROM (SELECT p.subject FROM prompts p UNION SELECT g.subject FROM generations g)",
    )
    assert scalar(store, "SELECT COUNT(*) FROM generations") == total
    assert scalar(store, "SELECT COUNT(*) FROM run_items i JOIN generations g ON g.key = i.request_key") == total
    assert scalar(store, "SELECT COUNT(*) FROM scores") == subjects
    assert scalar(store, "SELECT COUNT(*) FROM scores WHERE status != 'ok'") == 0
    assert duplicates(store) == {"generations": 0, "scores": 0, "run_items": 0, "requests": 0}
    assert integrity(store) == "ok"
    assert all(t["integrity_ok"] for t in trials), "the store passed integrity_check after every kill"

    landed = [_landed(t, total, subjects) for t in trials]
    assert landed.count("generation") >= 5 and landed.count("scoring") >= 5, landed
    figures["kill_trials"] = {
        "trials": len(trials),
        "survived": len(trials),
        "landed": {stage: landed.count(stage) for stage in ("generation", "scoring", "after scoring")},
        "requests": total,
        "scores": subjects,
        "metrics_equal_uninterrupted_run": True,
    }
