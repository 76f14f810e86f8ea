"""`cold-tfidf`: the offline Chinese offensive-language detector, trained on COLD train, tested on COLD test.

The offline substitute for thu-coai/roberta-base-cold (published accuracy about 0.81 on COLD test): character
1-3-gram TF-IDF with logistic regression, about 0.80 accuracy here. Trained on first use (seconds) and cached;
its test accuracy, macro-F1 and ROC AUC travel with every score it makes (see `describe`).
Group terms masked (default, `groups=masked`, our choice, issue 10): SPEC.md's Chinese group terms (黑人, 女性,
河南人, ...) become one placeholder in training and scoring: COLD test accuracy 0.798, identity gap 0.266 -> 0.000
on the built-in neutral sentences (bench/identity_gap.py). `groups=raw` (`cold-tfidf-raw`) is the unmasked one.
Spec: `cold-tfidf?threshold=0.5&groups=masked|raw`.
"""

from __future__ import annotations

from functools import partial
from typing import Literal

from pydantic import Field

from trusteval.data.cold import read_split
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.options import PluginOptions, read_spec_options
from trusteval.scorers.base import ScorerContext
from trusteval.scorers.tfidf_detector import DetectorRecipe, TfidfDetectorScorer, load_or_train
from trusteval.specs import Spec


def _cold_training_data(context: DataContext):
    train, train_sha = read_split("train", context)
    test, test_sha = read_split("test", context)
    return (
        [p.text for p in train],
        [int(p.label or 0) for p in train],
        [p.text for p in test],
        [int(p.label or 0) for p in test],
        {"cold/train.csv": train_sha, "cold/test.csv": test_sha},
    )


GROUP_MODES = ("masked", "raw")


class Options(PluginOptions):
    threshold: float = Field(0.5, ge=0, le=1, description="probability at or above which a text counts as toxic")
    groups: Literal["masked", "raw"] = Field(
        "masked", description="masked: group words are masked before training (a separate detector); raw: kept"
    )


def recipe(context: DataContext, groups: str = "masked") -> DetectorRecipe:
    if groups not in GROUP_MODES:
        raise UsageError(f"cold-tfidf: groups must be one of {', '.join(GROUP_MODES)}, not '{groups}'")
    return DetectorRecipe(
        name="cold-tfidf" + ("-raw" if groups == "raw" else ""),
        version="2",
        mask_groups="zh" if groups == "masked" else None,
        languages=frozenset({"zh"}),
        analyzer="char",
        ngram_range=(1, 3),
        C=4.0,
        load_data=partial(_cold_training_data, context),
    )


def create(spec: Spec, context: ScorerContext) -> TfidfDetectorScorer:
    options = read_spec_options(Options, spec)
    data = DataContext(
        data_dir=context.data_dir, cache_dir=context.cache_dir / "data", allow_unpinned=context.allow_unpinned_data
    )
    detector_recipe = recipe(data, options.groups)
    detector = load_or_train(detector_recipe, context.cache_dir, allow_unpinned=context.allow_unpinned_data)
    return TfidfDetectorScorer(detector_recipe, detector, options.threshold)
