"""The Python API: stored runs as pandas DataFrames, and running a spec from a script or a notebook.

    import trusteval
    summary = trusteval.run({"benchmark": "trusteval-toxicity", "models": ["default"], "limit": 8})
    trusteval.runs("trusteval-workspace")                    # one row per run
    trusteval.rows("trusteval-workspace", summary.run_id)     # prompt, response, labels, scores
    trusteval.metrics("trusteval-workspace", summary.run_id)  # one row per metric: value, low, high, n

`store` is a workspace folder (what `--store` names) or an open `Store`. Reading opens the store read-only.
`run` works inside a running event loop (Jupyter): the run then goes on a worker thread with its own loop.
pandas is needed for the DataFrames: pip install 'trusteval[api]'.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trusteval.errors import UsageError, missing_extra
from trusteval.util.asyncrun import run_coroutine

if TYPE_CHECKING:
    import pandas as pd

    from trusteval.config import RunSpec
    from trusteval.pipeline import RunSummary
    from trusteval.store import Store

    StoreLike = Store | str | os.PathLike[str]  # an open Store, or the workspace folder that holds one


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise missing_extra("pandas", "api") from None
    return pandas


@contextmanager
def _opened(store: StoreLike) -> Iterator[Store]:
    from trusteval.store import STORE_FILENAME, Store

    if isinstance(store, Store):
        yield store
        return
    folder = Path(store)
    if not (folder / STORE_FILENAME).is_file():
        raise UsageError(f"no store in '{folder}': pass the folder given to `trusteval run --store`")
    opened = Store.open_read_only(folder)
    try:
        yield opened
    finally:
        opened.close()


def _check(store: Store, run_id: str) -> None:
    if store.run_info(run_id) is None:
        raise UsageError(f"no run '{run_id}' in '{store.path.parent}'; trusteval.runs(store) lists them")


def runs(store: StoreLike) -> pd.DataFrame:
    """One row per run: run_id, benchmark, dataset, status, created_at, updated_at (UTC), items, models."""
    pandas = _pandas()
    with _opened(store) as opened:
        found = opened.runs()
        for row in found:
            row["models"] = list((opened.run_info(row["run_id"]) or {}).get("spec", {}).get("models", []))
    frame = pandas.DataFrame(found, columns=["run_id", "benchmark", "dataset", "status", "created_at",
                                             "updated_at", "items", "models"])  # fmt: skip
    for column in ("created_at", "updated_at"):
        frame[column] = pandas.to_datetime(frame[column], unit="s", utc=True)
    return frame


def rows(store: StoreLike, run_id: str) -> pd.DataFrame:
    """A run's rows as `trusteval export` writes them: prompt, response, error, and each task's score and status."""
    from trusteval.report.export import export_records

    pandas = _pandas()
    with _opened(store) as opened:
        _check(opened, run_id)
        return pandas.DataFrame(list(export_records(opened, run_id)))


def _flatten(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    if isinstance(value, Mapping):
        if {"value", "low", "high"} <= value.keys():
            yield path, {k: value.get(k) for k in ("value", "low", "high", "n", "seed_std")}
            return
        for key, inner in value.items():
            yield from _flatten(inner, (*path, str(key)))
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, {"value": value}


def metrics(store: StoreLike, run_id: str) -> pd.DataFrame:
    """A run's metrics, one row each: model (when the metric is per model), metric path, value, low, high, n."""
    from trusteval.report.results import run_results

    pandas = _pandas()
    with _opened(store) as opened:
        _check(opened, run_id)
        found = run_results(opened, run_id).metrics
    records = []
    for path, numbers in _flatten(found):
        model = path[1] if len(path) > 1 and path[0] == "models" else None
        name = "/".join(path[2:] if model is not None else path)
        records.append({"run_id": run_id, "model": model, "metric": name, **numbers})
    columns = ["run_id", "model", "metric", "value", "low", "high", "n", "seed_std"]
    return pandas.DataFrame(records, columns=columns)


def run(spec: RunSpec | Mapping[str, Any] | str | os.PathLike[str], *, env: Mapping[str, str] | None = None,
        progress: bool = False) -> RunSummary:  # fmt: skip
    """Run (or resume) an evaluation: a RunSpec, a dict of the `trusteval run` keys, or a YAML spec file."""
    from trusteval.config import RunSpec, build_run_spec
    from trusteval.pipeline import execute_async
    from trusteval.progress import NullProgress, make_progress

    environment = dict(os.environ if env is None else env)
    if not isinstance(spec, RunSpec):
        if isinstance(spec, Mapping):
            spec = build_run_spec(dict(spec), env=environment)
        else:
            spec = build_run_spec({}, spec_file=Path(spec), env=environment)
    sink = make_progress(enabled=True) if progress else NullProgress()
    with sink:
        return run_coroutine(execute_async(spec, env=environment, progress=sink))
