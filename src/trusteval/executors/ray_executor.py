"""`trusteval run --executor ray`: generation and scoring on the workers of a Ray cluster.

The driver (this process) keeps planning, the store, the leases, metrics and tables. For each model it starts
`workers` Ray actors; each actor creates the backend once from the model spec (one model replica per worker
for in-process backends such as `hf` and `llamacpp`) and answers batches of Requests. To the pipeline the
pool looks like one backend (`RayBackend`): it sends each batch to the least busy actor and returns the
Generations as they arrive, and the pipeline writes them to the store and ends their leases as it does for a
local backend, so resuming, leases and `--shard` behave the same. Scoring tasks whose scorer can be rebuilt
from its spec are scored by worker pools too (executors/ray_scoring.py).

Workers need trusteval (and the backend's extra) installed, and the files a spec names (replay files, model
files) at the same path; relative paths are taken from the driver's working directory when it exists on the
worker. A worker gets the values of only the environment variables its model spec names (API keys).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from trusteval.errors import BackendError, UsageError, missing_extra
from trusteval.executors.ray_scoring import RayScoringPool, cause, named_env, on_workers
from trusteval.models import BackendSettings, ModelSpec, load_backend
from trusteval.records import Generation, Request
from trusteval.scorers.base import ScorerContext, ScoringTask

MAX_BATCH = 64  # batches sent to a worker: small enough that a small run still spreads over the workers


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise missing_extra("ray", "ray") from None
    return ray


def worker_env(model: ModelSpec, env: Mapping[str, str]) -> dict[str, str]:
    """The values of the environment variables the model spec names, and nothing else."""
    return named_env(model.kind, model.options, env)


class GenerationWorker:
    """A Ray actor holding one backend replica (decorated with ray.remote when the executor starts)."""

    def __init__(self, raw_model: str, settings: BackendSettings, cwd: str) -> None:
        if os.path.isdir(cwd):
            os.chdir(cwd)
        self.backend = load_backend(ModelSpec.parse(raw_model), settings)

    def shape(self) -> tuple[int, int]:
        return max(1, self.backend.batch_size), max(1, self.backend.max_concurrency)

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return await self.backend.generate(requests)

    async def close(self) -> None:
        await self.backend.aclose()


class RayBackend:
    """A pool of GenerationWorker actors behind the Backend protocol."""

    def __init__(self, ray: Any, actors: list[Any], batch_size: int, per_actor: int, model: str) -> None:
        self._ray = ray
        self._actors = actors
        self._busy = [0] * len(actors)
        self.batch_size = min(batch_size, MAX_BATCH)
        self.max_concurrency = per_actor * len(actors)
        self.batches = [0] * len(actors)
        self.model = model

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        index = min(range(len(self._actors)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            answers = await self._actors[index].generate.remote(list(requests))
        except self._ray.exceptions.RayError as exc:  # a lost worker: the run is incomplete, a rerun retries
            reason = f"ray worker failed: {type(exc).__name__}"
            return [Generation.failure(r.key, reason) for r in requests]
        finally:
            self._busy[index] -= 1
        self.batches[index] += 1
        return list(answers)

    async def aclose(self) -> None:
        for actor in self._actors:
            with suppress(self._ray.exceptions.RayError):
                await actor.close.remote()
            self._ray.kill(actor)

    def describe(self) -> dict[str, Any]:
        return {"executor": "ray", "model": self.model, "workers": len(self._actors)}


class RayExecutor:
    """Connects to the cluster once per run; `open` starts one pool of workers per model."""

    def __init__(self, address: str | None, workers: int | None) -> None:
        self.ray = import_ray()
        self._started = not self.ray.is_initialized()
        if self._started:
            self._connect(address)
        self.workers = workers or max(1, sum(1 for node in self.ray.nodes() if node.get("Alive")))
        self.pools: list[RayBackend] = []
        self.scoring: list[RayScoringPool] = []
        self.in_driver: list[str] = []

    def _connect(self, address: str | None) -> None:
        try:
            self.ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = address or "the default address (RAY_ADDRESS, or a new local cluster)"
            raise UsageError(f"flag --ray-address: cannot connect to a Ray cluster at {where}: {exc}") from None

    def open(self, model: ModelSpec, settings: BackendSettings) -> RayBackend:
        settings = replace(settings, env=worker_env(model, settings.env))
        remote = self.ray.remote(num_cpus=1, scheduling_strategy="SPREAD")(GenerationWorker)
        actors = [remote.remote(model.raw, settings, os.getcwd()) for _ in range(self.workers)]
        try:
            shapes = self.ray.get([actor.shape.remote() for actor in actors])
        except self.ray.exceptions.RayError as exc:
            for actor in actors:
                self.ray.kill(actor)
            raise BackendError(f"model {model.raw}: a Ray worker could not load it: {cause(exc)}") from None
        pool = RayBackend(self.ray, actors, shapes[0][0], shapes[0][1], model.raw)
        self.pools.append(pool)
        return pool

    def score_on_workers(self, tasks: list[ScoringTask], context: ScorerContext) -> list[ScoringTask]:
        """The tasks, those with a scorer spec scored by pools of workers (started on their first batch)."""
        pools: dict[tuple[str, str], RayScoringPool] = {}
        placed = []
        for task in tasks:
            if task.scorer_spec is None:
                self.in_driver.append(task.name)
                placed.append(task)
                continue
            pool = pools.get((task.scorer_spec, task.scorer_id))
            if pool is None:
                pool = RayScoringPool(self.ray, task, context, self.workers, self._release_scoring)
                pools[(task.scorer_spec, task.scorer_id)] = pool
                self.scoring.append(pool)
            else:
                pool.names.append(task.name)
            placed.append(on_workers(task, pool))
        return placed

    def _release_scoring(self) -> None:
        for pool in self.scoring:
            pool.close()

    def notes(self) -> tuple[str, ...]:
        generation = tuple(
            f"ray: {pool.model} on {len(pool.batches)} workers, batches per worker {pool.batches}"
            for pool in self.pools
        )
        scoring = tuple(note for note in (pool.note() for pool in self.scoring) if note)
        driver = (f"ray: scored in the driver (no scorer spec to rebuild on a worker): {', '.join(self.in_driver)}",)
        return generation + scoring + (driver if self.in_driver else ())

    def close(self) -> None:
        self._release_scoring()
        if self._started:
            self.ray.shutdown()
