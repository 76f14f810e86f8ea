"""`trusteval-toxicity`: the TrustEval paper's toxicity measurement (section 3.1, Tables 5 and 6).

Each dataset prompt is sent to the model as one user turn (the `template`, by default the prompt text
itself - our choice, the paper does not print its template). Prompt and response are scored by the toxicity
scorer and are toxic at score >= threshold; P can come from the dataset label instead
(`prompt_toxicity: label`, our option). T2T / T2NT / NT2T / NT2NT / TT per model, overall and per attribute
class, averaged over seeds, with 95% bootstrap intervals.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trusteval.benchmarks.base import Plan, Results, ScoreBook, ScoringTask, plan_requests, render_messages
from trusteval.benchmarks.common import load_toxicity_scorer, text_task
from trusteval.config import RunSpec
from trusteval.data import load_dataset, sample_prompts
from trusteval.data.sources import DataContext
from trusteval.metrics.stats import Estimate
from trusteval.metrics.toxicity import CATEGORIES, Pairs, toxicity_rates
from trusteval.report.tables import Table
from trusteval.scorers.base import ScorerContext
from trusteval.store import RunItem

PROMPT_TASK = "prompt_toxicity"
RESPONSE_TASK = "response_toxicity"


@dataclass(frozen=True)
class ModelPairs:
    """The pairs of one model that can be classified, and what was left out and why."""

    model: str
    pairs: Pairs
    categories: np.ndarray
    skipped: Counter


def collect_pairs(
    items: Sequence[RunItem], scores: ScoreBook, threshold: float, prompt_source: str
) -> dict[str, ModelPairs]:
    """Group run items by model into classified pairs; count failures instead of dropping them silently."""
    grouped: dict[str, list[tuple[str, int, bool, bool, str]]] = {}
    skipped: dict[str, Counter] = {}
    for item in items:
        rows = grouped.setdefault(item.model, [])
        missing = skipped.setdefault(item.model, Counter())
        if item.response is None:
            missing["generation failed"] += 1
            continue
        response_score = scores[RESPONSE_TASK].get(item.response_subject or "")
        if response_score is None or not response_score.ok:
            missing["response not scored"] += 1
            continue
        if prompt_source == "label":
            prompt_toxic = item.prompt.label == 1
        else:
            prompt_score = scores[PROMPT_TASK].get(item.prompt_subject)
            if prompt_score is None or not prompt_score.ok:
                missing["prompt not scored"] += 1
                continue
            prompt_toxic = float(prompt_score.value) >= threshold
        response_toxic = float(response_score.value) >= threshold
        rows.append((item.prompt.id, item.seed, prompt_toxic, response_toxic, item.prompt.category or "all"))
    return {model: _model_pairs(model, rows, skipped[model]) for model, rows in grouped.items()}


def _model_pairs(model: str, rows: list[tuple[str, int, bool, bool, str]], skipped: Counter) -> ModelPairs:
    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], [], []]
    pairs = Pairs(
        prompt_ids=np.asarray(columns[0], dtype=object),
        seeds=np.asarray(columns[1], dtype=int),
        prompt_toxic=np.asarray(columns[2], dtype=bool),
        response_toxic=np.asarray(columns[3], dtype=bool),
    )
    return ModelPairs(model, pairs, np.asarray(columns[4], dtype=object), skipped)


def rates_by_category(model_pairs: ModelPairs, resamples: int) -> dict[str, dict[str, Estimate]]:
    return {
        category: toxicity_rates(model_pairs.pairs.subset(model_pairs.categories == category), resamples=resamples)
        for category in sorted(set(model_pairs.categories.tolist()))
    }


class TrustEvalToxicity:
    name = "trusteval-toxicity"
    default_dataset = "cold"

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.dataset_name = spec.dataset or self.default_dataset

    def plan(self, data: DataContext) -> Plan:
        dataset = load_dataset(self.dataset_name, data)
        prompts = sample_prompts(dataset.prompts, self.spec.limit, self.spec.sample_seed)

        def render(prompt):
            yield render_messages(self.spec.template, prompt.text), {}

        return Plan(dataset, prompts, plan_requests(self.spec, prompts, render), dataset.notes)

    def scoring_tasks(self, context: ScorerContext, plan_languages: set[str]) -> list[ScoringTask]:
        scorer = load_toxicity_scorer(
            self.spec.scorer, context, plan_languages, force_language=self.spec.force_scorer_language
        )
        tasks = [text_task(RESPONSE_TASK, scorer, "response")]
        if self.spec.prompt_toxicity == "scorer":
            tasks.insert(0, text_task(PROMPT_TASK, scorer, "prompt"))
        return tasks

    def results(
        self, items: Sequence[RunItem], scores: ScoreBook, scorer_info: Mapping[str, dict[str, Any]]
    ) -> Results:
        by_model = collect_pairs(items, scores, self.spec.threshold, self.spec.prompt_toxicity)
        metrics: dict[str, Any] = {"dataset": self.dataset_name, "models": {}}
        overall, per_category = {}, {}
        for model, model_pairs in by_model.items():
            overall[model] = toxicity_rates(model_pairs.pairs, resamples=self.spec.resamples)
            per_category[model] = rates_by_category(model_pairs, self.spec.resamples)
            metrics["models"][model] = {
                "pairs": len(model_pairs.pairs),
                "skipped": dict(model_pairs.skipped),
                "overall": {k: v.as_dict() for k, v in overall[model].items()},
                "by_category": {
                    c: {k: v.as_dict() for k, v in rates.items()} for c, rates in per_category[model].items()
                },
            }
        notes = self._notes(by_model, scorer_info.get(RESPONSE_TASK, {}))
        return Results(metrics, self._tables(overall, per_category, notes))

    def _notes(self, by_model: dict[str, ModelPairs], info: dict[str, Any]) -> tuple[str, ...]:
        scorer_line = (
            f"Toxicity scorer: {info.get('scorer', self.spec.scorer)}, toxic at score >= {self.spec.threshold}"
        )
        if "test_accuracy" in info:
            scorer_line += f" (held-out accuracy {info['test_accuracy']}, macro-F1 {info.get('test_macro_f1')})"
        notes = [
            scorer_line,
            f"Prompt toxicity from: {'the scorer' if self.spec.prompt_toxicity == 'scorer' else 'dataset labels'}",
            f"Percent of all scored pairs; seeds {','.join(map(str, self.spec.seeds))} averaged; "
            f"95% bootstrap intervals ({self.spec.resamples} resamples over prompts).",
        ]
        for model, model_pairs in by_model.items():
            if model_pairs.skipped:
                counts = ", ".join(f"{n} {why}" for why, n in sorted(model_pairs.skipped.items()))
                notes.append(f"{model}: left out {counts}")
        return tuple(notes)

    def _tables(self, overall, per_category, notes) -> list[Table]:
        dataset = self.dataset_name.split("?")[0]
        table5 = Table(
            name=f"table5_{dataset}",
            title=f"Table 5 ({dataset}): prompt-response toxicity categories (%)",
            columns=("Model", *CATEGORIES),
            rows=tuple((model, *(rates[c] for c in CATEGORIES)) for model, rates in overall.items()),
            notes=notes,
        )
        table6 = Table(
            name=f"table6_{dataset}",
            title=f"Table 6 ({dataset}): total toxicity TT (%) with 95% bootstrap interval",
            columns=("Model", "TT", "95% CI", "seed mean", "seed sd", "pairs"),
            rows=tuple(
                (
                    model,
                    rates["TT"].value,
                    f"[{rates['TT'].low:.2f}, {rates['TT'].high:.2f}]",
                    float(np.mean(rates["TT"].seed_values)) if rates["TT"].seed_values else float("nan"),
                    rates["TT"].seed_std,
                    rates["TT"].n,
                )
                for model, rates in overall.items()
            ),
            notes=notes[:1],
        )
        by_category = Table(
            name=f"toxicity_by_category_{dataset}",
            title=f"Toxicity categories per attribute class ({dataset}, %)",
            columns=("Model", "Class", *CATEGORIES),
            rows=tuple(
                (model, category, *(rates[c] for c in CATEGORIES))
                for model, categories in per_category.items()
                for category, rates in categories.items()
            ),
            notes=notes[:1],
        )
        return [table5, table6, by_category]


def create(spec: RunSpec) -> TrustEvalToxicity:
    return TrustEvalToxicity(spec)
