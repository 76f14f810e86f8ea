"""`trusteval merge` with stores that disagree: different answers or scores under one key are counted and
reported, refused by default (exit 2, target untouched) or resolved by `--on-conflict first|last`; a malformed
row (a BLOB answer) is one line, exit 2, target untouched. Stores made by the real CLI."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli, write_labelled_csv, write_replay_answers
from trusteval.store import STORE_FILENAME

pytestmark = pytest.mark.slow

TEXTS = [f"第{i}句：这个地区的人{word}" for i, word in enumerate(["都很友好", "真恶心", "太蠢了", "很勤劳"] * 3)]


@pytest.fixture(scope="module")
def run_store(tmp_path_factory, cache_dir) -> Path:
    folder = tmp_path_factory.mktemp("conflicts")
    data = write_labelled_csv(folder / "data.csv", TEXTS)
    answers = write_replay_answers(folder / "answers.jsonl", TEXTS, [f"回答：{t}" for t in TEXTS])
    done = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                   "--model", f"replay:{answers}", "--seeds", "42", "--store", folder / "store", "--cache-dir",
                   cache_dir, "--resamples", "50", "--json", "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return folder / "store"


def _copy(store: Path, to: Path, *statements: str) -> Path:
    shutil.copytree(store, to)
    conn = sqlite3.connect(to / STORE_FILENAME, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return to


def _query(store: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"{(store / STORE_FILENAME).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


FIRST_KEY = "(SELECT key FROM generations ORDER BY key LIMIT 1)"
OTHER_ANSWER = f"UPDATE generations SET text='另一个回答' WHERE key={FIRST_KEY}"
FIRST_SCORE = "(SELECT subject, scorer FROM scores ORDER BY subject, scorer LIMIT 1)"
OTHER_SCORE = f"UPDATE scores SET value=0.123 WHERE (subject, scorer) IN {FIRST_SCORE}"


def test_conflicting_answers_and_scores_are_refused_by_default_and_counted(run_store, tmp_path) -> None:
    other = _copy(run_store, tmp_path / "other", OTHER_ANSWER, OTHER_SCORE)
    into = tmp_path / "into"
    for order in ((run_store, other), (other, run_store)):
        done = run_cli("merge", *order, "--into", into)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "merge refused, nothing written: 2 conflicting keys (generations 1, scores 1)" \
            in lines[0], done.stderr  # fmt: skip
        assert "--on-conflict first" in lines[0]
        assert not into.exists(), "a refused merge creates no target"
    told = run_cli("merge", run_store, other, "--into", into, "--json")
    assert told.returncode == 2
    assert told.json()["refused"] is True and told.json()["conflicts"]["counts"] == {"generations": 1, "scores": 1}

    merged = run_cli("merge", run_store, "--into", into)  # a target that exists: a conflict with it is refused too
    assert merged.returncode == 0, merged.stderr
    before = _digest(into)
    again = run_cli("merge", other, "--into", into, "--json")
    assert again.returncode == 2 and again.json()["conflicts"]["counts"] == {"generations": 1, "scores": 1}
    assert again.json()["conflicts"]["examples"][0]["a"] == f"{into} (the target)"
    assert _digest(into) == before, "the target is left byte for byte as it was"


@pytest.mark.parametrize(("rule", "winner"), [("first", 0), ("last", 1)])
def test_on_conflict_chooses_a_side_and_says_so(run_store, tmp_path, rule, winner) -> None:
    other = _copy(run_store, tmp_path / "other", OTHER_ANSWER, OTHER_SCORE)
    key, original = _query(run_store, f"SELECT key, text FROM generations WHERE key={FIRST_KEY}")[0]
    subject, scorer, value = _query(run_store, "SELECT subject, scorer, value FROM scores ORDER BY 1, 2 LIMIT 1")[0]
    done = run_cli("merge", run_store, other, "--into", tmp_path / "into", "--json", "--on-conflict", rule)
    assert done.returncode == 0, done.stderr
    out = done.json()
    assert out["on_conflict"] == rule and out["conflicts"]["total"] == 2
    assert out["replaced"] == ({"generations": 1, "scores": 1} if rule == "last" else {})
    text = _query(tmp_path / "into", f"SELECT text FROM generations WHERE key='{key}'")[0][0]
    assert text == [original, "另一个回答"][winner]
    score = _query(tmp_path / "into", f"SELECT value FROM scores WHERE subject='{subject}' AND scorer='{scorer}'")
    assert score[0][0] == [value, 0.123][winner]
    plain = run_cli("merge", run_store, other, "--into", tmp_path / "plain", "--on-conflict", rule)
    assert "warning: 2 conflicting keys (generations 1, scores 1)" in plain.stderr
    assert f"kept the {rule} store's rows" in plain.stderr


def test_identical_stores_have_no_conflict(run_store, tmp_path) -> None:
    same = _copy(run_store, tmp_path / "same", "UPDATE generations SET created_at = created_at + 5")
    done = run_cli("merge", run_store, same, "--into", tmp_path / "into", "--json")
    assert done.returncode == 0, done.stderr
    assert done.json()["conflicts"] == {"total": 0, "counts": {"generations": 0, "scores": 0}, "examples": []}


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            f"UPDATE generations SET text=CAST('x' AS BLOB) WHERE key={FIRST_KEY}",
            "column 'text' holds a blob, not text",
        ),
        (f"UPDATE scores SET value='high' WHERE (subject, scorer) IN {FIRST_SCORE}", "column 'value' holds a text"),
        ("UPDATE requests SET seed='forty-two'", "column 'seed' holds a text, not integer"),
    ],
)
def test_a_malformed_row_is_one_line_exit_2_and_the_target_untouched(run_store, tmp_path, statement, expected):
    bad = _copy(run_store, tmp_path / "bad", statement)
    into = _copy(run_store, tmp_path / "into")
    before = _digest(into)
    done = run_cli("merge", bad, "--into", into)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad / STORE_FILENAME) in lines[0] and expected in lines[0], done.stderr
    assert _digest(into) == before
