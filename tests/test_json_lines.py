"""One JSON Lines decoder (`data/decode.py`) for data files and the replay model's answers: the same rows,
line numbers, byte offsets and errors, however the file is cut into blocks."""

from __future__ import annotations

import io
import json
import random
import re
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
        (ROW + b"x\xe2\x80\xa8\n" + b"\x00\n", "line 2: not valid JSON"),  # U+2028 is no line end: "x\u2028"
        # Found by the randomized test below: a problem byte after a line end that is not "\n" (CR) came
        # before an earlier line's JSON error, and a bad byte before a NUL earlier on its "\n" line
        (ROW + b"{not json\r" + b'{"prompt": "\xff"}\n', "line 2: not valid JSON"),
        (ROW + b"[1]\r" + b"\x00\n", "line 2: expected a JSON object, found list"),
        (ROW + b'{"x": "\x00", "y": "\xff"}\n', "line 2: contains a NUL byte"),
    ],
    ids=[
        "json-before-byte",
        "list-before-nul",
        "surrogate-before-byte",
        "byte-before-json",
        "separator",
        "json-before-byte-after-cr",
        "list-before-nul-after-cr",
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
    json.dumps({"prompt": "b", "response": "B"}) + "\r" + json.dumps({"prompt": "c", "response": "C"}) + "\n",
    "  \t\u2028\n",  # blank: U+2028 is white space here, not a line end
    json.dumps({"prompt": "d\u2028\x85\u2029", "response": "D"}, ensure_ascii=False) + "\n",  # raw: no split
    json.dumps({"prompt": "e", "response": "E"}),  # no line break at the end
]


@pytest.mark.parametrize("block", [1, 5, 64, decode.BLOCK_BYTES])
def test_blocks_give_the_rows_line_numbers_and_offsets_of_the_whole_text(monkeypatch, block):
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    raw = "".join(LINES).encode("utf-8")
    found = list(decode.json_lines(Path("x.jsonl"), io.BytesIO(raw)))
    text = raw.decode("utf-8").removeprefix("\ufeff")
    expected = [(n, json.loads(line)) for n, line in enumerate(_physical_lines(text), start=1) if line.strip()]
    assert [(n, row) for n, _, row in found] == expected
    assert [n for n, _, _ in found] == [1, 3, 4, 5, 7, 8]
    assert [offset for _, offset, _ in found] == [3, 38, 86, 119, 159, 200]
    for _, offset, row in found:
        assert json.loads(_physical_lines(raw[offset:].decode("utf-8"))[0]) == row


def _physical_lines(text: str, keepends: bool = False) -> list[str]:
    """The reference: lines ended by "\\n", "\\r\\n" or "\\r", and nothing else (U+2028 and U+0085 are text)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    return lines if keepends else [line.rstrip("\r\n") for line in lines]


# -- randomized files (fixed seeds) against a reader of the whole text ------------------------------------------

WORDS = ["alpha", "beta", "gamma", "你好", "世界", "回答", "测试一下", "ünï", "🎉", "a\u2028b", "c\x85d", "e\u2029",
         "tab\t"]  # fmt: skip
BLANKS = ["", "   ", "\t", "\u3000"]
ENDS = ["\n", "\r\n", "\r"]


def _record(rng: random.Random, prompts: list[str]) -> str:
    """One answer row as JSON: text of ASCII and CJK, U+2028 / U+0085 inside strings raw or escaped (raw, as
    json.dumps(ensure_ascii=False) leaves them, they are text, not line ends), sometimes a seed, sometimes a long
    text that spans several blocks."""
    prompt = rng.choice(prompts) if prompts and rng.random() < 0.2 else " ".join(rng.choices(WORDS, k=3))
    prompts.append(prompt)
    row: dict = {"prompt": prompt, "response": " ".join(rng.choices(WORDS, k=rng.choice([2, 5, 80])))}
    if rng.random() < 0.5:
        row["seed"] = rng.choice([1, 42, ""])
    text = json.dumps(row, ensure_ascii=rng.random() < 0.3)
    return text.replace("\u2028", "\\u2028").replace("\x85", "\\u0085") if rng.random() < 0.5 else text


def _lines(rng: random.Random) -> list[str]:
    """A valid file's lines with their ends (LF, CRLF, lone CR): records, blank lines (some of Unicode white
    space and characters str.splitlines would split on), and records followed by JSON white space."""
    prompts: list[str] = []
    lines = []
    for _ in range(rng.randint(30, 70)):
        kind = rng.random()
        if kind < 0.15:
            body = rng.choice(BLANKS) + rng.choice(["", "\u2028", "\x85", "\u2029", "\x0c", "\x1e"])
        else:
            body = _record(rng, prompts) + rng.choice(["", "", " \t"])
        lines.append(body + rng.choice(ENDS))
    if rng.random() < 0.5:
        lines[-1] = lines[-1].rstrip("\r\n")  # no line break at the end
    return lines


def _file_bytes(rng: random.Random, lines: list[str]) -> tuple[bytes, int]:
    """The file's bytes (UTF-8, sometimes with a byte order mark) and the length of that mark."""
    bom = decode.UTF8_BOM if rng.random() < 0.3 else b""
    return bom + "".join(lines).encode("utf-8"), len(bom)


def _reference(raw: bytes, bom: int) -> list[tuple[int, int, dict]]:
    """(line number, byte offset, object) of each line that is not blank: the whole text split by
    `_physical_lines`."""
    found, offset = [], bom
    for number, piece in enumerate(_physical_lines(raw[bom:].decode("utf-8"), keepends=True), start=1):
        line = piece.rstrip("\r\n")
        if line.strip():
            found.append((number, offset, json.loads(line)))
        offset += len(piece.encode("utf-8"))
    return found


@pytest.mark.parametrize("seed", range(12))
def test_random_files_read_like_the_whole_text(tmp_path, monkeypatch, seed):
    from trusteval.models.replay_index import AnswerIndex

    rng = random.Random(seed)
    monkeypatch.setattr(decode, "BLOCK_BYTES", rng.randint(64, 300))
    raw, bom = _file_bytes(rng, _lines(rng))
    path = tmp_path / "rows.jsonl"
    path.write_bytes(raw)
    expected = _reference(raw, bom)
    assert len(raw) > 5 * decode.BLOCK_BYTES  # many blocks
    found = list(decode.json_lines(path, io.BytesIO(raw)))
    assert found == expected
    assert list(read_records(path)) == list(read_json_lines(path)) == [(n, row) for n, _, row in expected]
    for _, offset, row in found:  # each offset is where the line's bytes start
        assert json.loads(_physical_lines(raw[offset:].decode("utf-8"))[0]) == row
    answers = {(row["prompt"], row["seed"] if row.get("seed", "") != "" else None): row["response"]
               for _, _, row in expected}  # fmt: skip
    index = AnswerIndex(path, FIELDS)
    try:
        assert {key: index.get(*key) for key in answers} == answers and len(index) == len(answers)
    finally:
        index.close()


PROBLEMS = {
    "byte": b"\xff",
    "cut": "你".encode()[:2],  # a character cut short
    "nul": b"\x00",
    "control": b"\x0b",  # once a line end for str.splitlines; inside an object, never JSON
}
WHOLE_LINES = {"json": b"{not json", "list": b"[1, 2]", "text": b'"just text"'}


def _inject(rng: random.Random, lines: list[str]) -> bytes:
    """The file's lines as bytes with one or two problems in random record lines."""
    encoded = [line.encode("utf-8") for line in lines]
    records = [n for n, line in enumerate(lines) if line.lstrip().startswith("{")]
    for at in rng.sample(records, rng.choice([1, 1, 2])):
        kind = rng.choice([*PROBLEMS, *WHOLE_LINES])
        if kind in WHOLE_LINES:
            encoded[at] = WHOLE_LINES[kind] + rng.choice(ENDS).encode()
            continue
        cut = rng.randint(1, json.JSONDecoder().raw_decode(lines[at])[1] - 1)  # inside the object
        encoded[at] = lines[at][:cut].encode("utf-8") + PROBLEMS[kind] + lines[at][cut:].encode("utf-8")
    return b"".join(encoded)


def _first_problem(path: Path, raw: bytes, bom: int) -> str:
    """The message of the first problem in file order, found in the whole text: a byte that is not UTF-8 or a
    NUL is numbered by "\\n" lines, a JSON problem by `_physical_lines` (decode.json_lines' docstring)."""
    try:
        text = raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.start
        text = raw[bom : bom + bad].decode("utf-8")
        byte_problem = (1 + raw[:bom + bad].count(b"\n"), f"not UTF-8 (byte 0x{raw[bom + bad]:02x} at offset "
                        f"{bom + bad:,}); re-save the file as UTF-8")  # fmt: skip
    else:
        byte_problem = None
    if "\x00" in text:
        nul = text.index("\x00")
        byte_problem = (1 + text.count("\n", 0, nul), "contains a NUL byte; the file is binary or corrupted")
        text = text[:nul]
    lines = _physical_lines(text)
    cut_short = _physical_lines(text + "x")[-1] != "x"  # the text ends inside the problem's line
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if byte_problem is not None and cut_short and number == len(lines):
                break  # the line the bad byte is in: the byte is the first problem
            return f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno})"
        if not isinstance(row, dict):
            return f"{path}, line {number}: expected a JSON object, found {type(row).__name__}"
    assert byte_problem is not None
    return f"{path}, line {byte_problem[0]}: {byte_problem[1]}"


# 446, 1286, 1705: files whose first problem was reported after a later byte problem on the same "\n" line
@pytest.mark.parametrize("seed", [*range(40), 446, 1286, 1705])
def test_the_first_problem_in_a_random_file_is_named_alike_by_every_reader(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    monkeypatch.setattr(decode, "BLOCK_BYTES", rng.randint(64, 300))
    body = _inject(rng, _lines(rng))
    bom = decode.UTF8_BOM if rng.random() < 0.3 else b""
    path = tmp_path / "rows.jsonl"
    path.write_bytes(bom + body)
    assert _errors(path) == [_first_problem(path, bom + body, len(bom))] * 3


# -- raw line separators inside JSON strings ----------------------------------------------------------------------

RAW_TEXTS = ["a\u2028b", "c\x85d", "e\u2029f", "只\u2028有\x85一行"]


def _raw_separator_file(tmp_path: Path) -> Path:
    """JSON Lines as json.dumps(ensure_ascii=False) writes them: U+2028, U+2029 and U+0085 stay raw in strings."""
    rows = [{"prompt": text, "response": f"answer {text}", "seed": 42} for text in RAW_TEXTS]
    path = tmp_path / "raw.jsonl"
    path.write_bytes("".join(json.dumps(row, ensure_ascii=False) + "\r\n" for row in rows).encode("utf-8"))
    assert "\u2028".encode() in path.read_bytes() and "\x85".encode() in path.read_bytes()
    return path


@pytest.mark.parametrize("block", [decode.BLOCK_BYTES, 7])
def test_a_data_file_with_raw_line_separators_in_its_strings_loads_the_exact_text(tmp_path, monkeypatch, block):
    """Before, str.splitlines cut each record at U+2028 / U+0085: "line 1: not valid JSON"."""
    monkeypatch.setattr(decode, "BLOCK_BYTES", block)
    path = _raw_separator_file(tmp_path)
    expected = [(n, {"prompt": t, "response": f"answer {t}", "seed": 42}) for n, t in enumerate(RAW_TEXTS, 1)]
    assert list(read_records(path)) == list(read_json_lines(path)) == expected


def test_a_replay_file_with_raw_line_separators_answers_the_exact_text(tmp_path):
    from trusteval.models.replay_index import AnswerIndex

    path = _raw_separator_file(tmp_path)
    check_answers(path, FIELDS)
    index = AnswerIndex(path, FIELDS)
    try:
        assert [index.get(text, 42) for text in RAW_TEXTS] == [f"answer {text}" for text in RAW_TEXTS]
        assert len(index) == len(RAW_TEXTS)
    finally:
        index.close()


def test_a_raw_separator_between_records_is_not_a_line_end(tmp_path):
    """Only "\\n", "\\r\\n" and "\\r" end a line: a record, U+2029 and another record are one line, not JSON,
    and the line numbers after it count "\\n" lines."""
    path = tmp_path / "two.jsonl"
    path.write_text(ROW.decode() + '{"prompt": "b"}\u2029{"prompt": "c"}\n', "utf-8")
    for message in _errors(path):
        assert message.startswith(f"{path}, line 2: not valid JSON (Extra data at column 16)"), message
