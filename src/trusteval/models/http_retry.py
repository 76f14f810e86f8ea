"""What the HTTP clients of trusteval (the `openai` backend, the Perspective scorer) share about waiting: a
server's `Retry-After` (delta seconds or an HTTP date), exponential backoff with jitter, and a deadline for a
whole answer.

httpx's timeouts bound each network operation (connect, each read), not an answer: a server that sends its
headers and then one byte every few seconds would hold a request for ever. `within_deadline` bounds all of it
(connect, headers, body) with one clock; `DeadlineExceeded` then says so.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable
from email.utils import parsedate_to_datetime
from typing import TypeVar

T = TypeVar("T")
MAX_RETRY_AFTER_S = 60.0


class DeadlineExceeded(Exception):
    """No whole answer within the deadline."""


async def within_deadline(work: Awaitable[T], seconds: float) -> T:
    """The result of `work`, or DeadlineExceeded when it is not done within `seconds` (it is then cancelled)."""
    try:
        return await asyncio.wait_for(work, seconds)
    except asyncio.TimeoutError:
        raise DeadlineExceeded(f"no whole answer within {seconds:g} s") from None


def parse_retry_after(value: str | None, *, now: float | None = None, cap_s: float = MAX_RETRY_AFTER_S) -> float | None:
    """Seconds to wait from a Retry-After header (delta seconds or an HTTP date), capped at `cap_s`."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), cap_s)


def backoff_delay(retry: int, base_s: float, max_s: float) -> float:
    """Exponential backoff with jitter: between half and all of base * 2**retry, at most max_s."""
    ceiling = min(max_s, base_s * (2**retry))
    return ceiling * (0.5 + random.random() / 2)
