"""Deterministic slices of a run (`trusteval run --shard i/n`), for clusters that run one process per node.

A request belongs to shard `int(key[:16], 16) % n`: its key is a content hash, so the slices are disjoint,
cover the run, and do not depend on the order of the plan or on which machine computes them. Every shard
keeps the run id of the whole run, so `trusteval merge` can put the slices back together under it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

SHARD_PATTERN = re.compile(r"^(\d{1,6})/(\d{1,6})$")


def parse_shard(value: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n; a ValueError says what is wrong."""
    match = SHARD_PATTERN.match(value.strip())
    if not match:
        raise ValueError(f"expected INDEX/COUNT such as 0/4, not {value!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or index >= count:
        raise ValueError(f"the index must be at least 0 and below the count, as in 0/{max(count, 1)}")
    return index, count


def shard_of(request_key: str, count: int) -> int:
    return int(request_key[:16], 16) % count


def in_shard(shard: str | None) -> Callable[[str], bool] | None:
    """Whether a request key is in this shard's slice; None (every key) for a whole run."""
    if shard is None:
        return None
    index, count = parse_shard(shard)
    return lambda request_key: shard_of(request_key, count) == index
