"""`run --executor ray`: generation and scoring on a real local Ray cluster (head started here with `ray start
--head`) give the local executor's results, and a rerun reuses every stored answer and score."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers import cli_env, run_cli, write_labelled_csv, write_replay_answers
from trusteval.executors.ray_executor import worker_env
from trusteval.executors.ray_scoring import scorer_env
from trusteval.models import ModelSpec
from trusteval.records import text_subject
from trusteval.store import STORE_FILENAME

pytestmark = pytest.mark.slow

GROUPS = ("这个地区", "那些女人", "外国人", "他们", "老人", "年轻人", "南方人", "北方人")
WORDS = ("都很友好", "真恶心", "太蠢了", "很勤劳", "还行")
# 40 prompts x 2 seeds = 80 requests: two batches of at most MAX_BATCH (64), so both workers get one
TEXTS = [f"{group}的人{word}第{i}句" for i, (group, word) in enumerate((g, w) for g in GROUPS for w in WORDS)]
ANSWERS = [("你说得对，" if i % 3 else "滚开，蠢货") + t for i, t in enumerate(TEXTS)]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster():
    """A head node with 2 CPUs on this machine, token auth on; stopped by ending the `--block` process, which
    ends only the Ray processes it started."""
    ray_bin = Path(sys.executable).with_name("ray")
    if not ray_bin.exists():
        pytest.skip("ray is not installed (pip install 'trusteval[ray]')")
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = cli_env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    head = subprocess.Popen(
        [str(ray_bin), "start", "--head", "--block", "--num-cpus", "2", "--port", str(port),
         "--include-dashboard", "false", "--temp-dir", temp_dir, "--disable-usage-stats"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        _wait_for_port(port, head)
        yield f"127.0.0.1:{port}", env
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(head.pid, signal.SIGKILL)
            head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _wait_for_port(port: int, head: subprocess.Popen, limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert head.poll() is None, "ray start --head exited"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"the Ray head did not listen on port {port} within {limit_s} s")


def _inputs(folder: Path) -> tuple[Path, Path]:
    data = write_labelled_csv(folder / "data.csv", TEXTS)
    return data, write_replay_answers(folder / "answers.jsonl", TEXTS, ANSWERS)


def _run(data, answers, store, cache_dir, *extra, env=None):
    return run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42,43", "--store", store, "--cache-dir", cache_dir,
                   "--resamples", "200", "--json", "--no-progress", *extra, env=env)  # fmt: skip


def test_ray_run_equals_local_run_and_resumes(tmp_path, cache_dir, ray_cluster) -> None:
    address, env = ray_cluster
    data, answers = _inputs(tmp_path)
    local = _run(data, answers, tmp_path / "local", cache_dir)
    assert local.returncode == 0, local.stderr[-2000:]
    ray_flags = ("--executor", "ray", "--ray-address", address, "--ray-workers", "2")
    first = _run(data, answers, tmp_path / "ray", cache_dir, *ray_flags, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    summary = first.json()
    assert summary["run_id"] == local.json()["run_id"], "the executor does not change the run id"
    assert (summary["generated"], summary["reused"], summary["failed"]) == (2 * len(TEXTS), 0, 0)
    note = next(n for n in summary["notes"] if n.startswith("ray:"))
    assert "on 2 workers" in note and "[0," not in note and ", 0]" not in note, f"both workers answered: {note}"

    run_id = summary["run_id"]
    on_ray = run_cli("report", run_id, "--store", tmp_path / "ray", "--json").json()
    on_local = run_cli("report", run_id, "--store", tmp_path / "local", "--json").json()
    assert on_ray["metrics"] == on_local["metrics"]
    exported = [run_cli("export", "--store", tmp_path / name).stdout for name in ("ray", "local")]
    assert exported[0] == exported[1] and exported[0].count("\n") == 2 * len(TEXTS)

    scoring = [n for n in summary["notes"] if n.startswith("ray: prompt_toxicity, response_toxicity scored on 2 ")]
    assert scoring and "[0," not in scoring[0] and ", 0]" not in scoring[0], f"both workers scored: {scoring}"
    assert (summary["scored"], summary["score_failures"]) == (local.json()["scored"], 0)

    # what a run killed during scoring leaves behind: some batches of scores committed, the others not
    lost = _drop_scores(tmp_path / "ray" / STORE_FILENAME, 25)
    again = _run(data, answers, tmp_path / "ray", cache_dir, *ray_flags, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert (again.json()["generated"], again.json()["reused"]) == (0, 2 * len(TEXTS))
    assert (again.json()["scored"], again.json()["scores_reused"]) == (lost, summary["scored"] - lost)
    resumed = run_cli("report", run_id, "--store", tmp_path / "ray", "--json").json()
    assert resumed["metrics"] == on_local["metrics"]


def _drop_scores(path: Path, count: int) -> int:
    """Delete the stored scores of the first `count` answers (none of them is the text of another score)."""
    with sqlite3.connect(path) as conn:
        cursor = conn.executemany("DELETE FROM scores WHERE subject = ?", [(text_subject(a),) for a in ANSWERS[:count]])
        assert cursor.rowcount == count
    return count


def test_missing_ray_is_one_line_and_exit_2(tmp_path, cache_dir) -> None:
    blocker = tmp_path / "no-ray" / "ray"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('ray is not installed here')\n")
    src = Path(__file__).resolve().parents[1] / "src"
    env = cli_env(PYTHONPATH=os.pathsep.join([str(blocker.parent), str(src)]))
    data, answers = _inputs(tmp_path)
    done = _run(data, answers, tmp_path / "store", cache_dir, "--executor", "ray", env=env)
    assert done.returncode == 2
    # The last line is the error; a validity warning about the default scorer may come before it.
    assert done.stderr.strip().splitlines()[-1] == "error: this needs the 'ray' package: pip install 'trusteval[ray]'"
    assert not (tmp_path / "store").exists(), "nothing is written before the executor starts"


def test_ray_flags_need_the_ray_executor(tmp_path, cache_dir) -> None:
    data, answers = _inputs(tmp_path)
    done = _run(data, answers, tmp_path / "store", cache_dir, "--ray-address", "127.0.0.1:1")
    assert done.returncode == 2
    assert "--ray-address: only used with --executor ray" in done.stderr


def test_scoring_workers_get_only_the_key_variables_their_scorer_spec_names() -> None:
    env = {"PERSPECTIVE_API_KEY": "k-a", "MY_KEY": "k-b", "OPENAI_API_KEY": "sk"}
    assert scorer_env("perspective", env) == {"PERSPECTIVE_API_KEY": "k-a"}
    assert scorer_env("perspective?api_key_env=MY_KEY", env) == {"MY_KEY": "k-b"}
    assert scorer_env("cold-tfidf", env) == {}


def test_workers_get_only_the_key_variables_their_spec_names() -> None:
    env = {"OPENAI_API_KEY": "sk-a", "MY_KEY": "sk-b", "HOME": "/root", "AWS_SECRET_ACCESS_KEY": "x"}
    assert worker_env(ModelSpec.parse("openai:m?base_url=http://h/v1"), env) == {"OPENAI_API_KEY": "sk-a"}
    assert worker_env(ModelSpec.parse("openai:m?api_key_env=MY_KEY"), env) == {"MY_KEY": "sk-b"}
    assert worker_env(ModelSpec.parse("openai:m?api_key_env="), env) == {}
    assert worker_env(ModelSpec.parse("replay:a.jsonl"), env) == {}
