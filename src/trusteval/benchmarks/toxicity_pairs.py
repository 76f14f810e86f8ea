"""Toxicity pairs classified column by column: one classification for every way a run's items are read.

PairColumns holds a run's items as small numpy columns. Three readers fill it: a stored run's items in one SQL
pass (Store.iter_run_pairs), plain RunItems with their scores (trusteval_toxicity.collect_pairs), and the rows
`trusteval tables` reads (Store.pair_rows, or report/bulk_read's full scans). `classify` turns it into each
model's ModelPairs without a RunItem or a Score per row (an identical rerun's aggregation; docs/performance.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from trusteval.metrics.toxicity import Pairs
from trusteval.scorers.language import EMPTY, NO_RESPONSE, OFF_LANGUAGE, response_checks, script_code
from trusteval.store import Store
from trusteval.store.reads import READ_CHUNK

# Why an item is left out, in the order they are tested (the first that holds is counted).
REASONS = ("generation failed", "empty response", "off-language response", "response not scored", "prompt not scored")
# How the `skipped` counters are keyed: in the order each reason first occurs among a model's items (a run's
# metrics), or in REASONS order (`trusteval tables`). Both orders are in stored outputs.
ReasonOrder = Literal["first seen", "fixed"]


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
class PairColumns:
    """A run's items column by column; names are coded as indexes into the tuples."""

    models: tuple[str, ...]
    classes: tuple[str, ...]
    langs: tuple[str | None, ...]
    model: np.ndarray
    seed: np.ndarray
    prompt: np.ndarray  # each prompt id's rank among the run's ids: groups and sorts as the ids do
    category: np.ndarray
    label_toxic: np.ndarray
    lang: np.ndarray
    check: np.ndarray  # scorers.language.response_checks: OK, EMPTY, OFF_LANGUAGE or NO_RESPONSE
    response_value: np.ndarray  # the ok value of the response's score; NaN: none
    prompt_value: np.ndarray

    @classmethod
    def read(
        cls,
        store: Store,
        run_id: str,
        response_scorer: str | None,
        prompt_scorer: str | None,
        chunk_size: int = READ_CHUNK,
    ) -> PairColumns:
        """A stored run's items in planned order, in one SQL pass (`chunk_size` rows per query)."""
        return cls.from_rows(store.iter_run_pairs(run_id, (response_scorer, prompt_scorer), script_code, chunk_size))

    @classmethod
    def from_rows(cls, chunks: Iterable[Sequence[tuple]], models: Sequence[str] = ()) -> PairColumns:
        """From chunks of rows (key, model, seed, prompt id, class, label is 1, language, script_code of the
        response, ok value of its score, ok value of the prompt's score), None for a missing value; the key is
        not read. Models are coded in the order of `models`, then in first-seen order, like the other names."""
        codes: tuple[dict, ...] = ({m: i for i, m in enumerate(models)}, {}, {}, {})
        parts: list[tuple[np.ndarray, ...]] = []
        for rows in chunks:
            _, model, seed, prompt, category, label, lang, script, r_value, p_value = zip(*rows, strict=True)
            parts.append(
                (
                    coded(model, codes[0]),
                    np.asarray(seed, dtype=np.int64),
                    coded(prompt, codes[1]),
                    coded(category, codes[2]),
                    np.asarray(label, dtype=bool),
                    coded(lang, codes[3]),
                    response_checks(script, lang),
                    np.asarray(r_value, dtype=float),  # None becomes NaN
                    np.asarray(p_value, dtype=float),
                )
            )
        columns = [np.concatenate(c) for c in zip(*parts, strict=True)] if parts else _empty_columns()
        prompts = codes[1]
        ranks = np.empty(len(prompts), dtype=np.int64)
        ranks[[prompts[p] for p in sorted(prompts)]] = np.arange(len(prompts))
        columns[2] = ranks[columns[2]]
        return cls(tuple(codes[0]), tuple(codes[2]), tuple(codes[3]), *columns)


def coded(values: Iterable, codes: dict) -> np.ndarray:
    """Each value's index in `codes`, which grows by the values not seen before (first-seen order)."""
    return np.fromiter((codes.setdefault(v, len(codes)) for v in values), dtype=np.int64)


def _empty_columns() -> list[np.ndarray]:
    kinds = (np.int64,) * 4 + (bool, np.int64, np.int64) + (float,) * 2
    return [np.zeros(0, dtype=kind) for kind in kinds]


def classify(
    c: PairColumns, threshold: float, prompt_source: str, off_language_policy: str, reason_order: ReasonOrder
) -> dict[str, ModelPairs]:
    """Toxic or not at `threshold`, per model of `c.models`; what cannot be classified is counted per reason,
    empty and off-language responses included, keyed in `reason_order`."""
    checked = (c.check != NO_RESPONSE) & (c.check != EMPTY)
    foreign = c.check == OFF_LANGUAGE
    if prompt_source == "label":
        prompt_toxic = c.label_toxic
    else:
        with np.errstate(invalid="ignore"):
            prompt_toxic = c.prompt_value >= threshold
    with np.errstate(invalid="ignore"):
        response_toxic = c.response_value >= threshold
    reason = reason_codes(c, prompt_source, off_language_policy)
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
            _skipped(reason[mine], reason_order),
            Counter(classes[c.category[mine & foreign]].tolist()),
            Counter(classes[c.category[mine & checked]].tolist()),
            "/".join(sorted({c.langs[i] for i in np.unique(c.lang[mine & checked]).tolist()})) or None,
        )
    return found


def reason_codes(c: PairColumns, prompt_source: str, off_language_policy: str) -> np.ndarray:
    """Why each item is left out, as an index into REASONS (the first test that holds), or -1 when it is kept.
    `classify` and the export (report/export.py, column `left_out`) both read it, so they agree row by row."""
    prompt_missing = np.isnan(c.prompt_value) if prompt_source != "label" else np.zeros(c.model.size, dtype=bool)
    excluded = (c.check == OFF_LANGUAGE) & (off_language_policy == "exclude")
    tests = [c.check == NO_RESPONSE, c.check == EMPTY, excluded, np.isnan(c.response_value), prompt_missing]
    return np.select(tests, list(range(len(REASONS))), default=-1)


def _skipped(reason: np.ndarray, order: ReasonOrder) -> Counter:
    """How many items each reason left out, keyed in `order`."""
    left_out = reason[reason >= 0]
    found, first = np.unique(left_out, return_index=True)  # reasons in REASONS order, and where each first occurs
    if order == "first seen":
        found = found[np.argsort(first)]
    counts = np.bincount(left_out, minlength=len(REASONS))
    return Counter({REASONS[r]: int(counts[r]) for r in found.tolist()})
