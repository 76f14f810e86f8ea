"""One JSON Lines decoder (`data/decode.py`) for data files and the replay model's answers: the same rows,
line numbers, byte offsets and errors, however the file is cut into blocks."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from trusteval.data import decode
from trusteval.data.files import read_json_lines, read_records
from trusteval.errors import DataError
from trusteval.models.replay import check_answers

ROW = b'{"prompt": "a", "response": "A"}\n'
FIELDS = ("prompt", "response", "seed")


def _errors(path: Path) -> list[str]:
    errors = []
    for read in (read_records, lambda p: list(read_json_lines(p)), lambda p: check_answers(p, FIELDS)):
        with pytest.raises(DataError) as caught:
            read(path)
        errors.append(str(caught.value))
    return errors


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (ROW + b"{not json\n" + b'{"prompt": "\xff"}\n', "line 2: not valid JSON"),
        (ROW + b"[1]\n" + b"\x00\n", "line 2: expected a JSON object, found list"),
        (ROW + b'{"prompt": "\\ud800", "response": "A"}\n' + b"\xe4\n", "line 2, field 'prompt': the value holds"),
        (ROW * 3 + b"\xe4\xb8\n" + b"{not json\n", "line 4: not UTF-8 (byte 0xe4 at offset 99)"),
        (ROW + b"x\xe2\x80\xa8\n" + b"\x00\n", "line 2: not valid JSON"),  # U+2028: line 3 is the line's half
        # Found by a randomized test: a problem byte after a line end that is not "\n" (CR, U+2028) came
        # before an earlier line's JSON error, and a bad byte before a NUL earlier on its "\n" line
        (ROW + b"{not json\r" + b'{"prompt": "\xff"}\n', "line 2: not valid JSON"),
        (ROW + b"[1]\xe2\x80\xa8" + b"\x00\n", "line 2: expected a JSON object, found list"),
        (ROW + b'{"x": "\x00", "y": "\xff"}\n', "line 2: contains a NUL byte"),
    ],
    ids=[
        "json-before-byte",
        "list-before-nul",
        "surrogate-before-byte",
        "byte-before-json",
        "separator",
        "json-before-byte-after-cr",
        "list-before-nul-after-separator",
        "nul-before-byte",
    ],
)
@pytest.mark.parametrize("block", [decode.BLOCK_BYTES, 1, 40])
def test_every_reader_reports_the_first_problem_in_file_order(tmp_path, monkeypatch, content, expected, block):
    """Before, a data file reported a bad byte or NUL anywhere in it before an earlier line's JSON error."""
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    path = tmp_path / "rows.jsonl"
    path.write_bytes(content)
    errors = _errors(path)
    assert errors[0] == errors[1] == errors[2], errors
    assert errors[0].startswith(f"{path}, {expected}"), errors[0]


LINES = [
    "\ufeff" + json.dumps({"prompt": "a", "response": "A"}) + "\r\n",
    "\n",
    json.dumps({"prompt": "你好", "response": "回答 🎉"}, ensure_ascii=False) + "\n",
    json.dumps({"prompt": "b", "response": "B"}) + "\u2029" + json.dumps({"prompt": "c", "response": "C"}) + "\n",
    "  \t\n",
    json.dumps({"prompt": "d\u2028", "response": "D"}) + "\n",  # escaped by json.dumps: no split
    json.dumps({"prompt": "e", "response": "E"}),  # no line break at the end
]


@pytest.mark.parametrize("block", [1, 5, 64, decode.BLOCK_BYTES])
def test_blocks_give_the_rows_line_numbers_and_offsets_of_the_whole_text(monkeypatch, block):
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    raw = "".join(LINES).encode("utf-8")
    found = list(decode.json_lines(Path("x.jsonl"), io.BytesIO(raw)))
    text = raw.decode("utf-8").removeprefix("\ufeff")
    expected = [(n, json.loads(line)) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    assert [(n, row) for n, _, row in found] == expected
    assert [n for n, _, _ in found] == [1, 3, 4, 5, 7, 8]
    assert [offset for _, offset, _ in found] == [3, 38, 86, 121, 158, 197]
    for _, offset, row in found:
        assert json.loads(raw[offset:].decode("utf-8").splitlines()[0]) == row
