"""Statistics shared by every metric: vectorised percentile bootstrap, seed summaries, and tests between models.

Intervals are percentile bootstrap intervals (1,000 resamples and a fixed seed by default), computed with one
matrix of resample counts per chunk instead of a Python loop over resamples. Comparisons between models use the
two-proportion z-test with a pooled standard error (two-sided); a family of p-values can be Holm-adjusted
(`P_ADJUSTMENTS`). Kendall's tau-b compares two rankings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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
        """Sample standard deviation across seeds; undefined (NaN, printed n/a) with fewer than two."""
        if len(self.seed_values) < 2:
            return float("nan")
        return float(np.std(self.seed_values, ddof=1))

    @classmethod
    def undefined(cls, n: int = 0) -> Estimate:
        """No value and no interval (NaN, printed n/a) over `n` items: nothing to estimate from."""
        nan = float("nan")
        return cls(nan, nan, nan, n)

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


def per_prompt_means(prompt_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The mean of `values` over the rows of each prompt (its seeds), prompts in sorted id order; `values` is one
    value per row, or a (rows, k) matrix averaged column by column."""
    _, inverse = np.unique(prompt_ids, return_inverse=True)
    counts = np.bincount(inverse)
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        return np.bincount(inverse, weights=values, minlength=counts.size) / counts
    columns = [np.bincount(inverse, weights=column, minlength=counts.size) for column in values.T]
    return np.column_stack(columns) / counts[:, None] if columns else np.zeros((counts.size, 0))


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
        return Estimate.undefined()
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


def stratified_resampled_means(
    groups: Sequence[np.ndarray], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> np.ndarray:
    """(B, G) resampled group means, each group resampled within itself.

    Several statistics of the same resamples (e.g. sigma, delta and rho over attribute classes) can be taken
    from one matrix, so their intervals come from the same bootstrap world.
    """
    rng = np.random.default_rng(seed)
    return np.column_stack([resampled_means(g, resamples, rng) for g in groups])


def seed_average(per_seed: dict[int, float]) -> tuple[float, tuple[float, ...]]:
    """The mean over seeds of a per-seed value, and the per-seed values in seed order."""
    ordered = tuple(per_seed[s] for s in sorted(per_seed))
    return (float(np.mean(ordered)) if ordered else float("nan")), ordered


# -- comparisons ----------------------------------------------------------------------------------------------

P_ADJUSTMENTS = ("none", "holm")


@dataclass(frozen=True)
class ZTest:
    """A two-sided two-proportion z-test: rate_a = successes_a / n_a against rate_b = successes_b / n_b."""

    z: float
    p_value: float
    rate_a: float
    rate_b: float
    n_a: int
    n_b: int
    reason: str | None = None  # why z is undefined (NaN), if it is

    def as_dict(self) -> dict:
        return asdict(self)


def two_proportion_ztest(successes_a: float, n_a: int, successes_b: float, n_b: int) -> ZTest:
    """z = (p_a - p_b) / sqrt(p (1 - p) (1/n_a + 1/n_b)) with the pooled p = (x_a + x_b) / (n_a + n_b).

    Undefined (NaN, with the reason) when a sample is empty or the pooled rate is 0 or 1 (no variance).
    """
    nan = float("nan")
    if n_a <= 0 or n_b <= 0:
        return ZTest(nan, nan, nan, nan, n_a, n_b, "a sample is empty")
    rate_a, rate_b = successes_a / n_a, successes_b / n_b
    pooled = (successes_a + successes_b) / (n_a + n_b)
    variance = pooled * (1.0 - pooled) * (1.0 / n_a + 1.0 / n_b)
    if variance <= 0.0:
        return ZTest(nan, nan, rate_a, rate_b, n_a, n_b, f"the pooled rate is {pooled:g}: no variance to test")
    z = (rate_a - rate_b) / math.sqrt(variance)
    return ZTest(z, math.erfc(abs(z) / math.sqrt(2.0)), rate_a, rate_b, n_a, n_b)


def holm_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjustment: sorted p_(i) times (m - i + 1), made monotone, capped at 1.

    NaN p-values (untestable comparisons) are not part of the family and stay NaN.
    """
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    if tested.size == 0:
        return adjusted
    order = tested[np.argsort(p[tested], kind="stable")]
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def adjust_p_values(p_values: Sequence[float], method: str) -> np.ndarray:
    if method == "none":
        return np.asarray(p_values, dtype=float)
    if method == "holm":
        return holm_adjust(p_values)
    raise ValueError(f"unknown p-value adjustment '{method}'; use one of {', '.join(P_ADJUSTMENTS)}")


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b between two rankings (scipy's `kendalltau`); NaN when undefined (fewer than 2 items,
    or one side all tied)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan")
    from scipy.stats import kendalltau

    return float(kendalltau(x, y, variant="b").statistic)


@dataclass(frozen=True)
class Comparison:
    """One pairwise test between two groups (models) on a rate, with its p-value after adjustment."""

    first: str
    second: str
    test: ZTest
    p_adjusted: float


def pairwise_ztests(rates: dict[str, tuple[float, int]], adjustment: str = "none") -> list[Comparison]:
    """Every pair of groups, each given as (rate as a fraction, n); successes = rate x n. The family for the
    adjustment is every comparison returned."""
    names = list(rates)
    tests = [
        (a, b, two_proportion_ztest(rates[a][0] * rates[a][1], rates[a][1], rates[b][0] * rates[b][1], rates[b][1]))
        for index, a in enumerate(names)
        for b in names[index + 1 :]
    ]
    adjusted = adjust_p_values([t.p_value for _, _, t in tests], adjustment)
    return [Comparison(a, b, t, float(p)) for (a, b, t), p in zip(tests, adjusted, strict=True)]
