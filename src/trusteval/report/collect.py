"""The paper's tables for any set of models in a store: every matching run, one row per model.

Runs are grouped by benchmark, dataset and condition (the scorer, threshold and prompt-toxicity source, or the
judge), so rows in one table were always measured the same way. Rows are keyed by model identity (the identity
that keys its answers, stored with each request), so specs that differ only in operational options (`default`
and `llamacpp:smollm2?n_threads=1`, another base_url) are one model and one row; the row is named by the spec
as written in the run that gives it. When a model appears in several runs of a
group, the latest run (by update time) gives its row and a note says which runs were passed over. Each group's
rows are computed by its benchmark's own code (the numbers match `trusteval report` of a single run); the rows
are read with one SQL join per run (read-only), which is what keeps 300,000 scored rows under a few seconds
(bench/bench_tables.py). Table 9 comes from the judge validations stored by `trusteval judge validate`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from trusteval.benchmarks.toxicity_pairs import ModelPairs, PairColumns, classify
from trusteval.benchmarks.trusteval_avoidance import JUDGE_TASK, TrustEvalAvoidance, judgements_from_rows
from trusteval.benchmarks.trusteval_bias import TrustEvalBias
from trusteval.benchmarks.trusteval_toxicity import (
    PROMPT_TASK,
    RESPONSE_TASK,
    TrustEvalToxicity,
    off_language_policy,
    refusal_counts,
)
from trusteval.config import RunSpec
from trusteval.errors import UsageError
from trusteval.metrics.agreement import JudgeValidation
from trusteval.metrics.avoidance import Judgements
from trusteval.metrics.stats import pairwise_ztests
from trusteval.records import text_subject
from trusteval.report.bulk_read import BulkLookup
from trusteval.report.stored_run import StoredRun
from trusteval.report.unpinned import with_unpinned_note
from trusteval.scorers.base import ScorerInfo
from trusteval.scorers.judge_validity import (
    VALIDATION_AGGREGATE,
    StoredValidation,
    addressed_to_judge,
    stored_validation,
)
from trusteval.scorers.language import script_code
from trusteval.scorers.validation import scorer_info
from trusteval.specs import trusteval_dataset
from trusteval.store import Store
from trusteval.store.run_record import RunRecord
from trusteval.store.views import RunItems, StoredScores
from trusteval.tables import paper_tables
from trusteval.tables.table import Table
from trusteval.tables.table5_combined import DatasetTable5, combined_table5, is_table5

TABLE_BENCHMARKS = ("trusteval-toxicity", "trusteval-bias", "trusteval-avoidance")
BULK_SHARE = 4  # read with full scans when the selected rows are at least a quarter of the generations
# Benchmarks that plan exactly the same requests from the same spec (trusteval-bias is trusteval-toxicity's plan).


@dataclass
class Group:
    """Runs of one benchmark on one dataset under one condition; `models` maps each model (by its row name) to
    the run used, and `written` each row name to the spec as written in that run."""

    benchmark: str
    dataset: str
    condition: str
    runs: list[StoredRun] = field(default_factory=list)  # newest first
    models: dict[str, StoredRun] = field(default_factory=dict)
    written: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def latest(self) -> StoredRun:
        return self.runs[0]


def find_runs(
    store: Store, *, benchmark: str | None = None, dataset: str | None = None, run_ids: Sequence[str] | None = None
) -> list[StoredRun]:
    """Runs of the table benchmarks that match the filters, newest first."""
    from trusteval.report.trustgpt_collect import TRUSTGPT_BENCHMARKS

    if benchmark is not None and benchmark not in (*TABLE_BENCHMARKS, *TRUSTGPT_BENCHMARKS):
        known = ", ".join((*TABLE_BENCHMARKS, *TRUSTGPT_BENCHMARKS))
        raise UsageError(f"tables cover the benchmarks {known}, not '{benchmark}'")
    found = []
    for row in store.run_rows():
        if row["benchmark"] not in TABLE_BENCHMARKS or (benchmark and row["benchmark"] != benchmark):
            continue
        if run_ids is not None and row["run_id"] not in run_ids:
            continue
        spec = RunSpec.model_validate(row["spec"])
        label = spec.dataset or row["dataset"]
        if dataset is not None and not {dataset, trusteval_dataset(dataset)} & _dataset_names(label, row["dataset"]):
            continue
        tasks = RunRecord(store, row["run_id"]).tasks()
        identities = model_identities(store, row["run_id"])
        found.append(StoredRun(row["run_id"], row["benchmark"], label, row["updated_at"], spec, tasks, identities))
    return found


def model_identities(store: Store, run_id: str) -> dict[str, str]:
    """Each model of a run (as written) and its identity: recorded with the run, or - in a store written before
    that - read from the requests, which have always been keyed by identity."""
    recorded = RunRecord(store, run_id).models()
    return recorded if recorded is not None else store.request_identities(run_id)


def _dataset_names(*labels: str) -> set[str]:
    """What a --dataset filter may name: the spec or stored name, or its base ('cold' for 'cold?split=dev',
    'hatexplain' for 'hatexplain@1a2b3c4d'); the filter `hatexplain` also takes the TrustEval benchmarks' meaning
    of it, `tiseval-hatexplain` (find_runs)."""
    return {name for label in labels for name in (label, re.split(r"[?@]", label)[0])}


def group_runs(runs: Sequence[StoredRun]) -> list[Group]:
    """Group runs (newest first) and give each model its latest run; models keep their first-evaluated order."""
    groups: dict[tuple[str, str, str], Group] = {}
    for run in runs:
        key = (run.benchmark, run.dataset, run.condition)
        groups.setdefault(key, Group(*key)).runs.append(run)
    for group in groups.values():
        _choose_runs(group)
        used = Counter(run.run_id for run in group.models.values())
        group.notes.append("Runs: " + ", ".join(f"{run_id} ({n} model{'s' * (n != 1)})" for run_id, n in used.items()))
    return sorted(groups.values(), key=lambda g: (TABLE_BENCHMARKS.index(g.benchmark), g.dataset, g.condition))


def _choose_runs(group: Group) -> None:
    """Each model identity's latest run; rows named by the spec as written there (plus the identity where two
    identities would share a name), in first-evaluated order."""
    chosen: dict[str, tuple[StoredRun, str]] = {}
    passed_over: dict[str, list[str]] = {}
    for run in group.runs:
        for model in run.spec.models:
            identity = run.identity(model)
            if identity in chosen:
                passed_over.setdefault(identity, []).append(run.run_id)
            else:
                chosen[identity] = (run, model)
    order = dict.fromkeys(run.identity(m) for run in reversed(group.runs) for m in run.spec.models)
    names = Counter(chosen[identity][1] for identity in order)
    for identity in order:
        run, written = chosen[identity]
        row = written if names[written] == 1 else f"{written} [{identity}]"
        group.models[row], group.written[row] = run, written
        if identity in passed_over:
            older = ", ".join(passed_over[identity])
            group.notes.append(f"{row}: the latest run {run.run_id} is used; also in {older} (not used)")


# -- reading rows -----------------------------------------------------------------------------------------------


def read_pairs(
    store: Store, run: StoredRun, models: Sequence[str], bulk: BulkLookup | None = None
) -> tuple[dict[str, ModelPairs], set[str]]:
    """Classified pairs of `models` in a run (toxicity_pairs.classify, as for the run's own metrics; the left-out
    counts keyed in REASONS order), and the attribute classes of the run's prompts. `bulk` reads through
    full-table scans (large selections); without it each row is looked up through the indexes."""
    if bulk is not None:
        columns = bulk.pair_columns(run, models)
    else:
        scorers = (run.tasks.get(RESPONSE_TASK), run.tasks.get(PROMPT_TASK))
        rows = store.pair_rows(run.run_id, models, scorers, script_code)
        columns = PairColumns.from_rows([rows], models) if rows else None
    if columns is None:
        return {}, set()
    spec = run.spec
    found = classify(columns, spec.threshold, spec.prompt_toxicity, off_language_policy(spec.options), "fixed")
    return found, set(columns.classes)


def read_judgements(store: Store, run: StoredRun, models: Sequence[str]) -> tuple[dict[str, Judgements], set[str]]:
    rows = store.judged_rows(run.run_id, models)
    subjects = [text_subject(prompt, response) for *_, prompt, response in rows if response is not None]
    judged = store.scores(run.tasks.get(JUDGE_TASK, ""), subjects)
    grouped: dict[str, list] = {}
    for model, seed, prompt_id, category, prompt, response in rows:
        score = judged.get(text_subject(prompt, response)) if response is not None else None
        row = (prompt_id, seed, category or "all", score, response is not None, addressed_to_judge(response))
        grouped.setdefault(model, []).append(row)
    classes = {row[3] or "all" for row in rows}
    return {model: judgements_from_rows(found) for model, found in grouped.items()}, classes


def mostly_the_store(store: Store, groups: Sequence[Group]) -> bool:
    """Whether the toxicity rows to read are a large share of the store (then full scans beat index probes)."""
    counted = [
        store.count_run_items(run.run_id)
        for group in groups
        if group.benchmark != "trusteval-avoidance"
        for run in {r.run_id: r for r in group.models.values()}.values()
    ]
    return sum(counted) * BULK_SHARE >= max(1, store.count("generations"))


def stored_validations(
    store: Store, run_ids: Sequence[str] | None = None
) -> tuple[dict[str, JudgeValidation], list[StoredValidation]]:
    """Table 9 rows by label, and the stored records they came from (the newest of each label)."""
    records: dict[str, StoredValidation] = {}
    for run_id, value in store.aggregates_named(VALIDATION_AGGREGATE):
        if run_ids is not None and run_id not in run_ids:
            continue
        record = StoredValidation.from_dict(value)
        records[record.label] = record
    return {label: record.validation for label, record in records.items()}, list(records.values())


# -- tables -------------------------------------------------------------------------------------------------------


@dataclass
class CollectedTables:
    tables: list[Table]
    metrics: list[dict[str, Any]]


def build_tables(
    store: Store,
    *,
    benchmark: str | None = None,
    dataset: str | None = None,
    run_ids: Sequence[str] | None = None,
    adjustment: str = "none",
    resamples: int | None = None,
) -> CollectedTables:
    """Every table of every matching group, plus Table 9 from stored judge validations."""
    runs = find_runs(store, benchmark=benchmark, dataset=dataset, run_ids=run_ids)
    groups = group_runs(runs)
    bulk = BulkLookup(store) if mostly_the_store(store, groups) else None
    out = CollectedTables([], [])
    per_dataset: list[DatasetTable5] = []
    for group in groups:
        spec = group.latest.spec
        if resamples is not None:
            spec = spec.model_copy(update={"resamples": resamples})
        tables, metrics = _group_tables(store, group, spec, adjustment, bulk)
        tables = [replace(t, notes=(*t.notes, *group.notes)) for t in tables]
        out.tables += with_unpinned_note(store, [run.run_id for run in group.models.values()], tables)
        if group.benchmark == "trusteval-toxicity":
            per_dataset += [DatasetTable5(group.dataset, group.condition, t) for t in tables if is_table5(t)]
        out.metrics.append({"benchmark": group.benchmark, "dataset": group.dataset, "condition": group.condition,
                            "runs": {m: r.run_id for m, r in group.models.items()}, **metrics})  # fmt: skip
    out.tables += combined_table5(per_dataset)
    from trusteval.report.trustgpt_collect import trustgpt_tables_for

    trustgpt, trustgpt_metrics = trustgpt_tables_for(store, benchmark, dataset, run_ids)
    out.tables += trustgpt
    out.metrics += trustgpt_metrics
    if benchmark in (None, "trusteval-avoidance") and dataset is None:
        validations, records = stored_validations(store, run_ids)
        if validations:
            out.tables.append(paper_tables.validation_table(validations, paper_tables.degenerate_notes(records)))
            out.metrics.append({"judge_validation": {k: v.as_dict() for k, v in validations.items()}})
    if not out.tables:
        raise UsageError(_nothing_matches(store, benchmark, dataset, run_ids))
    out.tables = _unique_names(out.tables)
    return out


def _group_tables(
    store: Store, group: Group, spec: RunSpec, adjustment: str, bulk: BulkLookup | None
) -> tuple[list[Table], dict]:
    if group.benchmark == "trusteval-avoidance":
        judged, classes = _read_all(group, lambda run, models: read_judgements(store, run, models))
        judge_id = group.latest.tasks.get(JUDGE_TASK, "")
        info = ScorerInfo(store.scorer_info(judge_id) or {}, judge_validation=stored_validation(store, judge_id))
        results = TrustEvalAvoidance(spec).results_from_judgements(judged, info, sorted(classes))
        return results.tables, {"metrics": results.metrics}
    pairs, classes = _read_all(group, lambda run, models: read_pairs(store, run, models, bulk))
    scorer_id = group.latest.tasks.get(RESPONSE_TASK, "")
    data = RunRecord(store, group.latest.run_id).data()
    info = scorer_info(store, scorer_id, group.dataset, data.content_sha256, data.language)
    if group.benchmark == "trusteval-bias":
        results = TrustEvalBias(spec).bias_results(pairs, info, sorted(classes))
        return bias_with_control(store, group, results.tables, results.metrics)
    results = TrustEvalToxicity(spec).results_from_pairs(pairs, info, read_refusals(store, group))
    if len(pairs) < 2:
        return results.tables, {"metrics": results.metrics}
    comparisons = tt_ztests(results.metrics, pairs, adjustment)
    ztests = paper_tables.ztest_table(group.dataset.split("?")[0], "TT", comparisons, adjustment)
    tested = [{"first": c.first, "second": c.second, **c.test.as_dict(), "p_adjusted": c.p_adjusted}
              for c in comparisons]  # fmt: skip
    return [*results.tables, ztests], {"metrics": results.metrics, "ztests_tt": tested, "p_adjust": adjustment}


def read_refusals(store: Store, group: Group) -> dict[str, tuple[int, int]]:
    """Per row: (responses its run's scorer called refusals, responses it scored), counted as the run's own
    results count them (trusteval_toxicity.refusal_counts)."""
    found: dict[str, tuple[int, int]] = {}
    for run in {run.run_id: run for run in group.models.values()}.values():
        scorer_id = run.tasks.get(RESPONSE_TASK)
        if scorer_id is None:
            continue
        counts = refusal_counts(RunItems(store, run.run_id), StoredScores(store, scorer_id))
        found.update({row: counts[group.written[row]] for row, used in group.models.items()
                      if used.run_id == run.run_id and group.written[row] in counts})  # fmt: skip
    return {row: found[row] for row in group.models if row in found}


def bias_with_control(
    store: Store, group: Group, tables: list[Table], metrics: dict[str, Any]
) -> tuple[list[Table], dict[str, Any]]:
    """Tables 7/8 with each model's scorer bias control, as its own run computed it (`trusteval report`)."""
    from trusteval.metrics.scorer_bias import ScorerControl
    from trusteval.report.results import run_results
    from trusteval.tables.control_tables import control_tables, with_control_marks

    computed: dict[str, dict[str, Any]] = {}
    controls: dict[str, ScorerControl] = {}
    for row, run in group.models.items():
        if run.run_id not in computed:
            computed[run.run_id] = run_results(store, run.run_id).metrics.get("models", {})
        found = (computed[run.run_id].get(group.written[row]) or {}).get("scorer_control")
        if found and row in metrics["models"]:
            controls[row] = ScorerControl.from_dict(found)
            metrics["models"][row]["scorer_control"] = found
    tables = [with_control_marks(t, controls) for t in tables]
    return [*tables, *control_tables(group.benchmark, controls, 1)], {"metrics": metrics}


def _read_all(group: Group, reader: Callable[[StoredRun, list[str]], tuple[dict, set[str]]]) -> tuple:
    """Rows of every model from the run chosen for it, in the group's model order, and the classes seen."""
    by_run: dict[str, list[str]] = {}
    for row, run in group.models.items():
        by_run.setdefault(run.run_id, []).append(row)
    runs = {run.run_id: run for run in group.runs}
    found: dict[str, Any] = {}
    classes: set[str] = set()
    for run_id, rows in by_run.items():
        read, run_classes = reader(runs[run_id], [group.written[row] for row in rows])
        found.update({row: _renamed(read[group.written[row]], row) for row in rows if group.written[row] in read})
        classes |= run_classes
    return {m: found[m] for m in group.models if m in found}, classes


def _renamed(value: Any, row: str) -> Any:
    return replace(value, model=row) if isinstance(value, ModelPairs) else value


def tt_ztests(metrics: dict[str, Any], pairs: dict[str, ModelPairs], adjustment: str):
    """Pairwise z-tests on TT: rate = the seed-averaged TT, n = prompts the model answered."""
    rates = {}
    for model, found in metrics["models"].items():
        tt = found["overall"]["TT"]["value"]
        prompts = prompts_answered(pairs[model])
        rates[model] = (tt / 100.0 if prompts else 0.0, prompts)
    return pairwise_ztests(rates, adjustment)


def prompts_answered(pairs: ModelPairs) -> int:
    """The n of a z-test on a model's rate: the prompts it answered (a prompt's seeds are not independent)."""
    return len(np.unique(pairs.pairs.prompt_ids))


def _unique_names(tables: list[Table]) -> list[Table]:
    seen: Counter = Counter()
    unique = []
    for table in tables:
        seen[table.name] += 1
        unique.append(table if seen[table.name] == 1 else replace(table, name=f"{table.name}_{seen[table.name]}"))
    return unique


def _nothing_matches(store: Store, benchmark, dataset, run_ids) -> str:
    from trusteval.report.trustgpt_collect import TRUSTGPT_BENCHMARKS

    wanted = ", ".join(f"{k} {v}" for k, v in (("benchmark", benchmark), ("dataset", dataset), ("runs", run_ids)) if v)
    return (
        f"no runs of {', '.join((*TABLE_BENCHMARKS, *TRUSTGPT_BENCHMARKS))} in the store '{store.path}'"
        + (f" match {wanted}" if wanted else "")
        + "; `trusteval runs --store ...` lists what is there"
    )
