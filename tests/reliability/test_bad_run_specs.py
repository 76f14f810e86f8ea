"""Broken run specs (YAML files, environment variables) through the real CLI: one message naming the file, the
line and the key, exit code 2, nothing stored. `--dataset no-such-dataset` is a safety net: a spec that
wrongly passed validation stops at planning instead of starting a full evaluation."""

from __future__ import annotations

import pytest
from store_checks import STORE_FILE

from trusteval import cli

CANARY = "sk-TRUSTEVAL-CANARY-in-a-spec-0042"

SPEC_CASES = [
    ("unknown key", "temprature: 0.5\n", "line 2, key 'temprature': unknown key. Did you mean 'temperature'?"),
    ("text for a number", "limit: many\n", "line 2, key 'limit': Input should be a valid integer"),
    ("number for a list", "seeds: 42\n", "line 2, key 'seeds': Input should be a valid list"),
    ("empty model list", "models: []\n", "line 2, key 'models': List should have at least 1 item"),
    ("out of range", "temperature: -1\n", "line 2, key 'temperature': Input should be greater than or equal to 0"),
    ("not an allowed value", "prompt_toxicity: maybe\n", "line 2, key 'prompt_toxicity': Input should be"),
    ("list for a mapping", "options: [a, b]\n", "line 2, key 'options': Input should be a valid dictionary"),
    ("template without slot", "template: no slot\n", "line 2, key 'template': Value error, the template must"),
    ("key given twice", "limit: 3\nlimit: 5\n", "line 3, key 'limit': given twice (first on line 2)"),
    ("unclosed bracket", "seeds: [42,\n", "line 3: not valid YAML"),
    ("key in base_url", f"models: ['openai:x?base_url=http://me:{CANARY}@127.0.0.1:9/v1']\n", "must not hold a"),
    ("key as an option", f"models: ['openai:x?api_key={CANARY}']\n", "credential (option 'api_key')"),
    ("nested 10,000 deep", "options: " + "[" * 10_000 + "]" * 10_000 + "\n", "nested too deeply"),
    ("resamples 1e12", "resamples: 1000000000000\n", "line 2, key 'resamples': Input should be less than or equal to"),
    ("infinite timeout", "timeout_s: .inf\n", "line 2, key 'timeout_s': Input should be a finite number"),
]


def _run_with_spec(tmp_path, capsys, spec_file) -> str:
    store = tmp_path / "ws"
    code = cli.main(["run", "--spec", str(spec_file), "--dataset", "no-such-dataset", "--store", str(store)])
    error = capsys.readouterr().err
    assert code == 2, error
    assert "Traceback" not in error and error.count("\n") == 1
    assert not (store / STORE_FILE).exists()
    return error


@pytest.mark.slow
@pytest.mark.parametrize(("case", "body", "expected"), SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_broken_run_spec(tmp_path, capsys, figures, case, body, expected):
    spec = tmp_path / "run.yaml"
    spec.write_text("benchmark: trusteval-toxicity\n" + body, "utf-8")
    error = _run_with_spec(tmp_path, capsys, spec)
    assert f"run spec '{spec}'" in error and expected in error, error[:1000]
    assert CANARY not in error, "the message must not repeat a key"
    figures.setdefault("bad_inputs", {})[f"run spec: {case}"] = "rejected cleanly"


@pytest.mark.parametrize(
    ("case", "content", "expected"),
    [
        ("empty file", b"", "the file is empty"),
        ("not a mapping", b"- benchmark\n- limit\n", "line 1: expected a mapping"),
        ("not UTF-8", b"benchmark: caf\xe9\n", "not UTF-8 text"),
        ("python tag", b"benchmark: !!python/object/apply:os.system ['touch MARKER']\n", "not valid YAML"),
    ],
)
def test_run_spec_file_that_is_not_a_spec(tmp_path, capsys, monkeypatch, figures, case, content, expected):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "run.yaml"
    spec.write_bytes(content)
    assert expected in _run_with_spec(tmp_path, capsys, spec)
    assert not (tmp_path / "MARKER").exists(), "YAML tags must never run code"
    figures.setdefault("bad_inputs", {})[f"run spec: {case}"] = "rejected cleanly"


def test_bad_environment_variable_is_named(tmp_path, capsys, monkeypatch, figures):
    monkeypatch.setenv("TRUSTEVAL_LIMIT", "abc")
    store = tmp_path / "ws"
    code = cli.main(["run", "--benchmark", "trusteval-toxicity", "--dataset", "no-such-dataset", "--store", str(store)])
    error = capsys.readouterr().err
    assert code == 2 and "environment variable TRUSTEVAL_LIMIT: Input should be a valid integer" in error
    assert not (store / STORE_FILE).exists()
    figures.setdefault("bad_inputs", {})["environment: TRUSTEVAL_LIMIT=abc"] = "rejected cleanly"


FLAG_CASES = [
    # Each used to crash with a traceback, hang, or run a whole evaluation in which every request failed.
    (("--seeds", "1e23"), "flag --seeds: Input should be a valid integer"),
    (("--seeds", "100000000000000000000000"), "flag --seeds: Input should be less than or equal to 4294967295"),
    (("--sample-seed", "-1"), "flag --sample-seed: Input should be greater than or equal to 0"),
    (("--temperature", "inf"), "flag --temperature: Input should be a finite number"),
    (("--temperature", "nan"), "flag --temperature: Input should be a finite number"),
    (("--temperature", "3"), "flag --temperature: Input should be less than or equal to 2"),
    (("--top-p", "0"), "flag --top-p: Input should be greater than 0"),
    (("--max-new-tokens", "0"), "flag --max-new-tokens: Input should be greater than or equal to 1"),
    (("--max-new-tokens", "100000000"), "flag --max-new-tokens: Input should be less than or equal to 131072"),
    (("--concurrency", "20000"), "flag --concurrency: Input should be less than or equal to 1024"),
    (("--timeout", "inf"), "flag --timeout: Input should be a finite number"),
    (("--timeout", "0"), "flag --timeout: Input should be greater than 0"),
    (("--resamples", "1000000000000"), "flag --resamples: Input should be less than or equal to 100000"),
    (("--limit", "0"), "flag --limit: Input should be greater than or equal to 1"),
    (("--option", "limt=5"), "trusteval-toxicity: unknown option 'limt'. Did you mean '--limit'? (a run flag"),
]


@pytest.mark.parametrize(("flags", "expected"), FLAG_CASES, ids=[" ".join(c[0]) for c in FLAG_CASES])
def test_out_of_range_flag_is_refused_before_anything_is_written(tmp_path, capsys, figures, flags, expected):
    store = tmp_path / "ws"
    code = cli.main(["run", "--benchmark", "trusteval-toxicity", "--dataset", "no-such-dataset", "--store", str(store),
                     "--no-progress", *flags])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2, error
    assert "Traceback" not in error and error.count("\n") == 1 and expected in error, error
    assert not (store / STORE_FILE).exists()
    figures.setdefault("bad_inputs", {})[f"flag: {' '.join(flags)}"] = "rejected cleanly"


@pytest.mark.parametrize("benchmark", ["trusteval-toxicity", "trusteval-bias", "trusteval-avoidance"])
def test_every_trusteval_benchmark_refuses_an_option(tmp_path, capsys, benchmark):
    code = cli.main(["run", "--benchmark", benchmark, "--option", "per-category=3", "--dataset", "no-such-dataset",
                     "--store", str(tmp_path / "ws")])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2 and f"{benchmark}: unknown option 'per-category'" in error, error
    assert "Did you mean '--per-category'?" in error
    assert not (tmp_path / "ws" / STORE_FILE).exists()


def test_replay_spec_refuses_an_unknown_option(tmp_path, capsys):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"prompt": "a", "response": "b"}\n', "utf-8")
    code = cli.main(["run", "--benchmark", "trusteval-toxicity", "--model", f"replay:{answers}?promt_field=q",
                     "--store", str(tmp_path / "ws")])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2 and "unknown option 'promt_field'. Did you mean 'prompt_field'?" in error, error
    assert not (tmp_path / "ws" / STORE_FILE).exists()
