"""Bias over attribute classes only (issue 10): `none` / `multiple` out of sigma, delta, rho and tau by default,
--limit sampling stratified by class, and a note when rho's seed mean covers fewer seeds than the run."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from trusteval.benchmarks.trusteval_bias import TrustEvalBias
from trusteval.benchmarks.trusteval_toxicity import ModelPairs
from trusteval.config import RunSpec
from trusteval.data import load_dataset, sample_prompts, sample_stratified, stratified_sizes
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.metrics.bias import attribute_bias
from trusteval.metrics.toxicity import Pairs
from trusteval.records import Prompt
from trusteval.scorers.base import ScorerInfo
from trusteval.tables.paper_tables import bias_seed_table


def _pairs(toxic_by_class: dict[str, list[int]], seeds=(0,)) -> ModelPairs:
    ids, seed_col, toxic, classes = [], [], [], []
    for c, outcomes in toxic_by_class.items():
        for i, t in enumerate(outcomes):
            for s in seeds:
                ids.append(f"{c}{i}"), seed_col.append(s), toxic.append(bool(t)), classes.append(c)
    pairs = Pairs(np.array(ids, dtype=object), np.array(seed_col), np.ones(len(ids), bool), np.array(toxic))
    return ModelPairs("m", pairs, np.array(classes, dtype=object), Counter())


# TT: a 40%, b 100%, none 0% -> with none: sigma 41.1, delta 100, rho n/a; without: 30 / 60 / 2.5
WORKED = {"a": [1, 1, 0, 0, 0], "b": [1, 1, 1, 1, 1], "none": [0, 0, 0, 0, 0]}


def _bias(**options):
    spec = RunSpec(benchmark="trusteval-bias", seeds=[0], resamples=50, options=options)
    return TrustEvalBias(spec).bias_results({"m": _pairs(WORKED)}, ScorerInfo(), ["a", "b", "none"])


def test_none_is_left_out_of_sigma_delta_rho_by_default():
    results = _bias()
    found = results.metrics["models"]["m"]
    assert found["sigma"]["value"] == pytest.approx(np.std([40.0, 100.0]))  # 30.0
    assert found["sigma"]["value"] == pytest.approx(30.0)
    assert found["delta"]["value"] == pytest.approx(60.0) and found["rho"]["value"] == pytest.approx(2.5)
    assert results.metrics["classes"] == ["a", "b"]
    assert results.metrics["non_attribute_classes_left_out"] == {"none": 5}
    assert results.tables[0].columns[1:3] == ("TT a", "TT b") and "TT none" not in results.tables[0].columns
    assert any("Left out of σ, Δ, ρ and τ" in n and "none (5 pairs)" in n for n in results.tables[0].notes)


def test_include_non_attribute_keeps_none():
    found = _bias(include_non_attribute="true").metrics["models"]["m"]
    assert found["sigma"]["value"] == pytest.approx(np.std([40.0, 100.0, 0.0]))  # 41.1
    assert round(found["sigma"]["value"], 1) == 41.1
    assert found["delta"]["value"] == pytest.approx(100.0) and found["rho"] is None


def test_bias_options_are_checked():
    with pytest.raises(UsageError, match=r"Did you mean .include_non_attribute.\?"):
        TrustEvalBias(RunSpec(benchmark="trusteval-bias", options={"include_non_atribute": "true"}))
    with pytest.raises(UsageError, match="true or false"):
        TrustEvalBias(RunSpec(benchmark="trusteval-bias", options={"include_non_attribute": "maybe"}))


def _prompts(sizes: dict[str, int]) -> list[Prompt]:
    return [Prompt(f"{c}{i}", "d", f"{c} {i}", "en", 1, c) for c, n in sizes.items() for i in range(n)]


def test_stratified_limit_keeps_every_class():
    prompts = _prompts({"big": 90, "small": 9, "tiny": 1})
    plain = Counter(p.category for p in sample_prompts(prompts, 10, 0))
    assert "tiny" not in plain  # the unstratified sample loses the one-prompt class
    chosen, note = sample_stratified(prompts, 10, 0)
    assert Counter(p.category for p in chosen) == {"big": 8, "small": 1, "tiny": 1}
    assert "tiny: 1 of 1" in note and "big: 8 of 90" in note
    assert sample_stratified(prompts, 10, 0)[0] == chosen  # seeded
    assert [p.id for p in chosen] == [p.id for p in prompts if p in chosen]  # dataset order
    assert sample_stratified(prompts, None, 0) == (prompts, None)


@pytest.mark.parametrize(
    ("sizes", "limit", "expected"),
    [
        ({"a": 50, "b": 50}, 10, {"a": 5, "b": 5}),
        ({"a": 60, "b": 30, "c": 10}, 10, {"a": 6, "b": 3, "c": 1}),
        ({"a": 97, "b": 1, "c": 1, "d": 1}, 4, {"a": 1, "b": 1, "c": 1, "d": 1}),
        ({"a": 5, "b": 3}, 2, {"a": 1, "b": 1}),
        ({"a": 5, "b": 3, "c": 1}, 2, {"a": 1, "b": 1, "c": 0}),
    ],
)
def test_stratified_sizes(sizes, limit, expected):
    assert stratified_sizes(sizes, limit) == expected


def test_limit_on_hatexplain_keeps_every_class(data_dir):
    spec = RunSpec(benchmark="trusteval-bias", dataset="hatexplain", limit=40, sample_seed=0)
    plan = TrustEvalBias(spec).plan(DataContext(data_dir=data_dir))
    everything = {p.category for p in load_dataset("hatexplain", DataContext(data_dir=data_dir)).prompts}
    assert {p.category for p in plan.prompts} == everything and len(plan.prompts) == 40
    assert any(n.startswith("--limit 40: prompts sampled per attribute class") for n in plan.notes)


def test_rho_seed_mean_over_fewer_seeds_is_noted():
    # seed 0: a 50%, b 100% (rho 2); seed 1: a 0% -> rho undefined in that seed
    ids = np.array(["a0", "a1", "a0", "a1", "b0", "b1", "b0", "b1"], dtype=object)
    seeds = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    toxic = np.array([1, 0, 0, 0, 1, 1, 1, 1], dtype=bool)
    classes = np.array(["a"] * 4 + ["b"] * 4, dtype=object)
    bias = attribute_bias(Pairs(ids, seeds, np.ones(8, bool), toxic), classes, resamples=20)
    assert bias.rho is not None and len(bias.rho.seed_values) == 1 and len(bias.sigma.seed_values) == 2
    notes = bias_seed_table("cold", {"m": bias}).notes
    assert any("m: ρ seed mean over 1 of 2 seeds" in n for n in notes)
