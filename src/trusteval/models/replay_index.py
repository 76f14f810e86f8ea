"""The replay model's answers: a JSON Lines file checked line by line and indexed, not held.

The index is two numpy arrays of one row per answer line, 16 bytes a row: a 64-bit hash of (prompt, seed or
none), sorted, and the byte offset of the line in the file. An answer is found by binary search, then that
line is read again from the file (kept open) and parsed; its prompt and seed must equal the request's, so a
hash collision never gives a wrong answer (every row of an equal hash is looked at). Where the file holds the
same (prompt, seed) twice, the later line answers, as when the rows were read into a dict.

The file must not change while a run answers from it: its size and modification time are taken when the
file is opened, compared once the index is built and again after each line read back, and a difference is
a DataError that asks for a rerun (answers stored before it are kept). A file replaced by another one (a
rename over it) is not a change to the open file, which is still read; the run answers from the file as it
was when the backend was created, as before.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from trusteval.data.decode import LINE_ENDS, json_lines, parse_json, split_lines
from trusteval.data.files import check_row_sizes, open_checked, require_columns
from trusteval.errors import DataError

Fields = tuple[str, str, str]  # prompt, response and seed field names
Answer = tuple[str, int | None, str]  # prompt, seed, response


def key_hash(prompt: str, seed: int | None) -> int:
    """64 bits of blake2b over the seed (or "none") and the prompt; the seed's text holds no NUL."""
    head = b"none\x00" if seed is None else str(seed).encode() + b"\x00"
    digest = hashlib.blake2b(head + prompt.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def checked_answer(path: Path, line: int | None, row: dict[str, Any], fields: Fields) -> Answer:
    prompt_field, response_field, seed_field = fields
    prompt, response = row.get(prompt_field), row.get(response_field)
    for field, value in ((prompt_field, prompt), (response_field, response)):
        if not isinstance(value, str):
            raise DataError(path, f"expected text, found {type(value).__name__}", line=line, field=field)
    seed = row.get(seed_field)
    if seed in (None, ""):
        return str(prompt), None, str(response)
    try:
        return str(prompt), int(seed), str(response)
    except (TypeError, ValueError):
        raise DataError(path, f"seed must be an integer, not {seed!r}", line=line, field=seed_field) from None


def scan(path: Path, handle: BinaryIO, fields: Fields) -> Iterator[tuple[int, Answer]]:
    """(byte offset, answer) of each row, checked as `read_records` checks a JSON Lines file and then as the
    replay model checks a row; the first problem in file order is raised (file, line, field)."""
    rows = 0
    for number, offset, row in json_lines(path, handle):
        check_row_sizes(path, number, row)
        if rows == 0:
            require_columns(path, list(row), fields[:2])
        rows += 1
        yield offset, checked_answer(path, number, row, fields)
    if rows == 0:
        raise DataError(path, "the file has no rows")


class AnswerIndex:
    """The answers of one JSON Lines file by (prompt, seed); see the module's docstring."""

    def __init__(self, path: Path, fields: Fields) -> None:
        self.path, self.fields = path, fields
        self._handle = open_checked(path)
        try:
            self._stamp = self._now()
            self.hashes, self.offsets = self._build()
            self._keys = self.hashes.data  # a memoryview: bisect reads it in C, as Python ints
            self._check_unchanged()
        except BaseException:
            self._handle.close()
            raise
        self._distinct: int | None = None

    def _build(self) -> tuple[np.ndarray, np.ndarray]:
        hashes, offsets = array("Q"), array("q")
        for offset, (prompt, seed, _) in scan(self.path, self._handle, self.fields):
            hashes.append(key_hash(prompt, seed))
            offsets.append(offset)
        keys = np.frombuffer(hashes, dtype=np.uint64)
        order = np.argsort(keys, kind="stable")  # rows of one hash stay in file order
        return keys[order], np.frombuffer(offsets, dtype=np.int64)[order]

    def get(self, prompt: str, seed: int | None) -> str | None:
        for index in reversed(self._rows(key_hash(prompt, seed))):  # the later duplicate answers
            row_prompt, row_seed, response = self._read(int(self.offsets[index]))
            if row_prompt == prompt and row_seed == seed:
                return response
        return None

    def _rows(self, key: int) -> range:
        first = bisect.bisect_left(self._keys, key)
        end = first
        while end < len(self._keys) and self._keys[end] == key:
            end += 1
        return range(first, end)

    def _read(self, offset: int) -> Answer:
        self._handle.seek(offset)
        raw = self._handle.readline()
        self._check_unchanged()
        try:
            line = next(split_lines(raw.decode("utf-8")), "").rstrip(LINE_ENDS)  # as json_lines split it
            row = parse_json(self.path, line)
            if not isinstance(row, dict):
                raise ValueError(row)
            return checked_answer(self.path, None, row, self.fields)
        except (ValueError, IndexError, DataError):  # UnicodeDecodeError is a ValueError
            raise self._changed() from None

    def _now(self) -> tuple[int, int, int]:
        stat = os.fstat(self._handle.fileno())
        return stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns  # ctime: an edit that kept size and mtime

    def _check_unchanged(self) -> None:
        if self._now() != self._stamp:
            raise self._changed()

    def _changed(self) -> DataError:
        return DataError(
            self.path,
            "the answers file changed while a run was reading it (its size or modification time differs from when "
            "it was indexed); answers stored so far are kept: run again to answer the rest from the new file",
        )

    def __len__(self) -> int:
        """The number of distinct (prompt, seed) keys, as a dict of them would count."""
        if self._distinct is None:
            self._distinct = self._count_distinct()
        return self._distinct

    def _count_distinct(self) -> int:
        starts = np.flatnonzero(np.diff(self.hashes)) + 1
        bounds = np.concatenate(([0], starts, [len(self.hashes)]))
        distinct = len(bounds) - 1
        for first, end in itertools.pairwise(bounds):
            if end - first > 1:  # duplicates, or (rarely) a hash collision: read the rows
                keys = {self._read(int(self.offsets[i]))[:2] for i in range(int(first), int(end))}
                distinct += len(keys) - 1
        return distinct

    def close(self) -> None:
        self._handle.close()
