"""The generate stage: answer every planned request not stored yet, each batch committed as it completes.

Two processes running the same spec on one store share the work through request-key leases (leases.py):
each request is answered once; a process waits for the answers another process holds and takes over a
request whose lease runs out.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable, Sequence

from trusteval.benchmarks.base import Plan
from trusteval.leases import CLAIM_AHEAD, Leases
from trusteval.models import Backend, BackendSettings, ModelSpec, load_backend
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import Generation, Request
from trusteval.store import Store

LEASE_POLL_S = 0.5  # how often a run waiting on another process's requests looks for their answers
OpenBackend = Callable[[ModelSpec, BackendSettings], Backend]


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
    backend: Backend, requests: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
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
    backend: Backend, requests: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
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
    backend: Backend, batch: list[Request], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
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
