"""The run, top to bottom: plan -> check -> record -> generate -> score -> aggregate -> report.

Everything that can fail on bad input (data, model specs, API keys, servers, scorers) is checked before the
first row is written (prepare.py), so a bad input never leaves a half-written run. After that every
generation and every batch of scores is committed as it completes; running the same spec again resumes
where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trusteval._version import __version__
from trusteval.benchmarks import BENCHMARKS
from trusteval.benchmarks.base import Benchmark, Plan, PlannedItem, model_identities, shard_plan
from trusteval.config import RunSpec
from trusteval.errors import StoreError, UsageError
from trusteval.models import BackendSettings, ModelSpec, load_backend, preflight
from trusteval.pipeline.generate import OpenBackend, generate_stage
from trusteval.pipeline.memory import release_free_memory
from trusteval.pipeline.prepare import (
    distinct_models,
    open_executor,
    planned,
    scorer_context,
    validity_warnings,
)
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import NullProgress, ProgressSink
from trusteval.records import Prompt, Request
from trusteval.scorers.base import ScoringTask
from trusteval.scorers.verdict import content_sha256
from trusteval.store import Store
from trusteval.store.run_owner import record_owner, release_run
from trusteval.store.run_record import RunData, RunRecord
from trusteval.store.shards import in_shard
from trusteval.store.views import RunItems
from trusteval.tables.table import Table
from trusteval.util.asyncrun import run_coroutine


@dataclass(frozen=True)
class RunContext:
    """What every stage of one run reads: the spec and what was checked and opened from it."""

    spec: RunSpec
    benchmark: Benchmark
    plan: Plan
    models: dict[str, ModelSpec]
    settings: BackendSettings
    tasks: list[ScoringTask]
    store: Store
    progress: ProgressSink
    open_backend: OpenBackend = load_backend
    data_sha256: str | None = None  # content_sha256 of the plan's dataset, hashed once per run


def execute(spec: RunSpec, *, env: Mapping[str, str], progress: ProgressSink | None = None) -> RunSummary:
    """Run a spec to the end; inside a running event loop (a notebook) the run goes on a worker thread."""
    return run_coroutine(execute_async(spec, env=env, progress=progress or NullProgress()))


async def execute_async(spec: RunSpec, *, env: Mapping[str, str], progress: ProgressSink) -> RunSummary:
    benchmark: Benchmark = BENCHMARKS.get(spec.benchmark)(spec)
    plan = planned(benchmark, spec)
    if not plan.items:
        raise UsageError("the run has no requests: the dataset selection is empty")
    plan = shard_plan(plan, spec.shard)
    release_free_memory()  # what reading the data file took beside its prompts
    settings = spec.backend_settings(env)
    models = distinct_models(spec.models)
    for model in models.values():
        await preflight(model, settings)
    context = scorer_context(spec, env)
    tasks = benchmark.scoring_tasks(context, {p.lang for p in plan.prompts})
    executor = None
    try:
        data_sha = content_sha256(plan.dataset.prompts)
        langs = {p.lang for p in plan.prompts}
        warnings = validity_warnings(
            spec, tasks, data_sha, labelled=any(p.label is not None for p in plan.dataset.prompts),
            lang=next(iter(langs)) if len(langs) == 1 else None,
        )  # fmt: skip
        executor = open_executor(spec)  # connects to a Ray cluster before anything is written
        placed = executor.score_on_workers(tasks, context) if executor else tasks
        store = Store.open(spec.store_path())
        try:
            opener = executor.open if executor else load_backend
            handed = [RunContext(spec, benchmark, plan, models, settings, placed, store, progress, opener, data_sha)]
            del plan  # held by `handed` alone, which _run_stages empties: it drops the prompts once recorded
            summary = await _run_stages(handed)
            # printed once, with the summary at the end, where progress output cannot push it out of sight
            summary.scorer_warnings = warnings
            lines = (warning.line for warning in warnings)
            summary.notes = (*summary.notes, *lines, *(executor.notes() if executor else ()))
            return summary
        finally:
            store.close()
    finally:
        if executor:
            executor.close()
        for task in tasks:
            if task.close:
                await task.close()


async def _run_stages(handed: list[RunContext]) -> RunSummary:
    """Record the run, then drop the plan's prompts (every later stage reads the store: a run of 1,000,000
    prompts held about 0.27 GB of them to the end) and run the stages. The caller hands the context over in
    a list that this empties, so no other frame refers to it and the prompts are freed here."""
    context = handed.pop()
    plan, spec = context.plan, context.spec
    record_run(context.store, spec, plan, context.tasks, context.data_sha256)
    summary = RunSummary(spec.run_id, spec.benchmark, plan.dataset.name, requests=len(plan.items), notes=plan.notes)
    context = replace(context, plan=recorded_plan(plan))
    del plan
    release_free_memory()
    try:
        return await _generate_score_report(context, summary)
    except BaseException:  # Ctrl-C, a backend that gave up: the run is resumable, not running
        release_run(context.store, context.spec.run_id)
        raise


def recorded_plan(plan: Plan) -> Plan:
    """The plan once recorded in the store: its dataset's name, sources and notes, without prompts or items."""
    return Plan(replace(plan.dataset, prompts=[]), [], [], plan.notes)


async def _generate_score_report(context: RunContext, summary: RunSummary) -> RunSummary:
    spec, store, progress = context.spec, context.store, context.progress
    run_id = spec.run_id
    summary.notes += _repeated_requests_note(store, run_id, summary.requests, spec.shard)
    clock = time.monotonic()
    await generate_stage(
        store,
        run_id,
        context.models,
        context.settings,
        progress,
        summary,
        keep=in_shard(spec.shard),
        open_backend=context.open_backend,
    )
    timings = {"generate": time.monotonic() - clock}
    # imported now, not before the first request (about 15 ms of CPU: scoring, aggregation, the report)
    from trusteval.pipeline.score import control_stage, score_stage
    from trusteval.report.results import stored_results

    items = RunItems(store, run_id)  # read again, chunk by chunk, by each stage: never all held
    for task in context.tasks:
        clock = time.monotonic()
        await score_stage(store, items, task, progress, summary)
        timings[f"score {task.name}"] = time.monotonic() - clock
    clock = time.monotonic()
    await control_stage(store, context.benchmark, items, context.tasks, progress)
    timings["scorer bias control"] = time.monotonic() - clock
    clock = time.monotonic()
    results = stored_results(store, run_id, context.benchmark, items)
    timings["aggregate"] = time.monotonic() - clock
    # of the latest invocation (a resumed run reuses stored work); pairs, to keep the stage order in the JSON
    record = RunRecord(store, run_id)
    record.record_timings(timings)
    summary.metrics, summary.tables = results.metrics, results.tables
    summary.answers_redacted = int(results.metrics.get("answers_redacted", 0))
    summary.notes += tuple(results.metrics.get("warnings", ()))
    record.record_results(results.metrics, [t.as_dict() for t in results.tables])
    summary.status = "complete" if summary.failed == 0 and summary.score_failures == 0 else "incomplete"
    store.finish_run(run_id, summary.status)
    report_dir = write_report(spec.store_path() / "reports" / run_id, results.tables, run_id)
    summary.report_dir = str(report_dir)
    summary.notes += plot_notes(results.metrics, report_dir)
    return summary


def plot_notes(metrics: dict[str, Any], folder: Path) -> tuple[str, ...]:
    """Draw the benchmark's figures beside its tables; a missing plotting library is a note, not a failure."""
    from trusteval.report.plots import write_plots_if_possible

    _, reason = write_plots_if_possible(metrics, folder)
    return (f"no plots: {reason}",) if reason else ()


def write_report(folder: Path, tables: list[Table], run_id: str) -> Path:
    """The table files; the run is already stored, so a full disk here costs nothing but the files."""
    from trusteval.report.tables import write_tables

    try:
        write_tables(tables, folder)
    except OSError as exc:
        raise StoreError(
            f"cannot write the tables to '{folder}': {exc.strerror or exc}. Every answer and score is stored: "
            f"free space or fix permissions, then `trusteval report {run_id} --out <folder>` writes them"
        ) from exc
    return folder


def _repeated_requests_note(store: Store, run_id: str, planned: int, shard: str | None) -> tuple[str, ...]:
    """Prompts with the same text (same model and seed) are one request and one row of the run: say how many
    rows that leaves out, since `datasets show` counts every prompt. (A shard's store may hold other slices.)"""
    kept = store.count_run_items(run_id)
    if shard or kept >= planned:
        return ()
    return (
        f"{planned - kept} of {planned} planned requests repeat another's (prompts with the same text): each is "
        f"asked and kept once, so the tables count {kept} rows and a repeated prompt's own label and class are "
        "left out",
    )


def record_run(
    store: Store, spec: RunSpec, plan: Plan, tasks: list[ScoringTask], data_sha256: str | None = None
) -> None:
    for task in tasks:
        store.register_scorer(task.scorer_id, task.info)
    record_owner(store, spec.run_id)  # before the status becomes `running`: readers can tell a dead run at once
    store.begin_run(
        spec.run_id,
        benchmark=spec.benchmark,
        dataset=plan.dataset.name,
        spec=spec.model_dump(),
        prompts=plan.prompts,
        items=ItemRows(plan.items),
        replaces=in_shard(spec.shard),
    )
    data = RunData(
        notes=tuple(plan.notes),
        sources=plan.dataset.sources,
        content_sha256=data_sha256 or content_sha256(plan.dataset.prompts),
        allow_unpinned_data=spec.allow_unpinned_data,
        languages=tuple(sorted({p.lang for p in plan.prompts})),
    )
    RunRecord(store, spec.run_id).record_start(
        tasks={t.name: t.scorer_id for t in tasks},
        version=__version__,  # of the latest invocation
        models=model_identities(plan.items),  # what `trusteval tables` keys rows by
        data=data,
        shard=spec.shard,
        sampling=run_sampling(spec),
    )


def run_sampling(spec: RunSpec) -> dict[str, dict[str, Any]]:
    """Each model's sampling description (trusteval.models.sampling), keyed by the spec as written."""
    from trusteval.models.sampling import sampling_description

    return {
        model: sampling_description(
            ModelSpec.parse(model), spec.temperature, spec.top_p, spec.max_new_tokens, spec.seeds
        )
        for model in spec.models
    }


class ItemRows:
    """A plan's items as the (request, model, prompt, variant) rows `Store.begin_run` records: each pass
    builds them again from the plan (it makes one or two), so they are never all held."""

    def __init__(self, items: Sequence[PlannedItem]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[tuple[Request, str, Prompt, dict[str, Any]]]:
        return ((i.request, i.model, i.prompt, i.variant) for i in self.items)
