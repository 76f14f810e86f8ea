"""What a benchmark is: which data, which requests, which scorers, which metrics and tables.

A benchmark is built from a RunSpec and answers three questions for the pipeline:
`plan` (prompts and requests), `scoring_tasks` (what to score, with which scorer) and `results` (metrics and
tables from stored rows). It never writes to the store itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from trusteval.config import RunSpec
from trusteval.data import LoadedDataset
from trusteval.data.sources import DataContext
from trusteval.models import ModelSpec
from trusteval.records import Prompt, Request, Score
from trusteval.scorers.base import ScorerContext, ScorerInfo, ScoringTask
from trusteval.store import RunItem
from trusteval.store.shards import in_shard, parse_shard
from trusteval.tables.table import Table, TableNotes
from trusteval.util.lazyseq import LazySequence


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
    items: Sequence[PlannedItem]  # a PlanItems (built again on every pass) from plan_requests
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


@runtime_checkable
class HasScorerControl(Protocol):
    """A benchmark with the scorer bias control (metrics/scorer_bias.py): `counterfactual_texts(items)` are the
    group-swapped copies of its responses that the pipeline scores beside the run's own (pipeline/score.py)."""

    def counterfactual_texts(self, items: Sequence[RunItem]) -> list[str]: ...


def render_messages(template: str, text: str, system: str | None = None) -> tuple[tuple[str, str], ...]:
    user = text if template == "{text}" else template.replace("{text}", text)  # the default: no copy
    return ((("system", system),) if system else ()) + (("user", user),)


Render = Callable[[Prompt], Iterable[tuple[tuple[tuple[str, str], ...], dict[str, Any]]]]


def plan_requests(spec: RunSpec, prompts: Iterable[Prompt], render: Render) -> PlanItems:
    """Every (model, prompt, variant, seed) combination as a planned request.

    `render` turns one prompt into its chat messages and a variant description (e.g. the prompt word).
    """
    return PlanItems(spec, prompts if isinstance(prompts, list) else list(prompts), render)


class PlanItems(LazySequence[PlannedItem]):
    """A plan's items, model by model, prompt by prompt, variant by variant, seed by seed: built again from the
    prompts on every pass and never all held, so a plan costs its prompts only (a PlannedItem with its Request
    is about 700 bytes; a run of 1,000,000 prompts would hold 0.7 GB). `keep` (a request key test) leaves
    only a shard's slice. A pass costs a content hash per item; the count is cheap without `keep`."""

    def __init__(
        self, spec: RunSpec, prompts: list[Prompt], render: Render, keep: Callable[[str], bool] | None = None
    ) -> None:
        self.spec = spec
        self.prompts = prompts
        self.render = render
        self.keep = keep
        self.identities = {raw: ModelSpec.parse(raw).identity for raw in spec.models}
        self._count: int | None = None

    def where(self, keep: Callable[[str], bool], count: int, models: Iterable[str]) -> PlanItems:
        """The items whose request key `keep` accepts, of which there are `count`, of `models` (a shard's
        slice, counted by the caller's one pass over it)."""
        sliced = PlanItems(self.spec, self.prompts, self.render, keep)
        present = set(models)
        sliced.identities = {raw: identity for raw, identity in self.identities.items() if raw in present}
        sliced._count = count
        return sliced

    def __iter__(self) -> Iterator[PlannedItem]:
        spec, keep = self.spec, self.keep
        params, seeds = spec.params, spec.seeds  # one object for every request (spec.params builds a new one)
        for raw_model, identity in self.identities.items():
            for prompt in self.prompts:
                for messages, variant in self.render(prompt):
                    for seed in seeds:
                        request = Request.build(identity, messages, params, seed)
                        if keep is None or keep(request.key):
                            yield PlannedItem(request, raw_model, prompt, variant)

    def __len__(self) -> int:
        if self._count is None and self.keep is not None:
            self._count = sum(1 for _ in self)
        elif self._count is None:
            variants = sum(1 for prompt in self.prompts for _ in self.render(prompt))
            self._count = len(self.identities) * variants * len(self.spec.seeds)
        return self._count


def model_identities(items: Sequence[PlannedItem]) -> dict[str, str]:
    """{model spec as written: model identity} of the models that have items, in plan order."""
    if isinstance(items, PlanItems):
        return dict(items.identities) if items else {}
    return {i.model: i.request.model for i in items}


def shard_plan(plan: Plan, shard: str | None) -> Plan:
    """The plan's items in this shard, and only the prompts they use."""
    if shard is None:
        return plan
    index, count = parse_shard(shard)
    keep = in_shard(shard)
    assert keep is not None
    size, models, used = 0, set(), set()  # of the slice, in one pass: a shard's prompts are 1/n of the run's
    for item in plan.items:
        if keep(item.request.key):
            size += 1
            models.add(item.model)
            used.add((item.prompt.dataset, item.prompt.id))
    if isinstance(plan.items, PlanItems):
        items: Sequence[PlannedItem] = plan.items.where(keep, size, models)
    else:
        items = [item for item in plan.items if keep(item.request.key)]
    prompts = [p for p in plan.prompts if (p.dataset, p.id) in used]
    note = f"shard {index}/{count}: {len(items)} of {len(plan.items)} requests; `trusteval merge` joins the shards"
    return replace(plan, items=items, prompts=prompts, notes=(*plan.notes, note))
