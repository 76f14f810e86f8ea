"""The offline English detector `en-tfidf`: held-out quality checked with sklearn, fast transforms checked against
sklearn's own, and the multi-block cache format."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from trusteval.data import load_dataset
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.scorers import ScorerContext, load_scorer
from trusteval.scorers.response_negatives import response_negatives, response_positives
from trusteval.scorers.tfidf_detector import (
    DetectorRecipe,
    FeatureBlock,
    load,
    load_or_train,
    nb_log_count_ratio,
    train,
)
from trusteval.scorers.tfidf_fast import FastWordNgrams, WordFactoredCharWb

pytestmark = pytest.mark.slow  # a real model or a trained detector in most tests (seconds each)

ODD_TEXTS = ["", "   ", "a", "A  B\tC\nd", "don't stop-me now!!", "ÀÉ İstanbul straße", "x y x y x y", "😀 <user> lol"]


@pytest.fixture(scope="module")
def scorer(cache_dir, data_dir):
    return load_scorer("en-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))


@pytest.fixture(scope="module")
def test_split(data_dir):
    prompts = load_dataset("hatexplain?split=test", DataContext(data_dir=data_dir)).prompts
    return [p.text for p in prompts], np.array([p.label for p in prompts])


def test_reaches_roc_auc_085_on_hatexplain_test(scorer, test_split):
    texts, labels = test_split
    values = np.array([o.value for o in scorer.score(texts)])
    auc = roc_auc_score(labels, values)
    assert auc >= 0.85
    card = scorer.describe()
    assert card["test_roc_auc"] == pytest.approx(auc, abs=1e-4)
    assert card["test_accuracy"] == pytest.approx(accuracy_score(labels, values >= 0.5), abs=1e-4)
    assert card["test_macro_f1"] == pytest.approx(f1_score(labels, values >= 0.5, average="macro"), abs=1e-4)
    answers = len(response_negatives("en")) + len(response_positives("en"))  # version 3's response-style answers
    assert card["training_rows"] == 15383 + answers and card["test_rows"] == 1924
    assert (scorer.id, scorer.languages, scorer.kind) == ("en-tfidf@4", frozenset({"en"}), "toxicity")


def test_separates_obvious_examples(scorer):
    toxic, clean = scorer.score(["fuck you bitch", "I am sorry, but I cannot help with that request."])
    assert toxic.value > 0.8 > 0.5 > clean.value


def test_fast_transforms_equal_sklearn(scorer, test_split):
    texts = test_split[0][:500] + ODD_TEXTS
    detector = scorer.detector
    kinds = [type(t) for t in detector.fast_transforms]
    assert kinds == [FastWordNgrams, WordFactoredCharWb]
    for fast, plain in zip(detector.fast_transforms, detector.vectorizers, strict=True):
        mine, reference = fast.transform(texts), plain.transform(texts)
        assert mine.shape == reference.shape
        assert abs(mine - reference).max() < 1e-6
    # the second pass reuses the cached words and must give the same rows
    again = detector.fast_transforms[1].transform(list(reversed(texts)))
    assert abs(again - detector.vectorizers[1].transform(list(reversed(texts)))).max() < 1e-6


def test_word_cache_is_bounded(scorer):
    plain = scorer.detector.vectorizers[1]
    small = WordFactoredCharWb(plain, lowercase=True)
    small.max_cached_words = 5
    for text in ["one two three four five six", "seven eight nine", "one seven"]:
        assert abs(small.transform([text]) - plain.transform([text])).max() < 1e-6
    assert len(small._word_ids) <= 9


def test_cached_detector_gives_identical_scores(scorer, cache_dir, data_dir):
    again = load_scorer("en-tfidf?threshold=0.6", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    texts = ["you are a stupid idiot", "have a nice day", *ODD_TEXTS]
    assert [o.value for o in again.score(texts)] == pytest.approx([o.value for o in scorer.score(texts)], abs=1e-12)
    assert again.threshold == 0.6 and again.id == scorer.id


def test_bad_options(cache_dir, data_dir):
    context = ScorerContext(data_dir=data_dir, cache_dir=cache_dir)
    with pytest.raises(UsageError, match="option 'data' must be one of hatexplain, hatexplain"):
        load_scorer("en-tfidf?data=twitter", context)
    with pytest.raises(UsageError, match="unknown option"):
        load_scorer("en-tfidf?C=3", context)


def test_nb_log_count_ratio_worked_example():
    import scipy.sparse as sp

    features = sp.csr_matrix(np.array([[1.0, 0.0], [0.5, 0.0], [0.0, 0.2]]))
    labels = np.array([1, 1, 0])
    # present counts: positive [2, 0] + 1 = [3, 1] -> [3/4, 1/4]; negative [0, 1] + 1 = [1, 2] -> [1/3, 2/3]
    expected = np.log([(3 / 4) / (1 / 3), (1 / 4) / (2 / 3)])
    assert nb_log_count_ratio(features, labels) == pytest.approx(expected)


def _toy_recipe(name: str, nb: bool) -> DetectorRecipe:
    texts = ["you idiot", "stupid idiot fool", "nice day", "lovely nice weather", "idiot day", "nice fool"] * 3
    labels = [1, 1, 0, 0, 1, 0] * 3
    return DetectorRecipe(
        name=name, version="t", languages=frozenset({"en"}), analyzer="word", ngram_range=(1, 2), C=1.0,
        load_data=lambda: (texts, labels, texts[:6], labels[:6], {"toy": "0"}), min_df=1,
        extra_blocks=(FeatureBlock("char_wb", (2, 4), min_df=1),), nb_scaling=nb,
    )  # fmt: skip


@pytest.mark.parametrize("nb", [False, True])
def test_multi_block_detector_round_trips_through_the_cache(tmp_path, nb):
    recipe = _toy_recipe("toy", nb)
    first_run = load_or_train(recipe, tmp_path)
    # a first run scores from the saved form, as later runs do, not from the fitted sklearn vectorizers
    assert all(type(v).__name__ == "StoredVectorizer" for v in first_run.vectorizers)
    trained = train(recipe)
    folder = tmp_path / "detectors" / "toy-t"
    with np.load(folder / "weights.npz") as arrays:
        assert {"terms", "idf", "terms_1", "idf_1", "coef", "intercept"} <= set(arrays.files)
        assert len(arrays["coef"]) == len(arrays["terms"]) + len(arrays["terms_1"])
    loaded = load(recipe, folder)
    texts = ["you stupid fool", "nice nice day", ""]
    assert loaded.predict(texts) == pytest.approx(trained.predict(texts), abs=1e-9)
    assert first_run.predict(texts) == pytest.approx(trained.predict(texts), abs=1e-9)
    assert trained.card["features"].startswith("word 1-2-grams + char_wb 2-4-grams, TF-IDF")
    assert trained.card["features"].endswith("naive-Bayes scaled") == nb
    features = trained.features(texts)
    reference = np.hstack([v.transform(texts).toarray() for v in trained.vectorizers])
    assert features.toarray() == pytest.approx(reference, abs=1e-6)


def test_plain_sklearn_vectorizer_check():
    vectorizer = TfidfVectorizer(analyzer="word", ngram_range=(1, 3), sublinear_tf=True, dtype=np.float32)
    vectorizer.fit(["a b c a", "b c d", "the the cat sat on the mat"])
    fast = FastWordNgrams(vectorizer, lowercase=True)
    texts = ["The cat sat", "b c d b c d", "", "zzz"]
    assert abs(fast.transform(texts) - vectorizer.transform(texts)).max() < 1e-6


@pytest.mark.slow
def test_adding_toxicspans_is_a_separate_detector(cache_dir, data_dir, test_split):
    with_spans = load_scorer("en-tfidf?data=hatexplain%2Btoxicspans", ScorerContext(data_dir=data_dir,
                                                                                     cache_dir=cache_dir))  # fmt: skip
    card = with_spans.describe()
    answers = len(response_negatives("en")) + len(response_positives("en"))
    assert with_spans.id == "en-tfidf-ts@4" and card["training_rows"] == 15383 + 16099 + answers
    texts, labels = test_split
    values = [o.value for o in with_spans.score(texts)]
    assert card["test_roc_auc"] == pytest.approx(roc_auc_score(labels, values), abs=1e-4)
    assert "toxicspans/raw/annotations.csv" in card["data_sha256"]
