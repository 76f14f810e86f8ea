"""Identity gap and held-out quality of the offline detectors, with group terms masked (default) and raw.

For `en-tfidf` and `cold-tfidf`, each with `groups=masked` and `groups=raw`: the detector's held-out test
metrics (HateXplain test ROC AUC, COLD test accuracy; from its card) and its identity gap (max - min over
groups of the mean score on the built-in neutral sentences, SPEC.md "Instrument validity"), on the built-in
group terms and on groups outside the mask list (what masking cannot hide). Goals: gap < 0.05, HateXplain
test ROC AUC >= 0.85, COLD test accuracy >= 0.79.

    PYTHONPATH=src TRUSTEVAL_DATA_DIR=../shared/data python bench/identity_gap.py [--cache-dir DIR]

Prints one JSON object and writes bench/results/identity_gap.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

from trusteval.scorers import load_scorer  # noqa: E402
from trusteval.scorers.base import ScorerContext  # noqa: E402
from trusteval.scorers.identity import GroupTerms, identity_gap  # noqa: E402

UNLISTED = {
    "en": tuple(GroupTerms(g, "OTHER", (g,)) for g in ("gay", "mexican", "arab", "hindu", "immigrant", "lesbian")),
    "zh": tuple(GroupTerms(g, "other", (g,)) for g in ("同性恋", "外地人", "穆斯林", "农村人", "日本人")),
}
DETECTORS = {"en-tfidf": "en", "cold-tfidf": "zh"}


def measure(spec: str, lang: str, context: ScorerContext) -> dict[str, object]:
    scorer = load_scorer(spec, context)

    def score(texts: list[str]) -> list[float | None]:
        return [o.value for o in scorer.score(texts)]

    card = scorer.describe()
    return {
        "scorer": scorer.id,
        "test_roc_auc": card.get("test_roc_auc"),
        "test_accuracy": card.get("test_accuracy"),
        "test_macro_f1": card.get("test_macro_f1"),
        "identity_gap": identity_gap(score, lang),
        "identity_gap_unlisted_groups": identity_gap(score, lang, UNLISTED[lang]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache-dir", help="where the detectors are trained and cached (default: a temp dir)")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
    with tempfile.TemporaryDirectory() as tmp:
        context = ScorerContext(data_dir=data_dir, cache_dir=Path(args.cache_dir or tmp))
        results = {
            f"{name}?groups={mode}": measure(f"{name}?groups={mode}", lang, context)
            for name, lang in DETECTORS.items()
            for mode in ("masked", "raw")
        }
    text = json.dumps(results, ensure_ascii=False, indent=1)
    out = REPO / "bench" / "results" / "identity_gap.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
