"""Data files are streamed (read again from disk a block of lines at a time on each pass, never held whole):
a problem deep in a large file is still one message naming the file, line and field, exit 2, and a store
that already holds a run loses nothing; a file changed between passes is refused; records are the same
whatever the block size."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import pytest
from store_checks import STORE_FILE

from helpers import write_replay_answers
from trusteval import cli
from trusteval.data import decode
from trusteval.data.files import read_records
from trusteval.errors import DataError

ROWS = 30_000  # about 1.3 MB: several of decode's 256 KiB blocks
BAD_LINE = 28_765  # the header is line 1, so row i is on line i + 2


def _text(i: int) -> str:
    return f"第{i}句话：这个地区的人都很友好"


def _big_csv(path: Path, bad: dict[int, str] | None = None) -> Path:
    """ROWS rows of text,label,category; `bad` replaces the row on a line by raw text."""
    bad = bad or {}
    lines = ["text,label,category"]
    for i in range(ROWS):
        line = i + 2
        lines.append(bad.get(line, f"{_text(i)},{i % 2},{('race', 'gender', 'region')[i % 3]}"))
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8").replace(b"@BAD@", b"\xff"))
    return path


def _big_jsonl(path: Path, bad_line: int, bad: str) -> Path:
    rows = [json.dumps({"text": _text(i), "label": i % 2}, ensure_ascii=False) for i in range(ROWS)]
    rows[bad_line - 1] = bad
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _store_contents(store: Path) -> dict[str, object]:
    with sqlite3.connect(store / STORE_FILE) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = ("runs", "run_items", "requests", "prompts", "generations", "scores", "aggregates")
        counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables}
        runs = conn.execute("SELECT run_id, status, spec, updated_at FROM runs ORDER BY run_id").fetchall()
    return {"counts": counts, "runs": runs}


def _run(store: Path, cache_dir: Path, dataset: str, answers: Path) -> int:
    return cli.main(["run", "--benchmark", "trusteval-toxicity", "--dataset", dataset, "--model",
                     f"replay:{answers}", "--seeds", "42", "--store", str(store), "--cache-dir", str(cache_dir),
                     "--resamples", "20", "--no-progress"])  # fmt: skip


CSV_CASES = [
    ("a row with a field too many", {BAD_LINE: f"{_text(0)},1,race,extra"},
     f"line {BAD_LINE}: expected 3 fields as in the header, found 4"),
    ("a byte that is not UTF-8", {BAD_LINE: "第@BAD@句,1,race"}, f"line {BAD_LINE}: not UTF-8 (byte 0xff at offset"),
    ("a label outside 0/1", {BAD_LINE: "一句话,2,race"}, f"line {BAD_LINE}, field 'label': label '2' is not one of"),
    ("an empty class", {BAD_LINE: "一句话,1,"}, f"line {BAD_LINE}, field 'category': empty attribute class"),
    ("a NUL byte", {BAD_LINE: "一句\x00话,1,race"}, f"line {BAD_LINE}: contains a NUL byte"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "bad", "expected"), CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_a_bad_line_deep_in_a_streamed_file_is_refused_and_nothing_stored_is_lost(
    tmp_path, capsys, cache_dir, case, bad, expected
):
    store = tmp_path / "ws"
    good = tmp_path / "good.csv"
    good.write_text("text,label,category\n" + "".join(f"{_text(i)},{i % 2},race\n" for i in range(12)), "utf-8")
    answers = write_replay_answers(tmp_path / "answers.jsonl", [_text(i) for i in range(12)], ["不同意"] * 12)
    assert _run(store, cache_dir, f"file:{good}?lang=zh", answers) == 0, capsys.readouterr().err
    before = _store_contents(store)
    capsys.readouterr()

    path = _big_csv(tmp_path / "big.csv", bad)
    code = _run(store, cache_dir, f"file:{path}?lang=zh", answers)
    error = capsys.readouterr().err
    assert code == 2, error
    assert error.startswith("error: ") and error.count("\n") == 1 and "Traceback" not in error
    assert f"{path}, {expected}" in error, error
    assert _store_contents(store) == before, "a refused run must leave the stored runs as they were"


def test_a_bad_line_deep_in_a_streamed_json_lines_file_names_its_line(tmp_path, capsys):
    path = _big_jsonl(tmp_path / "big.jsonl", BAD_LINE, '{"text": "一句话", "label": 1')
    code = cli.main(["run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{path}?lang=zh",
                     "--store", str(tmp_path / "ws"), "--no-progress"])  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2 and f"{path}, line {BAD_LINE}: not valid JSON" in error, error
    assert not (tmp_path / "ws" / STORE_FILE).exists()


def test_a_duplicate_id_deep_in_a_file_names_both_lines(tmp_path):
    from trusteval.data import load_dataset
    from trusteval.data.sources import DataContext

    path = tmp_path / "ids.csv"
    rows = [f"id{i},{_text(i)},{i % 2}" for i in range(ROWS)]
    rows[BAD_LINE - 2] = f"id17,{_text(BAD_LINE)},1"
    rows[BAD_LINE] = "id18,,1"  # a later problem: the duplicate comes first in file order
    path.write_text("id,text,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as raised:
        load_dataset(f"file:{path}?lang=zh", DataContext(data_dir=None, cache_dir=tmp_path))
    assert f"line {BAD_LINE}, field 'id': duplicate id 'id17' (first on line 19)" in str(raised.value)


def test_a_file_changed_between_passes_is_refused(tmp_path):
    path = _big_csv(tmp_path / "data.csv")
    records = read_records(path)
    assert len(records) == ROWS and records[0] == (2, {"text": _text(0), "label": "0", "category": "race"})
    with path.open("a", encoding="utf-8") as handle:
        handle.write("另一句,1,race\n")
    with pytest.raises(DataError, match="the file changed while it was being read"):
        list(records)


ROWS_SPANNING_LINES = '"first\nsecond",1\r\n"a, b",0\rplain,1\n"x\r\ny\rz",0\n\n  \n last,1\n'


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 18])
def test_records_are_the_whole_text_s_records_whatever_the_block_size(tmp_path, monkeypatch, block):
    """Lines split at "\\n", "\\r" and "\\r\\n" as in the whole text, quoted fields across lines and blocks."""
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    path = tmp_path / "multi.csv"
    path.write_bytes(("text,label\n" + ROWS_SPANNING_LINES * 50).encode())
    reader = csv.reader(io.StringIO(path.read_bytes().decode("utf-8"), newline=""))
    header = next(reader)
    expected = [(reader.line_num, dict(zip(header, row, strict=True))) for row in reader if any(c.strip() for c in row)]
    got = list(read_records(path))
    assert [row for _, row in got] == [row for _, row in expected]
    assert [line for line, _ in got] == [line for line, _ in expected]
