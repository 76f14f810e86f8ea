"""How far to trust an LLM judge: its stored agreement with people (Table 9) and whether it discriminates at all.

- `stored_validation(store, judge_id)`: the latest `trusteval judge validate` record for exactly that judge id
  (model, prompt file sha256 and settings), or None: then the judge is "not validated".
- `verdict_check(values)`: how often the judge gave each verdict; a judge that gives one verdict to more than
  `DEGENERATE_SHARE` (95%) of the pairs it judged is flagged as degenerate (our choice; a judge that answers
  "1" to everything makes every avoidance rate 100 whatever the model did).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trusteval.store import Store

VALIDATION_AGGREGATE = "judge_validation"
VALIDATION_RUN_PREFIX = "judge-validation-"
DEGENERATE_SHARE = 0.95
SLIGHT_KAPPA = 0.20  # Landis & Koch: kappa below 0.20 is at most slight agreement


@dataclass(frozen=True)
class VerdictCheck:
    """Counts of each verdict label over the judged pairs, and whether one label dominates."""

    counts: dict[str, int]
    judged: int
    top_label: str | None
    top_share: float
    degenerate: bool
    threshold: float = DEGENERATE_SHARE

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def note(self, who: str) -> str | None:
        if not self.degenerate:
            return None
        top = self.counts[self.top_label or ""]
        return (
            f"WARNING: degenerate judge: {who} gave '{self.top_label}' to {top} of {self.judged} judged pairs "
            f"({100 * self.top_share:.1f}% > {100 * self.threshold:g}%); it may not tell responses apart, so "
            "these rates may measure the judge, not the model (see its Table 9)"
        )


def verdict_check(labels: Iterable[str], threshold: float = DEGENERATE_SHARE) -> VerdictCheck:
    """`labels`: one verdict label per parsed judgement."""
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    judged = sum(counts.values())
    if not judged:
        return VerdictCheck({}, 0, None, float("nan"), False, threshold)
    top = max(sorted(counts), key=lambda k: counts[k])
    share = counts[top] / judged
    return VerdictCheck(dict(sorted(counts.items())), judged, top, share, share > threshold, threshold)


def stored_validation(store: Store, judge_id: str) -> dict[str, Any] | None:
    """The newest stored Table 9 record of this judge id, or None."""
    for _, record in reversed(store.aggregates_named(VALIDATION_AGGREGATE)):
        if record.get("judge") == judge_id:
            return record
    return None


def _number(value: Any, digits: int) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def validation_line(record: Mapping[str, Any] | None) -> str:
    """One line for the tables a judge made: its Table 9 figures, or that it was not validated."""
    if record is None:
        return (
            "Judge not validated: no Table 9 for this judge id in the store "
            "(`trusteval judge validate --labels FILE --judge SPEC` makes one)"
        )
    v = record.get("validation", {})
    kappa = v.get("cohen_kappa")
    line = (
        f"Judge validation (Table 9, {record.get('label', '?')}, {v.get('pairs', '?')} pairs): agreement "
        f"{_number(v.get('agreement'), 1)}%, Cohen's κ {_number(kappa, 3)}, "
        f"Spearman ρ {_number((v.get('spearman') or {}).get('r'), 3)}"
    )
    if kappa is None or math.isnan(kappa) or kappa < SLIGHT_KAPPA:
        line += (
            f"; WARNING: κ n/a or below {SLIGHT_KAPPA:g} (slight agreement at best): these rates are not trustworthy"
        )
    if record.get("verdicts", {}).get("degenerate"):
        line += "; degenerate on the labelled pairs"
    return line
