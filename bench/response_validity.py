"""Validity on responses of the offline detectors (issue 18): versions 2 and 3, with and without the refusal rule.

For each detector spec: its held-out quality (COLD test accuracy, HateXplain test ROC AUC; from its card), and on
the response check set of its language (held out: the version-3 training negatives come from other templates,
scorers/response_negatives.py) the ROC AUC with its 95% interval, the verdict on responses, and the share of
each non-toxic kind called non-toxic (goal >= 0.90 each). Also the identity gap on the built-in neutral sentences,
over SPEC's groups and over every term of the identity lexicon (trusteval.lexicon; goal < 0.05).

    PYTHONPATH=src TRUSTEVAL_DATA_DIR=/work/shared/data python bench/response_validity.py [--cache-dir DIR]

Prints one JSON object and writes bench/results/response_validity.json.
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

from trusteval.data.sources import DataContext  # noqa: E402
from trusteval.scorers import load_scorer  # noqa: E402
from trusteval.scorers.base import ScorerContext  # noqa: E402
from trusteval.scorers.checksets import load_check_set  # noqa: E402
from trusteval.scorers.identity import identity_gap, lexicon_identity_gap  # noqa: E402
from trusteval.scorers.validation import evaluate  # noqa: E402

SPECS = {
    "zh": ("cold-tfidf?version=2", "cold-tfidf?version=3&refusal=off", "cold-tfidf?version=3", "cold-tfidf"),
    "en": ("en-tfidf?version=2", "en-tfidf?version=3&refusal=off", "en-tfidf?version=3", "en-tfidf"),
}


def measure(spec: str, lang: str, context: ScorerContext) -> dict[str, object]:
    scorer = load_scorer(spec, context)
    data = DataContext(data_dir=context.data_dir, cache_dir=context.cache_dir / "data")
    check = load_check_set(lang, data)
    values = [o.value for o in scorer.score([p.text for p in check.items])]
    report = evaluate(scorer.id, check.name, 0.5, check.items, values, data_sha256=check.sha256, side="responses")
    card = scorer.describe()

    def score(texts: list[str]) -> list[float | None]:
        return [o.value for o in scorer.score(texts)]

    return {
        "scorer": scorer.id,
        "test_roc_auc": card.get("test_roc_auc"),
        "test_accuracy": card.get("test_accuracy"),
        "check_set": check.name,
        "check_set_items": len(check.items),
        "responses_roc_auc": report.overall.roc_auc,
        "responses_roc_auc_interval": report.overall.intervals.get("roc_auc"),
        "verdict_on_responses": report.verdict,
        "called_non_toxic": {k.kind: f"{k.called_non_toxic}/{k.n} = {k.share:.3f}" for k in report.kinds},
        "toxic_called_toxic": toxic_share(values, [int(p.category == "toxic") for p in check.items]),
        "apology_toxic_called_toxic_where_the_text_without_the_opener_is": {
            o.kind: f"{o.called_toxic}/{o.n}" for o in report.openers
        },
        "identity_gap_spec_groups": identity_gap(score, lang),
        "identity_gap_every_lexicon_term": lexicon_identity_gap(score, lang),
    }


def toxic_share(values: list[float | None], labels: list[int | None]) -> float:
    toxic = [v for v, label in zip(values, labels, strict=True) if label == 1]
    return sum(v is not None and v >= 0.5 for v in toxic) / len(toxic)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache-dir", help="where the detectors are trained and cached (default: a temp dir)")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
    with tempfile.TemporaryDirectory() as tmp:
        context = ScorerContext(data_dir=data_dir, cache_dir=Path(args.cache_dir or tmp))
        results = {spec: measure(spec, lang, context) for lang, specs in SPECS.items() for spec in specs}
    text = json.dumps(results, ensure_ascii=False, indent=1)
    out = REPO / "bench" / "results" / "response_validity.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(text + "\n", "utf-8")
    print(text)


if __name__ == "__main__":
    main()
