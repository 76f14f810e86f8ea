"""The bootstrap against independent references: scipy.stats.bootstrap and the normal approximation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from trusteval.metrics.stats import (
    DEFAULT_SEED,
    bootstrap_columns,
    bootstrap_mean,
    percentile_interval,
    resampled_means,
    stratified_resampled_means,
)


def test_resampled_means_have_the_sampling_spread_of_the_mean():
    rng = np.random.default_rng(1)
    values = (rng.random(400) < 0.3).astype(float)
    means = resampled_means(values, 20000, np.random.default_rng(2))
    p = values.mean()
    assert means.mean() == pytest.approx(p, abs=0.002)
    assert means.std() == pytest.approx(np.sqrt(p * (1 - p) / len(values)), rel=0.03)


def test_percentile_interval_matches_scipy():
    rng = np.random.default_rng(3)
    values = rng.normal(10.0, 2.0, size=300)
    ours = bootstrap_mean(values, resamples=20000, seed=4)
    ref = stats.bootstrap((values,), np.mean, n_resamples=20000, method="percentile", random_state=5)
    assert ours.value == pytest.approx(values.mean())
    assert ours.low == pytest.approx(ref.confidence_interval.low, abs=0.03)
    assert ours.high == pytest.approx(ref.confidence_interval.high, abs=0.03)


def test_joint_columns_match_one_column_at_a_time_in_distribution():
    rng = np.random.default_rng(6)
    matrix = np.column_stack([(rng.random(500) < p).astype(float) for p in (0.1, 0.5)])
    intervals = bootstrap_columns(matrix, resamples=20000, seed=7)
    for column, (low, high) in enumerate(intervals):
        ref = stats.bootstrap((matrix[:, column],), np.mean, n_resamples=20000, method="percentile", random_state=8)
        assert low == pytest.approx(ref.confidence_interval.low, abs=0.006)
        assert high == pytest.approx(ref.confidence_interval.high, abs=0.006)


def test_the_seed_fixes_the_draws_and_only_the_seed_moves_them():
    """Same seed, same interval; other seeds give other draws of the same distribution (scipy's interval)."""
    values = np.arange(50, dtype=float) % 7
    ref = stats.bootstrap((values,), np.mean, n_resamples=20000, method="percentile", random_state=1)
    by_seed = {seed: bootstrap_mean(values, resamples=2000, seed=seed) for seed in (11, 12, 13)}
    assert bootstrap_mean(values, resamples=2000, seed=11) == by_seed[11]
    assert len({(e.low, e.high) for e in by_seed.values()}) > 1  # the seed is used, not a fixed table
    for estimate in by_seed.values():
        assert estimate.low == pytest.approx(ref.confidence_interval.low, abs=0.12)
        assert estimate.high == pytest.approx(ref.confidence_interval.high, abs=0.12)
    assert bootstrap_mean(values) == bootstrap_mean(values, seed=DEFAULT_SEED)


def test_stratified_bootstrap_of_a_difference_matches_the_normal_approximation():
    rng = np.random.default_rng(9)
    a = (rng.random(2000) < 0.4).astype(float)
    b = (rng.random(2000) < 0.2).astype(float)
    means = stratified_resampled_means([a, b], resamples=20000, seed=10)
    low, high = percentile_interval(means[:, 0] - means[:, 1])
    diff = a.mean() - b.mean()
    se = np.sqrt(a.mean() * (1 - a.mean()) / len(a) + b.mean() * (1 - b.mean()) / len(b))
    assert low == pytest.approx(diff - 1.96 * se, abs=0.004)
    assert high == pytest.approx(diff + 1.96 * se, abs=0.004)


def test_empty_input_is_nan_not_an_error():
    estimate = bootstrap_mean([])
    assert np.isnan(estimate.value) and estimate.n == 0
