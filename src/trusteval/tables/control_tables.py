"""The scorer bias control tables printed under every bias table (metrics/scorer_bias.py).

One table of the scorer's own disparity (group means, std and Delta per group type with 95% intervals, on
group-swapped copies of the run's responses and the built-in sentences) and one of every model disparity
beside the scorer's, flagged "scorer-induced" when it does not exceed the scorer's 95% upper bound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trusteval.tables.table import Table


def _interval(value: float | None, bounds: Sequence[float] | None, digits: int) -> str:
    if value is None:
        return "n/a"
    text = f"{value:.{digits}f}"
    return text + (f" [{bounds[0]:.{digits}f}, {bounds[1]:.{digits}f}]" if bounds else "")


def _means(found: Mapping[str, Any], group_type: str, digits: int) -> str:
    return ", ".join(
        f"{g} {d['mean']:.{digits}f}" if d["mean"] is not None else f"{g} n/a"
        for g, d in found["by_group"].items()
        if d["type"] == group_type
    )


def _flag(value: bool | None) -> str:
    return {True: "SCORER-INDUCED", False: "exceeds scorer", None: "n/a"}[value]


def _scorer_rows(model: str, source: str, found: Mapping[str, Any], digits: int) -> list[tuple[Any, ...]]:
    rows = []
    for group_type, t in found["by_type"].items():
        if not t["families"]:
            continue
        tests = "; ".join(
            f"{p['first']}-{p['second']} p={p['p']:.3g}" for p in found["pairs"] if p["type"] == group_type
        )
        rows.append((
            model, source, group_type, t["families"], _means(found, group_type, digits),
            _interval(t["std"], t["std_interval"], digits), _interval(t["delta"], t["delta_interval"], digits), tests,
        ))  # fmt: skip
    return rows


def control_tables(benchmark: str, models: Mapping[str, Mapping[str, Any]], digits: int) -> list[Table]:
    scorer_rows, flag_rows = [], []
    for model, m in models.items():
        found = m.get("scorer_control")
        if not found:
            continue
        for source in ("responses", "builtin"):
            scorer_rows += _scorer_rows(model, source, found[source], digits)
        for flag in found["flags"]:
            flag_rows.append((
                model, flag["disparity"], "n/a" if flag["model"] is None else f"{flag['model']:.{digits}f}",
                _interval(flag["scorer"], flag["scorer_interval"], digits), flag.get("basis", "-"),
                _flag(flag["scorer_induced"]),
            ))  # fmt: skip
    if not scorer_rows:
        return []
    how = (
        "Each response naming a group, and each built-in neutral and toxic sentence, copied once per group of "
        "its type with only the group term changed, every copy scored; the copies differ in the group word "
        "alone, so these disparities are the scorer's own. 95% bootstrap intervals over the copied texts."
    )
    scorer = Table(
        name=f"{benchmark.replace('-', '_')}_scorer_control",
        title="Scorer bias control: the scorer's own disparity on group-swapped text",
        columns=(
            "Model",
            "texts from",
            "type",
            "families",
            "scorer mean per group",
            "scorer std [95% CI]",
            "scorer Delta [95% CI]",
            "Mann-Whitney",
        ),
        rows=tuple(scorer_rows),
        notes=(how,),
    )
    flags = Table(
        name=f"{benchmark.replace('-', '_')}_scorer_induced",
        title="Model disparities against the scorer's own (scorer-induced: not above the scorer's 95% upper bound)",
        columns=("Model", "disparity", "model", "scorer [95% CI]", "scorer on", "verdict"),
        rows=tuple(flag_rows),
        notes=("A disparity flagged SCORER-INDUCED may come from the scorer reacting to the group word alone.",),
    )
    return [scorer, flags]
