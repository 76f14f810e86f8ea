"""The one way to score: every subject not stored yet, in batches, each batch committed as it completes.

Runs (pipeline/score.py), judge validation (commands/judge.py) and scorer validation (scorers/validation.py)
all call `score_missing`. A subject with a final score (ok or unparsed) is never scored again; an `error`
score is. A scorer that raises, or returns another number of outcomes than it was given inputs, becomes an
`error` score for every subject of that batch, so the next run retries them.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from trusteval.progress import ProgressSink
from trusteval.records import Score, ScoreStatus
from trusteval.scorers.base import Inputs, Outcome, TextScorer
from trusteval.store import Store

Batch = list[tuple[str, Inputs]]  # (subject, inputs) pairs


class Scoring(Protocol):
    """What scoring needs of a ScoringTask: who scores, how many inputs at once, and the batched call."""

    @property
    def scorer_id(self) -> str: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def run(self) -> Callable[[list[Inputs]], Awaitable[list[Outcome]]]: ...


@dataclass
class ScoreCounts:
    """What one `score_missing` call did. `unparsed` counts final scores without a value, stored before this
    call and new ones alike (a run summary counts both); `scored` and `failures` count new scores only."""

    attempted: int = 0  # subjects sent to the scorer
    scored: int = 0  # new scores with a value
    reused: int = 0  # subjects that had a final score already
    failures: int = 0  # new `error` scores (retried by the next call)
    unparsed: int = 0


async def score_missing(
    store: Store,
    task: Scoring,
    inputs: Mapping[str, Inputs],
    progress: ProgressSink,
    stage: str,
    *,
    shuffle_seed: int | None = None,
    in_flight: int = 1,
) -> ScoreCounts:
    """Score the subjects of `inputs` (subject -> inputs) that have no final score under `task.scorer_id`.

    `shuffle_seed` scores them in a seeded random order (a judge must not see pairs in a systematic order,
    because of position effects); `in_flight` batches are scored at once (a pool of remote workers), each
    committed as it completes."""
    return await score_chunks(store, task, [inputs], progress, stage, shuffle_seed=shuffle_seed, in_flight=in_flight)


async def score_chunks(
    store: Store,
    task: Scoring,
    chunks: Iterable[Mapping[str, Inputs]],
    progress: ProgressSink,
    stage: str,
    *,
    total: int | None = None,
    shuffle_seed: int | None = None,
    in_flight: int = 1,
) -> ScoreCounts:
    """`score_missing` over inputs given a chunk at a time (no subject in two chunks), so a run's inputs are
    never all held; `total` (the subjects left to score, for progress) defaults to the first chunk's.

    With `shuffle_seed`, each chunk's subjects are shuffled by one seeded generator drawn on from chunk to
    chunk: a single chunk is scored in exactly `score_missing`'s order, and a run in any number of chunks in
    the same order every time."""
    rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
    counts = ScoreCounts()
    size = max(1, task.batch_size)
    started = False

    async def score_and_commit(batch: Batch) -> None:
        scores = await score_batch(task, batch)
        store.add_scores(scores)
        failures = sum(1 for s in scores if s.status == ScoreStatus.ERROR)
        unparsed = sum(1 for s in scores if is_unparsed(s))
        counts.scored += len(scores) - failures - unparsed
        counts.failures += failures
        counts.unparsed += unparsed
        progress.advance(stage, len(batch), failed=failures, unparsed=unparsed)

    for inputs in chunks:
        done = store.scored_subjects(task.scorer_id, inputs)
        todo: Batch = [(subject, value) for subject, value in inputs.items() if subject not in done]
        if rng is not None:
            rng.shuffle(todo)
        counts.attempted += len(todo)
        counts.reused += len(done)
        counts.unparsed += store.count_unparsed(task.scorer_id, done)  # counted in SQL: no Score held per subject
        if not started:
            progress.start(stage, len(todo) if total is None else total)
            started = True
        batches = [todo[start : start + size] for start in range(0, len(todo), size)]
        await _each(batches, score_and_commit, max(1, in_flight))
    if not started:
        progress.start(stage, 0)
    progress.finish(stage)
    return counts


async def _each(batches: list[Batch], work: Callable[[Batch], Awaitable[None]], in_flight: int) -> None:
    """`work` on every batch, in order, at most `in_flight` at a time."""
    if in_flight == 1:
        for batch in batches:
            await work(batch)
        return
    queue = iter(batches)

    async def worker() -> None:
        for batch in queue:
            await work(batch)

    await asyncio.gather(*(worker() for _ in range(min(in_flight, len(batches)))))


def is_unparsed(score: Score) -> bool:
    """A final score without a value (unparsed, or refused by the scorer): kept and counted, never retried."""
    return score.status not in {ScoreStatus.OK, ScoreStatus.ERROR}


async def score_batch(task: Scoring, batch: Batch) -> list[Score]:
    """One Score per subject of the batch; a crash or a wrong number of outcomes is an error for each."""
    try:
        outcomes = await task.run([value for _, value in batch])
    except Exception as exc:  # a scorer crash is recorded per subject and retried by the next run
        return _errors(task, batch, f"{type(exc).__name__}: {exc}")
    if len(outcomes) != len(batch):
        return _errors(task, batch, f"scorer returned {len(outcomes)} outcomes for {len(batch)} inputs")
    return [
        Score(subject, task.scorer_id, o.value, o.status, o.label, o.detail)
        for (subject, _), o in zip(batch, outcomes, strict=True)
    ]


def _errors(task: Scoring, batch: Batch, reason: str) -> list[Score]:
    return [Score(subject, task.scorer_id, None, ScoreStatus.ERROR, detail=reason) for subject, _ in batch]


def text_run(scorer: TextScorer) -> Callable[[list[Inputs]], Awaitable[list[Outcome]]]:
    """A text scorer as a batched async call over one-text inputs (it runs on a worker thread)."""

    async def run(batch: list[Inputs]) -> list[Outcome]:
        texts: Sequence[str] = [inputs[0] for inputs in batch]
        return await asyncio.to_thread(scorer.score, texts)

    return run


@dataclass(frozen=True)
class TextScoring:
    """A text scorer on its own (no run items to select from): scorer validation scores dataset texts."""

    scorer: TextScorer

    @property
    def scorer_id(self) -> str:
        return self.scorer.id

    @property
    def batch_size(self) -> int:
        return self.scorer.batch_size

    @property
    def run(self) -> Callable[[list[Inputs]], Awaitable[list[Outcome]]]:
        return text_run(self.scorer)
