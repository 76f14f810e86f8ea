"""What a benchmark is: which data, which requests, which scorers, which metrics and tables.

A benchmark is built from a RunSpec and answers three questions for the pipeline:
`plan` (prompts and requests), `scoring_tasks` (what to score, with which scorer) and `results` (metrics and
tables from stored rows). It never writes to the store itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from trusteval.config import RunSpec
from trusteval.data import LoadedDataset
from trusteval.data.sources import DataContext
from trusteval.models import ModelSpec
from trusteval.records import Prompt, Request, Score
from trusteval.scorers.base import ScorerContext, ScorerInfo, ScoringTask
from trusteval.shards import parse_shard, shard_of
from trusteval.store import RunItem
from trusteval.tables.table import Table, TableNotes


@dataclass(frozen=True, slots=True)
class PlannedItem:
    request: Request
    model: str  # the model spec as the user wrote it
    prompt: Prompt
    variant: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    dataset: LoadedDataset
    prompts: list[Prompt]
    items: list[PlannedItem]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Results:
    metrics: dict[str, Any]
    tables: list[Table]
    notes: TableNotes = field(default_factory=TableNotes)  # the notes under the tables, by group (TrustGPT benchmarks)


ScoreBook = Mapping[str, Mapping[str, Score]]  # task name -> subject -> score
ScorerInfos = Mapping[str, ScorerInfo]  # task name -> what the run knows of its scorer


def task_scorer(scorer_info: ScorerInfos, task: str) -> ScorerInfo:
    """The ScorerInfo of one task's scorer (empty when the run has no such task)."""
    return scorer_info.get(task) or ScorerInfo()


class Benchmark(Protocol):
    name: str
    spec: RunSpec

    def plan(self, data: DataContext) -> Plan: ...

    def scoring_tasks(self, context: ScorerContext, plan_languages: set[str]) -> list[ScoringTask]: ...

    def results(self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: ScorerInfos) -> Results: ...


def render_messages(template: str, text: str, system: str | None = None) -> tuple[tuple[str, str], ...]:
    user = text if template == "{text}" else template.replace("{text}", text)  # the default: no copy
    return ((("system", system),) if system else ()) + (("user", user),)


def plan_requests(
    spec: RunSpec,
    prompts: Iterable[Prompt],
    render: Callable[[Prompt], Iterable[tuple[tuple[tuple[str, str], ...], dict[str, Any]]]],
) -> list[PlannedItem]:
    """Every (model, prompt, variant, seed) combination as a planned request.

    `render` turns one prompt into its chat messages and a variant description (e.g. the prompt word).
    """
    prompts = list(prompts)
    items: list[PlannedItem] = []
    for raw_model in spec.models:
        identity = ModelSpec.parse(raw_model).identity
        for prompt in prompts:
            for messages, variant in render(prompt):
                for seed in spec.seeds:
                    request = Request.build(identity, messages, spec.params, seed)
                    items.append(PlannedItem(request, raw_model, prompt, variant))
    return items


def shard_plan(plan: Plan, shard: str | None) -> Plan:
    """The plan's items in this shard, and only the prompts they use."""
    if shard is None:
        return plan
    index, count = parse_shard(shard)
    items = [item for item in plan.items if shard_of(item.request.key, count) == index]
    used = {(item.prompt.dataset, item.prompt.id) for item in items}
    prompts = [p for p in plan.prompts if (p.dataset, p.id) in used]
    note = f"shard {index}/{count}: {len(items)} of {len(plan.items)} requests; `trusteval merge` joins the shards"
    return replace(plan, items=items, prompts=prompts, notes=(*plan.notes, note))
