"""A model's scorer bias control from its responses and the scores of their versions (TrustGPT per group,
TrustEval per attribute class): group-neutral scores (metrics/group_neutral.py), then the statistics
(metrics/scorer_control.py) into one `ScorerControl` record."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from trusteval.metrics.bias import AttributeBias, attribute_bias, class_outcomes
from trusteval.metrics.group_neutral import ALL_TYPES, ControlGroups, neutral_score, versions
from trusteval.metrics.scorer_bias import ScorerControl
from trusteval.metrics.scorer_control import blind_types, class_control, fixed_text, group_control
from trusteval.metrics.toxicity import Pairs

BLIND_NOTE = (
    "On the built-in sentences the scorer gives every group of {types} the same score: it cannot see those "
    "group terms (masked). The control still measures what the mask leaves: words the mask does not know "
    "(faith names, off-lexicon terms) and the words around a term that change with it (English a/an)."
)


def _common_notes(setup: ControlGroups, values: Mapping[str, float], unscored: int, resamples: int) -> tuple:
    fixed = fixed_text(setup, values, resamples=resamples)
    notes = [f"no control for {reason}" for reason in setup.reasons()]
    if unscored:
        notes.append(f"{unscored} responses kept their raw score: a group-swapped version of them has no score")
    blind = blind_types(fixed)
    if blind:
        notes.append(BLIND_NOTE.format(types=", ".join(blind)))
    return fixed, notes


def group_control_for(
    setup: ControlGroups,
    kept: Sequence[tuple[str, str, float]],
    values: Mapping[str, float],
    groups: Mapping[str, Sequence[str]],
    *,
    correction: str,
    resamples: int,
) -> ScorerControl:
    """TrustGPT: `kept` are the (response, its prompt's group, toxicity) of the non-refused responses."""
    compared = {t: list(m) for t, m in setup.groups.items() if len(m) >= 2}
    types = {g: t for t, members in compared.items() for g in members}
    raw: dict[str, list[float]] = {g: [] for g in types}
    neutral: dict[str, list[float]] = {g: [] for g in types}
    neutral_all: dict[str, list[float]] = {g: [] for g in types}
    swapped: Counter = Counter()
    unscored = 0
    for text, group, score in kept:
        if group not in types:
            continue
        every = versions(setup, text, ALL_TYPES, group)
        own_type = {g: every[g] for g in compared[types[group]] if g in every}
        found = neutral_score(score, text, own_type, values)
        raw[group].append(score)
        neutral[group].append(found.value)
        neutral_all[group].append(neutral_score(score, text, every, values).value)
        swapped[group] += found.swapped
        unscored += found.unscored
    effects, flags = group_control(
        _arrays(raw), _arrays(neutral), swapped, compared, neutral_all=_arrays(neutral_all),
        correction=correction, resamples=resamples,
    )  # fmt: skip
    fixed, notes = _common_notes(setup, values, unscored, resamples)
    left_out = [g for members in groups.values() for g in members if g not in types]
    if left_out:
        notes.append(f"left out of the control (no lexicon terms or a lone group of its type): {', '.join(left_out)}")
    return ScorerControl("score", correction, compared, effects, flags, fixed, notes)


def _arrays(samples: Mapping[str, list[float]]) -> dict[str, np.ndarray]:
    return {g: np.asarray(v, dtype=float) for g, v in samples.items()}


def class_control_for(
    setup: ControlGroups,
    pairs: Pairs,
    categories: np.ndarray,
    neutral_by_pair: Mapping[tuple[int, int], tuple[float, bool]],
    raw_bias: AttributeBias,
    values: Mapping[str, float],
    *,
    unscored: int,
    resamples: int,
) -> ScorerControl:
    """TrustEval: `pairs` / `categories` are the model's classified pairs of the compared classes;
    `neutral_by_pair` maps (prompt rank, seed) to its group-neutral outcome (0..1) and whether it was swapped."""
    classes = list(raw_bias.tt)
    neutral = np.asarray([
        neutral_by_pair.get((int(p), int(s)), (float(r), False))[0]
        for p, s, r in zip(pairs.prompt_ids, pairs.seeds, pairs.response_toxic, strict=True)
    ], dtype=float)  # fmt: skip
    swapped = Counter(
        str(c) for p, s, c in zip(pairs.prompt_ids, pairs.seeds, categories, strict=True)
        if neutral_by_pair.get((int(p), int(s)), (0.0, False))[1]
    )  # fmt: skip
    neutral_pairs = Pairs(pairs.prompt_ids, pairs.seeds, pairs.prompt_toxic, neutral)
    neutral_bias = attribute_bias(neutral_pairs, categories, resamples=resamples, classes=classes)
    raw_out = {c: class_outcomes(pairs, categories, c)[0] for c in classes}
    neutral_out = {c: class_outcomes(neutral_pairs, categories, c)[0] for c in classes}
    effects, flags = class_control(raw_bias, neutral_bias, raw_out, neutral_out, swapped, resamples=resamples)
    fixed, notes = _common_notes(setup, values, unscored, resamples)
    compared = {t: list(m) for t, m in setup.groups.items() if len(m) >= 2}
    return ScorerControl("TT (%)", "none", compared, effects, flags, fixed, notes)


def neutral_outcomes(
    setup: ControlGroups, responses: Sequence[tuple[int, int, str, str | None]], values: Mapping[str, float]
) -> tuple[dict[tuple[int, int], tuple[float, bool]], int]:
    """(prompt rank, seed) -> (group-neutral outcome 0..1, swapped) from (rank, seed, response, class) of one
    model, for the responses that name a compared group (versions over every group of every type: the classes
    compared are group types); `values` are the texts' outcomes in percent (the
    response's own too: it is its own group's version). Also how many kept their raw outcome (unscored)."""
    found: dict[tuple[int, int], tuple[float, bool]] = {}
    unscored = 0
    for rank, seed, text, _category in responses:
        copies = versions(setup, text, ALL_TYPES)
        raw = values.get(text)
        if not copies or raw is None:
            unscored += bool(copies)
            continue
        neutral = neutral_score(raw, text, copies, values)
        found[(rank, seed)] = (neutral.value / 100.0, neutral.swapped)
        unscored += neutral.unscored
    return found, unscored
