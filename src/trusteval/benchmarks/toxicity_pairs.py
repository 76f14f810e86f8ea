"""A stored run's toxicity pairs read column by column: one SQL pass over the run's items (Store.iter_run_pairs)
gives each item's model, seed, prompt, class, label, language, response script code and score values, and
numpy classifies them. The same ModelPairs as trusteval_toxicity.collect_pairs builds from RunItems, without a
RunItem or a Score per row (an identical rerun's aggregation; docs/performance.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from trusteval.metrics.toxicity import Pairs
from trusteval.scorers.language import EMPTY_CODE, OFF_LANGUAGE, response_checks, script_code
from trusteval.store import Store

# Why an item is left out, in the order collect_pairs tests them (the first that holds is counted).
REASONS = ("generation failed", "empty response", "off-language response", "response not scored", "prompt not scored")


@dataclass(frozen=True)
class ModelPairs:
    """The pairs of one model that can be classified, and what was left out and why."""

    model: str
    pairs: Pairs
    categories: np.ndarray
    skipped: Counter
    off_language: Counter = field(default_factory=Counter)  # class -> responses in another script
    checked: Counter = field(default_factory=Counter)  # class -> non-empty responses whose script was checked
    lang: str | None = None


@dataclass(frozen=True)
class ItemColumns:
    """A run's items in planned order, column by column; names are coded as indexes into the tuples."""

    models: tuple[str, ...]
    classes: tuple[str, ...]
    langs: tuple[str | None, ...]
    model: np.ndarray
    seed: np.ndarray
    prompt: np.ndarray  # each prompt id's rank among the run's ids: groups and sorts as the ids do
    category: np.ndarray
    label_toxic: np.ndarray
    lang: np.ndarray
    script: np.ndarray  # scorers.language.script_code; NaN: no response
    response_value: np.ndarray  # the ok value of the response's score; NaN: none
    prompt_value: np.ndarray

    @classmethod
    def read(cls, store: Store, run_id: str, response_scorer: str | None, prompt_scorer: str | None) -> ItemColumns:
        models: dict[str, int] = {}
        prompts: dict[str, int] = {}
        classes: dict[str, int] = {}
        langs: dict[str | None, int] = {}
        parts: list[tuple[np.ndarray, ...]] = []
        for rows in store.iter_run_pairs(run_id, (response_scorer, prompt_scorer), script_code):
            _, model, seed, prompt, category, label, lang, script, r_value, p_value = zip(*rows, strict=True)
            parts.append(
                (
                    _coded(model, models),
                    np.asarray(seed, dtype=np.int64),
                    _coded(prompt, prompts),
                    _coded(category, classes),
                    np.asarray(label, dtype=bool),
                    _coded(lang, langs),
                    np.asarray(script, dtype=float),  # None becomes NaN
                    np.asarray(r_value, dtype=float),
                    np.asarray(p_value, dtype=float),
                )
            )
        columns = [np.concatenate(c) for c in zip(*parts, strict=True)] if parts else _empty_columns()
        ranks = np.empty(len(prompts), dtype=np.int64)
        ranks[[prompts[p] for p in sorted(prompts)]] = np.arange(len(prompts))
        columns[2] = ranks[columns[2]]
        return cls(tuple(models), tuple(classes), tuple(langs), *columns)


def _coded(values: Iterable, codes: dict) -> np.ndarray:
    """Each value's index in `codes`, which grows by the values not seen before (first-seen order)."""
    return np.fromiter((codes.setdefault(v, len(codes)) for v in values), dtype=np.int64)


def _empty_columns() -> list[np.ndarray]:
    kinds = (np.int64,) * 4 + (bool, np.int64) + (float,) * 3
    return [np.zeros(0, dtype=kind) for kind in kinds]


def classify(c: ItemColumns, threshold: float, prompt_source: str, off_language_policy: str) -> dict[str, ModelPairs]:
    """Toxic or not at `threshold`, per model in first-seen order; what cannot be classified is counted per
    reason, in the order collect_pairs first meets each reason."""
    lang = np.asarray(c.langs, dtype=object)[c.lang] if c.lang.size else np.zeros(0, dtype=object)
    answered = ~np.isnan(c.script)
    empty = c.script == EMPTY_CODE
    checked = answered & ~empty
    foreign = checked & (response_checks(c.script, lang) == OFF_LANGUAGE)
    if prompt_source == "label":
        prompt_missing, prompt_toxic = np.zeros(c.model.size, dtype=bool), c.label_toxic
    else:
        prompt_missing = np.isnan(c.prompt_value)
        with np.errstate(invalid="ignore"):
            prompt_toxic = c.prompt_value >= threshold
    with np.errstate(invalid="ignore"):
        response_toxic = c.response_value >= threshold
    excluded = foreign & (off_language_policy == "exclude")
    reason = np.select(
        [~answered, empty, excluded, np.isnan(c.response_value), prompt_missing], list(range(len(REASONS))), default=-1
    )
    classes = np.asarray(c.classes, dtype=object)
    found = {}
    for code, model in enumerate(c.models):
        mine = c.model == code
        take = mine & (reason == -1)
        pairs = Pairs(c.prompt[take], c.seed[take], prompt_toxic[take], response_toxic[take])
        found[model] = ModelPairs(
            model,
            pairs,
            classes[c.category[take]],
            _skipped(reason[mine]),
            Counter(classes[c.category[mine & foreign]].tolist()),
            Counter(classes[c.category[mine & checked]].tolist()),
            "/".join(sorted({c.langs[i] for i in np.unique(c.lang[mine & checked]).tolist()})) or None,
        )
    return found


def _skipped(reason: np.ndarray) -> Counter:
    """How many items each reason left out, keyed in the order the reasons first occur."""
    left_out = reason[reason >= 0]
    counts = np.bincount(left_out, minlength=len(REASONS))
    first = {int(r): int(np.argmax(left_out == r)) for r in np.unique(left_out)}
    return Counter({REASONS[r]: int(counts[r]) for r in sorted(first, key=first.__getitem__)})
