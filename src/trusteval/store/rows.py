"""How store rows map to records: the prompt row written for a Prompt, and the RunItem read from a joined row."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from trusteval.records import Prompt, object_json, text_subject

__all__ = ["PROMPT_COLUMNS", "RowDigest", "RunItem", "batched", "chunked", "prompt_row", "run_item"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)  # slots: one per planned item, a run holds 100,000s
class RunItem:
    """One row of a run, joined: the request, its prompt, and the generation if there is one."""

    request_key: str
    model: str
    seed: int
    prompt: Prompt
    prompt_subject: str
    variant: dict[str, Any]
    response: str | None
    response_subject: str | None
    error: str | None


PROMPT_COLUMNS = "dataset, prompt_id, text, lang, label, category, attributes, subject, source_id"


def prompt_row(p: Prompt, content_key: str) -> tuple[Any, ...]:
    return (
        p.dataset,
        content_key,
        p.text,
        p.lang,
        p.label,
        p.category,
        object_json(p.attributes),
        text_subject(p.text),
        p.id,
    )


def _json_object(text: str) -> dict[str, Any]:
    """A stored JSON object; the common empty one without the parser (a fresh dict each time: not shared)."""
    return {} if text == "{}" else json.loads(text)


def run_item(row: sqlite3.Row) -> RunItem:
    prompt = Prompt(
        id=row["prompt_id"],
        dataset=row["dataset"],
        text=row["prompt_text"],
        lang=row["lang"],
        label=row["label"],
        category=row["category"],
        attributes=_json_object(row["attributes"]),
    )
    return RunItem(
        request_key=row["request_key"],
        model=row["model"],
        seed=row["seed"],
        prompt=prompt,
        prompt_subject=row["prompt_subject"],
        variant=_json_object(row["variant"]),
        response=row["response"],
        response_subject=row["response_subject"],
        error=None if row["response"] is not None else row["error"],
    )


def batched(values: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of `size` values (the last one shorter)."""
    iterator = iter(values)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def chunked(values: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """Consecutive slices of `size` values of a sequence."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


class RowDigest:
    """An order-independent fingerprint of a multiset of rows (count, and the sum of 128-bit hashes): two
    sets of a run's item rows compared without holding either."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0

    def add(self, *fields: str) -> None:
        joined = "\x1f".join(fields).encode()
        self.total = (self.total + int.from_bytes(hashlib.blake2b(joined, digest_size=16).digest(), "big")) % 2**128
        self.count += 1

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowDigest) and (self.count, self.total) == (other.count, other.total)

    __hash__ = None  # type: ignore[assignment]
