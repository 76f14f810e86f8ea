"""Datasets: loaders registered by name; a dataset spec is `name[?option=value&...]` (trusteval.specs).

A loader has the signature `load(spec, context) -> LoadedDataset` and yields frozen Prompt records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.records import Prompt
from trusteval.registry import Registry
from trusteval.specs import Spec, trusteval_dataset


@dataclass(frozen=True)
class LoadedDataset:
    """Prompts plus what a run must record about them: notes (fallbacks used) and source file hashes."""

    name: str
    prompts: list[Prompt]
    notes: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)


UNCLASSED = "(no class)"
DATASETS: Registry = Registry("dataset")
DATASETS.register("cold", "trusteval.data.cold:load")
DATASETS.register("hatexplain", "trusteval.data.hatexplain:load")
DATASETS.register("toxicspans", "trusteval.data.toxicspans:load")
DATASETS.register("hatexplain-en", "trusteval.data.hatexplain:load")  # explicit names of the English originals
DATASETS.register("toxicspans-en", "trusteval.data.toxicspans:load")
DATASETS.register("tiseval-hatexplain", "trusteval.data.tiseval:load")  # the TrustEval paper's translations
DATASETS.register("tiseval-toxicspans", "trusteval.data.tiseval:load")
DATASETS.register("file", "trusteval.data.generic:load")
DATASETS.register("hf", "trusteval.data.hf_datasets:load")
DATASETS.register("social-chem-101", "trusteval.data.social_chem:load")


def parse_dataset_spec(raw: str) -> Spec:
    return Spec.parse(raw, bare=True)


def load_dataset(raw: str, context: DataContext) -> LoadedDataset:
    spec = parse_dataset_spec(raw)
    return DATASETS.get(spec.kind)(spec, context)


def sample_prompts(prompts: Sequence[Prompt], limit: int | None, seed: int) -> list[Prompt]:
    """A seeded sample of `limit` prompts, kept in dataset order; all of them when limit is None or larger."""
    if limit is None or limit >= len(prompts):
        return list(prompts)
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(prompts), size=limit, replace=False))
    return [prompts[i] for i in chosen]


def stratified_sizes(sizes: Mapping[str, int], limit: int) -> dict[str, int]:
    """How many of `limit` to take from each class: proportional to its size (largest remainder), at least one
    from every class when `limit` allows it (otherwise one from each of the `limit` largest classes)."""
    total = sum(sizes.values())
    if limit >= total:
        return dict(sizes)
    order = sorted(sizes, key=lambda c: (-sizes[c], c))
    if limit < len(sizes):
        return {c: (1 if c in order[:limit] else 0) for c in sizes}
    quota = {c: limit * n / total for c, n in sizes.items()}
    taken = {c: min(n, max(1, math.floor(quota[c]))) for c, n in sizes.items()}
    while sum(taken.values()) > limit:
        over = max((c for c in order if taken[c] > 1), key=lambda c: taken[c] - quota[c])
        taken[over] -= 1
    while sum(taken.values()) < limit:
        under = max((c for c in order if taken[c] < sizes[c]), key=lambda c: quota[c] - taken[c])
        taken[under] += 1
    return taken


def sample_stratified(prompts: Sequence[Prompt], limit: int | None, seed: int) -> tuple[list[Prompt], str | None]:
    """A seeded sample of `limit` prompts stratified by attribute class (prompts without one form their own
    stratum), kept in dataset order, and a note saying how many came from each class; all prompts (no note)
    when limit is None or at least their number."""
    if limit is None or limit >= len(prompts):
        return list(prompts), None
    members: dict[str, list[int]] = {}
    for index, prompt in enumerate(prompts):
        members.setdefault(prompt.category or UNCLASSED, []).append(index)
    taken = stratified_sizes({c: len(found) for c, found in members.items()}, limit)
    chosen: list[int] = []
    for category, found in members.items():
        if taken[category]:
            chosen += sorted(np.random.default_rng(seed).choice(found, size=taken[category], replace=False).tolist())
    counts = ", ".join(f"{c}: {taken[c]} of {len(members[c])}" for c in sorted(members))
    note = (
        f"--limit {limit}: prompts sampled per attribute class in proportion to its size, sample seed {seed} ({counts})"
    )
    dropped = sorted(c for c in members if not taken[c])
    if dropped:
        note += f"; the limit is below the number of classes, so none from {', '.join(dropped)}"
    return [prompts[i] for i in sorted(chosen)], note


def sample_per_category(prompts: Sequence[Prompt], per_category: int, seed: int) -> list[Prompt]:
    """`per_category` prompts from each category (fewer when a category is smaller), seeded."""
    chosen: list[Prompt] = []
    for category in sorted({p.category for p in prompts if p.category is not None}):
        members = [p for p in prompts if p.category == category]
        chosen.extend(sample_prompts(members, per_category, seed))
    return chosen


__all__ = [
    "DATASETS",
    "DataContext",
    "LoadedDataset",
    "load_dataset",
    "parse_dataset_spec",
    "sample_per_category",
    "sample_prompts",
    "sample_stratified",
    "stratified_sizes",
    "trusteval_dataset",
]


def keep_categories(spec: Spec, prompts: list[Prompt], dataset: str, known: Sequence[str]) -> list[Prompt]:
    """The prompts of the classes named by the spec's `categories` option (comma-separated), all without it."""
    wanted = {c.strip() for c in (spec.option("categories") or "").split(",") if c.strip()}
    if not wanted:
        return prompts
    unknown = wanted - set(known)
    if unknown:
        raise UsageError(f"{dataset} has no class(es) {sorted(unknown)}; use {', '.join(known)}")
    return [p for p in prompts if p.category in wanted]
