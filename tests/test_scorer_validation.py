"""Scorer validation: every metric against sklearn, the stored result and its note, the language rule, the CLI."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, brier_score_loss, f1_score, roc_auc_score

from helpers import run_cli
from trusteval.records import Prompt
from trusteval.scorers.validation import (
    binary_metrics,
    calibration,
    dataset_key,
    evaluate,
    macro_f1,
    roc_auc,
    store_report,
    validation_note,
    validation_run_id,
)
from trusteval.store import Store


def _random_case(seed: int, n: int = 400):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.clip(0.35 * labels + rng.normal(0.35, 0.2, n), 0, 1).round(2)  # rounding makes ties
    scores[:3] = [0.0, 1.0, 0.1]  # bin edges
    return labels, scores


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_binary_metrics_match_sklearn(seed, threshold):
    labels, scores = _random_case(seed)
    metrics = binary_metrics(labels, scores, threshold)
    predicted = scores >= threshold
    assert metrics.roc_auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert metrics.accuracy == pytest.approx(accuracy_score(labels, predicted), abs=1e-12)
    assert metrics.macro_f1 == pytest.approx(f1_score(labels, predicted, average="macro"), abs=1e-12)
    assert (metrics.n, metrics.toxic) == (len(labels), int(labels.sum()))


def test_degenerate_cases_match_sklearn():
    labels = np.array([0, 0, 0])
    assert roc_auc(labels, np.array([0.1, 0.2, 0.3])) is None
    for predicted in (np.array([0, 0, 0]), np.array([1, 0, 1]), np.array([1, 1, 1])):
        reference = f1_score(labels, predicted, average="macro", zero_division=0)
        assert macro_f1(labels, predicted) == pytest.approx(reference)


@pytest.mark.parametrize("seed", [0, 3])
def test_calibration_matches_sklearn(seed):
    labels, scores = _random_case(seed)
    result = calibration(labels, scores)
    toxic_fraction, mean_score = calibration_curve(labels, scores, n_bins=10, strategy="uniform")
    filled = [b for b in result.bins if b["count"]]
    assert [b["toxic_fraction"] for b in filled] == pytest.approx(toxic_fraction)
    assert [b["mean_score"] for b in filled] == pytest.approx(mean_score)
    counts = np.histogram(scores, bins=np.linspace(0, 1, 11))[0]  # numpy's bins are [a, b): differs at edges
    assert sum(b["count"] for b in result.bins) == len(scores) == counts.sum()
    weights = np.array([b["count"] for b in filled]) / len(scores)
    assert result.ece == pytest.approx(float(np.sum(weights * np.abs(mean_score - toxic_fraction))))
    assert result.brier == pytest.approx(brier_score_loss(labels, scores))


def test_calibration_hand_worked():
    result = calibration(np.array([1, 0, 1, 1]), np.array([0.05, 0.1, 0.95, 1.0]))
    first, last = result.bins[0], result.bins[-1]
    assert (first["count"], first["mean_score"], first["toxic_fraction"]) == (2, pytest.approx(0.075), 0.5)
    assert (last["count"], last["mean_score"], last["toxic_fraction"]) == (2, pytest.approx(0.975), 1.0)
    assert result.ece == pytest.approx(0.5 * abs(0.075 - 0.5) + 0.5 * abs(0.975 - 1.0))
    assert result.brier == pytest.approx((0.95**2 + 0.1**2 + 0.05**2 + 0) / 4)


def _prompts():
    rows = [("a", 1, "race", 0.9), ("b", 0, "race", 0.2), ("c", 1, "gender", 0.4), ("d", 0, "gender", 0.6),
            ("e", 0, "none", 0.1), ("f", None, "race", 0.5), ("g", 1, "race", None)]  # fmt: skip
    prompts = [Prompt(i, "toy", f"text {i}", "en", label, category) for i, label, category, _ in rows]
    return prompts, [v for *_, v in rows]


def test_evaluate_per_class_and_left_out():
    prompts, values = _prompts()
    report = evaluate("toy@1", "toy", 0.5, prompts, values)
    assert report.left_out == {"unlabelled": 1, "not scored": 1}
    assert report.overall.n == 5
    assert report.overall.roc_auc == pytest.approx(roc_auc_score([1, 0, 1, 0, 0], [0.9, 0.2, 0.4, 0.6, 0.1]))
    assert report.by_category["race"].roc_auc == 1.0 and report.by_category["gender"].roc_auc == 0.0
    assert report.by_category["none"].roc_auc is None and report.by_category["none"].accuracy == 1.0


def test_stored_report_gives_the_note_under_tables(tmp_path):
    prompts, values = _prompts()
    store = Store.open(tmp_path / "ws")
    try:
        assert validation_note(store, "toy@1", "toy") is None
        report = evaluate("toy@1", "toy?split=test&b=1", 0.5, prompts, values, {"scorer": "toy@1"})
        run_id = store_report(store, report, "toy?split=test&b=1")
        assert run_id == "validation:toy@1:toy?b=1&split=test" == validation_run_id("toy@1", "toy?b=1&split=test")
        note = validation_note(store, "toy@1", "toy?b=1&split=test")
        assert note is not None and "ROC AUC 0.833" in note and "n=5" in note and "threshold 0.5" in note
        assert validation_note(store, "toy@1", "toy") is None and validation_note(store, "other@1", "toy") is None
        assert store.scorer_info("toy@1") == {"scorer": "toy@1"}
    finally:
        store.close()


def test_dataset_key_normalises_option_order():
    assert dataset_key("hatexplain?targets=union&split=test") == dataset_key("hatexplain?split=test&targets=union")
    assert dataset_key("file:x.csv?lang=en") == "file:x.csv?lang=en" and dataset_key("cold") == "cold"


@pytest.fixture(scope="module")
def validated(tmp_path_factory, cache_dir):
    store = tmp_path_factory.mktemp("validate") / "ws"
    args = ("scorers", "validate", "--scorer", "en-tfidf", "--dataset", "hatexplain?split=validation", "--limit",
            "300", "--store", store, "--cache-dir", cache_dir, "--json")  # fmt: skip
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return store, args, result.json()


@pytest.mark.slow
def test_cli_validation_matches_sklearn_on_the_same_items(validated, data_dir, cache_dir):
    from trusteval.data import load_dataset, sample_prompts
    from trusteval.data.sources import DataContext
    from trusteval.scorers import ScorerContext, load_scorer

    _, _, out = validated
    dataset = load_dataset("hatexplain?split=validation", DataContext(data_dir=data_dir))
    prompts = sample_prompts(dataset.prompts, 300, 0)
    scorer = load_scorer("en-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    scores = np.array([o.value for o in scorer.score([p.text for p in prompts])])
    labels = np.array([p.label for p in prompts])
    assert out["run_id"] == "validation:en-tfidf@4:hatexplain?split=validation"
    assert out["overall"]["n"] == 300
    assert out["overall"]["roc_auc"] == pytest.approx(roc_auc_score(labels, scores))
    assert out["overall"]["macro_f1"] == pytest.approx(f1_score(labels, scores >= 0.5, average="macro"))
    assert out["calibration"]["brier"] == pytest.approx(brier_score_loss(labels, scores))
    race = np.array([p.category == "race" for p in prompts])
    assert out["by_category"]["race"]["accuracy"] == pytest.approx(accuracy_score(labels[race], scores[race] >= 0.5))


@pytest.mark.slow
def test_cli_result_is_stored_and_scores_are_reused(validated):
    store_path, args, out = validated
    store = Store.open(store_path)
    try:
        scored = store.count("scores")
        note = validation_note(store, "en-tfidf@4", "hatexplain?split=validation")
    finally:
        store.close()
    assert note is not None and f"ROC AUC {out['overall']['roc_auc']:.3f}" in note
    again = run_cli(*args)
    assert again.returncode == 0 and again.json()["overall"] == out["overall"]
    store = Store.open(store_path)
    try:
        assert store.count("scores") == scored
    finally:
        store.close()


@pytest.mark.slow
def test_cli_prints_tables(validated, cache_dir):
    store, _, _ = validated
    result = run_cli("scorers", "validate", "--scorer", "en-tfidf", "--dataset", "hatexplain?split=validation",
                     "--limit", "100", "--store", store, "--cache-dir", cache_dir)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Scorer validity: en-tfidf@4 on hatexplain?split=validation" in result.stdout
    assert "Expected calibration error" in result.stdout


@pytest.mark.slow
def test_a_chinese_detector_on_english_text_is_refused_unless_forced(tmp_path, cache_dir):
    args = ("scorers", "validate", "--scorer", "cold-tfidf", "--dataset", "hatexplain", "--limit", "20",
            "--store", tmp_path / "ws", "--cache-dir", cache_dir)  # fmt: skip
    refused = run_cli(*args)
    assert refused.returncode == 2
    assert "scorer cold-tfidf@4 is built for zh text but this data is en" in refused.stderr
    assert not (tmp_path / "ws").exists()
    forced = run_cli(*args, "--force-scorer-language", "--json")
    assert forced.returncode == 0, forced.stderr
    assert forced.json()["overall"]["n"] == 20


def test_unlabelled_data_is_refused(tmp_path, cache_dir):
    path = tmp_path / "plain.csv"
    path.write_text("text\nhello\n")
    result = run_cli("scorers", "validate", "--scorer", "en-tfidf", "--dataset", f"file:{path}?lang=en",
                     "--store", tmp_path / "ws", "--cache-dir", cache_dir)  # fmt: skip
    assert result.returncode == 2 and "has no labels" in result.stderr


@pytest.mark.slow
def test_any_toxicity_scorer_validates_a_tiny_hf_classifier(tmp_path, tiny_bert_classifier_dir):
    from trusteval.scorers import ScorerContext, load_scorer

    path = tmp_path / "mine.csv"
    rows = [("you are an idiot", 1, "insult"), ("what a lovely day", 0, "none"), ("go to hell", 1, "insult"),
            ("thank you so much", 0, "none"), ("stupid fool", 1, "insult"), ("see you soon", 0, "none")]  # fmt: skip
    path.write_text("text,label,category\n" + "".join(f"{t},{y},{c}\n" for t, y, c in rows))
    spec = f"hf:{tiny_bert_classifier_dir}?lang=en"
    result = run_cli("scorers", "validate", "--scorer", spec, "--dataset", f"file:{path}?lang=en",
                     "--store", tmp_path / "ws", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.json()
    scorer = load_scorer(spec, ScorerContext())
    scores = np.array([o.value for o in scorer.score([t for t, _, _ in rows])])
    labels = np.array([y for _, y, _ in rows])
    assert out["scorer"] == scorer.id and out["overall"]["n"] == 6
    assert out["overall"]["roc_auc"] == pytest.approx(roc_auc_score(labels, scores))
    assert out["calibration"]["brier"] == pytest.approx(brier_score_loss(labels, scores))
    assert out["by_category"]["none"]["roc_auc"] is None
