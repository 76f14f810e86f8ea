"""The TrustEval paper's tables as Table records, one row per model (layouts of Tables 5 to 10).

Pure layout: every function takes computed metrics and returns a Table; a single run and `trusteval tables`
(every matching run in a store) share them, so both print the same numbers the same way.

- Table 5 (per dataset): T2T / T2NT / NT2T / NT2NT / TT.        - Table 6: TT with its 95% interval.
- Table 7 (COLD) and 8 (other datasets): TT per attribute class, then σ, Δ, ρ, with intervals.
- Table 9: judge validation.                                     - Table 10: avoidance rate per class.
- Beside them: the across-seed spread (`*_seeds`), Kendall's τ between the bias rankings, and pairwise
  two-proportion z-tests between models.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from trusteval.metrics.agreement import JudgeValidation
from trusteval.metrics.avoidance import OVERALL, AvoidanceRate
from trusteval.metrics.bias import DISPARITIES, SYMBOLS, AttributeBias, RankAgreement
from trusteval.metrics.stats import Comparison, Estimate
from trusteval.metrics.toxicity import CATEGORIES
from trusteval.records import ScoreStatus
from trusteval.tables.table import Cell, Table

if TYPE_CHECKING:
    from trusteval.scorers.judge_validity import StoredValidation

Rates = Mapping[str, Estimate]


# Datasets whose table titles say what they are: the TrustEval benchmarks run the translations for `hatexplain`
# and `toxicspans` (trusteval.specs.trusteval_dataset, when the run spec is built); the English originals are
# named explicitly.
DATASET_TITLES = {
    "tiseval-hatexplain": "HateXplain, the paper's Chinese translation",
    "tiseval-toxicspans": "ToxicSpans, the paper's Chinese translation",
    "hatexplain-en": "HateXplain, English original",
    "toxicspans-en": "ToxicSpans, English original",
}


def dataset_title(dataset: str) -> str:
    """The dataset label of a table title: 'tiseval-hatexplain: HateXplain, the paper's Chinese translation';
    a `file:` dataset by its file name (shown_dataset)."""
    what = DATASET_TITLES.get(dataset.split("?")[0])
    return f"{dataset}: {what}" if what else shown_dataset(dataset)


def dataset_stem(dataset: str) -> str:
    """A file-name-safe form of a dataset label ('cold', 'cold?split=dev' -> 'cold_split_dev')."""
    return re.sub(r"[^0-9A-Za-z]+", "_", dataset).strip("_") or "dataset"


def shown_dataset(dataset: str) -> str:
    """A dataset as a table title shows it: a `file:` dataset by its file name, not its absolute path
    ('file:/home/me/data/x.csv?text=t' -> 'file:x.csv?text=t'); the notes keep the full source."""
    if not dataset.startswith("file:"):
        return dataset
    path, sep, query = dataset[len("file:") :].partition("?")
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1] or path
    return f"file:{name}{sep}{query}"


def table5(dataset: str, overall: Mapping[str, Rates], notes: Sequence[str] = ()) -> Table:
    return Table(
        name=f"table5_{dataset_stem(dataset)}",
        title=f"Table 5 ({dataset_title(dataset)}): prompt-response toxicity categories (%)",
        columns=("Model", *CATEGORIES),
        rows=tuple((model, *(rates[c] for c in CATEGORIES)) for model, rates in overall.items()),
        notes=tuple(notes),
    )


def _seed_mean(estimate: Estimate) -> float:
    return float(np.mean(estimate.seed_values)) if estimate.seed_values else float("nan")


def _interval_text(estimate: Estimate) -> str:
    """'[low, high]', or 'n/a' like the value beside it when no pair was scored (a model that failed)."""
    if math.isnan(estimate.low) or math.isnan(estimate.high):
        return "n/a"
    return f"[{estimate.low:.2f}, {estimate.high:.2f}]"


def table6(dataset: str, overall: Mapping[str, Rates], notes: Sequence[str] = ()) -> Table:
    return Table(
        name=f"table6_{dataset_stem(dataset)}",
        title=f"Table 6 ({dataset_title(dataset)}): total toxicity TT (%) with 95% bootstrap interval",
        columns=("Model", "TT", "95% CI", "seed mean", "seed sd", "pairs"),
        rows=tuple(
            (
                model,
                rates["TT"].value,
                _interval_text(rates["TT"]),
                _seed_mean(rates["TT"]),
                rates["TT"].seed_std,
                rates["TT"].n,
            )
            for model, rates in overall.items()
        ),
        notes=tuple(notes),
    )


def toxicity_by_category(dataset: str, per_category: Mapping[str, Mapping[str, Rates]], notes=()) -> Table:
    return Table(
        name=f"toxicity_by_category_{dataset_stem(dataset)}",
        title=f"Toxicity categories per attribute class ({dataset_title(dataset)}, %)",
        columns=("Model", "Class", *CATEGORIES),
        rows=tuple(
            (model, category, *(rates[c] for c in CATEGORIES))
            for model, categories in per_category.items()
            for category, rates in categories.items()
        ),
        notes=tuple(notes),
    )


def seed_spread(name: str, title: str, rows: Mapping[str, Mapping[str, Estimate | None]], notes=()) -> Table:
    """For each model and statistic: the mean and the sample standard deviation (n/a under two seeds) of its
    per-seed values."""
    statistics = list(next(iter(rows.values()), {}))
    columns = ["Model", "seeds"]
    for statistic in statistics:
        columns += [f"{statistic} seed mean", f"{statistic} seed sd"]
    body = []
    for model, estimates in rows.items():
        row: list[Cell] = [model, max((len(e.seed_values) for e in estimates.values() if e), default=0)]
        for statistic in statistics:
            estimate = estimates.get(statistic)
            spread = estimate.seed_std if estimate and len(estimate.seed_values) >= 2 else None
            row += [_seed_mean(estimate) if estimate else None, spread]
        body.append(tuple(row))
    return Table(name=name, title=title, columns=tuple(columns), rows=tuple(body), notes=tuple(notes))


def bias_table_number(dataset: str) -> int:
    return 7 if dataset.split("?")[0] == "cold" else 8


def bias_table(
    dataset: str, classes: Sequence[str], by_model: Mapping[str, AttributeBias], notes: Sequence[str] = ()
) -> Table:
    number = bias_table_number(dataset)
    rows = []
    for model, bias in by_model.items():
        rows.append((model, *(bias.tt.get(c) for c in classes), bias.sigma, bias.delta, bias.rho))
    return Table(
        name=f"table{number}_{dataset_stem(dataset)}",
        title=f"Table {number} ({dataset_title(dataset)}): total toxicity TT (%) per attribute class, "
        "and its disparity",
        columns=("Model", *(f"TT {c}" for c in classes), "σ", "Δ", "ρ"),
        rows=tuple(rows),
        notes=(
            "σ: population standard deviation (ddof = 0) of the TT per class; Δ = max - min (percentage points); "
            "ρ = max / min (n/a when the smallest TT is 0). Computed from the seed-averaged TT in the row.",
            "[low, high]: 95% bootstrap interval, prompts resampled within each class.",
            *_bias_reasons(by_model),
            *notes,
        ),
        show_intervals=True,
    )


def _bias_reasons(by_model: Mapping[str, AttributeBias]) -> list[str]:
    found = []
    for model, bias in by_model.items():
        if bias.reason:
            found.append(f"{model}: {bias.reason}")
        elif bias.rho_undefined_resamples:
            found.append(
                f"{model}: ρ undefined in {bias.rho_undefined_resamples} of {bias.resamples} resamples (a class "
                "resampled to TT = 0); its interval uses the others"
            )
    return found


def bias_seed_table(dataset: str, by_model: Mapping[str, AttributeBias]) -> Table:
    number = bias_table_number(dataset)
    rows = {model: {SYMBOLS[name]: bias.statistic(name) for name in DISPARITIES} for model, bias in by_model.items()}
    return seed_spread(
        f"table{number}_{dataset_stem(dataset)}_seeds",
        f"Table {number} ({dataset_title(dataset)}): σ, Δ, ρ of each seed's TT per class, across seeds",
        rows,
        (
            "The table value is the statistic of the seed-averaged TT; here the statistic of every seed, then "
            "its mean and sample standard deviation across seeds.",
            *_rho_seed_notes(by_model),
        ),
    )


def _rho_seed_notes(by_model: Mapping[str, AttributeBias]) -> list[str]:
    """ρ is undefined in a seed where some class has TT 0: then its seed mean covers fewer seeds than σ's."""
    found = []
    for model, bias in by_model.items():
        seeds = len(bias.sigma.seed_values)
        used = len(bias.rho.seed_values) if bias.rho is not None else 0
        if bias.rho is not None and used < seeds:
            found.append(
                f"{model}: ρ seed mean over {used} of {seeds} seeds (ρ undefined in the other "
                f"{seeds - used}: a class had TT 0 in that seed)"
            )
    return found


def rank_agreement_table(dataset: str, agreements: Sequence[RankAgreement], notes: Sequence[str] = ()) -> Table:
    return Table(
        name=f"bias_rank_agreement_{dataset_stem(dataset)}",
        title=f"Kendall's τ between the model rankings by σ, Δ and ρ ({dataset_title(dataset)})",
        columns=("Rankings", "τ", "models", "note"),
        rows=tuple((f"{SYMBOLS[a.first]} vs {SYMBOLS[a.second]}", a.tau, a.models, a.reason or "") for a in agreements),
        notes=("Kendall's τ-b (ties counted as in scipy.stats.kendalltau).", *notes),
        digits=3,
    )


def ztest_table(
    dataset: str, metric: str, comparisons: Sequence[Comparison], adjustment: str, notes: Sequence[str] = ()
) -> Table:
    adjusted = adjustment != "none"
    columns = ["Model A", "Model B", f"{metric} A (%)", f"{metric} B (%)", "z", "p"]
    if adjusted:
        columns.append(f"p ({adjustment})")
    rows = []
    for c in comparisons:
        row: list[Cell] = [c.first, c.second, 100 * c.test.rate_a, 100 * c.test.rate_b, c.test.z, _p(c.test.p_value)]
        if adjusted:
            row.append(_p(c.p_adjusted))
        rows.append(tuple(row))
    return Table(
        name=f"ztests_{metric.lower()}_{dataset_stem(dataset)}",
        title=f"Pairwise two-proportion z-tests on {metric} ({dataset_title(dataset)})",
        columns=tuple(columns),
        rows=tuple(rows),
        notes=(
            "Two-sided, pooled standard error; rate = the seed-averaged value, n = prompts answered (a prompt's "
            "seeds are not counted as independent evidence).",
            f"p-value adjustment: {adjustment}"
            + (
                " (Holm step-down over every pair in this table)"
                if adjusted
                else " (as in the paper; pass --p-adjust holm for Holm)"
            ),
            *notes,
        ),
        digits=3,
    )


def _p(value: float) -> Cell:
    if math.isnan(value):
        return None
    return f"{value:.2e}" if value < 0.001 else f"{value:.3f}"


def avoidance_table(
    dataset: str, classes: Sequence[str], by_model: Mapping[str, Mapping[str, AvoidanceRate]], notes=()
) -> Table:
    rows = []
    for model, rates in by_model.items():
        unparsed = rates[OVERALL].unparsed
        other = sum(n for status, n in rates[OVERALL].not_judged.items() if status != ScoreStatus.UNPARSED)
        judged = rates[OVERALL].judged
        rows.append((model, *(rates[c].estimate if c in rates else None for c in classes),
                     rates[OVERALL].estimate, judged, unparsed, other))  # fmt: skip
    return Table(
        name=f"table10_{dataset_stem(dataset)}",
        title=f"Table 10 ({dataset_title(dataset)}): avoidance rate AR (%) per attribute class with 95% bootstrap "
        "interval",
        columns=("Model", *(f"AR {c}" for c in classes), "AR all", "judged", "unparsed", "not judged"),
        rows=tuple(rows),
        notes=(
            "AR = 100 x mean(a_i), a_i = 1 when the judge finds the response avoids harm; unparsed judgements "
            "and failed calls are left out of AR and counted here.",
            *notes,
        ),
        show_intervals=True,
    )


def avoidance_seed_table(dataset: str, classes: Sequence[str], by_model) -> Table:
    rows = {
        model: {f"AR {c}": rates[c].estimate if c in rates else None for c in (*classes, OVERALL)}
        for model, rates in by_model.items()
    }
    return seed_spread(
        f"table10_{dataset_stem(dataset)}_seeds",
        f"Table 10 ({dataset_title(dataset)}): avoidance rate across seeds",
        rows,
    )


def validation_table(validations: Mapping[str, JudgeValidation], notes: Sequence[str] = ()) -> Table:
    rows = []
    for judge, v in validations.items():
        rows.append((judge, v.spearman.r, _p(v.spearman.p_value), v.pearson.r, v.agreement, v.cohen_kappa,
                     v.fleiss_kappa, v.icc, v.pairs, v.unparsed_judgements))  # fmt: skip
    return Table(
        name="table9_judge_validation",
        title="Table 9: LLM judge against human labels",
        columns=(
            "Judge",
            "Spearman ρ",
            "p",
            "Pearson r",
            "agreement (%)",
            "Cohen's κ",
            "Fleiss' κ (humans)",
            "ICC(2,1)",
            "pairs",
            "unparsed",
        ),
        rows=tuple(rows),
        notes=(
            "Correlations: the judge's mean over repeats against the mean human score. Agreement and Cohen's κ: "
            "the judge's label against the human majority (ties left out). ICC(2,1): two-way random, absolute "
            "agreement, single run, over the repeats, on pairs every repeat could parse.",
            *_validation_counts(validations),
            *notes,
        ),
        digits=3,
    )


def degenerate_notes(records: Sequence[StoredValidation]) -> list[str]:
    """A warning for every stored judge validation whose judge gave one verdict to > 95% of the pairs."""
    return [
        record.verdicts.note(record.label) or ""
        for record in records
        if record.verdicts is not None and record.verdicts.degenerate
    ]


def _validation_counts(validations: Mapping[str, JudgeValidation]) -> list[str]:
    found = []
    for judge, v in validations.items():
        label = "its first repeat" if v.judge_label == "first" else "the majority of its repeats"
        consistency = "n/a" if math.isnan(v.icc_consistency) else f"{v.icc_consistency:.3f}"
        found.append(
            f"{judge}: {v.pairs} pairs, {v.annotators} annotators, {v.repeats} repeats; judge label: {label}; "
            f"{v.unparsed_judgements} unparsed judgements ({v.pairs_without_judgement} pairs with none, left out "
            f"of the correlations); {v.agreement_pairs} pairs in agreement and κ ({v.human_ties} human ties left "
            f"out); ICC over {v.icc_pairs} pairs (ICC(3,1), consistency: {consistency})"
        )
        found += [f"{judge}: {why}" for why in _undefined_reasons(v)]
    return found


def _undefined_reasons(v: JudgeValidation) -> list[str]:
    """Why a Table 9 statistic is n/a."""
    reasons = []
    if math.isnan(v.spearman.r):
        reasons.append("correlations n/a: under 2 judged pairs, or the judge or the people gave one score only")
    if math.isnan(v.cohen_kappa):
        reasons.append("Cohen's κ n/a: no pair to compare, or judge and people both used one label only")
    if math.isnan(v.fleiss_kappa):
        reasons.append("Fleiss' κ n/a: it needs at least 2 annotators who do not all use one label")
    if math.isnan(v.icc):
        reasons.append(
            "ICC n/a: it needs 2 repeats and 2 pairs every repeat parsed, with some variation between pairs "
            "(a judge that gives every pair the same answer has none)"
        )
    return reasons
