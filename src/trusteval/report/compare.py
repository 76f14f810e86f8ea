"""`trusteval compare RUN_A RUN_B`: every metric the two runs share, side by side, with B - A and a test.

Models are paired by name; when each run has exactly one model (a checkpoint before and after tuning) that
pair is compared whatever the names. Stored metrics are compared by the normal approximation from their
intervals; per-prompt scores (each task's mean over seeds per prompt) are paired on the prompts both runs
evaluated, with a bootstrap interval and a paired permutation test (metrics.compare).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trusteval.errors import UsageError
from trusteval.metrics.compare import Difference, interval_difference, paired_difference, rate_difference
from trusteval.metrics.toxicity import CATEGORIES
from trusteval.records import ScoreStatus, TaskSubject, task_subject
from trusteval.report.export import export_records
from trusteval.store import Store
from trusteval.store.run_record import RunRecord
from trusteval.tables.table import Table

COLUMNS = ("Metric", "A", "B", "B - A", "95% interval", "p", "n", "test")
Leaf = dict[str, Any]


@dataclass(frozen=True)
class Comparison:
    run_a: str
    run_b: str
    pairs: dict[str, str]  # model in A -> model in B
    rows: list[tuple[str, Difference]]
    sampling: dict[str, list[str]] = field(default_factory=dict)  # "A vs B" -> settings sampled differently

    def table(self) -> Table:
        def interval(d: Difference) -> str:
            return "n/a" if math.isnan(d.low) else f"[{d.low:.3f}, {d.high:.3f}]"

        rows = tuple((name, d.a, d.b, d.diff, interval(d), d.p, d.n, d.test) for name, d in self.rows)
        pairs = "; ".join(f"{a} (A) vs {b} (B)" for a, b in self.pairs.items())
        notes = (
            f"A = run {self.run_a}, B = run {self.run_b}; models: {pairs}.",
            "test 'paired permutation': per-prompt values paired over shared prompts, bootstrap interval, "
            "two-sided paired permutation test. Test 'two-proportion z (pooled)': the rate over the prompts each "
            "model answered, two-sided, pooled standard error (the test `trusteval tables` prints for the same "
            "two rates), unpooled Wald interval. Test 'z from intervals': normal approximation from each run's "
            "95% interval (runs taken as independent). No correction for the number of metrics.",
            *(f"sampled differently, {pair}: {'; '.join(lines)}" for pair, lines in self.sampling.items() if lines),
        )
        return Table("compare", f"Run {self.run_b} against run {self.run_a}", COLUMNS, rows, notes, digits=3)

    def as_dict(self) -> dict[str, Any]:
        return {"run_a": self.run_a, "run_b": self.run_b, "pairs": self.pairs,
                "metrics": [{"metric": name, **d.__dict__} for name, d in self.rows],
                "sampling_differences": self.sampling}  # fmt: skip


SETTINGS = frozenset({"scorers_used", "threshold"})


def _leaves(value: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Leaf]]:
    """Estimates ({value, low, high}) and plain numbers in a metrics tree, by path."""
    if isinstance(value, Mapping):
        if {"value", "low", "high"} <= value.keys():
            yield path, dict(value)
            return
        for key, inner in value.items():
            yield from _leaves(inner, (*path, str(key)))
    elif isinstance(value, float):  # a statistic without an interval (a slope, a std); ints are counts: left out
        yield path, {"value": value, "low": float("nan"), "high": float("nan"), "n": 0}


def pair_models(models_a: list[str], models_b: list[str]) -> dict[str, str]:
    if len(models_a) == 1 and len(models_b) == 1:
        return {models_a[0]: models_b[0]}
    shared = {m: m for m in models_a if m in models_b}
    if not shared:
        raise UsageError("the runs share no model name: compare runs of one model each, or of the same models")
    return shared


def _renamed(metrics: Mapping[str, Any], names: Mapping[str, str]) -> dict[tuple[str, ...], Leaf]:
    found = {}
    for path, leaf in _leaves(metrics):
        if len(path) > 1 and path[0] == "models":
            if path[1] not in names:
                continue
            path = ("models", names[path[1]], *path[2:])
        found[path] = leaf
    return found


def _label(path: tuple[str, ...], single: bool) -> str:
    parts = list(path[2:] if single and path[:1] == ("models",) else path[1:] if path[:1] == ("models",) else path)
    return " / ".join(parts) or "value"


Sizes = Mapping[str, tuple[int, int]]  # model in A -> prompts answered in A and in B


def _difference(path: tuple[str, ...], a: Leaf, b: Leaf, answered: Sizes) -> Difference:
    """A rate of a model with known prompt counts: the two-proportion test; anything else: from intervals."""
    if len(path) == 4 and path[0] == "models" and path[2] == "overall" and path[3] in CATEGORIES:
        sizes = answered.get(path[1])
        if sizes is not None:
            return rate_difference(float(a["value"]), sizes[0], float(b["value"]), sizes[1])
    return interval_difference(a, b)


def stored_rows(
    metrics_a: Mapping, metrics_b: Mapping, pairs: Mapping[str, str], answered: Sizes | None = None
) -> list[tuple[str, Difference]]:
    a = _renamed(metrics_a, {m: m for m in pairs})
    b = _renamed(metrics_b, {mb: ma for ma, mb in pairs.items()})
    rows = []
    for path in a.keys() & b.keys():
        if path[-1] in {"n", "seed_std"} or "seed_values" in path or "histogram" in path[-1]:
            continue
        if SETTINGS & set(path):  # how the run was measured (a scorer's threshold), not a measure
            continue
        if math.isnan(a[path]["value"]) and math.isnan(b[path]["value"]):
            continue
        rows.append((_label(path, len(pairs) == 1), path, _difference(path, a[path], b[path], answered or {})))
    return [(label, d) for label, _, d in sorted(rows, key=lambda r: r[1])]


def rate_sizes(store: Store, run_a: str, run_b: str, pairs: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """For TrustEval toxicity runs: each model pair's prompts answered (and scored) in A and in B, the n of
    the two-proportion test, counted as `trusteval tables` counts them (report.collect.tt_ztests)."""
    from trusteval.report.collect import find_runs, prompts_answered, read_pairs

    found = {run.run_id: run for run in find_runs(store, run_ids=[run_a, run_b])}
    if run_a not in found or run_b not in found or found[run_a].benchmark != "trusteval-toxicity":
        return {}
    read_a, _ = read_pairs(store, found[run_a], list(pairs))
    read_b, _ = read_pairs(store, found[run_b], list(pairs.values()))
    return {
        model_a: (prompts_answered(read_a[model_a]), prompts_answered(read_b[model_b]))
        for model_a, model_b in pairs.items()
        if model_a in read_a and model_b in read_b
    }


def per_prompt_values(store: Store, run_id: str) -> dict[str, dict[str, dict[tuple[str, str], float]]]:
    """model -> task -> (dataset, prompt id) -> mean score over seeds (response-side tasks, ok scores only)."""
    sums: dict[str, dict[str, dict[tuple[str, str], list[float]]]] = {}
    tasks = RunRecord(store, run_id).tasks()
    for row in export_records(store, run_id):
        for task in tasks:
            value = row.get(task)
            if task_subject(task) == TaskSubject.PROMPT or row.get(f"{task}_status") != ScoreStatus.OK or value is None:
                continue
            key = (row["dataset"], row["prompt_id"])
            sums.setdefault(row["model"], {}).setdefault(task, {}).setdefault(key, []).append(float(value))
    return {
        m: {t: {k: float(np.mean(v)) for k, v in by.items()} for t, by in tasks.items()} for m, tasks in sums.items()
    }


def paired_rows(store: Store, run_a: str, run_b: str, pairs: Mapping[str, str], resamples: int) -> list:
    values_a, values_b = per_prompt_values(store, run_a), per_prompt_values(store, run_b)
    rows = []
    for model_a, model_b in pairs.items():
        for task, by_a in values_a.get(model_a, {}).items():
            by_b = values_b.get(model_b, {}).get(task, {})
            shared = sorted(by_a.keys() & by_b.keys())
            if not shared:
                continue
            a = np.array([by_a[k] for k in shared])
            b = np.array([by_b[k] for k in shared])
            prefix = "" if len(pairs) == 1 else f"{model_a} / "
            rows.append((f"{prefix}{task} (per-prompt mean)", paired_difference(a, b, resamples)))
    return rows


def _stored_run(store: Store, run_id: str) -> dict[str, Any]:
    info = store.run_info(run_id)
    if info is None:
        folder = store.path.parent
        raise UsageError(
            f"no run '{run_id}' in '{folder}' (`trusteval runs --store {folder}` lists them); compare reads one "
            "store: to compare runs kept in two stores, join them first with `trusteval merge STORE_A STORE_B "
            "--into DIR` and compare in DIR"
        )
    return info


def run_languages(store: Store, run_id: str) -> set[str]:
    """The languages of the prompts a run evaluated."""
    return store.run_languages(run_id)


def check_comparable(store: Store, run_a: str, run_b: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both runs' stored rows; a usage error unless they ran the same benchmark on the same dataset and language
    (a difference between a Chinese toxicity run and an English TrustGPT run measures nothing)."""
    info_a, info_b = _stored_run(store, run_a), _stored_run(store, run_b)
    for what, a, b in (
        ("benchmarks", info_a["benchmark"], info_b["benchmark"]),
        ("datasets", info_a["dataset"], info_b["dataset"]),
        ("languages", ", ".join(sorted(run_languages(store, run_a))), ", ".join(sorted(run_languages(store, run_b)))),
    ):
        if a != b:
            raise UsageError(
                f"runs {run_a} and {run_b} are of different {what} ({a} and {b}): compare compares two runs of "
                "one benchmark on one dataset (e.g. a model before and after tuning)"
            )
    return info_a, info_b


def compare_runs(store: Store, run_a: str, run_b: str, resamples: int = 2000) -> Comparison:
    from trusteval.report.results import run_results

    info_a, info_b = check_comparable(store, run_a, run_b)
    pairs = pair_models(list(info_a["spec"]["models"]), list(info_b["spec"]["models"]))
    rows = paired_rows(store, run_a, run_b, pairs, resamples)
    answered = rate_sizes(store, run_a, run_b, pairs)
    rows += stored_rows(run_results(store, run_a).metrics, run_results(store, run_b).metrics, pairs, answered)
    if not rows:
        raise UsageError(f"runs {run_a} and {run_b} share no metric (different benchmarks?)")
    return Comparison(run_a, run_b, pairs, rows, sampled_differently(store, run_a, run_b, pairs))


def sampled_differently(store: Store, run_a: str, run_b: str, pairs: Mapping[str, str]) -> dict[str, list[str]]:
    """For each model pair, the sampling settings (stored with each run) that differ; runs stored before sampling
    was recorded give none."""
    from trusteval.models.sampling import sampling_differences
    from trusteval.store.run_record import RunRecord

    sampling_a, sampling_b = RunRecord(store, run_a).sampling(), RunRecord(store, run_b).sampling()
    return {
        f"{a} (A) vs {b} (B)": sampling_differences(sampling_a[a], sampling_b[b])
        for a, b in pairs.items()
        if a in sampling_a and b in sampling_b
    }
