"""The run, top to bottom: plan -> check -> record -> generate -> score -> aggregate -> report.

Everything that can fail on bad input (data, model specs, API keys, servers, scorers) is checked before the
first row is written, so a bad input never leaves a half-written run. After that every generation and every
batch of scores is committed as it completes; running the same spec again resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trusteval.benchmarks import BENCHMARKS
from trusteval.benchmarks.base import Benchmark, Plan, Results, ScoringTask
from trusteval.config import RunSpec, stored_spec
from trusteval.data.sources import DataContext
from trusteval.errors import StoreError, UsageError
from trusteval.leases import CLAIM_AHEAD, Leases
from trusteval.models import Backend, BackendSettings, ModelSpec, check_spec, load_backend, preflight
from trusteval.progress import NullProgress, ProgressSink
from trusteval.records import Generation, Request, Score, text_subject
from trusteval.report.tables import Table, write_tables
from trusteval.run_owner import record_owner, release_run
from trusteval.safetext import one_line
from trusteval.scorers.base import ScorerContext
from trusteval.scorers.judge_validity import stored_validation
from trusteval.scorers.validation import scorer_info_for
from trusteval.scorers.verdict import content_sha256, describe, stored_verdict
from trusteval.shards import in_shard, shard_plan
from trusteval.store import STORE_FILENAME, RunItem, Store

CONTROL_TASK = "response_toxicity"  # the scoring task whose scorer rescores the scorer bias control's copies

LEASE_POLL_S = 0.5  # how often a run waiting on another process's requests looks for their answers
OpenBackend = Callable[[ModelSpec, BackendSettings], Backend]


@dataclass
class RunSummary:
    run_id: str
    benchmark: str
    dataset: str
    requests: int = 0
    generated: int = 0
    reused: int = 0
    failed: int = 0
    retries: int = 0
    scored: int = 0
    scores_reused: int = 0
    score_failures: int = 0
    unparsed: int = 0
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    report_dir: str = ""
    notes: tuple[str, ...] = ()
    status: str = "running"  # "complete", or "incomplete" when a generation or a score failed

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "benchmark": self.benchmark,
            "dataset": self.dataset,
            "status": self.status,
            "requests": self.requests,
            "generated": self.generated,
            "reused": self.reused,
            "failed": self.failed,
            "retries": self.retries,
            "scored": self.scored,
            "scores_reused": self.scores_reused,
            "score_failures": self.score_failures,
            "unparsed": self.unparsed,
            "metrics": self.metrics,
            "report_dir": self.report_dir,
            "notes": list(self.notes),
        }


def data_context(spec: RunSpec) -> DataContext:
    return DataContext(
        data_dir=Path(spec.data_dir) if spec.data_dir else None,
        cache_dir=spec.cache_path() / "data",
        allow_download=spec.download,
        allow_unpinned=spec.allow_unpinned_data,
    )


def scorer_context(spec: RunSpec, env: Mapping[str, str]) -> ScorerContext:
    return ScorerContext(
        env=dict(env),
        data_dir=Path(spec.data_dir) if spec.data_dir else None,
        cache_dir=spec.cache_path(),
        allow_unpinned_data=spec.allow_unpinned_data,
    )


def planned(benchmark: Benchmark, spec: RunSpec) -> Plan:
    """The benchmark's plan, with a note for every data file used although it does not match its pin."""
    data = data_context(spec)
    plan = benchmark.plan(data)
    return replace(plan, notes=plan.notes + tuple(data.unpinned)) if data.unpinned else plan


def distinct_models(raw_models: Sequence[str]) -> dict[str, ModelSpec]:
    """The run's model specs; two that name the same model (same identity) are refused, since they would ask
    the same questions twice and compare the model with itself."""
    models: dict[str, ModelSpec] = {}
    seen: dict[str, str] = {}
    for raw in raw_models:
        model = check_spec(raw)
        identity = model.identity
        if identity in seen:
            raise UsageError(
                f"--model '{seen[identity]}' and --model '{raw}' are the same model ({identity}): "
                "they differ only in operational options; give it once"
            )
        seen[identity] = raw
        models[raw] = model
    return models


def backend_settings(spec: RunSpec, env: Mapping[str, str]) -> BackendSettings:
    return BackendSettings(
        concurrency=spec.concurrency,
        timeout_s=spec.timeout_s,
        max_retries=spec.max_retries,
        env=dict(env),
        trust_remote_code=spec.trust_remote_code,
    )


def execute(spec: RunSpec, *, env: Mapping[str, str], progress: ProgressSink | None = None) -> RunSummary:
    """Run a spec to the end; inside a running event loop (a notebook) the run goes on a worker thread."""
    from trusteval.api import run_coroutine

    return run_coroutine(execute_async(spec, env=env, progress=progress or NullProgress()))


async def execute_async(spec: RunSpec, *, env: Mapping[str, str], progress: ProgressSink) -> RunSummary:
    benchmark: Benchmark = BENCHMARKS.get(spec.benchmark)(spec)
    plan = planned(benchmark, spec)
    if not plan.items:
        raise UsageError("the run has no requests: the dataset selection is empty")
    plan = shard_plan(plan, spec.shard)
    settings = backend_settings(spec, env)
    models = distinct_models(spec.models)
    for model in models.values():
        await preflight(model, settings)
    tasks = benchmark.scoring_tasks(scorer_context(spec, env), {p.lang for p in plan.prompts})
    executor = None
    try:
        warnings = validity_warnings(spec, tasks, content_sha256(plan.dataset.prompts))
        executor = open_executor(spec)  # connects to a Ray cluster before anything is written
        store = Store.open(spec.store_path())
        try:
            opener = executor.open if executor else load_backend
            summary = await _run_stages(spec, benchmark, plan, models, settings, tasks, store, progress, opener)
            for line in warnings:
                print(f"warning: {one_line(line)}", file=sys.stderr)
            summary.notes = (*summary.notes, *warnings, *(executor.notes() if executor else ()))
            return summary
        finally:
            store.close()
    finally:
        if executor:
            executor.close()
        for task in tasks:
            if task.close:
                await task.close()


def validity_warnings(spec: RunSpec, tasks: Sequence[ScoringTask], data_sha256: str) -> tuple[str, ...]:
    """Warn (stderr, now) of every toxicity scorer judged invalid on the run's data; with
    --require-valid-scorer, refuse (exit 2) unless each is judged valid. Reads the store only."""
    found = {t.scorer_id: None for t in tasks if t.name.endswith("toxicity")}
    if found and (spec.store_path() / STORE_FILENAME).is_file():
        store = Store.open_read_only(spec.store_path())
        try:
            found = {scorer: stored_verdict(store, scorer, data_sha256) for scorer in found}
        finally:
            store.close()
    if spec.require_valid_scorer:
        refused = {s: v for s, v in found.items() if v is None or v["verdict"] != "valid"}
        if refused:
            scorer, record = next(iter(refused.items()))
            raise UsageError(
                f"--require-valid-scorer: toxicity scorer {scorer} " + describe(record)
                + "; nothing was run"
            )  # fmt: skip
    warnings = tuple(
        f"toxicity scorer {scorer} is judged invalid " + describe(record)
        for scorer, record in found.items()
        if record is not None and record["verdict"] == "invalid"
    )
    for line in warnings:
        print(f"warning: {one_line(line)}", file=sys.stderr)
    return warnings


def open_executor(spec: RunSpec) -> Any:
    """None for the local executor; a RayExecutor (`trusteval.executors.ray_executor`) for `--executor ray`."""
    if spec.executor == "local":
        stray = [f for f, v in (("--ray-address", spec.ray_address), ("--ray-workers", spec.ray_workers)) if v]
        if stray:
            raise UsageError(f"flag {stray[0]}: only used with --executor ray")
        return None
    from trusteval.executors.ray_executor import RayExecutor

    return RayExecutor(spec.ray_address, spec.ray_workers)


async def _run_stages(
    spec: RunSpec,
    benchmark: Benchmark,
    plan: Plan,
    models: dict[str, ModelSpec],
    settings: BackendSettings,
    tasks: list[ScoringTask],
    store: Store,
    progress: ProgressSink,
    open_backend: OpenBackend = load_backend,
) -> RunSummary:
    record_run(store, spec, plan, tasks)
    try:
        return await _generate_score_report(
            spec, benchmark, plan, models, settings, tasks, store, progress, open_backend
        )
    except BaseException:  # Ctrl-C, a backend that gave up: the run is resumable, not running
        release_run(store, spec.run_id)
        raise


async def _generate_score_report(
    spec: RunSpec,
    benchmark: Benchmark,
    plan: Plan,
    models: dict[str, ModelSpec],
    settings: BackendSettings,
    tasks: list[ScoringTask],
    store: Store,
    progress: ProgressSink,
    open_backend: OpenBackend = load_backend,
) -> RunSummary:
    run_id = spec.run_id
    summary = RunSummary(run_id, spec.benchmark, plan.dataset.name, requests=len(plan.items), notes=plan.notes)
    clock = time.monotonic()
    await generate_stage(store, plan, models, settings, progress, summary, open_backend=open_backend)
    timings = {"generate": time.monotonic() - clock}
    items = store.run_items(run_id)
    for task in tasks:
        clock = time.monotonic()
        await score_stage(store, items, task, progress, summary)
        timings[f"score {task.name}"] = time.monotonic() - clock
    clock = time.monotonic()
    await control_stage(store, benchmark, items, tasks, progress)
    timings["scorer bias control"] = time.monotonic() - clock
    clock = time.monotonic()
    results = stored_results(store, run_id, benchmark, items)
    timings["aggregate"] = time.monotonic() - clock
    # of the latest invocation (a resumed run reuses stored work); pairs, to keep the stage order in the JSON
    store.put_aggregate(run_id, "timings", list(timings.items()))
    summary.metrics, summary.tables = results.metrics, results.tables
    summary.notes += tuple(results.metrics.get("warnings", ()))
    store.put_aggregate(run_id, "metrics", results.metrics)
    store.put_aggregate(run_id, "tables", [t.as_dict() for t in results.tables])
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
    try:
        write_tables(tables, folder)
    except OSError as exc:
        raise StoreError(
            f"cannot write the tables to '{folder}': {exc.strerror or exc}. Every answer and score is stored: "
            f"free space or fix permissions, then `trusteval report {run_id} --out <folder>` writes them"
        ) from exc
    return folder


def record_run(store: Store, spec: RunSpec, plan: Plan, tasks: list[ScoringTask]) -> None:
    for task in tasks:
        store.register_scorer(task.scorer_id, task.info)
    record_owner(store, spec.run_id)  # before the status becomes `running`: readers can tell a dead run at once
    store.begin_run(
        spec.run_id,
        benchmark=spec.benchmark,
        dataset=plan.dataset.name,
        spec=spec.model_dump(),
        prompts=plan.prompts,
        items=[(i.request, i.model, i.prompt, i.variant) for i in plan.items],
        replaces=in_shard(spec.shard),
    )
    store.put_aggregate(spec.run_id, "tasks", {t.name: t.scorer_id for t in tasks})
    identities = {i.model: i.request.model for i in plan.items}
    store.put_aggregate(spec.run_id, "models", identities)  # what `trusteval tables` keys rows by
    data = {
        "notes": list(plan.notes),
        "sources": plan.dataset.sources,
        "content_sha256": content_sha256(plan.dataset.prompts),
        "allow_unpinned_data": spec.allow_unpinned_data,
    }
    store.put_aggregate(spec.run_id, "data", data)
    if spec.shard:
        store.put_aggregate(spec.run_id, "shard", spec.shard)


async def generate_stage(
    store: Store,
    plan: Plan,
    models: dict[str, ModelSpec],
    settings: BackendSettings,
    progress: ProgressSink,
    summary: RunSummary,
    *,
    open_backend: OpenBackend = load_backend,
) -> None:
    stored = store.stored_generation_keys(i.request.key for i in plan.items)
    pending: dict[str, dict[str, Request]] = {}
    for item in plan.items:
        if item.request.key not in stored:
            pending.setdefault(item.model, {})[item.request.key] = item.request
    unique_keys = {i.request.key for i in plan.items}
    summary.reused = len(unique_keys & stored)
    progress.start("generate", sum(len(r) for r in pending.values()))
    async with Leases(store) as leases:
        for raw_model, requests in pending.items():
            backend = open_backend(models[raw_model], settings)
            try:
                await _generate_with(backend, list(requests.values()), store, leases, progress, summary)
            finally:
                await backend.aclose()
    progress.finish("generate")


async def _generate_with(
    backend: Any, requests: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
) -> None:
    """Answer the requests this process holds leases on, then wait for those another process is answering
    (taking over any whose lease runs out)."""
    waiting = await _answer_leased(backend, requests, store, leases, progress, summary)
    while waiting:
        answered = store.stored_generation_keys(r.key for r in waiting)
        summary.reused += len(answered)
        progress.advance("generate", len(answered))
        waiting = [r for r in waiting if r.key not in answered]
        taken = set(leases.retry_foreign([r.key for r in waiting]))
        if taken:
            mine = [r for r in waiting if r.key in taken]
            waiting = [r for r in waiting if r.key not in taken] + await _answer_leased(
                backend, mine, store, leases, progress, summary
            )
        elif waiting:
            await asyncio.sleep(LEASE_POLL_S)


async def _answer_leased(
    backend: Any, requests: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
) -> list[Request]:
    """Answer every request whose key this process can lease; return those leased to another process."""
    size = max(1, backend.batch_size)
    if size > 1:  # batches of similar prompt length carry less padding; per-request seeds keep answers the same
        requests = sorted(requests, key=lambda r: sum(len(content) for _, content in r.messages))
    queue = deque(requests)
    foreign: list[Request] = []

    async def worker() -> None:
        while queue:
            batch = [queue.popleft() for _ in range(min(size, len(queue)))]
            ahead = [r.key for r in itertools.islice(queue, CLAIM_AHEAD)]
            mine, others, answered = leases.split([r.key for r in batch], ahead)
            summary.reused += len(answered)
            progress.advance("generate", len(answered))
            foreign.extend(r for r in batch if r.key in set(others))
            batch = [r for r in batch if r.key in set(mine)]
            if batch:
                await _answer_batch(backend, batch, store, leases, progress, summary)

    await asyncio.gather(*(worker() for _ in range(max(1, backend.max_concurrency))))
    return foreign


async def _answer_batch(
    backend: Any, batch: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
) -> None:
    generations = _complete(batch, await backend.generate(batch))
    store.add_generations(generations, lease_owner=leases.owner)
    leases.done([g.key for g in generations])
    failed = sum(1 for g in generations if not g.ok)
    retries = sum(g.retries for g in generations)
    summary.generated += len(generations) - failed
    summary.failed += failed
    summary.retries += retries
    progress.advance("generate", len(generations), retries=retries, failed=failed)


def _complete(batch: Sequence[Request], generations: Sequence[Generation]) -> list[Generation]:
    """One generation per request, in order; a request the backend did not answer becomes a failure."""
    by_key = {g.key: g for g in generations}
    return [by_key.get(r.key) or Generation.failure(r.key, "backend returned no answer") for r in batch]


async def score_stage(
    store: Store, items: Sequence[RunItem], task: ScoringTask, progress: ProgressSink, summary: RunSummary
) -> None:
    inputs: dict[str, tuple[str, ...]] = {}
    for item in items:
        selected = task.select(item)
        if selected is not None:
            inputs.setdefault(text_subject(*selected), selected)
    done = store.scored_subjects(task.scorer_id, inputs)
    todo = [(subject, value) for subject, value in inputs.items() if subject not in done]
    random.Random(0).shuffle(todo)  # judges must not see pairs in a systematic order (position effects)
    summary.scores_reused += len(done)
    summary.unparsed += sum(1 for s in store.scores(task.scorer_id, done).values() if _is_unparsed(s))
    stage = f"score {task.name}"
    progress.start(stage, len(todo))
    for start in range(0, len(todo), task.batch_size):
        batch = todo[start : start + task.batch_size]
        scores = await _score_batch(task, batch)
        store.add_scores(scores)
        failures = sum(1 for s in scores if s.status == "error")
        unparsed = sum(1 for s in scores if _is_unparsed(s))
        summary.scored += len(scores) - failures - unparsed
        summary.score_failures += failures
        summary.unparsed += unparsed
        progress.advance(stage, len(batch), failed=failures, unparsed=unparsed)
    progress.finish(stage)


def _is_unparsed(score: Score) -> bool:
    """A final score without a value (unparsed, or refused by the scorer): kept and counted, never retried."""
    return score.status not in {"ok", "error"}


async def _score_batch(task: ScoringTask, batch: list[tuple[str, tuple[str, ...]]]) -> list[Score]:
    try:
        outcomes = await task.run([value for _, value in batch])
    except Exception as exc:  # a scorer crash is recorded per subject and retried by the next run
        reason = f"{type(exc).__name__}: {exc}"
        return [Score(subject, task.scorer_id, None, "error", detail=reason) for subject, _ in batch]
    if len(outcomes) != len(batch):
        reason = f"scorer returned {len(outcomes)} outcomes for {len(batch)} inputs"
        return [Score(subject, task.scorer_id, None, "error", detail=reason) for subject, _ in batch]
    return [
        Score(subject, task.scorer_id, o.value, o.status, o.label, o.detail)
        for (subject, _), o in zip(batch, outcomes, strict=True)
    ]


async def control_stage(
    store: Store, benchmark: Benchmark, items: Sequence[RunItem], tasks: Sequence[ScoringTask], progress: ProgressSink
) -> None:
    """Score the scorer bias control's group-swapped copies with the response toxicity scorer (stored and
    reused like every score; metrics/scorer_bias.py). Only for benchmarks that have the control."""
    texts_for = getattr(benchmark, "counterfactual_texts", None)
    task = next((t for t in tasks if t.name == CONTROL_TASK), None)
    if texts_for is None or task is None:
        return
    inputs = {text_subject(text): (text,) for text in texts_for(items)}
    done = store.scored_subjects(task.scorer_id, inputs)
    todo = [(subject, value) for subject, value in inputs.items() if subject not in done]
    progress.start("score scorer control", len(todo))
    for start in range(0, len(todo), task.batch_size):
        batch = todo[start : start + task.batch_size]
        store.add_scores(await _score_batch(task, batch))
        progress.advance("score scorer control", len(batch))
    progress.finish("score scorer control")


def control_subjects(benchmark: Benchmark, items: Sequence[RunItem]) -> list[str]:
    texts_for = getattr(benchmark, "counterfactual_texts", None)
    return [text_subject(text) for text in texts_for(items)] if texts_for else []


def candidate_subjects(items: Sequence[RunItem]) -> list[str]:
    """Every subject a task may have scored for these items: the prompt, the response, and the pair."""
    subjects: list[str] = []
    for item in items:
        subjects.append(item.prompt_subject)
        if item.response is not None:
            subjects += [item.response_subject or "", text_subject(item.prompt.text, item.response)]
    return subjects


def stored_results(store: Store, run_id: str, benchmark: Benchmark, items: Sequence[RunItem]) -> Results:
    """Metrics and tables of a run computed from stored rows only (the run and `trusteval report` share it)."""
    task_ids: dict[str, str] = store.aggregate(run_id, "tasks") or {}
    subjects = candidate_subjects(items) + control_subjects(benchmark, items)
    book = {name: store.scores(scorer_id, subjects) for name, scorer_id in task_ids.items()}
    dataset = benchmark.spec.dataset or (store.run_info(run_id) or {}).get("dataset", "")
    data_sha = (store.aggregate(run_id, "data") or {}).get("content_sha256")
    info = {name: scorer_info_for(store, scorer_id, dataset, data_sha) for name, scorer_id in task_ids.items()}
    for name, scorer_id in task_ids.items():
        if scorer_id.startswith("judge/"):
            info[name]["judge_validation"] = stored_validation(store, scorer_id)
    results = benchmark.results(items, book, info)
    return Results({**results.metrics, "scorers_used": scorers_used(task_ids, info, data_sha)}, results.tables)


def scorers_used(
    task_ids: Mapping[str, str], info: Mapping[str, dict[str, Any]], data_sha: str | None
) -> dict[str, Any]:
    """Per scoring task: the scorer id, its threshold and its validity verdict on the run's data."""
    return {
        name: {
            "id": scorer_id,
            "threshold": info[name].get("threshold"),
            "validity": info[name].get("validity"),
            "validity_detail": info[name].get("validity_detail"),
            "data_sha256": data_sha,
        }
        for name, scorer_id in task_ids.items()
    }


def report(store: Store, run_id: str) -> Results:
    run = store.run_info(run_id)
    if run is None:
        raise UsageError(f"no run '{run_id}' in the store '{store.path}'")
    spec = stored_spec(run["spec"])
    return stored_results(store, run_id, BENCHMARKS.get(spec.benchmark)(spec), store.run_items(run_id))
