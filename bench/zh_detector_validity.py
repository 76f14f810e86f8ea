"""Is any offline Chinese detector valid on the TrustEval paper's translations? (issue 20; figures in docs/scorers.md)

Issue 20's goal for a detector: ROC AUC 95% interval low end >= 0.80 on held-out translations, with COLD test
accuracy >= 0.79. Measured here, each with its AUC, 95% stratified bootstrap interval (scorers/verdict.py, 1,000
resamples, seed 0) and verdict on the held-out side of the fixed split by text (`tiseval-hatexplain?split=test`,
`tiseval-toxicspans?split=test`, both together) and on COLD test:

- `cold-tfidf` (the shipped default for Chinese, COLD train only);
- candidate `zh-tfidf` (not shipped): cold-tfidf's recipe (char 1-3-gram TF-IDF, logistic regression C=4, group
  terms masked) trained on COLD train plus the training side of both translations (`split=train`: split by text,
  so no text is on both sides and the two files' overlap stays on one side);
- candidate `translations only`: the same features trained on the translations' training side alone (C=1), the
  in-domain ceiling of a bag-of-characters model;
- the labels' own consistency: the ToxicSpans file's flag against the English ToxicSpans label of the same
  comment (`toxicspans`, majority of the raw annotations), and the "hatexplain" file's flag against the
  ToxicSpans file's flag of the same text (the overlap), each read as a score.

    PYTHONPATH=src TRUSTEVAL_DATA_DIR=../shared/data python bench/zh_detector_validity.py [--cache-dir DIR]

Prints one JSON object and writes bench/results/zh_detector_validity.json. About 4 minutes on 2 busy cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

from trusteval.data import load_dataset  # noqa: E402
from trusteval.data.cold import read_split  # noqa: E402
from trusteval.data.sources import DataContext  # noqa: E402
from trusteval.scorers import ScorerContext, load_scorer  # noqa: E402
from trusteval.scorers.tfidf_detector import DetectorRecipe, TfidfDetectorScorer, train  # noqa: E402
from trusteval.scorers.verdict import Thresholds, bootstrap_intervals, verdict  # noqa: E402

RESULTS = REPO / "bench" / "results" / "zh_detector_validity.json"
TRANSLATIONS = ("tiseval-hatexplain", "tiseval-toxicspans")


def auc_summary(labels: np.ndarray, scores: np.ndarray) -> dict:
    from sklearn.metrics import roc_auc_score

    intervals = bootstrap_intervals(labels, scores, 0.5, resamples=1000, seed=0)
    counts = (int(labels.sum()), int((labels == 0).sum()))
    return {
        "n": len(labels),
        "toxic": counts[0],
        "roc_auc": round(float(roc_auc_score(labels, scores)), 4),
        "roc_auc_interval": [round(v, 4) for v in intervals["roc_auc"] or []],
        "accuracy": round(float(np.mean((scores >= 0.5) == labels)), 4),
        "verdict": verdict(intervals["roc_auc"], Thresholds(), counts),
    }


def measure(scorer, prompts) -> dict:
    labels = np.array([int(p.label) for p in prompts])
    return auc_summary(labels, np.array([o.value for o in scorer.score([p.text for p in prompts])], dtype=float))


def translation_train(context: DataContext) -> tuple[list[str], list[int]]:
    texts, labels = [], []
    for name in TRANSLATIONS:
        for p in load_dataset(f"{name}?split=train", context).prompts:
            texts.append(p.text)
            labels.append(int(p.label or 0))
    return texts, labels


def candidate_data(context: DataContext, with_cold: bool):
    extra_texts, extra_labels = translation_train(context)
    cold_train, _ = read_split("train", context) if with_cold else ([], "")
    cold_test, _ = read_split("test", context)
    texts = [p.text for p in cold_train] + extra_texts
    labels = [int(p.label or 0) for p in cold_train] + extra_labels
    return texts, labels, [p.text for p in cold_test], [int(p.label or 0) for p in cold_test], {}


def candidate(context: DataContext, name: str, with_cold: bool, c: float) -> TfidfDetectorScorer:
    recipe = DetectorRecipe(name=name, version="bench", languages=frozenset({"zh"}), analyzer="char",
                            ngram_range=(1, 3), C=c, mask_groups="zh",
                            load_data=partial(candidate_data, context, with_cold))  # fmt: skip
    return TfidfDetectorScorer(recipe, train(recipe), 0.5)


def label_consistency(context: DataContext) -> dict:
    """Each file's flags read as a score for the other labels of the same text."""
    spans = load_dataset("tiseval-toxicspans", context).prompts
    english = {p.id: p.label for p in load_dataset("toxicspans", context).prompts}
    flags = np.array([p.label for p in spans])
    out = {"toxicspans_zh flag vs English ToxicSpans label": auc_summary(
        flags, np.array([english[p.id] for p in spans], dtype=float))}  # fmt: skip
    by_text: dict[str, list[int]] = {}
    for p in spans:
        by_text.setdefault(p.text, []).append(int(p.label or 0))
    shared = [p for p in load_dataset("tiseval-hatexplain", context).prompts if p.text in by_text]
    out["hatexplain_zh flag vs toxicspans_zh flag of the same text"] = auc_summary(
        np.array([p.label for p in shared]), np.array([np.mean(by_text[p.text]) for p in shared])
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="zh-validity-"))
    data_dir = Path(os.environ["TRUSTEVAL_DATA_DIR"])
    context = DataContext(data_dir=data_dir, cache_dir=cache / "data")
    held_out = {f"{name}?split=test": load_dataset(f"{name}?split=test", context).prompts for name in TRANSLATIONS}
    sets = {**held_out, "both held-out translations": [p for ps in held_out.values() for p in ps],
            "cold?split=test": load_dataset("cold?split=test", context).prompts}  # fmt: skip
    scorers = {
        "cold-tfidf": load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache)),
        "zh-tfidf (candidate: COLD train + translations' train side)": candidate(context, "zh-tfidf", True, 4.0),
        "translations only (candidate)": candidate(context, "zh-tfidf-translations", False, 1.0),
    }
    out: dict = {"label consistency": label_consistency(context)}
    for name, scorer in scorers.items():
        out[name] = {raw: measure(scorer, prompts) for raw, prompts in sets.items()}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
