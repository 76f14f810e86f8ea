"""Statistics shared by every metric: vectorised percentile bootstrap and seed summaries.

Intervals are percentile bootstrap intervals (1,000 resamples and a fixed seed by default), computed with one
matrix of resample counts per chunk instead of a Python loop over resamples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 12345
_MAX_CELLS_PER_CHUNK = 4_000_000


@dataclass(frozen=True)
class Estimate:
    """A point value with its interval; `seed_values` are the per-seed values it averages (if any)."""

    value: float
    low: float
    high: float
    n: int
    seed_values: tuple[float, ...] = ()

    @property
    def seed_std(self) -> float:
        if len(self.seed_values) < 2:
            return 0.0
        return float(np.std(self.seed_values, ddof=1))

    def as_dict(self) -> dict:
        return {**asdict(self), "seed_values": list(self.seed_values), "seed_std": self.seed_std}

    def scaled(self, factor: float) -> Estimate:
        return Estimate(
            self.value * factor,
            self.low * factor,
            self.high * factor,
            self.n,
            tuple(v * factor for v in self.seed_values),
        )


def resampled_means(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Means of `resamples` bootstrap resamples of the rows of `values` (n,) or (n, k): shape (B,) / (B, k).

    Drawing n rows with replacement is the same as drawing multinomial counts over the distinct rows, so the
    work scales with the number of distinct rows (4 for a seed-averaged 0/1 outcome over 3 seeds), not n.
    """
    values = np.asarray(values, dtype=float)
    n = values.shape[0]
    if n == 0:
        return np.full((resamples, *values.shape[1:]), np.nan)
    distinct, counts = np.unique(values, axis=0, return_counts=True)
    chunk = max(1, _MAX_CELLS_PER_CHUNK // len(distinct))
    parts = []
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        draws = rng.multinomial(n, counts / n, size=size)  # (size, distinct rows)
        parts.append(draws @ distinct / n)
    return np.concatenate(parts, axis=0)


def percentile_interval(samples: np.ndarray, level: float = DEFAULT_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    alpha = (1.0 - level) / 2.0
    low, high = np.nanpercentile(samples, [100 * alpha, 100 * (1 - alpha)], axis=0)
    return low, high


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> Estimate:
    values = np.asarray(values, dtype=float)
    if values.size == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0)
    samples = resampled_means(values, resamples, np.random.default_rng(seed))
    low, high = percentile_interval(samples, level)
    return Estimate(float(values.mean()), float(low), float(high), int(values.size))


def bootstrap_columns(
    values: np.ndarray,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> list[tuple[float, float]]:
    """Intervals for the mean of each column, resampling rows jointly (one draw serves every column)."""
    samples = resampled_means(values, resamples, np.random.default_rng(seed))
    low, high = percentile_interval(samples, level)
    return [(float(lo), float(hi)) for lo, hi in zip(np.atleast_1d(low), np.atleast_1d(high), strict=True)]


def bootstrap_stratified(
    groups: Sequence[np.ndarray],
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> tuple[float, float]:
    """Interval of `statistic` over group means, resampling within each group independently.

    `statistic` takes a (B, G) array of resampled group means and returns (B,) values; NaN values (an
    undefined statistic in some resamples) are ignored by the percentile.
    """
    rng = np.random.default_rng(seed)
    means = np.column_stack([resampled_means(g, resamples, rng) for g in groups])
    return tuple(float(x) for x in percentile_interval(statistic(means), level))  # type: ignore[return-value]


def seed_average(per_seed: dict[int, float]) -> tuple[float, tuple[float, ...]]:
    """The mean over seeds of a per-seed value, and the per-seed values in seed order."""
    ordered = tuple(per_seed[s] for s in sorted(per_seed))
    return (float(np.mean(ordered)) if ordered else float("nan")), ordered
