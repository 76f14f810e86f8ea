"""Reading tabular input files (CSV, TSV, JSONL, JSON arrays, Parquet) as numbered records.

Every problem is a DataError naming the file, the line (or row) and the field, so the user can fix it. A
file is read in full and checked before anything is stored, so a bad file never leaves a half-written run. A
CSV, TSV or JSON Lines file is streamed: each pass reads it again from disk a block of lines at a time (a file
changed between passes is refused), so neither its bytes nor its text are held.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from trusteval.data.decode import check_text_values, decoded, json_lines, parse_json, text_lines, without_bom
from trusteval.errors import DataError
from trusteval.registry import did_you_mean
from trusteval.util.lazyseq import LazySequence

MAX_FIELD_CHARS = 1_000_000
MAX_FILE_BYTES = 1024**3  # a bigger file is refused before reading it
Record = tuple[int, dict[str, Any]]


def check_readable(path: Path) -> None:
    """A data file that exists, is a file and is within the size limit; else a DataError naming it."""
    if not path.exists():
        raise DataError(path, "file not found")
    if not path.is_file():
        raise DataError(path, "not a file")
    check_file_size(path)


def open_checked(path: Path) -> BinaryIO:
    check_readable(path)
    return path.open("rb")


def read_bytes(path: Path) -> bytes:
    check_readable(path)
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(path, "the file is empty")
    return raw


def read_text(path: Path) -> str:
    raw = read_bytes(path)
    body = without_bom(path, raw)  # decoded apart, so error offsets count from the file's first byte
    return decoded(path, body, len(raw) - len(body), 1)


def check_file_size(path: Path, limit: int | None = None) -> None:
    limit = MAX_FILE_BYTES if limit is None else limit
    size = path.stat().st_size
    if size > limit:
        raise DataError(path, f"the file has {size:,} bytes, more than the limit of {limit:,} bytes")


def read_records(path: str | Path, *, delimiter: str | None = None) -> Sequence[Record]:
    """All records of a file as (line number, row) pairs, by extension; a file without records is an error.
    Every record is read and checked here; a CSV, TSV or JSON Lines file's records are then read again from
    the file (`decode.text_lines`, `decode.json_lines`: blocks of whole lines) on each pass (Records) rather
    than held: a list of 1,000,000 row dicts takes about 0.5 GB, the file's text 0.1-0.2 GB."""
    path = Path(path)
    records = _read_by_suffix(path, delimiter)
    if not records:
        raise DataError(path, "the file has no rows")
    return records


class Records(LazySequence[Record]):
    """A text file's records, read again from the file by `rows` on every pass; checked (sizes) and counted
    once. The file's size and modification time are those of the first pass on every pass, else a DataError:
    the passes of one run (prompts, requests, the data's hash) must read the same rows."""

    def __init__(self, path: Path, rows: Callable[[], Iterator[Record]]) -> None:
        self.path = path
        self.rows = rows
        self.size = 0
        self.version = _version(path)
        for line, row in rows():
            check_row_sizes(path, line, row)
            self.size += 1
        self._check_unchanged()

    def __iter__(self) -> Iterator[Record]:
        self._check_unchanged()
        yield from self.rows()
        self._check_unchanged()

    def __len__(self) -> int:
        return self.size

    def _check_unchanged(self) -> None:
        if _version(self.path) != self.version:
            raise DataError(self.path, "the file changed while it was being read; run again once it is written")


def _version(path: Path) -> tuple[int, int]:
    try:
        stat = path.stat()
    except OSError as exc:
        raise DataError(path, f"cannot read the file: {exc.strerror or exc}") from None
    return stat.st_size, stat.st_mtime_ns


def _held(path: Path, records: list[Record]) -> list[Record]:
    for line, row in records:
        check_row_sizes(path, line, row)
    return records


def _read_by_suffix(path: Path, delimiter: str | None) -> Sequence[Record]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _held(path, _read_parquet(path))
    if suffix == ".jsonl":
        check_readable(path)
        return Records(path, lambda: read_json_lines(path))
    if suffix in {".csv", ".tsv"}:
        check_readable(path)
        return _delimited(path, delimiter or ("\t" if suffix == ".tsv" else ","))
    if suffix == ".json":
        return _held(path, _json(path, read_text(path)))
    raise DataError(path, f"unknown file type '{suffix}'; use .csv, .tsv, .jsonl, .json or .parquet")


def check_row_sizes(path: Path, line: int, row: dict[str, Any]) -> None:
    """A text value of millions of characters is a broken file (a lost delimiter or quote), not a prompt."""
    for name, value in row.items():
        if isinstance(value, str) and len(value) > MAX_FIELD_CHARS:
            raise DataError(
                path,
                f"the value has {len(value):,} characters, more than the limit of {MAX_FIELD_CHARS:,}; "
                "a quote or line break is probably missing",
                line=line,
                field=str(name),
            )


def require_columns(path: str | Path, columns: Sequence[str], needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        hint = did_you_mean(missing[0], [str(c) for c in columns])
        raise DataError(
            path,
            f"missing column(s) {', '.join(repr(c) for c in missing)}; the columns are: "
            f"{', '.join(repr(c) for c in columns) or 'none'}.{hint}",
            line=1,
            field=missing[0],
        )


def read_json_lines(path: Path) -> Iterator[Record]:
    """The objects of a JSON Lines file (whatever its suffix), numbered by line, read from the file as they
    are met."""
    with open_checked(path) as handle:
        yield from _jsonl(path, handle)


def _jsonl(path: Path, handle: BinaryIO) -> Iterator[Record]:
    for number, _, row in json_lines(path, handle):
        yield number, row


def _json(path: Path, text: str) -> list[Record]:
    data = parse_json(path, text, None)
    if not isinstance(data, list):
        raise DataError(path, "expected a JSON array of objects")
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise DataError(path, f"item {index} is {type(row).__name__}, expected an object")
        check_text_values(path, index + 1, row)
    return [(index + 1, row) for index, row in enumerate(data)]


def _delimited(path: Path, delimiter: str) -> Records:
    """Parse strictly first: a quote left open would otherwise swallow every later row into one field without
    a word. Files with other strict-mode complaints (text after a closing quote) are read leniently as before."""
    try:
        return Records(path, lambda: _delimited_rows(path, delimiter, strict=True))
    except _UnclosedQuote as exc:
        raise DataError(
            path,
            'a quoted field is never closed (a " without its partner); every later row would be read into it',
            line=exc.line,
        ) from None
    except _StrictComplaint:
        return Records(path, lambda: _delimited_rows(path, delimiter, strict=False))


class _StrictComplaint(Exception):
    pass


class _UnclosedQuote(_StrictComplaint):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _delimited_rows(path: Path, delimiter: str, *, strict: bool) -> Iterator[Record]:
    previous = csv.field_size_limit(MAX_FIELD_CHARS * 16)  # process-global: raised while reading, then restored
    try:
        with open_checked(path) as handle:
            yield from _parsed_rows(path, _RecordLines(text_lines(path, handle)), delimiter, strict=strict)
    finally:
        csv.field_size_limit(previous)


class _RecordLines:
    """The file's lines as the csv reader takes them, keeping those read since `start_record`: the physical
    lines of the record just read, for `_refuse_merged_rows`."""

    def __init__(self, lines: Iterator[str]) -> None:
        self.lines = lines
        self.recent: list[str] = []

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        line = next(self.lines)
        self.recent.append(line)
        return line

    def start_record(self) -> None:
        self.recent.clear()


def _parsed_rows(path: Path, lines: _RecordLines, delimiter: str, *, strict: bool) -> Iterator[Record]:
    reader = csv.reader(lines, delimiter=delimiter, strict=strict)
    row_start = 1
    try:
        header = next(reader, None)
        if header is None:
            raise DataError(path, "the file has no header row", line=1)
        if len(set(header)) != len(header):
            duplicated = sorted({h for h in header if header.count(h) > 1})
            raise DataError(path, f"duplicate column name(s): {duplicated}", line=1)
        row_start = reader.line_num + 1
        lines.start_record()
        for row in reader:
            number = reader.line_num
            if not any(cell.strip() for cell in row):
                row_start = number + 1
                lines.start_record()
                continue
            if len(row) != len(header):
                raise DataError(path, f"expected {len(header)} fields as in the header, found {len(row)}", line=number)
            if number > row_start:
                _refuse_merged_rows(path, lines.recent, row_start, header, row, delimiter)
            lines.start_record()
            yield number, dict(zip(header, row, strict=True))
            row_start = number + 1
    except csv.Error as exc:
        if strict and "unexpected end of data" in str(exc):
            raise _UnclosedQuote(row_start) from None
        if "field larger than field limit" in str(exc):
            raise DataError(
                path,
                f"a value has more than {csv.field_size_limit():,} characters, more than the limit of "
                f"{MAX_FIELD_CHARS:,}; a quote or line break is probably missing",
                line=reader.line_num,
            ) from None
        if strict:
            raise _StrictComplaint(str(exc)) from None
        raise DataError(path, f"malformed CSV: {exc}", line=reader.line_num) from None


def _shape(cell: str) -> str:
    if cell.isdigit():
        return "number"
    return "token" if cell and not any(c.isspace() for c in cell) else "text"


def _refuse_merged_rows(
    path: Path, lines: list[str], first: int, header: list[str], row: list[str], delimiter: str
) -> None:
    """A quoted field may hold line breaks, but when every line it spans is a complete row on its own, a stray
    quote has most likely joined rows into one field, and the rows after it would be lost without a word."""
    last = first + len(lines) - 1
    unquoted = list(csv.reader((line.rstrip("\r\n") for line in lines), delimiter=delimiter, quoting=csv.QUOTE_NONE))
    # Each spanned line must also start the way this row does (an id of the same shape): free text with the
    # right number of commas in it (a long comment in a two-column file) is not a row.
    starts_like_rows = all(_shape(fields[0]) == _shape(row[0]) != "text" for fields in unquoted[1:] if fields)
    if starts_like_rows and all(len(fields) == len(header) for fields in unquoted):
        field = next((name for name, cell in zip(header, row, strict=True) if "\n" in cell or "\r" in cell), None)
        raise DataError(
            path,
            f'a quoted field runs on to line {last} and each line it spans is a complete row by itself: a stray " '
            "probably merged these rows (the later ones would be lost); fix the quote",
            line=first,
            field=field,
        )


def _read_parquet(path: Path) -> list[Record]:
    if not path.is_file():
        raise DataError(path, "file not found")
    check_file_size(path)
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
