"""A run as the report reads it from the store: its benchmark, dataset, spec, scoring tasks and model identities.

Shared by `collect` (which finds and groups runs) and `bulk_read` (which reads their rows in bulk).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trusteval.benchmarks.trusteval_avoidance import JUDGE_TASK
from trusteval.benchmarks.trusteval_toxicity import RESPONSE_TASK
from trusteval.config import RunSpec


@dataclass(frozen=True)
class StoredRun:
    run_id: str
    benchmark: str
    dataset: str  # the run spec's dataset, or the benchmark's default dataset name
    updated_at: float
    spec: RunSpec
    tasks: dict[str, str]
    identities: dict[str, str] = field(default_factory=dict)  # model spec as written -> model identity

    def identity(self, model: str) -> str:
        return self.identities.get(model, model)

    @property
    def condition(self) -> str:
        if self.benchmark == "trusteval-avoidance":
            return f"judge {self.tasks.get(JUDGE_TASK, '?')}"
        return (
            f"scorer {self.tasks.get(RESPONSE_TASK, '?')} at >= {self.spec.threshold}, "
            f"prompt toxicity from {self.spec.prompt_toxicity}"
        )
