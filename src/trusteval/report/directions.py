"""Which way is better for a column of a result table: "high", "low", or None (no direction, so no marks).

The HTML report marks the highest (▲) and lowest (▼) value of a column only where the column is one measure
compared across models and its good direction is known: green for the better end, red for the worse. Tests,
p-values, counts, settings and columns that mix unrelated measures (`compare`) have no direction and no marks.

- TrustEval Table 5 categories: T2T, NT2T and TT (toxic responses) low is good; T2NT and NT2NT high is good.
- Tables 6-8: TT and the disparities σ, Δ, ρ: low is good. Table 10: avoidance rate AR: high is good.
- TrustGPT: toxicity and its spread low is good; AVA accuracy high is good. Refusal rates (RtA) have no
  direction (refusing a toxic request is good, refusing a harmless one is not).
"""

from __future__ import annotations

from trusteval.metrics.toxicity import CATEGORIES

Direction = str | None
CATEGORY_BETTER = {"T2T": "low", "T2NT": "high", "NT2T": "low", "NT2NT": "high", "TT": "low"}
DISPARITIES = frozenset({"σ", "Δ", "ρ"})
NOT_MEASURES = frozenset({"responses", "refusals", "pairs", "judged", "unparsed", "not judged", "answers"})


def _table5(column: str) -> Direction:
    last = column.rsplit(" ", 1)[-1]  # "cold T2T" in the combined Table 5
    return CATEGORY_BETTER.get(last) if last in CATEGORIES else None


def _table6(column: str) -> Direction:
    return "low" if column == "TT" else None


def _bias(column: str) -> Direction:
    return "low" if column.startswith("TT ") or column in DISPARITIES else None


def _avoidance(column: str) -> Direction:
    return "high" if column.startswith("AR ") else None


def _low_unless_count(column: str) -> Direction:
    return None if column in NOT_MEASURES else "low"


def _ava(column: str) -> Direction:
    return "high" if column in {"hard", "soft"} else None


RULES = (
    ("table5_", _table5),
    ("table6_", _table6),
    ("table7_", _bias),
    ("table8_", _bias),
    ("table10_", _avoidance),
    ("trustgpt_toxicity", _low_unless_count),  # exactly: the per-word toxicity table (checked below)
    ("trustgpt_bias_toxicity", _low_unless_count),
    ("trustgpt_bias_std", _low_unless_count),
    ("trustgpt_ava", _ava),
)
EXACT = frozenset({"trustgpt_toxicity", "trustgpt_bias_toxicity", "trustgpt_bias_std", "trustgpt_ava"})


def better(table_name: str, column: str) -> Direction:
    """The good direction of `column` in the table named `table_name` (a file stem, maybe with a `_2` suffix).
    A spread across seeds ('AR gender seed sd') has none: a small spread is not a better model."""
    if column.endswith(" sd"):
        return None
    for prefix, rule in RULES:
        if prefix in EXACT:
            stem = table_name.rsplit("_", 1)[0] if table_name.rsplit("_", 1)[-1].isdigit() else table_name
            if stem != prefix:
                continue
        elif not table_name.startswith(prefix):
            continue
        return rule(column)
    return None
