"""TrustGPT results as frozen dataclasses: what the toxicity, bias, AVA and PVA benchmarks measured, per model.

Tables and plots read these fields. `as_dict()` is the JSON edge: it writes the same keys in the same order as
the benchmarks' metrics always had (`report --json`, metrics files, tests/golden); `from_dict()` reads that form
back (tables over several stored runs, plots drawn from a metrics dict).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from trusteval.metrics.scorer_bias import ScorerControl
from trusteval.metrics.stats import Estimate
from trusteval.metrics.trustgpt import LengthBin, PairTest


def estimate_from_dict(data: Mapping[str, Any]) -> Estimate:
    return Estimate(data["value"], data["low"], data["high"], data["n"], tuple(data.get("seed_values", ())))


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


@dataclass(frozen=True)
class GroupToxicity:
    """One demographic group's responses of one model (bias benchmark)."""

    type: str  # the group type (gender, race, religion, ...)
    average_toxicity: Estimate
    rta: Estimate
    responses: int
    refusals: int
    scored: int

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "average_toxicity": self.average_toxicity.as_dict(), "rta": self.rta.as_dict(),
                "responses": self.responses, "refusals": self.refusals, "scored": self.scored}  # fmt: skip

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> GroupToxicity:
        average, rta = estimate_from_dict(data["average_toxicity"]), estimate_from_dict(data["rta"])
        return GroupToxicity(data["type"], average, rta, data["responses"], data["refusals"], data["scored"])


@dataclass(frozen=True)
class GroupPair:
    """A Mann-Whitney U test between two groups, with the type of the pair (a group type, or "across")."""

    test: PairTest
    type: str

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self.test), "type": self.type}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> GroupPair:
        return GroupPair(PairTest(**{f.name: data[f.name] for f in fields(PairTest)}), data["type"])


@dataclass(frozen=True)
class MannWhitneyTests:
    groups: list[str]
    pairs: list[GroupPair]
    p: list[list[float]]  # groups x groups
    p_holm: list[list[float]] | None

    def as_dict(self) -> dict[str, Any]:
        return {"groups": list(self.groups), "pairs": [pair.as_dict() for pair in self.pairs], "p": self.p,
                "p_holm": self.p_holm}  # fmt: skip

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> MannWhitneyTests:
        pairs = [GroupPair.from_dict(pair) for pair in data["pairs"]]
        return MannWhitneyTests(list(data["groups"]), pairs, data["p"], data.get("p_holm"))


@dataclass(frozen=True)
class BiasModel:
    by_group: dict[str, GroupToxicity]
    std_by_type: dict[str, float]
    max_slope: float
    mann_whitney: MannWhitneyTests
    skipped: dict[str, int] = field(default_factory=dict)
    scorer_control: ScorerControl | None = None  # metrics/scorer_bias.py: the signed per-response control
    empty: int = 0
    off_language: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "by_group": {group: found.as_dict() for group, found in self.by_group.items()},
            "std_by_type": dict(self.std_by_type),
            "max_slope": self.max_slope,
            "mann_whitney": self.mann_whitney.as_dict(),
            "skipped": dict(self.skipped),
            "scorer_control": self.scorer_control.as_dict() if self.scorer_control else None,
            "empty": self.empty,
            "off_language": self.off_language,
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> BiasModel:
        return BiasModel(
            by_group={group: GroupToxicity.from_dict(found) for group, found in data["by_group"].items()},
            std_by_type=dict(data["std_by_type"]),
            max_slope=data["max_slope"],
            mann_whitney=MannWhitneyTests.from_dict(data["mann_whitney"]),
            skipped=dict(data.get("skipped") or {}),
            scorer_control=ScorerControl.from_dict(data["scorer_control"]) if data.get("scorer_control") else None,
            empty=data.get("empty", 0),
            off_language=data.get("off_language"),
        )


@dataclass(frozen=True)
class BiasResult:
    groups: dict[str, list[str]]  # group type -> its groups
    holm: bool
    article: str
    models: dict[str, BiasModel]
    scorers: dict[str, str | None] = field(default_factory=dict)
    generation: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    statistic: str = "average toxicity"
    benchmark: str = "trustgpt-bias"

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "groups": {t: list(members) for t, members in self.groups.items()},
            "holm": self.holm,
            "article": self.article,
            "models": {model: found.as_dict() for model, found in self.models.items()},
            "statistic": self.statistic,
            "scorers": self.scorers,
            "generation": self.generation,
            "warnings": list(self.warnings),
        }

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> BiasResult:
        return BiasResult(
            groups={t: list(members) for t, members in data["groups"].items()},
            holm=bool(data.get("holm", False)),
            article=data.get("article", ""),
            models={model: BiasModel.from_dict(m) for model, m in data["models"].items()},
            scorers=dict(data.get("scorers") or {}),
            generation=dict(data.get("generation") or {}),
            warnings=list(data.get("warnings") or []),
            statistic=data.get("statistic", "average toxicity"),
            benchmark=data.get("benchmark", "trustgpt-bias"),
        )
