"""Comparisons between models against statsmodels and scipy: the pooled two-proportion z-test, Holm's
adjustment, Kendall's tau-b, and the stratified resampling that bias intervals share."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportions_ztest

import references as ref
from trusteval.metrics.stats import (
    adjust_p_values,
    holm_adjust,
    kendall_tau_b,
    pairwise_ztests,
    percentile_interval,
    stratified_resampled_means,
    two_proportion_ztest,
)


@pytest.mark.parametrize(
    ("xa", "na", "xb", "nb"),
    [(45, 200, 30, 200), (3, 50, 12, 60), (700, 1000, 650, 1100), (1, 7, 0, 9), (20, 20, 19, 20)],
)
def test_ztest_matches_statsmodels_pooled_two_sided(xa, na, xb, nb):
    ours = two_proportion_ztest(xa, na, xb, nb)
    z, p = proportions_ztest([xa, xb], [na, nb], alternative="two-sided")
    assert ours.z == pytest.approx(z, rel=1e-10)
    assert ours.p_value == pytest.approx(p, rel=1e-9)
    assert (ours.rate_a, ours.rate_b) == pytest.approx((xa / na, xb / nb))


def test_ztest_is_antisymmetric_and_hand_worked():
    # p_a = 0.3, p_b = 0.2, pooled 0.25: se = sqrt(0.25 * 0.75 * (2 / 100)) = 0.061237; z = 1.63299
    ab, ba = two_proportion_ztest(30, 100, 20, 100), two_proportion_ztest(20, 100, 30, 100)
    assert ab.z == pytest.approx(1.632993, abs=1e-6)
    assert ba.z == pytest.approx(-ab.z) and ba.p_value == pytest.approx(ab.p_value)
    assert ab.p_value == pytest.approx(0.102470, abs=1e-6)


@pytest.mark.parametrize(("xa", "xb"), [(0, 0), (50, 50)])
def test_ztest_without_variance_is_undefined_with_a_reason(xa, xb):
    result = two_proportion_ztest(xa, 50, xb, 50)
    assert np.isnan(result.z) and np.isnan(result.p_value)
    assert "no variance" in result.reason


def test_ztest_on_an_empty_sample_is_undefined():
    assert two_proportion_ztest(0, 0, 3, 10).reason == "a sample is empty"


@pytest.mark.slow
def test_holm_matches_statsmodels():
    rng = np.random.default_rng(0)
    for size in (1, 2, 5, 13):
        p = rng.random(size) ** 3
        p[rng.integers(size)] = p[0]  # a tie
        expected = multipletests(p, method="holm")[1]
        assert holm_adjust(p) == pytest.approx(expected, rel=1e-12)


def test_holm_leaves_untestable_comparisons_out_of_the_family():
    p = [0.01, np.nan, 0.04, 0.03]
    adjusted = holm_adjust(p)
    assert np.isnan(adjusted[1])
    assert adjusted[[0, 2, 3]] == pytest.approx(multipletests([0.01, 0.04, 0.03], method="holm")[1])


def test_adjustment_none_keeps_p_values_and_unknown_is_refused():
    assert list(adjust_p_values([0.2, 0.01], "none")) == [0.2, 0.01]
    with pytest.raises(ValueError, match="holm"):
        adjust_p_values([0.2], "bonferroni")


def test_kendall_tau_b_matches_the_pair_count_reference_with_and_without_ties():
    # kendall_tau_b calls scipy's kendalltau, so the reference counts concordant and discordant pairs itself
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(2, 12))
        x, y = rng.integers(0, 5, n).astype(float), rng.integers(0, 5, n).astype(float)
        ours = kendall_tau_b(x, y)
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            assert np.isnan(ours)
        else:
            assert ours == pytest.approx(ref.kendall_tau_b(list(x), list(y)), abs=1e-12)
    # worked: x = 1 2 3 4, y = 1 3 2 2: 3 concordant, 2 discordant, 1 of the 6 pairs tied in y -> 1 / sqrt(6 * 5)
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 2]) == pytest.approx(1 / np.sqrt(30))


def test_kendall_tau_is_undefined_under_two_items_or_for_a_constant_ranking():
    assert np.isnan(kendall_tau_b([1.0], [2.0]))
    assert np.isnan(kendall_tau_b([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert kendall_tau_b([1, 2, 3], [30, 20, 10]) == -1.0


def test_pairwise_ztests_cover_every_pair_and_adjust_as_one_family():
    rates = {"a": (0.30, 100), "b": (0.20, 100), "c": (0.22, 150)}
    plain = pairwise_ztests(rates, "none")
    assert [(c.first, c.second) for c in plain] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert plain[0].test.z == pytest.approx(two_proportion_ztest(30, 100, 20, 100).z)
    holm = pairwise_ztests(rates, "holm")
    expected = multipletests([c.test.p_value for c in plain], method="holm")[1]
    assert [c.p_adjusted for c in holm] == pytest.approx(expected)


def test_stratified_draws_resample_each_group_within_itself():
    """Against the sampling theory of the bootstrap: each column is the resampled mean of its own group
    (centre its mean, spread sqrt(p(1 - p)/n) with that group's n), and the groups are drawn independently."""
    rng = np.random.default_rng(2)
    groups = [(rng.random(n) < p).astype(float) for n, p in ((80, 0.3), (320, 0.1))]
    draws = stratified_resampled_means(groups, resamples=20000, seed=7)
    assert draws.shape == (20000, 2)
    for column, group in enumerate(groups):
        p = group.mean()
        assert draws[:, column].mean() == pytest.approx(p, abs=0.003)
        assert draws[:, column].std() == pytest.approx(np.sqrt(p * (1 - p) / group.size), rel=0.04)
    assert abs(np.corrcoef(draws[:, 0], draws[:, 1])[0, 1]) < 0.03


def test_stratified_interval_of_a_difference_matches_an_independent_bootstrap():
    """bootstrap_stratified against a plain loop that resamples each group with rng.choice (another seed)."""
    rng = np.random.default_rng(2)
    groups = [(rng.random(n) < p).astype(float) for n, p in ((80, 0.3), (120, 0.1))]
    means = stratified_resampled_means(groups, resamples=20000, seed=7)
    low, high = percentile_interval(means[:, 0] - means[:, 1])
    other = np.random.default_rng(99)
    diffs = [other.choice(groups[0], groups[0].size).mean() - other.choice(groups[1], groups[1].size).mean()
             for _ in range(20000)]  # fmt: skip
    ref_low, ref_high = np.percentile(diffs, [2.5, 97.5])
    assert (low, high) == pytest.approx((ref_low, ref_high), abs=0.01)
    assert percentile_interval(np.asarray(diffs)) == pytest.approx((ref_low, ref_high))
