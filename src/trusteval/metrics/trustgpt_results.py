"""TrustGPT results as frozen dataclasses: what the toxicity, AVA and PVA benchmarks measured, per model.

Tables and plots read these fields. `as_dict()` is the JSON edge: it writes the same keys in the same order as
the benchmarks' metrics always had (`report --json`, metrics files, tests/golden); `from_dict()` reads that form
back (tables over several stored runs, plots drawn from a metrics dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trusteval.metrics.stats import Estimate
from trusteval.metrics.trustgpt import LengthBin


def estimate_from_dict(data: Mapping[str, Any]) -> Estimate:
    return Estimate(data["value"], data["low"], data["high"], data["n"], tuple(data.get("seed_values", ())))


def optional_estimate(data: Mapping[str, Any] | None) -> Estimate | None:
    return None if data is None else estimate_from_dict(data)


@dataclass(frozen=True)
class ToxicitySummary:
    """The non-refused responses of one prompt word (or of all words) of one model."""

    average_toxicity: Estimate
    rta: Estimate
    responses: int
    refusals: int
    scored: int
    toxic_share: float
    quantiles: dict[str, float]  # "10", "25", "50", "75", "90" -> the percentile of the toxicity scores
    histogram: list[int]

    def as_dict(self) -> dict[str, Any]:
        return {
            "average_toxicity": self.average_toxicity.as_dict(),
            "rta": self.rta.as_dict(),
            "responses": self.responses,
            "refusals": self.refusals,
            "scored": self.scored,
            "toxic_share": self.toxic_share,
            "quantiles": dict(self.quantiles),
            "histogram": list(self.histogram),
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ToxicitySummary:
        return ToxicitySummary(
            estimate_from_dict(data["average_toxicity"]), estimate_from_dict(data["rta"]), data["responses"],
            data["refusals"], data["scored"], data["toxic_share"], dict(data["quantiles"]), list(data["histogram"]),
        )  # fmt: skip


@dataclass(frozen=True)
class ToxicityModel:
    by_word: dict[str, ToxicitySummary]
    overall: ToxicitySummary
    length: list[LengthBin]
    skipped: dict[str, int] = field(default_factory=dict)
    empty: int = 0
    off_language: dict[str, Any] | None = None  # trustgpt_common.language_checks of the model

    def as_dict(self) -> dict[str, Any]:
        return {
            "by_word": {word: summary.as_dict() for word, summary in self.by_word.items()},
            "overall": self.overall.as_dict(),
            "length": [b.as_dict() for b in self.length],
            "skipped": dict(self.skipped),
            "empty": self.empty,
            "off_language": self.off_language,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ToxicityModel:
        return ToxicityModel(
            by_word={word: ToxicitySummary.from_dict(s) for word, s in data["by_word"].items()},
            overall=ToxicitySummary.from_dict(data["overall"]),
            length=[LengthBin.from_dict(b) for b in data["length"]],
            skipped=dict(data.get("skipped") or {}),
            empty=data.get("empty", 0),
            off_language=data.get("off_language"),
        )


@dataclass(frozen=True)
class ToxicityResult:
    words: list[str]
    histogram_edges: list[float]
    models: dict[str, ToxicityModel]
    generation: dict[str, Any] = field(default_factory=dict)
    scorers: dict[str, str | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    benchmark: str = "trustgpt-toxicity"

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "words": list(self.words),
            "histogram_edges": list(self.histogram_edges),
            "models": {model: found.as_dict() for model, found in self.models.items()},
            "generation": self.generation,
            "scorers": self.scorers,
            "warnings": list(self.warnings),
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> ToxicityResult:
        return ToxicityResult(
            words=list(data["words"]),
            histogram_edges=list(data["histogram_edges"]),
            models={model: ToxicityModel.from_dict(m) for model, m in data["models"].items()},
            generation=dict(data.get("generation") or {}),
            scorers=dict(data.get("scorers") or {}),
            warnings=list(data.get("warnings") or []),
            benchmark=data.get("benchmark", "trustgpt-toxicity"),
        )


@dataclass(frozen=True)
class AvaModel:
    """Hard and soft accuracy (%) with intervals, the plain shares, and the parsed answers per norm class."""

    hard: Estimate
    soft: Estimate
    hard_value: float
    soft_value: float
    answers: int
    unparsed: int
    confusion: dict[str, dict[str, int]]  # norm class -> answer letter (or "unparsed") -> count
    skipped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "hard": self.hard.as_dict(),
            "soft": self.soft.as_dict(),
            "hard_value": self.hard_value,
            "soft_value": self.soft_value,
            "answers": self.answers,
            "unparsed": self.unparsed,
            "confusion": {label: dict(counts) for label, counts in self.confusion.items()},
            "skipped": dict(self.skipped),
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> AvaModel:
        return AvaModel(
            estimate_from_dict(data["hard"]), estimate_from_dict(data["soft"]), data["hard_value"],
            data["soft_value"], data["answers"], data["unparsed"],
            {label: dict(counts) for label, counts in data["confusion"].items()}, dict(data.get("skipped") or {}),
        )  # fmt: skip


@dataclass(frozen=True)
class AvaResult:
    labels: list[str]
    models: dict[str, AvaModel]
    generation: dict[str, Any] = field(default_factory=dict)
    benchmark: str = "trustgpt-ava"

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "labels": list(self.labels),
            "models": {model: found.as_dict() for model, found in self.models.items()},
            "generation": self.generation,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> AvaResult:
        return AvaResult(
            labels=list(data["labels"]),
            models={model: AvaModel.from_dict(m) for model, m in data["models"].items()},
            generation=dict(data.get("generation") or {}),
            benchmark=data.get("benchmark", "trustgpt-ava"),
        )


@dataclass(frozen=True)
class LabelRefusals:
    """RtA (%) of the norms of one class, with the responses and refusals it counts."""

    rta: Estimate
    responses: int
    refusals: int

    def as_dict(self) -> dict[str, Any]:
        return {"rta": self.rta.as_dict(), "responses": self.responses, "refusals": self.refusals}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> LabelRefusals:
        return LabelRefusals(estimate_from_dict(data["rta"]), data["responses"], data["refusals"])


@dataclass(frozen=True)
class PvaModel:
    by_label: dict[str, LabelRefusals]
    skipped: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The stored form keeps the norm classes and "skipped" side by side in one dict."""
        return {**{label: found.as_dict() for label, found in self.by_label.items()}, "skipped": dict(self.skipped)}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> PvaModel:
        by_label = {label: LabelRefusals.from_dict(v) for label, v in data.items() if label != "skipped"}
        return PvaModel(by_label, dict(data.get("skipped") or {}))


@dataclass(frozen=True)
class PvaResult:
    labels: list[str]
    models: dict[str, PvaModel]
    generation: dict[str, Any] = field(default_factory=dict)
    scorers: dict[str, str | None] = field(default_factory=dict)
    benchmark: str = "trustgpt-pva"

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "labels": list(self.labels),
            "models": {model: found.as_dict() for model, found in self.models.items()},
            "generation": self.generation,
            "scorers": self.scorers,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> PvaResult:
        return PvaResult(
            labels=list(data["labels"]),
            models={model: PvaModel.from_dict(m) for model, m in data["models"].items()},
            generation=dict(data.get("generation") or {}),
            scorers=dict(data.get("scorers") or {}),
            benchmark=data.get("benchmark", "trustgpt-pva"),
        )
