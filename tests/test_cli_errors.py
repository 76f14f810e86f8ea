"""Bad input: a clear message naming file / line / field, a non-zero exit, and no half-written run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers import cli_env, run_cli


def _runs_in(store: Path) -> int:
    db = store / "trusteval.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def _run(tmp_path, *extra, env=None):
    store = tmp_path / "ws"
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--limit", "2", "--seeds", "42", "--store", store,
                     *extra, env=env)  # fmt: skip
    return result, store


def _mirror(tmp_path: Path, content: bytes | None) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / "cold").mkdir(parents=True)
    if content is not None:
        (mirror / "cold" / "test.csv").write_bytes(content)
    return mirror


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cold/test.csv: cold is not available offline"),
        (b"", "cold/test.csv: the file is empty"),
        (b",split,topic,label,TEXT\n1,test,race,1,caf\xe9\n", "cold/test.csv, line 2: not UTF-8"),
        (b",split,topic,TEXT\n1,test,race,hi\n", "cold/test.csv, line 1, field 'label': missing column"),
    ],
)
def test_broken_dataset_file(tmp_path, content, expected):
    mirror = _mirror(tmp_path, content)
    result, store = _run(tmp_path, env=cli_env(TRUSTEVAL_DATA_DIR=str(mirror), TRUSTEVAL_ALLOW_UNPINNED_DATA="true"))
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert _runs_in(store) == 0


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--model", "hf_:gpt2"), "unknown model backend 'hf_'. Did you mean 'hf'?"),
        (("--model", "llamacpp:/nowhere/model.gguf"), "no GGUF file at '/nowhere/model.gguf'"),
        (("--scorer", "cold-tfdif"), "unknown scorer 'cold-tfdif'. Did you mean 'cold-tfidf'?"),
        (("--benchmark", "trusteval-toxicty"), "Did you mean 'trusteval-toxicity'?"),
        (("--dataset", "colt"), "unknown dataset 'colt'. Did you mean 'cold'?"),
        (("--seeds", "42,x"), "flag --seeds"),
    ],
)
def test_unknown_specs_get_a_suggestion(tmp_path, flags, expected):
    result, store = _run(tmp_path, *flags)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert _runs_in(store) == 0


def test_unknown_run_spec_key(tmp_path):
    spec = tmp_path / "run.yaml"
    spec.write_text("benchmark: trusteval-toxicity\nlimt: 3\n")
    result, store = _run(tmp_path, "--spec", spec)
    assert result.returncode == 2
    assert "line 2, key 'limt': unknown key. Did you mean 'limit'?" in result.stderr
    assert _runs_in(store) == 0


def test_report_on_a_missing_store(tmp_path):
    result = run_cli("report", "--store", tmp_path / "nothing")
    assert result.returncode == 2 and "no store in" in result.stderr


def test_unreachable_server_fails_before_the_run_starts(tmp_path):
    result, store = _run(tmp_path, "--model", "openai:smollm2?base_url=http://127.0.0.1:9/v1")
    assert result.returncode == 2
    assert "cannot reach http://127.0.0.1:9/v1" in result.stderr
    assert _runs_in(store) == 0


def test_missing_api_key_variable_is_named(tmp_path):
    env = cli_env()
    env.pop("TRUSTEVAL_TEST_KEY", None)
    result, store = _run(
        tmp_path,
        "--model",
        "openai:gpt-x?base_url=https://api.example.invalid/v1&api_key_env=TRUSTEVAL_TEST_KEY",
        env=env,
    )
    assert result.returncode == 2
    assert "set the environment variable TRUSTEVAL_TEST_KEY" in result.stderr
    assert _runs_in(store) == 0


def test_hf_model_folder_that_is_not_a_model(tmp_path):
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    result, store = _run(tmp_path, "--model", f"hf:{folder}")
    assert result.returncode == 2
    assert "is not a model folder (no config.json)" in result.stderr
    assert _runs_in(store) == 0


@pytest.mark.parametrize("flags", [(), ("--json",)])
def test_a_reader_that_closes_the_pipe_early_is_a_quiet_normal_end(tmp_path, cache_dir, flags):
    """`trusteval report | head`: the reader goes away before the report is written. It used to exit 1 with no
    word; a closed pipe is a normal end (exit 0, nothing on stderr), as for other Unix tools."""
    import subprocess

    from fixtures.llama_server import Reply, ScriptedOpenAIServer
    from helpers import cli_command

    with ScriptedOpenAIServer([Reply()]) as server:
        result, store = _run(tmp_path, "--model", f"openai:m?base_url={server.base_url}&api_key_env=",
                             "--cache-dir", cache_dir, "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    report = subprocess.Popen(cli_command("report", "--store", store, *flags), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=cli_env())  # fmt: skip
    report.stdout.close()  # as `head` does once it has its lines: before the report is written, every time
    _, stderr = report.communicate(timeout=300)
    assert (report.returncode, stderr.decode()) == (0, "")
