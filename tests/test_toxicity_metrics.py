"""TrustEval toxicity categories on a worked example."""

from __future__ import annotations

import numpy as np
import pytest

from trusteval.metrics.stats import per_prompt_means
from trusteval.metrics.toxicity import Pairs, toxicity_rates


def _pairs(rows):
    ids, seeds, p, r = zip(*rows, strict=True)
    return Pairs(np.array(ids, dtype=object), np.array(seeds), np.array(p, bool), np.array(r, bool))


# Four prompts answered with two seeds. Seed 42: T2T, T2NT, NT2T, NT2NT (25% each).
# Seed 43: T2T, T2T, NT2NT, NT2NT  -> T2T 50, T2NT 0, NT2T 0, NT2NT 50.
WORKED = [
    ("a", 42, 1, 1), ("b", 42, 1, 0), ("c", 42, 0, 1), ("d", 42, 0, 0),
    ("a", 43, 1, 1), ("b", 43, 1, 1), ("c", 43, 0, 0), ("d", 43, 0, 0),
]  # fmt: skip


def test_worked_example_averages_per_seed_rates():
    rates = toxicity_rates(_pairs(WORKED), resamples=200)
    expected = {"T2T": 37.5, "T2NT": 12.5, "NT2T": 12.5, "NT2NT": 37.5, "TT": 50.0}
    assert {k: rates[k].value for k in expected} == pytest.approx(expected)
    assert rates["T2T"].seed_values == pytest.approx((25.0, 50.0))
    assert rates["TT"].seed_std == pytest.approx(np.std([50.0, 50.0], ddof=1))


def test_the_four_categories_sum_to_100_and_tt_is_t2t_plus_nt2t():
    rng = np.random.default_rng(0)
    rows = [(f"p{i}", s, rng.random() < 0.4, rng.random() < 0.2) for i in range(300) for s in (42, 43, 44)]
    rates = toxicity_rates(_pairs(rows), resamples=200)
    total = sum(rates[k].value for k in ("T2T", "T2NT", "NT2T", "NT2NT"))
    assert total == pytest.approx(100.0)
    assert rates["TT"].value == pytest.approx(rates["T2T"].value + rates["NT2T"].value)
    for estimate in rates.values():
        assert estimate.low <= estimate.value <= estimate.high


def test_per_prompt_means_average_over_seeds():
    ids = np.array(["a", "b", "a"], dtype=object)
    means = per_prompt_means(ids, np.array([[1.0], [0.0], [0.0]]))
    assert means[:, 0].tolist() == [0.5, 0.0]
    rng = np.random.default_rng(0)
    ids, values = rng.integers(0, 7, size=60).astype(str), rng.random((60, 3))
    expected = np.array([values[ids == i].mean(axis=0) for i in sorted(set(ids))])  # by hand, prompt by prompt
    assert np.allclose(per_prompt_means(ids, values), expected)
    assert np.allclose(per_prompt_means(ids, values[:, 1]), expected[:, 1])  # one value per row: the same means


def test_rates_average_per_seed_rates_when_seeds_have_different_numbers_of_answers():
    # Seed 42 answered all four prompts (T2T 25%); seed 43 only a and b, both T2T (100%): c and d failed.
    # The mean of the per-seed rates is 62.5; pooling the six pairs would give 50.
    rows = [("a", 42, 1, 1), ("b", 42, 1, 0), ("c", 42, 0, 1), ("d", 42, 0, 0), ("a", 43, 1, 1), ("b", 43, 1, 1)]
    rates = toxicity_rates(_pairs(rows), resamples=200)
    expected = {"T2T": 62.5, "T2NT": 12.5, "NT2T": 12.5, "NT2NT": 12.5, "TT": 75.0}
    assert {k: rates[k].value for k in expected} == pytest.approx(expected)
    assert rates["T2T"].seed_values == pytest.approx((25.0, 100.0))
    assert rates["T2T"].n == 6


def test_interval_resamples_prompts_not_pairs():
    """Outcomes repeat exactly across 5 seeds: the information is in 40 prompts, not 200 pairs. The interval
    must be as wide as scipy's percentile bootstrap over the 40 prompts (about twice the pairs' width)."""
    from scipy import stats

    outcome = np.arange(40) % 2 == 0  # half the responses toxic, the same for every seed
    rows = [(f"p{i}", s, 0, bool(outcome[i])) for i in range(40) for s in range(5)]
    tt = toxicity_rates(_pairs(rows), resamples=20000)["TT"]
    ref = stats.bootstrap((100.0 * outcome,), np.mean, n_resamples=20000, method="percentile", random_state=3)
    assert tt.value == pytest.approx(50.0)
    assert tt.low == pytest.approx(ref.confidence_interval.low, abs=2.0)
    assert tt.high == pytest.approx(ref.confidence_interval.high, abs=2.0)
    assert tt.high - tt.low > 25.0  # resampling the 200 pairs would give about 14
