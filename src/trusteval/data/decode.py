"""How a data file's bytes become text and JSON, with every message in one place: UTF-8 with an optional byte
order mark, no UTF-16, no NUL byte, lines ended by "\n", "\r\n" or "\r" (`split_lines`; not by U+2028, U+2029
or U+0085, which JSON keeps raw inside strings), and JSON whose failures name the file and line. `read_text`
decodes a whole file by these rules; `json_lines` reads a JSON Lines file from a binary handle, in blocks of
whole lines, giving each line's byte offset, so a reader can keep offsets instead of the text; `text_lines`
gives a CSV or TSV file's lines the same way, so a file is never held whole.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from trusteval.errors import DataError

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
UTF8_BOM = b"\xef\xbb\xbf"
BLOCK_BYTES = 1 << 18  # decoded in one call: per-line decoding cost a data file about 14% more CPU
LINE_ENDS = "\r\n"  # what ends a line: "\n", "\r\n" or "\r" (a raw CR or LF cannot be inside a JSON string)


def split_lines(text: str) -> Iterator[str]:
    """The lines of `text`, ends kept, split at "\\n", "\\r\\n" and "\\r" only. Not `str.splitlines`, which also
    splits at U+2028, U+2029, U+0085, \\x0b, \\x0c and \\x1c-\\x1e: JSON keeps the first three raw inside a string
    (`json.dumps(..., ensure_ascii=False)`), so a record holding one would be cut in two."""
    return iter(io.StringIO(text, newline=""))


def without_bom(path: Path, first: bytes) -> bytes:
    """The file's first bytes without a UTF-8 byte order mark; a UTF-16 one is refused."""
    if first.startswith(UTF16_BOMS):
        raise DataError(path, "the file is UTF-16 (it starts with a UTF-16 byte order mark); re-save it as UTF-8")
    return first.removeprefix(UTF8_BOM)


def decoded(path: Path, body: bytes, offset: int, line: int) -> str:
    """`body`, the bytes of the file from `offset` on, starting line `line`, as text; the first byte that is
    not UTF-8 or NUL, whichever comes first, is refused with its line (lines counted by "\\n") and offset."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        refuse_nul(path, body[: exc.start].decode("utf-8"), line)
        raise DataError(
            path,
            f"not UTF-8 (byte 0x{body[exc.start]:02x} at offset {offset + exc.start:,}); re-save the file as UTF-8",
            line=line + body.count(b"\n", 0, exc.start),
        ) from None
    refuse_nul(path, text, line)
    return text


def refuse_nul(path: Path, text: str, line: int) -> None:
    nul = text.find("\x00")
    if nul >= 0:
        line += text.count("\n", 0, nul)
        raise DataError(path, "contains a NUL byte; the file is binary or corrupted", line=line)


def json_lines(path: Path, handle: BinaryIO) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(line number, byte offset of the line, object) of each line that is not blank, in file order; the
    first problem in file order is raised, and a file of blanks is empty. Lines are numbered as `split_lines`
    splits the text ("\\n", "\\r\\n", "\\r"); a byte that is not UTF-8 or a NUL is numbered by "\\n" lines, as
    `read_text` numbers it."""
    number = 0
    for offset, text in _texts(path, handle):
        ascii_only = text.isascii()  # then a character is a byte
        for piece in split_lines(text):
            number += 1
            line = piece.rstrip(LINE_ENDS)
            if line.strip():
                yield number, offset, json_object(path, line, number)
            offset += len(piece) if ascii_only else len(piece.encode())


def text_lines(path: Path, handle: BinaryIO) -> Iterator[str]:
    """The lines of a file, ends kept, split where `io.StringIO(text, newline="")` splits the whole text (at
    "\\n", "\\r" and "\\r\\n", which the csv module reads), decoded a block of whole lines at a time by the rules
    of `read_text`; a problem is raised when the reader reaches its line, after the lines before it."""
    for _, text in _texts(path, handle):
        yield from split_lines(text)


def _texts(path: Path, handle: BinaryIO) -> Iterator[tuple[int, str]]:
    """(byte offset, text) of the file in blocks of whole lines (a block is decoded in one call, not line by
    line, for speed); a block with a problem is given line by line, so a problem in a line before it is met
    first, as when the file is read line by line."""
    offset, physical, content = 0, 1, False
    for raw in iter(lambda: handle.read(BLOCK_BYTES) + handle.readline(), b""):
        body = without_bom(path, raw) if offset == 0 else raw  # the first block
        offset += len(raw) - len(body)
        content = content or not raw.isspace()
        try:
            texts: Iterable[tuple[int, str]] = [(offset, decoded(path, body, offset, physical))]
        except DataError:
            texts = _lines(path, body, offset, physical)
        yield from texts
        offset, physical = offset + len(body), physical + body.count(b"\n")
    if not content:
        raise DataError(path, "the file is empty")


def _lines(path: Path, body: bytes, offset: int, physical: int) -> Iterator[tuple[int, str]]:
    for raw in io.BytesIO(body):
        try:
            text = decoded(path, raw, offset, physical)
        except DataError:
            # "\n" is not the only line end: the lines before the problem in this one come first, in file order
            yield offset, _lines_before_problem(raw)
            raise
        yield offset, text
        offset, physical = offset + len(raw), physical + 1


def _lines_before_problem(raw: bytes) -> str:
    """The whole lines (as `split_lines` splits them) before the first byte that is not UTF-8 or NUL."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw[: exc.start].decode("utf-8")
    pieces = list(split_lines(text.split("\x00", 1)[0]))
    if pieces and pieces[-1][-1] not in LINE_ENDS:
        pieces.pop()  # the line the problem is in
    return "".join(pieces)


def json_object(path: Path, text: str, line: int) -> dict[str, Any]:
    row = parse_json(path, text, line)
    if not isinstance(row, dict):
        raise DataError(path, f"expected a JSON object, found {type(row).__name__}", line=line)
    check_text_values(path, line, row)
    return row


def parse_json(path: Path, text: str, line: int | None = None) -> Any:
    """json.loads, with its other failures (nesting past the recursion limit, integers past Python's
    4,300-digit conversion limit) reported like a syntax error instead of escaping as a traceback."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f" at column {exc.colno}" if line is not None else ""
        raise DataError(path, f"not valid JSON ({exc.msg}{where})", line=line or exc.lineno) from None
    except RecursionError:
        raise DataError(path, "not usable JSON: nested too deeply", line=line) from None
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string conversion: ..."
        problem = "a number has more than 4,300 digits" if "digits" in str(exc) else str(exc)[:200]
        raise DataError(path, f"not usable JSON: {problem}", line=line) from None


def check_text_values(path: Path, line: int, row: dict[str, Any]) -> None:
    """A JSON escape can encode half of a UTF-16 pair ("\\ud800"), which is no text: it cannot be stored,
    printed or written as UTF-8, so it is refused here, with its field, before anything is written."""
    for name, value in row.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        for part, what in ((name, "the field name"), (text, "the value")):
            try:
                part.encode("utf-8")
            except UnicodeEncodeError:
                raise DataError(
                    path,
                    f"{what} holds a lone UTF-16 surrogate escape (such as \\ud800), which is not text",
                    line=line,
                    field=name.encode("utf-8", "backslashreplace").decode("utf-8"),
                ) from None
