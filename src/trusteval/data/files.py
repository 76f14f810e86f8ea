"""Reading tabular input files (CSV, TSV, JSONL, JSON arrays, Parquet) as numbered records.

Every problem is a DataError naming the file, the line (or row) and the field, so the user can fix it. A
file is read in full and checked before anything is stored, so a bad file never leaves a half-written run.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from trusteval.errors import DataError

MAX_FIELD_CHARS = 1_000_000
Record = tuple[int, dict[str, Any]]


def read_text(path: Path) -> str:
    if not path.exists():
        raise DataError(path, "file not found")
    if not path.is_file():
        raise DataError(path, "not a file")
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(path, "the file is empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(
            path, f"not UTF-8 (byte 0x{raw[exc.start]:02x}); re-save the file as UTF-8", line=line
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        raise DataError(path, "contains a NUL byte; the file is binary or corrupted", line=text.count("\n", 0, nul) + 1)
    return text


def read_records(path: str | Path, *, delimiter: str | None = None) -> list[Record]:
    """All records of a file as (line number, row) pairs, by extension."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _read_parquet(path)
    text = read_text(path)
    if suffix == ".jsonl":
        return list(_jsonl(path, text))
    if suffix == ".json":
        return _json(path, text)
    if suffix in {".csv", ".tsv"}:
        return list(_delimited(path, text, delimiter or ("\t" if suffix == ".tsv" else ",")))
    raise DataError(path, f"unknown file type '{suffix}'; use .csv, .tsv, .jsonl, .json or .parquet")


def require_columns(path: Path, columns: Sequence[str], needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise DataError(
            path,
            f"missing column(s) {', '.join(repr(c) for c in missing)}; the file has: "
            f"{', '.join(repr(c) for c in columns) or 'no columns'}",
            line=1,
            field=missing[0],
        )


def _jsonl(path: Path, text: str) -> Iterator[Record]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"not valid JSON ({exc.msg} at column {exc.colno})", line=number) from None
        if not isinstance(row, dict):
            raise DataError(path, f"expected a JSON object, found {type(row).__name__}", line=number)
        yield number, row


def _json(path: Path, text: str) -> list[Record]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON ({exc.msg})", line=exc.lineno) from None
    if not isinstance(data, list):
        raise DataError(path, "expected a JSON array of objects")
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(path, f"item {index} is {type(row).__name__}, expected an object")
    return [(index + 1, row) for index, row in enumerate(data)]


def _delimited(path: Path, text: str, delimiter: str) -> Iterator[Record]:
    csv.field_size_limit(MAX_FIELD_CHARS * 16)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(path, "the file has no header row", line=1) from None
    if len(set(header)) != len(header):
        duplicated = sorted({h for h in header if header.count(h) > 1})
        raise DataError(path, f"duplicate column name(s): {duplicated}", line=1)
    try:
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DataError(path, f"expected {len(header)} fields as in the header, found {len(row)}", line=number)
            yield number, dict(zip(header, row, strict=True))
    except csv.Error as exc:
        raise DataError(path, f"malformed CSV: {exc}", line=reader.line_num) from None


def _read_parquet(path: Path) -> list[Record]:
    if not path.is_file():
        raise DataError(path, "file not found")
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(path, "reading Parquet needs pyarrow: pip install 'trusteval[parquet]'") from None
    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:
        raise DataError(path, f"not a readable Parquet file: {exc}") from None
    if not rows:
        raise DataError(path, "the file has no rows")
    return [(index + 1, row) for index, row in enumerate(rows)]
