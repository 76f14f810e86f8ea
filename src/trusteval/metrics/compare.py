"""Differences between two runs and their uncertainty.

Two kinds of evidence:
- per-prompt values on prompts both runs share: the mean paired difference, a percentile bootstrap interval
  over prompts, and a two-sided paired permutation (sign-flip) test, exact when 2^n is at most the resample
  count (checked against scipy.stats.permutation_test in the tests);
- rates with a known number of prompts (TrustEval's toxicity categories, TT): the two-proportion z-test with a
  pooled standard error, two-sided (SPEC "Comparisons"; the very test `trusteval tables` prints, so one pair of
  numbers gets one p), with the unpooled Wald 95% interval of the difference (both checked against statsmodels);
- other stored estimates with 95% intervals only (no per-prompt values): a normal approximation, the standard
  error of each side read off its interval as (high - low) / (2 * 1.96), the runs taken as independent, and a
  two-sided z-test (checked against scipy.stats.norm).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from trusteval.metrics.stats import two_proportion_ztest

PERMUTATION = "paired permutation"
TWO_PROPORTION = "two-proportion z (pooled)"
FROM_INTERVALS = "z from intervals"
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Difference:
    a: float
    b: float
    diff: float  # b - a
    low: float
    high: float
    p: float
    n: int
    test: str


def _sign_flips(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    if 2**n <= resamples:
        return np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    return rng.choice((-1.0, 1.0), size=(resamples, n))


def paired_difference(a: np.ndarray, b: np.ndarray, resamples: int = 2000, seed: int = 0) -> Difference:
    """Mean of b - a over paired values, bootstrap interval over pairs, paired permutation p-value."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    d = b - a
    n = d.size
    if n == 0:
        nan = float("nan")
        return Difference(nan, nan, nan, nan, nan, nan, 0, PERMUTATION)
    rng = np.random.default_rng(seed)
    observed = float(d.mean())
    means = d[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    low, high = (float(x) for x in np.percentile(means, [2.5, 97.5]))
    flips = _sign_flips(n, resamples, rng)
    null = (flips * d).mean(axis=1)
    exact = flips.shape[0] == 2**n
    extreme = int(np.sum(np.abs(null) >= abs(observed) - 1e-12))
    p = extreme / flips.shape[0] if exact else (extreme + 1) / (flips.shape[0] + 1)
    return Difference(float(a.mean()), float(b.mean()), observed, low, high, min(1.0, p), n, PERMUTATION)


def _se(low: float, high: float) -> float:
    return (high - low) / (2 * Z95)


def interval_difference(a: dict, b: dict) -> Difference:
    """Difference of two stored estimates ({value, low, high, n}) by the normal approximation."""
    va, vb = float(a["value"]), float(b["value"])
    diff = vb - va
    se = math.hypot(_se(float(a["low"]), float(a["high"])), _se(float(b["low"]), float(b["high"])))
    n = min(int(a.get("n") or 0), int(b.get("n") or 0))
    if not math.isfinite(se) or not math.isfinite(diff):
        return Difference(va, vb, diff, float("nan"), float("nan"), float("nan"), n, FROM_INTERVALS)
    p = (1.0 if diff == 0 else 0.0) if se == 0 else math.erfc(abs(diff / se) / math.sqrt(2))
    return Difference(va, vb, diff, diff - Z95 * se, diff + Z95 * se, p, n, FROM_INTERVALS)


def rate_difference(percent_a: float, n_a: int, percent_b: float, n_b: int) -> Difference:
    """Two rates in percent over n_a and n_b prompts: B - A (points), the unpooled Wald 95% interval of the
    difference, and the two-sided pooled two-proportion z-test (metrics.stats.two_proportion_ztest)."""
    rate_a, rate_b = percent_a / 100.0, percent_b / 100.0
    test = two_proportion_ztest(rate_a * n_a, n_a, rate_b * n_b, n_b)
    diff = percent_b - percent_a
    if n_a <= 0 or n_b <= 0:
        nan = float("nan")
        return Difference(percent_a, percent_b, diff, nan, nan, nan, min(n_a, n_b), TWO_PROPORTION)
    se = 100.0 * math.sqrt(rate_a * (1 - rate_a) / n_a + rate_b * (1 - rate_b) / n_b)
    p = test.p_value if not math.isnan(test.p_value) else (1.0 if diff == 0 else float("nan"))
    return Difference(percent_a, percent_b, diff, diff - Z95 * se, diff + Z95 * se, p, min(n_a, n_b), TWO_PROPORTION)
