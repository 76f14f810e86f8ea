"""Scoring on Ray workers: each worker rebuilds the scorer from its spec and scores batches of texts.

A scoring task whose scorer came from a spec (`ScoringTask.scorer_spec`: the toxicity scorers, `cold-tfidf`,
`en-tfidf`, `hf:...`, `perspective`) is scored by a pool of Ray actors. The driver keeps deciding what to
score (subjects without a final score, scorers/scoring.py) and stays the one writer of the store: each batch's
Scores are written as its outcomes come back, so a killed run resumes as a local one does. Tasks with the same
scorer share one pool. A pool starts its workers on its first batch, after generation has ended and freed its
actors' CPUs, and first ends the workers of any other pool: scoring stages run one after another, and two pools
holding a small cluster's CPUs at once would wait on each other for ever. A worker checks that its scorer has
the driver's scorer id (same model, version and trained detector); otherwise every batch it would have scored
is stored as an error with the reason, and the run ends incomplete.

A task without a spec (an LLM judge, which holds a model backend; the keyword and choice parsers, which cost
nothing) is scored in the driver, and the run's notes say so.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from trusteval.scorers import load_scorer, parse_scorer_spec
from trusteval.scorers.base import Inputs, Outcome, ScorerContext, ScoringTask

MAX_SCORE_BATCH = 32  # texts per batch sent to a worker: a small run still spreads over the workers
BATCHES_PER_WORKER = 2  # in flight per worker: one scoring, one on its way
# the variable a backend or scorer reads when its spec names none
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "perspective": "PERSPECTIVE_API_KEY"}


class ScoringError(RuntimeError):
    """A worker could not score a batch; scorers/scoring.py stores it as an error score for each subject."""


def scorer_env(raw_spec: str, env: Mapping[str, str]) -> dict[str, str]:
    """The values of the environment variables the scorer spec names, and nothing else."""
    spec = parse_scorer_spec(raw_spec)
    return named_env(spec.kind, spec.options, env)


def named_env(kind: str, options: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """The values of the environment variables a spec's options name (`*_env=NAME`, else the kind's default key
    variable), and nothing else: what a worker is given."""
    names = {value for key, value in options.items() if key.endswith("_env") and value}
    default = DEFAULT_KEY_ENV.get(kind)
    if default and "api_key_env" not in options:
        names.add(default)
    return {name: env[name] for name in sorted(names) if name in env}


class ScoringWorker:
    """A Ray actor holding one scorer, rebuilt from its spec (decorated with ray.remote by the pool)."""

    def __init__(self, raw_spec: str, context: ScorerContext, scorer_id: str, cwd: str) -> None:
        if os.path.isdir(cwd):
            os.chdir(cwd)
        self.scorer = load_scorer(raw_spec, context)
        if self.scorer.id != scorer_id:
            raise ScoringError(
                f"scorer {raw_spec} is {self.scorer.id} on this worker but {scorer_id} on the driver (another "
                "version or trained detector): give the workers the driver's cache folder"
            )

    def ready(self) -> bool:
        return True

    def score(self, texts: Sequence[str]) -> list[Outcome]:
        return self.scorer.score(texts)


class RayScoringPool:
    """The ScoringWorker actors of one scorer (shared by the tasks that use it), started on the first batch;
    `run` is those tasks' call."""

    def __init__(
        self, ray: Any, task: ScoringTask, context: ScorerContext, workers: int, release_others: Callable[[], None]
    ) -> None:
        if task.scorer_spec is None:
            raise ValueError(f"scoring task {task.name} has no scorer spec to rebuild on a worker")
        self._ray = ray
        self._spec = task.scorer_spec
        self._scorer_id = task.scorer_id
        self._context = replace(context, env=scorer_env(task.scorer_spec, context.env))
        self._workers = workers
        self._actors: list[Any] = []
        self._busy: list[int] = []
        self._failed: str | None = None
        self._lock = asyncio.Lock()
        self._release_others = release_others
        self.names = [task.name]
        self.batches = [0] * workers

    async def run(self, batch: list[Inputs]) -> list[Outcome]:
        await self._start()
        if self._failed:
            raise ScoringError(self._failed)
        index = min(range(len(self._actors)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            outcomes = await self._actors[index].score.remote([inputs[0] for inputs in batch])
        except self._ray.exceptions.RayError as exc:  # a lost worker: error scores, retried by the next run
            raise ScoringError(f"ray worker failed: {cause(exc)}") from None
        finally:
            self._busy[index] -= 1
        self.batches[index] += 1
        return list(outcomes)

    async def _start(self) -> None:
        async with self._lock:
            if self._actors or self._failed:
                return
            self._release_others()
            remote = self._ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(ScoringWorker)
            actors = [
                remote.remote(self._spec, self._context, self._scorer_id, os.getcwd()) for _ in range(self._workers)
            ]
            try:
                await asyncio.gather(*(actor.ready.remote() for actor in actors))
            except self._ray.exceptions.RayError as exc:
                for actor in actors:
                    self._ray.kill(actor)
                self._failed = f"a ray worker could not load scorer {self._spec}: {cause(exc)}"
                return
            self._actors, self._busy = actors, [0] * len(actors)

    def close(self) -> None:
        for actor in self._actors:
            with suppress(self._ray.exceptions.RayError):
                self._ray.kill(actor)
        self._actors = []

    def note(self) -> str | None:
        """What the pool did; None when it had nothing to score (every subject was stored)."""
        names = ", ".join(self.names)
        if self._failed:
            return f"ray: {names} not scored on the workers: {self._failed}"
        if not any(self.batches):
            return None
        return f"ray: {names} scored on {len(self.batches)} workers, batches per worker {self.batches}"


def on_workers(task: ScoringTask, pool: RayScoringPool) -> ScoringTask:
    """The task, scored by the pool's workers."""
    batch_size = max(1, min(task.batch_size, MAX_SCORE_BATCH))
    return replace(task, run=pool.run, batch_size=batch_size, in_flight=BATCHES_PER_WORKER * len(pool.batches))


def cause(exc: BaseException) -> str:
    """The one-line error from inside a RayTaskError/RayActorError, without the remote traceback."""
    found = getattr(exc, "cause", None) or exc
    return str(found).strip().splitlines()[-1] if str(found).strip() else type(found).__name__
