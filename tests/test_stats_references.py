"""The statistics against independent references on random cases, ties included.

The correlations, Kendall's tau-b and the Mann-Whitney test call scipy; they are checked against the plain
textbook implementations in tests/references.py (pair counts, average ranks, the exact null by recursion), not
against the scipy functions they call. Cohen's kappa (the code calls sklearn) likewise.
Values agree to 1e-9 (the references sum in another order), U exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import references as ref
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


def test_correlations_agree_with_the_references() -> None:
    for x, y in _cases():
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        assert kendall_tau_b(x, y) == pytest.approx(ref.kendall_tau_b(list(x), list(y)), abs=1e-9)
        ours = pearson(x, y)
        assert (ours.r, ours.p_value) == pytest.approx(ref.pearson_r_p(list(x), list(y)), abs=1e-9)
        ours = spearman(x, y)
        assert (ours.r, ours.p_value) == pytest.approx(ref.spearman_r_p(list(x), list(y)), abs=1e-9)


def test_cohen_kappa_agrees_with_the_reference() -> None:
    for x, y in _cases():
        a, b = x.astype(int) % 3, y.astype(int) % 3
        if set(a) == set(b) and len(set(a)) == 1:  # chance agreement 1: undefined
            assert np.isnan(cohen_kappa(a, b))
            continue
        assert cohen_kappa(a, b) == pytest.approx(ref.cohen_kappa(list(a), list(b)), abs=1e-12)


def test_mann_whitney_agrees_with_the_exact_and_normal_references() -> None:
    rng = np.random.default_rng(5)
    for trial in range(300):
        m, n = int(rng.integers(1, 12)), int(rng.integers(1, 20))
        tied = trial % 2 == 0
        x = rng.integers(0, 5, size=m).astype(float) if tied else rng.normal(size=m)
        y = rng.integers(0, 5, size=n).astype(float) if tied else rng.normal(size=n)
        ours = mann_whitney_u(x, y)
        assert ours.u == ref.mann_whitney_u(list(x), list(y))
        if np.ptp(np.concatenate([x, y])) == 0:
            assert ours.p == 1.0  # every value tied: no variance
            continue
        exact = ours.method == "exact"
        expected = (ref.mann_whitney_exact_p if exact else ref.mann_whitney_normal_p)(list(x), list(y))
        assert ours.p == pytest.approx(expected, abs=1e-9)
