"""Datasets: loaders registered by name; a dataset spec is `name[?option=value&...]` (trusteval.specs).

A loader has the signature `load(spec, context) -> LoadedDataset` and yields frozen Prompt records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from trusteval.data.sources import DataContext
from trusteval.records import Prompt
from trusteval.registry import Registry
from trusteval.specs import Spec


@dataclass(frozen=True)
class LoadedDataset:
    """Prompts plus what a run must record about them: notes (fallbacks used) and source file hashes."""

    name: str
    prompts: list[Prompt]
    notes: tuple[str, ...] = ()
    sources: dict[str, str] = field(default_factory=dict)


DATASETS: Registry = Registry("dataset")
DATASETS.register("cold", "trusteval.data.cold:load")
DATASETS.register("hatexplain", "trusteval.data.hatexplain:load")
DATASETS.register("toxicspans", "trusteval.data.toxicspans:load")
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
]
