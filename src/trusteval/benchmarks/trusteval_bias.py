"""`trusteval-bias`: the TrustEval paper's attribute-level toxicity disparity (section 3.2, Tables 7 and 8).

Generation and scoring are exactly those of `trusteval-toxicity` (same requests, same scorers), so running
bias after toxicity on the same dataset, models and seeds reuses every answer and every score: request and
score keys are content hashes. From the same classified pairs: TT_c per attribute class, sigma (population,
ddof = 0), delta = max - min, rho = max / min (n/a when the minimum is 0), stratified bootstrap intervals, and
Kendall's tau between the model rankings by sigma, delta and rho (see metrics/bias.py).

Classes that are not sensitive attributes (`none`: non-toxic or no target; `multiple`: several targets) are left
out of sigma, delta, rho and tau by default and named under the table with their pair counts; option
`include_non_attribute=true` keeps them (SPEC.md, "Attribute classes for bias").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import Field

from trusteval.benchmarks import trusteval_bias_correction as correction
from trusteval.benchmarks import trusteval_toxicity as toxicity
from trusteval.benchmarks.base import Plan, Results, ScoreBook, ScorerInfos, task_scorer
from trusteval.benchmarks.common import read_benchmark_options
from trusteval.benchmarks.trusteval_toxicity import (
    RESPONSE_TASK,
    ModelPairs,
    TrustEvalToxicity,
    collect_pairs,
    left_out_notes,
    prompt_toxicity_note,
    response_checks,
    response_notes,
    scorer_notes,
)
from trusteval.config import RunSpec
from trusteval.data.class_notes import class_rule_notes
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.metrics import group_neutral
from trusteval.metrics.bias import AttributeBias, attribute_bias, class_outcomes, rank_agreement
from trusteval.metrics.scorer_bias import ScorerControl
from trusteval.metrics.scorer_control_build import class_control_for, neutral_outcomes
from trusteval.options import Flag
from trusteval.scorers.base import ScorerInfo
from trusteval.scorers.identity import TERMS, language_of
from trusteval.store import RunItem
from trusteval.tables import paper_tables
from trusteval.tables.control_tables import control_tables, with_control_marks
from trusteval.tables.corrected_tables import corrected_table
from trusteval.tables.table import Table

NON_ATTRIBUTE_CLASSES = ("none", "multiple")


def _language(items: Sequence[RunItem]) -> str:
    return language_of(items[0].prompt.lang if items else "zh")


def spec_groups(lang: str) -> dict[str, list[str]]:
    """SPEC's TrustEval (zh) or TrustGPT (en) groups per type: those the control swaps between."""
    groups: dict[str, list[str]] = {}
    for g in TERMS[lang]:
        groups.setdefault(g.group_type, []).append(g.group)
    return groups


def dataset_classes(prompts: Sequence[Any]) -> list[str]:
    return sorted({p.category for p in prompts if p.category is not None})


class Options(toxicity.Options):
    include_non_attribute: Flag = Field(
        False, description="count the 'none' and 'multiple' classes among the attribute classes compared"
    )
    misclassification: Literal["off", "rogan-gladen"] = Field(
        "off", description="rogan-gladen: also TT_c corrected for the scorer's class-wise error (our addition)"
    )


class TrustEvalBias(TrustEvalToxicity):
    name = "trusteval-bias"
    options_model = Options

    def __init__(self, spec: RunSpec) -> None:
        super().__init__(spec)
        options = read_benchmark_options(Options, spec, self.name)
        self.include_non_attribute = options.include_non_attribute
        self.misclassification = options.misclassification

    def attribute_classes(self, classes: Sequence[str]) -> list[str]:
        """The classes sigma, delta, rho and tau compare."""
        if self.include_non_attribute:
            return list(classes)
        return [c for c in classes if c not in NON_ATTRIBUTE_CLASSES]

    def plan(self, data: DataContext) -> Plan:
        plan = super().plan(data)
        unlabelled = sum(1 for p in plan.prompts if p.category is None)
        classes = self.attribute_classes(dataset_classes(plan.prompts))
        if unlabelled or len(classes) < 2:
            raise UsageError(
                f"dataset '{self.dataset_name}': bias compares attribute classes, but "
                + (f"{unlabelled} selected prompts have no class" if unlabelled else f"the selection has {classes}")
                + "; choose a dataset with attribute classes (or a larger --limit)"
            )
        return plan

    def control_groups(self, items: Sequence[RunItem]) -> group_neutral.ControlGroups:
        lang = _language(items)
        return group_neutral.control_groups(lang, spec_groups(lang))

    def counterfactual_texts(self, items: Sequence[RunItem]) -> list[str]:
        """Every text the scorer bias control scores: each response's group-swapped versions (over the groups
        of every type: the classes compared are group types) and the built-in sentences."""
        responses = ((i.response, None) for i in items if i.response and i.response.strip())
        return group_neutral.all_texts(self.control_groups(items), responses)

    def results(self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: ScorerInfos) -> Results:
        by_model = collect_pairs(items, scores, self.spec.threshold, self.spec.prompt_toxicity, self.off_language)
        classes = dataset_classes([item.prompt for item in items])
        results = self.bias_results(by_model, task_scorer(scorer_info, RESPONSE_TASK), classes)
        controls = self.controls(items, scores, by_model, classes)
        models = results.metrics["models"]
        for model, control in controls.items():
            models[model]["scorer_control"] = control.as_dict()
        tables = [with_control_marks(t, controls) for t in results.tables]
        tables += control_tables(self.name, controls, 1)
        if self.misclassification != "off":
            tables.append(self.corrected(items, scores, by_model, classes, models))
        return Results(results.metrics, tables)

    def corrected(self, items, scores: ScoreBook, by_model: Mapping[str, ModelPairs], classes, models) -> Table:
        """TT_c corrected for the scorer's class-wise error (option misclassification=rogan-gladen)."""
        compared = self.attribute_classes(classes)
        validation = correction.validation_by_class(items, scores.get(RESPONSE_TASK, {}), self.spec.threshold)
        raw, found = {}, {}
        for model, pairs in by_model.items():
            keep = np.isin(pairs.categories, compared)
            subset, categories = pairs.pairs.subset(keep), pairs.categories[keep]
            raw[model] = attribute_bias(subset, categories, resamples=self.spec.resamples, classes=compared)
            outcomes = {c: class_outcomes(subset, categories, c)[0] for c in compared}
            found[model] = correction.corrected_for(outcomes, validation, resamples=self.spec.resamples)
            models[model]["corrected"] = found[model].as_dict()
        return corrected_table(self.dataset_name, compared, raw, found)

    def controls(
        self, items: Sequence[RunItem], scores: ScoreBook, by_model: Mapping[str, ModelPairs], classes: Sequence[str]
    ) -> dict[str, ScorerControl]:
        """Each model's scorer bias control on the toxicity rate (%) of its responses' group-swapped versions."""
        setup = self.control_groups(items)
        values = group_neutral.copy_values(scores.get(RESPONSE_TASK, {}), self.counterfactual_texts(items),
                                           rate_threshold=self.spec.threshold)  # fmt: skip
        prompt_ids: set[str] = set()
        answered: dict[str, list[tuple[str, int, str, str | None]]] = {}
        for i in items:
            prompt_ids.add(i.prompt.id)
            if i.response and i.response.strip():
                answered.setdefault(i.model, []).append((i.prompt.id, i.seed, i.response, i.prompt.category))
        ranks = {pid: rank for rank, pid in enumerate(sorted(prompt_ids))}  # as PairColumns codes prompts
        compared = self.attribute_classes(classes)
        found = {}
        for model, pairs in by_model.items():
            mine = [(ranks[pid], seed, text, category) for pid, seed, text, category in answered.get(model, [])]
            neutral, unscored, kept = neutral_outcomes(setup, mine, values)
            keep = np.isin(pairs.categories, compared)
            subset, categories = pairs.pairs.subset(keep), pairs.categories[keep]
            raw = attribute_bias(subset, categories, resamples=self.spec.resamples, classes=compared)
            if np.isnan(raw.sigma.value):
                found[model] = ScorerControl("TT (%)", "none", {}, notes=[f"no control: {raw.reason}"])
                continue
            found[model] = class_control_for(setup, subset, categories, neutral, raw, values, unscored=unscored,
                                             resamples=self.spec.resamples, kept=kept)  # fmt: skip
        return found

    def bias_results(self, by_model: Mapping[str, ModelPairs], info: ScorerInfo, classes: Sequence[str]) -> Results:
        """Metrics and tables from classified pairs; `classes` are those of the dataset selection."""
        compared = self.attribute_classes(classes)
        left_out = {
            c: sum(int(np.sum(f.categories == c)) for f in by_model.values()) for c in classes if c not in compared
        }
        bias: dict[str, AttributeBias] = {}
        for model, found in by_model.items():
            keep = np.isin(found.categories, compared)
            bias[model] = attribute_bias(
                found.pairs.subset(keep), found.categories[keep], resamples=self.spec.resamples, classes=compared
            )
        agreements = rank_agreement(bias)
        metrics: dict[str, Any] = {
            "dataset": self.dataset_name,
            "classes": list(compared),
            "non_attribute_classes_left_out": left_out,
            "include_non_attribute": self.include_non_attribute,
            "models": {
                model: {
                    "pairs": len(by_model[model].pairs),
                    "skipped": dict(by_model[model].skipped),
                    **response_checks(by_model[model], self.off_language),
                    **result.as_dict(),
                }
                for model, result in bias.items()
            },
            "rank_agreement": [a.as_dict() for a in agreements],
        }
        dataset = self.dataset_name.split("?")[0]
        notes = (
            *scorer_notes(self.spec, info),
            prompt_toxicity_note(self.spec),
            *class_rule_notes(self.dataset_name),
            f"Seeds {','.join(map(str, self.spec.seeds))} averaged; {self.spec.resamples} bootstrap resamples.",
            *left_out_notes(by_model),
            *response_notes(by_model, self.off_language),
            *self._class_notes(left_out),
        )
        metrics["warnings"] = [n for n in notes if n.startswith("WARNING")]
        tables = [
            paper_tables.bias_table(dataset, compared, bias, notes),
            paper_tables.rank_agreement_table(dataset, agreements, self._class_notes(left_out)),
            paper_tables.bias_seed_table(dataset, bias),
        ]
        return Results(metrics, tables)

    def _class_notes(self, left_out: Mapping[str, int]) -> list[str]:
        if self.include_non_attribute:
            return ["Classes that are not sensitive attributes (none, multiple) are kept in σ, Δ, ρ and τ "
                    "(option include_non_attribute=true)."]  # fmt: skip
        if not left_out:
            return []
        counts = ", ".join(f"{c} ({n} pairs)" for c, n in left_out.items())
        return [
            f"Left out of σ, Δ, ρ and τ as not sensitive attributes: {counts}; option include_non_attribute=true "
            "keeps them."
        ]


def create(spec: RunSpec) -> TrustEvalBias:
    return TrustEvalBias(spec)
