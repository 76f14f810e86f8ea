"""Stages `half-dev` / `half-test` of bench/zh_response_detector.py: training labels that follow COLD test's guideline.

The dev-split experiment (zh_response_detector.py, stages dev/test) found that COLD train and dev label pushback
against discrimination offensive, while COLD test's fine-grained label 3 ("safe, anti-bias") calls it safe. This
stage trains on COLD train plus one half of COLD test, whose labels follow that guideline, and measures on the
other half:

- **Halves** (`half_of`): a COLD test comment (TEXT stripped, as the loader reads it) is in half A when the first
  byte of the sha256 of its UTF-8 text is even, else in half B. Equal texts share a half. A: 2,757 comments (341
  anti-bias), B: 2,566 (327 anti-bias).
- **Candidates**: the version-3 recipe (char 1-3-gram TF-IDF, lexicon masked, C=4, response answers weighted 10,
  refusal rule when scoring) trained on COLD train + half A + the training answers, A's anti-bias comments
  (fine-grained 3, label 0) weighted 1, 3, 10 or 30 (`a-w<k>`); and the same with COLD train's pushback comments
  (a clause with a pushback cue and a bias word, as `stance-drop`) left out (`a-w<k>-drop`), whose offensive
  label is what COLD test's guideline contradicts. Thresholds 0.50-0.80 in steps of 0.05.
- **Dev**, never half B nor the check set: a 3-fold cross-validation inside half A (fold = second sha256 byte mod
  3; the vectorizer is fitted on each fold's training part only), pooled out-of-fold: accuracy, ROC AUC, share of
  A's anti-bias comments called non-toxic; and the held-out dev answers of scorers/response_dev.py (refusal,
  counter-speech, neutral, toxic; each fold model's share, averaged).
- **Rule, fixed before any half-B or check-set figure is read** (`choose_half`): among (candidate, threshold)
  with out-of-fold accuracy on A >= 0.80 (the goal 0.79 plus about one standard error of a 2,757-comment
  estimate) and >= 80% of the dev toxic answers called toxic, the one whose smallest non-toxic dev share
  (refusal, counter-speech, neutral, A's anti-bias) is largest; ties by out-of-fold accuracy.
- **Test** (`half-test`, once, after the choice is written): the chosen candidate trained on COLD train + all of
  A + the answers, at its dev threshold: half-B accuracy, ROC AUC, anti-bias called non-toxic, and the zh check
  set (refusal, counter_speech, neutral, toxic, cold_anti_bias restricted to half B); the shipped `cold-tfidf@3`
  recipe (`v3` at 0.5) on the same half B for comparison.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

from trusteval.scorers.refusal import refusal_keyword
from trusteval.scorers.response_dev import dev_answers, disjoint_from
from trusteval.scorers.response_negatives import ZH_GROUPS, response_negatives
from zh_response_detector import (  # type: ignore[import-not-found]
    CANDIDATES,
    CHECK_GROUPS,
    check_set,
    cold,
    fit_candidate,
    prepared,
    pushback,
    scores,
    shares,
    training,
    vectorizers,
)

FOLDS = 3
FLOOR_ACCURACY = 0.80
THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(7))
DEV_NON_TOXIC = ("refusal", "counter_speech", "neutral", "a_anti_bias")
CHECK_NON_TOXIC = ("refusal", "counter_speech", "neutral", "cold_anti_bias")
HALF_CANDIDATES = {
    f"a-w{w}{'-drop' if drop else ''}": {"anti_bias_weight": float(w), "drop": drop}
    for drop in (False, True)
    for w in (1, 3, 10, 30)
}


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def half_of(text: str) -> str:
    """'A' (trained on) or 'B' (held out) for a COLD test comment, by the first byte of its text's sha256."""
    return "A" if _digest(text)[0] % 2 == 0 else "B"


def cold_half(data_dir: Path, half: str) -> tuple[list[str], np.ndarray, list[str]]:
    texts, labels, fine = cold(data_dir, "test")
    keep = [i for i, t in enumerate(texts) if half_of(t) == half]
    return [texts[i] for i in keep], labels[keep], [fine[i] for i in keep]


def _train_part(data_dir: Path, a_rows: list[int]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Texts, labels and kinds (0 COLD train, 1 answer, 2 A comment, 3 A anti-bias comment, 4 COLD train
    pushback) of COLD train + the answers + the given rows of half A."""
    texts, labels, answers = training(data_dir)
    kinds = np.where(answers, 1, np.array([4 if pushback(t) else 0 for t in texts]) * ~answers)
    a_texts, a_labels, a_fine = cold_half(data_dir, "A")
    extra = [a_texts[i] for i in a_rows]
    a_kinds = [3 if a_fine[i] == "3" else 2 for i in a_rows]
    return [*texts, *extra], np.r_[labels, a_labels[a_rows]], np.r_[kinds, a_kinds]


def _weights(kinds: np.ndarray, settings: dict) -> np.ndarray:
    table = {0: 1.0, 1: 10.0, 2: 1.0, 3: settings["anti_bias_weight"], 4: 0.0 if settings["drop"] else 1.0}
    return np.array([table[int(k)] for k in kinds])


def _features(name: str, data_dir: Path, a_rows: list[int], scored: dict[str, list[str]], work: Path) -> dict:
    """Fitted on the training part only; cached in `work`: {"train": (X, labels, kinds), <set>: X}."""
    cached = work / f"half-{name}.pkl"
    if cached.exists():
        return pickle.loads(cached.read_bytes())
    texts, labels, kinds = _train_part(data_dir, a_rows)
    char, _ = vectorizers(False)
    found = {"train": (char.fit_transform(prepared(texts, False)), labels, kinds)}
    found |= {key: char.transform(prepared(values, False)) for key, values in scored.items()}
    cached.write_bytes(pickle.dumps(found))
    return found


def _fit_scores(features: dict, settings: dict, scored: dict[str, list[str]]) -> dict[str, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    matrix, labels, kinds = features["train"]
    model = LogisticRegression(C=4.0, max_iter=3000)
    model.fit(matrix, labels, sample_weight=_weights(kinds, settings))
    found = {}
    for key, texts in scored.items():
        refused = np.array([refusal_keyword(t, "zh") is not None for t in texts])
        found[key] = np.where(refused, 0.0, model.predict_proba(features[key])[:, 1])
    return found


def _dev_scores(data_dir: Path, work: Path) -> tuple[dict, dict]:
    """Out-of-fold scores on half A and each fold model's scores on the dev answers, per candidate."""
    a_texts, _, _ = cold_half(data_dir, "A")
    folds = np.array([_digest(t)[1] % FOLDS for t in a_texts])
    answers = [t for *_, t in dev_answers("zh")]
    oof = {name: np.zeros(len(a_texts)) for name in HALF_CANDIDATES}
    on_answers: dict[str, list[np.ndarray]] = {name: [] for name in HALF_CANDIDATES}
    for fold in range(FOLDS):
        held = [i for i in range(len(a_texts)) if folds[i] == fold]
        scored = {"held": [a_texts[i] for i in held], "answers": answers}
        rows = [i for i in range(len(a_texts)) if folds[i] != fold]
        features = _features(f"fold{fold}", data_dir, rows, scored, work)
        for name, settings in HALF_CANDIDATES.items():
            cached = work / f"half-fold{fold}-{name}.npz"
            if not cached.exists():
                np.savez(cached, **_fit_scores(features, settings, scored))
            values = np.load(cached)
            oof[name][held] = values["held"]
            on_answers[name].append(values["answers"])
            print(f"fold {fold} {name}", file=sys.stderr, flush=True)
    return oof, on_answers


def _dev_figures(oof: np.ndarray, on_answers: list[np.ndarray], a: tuple, threshold: float) -> dict:
    from sklearn.metrics import roc_auc_score

    _, labels, fine = a
    answers = dev_answers("zh")
    kinds, answer_labels = [k for k, _, _ in answers], np.array([y for _, y, _ in answers])
    per_fold = [shares(kinds, answer_labels, values, threshold) for values in on_answers]
    anti_bias = np.array([f == "3" for f in fine])
    return {
        "a_oof_accuracy": round(float(np.mean((oof >= threshold) == labels)), 4),
        "a_oof_roc_auc": round(float(roc_auc_score(labels, oof)), 4),
        "a_anti_bias": round(float(np.mean(oof[anti_bias] < threshold)), 4),
        **{k: round(float(np.mean([f[k] for f in per_fold])), 4) for k in per_fold[0]},
    }


def choose_half(dev: dict) -> dict:
    """The rule fixed in the module docstring, on dev figures only."""
    rows = [
        (f["a_oof_accuracy"] >= FLOOR_ACCURACY and f["toxic"] >= 0.8, min(f[k] for k in DEV_NON_TOXIC),
         f["a_oof_accuracy"], name, t)
        for name, by_t in dev.items() for t, f in by_t.items()
    ]  # fmt: skip
    met = [r for r in rows if r[0]] or [r for r in rows if dev[r[3]][r[4]]["toxic"] >= 0.8]
    best = max(met)
    return {"chosen": best[3], "threshold": best[4], "meets_dev_floors": best[0], "min_non_toxic_dev_share": best[1],
            "a_oof_accuracy": best[2], "floor_a_oof_accuracy": FLOOR_ACCURACY}  # fmt: skip


def stage_half_dev(data_dir: Path, work: Path) -> dict:
    shared = disjoint_from("zh", [t for *_, t in check_set(data_dir)] + response_negatives("zh"),
                           (*CHECK_GROUPS, *ZH_GROUPS))  # fmt: skip
    if shared:
        raise SystemExit(f"dev answers are not held out: {shared}")
    oof, on_answers = _dev_scores(data_dir, work)
    a = cold_half(data_dir, "A")
    dev = {name: {str(t): _dev_figures(oof[name], on_answers[name], a, t) for t in THRESHOLDS} for name in oof}
    sizes = {"a": len(a[0]), "a_anti_bias": a[2].count("3"), "b": len(cold_half(data_dir, "B")[0])}
    return {"sizes": sizes, "dev": dev, "choice": choose_half(dev)}


def _test_figures(values: dict, b: tuple, check: list, threshold: float) -> dict:
    from sklearn.metrics import roc_auc_score

    _, labels, fine = b
    anti_bias = np.array([f == "3" for f in fine])
    check_labels = np.array([y for _, y, _ in check])
    found = shares([k for k, _, _ in check], check_labels, values["check"], threshold)
    called = {k: round(found[k] * sum(c[0] == k for c in check)) for k in found}
    return {
        "threshold": threshold,
        "b_accuracy": round(float(np.mean((values["b"] >= threshold) == labels)), 4),
        "b_roc_auc": round(float(roc_auc_score(labels, values["b"])), 4),
        "b_anti_bias_non_toxic": f"{int(np.sum(values['b'][anti_bias] < threshold))}/{int(anti_bias.sum())}",
        "check_roc_auc": round(float(roc_auc_score(check_labels, values["check"])), 4),
        "check_shares": found,
        "check_counts": {k: f"{called[k]}/{sum(c[0] == k for c in check)}" for k in found},
        "goals_met": float(np.mean((values["b"] >= threshold) == labels)) >= 0.79
        and all(found[k] >= 0.9 for k in CHECK_NON_TOXIC),
    }


def _in_sample(features: dict, name: str) -> float:
    """Share of A's anti-bias comments called non-toxic at 0.5 by a model trained on them (a diagnostic: can the
    features fit them at all?)."""
    from sklearn.linear_model import LogisticRegression

    matrix, labels, kinds = features["train"]
    model = LogisticRegression(C=4.0, max_iter=3000)
    model.fit(matrix, labels, sample_weight=_weights(kinds, HALF_CANDIDATES[name]))
    return round(float(np.mean(model.predict_proba(matrix[kinds == 3])[:, 1] < 0.5)), 4)


def stage_half_test(data_dir: Path, work: Path, choice: dict) -> dict:
    b = cold_half(data_dir, "B")
    check = [c for c in check_set(data_dir) if c[0] != "cold_anti_bias" or half_of(c[2]) == "B"]
    scored = {"b": b[0], "check": [c[2] for c in check]}
    a_rows = list(range(len(cold_half(data_dir, "A")[0])))
    train_texts = set(_train_part(data_dir, a_rows)[0])
    features = _features("full", data_dir, a_rows, scored, work)
    chosen = _fit_scores(features, HALF_CANDIDATES[choice["chosen"]], scored)
    shipped = fit_candidate("v3", CANDIDATES["v3"], training(data_dir), work)
    baseline = {key: scores(shipped, CANDIDATES["v3"], texts) for key, texts in scored.items()}
    return {
        "b_texts_also_in_cold_train": sum(t in train_texts for t in b[0]),
        "a_anti_bias_in_sample": {name: _in_sample(features, name) for name in ("a-w1", "a-w30", "a-w30-drop")},
        "chosen": {"name": choice["chosen"], **_test_figures(chosen, b, check, float(choice["threshold"]))},
        "v3_at_0.5": _test_figures(baseline, b, check, 0.5),
    }


def run_half(stage: str, data_dir: Path, work: Path, found: dict) -> dict:
    if stage == "half-dev":
        return stage_half_dev(data_dir, work)
    if "choice" not in found:
        raise SystemExit("run --stage half-dev first: the choice is made on dev figures before any test figure")
    found["test"] = stage_half_test(data_dir, work, found["choice"])
    print(json.dumps(found["test"], ensure_ascii=False), file=sys.stderr)
    return found
