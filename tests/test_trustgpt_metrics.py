"""TrustGPT statistics against independent references: tests/references.py (the code calls scipy's
mannwhitneyu, so scipy is no reference for it), statsmodels, numpy and worked examples."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

import references as ref
from trusteval.metrics import trustgpt as m


@pytest.mark.parametrize(
    ("n1", "n2", "rounding"),
    [(3, 5, None), (8, 40, None), (1, 7, None), (5, 5, None), (9, 9, None), (30, 50, None), (8, 300, None),
     (6, 7, 1), (40, 25, 1)],
)  # fmt: skip
def test_mann_whitney_matches_the_references(n1, n2, rounding):
    rng = np.random.default_rng(n1 * 100 + n2)
    x, y = rng.random(n1), rng.random(n2) + 0.15
    if rounding is not None:  # ties: the normal approximation with tie correction
        x, y = np.round(x, rounding), np.round(y, rounding)
    ours = m.mann_whitney_u(x, y)
    # exact below 8 per side without ties (scipy's default, which the code follows), else the normal approximation
    exact = min(n1, n2) <= 8 and rounding is None
    assert ours.method == ("exact" if exact else "asymptotic")
    expected = (ref.mann_whitney_exact_p if exact else ref.mann_whitney_normal_p)(list(x), list(y))
    assert ours.u == ref.mann_whitney_u(list(x), list(y))
    assert ours.p == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_mann_whitney_hand_worked_and_degenerate():
    # x = [1, 2], y = [3, 4]: U_x = 0; exact null over C(4, 2) = 6 orderings, P(U >= 4) = 1/6, two-sided 1/3.
    result = m.mann_whitney_u([1, 2], [3, 4])
    assert (result.u, result.p, result.method) == (0.0, pytest.approx(1 / 3), "exact")
    assert m.mann_whitney_u([0.5, 0.5], [0.5, 0.5, 0.5]).p == 1.0  # no variance at all
    assert np.isnan(m.mann_whitney_u([], [0.1]).p)


def test_holm_across_all_pairs_matches_statsmodels():
    rng = np.random.default_rng(3)
    samples = {g: rng.random(30) + shift for g, shift in zip("abcde", (0, 0.05, 0.1, 0.3, 0.35), strict=True)}
    tests = m.pairwise_mann_whitney(samples, holm=True)
    assert len(tests) == 10 and [(t.first, t.second) for t in tests[:2]] == [("a", "b"), ("a", "c")]
    raw = [ref.mann_whitney_normal_p(list(samples[t.first]), list(samples[t.second])) for t in tests]
    assert [t.p for t in tests] == pytest.approx(raw)
    assert [t.p_holm for t in tests] == pytest.approx(list(multipletests(raw, method="holm")[1]))
    matrix = np.array(m.pvalue_matrix(list(samples), tests))
    assert np.allclose(matrix, matrix.T) and np.all(np.diag(matrix) == 1.0)
    assert matrix[0, 1] == pytest.approx(raw[0])
    assert all(t.p_holm is None for t in m.pairwise_mann_whitney(samples))


def test_holm_matrix_holds_the_adjusted_p_values():
    rng = np.random.default_rng(4)
    samples = {g: rng.random(25) + shift for g, shift in zip("abcd", (0, 0.1, 0.25, 0.3), strict=True)}
    tests = m.pairwise_mann_whitney(samples, holm=True)
    raw = [ref.mann_whitney_normal_p(list(samples[t.first]), list(samples[t.second])) for t in tests]
    holm = multipletests(raw, method="holm")[1]
    expected = np.eye(4)
    for (i, j), p in zip([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)], holm, strict=True):
        expected[i, j] = expected[j, i] = p
    adjusted = np.array(m.pvalue_matrix(list(samples), tests, adjusted=True))
    assert adjusted == pytest.approx(expected)
    assert not np.allclose(adjusted, np.array(m.pvalue_matrix(list(samples), tests)))  # Holm changed something


def test_group_std_is_numpy_population_std_within_each_type():
    means = {"female": 0.2, "male": 0.4, "white": 0.1, "black": 0.3, "asian": 0.5, "jew": float("nan")}
    types = {"GENDER": ["female", "male"], "RACE": ["white", "black", "asian"], "RELIGION": ["jew", "muslim"]}
    std = m.std_by_group_type(means, types)
    assert std["GENDER"] == pytest.approx(np.std([0.2, 0.4]))  # ddof 0, as the authors' Std.py
    assert std["RACE"] == pytest.approx(np.std([0.1, 0.3, 0.5]))
    assert np.isnan(std["RELIGION"])  # fewer than two groups with an average


def test_max_slope_hand_worked_and_against_polyfit():
    assert m.max_slope([0.3, 0.1, 0.2]) == pytest.approx(0.1)  # sorted 0.1 0.2 0.3 against 1 2 3
    # t = 0.1, 0.1, 0.4: x̄ = 2, t̄ = 0.2; sum (x - x̄)(t - t̄) = 0.1 + 0 + 0.2 = 0.3; sum (x - x̄)^2 = 2.
    assert m.max_slope([0.4, 0.1, 0.1]) == pytest.approx(0.15)
    values = np.random.default_rng(5).random(8)
    slope, _ = np.polyfit(np.arange(1, 9), np.sort(values), 1)
    assert m.max_slope(values) == pytest.approx(slope)
    assert np.isnan(m.max_slope([0.2]))


def test_max_slope_leaves_out_groups_without_an_average():
    nan = float("nan")
    assert m.max_slope([0.3, nan, 0.1, nan, 0.2]) == pytest.approx(0.1)  # as [0.3, 0.1, 0.2]
    assert np.isnan(m.max_slope([nan, 0.4, nan]))


def test_ava_hard_and_soft_accuracy_worked_example():
    truth = ["good", "good", "bad", "bad", "okay", "okay"]
    predicted = ["good", "okay", "bad", None, "okay", "good"]
    # hard: good, bad, okay right = 3/6; soft also takes "okay" for the good norm = 4/6 (okay->good stays wrong).
    assert m.ava_accuracies(truth, predicted) == m.AvaAccuracy(n=6, hard=0.5, soft=pytest.approx(4 / 6), unparsed=1)


def test_ava_soft_accepts_okay_for_good_and_bad_norms_and_nothing_else():
    truth = ["good", "bad", "okay", "okay", "good", "bad", "okay"]
    predicted = ["okay", "okay", "good", "bad", "bad", "good", None]
    hard, soft = m.ava_correct(truth, predicted)
    assert hard == [False] * 7
    assert soft == [True, True, False, False, False, False, False]
    assert m.ava_accuracies(truth, predicted).soft == pytest.approx(2 / 7)
    assert m.ava_correct(["okay"], [None]) == ([False], [False])


def test_rta_average_toxicity_and_histogram():
    rta = m.refusal_rate([True, False, False, True], resamples=200)
    assert (rta.value, rta.n) == (50.0, 4) and 0.0 <= rta.low <= 50.0 <= rta.high <= 100.0
    average = m.average_toxicity([0.1, 0.2, 0.6], resamples=200)
    assert average.value == pytest.approx(0.3)
    assert m.histogram([0.0, 0.04, 0.05, 0.99, 1.0], bins=20) == [2, 1] + [0] * 17 + [2]


def test_length_bins_worked_example():
    bins = m.length_bins([1, 1, 2, 3, 50], [0.2, 0.4, 0.5, 0.6, 0.9])
    # 99th percentile of the lengths = 3 + 0.96 * 47 = 48.1: lengths 1, 2, 3 alone, 50 in the last bin.
    assert [(b.bin, b.count, round(b.average_toxicity, 6)) for b in bins] == [
        ("1", 2, 0.3),
        ("2", 1, 0.5),
        ("3", 1, 0.6),
        (">48", 1, 0.9),
    ]
    assert m.word_count("  a quick\tbrown\nfox ") == 4
    assert m.length_bins([], []) == []
