"""`trusteval-bias`: the TrustEval paper's attribute-level toxicity disparity (section 3.2, Tables 7 and 8).

Generation and scoring are exactly those of `trusteval-toxicity` (same requests, same scorers), so running
bias after toxicity on the same dataset, models and seeds reuses every answer and every score: request and
score keys are content hashes. From the same classified pairs: TT_c per attribute class, sigma (population,
ddof = 0), delta = max - min, rho = max / min (n/a when the minimum is 0), stratified bootstrap intervals, and
Kendall's tau between the model rankings by sigma, delta and rho (see metrics/bias.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trusteval.benchmarks.base import Plan, Results, ScoreBook
from trusteval.benchmarks.trusteval_toxicity import (
    RESPONSE_TASK,
    ModelPairs,
    TrustEvalToxicity,
    collect_pairs,
    left_out_notes,
    scorer_notes,
)
from trusteval.config import RunSpec
from trusteval.data.sources import DataContext
from trusteval.errors import UsageError
from trusteval.metrics.bias import AttributeBias, attribute_bias, rank_agreement
from trusteval.report import paper_tables
from trusteval.store import RunItem


def dataset_classes(prompts: Sequence[Any]) -> list[str]:
    return sorted({p.category for p in prompts if p.category is not None})


class TrustEvalBias(TrustEvalToxicity):
    name = "trusteval-bias"

    def plan(self, data: DataContext) -> Plan:
        plan = super().plan(data)
        unlabelled = sum(1 for p in plan.prompts if p.category is None)
        classes = dataset_classes(plan.prompts)
        if unlabelled or len(classes) < 2:
            raise UsageError(
                f"dataset '{self.dataset_name}': bias compares attribute classes, but "
                + (f"{unlabelled} selected prompts have no class" if unlabelled else f"the selection has {classes}")
                + "; choose a dataset with attribute classes (or a larger --limit)"
            )
        return plan

    def results(
        self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: Mapping[str, dict[str, Any]]
    ) -> Results:
        by_model = collect_pairs(items, scores, self.spec.threshold, self.spec.prompt_toxicity)
        classes = dataset_classes([item.prompt for item in items])
        return self.bias_results(by_model, scorer_info.get(RESPONSE_TASK, {}), classes)

    def bias_results(
        self, by_model: Mapping[str, ModelPairs], info: Mapping[str, Any], classes: Sequence[str]
    ) -> Results:
        """Metrics and tables from classified pairs; `classes` are those of the dataset selection."""
        bias: dict[str, AttributeBias] = {
            model: attribute_bias(found.pairs, found.categories, resamples=self.spec.resamples, classes=classes)
            for model, found in by_model.items()
        }
        agreements = rank_agreement(bias)
        metrics: dict[str, Any] = {
            "dataset": self.dataset_name,
            "classes": list(classes),
            "models": {
                model: {
                    "pairs": len(by_model[model].pairs),
                    "skipped": dict(by_model[model].skipped),
                    **result.as_dict(),
                }
                for model, result in bias.items()
            },
            "rank_agreement": [a.as_dict() for a in agreements],
        }
        dataset = self.dataset_name.split("?")[0]
        notes = (
            *scorer_notes(self.spec, info),
            f"Seeds {','.join(map(str, self.spec.seeds))} averaged; {self.spec.resamples} bootstrap resamples.",
            *left_out_notes(by_model),
        )
        tables = [
            paper_tables.bias_table(dataset, classes, bias, notes),
            paper_tables.rank_agreement_table(dataset, agreements),
            paper_tables.bias_seed_table(dataset, bias),
        ]
        return Results(metrics, tables)


def create(spec: RunSpec) -> TrustEvalBias:
    return TrustEvalBias(spec)
