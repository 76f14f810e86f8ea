"""A trained-offline toxicity detector: character n-gram TF-IDF + logistic regression.

It is trained on first use from labelled data in the data folder, evaluated on a held-out split, and cached
without pickle (vocabulary, idf and weights in an .npz, described by a JSON card holding the file's sha256,
the training data hashes and the held-out metrics). A cache whose checksum does not match is retrained,
never loaded. The concrete detectors (Chinese from COLD, English from HateXplain) only say which data and
which n-grams to use.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trusteval.data.sources import sha256_file
from trusteval.scorers.base import Outcome

TrainingData = tuple[list[str], list[int], list[str], list[int], dict[str, str]]


@dataclass(frozen=True)
class DetectorRecipe:
    """How to build one detector: its name and version, its n-grams, and where its data comes from."""

    name: str
    version: str
    languages: frozenset[str]
    analyzer: str
    ngram_range: tuple[int, int]
    C: float
    load_data: Callable[[], TrainingData]
    min_df: int = 2
    max_features: int | None = None
    lowercase: bool = True


@dataclass
class TrainedDetector:
    vectorizer: Any
    coef: np.ndarray
    intercept: float
    card: dict[str, Any]

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        features = self.vectorizer.transform(list(texts))
        logits = features @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-logits))


class TfidfDetectorScorer:
    kind = "toxicity"
    batch_size = 4096

    def __init__(self, recipe: DetectorRecipe, detector: TrainedDetector, threshold: float) -> None:
        self.recipe = recipe
        self.detector = detector
        self.threshold = threshold
        self.languages = recipe.languages
        self.id = f"{recipe.name}@{recipe.version}"

    def score(self, texts: Sequence[str]) -> list[Outcome]:
        return [Outcome(float(p)) for p in self.detector.predict(texts)]

    def describe(self) -> dict[str, Any]:
        return {"scorer": self.id, "threshold": self.threshold, **self.detector.card}


def _make_vectorizer(recipe: DetectorRecipe, vocabulary: dict[str, int] | None = None):
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        analyzer=recipe.analyzer,
        ngram_range=recipe.ngram_range,
        min_df=recipe.min_df,
        max_features=recipe.max_features,
        sublinear_tf=True,
        lowercase=recipe.lowercase,
        vocabulary=vocabulary,
        dtype=np.float32,
    )


def train(recipe: DetectorRecipe) -> TrainedDetector:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    train_texts, train_labels, test_texts, test_labels, data_hashes = recipe.load_data()
    vectorizer = _make_vectorizer(recipe)
    model = LogisticRegression(C=recipe.C, max_iter=3000)
    model.fit(vectorizer.fit_transform(train_texts), train_labels)
    detector = TrainedDetector(vectorizer, model.coef_[0].astype(np.float64), float(model.intercept_[0]), {})
    probabilities = detector.predict(test_texts)
    predicted = (probabilities >= 0.5).astype(int)
    detector.card = {
        "detector": recipe.name,
        "version": recipe.version,
        "features": f"{recipe.analyzer} {recipe.ngram_range[0]}-{recipe.ngram_range[1]}-grams, TF-IDF",
        "model": f"logistic regression, C={recipe.C}",
        "training_rows": len(train_texts),
        "test_rows": len(test_texts),
        "test_accuracy": round(float(accuracy_score(test_labels, predicted)), 4),
        "test_macro_f1": round(float(f1_score(test_labels, predicted, average="macro")), 4),
        "test_roc_auc": round(float(roc_auc_score(test_labels, probabilities)), 4),
        "data_sha256": data_hashes,
    }
    return detector


def save(detector: TrainedDetector, folder: Path) -> None:
    """Write weights then card atomically; the card's checksum is what makes the weights trusted."""
    folder.mkdir(parents=True, exist_ok=True)
    vocabulary = detector.vectorizer.vocabulary_
    terms = np.empty(len(vocabulary), dtype=object)
    for term, index in vocabulary.items():
        terms[index] = term
    weights = folder / "weights.npz"
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".npz")
    os.close(fd)
    np.savez(
        tmp,
        terms=terms.astype(str),
        idf=detector.vectorizer.idf_,
        coef=detector.coef,
        intercept=np.array([detector.intercept]),
    )
    os.replace(tmp, weights)
    card = {**detector.card, "weights_sha256": sha256_file(weights)}
    _write_json_atomic(folder / "card.json", card)
    detector.card = card


def load(recipe: DetectorRecipe, folder: Path) -> TrainedDetector | None:
    """The cached detector, or None when it is missing, corrupted or from another version."""
    card_path, weights = folder / "card.json", folder / "weights.npz"
    try:
        card = json.loads(card_path.read_text("utf-8"))
        if card.get("version") != recipe.version or sha256_file(weights) != card.get("weights_sha256"):
            return None
        with np.load(weights, allow_pickle=False) as arrays:
            terms, idf = arrays["terms"], arrays["idf"]
            coef, intercept = arrays["coef"], float(arrays["intercept"][0])
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None
    vectorizer = _make_vectorizer(recipe, vocabulary={str(t): i for i, t in enumerate(terms)})
    vectorizer.idf_ = idf
    return TrainedDetector(vectorizer, coef, intercept, card)


def load_or_train(recipe: DetectorRecipe, cache_dir: Path) -> TrainedDetector:
    folder = cache_dir / "detectors" / f"{recipe.name}-{recipe.version}"
    detector = load(recipe, folder)
    if detector is None:
        detector = train(recipe)
        save(detector, folder)
    return detector


def _write_json_atomic(path: Path, value: dict[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=2, ensure_ascii=False)
    os.replace(tmp, path)
