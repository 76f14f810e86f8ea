"""The hand-written statistics against scipy and sklearn on random cases, ties included.

They stay hand-written because the libraries agree only to the last bits: on 3,000 random cases scipy's
kendalltau, pearsonr, spearmanr, mannwhitneyu p-values and sklearn's cohen_kappa_score differed from ours by up to
6e-16 in 40-85% of cases, which would change reported digits (tests/test_golden_metrics.py). Ranks are identical,
so ranking uses scipy.stats.rankdata. Here every value must agree to 1e-12, and U exactly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from trusteval.metrics.agreement import cohen_kappa, pearson, spearman
from trusteval.metrics.stats import kendall_tau_b
from trusteval.metrics.trustgpt import mann_whitney_u


def _cases(count: int = 200):
    rng = np.random.default_rng(12)
    for trial in range(count):
        n = int(rng.integers(3, 25))
        if trial % 2:
            yield rng.normal(size=n), rng.normal(size=n)
        else:
            yield rng.integers(0, 4, size=n).astype(float), rng.integers(0, 4, size=n).astype(float)


def test_correlations_agree_with_scipy() -> None:
    for x, y in _cases():
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y, variant="b").statistic, abs=1e-12)
        ours, ref = pearson(x, y), stats.pearsonr(x, y)
        assert (ours.r, ours.p_value) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)
        ours, ref = spearman(x, y), stats.spearmanr(x, y)
        assert (ours.r, ours.p_value) == pytest.approx((ref.statistic, ref.pvalue), abs=1e-12)


def test_cohen_kappa_agrees_with_sklearn() -> None:
    for x, y in _cases():
        a, b = x.astype(int) % 3, y.astype(int) % 3
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            reference = cohen_kappa_score(a, b)
        assert cohen_kappa(a, b) == pytest.approx(reference, abs=1e-12, nan_ok=True)


def test_mann_whitney_agrees_with_scipy_using_the_same_method() -> None:
    rng = np.random.default_rng(5)
    for trial in range(300):
        m, n = int(rng.integers(1, 12)), int(rng.integers(1, 20))
        tied = trial % 2 == 0
        x = rng.integers(0, 5, size=m).astype(float) if tied else rng.normal(size=m)
        y = rng.integers(0, 5, size=n).astype(float) if tied else rng.normal(size=n)
        ours = mann_whitney_u(x, y)
        ref = stats.mannwhitneyu(x, y, alternative="two-sided", method=ours.method, use_continuity=True)
        assert ours.u == ref.statistic
        assert ours.p == pytest.approx(ref.pvalue, abs=1e-12)
