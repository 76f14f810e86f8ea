"""The generate stage: answer every recorded request of a run not stored yet, each batch committed as it
completes, or each answer as it arrives from a backend with the answer-stream hook (models/base.py:
HasAnswerStream), so a killed run loses only the answers in progress.

The requests are read from the store (the run's items, recorded by `Store.begin_run`) a chunk at a time, so
the stage holds one chunk of requests, whatever the run's size. Two processes running the same spec on one
store share the work through request-key leases (store/leases.py): each request is answered once; a process waits
for the answers another process holds (keeping their keys only) and takes over a request whose lease runs out.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable, Sequence

from trusteval.models import Backend, BackendSettings, ModelSpec, load_backend
from trusteval.models.base import HasAnswerStream
from trusteval.pipeline.memory import release_free_memory
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import ProgressSink
from trusteval.records import Generation, Request
from trusteval.store import Store
from trusteval.store.leases import CLAIM_AHEAD, Leases

LEASE_POLL_S = 0.5  # how often a run waiting on another process's requests looks for their answers
GENERATE_CHUNK = 10_000  # requests read from the store, and sorted by length for a batching backend, at a time
OpenBackend = Callable[[ModelSpec, BackendSettings], Backend]


async def generate_stage(
    store: Store,
    run_id: str,
    models: dict[str, ModelSpec],
    settings: BackendSettings,
    progress: ProgressSink,
    summary: RunSummary,
    *,
    keep: Callable[[str], bool] | None = None,
    open_backend: OpenBackend = load_backend,
) -> None:
    """Answer the run's requests that have no answer, model by model (those whose key `keep` accepts: a shard's
    slice); the answered ones count as reused."""
    counts = store.answered_counts(run_id, keep)
    progress.start("generate", sum(left for _, left in counts.values()))
    async with Leases(store) as leases:
        for raw_model, model in models.items():
            answered, left = counts.get(raw_model, (0, 0))
            if not left:  # nothing to ask: the model is not even opened
                summary.reused += answered
                continue
            backend = open_backend(model, settings)
            try:
                foreign: list[str] = []
                for answered, requests in store.iter_model_requests(run_id, raw_model, keep, GENERATE_CHUNK):
                    summary.reused += answered
                    waiting = await _answer_leased(backend, requests, store, leases, progress, summary)
                    foreign += [r.key for r in waiting]
                    del requests, waiting
                    release_free_memory()
                await _wait_for_others(backend, foreign, store, leases, progress, summary)
            finally:
                await backend.aclose()
    progress.finish("generate")


async def _wait_for_others(
    backend: Backend, waiting: list[str], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
) -> None:
    """Wait for the requests (keys) another process holds, taking over any whose lease runs out."""
    while waiting:
        answered = store.stored_generation_keys(waiting)
        summary.reused += len(answered)
        progress.advance("generate", len(answered))
        waiting = [key for key in waiting if key not in answered]
        taken = set(leases.retry_foreign(waiting))
        if taken:
            order = {key: index for index, key in enumerate(waiting)}
            mine = sorted(store.requests(taken), key=lambda r: order[r.key])
            left = await _answer_leased(backend, mine, store, leases, progress, summary)
            waiting = [key for key in waiting if key not in taken] + [r.key for r in left]
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
    if not isinstance(backend, HasAnswerStream):
        _store_answers(_complete(batch, await backend.generate(batch)), store, leases, progress, summary)
        return
    pending = {r.key for r in batch}
    stream = backend.generate_stream(batch)
    try:
        async for generation in stream:
            if generation.key in pending:  # an answer to another request, or a second one, is ignored
                pending.discard(generation.key)
                _store_answers([generation], store, leases, progress, summary)
    finally:  # an async generator left early (an error here) stops its backend's work now, not when collected
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    left = [r for r in batch if r.key in pending]
    if left:
        _store_answers(_complete(left, []), store, leases, progress, summary)


def _store_answers(
    generations: list[Generation], store: Store, leases: Leases, progress: ProgressSink, summary: RunSummary
) -> None:
    """Commit the generations, release their leases, count them."""
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
