"""How a run ends, through the real CLI: an incomplete run has its own exit status (3), output paths that
cannot be written are one line and exit 2, and a model whose tokenizer cannot load is refused before the run
is recorded."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli

EXIT_INCOMPLETE = 3
PROMPTS = ["第一句测试文本", "第二句测试文本", "第三句测试文本"]


def _runs_in(store: Path) -> int:
    db = store / "trusteval.sqlite"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


def _one_line_error(result, expected: str) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and expected in result.stderr, result.stderr


@pytest.fixture(scope="module")
def incomplete_run(tmp_path_factory, cache_dir):
    """A run whose replay file answers two of three prompts: stored, but incomplete."""
    folder = tmp_path_factory.mktemp("incomplete")
    data = folder / "prompts.jsonl"
    rows = [{"text": text, "label": i % 2} for i, text in enumerate(PROMPTS)]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    answers = folder / "answers.jsonl"
    answered = [{"prompt": text, "response": "好的"} for text in PROMPTS[:2]]
    answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in answered), "utf-8")
    store = folder / "ws"
    args = ("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh", "--model",
            f"replay:{answers}", "--seeds", "42", "--store", store, "--cache-dir", cache_dir, "--resamples", "100",
            "--no-progress")  # fmt: skip
    return store, args, run_cli(*args), run_cli(*args, "--json")


@pytest.mark.slow
def test_an_incomplete_run_exits_3_and_says_so(incomplete_run):
    store, _, plain, as_json = incomplete_run
    assert plain.returncode == EXIT_INCOMPLETE, plain.stderr[-2000:]
    assert "(incomplete)" in plain.stdout and "run the same command again" in plain.stdout
    assert as_json.returncode == EXIT_INCOMPLETE
    out = as_json.json()
    assert out["status"] == "incomplete" and out["failed"] == 1 and out["generated"] == 0
    assert _runs_in(store) == 1


def test_run_help_documents_the_exit_statuses():
    shown = run_cli("run", "--help")
    assert shown.returncode == 0
    assert "3 the run is stored but incomplete" in " ".join(shown.stdout.split())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "target", "expected"),
    [
        ("export", "missing-folder/rows.jsonl", "flag --output: cannot write"),
        ("export", "a-file/rows.jsonl", "flag --output: cannot write"),
        ("export", ".", "flag --output: cannot write"),
        ("report", "a-file/tables", "flag --out: cannot write the tables to"),
        ("report", "a-file", "flag --out: cannot write the tables to"),
        ("report", "/proc/trusteval-tables", "flag --out: cannot write the tables to"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_one_line(tmp_path, incomplete_run, command, target, expected):
    store = incomplete_run[0]
    (tmp_path / "a-file").write_text("not a folder", "utf-8")
    path = target if target.startswith("/") else str(tmp_path / target)
    flag = "-o" if command == "export" else "--out"
    _one_line_error(run_cli(command, "--store", store, flag, path), expected)


def test_a_missing_translation_template_is_one_line(tmp_path):
    result = run_cli("translate", "--dataset", "cold", "--output", tmp_path / "out.jsonl",
                     "--template-file", tmp_path / "missing.txt", "--store", tmp_path / "ws")  # fmt: skip
    _one_line_error(result, f"flag --template-file: cannot read '{tmp_path / 'missing.txt'}': No such file")
    assert _runs_in(tmp_path / "ws") == 0


@pytest.mark.slow
def test_an_hf_folder_whose_tokenizer_fails_is_refused_before_the_run(tmp_path, tiny_llama_dir):
    broken = tmp_path / "broken-tokenizer"
    shutil.copytree(tiny_llama_dir, broken)
    (broken / "tokenizer.json").write_text("{ this is not a tokenizer", "utf-8")
    store = tmp_path / "ws"
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--limit", "2", "--seeds", "42",
                     "--model", f"hf:{broken}", "--store", store, "--no-progress")  # fmt: skip
    _one_line_error(result, f"hf: cannot load the tokenizer of '{broken}'")
    assert _runs_in(store) == 0, "a model that cannot load must not leave a recorded run"
