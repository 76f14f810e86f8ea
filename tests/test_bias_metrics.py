"""Attribute-level toxicity disparity (TrustEval section 3.2) against numpy, scipy and a loop bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from trusteval.metrics.bias import attribute_bias, disparity, disparity_columns, rank_agreement
from trusteval.metrics.toxicity import Pairs


def _pairs(rows):
    """rows: (prompt id, seed, class, response toxic)."""
    ids, seeds, classes, toxic = zip(*rows, strict=True)
    pairs = Pairs(np.asarray(ids, dtype=object), np.asarray(seeds), np.zeros(len(rows), bool), np.asarray(toxic))
    return pairs, np.asarray(classes, dtype=object)


def test_disparity_is_population_sd_gap_and_ratio():
    found = disparity({"race": 10.0, "gender": 20.0, "region": 30.0})
    assert found.sigma == pytest.approx(np.std([10, 20, 30], ddof=0))  # 8.1650, not the sample sd 10.0
    assert (found.delta, found.rho, found.rho_reason) == (20.0, 3.0, None)


def test_ratio_is_undefined_when_a_class_has_no_toxicity():
    found = disparity({"race": 0.0, "gender": 12.5, "region": 0.0})
    assert found.rho is None
    assert found.rho_reason == "ρ undefined: TT is 0 for race, region"
    assert found.delta == 12.5


def test_disparity_needs_two_classes():
    with pytest.raises(ValueError, match="two attribute classes"):
        disparity({"race": 3.0})


def test_vectorised_disparity_matches_the_scalar_one_row_by_row():
    rng = np.random.default_rng(0)
    matrix = rng.integers(0, 5, size=(50, 3)).astype(float)
    columns = disparity_columns(matrix)
    for row, values in enumerate(matrix):
        scalar = disparity(dict(zip("abc", values, strict=True)))
        assert columns["sigma"][row] == pytest.approx(scalar.sigma)
        assert columns["delta"][row] == pytest.approx(scalar.delta)
        if scalar.rho is None:
            assert np.isnan(columns["rho"][row])
        else:
            assert columns["rho"][row] == pytest.approx(scalar.rho)


def test_tt_per_class_is_averaged_over_seeds_and_the_statistics_use_those_values():
    # gender: seed 1 -> 1/2 toxic, seed 2 -> 2/2; race: 0/2 and 1/2; region: 1/1 and 1/1
    rows = [
        ("g1", 1, "gender", True), ("g2", 1, "gender", False), ("g1", 2, "gender", True), ("g2", 2, "gender", True),
        ("r1", 1, "race", False), ("r2", 1, "race", False), ("r1", 2, "race", True), ("r2", 2, "race", False),
        ("x1", 1, "region", True), ("x1", 2, "region", True),
    ]  # fmt: skip
    bias = attribute_bias(*_pairs(rows), resamples=200)
    assert bias.tt["gender"].value == pytest.approx(75.0)
    assert bias.tt["race"].value == pytest.approx(25.0)
    assert bias.tt["region"].value == pytest.approx(100.0)
    assert bias.tt["gender"].seed_values == (50.0, 100.0) and bias.tt["gender"].n == 4
    values = np.array([75.0, 25.0, 100.0])
    assert bias.sigma.value == pytest.approx(np.std(values))
    assert bias.delta.value == pytest.approx(75.0) and bias.rho.value == pytest.approx(4.0)
    # per seed: (50, 0, 100) and (100, 50, 100)
    assert bias.sigma.seed_values == pytest.approx((np.std([50, 0, 100]), np.std([100, 50, 100])))
    assert bias.delta.seed_values == pytest.approx((100.0, 50.0))
    assert bias.rho.seed_values == pytest.approx((2.0,))  # seed 1 has a class at 0: its ratio is left out


def _loop_bootstrap_sigma(groups, resamples, seed):
    """The naive reference: resample indices within each class, one Python iteration per resample."""
    rng = np.random.default_rng(seed)
    sigmas = []
    for _ in range(resamples):
        means = [g[rng.integers(0, len(g), len(g))].mean() for g in groups]
        sigmas.append(np.std(100 * np.asarray(means)))
    return np.percentile(sigmas, [2.5, 97.5])


def test_sigma_interval_matches_a_loop_bootstrap_within_each_class():
    rng = np.random.default_rng(3)
    rows, groups = [], []
    for name, n, p in (("race", 300, 0.10), ("gender", 200, 0.25), ("region", 250, 0.18)):
        toxic = rng.random(n) < p
        groups.append(toxic.astype(float))
        rows += [(f"{name}{i}", 42, name, bool(t)) for i, t in enumerate(toxic)]
    bias = attribute_bias(*_pairs(rows), resamples=20000, seed=4)
    low, high = _loop_bootstrap_sigma(groups, 20000, 5)
    assert bias.sigma.low == pytest.approx(low, abs=0.25)
    assert bias.sigma.high == pytest.approx(high, abs=0.25)
    assert bias.sigma.low < bias.sigma.value < bias.sigma.high
    for name, group in zip(("race", "gender", "region"), groups, strict=True):
        ref = stats.bootstrap((100 * group,), np.mean, n_resamples=20000, method="percentile", random_state=6)
        step = 100 / len(group)  # a resampled rate moves on a grid of 1/n: percentiles can differ by one step
        assert bias.tt[name].low == pytest.approx(ref.confidence_interval.low, abs=step + 1e-9)
        assert bias.tt[name].high == pytest.approx(ref.confidence_interval.high, abs=step + 1e-9)


def test_a_class_without_pairs_makes_every_statistic_undefined():
    rows = [("a", 1, "race", True), ("b", 1, "gender", False)]
    bias = attribute_bias(*_pairs(rows), classes=["gender", "race", "region"])
    assert np.isnan(bias.sigma.value) and bias.rho is None
    assert bias.reason == "σ, Δ, ρ undefined: no scored pairs for class(es) region"


def test_resamples_where_the_ratio_is_undefined_are_counted():
    rows = [("a", 1, "race", True), ("b", 1, "race", False), ("c", 1, "gender", True), ("d", 1, "gender", True)]
    bias = attribute_bias(*_pairs(rows), resamples=400)
    assert bias.rho.value == pytest.approx(2.0)
    # race resamples to 0 toxic in about a quarter of the draws: rho is undefined there
    assert 50 < bias.rho_undefined_resamples < 150


def _model_bias(sigma_like_rates, seed):
    rng = np.random.default_rng(seed)
    rows = []
    for name, p in zip(("race", "gender", "region"), sigma_like_rates, strict=True):
        rows += [(f"{name}{i}", 1, name, bool(t)) for i, t in enumerate(rng.random(200) < p)]
    return attribute_bias(*_pairs(rows), resamples=50)


def test_rank_agreement_matches_scipy_kendalltau():
    models = {f"m{i}": _model_bias(rates, i) for i, rates in enumerate(
        [(0.1, 0.2, 0.3), (0.2, 0.2, 0.25), (0.05, 0.4, 0.1), (0.3, 0.1, 0.3), (0.15, 0.15, 0.5)])}  # fmt: skip
    agreements = {(a.first, a.second): a for a in rank_agreement(models)}
    values = {name: [getattr(m, name).value for m in models.values()] for name in ("sigma", "delta", "rho")}
    for (first, second), found in agreements.items():
        assert found.models == 5
        assert found.tau == pytest.approx(stats.kendalltau(values[first], values[second]).statistic)


def test_rank_agreement_leaves_out_undefined_ratios_and_needs_two_models():
    defined = _model_bias((0.1, 0.2, 0.3), 0)
    zero = _model_bias((0.0, 0.2, 0.3), 1)
    agreements = {(a.first, a.second): a for a in rank_agreement({"a": defined, "b": zero})}
    assert agreements[("sigma", "delta")].models == 2
    assert agreements[("sigma", "rho")].models == 1
    assert agreements[("sigma", "rho")].reason == "undefined with fewer than 2 models"
    assert np.isnan(agreements[("delta", "rho")].tau)


def test_bias_refuses_a_selection_with_one_class_before_anything_is_stored(tmp_path, data_dir, cache_dir):
    from trusteval.benchmarks.trusteval_bias import TrustEvalBias
    from trusteval.config import build_run_spec
    from trusteval.errors import UsageError
    from trusteval.pipeline.prepare import data_context

    flags = {"benchmark": "trusteval-bias", "dataset": "cold?topics=race", "limit": 5, "store": str(tmp_path / "ws"),
             "data_dir": str(data_dir), "cache_dir": str(cache_dir)}  # fmt: skip
    spec = build_run_spec(flags, env={})
    with pytest.raises(UsageError, match=r"the selection has \['race'\]"):
        TrustEvalBias(spec).plan(data_context(spec))
    assert not (tmp_path / "ws").exists()


def test_the_bootstrap_resamples_prompts_not_pairs():
    """Two race prompts answered with 40 seeds each, one always toxic and one never: resampling prompts gives
    TT in {0, 50, 100} (an interval of [0, 100]); resampling the 80 pairs would give about 50 +- 11."""
    rows = [(prompt, seed, "race", prompt == "r1") for prompt in ("r1", "r2") for seed in range(40)]
    rows += [(f"g{i}", seed, "gender", i % 2 == 0) for i in range(40) for seed in range(40)]
    bias = attribute_bias(*_pairs(rows), resamples=2000, seed=1)
    assert bias.tt["race"].value == pytest.approx(50.0) and bias.tt["race"].n == 80
    assert (bias.tt["race"].low, bias.tt["race"].high) == (0.0, 100.0)
    # 40 gender prompts, half toxic: the prompt-level interval is about 50 +- 16, not the pair-level +- 2.5
    assert bias.tt["gender"].high - bias.tt["gender"].low > 20


def test_per_seed_statistics_use_only_the_seeds_every_class_was_answered_with():
    """race has no pair of seed 2 (its answers failed): seed 2 has no per-seed statistic, seed 1 has one."""
    rows = [
        ("g1", 1, "gender", True), ("g2", 1, "gender", False), ("g1", 2, "gender", True), ("g2", 2, "gender", True),
        ("r1", 1, "race", False), ("r2", 1, "race", True),
        ("x1", 1, "region", True), ("x2", 1, "region", True), ("x1", 2, "region", False), ("x2", 2, "region", True),
    ]  # fmt: skip
    bias = attribute_bias(*_pairs(rows), resamples=100)
    assert bias.sigma.seed_values == pytest.approx((np.std([50.0, 50.0, 100.0]),))
    assert bias.delta.seed_values == pytest.approx((50.0,)) and bias.rho.seed_values == pytest.approx((2.0,))
    assert bias.tt["race"].seed_values == (50.0,) and bias.tt["gender"].seed_values == (50.0, 100.0)
