"""The `llamacpp` backend's one-line hint when a run decodes far below the rate this model reached earlier in
the run (the default thread count is `llamacpp_threads`)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from trusteval.models.llamacpp_threads import usable_cores
from trusteval.records import Generation

SLOW_FRACTION = 0.35  # a call decoding below this fraction of the reference rate prints the hint
MIN_TOKENS = 256  # tokens of a call before its rate is trusted


class RateWatch:
    """Watches completion tokens per wall second of each generate call; warns once when a call falls below
    SLOW_FRACTION of the best rate seen so far (or of `reference`, the idle machine's rate, when given)."""

    def __init__(self, *, threads: int, reference: float | None = None) -> None:
        self.threads = threads
        self.best = reference or 0.0
        self.warned = False

    def observe(self, generations: Sequence[Generation], wall_s: float) -> str | None:
        tokens = sum(g.completion_tokens or 0 for g in generations if g.ok)
        if tokens < MIN_TOKENS or wall_s <= 0:
            return None
        rate = tokens / wall_s
        hint = None
        if self.best and rate < SLOW_FRACTION * self.best and not self.warned:
            self.warned = True
            hint = slow_hint(rate, self.best, self.threads)
            print(f"warning: {hint}", file=sys.stderr)
        self.best = max(self.best, rate)
        return hint


def slow_hint(rate: float, reference: float, threads: int) -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    fewer = f"; try ?n_threads={max(1, threads // 2)}" if threads > 1 else ""
    return (
        f"llamacpp decodes {rate:.0f} tokens/s, {rate / reference:.0%} of the {reference:.0f} tokens/s it reached "
        f"before: other processes compete for the cores (load average {load:.1f} on {usable_cores()} cores){fewer}"
    )
