"""The offline COLD detector: trained from COLD train, its reported test metrics checked independently."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from trusteval.data import load_dataset
from trusteval.data.sources import DataContext
from trusteval.scorers import ScorerContext, load_scorer


@pytest.fixture(scope="module")
def cache(cache_dir):
    return cache_dir


@pytest.fixture(scope="module")
def scorer(cache, data_dir):
    return load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache))


@pytest.mark.slow
def test_reaches_about_080_accuracy_on_cold_test(scorer, data_dir):
    prompts = load_dataset("cold", DataContext(data_dir=data_dir)).prompts
    values = np.array([o.value for o in scorer.score([p.text for p in prompts])])
    labels = np.array([p.label for p in prompts])
    accuracy = accuracy_score(labels, values >= 0.5)
    assert accuracy >= 0.78
    card = scorer.describe()
    assert card["test_accuracy"] == pytest.approx(accuracy, abs=1e-4)
    assert card["test_macro_f1"] == pytest.approx(f1_score(labels, values >= 0.5, average="macro"), abs=1e-4)
    assert scorer.languages == frozenset({"zh"})


@pytest.mark.slow
def test_cached_detector_gives_identical_scores(scorer, cache, data_dir):
    texts = ["你这个傻逼", "今天天气很好", "黑人都是垃圾", ""]
    again = load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache))
    assert [o.value for o in again.score(texts)] == [o.value for o in scorer.score(texts)]
    assert again.id == scorer.id == "cold-tfidf@4"


@pytest.mark.slow
def test_corrupted_cache_is_detected_and_retrained(cache, data_dir):
    weights = next(cache.glob("detectors/cold-tfidf-4/weights.npz"))
    original = weights.read_bytes()
    weights.write_bytes(original[:-100] + b"\x00" * 100)
    rebuilt = load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache))
    assert rebuilt.score(["你这个傻逼"])[0].value == pytest.approx(0.80, abs=0.1)
    assert weights.read_bytes() != original[:-100] + b"\x00" * 100


@pytest.mark.slow
def test_threshold_option(cache, data_dir):
    scorer = load_scorer("cold-tfidf?threshold=0.7", ScorerContext(data_dir=data_dir, cache_dir=cache))
    assert scorer.threshold == 0.7


ODD_TEXTS = [
    "",
    "  ",
    "ABC  abc\t\n x",
    "你 好\u3000吗",
    "a",
    "İstanbul ß",
    "a\x00b\x00",
    "\ud83d\ude00x 😀",
    "\n",
    "黑人" * 200,
]


@pytest.mark.slow
def test_fast_char_transform_equals_sklearn(cache, data_dir):
    """The cached detector scores through PackedCharNgrams; sklearn's own transform (built on demand from the
    stored vocabulary and idf) gives the same matrix."""
    from trusteval.scorers.tfidf_fast import PackedCharNgrams

    loaded = load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache)).detector
    prompts = load_dataset("cold", DataContext(data_dir=data_dir)).prompts[:300]
    texts = [p.text for p in prompts] + ODD_TEXTS
    [fast] = loaded.fast_transforms
    assert isinstance(fast, PackedCharNgrams)
    got, expected = fast.transform(texts), loaded.vectorizers[0].transform(texts)
    assert got.shape == expected.shape and got.nnz == expected.nnz
    assert abs(got - expected).max() < 1e-6


@pytest.mark.slow
def test_packed_char_ngrams_equal_the_dictionary_transform_bit_for_bit(cache, data_dir):
    """PackedCharNgrams (numpy, no scipy) against FastCharNgrams (the vocabulary dictionary and scipy), which
    scored every run before: the same csr arrays, and the same probabilities to the last bit."""
    from trusteval.scorers.tfidf_fast import FastCharNgrams

    scorer = load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache))
    detector = scorer.detector
    texts = [p.text for p in load_dataset("cold", DataContext(data_dir=data_dir)).prompts]
    texts = scorer.recipe.prepare(texts + ODD_TEXTS)
    [packed] = detector.fast_transforms
    rows, reference = packed.rows(texts), FastCharNgrams(detector.vectorizers[0], lowercase=True).transform(texts)
    assert np.array_equal(rows.indptr, reference.indptr) and np.array_equal(rows.indices, reference.indices)
    assert rows.data.dtype == reference.data.dtype and np.array_equal(rows.data, reference.data)
    assert np.array_equal(rows.dot(detector.coef), reference @ detector.coef)
    packed_values = detector.predict(texts)
    detector.fast_transforms = [FastCharNgrams(detector.vectorizers[0], lowercase=True)]
    try:
        assert packed_values.tobytes() == detector.predict(texts).tobytes()
    finally:
        detector.fast_transforms = [packed]


def test_packed_char_ngrams_keep_the_vocabulary_of_the_stored_terms():
    """The stored vocabulary is `terms.tolist()`: numpy drops a term's trailing NULs but keeps inner ones, and
    where two stored terms become one, the dictionary transform (the last wins) is used instead."""
    from trusteval.scorers.tfidf_detector import FeatureBlock, StoredVectorizer
    from trusteval.scorers.tfidf_fast import FastCharNgrams, PackedCharNgrams

    def stored(terms: list[str]) -> StoredVectorizer:
        block = FeatureBlock("char", (1, 3))
        return StoredVectorizer(None, block, np.array(terms), np.linspace(1.0, 2.0, len(terms)))  # type: ignore[arg-type]

    vectorizer = stored(["a", "a\x00b", "b\x00", "ab", "\x00", "😀", "x y", "y"])
    assert vectorizer.vocabulary_ == {"a": 0, "a\x00b": 1, "b": 2, "ab": 3, "": 4, "😀": 5, "x y": 6, "y": 7}
    packed = PackedCharNgrams.build(vectorizer, lowercase=True)
    assert packed is not None
    texts = ["a\x00b", "AB ab", "x  y 😀", "", "b\x00"]
    expected = FastCharNgrams(vectorizer, lowercase=True).transform(texts)
    got = packed.rows(texts)
    assert np.array_equal(got.indptr, expected.indptr) and np.array_equal(got.indices, expected.indices)
    assert np.array_equal(got.data, expected.data)
    assert PackedCharNgrams.build(stored(["a", "a\x00"]), lowercase=True) is None
    assert PackedCharNgrams.build(stored(["abcd"]), lowercase=True) is None


@pytest.mark.slow
def test_loading_a_cached_detector_does_not_import_sklearn(scorer, cache, data_dir):
    """Importing sklearn (and the scipy.stats it pulls in) was most of a short run's fixed cost (issue 13); then
    scipy.sparse (0.1 s) and the vocabulary's dictionary (40 ms)."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from trusteval.scorers import ScorerContext, load_scorer; "
        f"context = ScorerContext(data_dir=Path({str(data_dir)!r}), cache_dir=Path({str(cache)!r})); "
        "s = load_scorer('cold-tfidf', context); "
        "values = [o.value for o in s.score(['你这个傻逼', '今天天气很好'])]; "
        "print(values, sorted(m for m in sys.modules if m.split('.')[0] in {'sklearn', 'pandas', 'scipy'})[:3], "
        "'vocabulary_' in vars(s.detector.vectorizers[0]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    expected = [o.value for o in scorer.score(["你这个傻逼", "今天天气很好"])]
    assert done.stdout.strip() == f"{expected} [] False"
