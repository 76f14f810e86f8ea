"""Class-wise scorer error corrected by Rogan-Gladen (issue 19 item 4): the formula, its n/a cases, the bootstrap,
and the option through the CLI on COLD."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import run_cli
from trusteval.metrics.misclassification import corrected_bias, rogan_gladen


def test_rogan_gladen_by_hand():
    assert float(rogan_gladen(0.3, 0.8, 0.9)) == pytest.approx(0.2 / 0.7)
    assert float(rogan_gladen(0.05, 0.8, 0.9)) == 0.0  # below the false-alarm rate: clipped to 0
    assert float(rogan_gladen(0.95, 0.8, 0.9)) == 1.0  # above the hit rate: clipped to 1
    assert np.isnan(rogan_gladen(0.3, 0.5, 0.5))  # Se + Sp = 1: the scorer tells nothing


def _validation(se_hits: int, sp_hits: int, n: int = 20):
    labels = np.array([1] * n + [0] * n)
    called = np.array([1] * se_hits + [0] * (n - se_hits) + [0] * sp_hits + [1] * (n - sp_hits))
    return labels, called


def test_a_scorer_that_misses_more_in_one_class_is_corrected_there():
    outcomes = {"race": np.array([1.0] * 8 + [0.0] * 12), "region": np.array([1.0] * 8 + [0.0] * 12)}
    validation = {"race": _validation(18, 18), "region": _validation(10, 18)}  # Se 0.9 / 0.5, Sp 0.9 both
    found = corrected_bias(outcomes, validation, resamples=400)
    assert found.reason is None
    assert found.errors["region"].sensitivity.value == pytest.approx(0.5)
    assert found.tt["race"].value == pytest.approx(100 * (0.4 + 0.9 - 1) / (0.9 + 0.9 - 1))
    assert found.tt["region"].value == pytest.approx(100 * (0.4 + 0.9 - 1) / (0.5 + 0.9 - 1))
    assert found.statistics["delta"].value == pytest.approx(found.tt["region"].value - found.tt["race"].value)
    for estimate in found.tt.values():
        assert estimate.low <= estimate.value <= estimate.high
    assert found.statistics["delta"].low < found.statistics["delta"].value < found.statistics["delta"].high


def test_too_few_validation_items_or_a_useless_scorer_give_na_with_the_reason():
    outcomes = {"race": np.ones(5), "region": np.zeros(5)}
    few = corrected_bias(outcomes, {"race": _validation(5, 5, n=6), "region": _validation(18, 18)})
    assert few.tt == {} and "too few validation items in class race (6 toxic, 6 non-toxic" in few.reason
    chance = corrected_bias(outcomes, {"race": _validation(10, 10), "region": _validation(18, 18)})
    assert chance.tt == {} and "Se + Sp <= 1 in class race" in chance.reason
    one = corrected_bias({"race": np.ones(5)}, {"race": _validation(18, 18)})
    assert one.reason == "fewer than two classes"


@pytest.mark.slow
def test_cli_option_prints_the_corrected_table_with_scorer_error(tmp_path, data_dir, cache_dir):
    from test_scorer_control import _cold_answers

    answers = _cold_answers(tmp_path, data_dir, 120)
    result = run_cli("run", "--benchmark", "trusteval-bias", "--dataset", "cold", "--limit", "120", "--model",
                     f"replay:{answers}", "--seeds", "42", "--option", "misclassification=rogan-gladen", "--store",
                     tmp_path / "ws", "--cache-dir", cache_dir, "--json", "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    model = next(iter(data["metrics"]["models"].values()))
    corrected = model["corrected"]
    assert corrected["method"] == "rogan-gladen"
    if corrected["reason"] is None:
        assert set(corrected["tt"]) == set(data["metrics"]["classes"])
        assert all(0.0 <= e["value"] <= 100.0 for e in corrected["tt"].values())
    else:  # a class with under 10 labelled prompts of a label in 120: n/a with the reason, never a number
        assert corrected["tt"] == {} and "too few validation items" in corrected["reason"]
    report = run_cli("report", "--store", tmp_path / "ws")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "corrected for class-wise scorer error" in report.stdout and "Rogan-Gladen" in report.stdout
    print(json.dumps(corrected, ensure_ascii=False)[:1500])


def _unbalanced(toxic: int, clean: int):
    labels = np.array([1] * toxic + [0] * clean)
    return labels, labels.copy()  # a perfect scorer: only the counts decide


@pytest.mark.parametrize(
    ("toxic", "clean", "refused"),
    [(10, 10, False), (9, 10, True), (10, 9, True), (9, 30, True), (30, 9, True), (11, 11, False)],
)
def test_the_too_few_items_guard_needs_ten_of_each_label_in_every_class(toxic, clean, refused):
    """The guard at its boundary: 10 of each label is enough, 9 of either is not (MIN_PER_LABEL = 10)."""
    outcomes = {"race": np.ones(6), "region": np.zeros(6)}
    found = corrected_bias(outcomes, {"race": _unbalanced(toxic, clean), "region": _unbalanced(20, 20)}, resamples=50)
    if refused:
        assert found.reason == (f"too few validation items in class race ({toxic} toxic, {clean} non-toxic; at "
                                "least 10 of each are needed)")  # fmt: skip
        assert found.tt == {}
    else:
        assert found.reason is None and set(found.tt) == {"race", "region"}
