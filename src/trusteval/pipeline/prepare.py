"""Everything checked before the first row of a run is written: the plan, the model specs, the backend
settings, the scorers' validity on the run's data, and the executor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from trusteval.benchmarks.base import Benchmark, Plan
from trusteval.config import RunSpec
from trusteval.data.sources import DataContext
from trusteval.errors import StoreError, UsageError
from trusteval.models import ModelSpec, check_spec
from trusteval.pipeline.summary import ScorerWarning
from trusteval.scorers.base import ScorerContext, ScoringTask
from trusteval.scorers.verdict import INVALID, VALID, VerdictRecord, card_verdict, describe, stored_verdict
from trusteval.store import STORE_FILENAME, Store

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


def validity_warnings(
    spec: RunSpec, tasks: Sequence[ScoringTask], data_sha256: str, *, labelled: bool = True, lang: str | None = None
) -> tuple[ScorerWarning, ...]:
    """The warnings (one line each) for every toxicity scorer judged invalid on the run's data or on the response
    check set of its language, printed once when the run ends (its summary); with --require-valid-scorer, refuse
    (exit 2) now, before anything is written, unless each is judged valid on both. On data
    without toxicity labels (TrustGPT's norms) no data-side verdict can exist: the check is on responses only,
    and says so. Reads the store only (and the scorer's card, which carries the built-in verdicts)."""
    toxicity = [t for t in tasks if t.name.endswith("toxicity")]
    if not toxicity:
        return ()
    store = _existing_store(spec.store_path())
    try:
        found = {t.scorer_id: _verdicts(store, t, data_sha256 if labelled else None, lang) for t in toxicity}
    finally:
        if store is not None:
            store.close()
    if spec.require_valid_scorer:
        _require_valid(found, labelled)
    warnings = tuple(
        ScorerWarning(scorer, side, describe(record))
        for scorer, pair in found.items()
        for side, record in zip(("", "on model responses, "), pair, strict=True)
        if record is not None and record.verdict == INVALID
    )
    return warnings


def _verdicts(
    store: Store | None, task: ScoringTask, data_sha256: str | None, lang: str | None
) -> tuple[VerdictRecord | None, VerdictRecord | None]:
    """(verdict on the data, verdict on the response check set of `lang`): stored, else in the scorer's card."""
    from trusteval.scorers.checksets import CHECK_LANGUAGES, check_set_sha256

    def lookup(sha: str | None) -> VerdictRecord | None:
        return stored_verdict(store, task.scorer_id, sha) or card_verdict(task.info, sha)

    return lookup(data_sha256), lookup(check_set_sha256(lang) if lang in CHECK_LANGUAGES else None)


def _require_valid(found: dict[str, tuple[VerdictRecord | None, VerdictRecord | None]], labelled: bool) -> None:
    for scorer, (on_data, on_responses) in found.items():
        if labelled and (on_data is None or on_data.verdict != VALID):
            raise UsageError(
                f"--require-valid-scorer: toxicity scorer {scorer} " + describe(on_data) + "; nothing was run"
            )
        if on_responses is None or on_responses.verdict != VALID:
            data_side = "" if labelled else (
                "the run's data has no toxicity labels (e.g. TrustGPT's norms), so no verdict on the data can exist "
                "and only the verdict on model responses is checked; "
            )  # fmt: skip
            raise UsageError(
                f"--require-valid-scorer: {data_side}toxicity scorer {scorer} on model responses "
                + describe(on_responses).replace("on this data", "on the response check set")
                + "; nothing was run"
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
