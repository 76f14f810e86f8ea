"""The small things a user hits: a model column in `runs`, did-you-mean for flags and specs, plain words for a
missing --benchmark, short `file:` titles, refusals kept out of the most-toxic list, --require-valid-scorer on
label-free data, progress in a log file and in a notebook, and API keys from `.env`."""

from __future__ import annotations

import io
from collections.abc import Sequence

import pytest

import trusteval
from helpers import run_cli
from trusteval import cli, progress
from trusteval.dotenv import process_env
from trusteval.errors import BackendError, UsageError
from trusteval.models import BACKENDS
from trusteval.models.base import ModelSpec
from trusteval.models.llamacpp import resolve_gguf
from trusteval.records import Generation, Request, ScoreStatus
from trusteval.report.trustgpt_collect import counted_answer
from trusteval.tables.paper_tables import shown_dataset, table5


class Calm:
    batch_size = 8
    max_concurrency = 1

    def __init__(self, spec, settings):
        self.name = spec.name

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, "谢谢你的分享。") for r in requests]

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "calm"}


@pytest.fixture
def calm_backend():
    BACKENDS.register("calm", Calm)
    yield
    BACKENDS.unregister("calm")


def test_runs_lists_each_runs_models(tmp_path, data_dir, cache_dir, calm_backend):
    base = {"store": str(tmp_path / "ws"), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42],
            "limit": 4, "resamples": 100, "benchmark": "trusteval-toxicity"}  # fmt: skip
    first = trusteval.run({**base, "models": ["calm:a"]}, env={})
    second = trusteval.run({**base, "models": ["calm:b", "calm:c"]}, env={})
    listed = run_cli("runs", "--store", tmp_path / "ws")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split("\t")[0]: line.split("\t") for line in listed.stdout.splitlines()}
    assert lines[first.run_id][3] == "calm:a" and lines[second.run_id][3] == "calm:b,calm:c"
    as_json = run_cli("runs", "--store", tmp_path / "ws", "--json").json()["runs"]
    expected = {first.run_id: ["calm:a"], second.run_id: ["calm:b", "calm:c"]}
    assert {r["run_id"]: r["models"] for r in as_json} == expected


def test_a_mistyped_flag_gets_the_closest_one(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--benchmark", "trusteval-toxicity", "--datset", "cold"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --datset cold; --datset: did you mean --dataset?" in capsys.readouterr().err


def test_mistyped_model_specs_get_the_closest_name():
    with pytest.raises(UsageError, match="Did you mean 'default'"):
        ModelSpec.parse("defualt")  # --judge defualt
    with pytest.raises(BackendError, match=r"no GGUF file at 'smolm2'\. Did you mean 'llamacpp:smollm2'\?"):
        resolve_gguf("smolm2")


def test_run_without_a_benchmark_says_so(capsys):
    assert cli.main(["run", "--model", "default"]) == 2
    error = capsys.readouterr().err
    assert "no benchmark given: name one with --benchmark" in error and "Field required" not in error


def test_file_dataset_titles_show_the_file_name():
    assert shown_dataset("file:/home/me/data/x.csv?text=t") == "file:x.csv?text=t"
    assert shown_dataset("cold?split=dev") == "cold?split=dev"
    assert table5("file:/very/long/path/mine.jsonl", {}).title.startswith("Table 5 (file:mine.jsonl):")


def test_refusals_are_not_among_the_most_toxic():
    refused = {"refusal": 1.0, "refusal_status": ScoreStatus.OK}
    unread = {"refusal": None, "refusal_status": ScoreStatus.UNPARSED}
    answered = {"refusal": 0.0, "refusal_status": ScoreStatus.OK}
    assert [counted_answer(r) for r in (refused, unread, answered, {})] == [False, False, True, True]


def test_require_valid_scorer_explains_label_free_trustgpt_data(tmp_path, data_dir, cache_dir, calm_backend):
    spec = {"store": str(tmp_path / "ws"), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42],
            "benchmark": "trustgpt-toxicity", "models": ["calm:a"], "options": {"norms": "2"},
            "require_valid_scorer": True, "scorer": "en-tfidf?version=2"}  # fmt: skip
    # The norms carry no toxicity labels: only the verdict on model responses can be checked, and the refusal
    # says so (en-tfidf@2 is invalid on responses; version 3, the default, is valid there and the run goes on).
    with pytest.raises(UsageError, match=r"the run's data has no toxicity labels \(e\.g\. TrustGPT's norms\)"):
        trusteval.run(spec, env={})


def test_progress_in_a_log_file_prints_whole_lines():
    stream = io.StringIO()
    sink = progress.LineProgress(stream)
    sink.start("generate", 20)
    for _ in range(20):
        sink.advance("generate", failed=1)
    sink.finish("generate")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "generate: 0/20" and len(lines) == 11  # start, each tenth before the end, the end
    assert lines[1].startswith("generate: 2/20 (10%)") and lines[-1].endswith("failed 20  unparsed 0 done")
    assert lines[-1].startswith("generate: 20/20 (100%)")


def test_progress_falls_back_to_lines_off_a_terminal_and_in_a_notebook_without_widgets(monkeypatch):
    monkeypatch.setattr(progress.sys, "stderr", io.StringIO())  # a log file: no TTY
    assert isinstance(progress.make_progress(enabled=True), progress.LineProgress)
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # no ipywidgets
    assert isinstance(progress.make_progress(enabled=True), progress.LineProgress)
    assert isinstance(progress.make_progress(enabled=False), progress.NullProgress)


def test_api_keys_from_dotenv_are_read_and_redacted(tmp_path):
    """A key from .env reaches the backend through the injected environment and is scrubbed from its messages
    like a key from the environment."""
    import asyncio

    from trusteval.models.base import BackendSettings
    from trusteval.models.openai import create

    key = "sk-dotenv-Zq81xPqL0w7TkUv3"
    (tmp_path / ".env").write_text(f"# keys\nexport OPENAI_API_KEY='{key}'\nDATA_NAME=cold  # a note\n\n")
    env = process_env(base={"DATA_NAME": "from-environment"}, folder=tmp_path)
    assert env["OPENAI_API_KEY"] == key and env["DATA_NAME"] == "from-environment"  # the environment wins
    backend = create(ModelSpec.parse("openai:gpt-4o-mini"), BackendSettings(env=env))
    assert backend.config.api_key == key
    assert backend._redact(f"server said: bad key {key.upper()}") == "server said: bad key [redacted]"
    asyncio.run(backend.aclose())
    assert process_env(base={}, folder=tmp_path)["DATA_NAME"] == "cold"
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={key}\nthis is not a line {key}\n")
    with pytest.raises(UsageError) as error:
        process_env(base={}, folder=tmp_path)
    assert "line 2: expected NAME=value" in str(error.value) and key not in str(error.value)


# -- issue 32 item 6 ---------------------------------------------------------------------------------------------


def test_unrecognized_arguments_show_escape_bytes_instead_of_printing_them_raw():
    done = run_cli("list", "--dat\x1b[2Jset", "x\x07y")
    assert done.returncode == 2
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr
    assert "unrecognized arguments: --dat\\x1b[2Jset x\\x07y" in done.stderr, done.stderr


def test_a_dotenv_file_with_a_utf8_byte_order_mark_is_read(tmp_path):
    (tmp_path / ".env").write_bytes(b"\xef\xbb\xbfOPENAI_API_KEY=sk-from-a-bom-file-123\nOTHER=1\n")
    env = process_env({}, tmp_path)
    assert env["OPENAI_API_KEY"] == "sk-from-a-bom-file-123" and env["OTHER"] == "1"
