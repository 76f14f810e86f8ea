"""Everything checked before the first row of a run is written: the plan, the model specs, the backend
settings, the scorers' validity on the run's data, and the executor."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from trusteval.benchmarks.base import Benchmark, Plan
from trusteval.config import RunSpec
from trusteval.data.sources import DataContext
from trusteval.errors import StoreError, UsageError
from trusteval.models import ModelSpec, check_spec
from trusteval.scorers.base import ScorerContext, ScoringTask
from trusteval.scorers.verdict import describe, stored_verdict
from trusteval.store import STORE_FILENAME, Store
from trusteval.untrusted.safetext import one_line

if TYPE_CHECKING:
    from trusteval.executors.ray_executor import RayExecutor


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
    """The benchmark's plan, with a note for every data file used although it does not match its pin and for
    every model whose server chooses part of its sampling."""
    data = data_context(spec)
    plan = benchmark.plan(data)
    notes = (*data.unpinned, *sampling_notes(spec.models))
    return replace(plan, notes=plan.notes + notes) if notes else plan


def sampling_notes(models: Sequence[str]) -> list[str]:
    """openai models without sampling=neutral: top_k, min_p, repetition_penalty are the server's (a run note)."""
    found = []
    for raw in models:
        spec = ModelSpec.parse(raw)
        if spec.backend == "openai":  # imported only then: httpx is the api extra's
            from trusteval.models.openai import sampling_note

            note = sampling_note(spec)
            found += [note] if note else []
    return found


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


def validity_warnings(spec: RunSpec, tasks: Sequence[ScoringTask], data_sha256: str) -> tuple[str, ...]:
    """Warn (stderr, now) of every toxicity scorer judged invalid on the run's data; with
    --require-valid-scorer, refuse (exit 2) unless each is judged valid. Reads the store only."""
    found: dict[str, dict | None] = {t.scorer_id: None for t in tasks if t.name.endswith("toxicity")}
    store = _existing_store(spec.store_path()) if found else None
    if store is not None:
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
                + label_free_note(spec, record) + "; nothing was run"
            )  # fmt: skip
    warnings = tuple(
        f"toxicity scorer {scorer} is judged invalid " + describe(record)
        for scorer, record in found.items()
        if record is not None and record["verdict"] == "invalid"
    )
    for line in warnings:
        print(f"warning: {one_line(line)}", file=sys.stderr)
    return warnings


def label_free_note(spec: RunSpec, record: Mapping | None) -> str:
    """Why no verdict can exist for a TrustGPT run: its prompts are SOCIAL-CHEM-101 norms, with no toxicity
    labels to validate a scorer against."""
    if record is not None or not spec.benchmark.startswith("trustgpt-"):
        return ""
    return (
        f". {spec.benchmark}'s data (SOCIAL-CHEM-101 norms) carries no toxicity labels, so no scorer can be "
        "validated on it and this flag can never pass here: validate the scorer on labelled data of the same "
        "language (e.g. `trusteval scorers validate --scorer SPEC --dataset toxicspans`) and run without "
        "--require-valid-scorer"
    )


def _existing_store(folder: Path) -> Store | None:
    """The store in `folder` for reading, or None when there is none yet, or when another process has just
    created its file and not yet its tables (two runs started at once on a new store: no verdict is stored)."""
    if not (folder / STORE_FILENAME).is_file():
        return None
    try:
        return Store.open_read_only(folder)
    except StoreError as exc:
        if "no such table" in str(exc):
            return None
        raise


def open_executor(spec: RunSpec) -> RayExecutor | None:
    """None for the local executor; a RayExecutor (`trusteval.executors.ray_executor`) for `--executor ray`."""
    if spec.executor == "local":
        stray = [f for f, v in (("--ray-address", spec.ray_address), ("--ray-workers", spec.ray_workers)) if v]
        if stray:
            raise UsageError(f"flag {stray[0]}: only used with --executor ray")
        return None
    from trusteval.executors.ray_executor import RayExecutor

    return RayExecutor(spec.ray_address, spec.ray_workers)
