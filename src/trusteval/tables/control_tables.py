"""The scorer bias control tables printed with every bias table (metrics/scorer_bias.py has the rule).

- `<benchmark>_scorer_induced`: every model disparity on raw scores beside the same on group-neutral scores
  (the model's part; 95% intervals, p-values), the scorer's part (raw minus neutral, paired interval), the
  model's gap against the minimum size, and its verdict: SCORER-INDUCED, no disparity, model's bias, model's
  bias, hidden by the scorer, inconclusive, or n/a (undefined);
- `<benchmark>_scorer_control`: the scorer's own effect per group (class): raw minus group-neutral mean;
- `<benchmark>_scorer_fixed_text`: the scorer's disparity on the built-in neutral and toxic sentences.

`with_control_marks` adds one line per model to the paper's table (Tables 7/8, TrustGPT Table 4) saying which
disparities are the model's, which the scorer's and which are inconclusive; `verdict_of` gives the verdict of
one pair for TrustGPT's Figure 5.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from trusteval.metrics.scorer_bias import (
    HIDDEN_BY_SCORER,
    INCONCLUSIVE,
    MODEL_BIAS,
    NO_DISPARITY,
    NOT_AVAILABLE,
    SCORER_INDUCED,
    Check,
    ScorerControl,
    Side,
)
from trusteval.metrics.stats import Estimate
from trusteval.tables.table import Table

RULE = (
    "Verdict: model's bias when the group-neutral disparity is significant and its gap (the spread of the "
    "group-neutral means it spans) is at least {minimum} (hidden by the scorer when the raw one is not "
    "significant and the scorer's part, raw minus group-neutral with a paired 95% interval, excludes 0); "
    "SCORER-INDUCED when the raw one is significant, the scorer's part excludes 0 and the model's part is not "
    "significant or below that minimum; inconclusive when a significant difference has no real change in size "
    "behind it or the model's part is significant but below the minimum; no disparity when neither is "
    "significant; n/a when the statistic is undefined. Significant: p < {alpha} ({correction}); std, Δ and "
    "slope: Kruskal-Wallis H across the groups (classes); a pair: Mann-Whitney U."
)
HOW = (
    "Group-neutral score of a response: the mean of its scores over its versions, one per group of its type "
    "(identity lexicon: noun phrase for noun phrase, each group's canonical one, both directions; faith names "
    "and the group's associated words - church, Quran, 清真寺 - swapped with it; not 'black coffee'), its own "
    "version included; responses naming no group keep their raw score."
)
PAPER_TABLES = ("table7_", "table8_", "trustgpt_bias_std")


def _side(side: Side, digits: int) -> str:
    if side.value is None:
        return "n/a"
    text = f"{side.value:.{digits}f}"
    if side.low is not None and side.high is not None:
        text += f" [{side.low:.{digits}f}, {side.high:.{digits}f}]"
    return text


def _p(side: Side) -> str:
    return "n/a" if side.p is None else f"{side.p:.3g}"


def _estimate(e: Estimate, digits: int) -> str:
    if e.value is None or e.value != e.value:
        return "n/a"
    return f"{e.value:.{digits}f} [{e.low:.{digits}f}, {e.high:.{digits}f}]"


def verdict_text(c: Check) -> str:
    return c.verdict if c.reason is None else f"{c.verdict} ({c.reason})"


def _gap(c: Check, digits: int) -> str:
    if c.model_size is None:
        return "n/a"
    return f"{c.model_size:.{digits}f}" + ("" if c.min_size is None else f" ({c.min_size:g})")


def verdict_of(control: ScorerControl | None, first: str, second: str) -> str:
    """The verdict of the pair first - second (either order), or '-' when the control has none."""
    if control is None:
        return "-"
    for c in control.flags:
        if c.kind == "pair" and c.disparity in (f"{first} - {second}", f"{second} - {first}"):
            return c.verdict
    return "-"


def marks(controls: Mapping[str, ScorerControl]) -> list[str]:
    """One line per model saying plainly which disparities are the model's, which the scorer's, which are
    inconclusive (and how many show no disparity or have none defined)."""
    lines = []
    for model, control in controls.items():
        if not control.flags:
            continue
        lines.append(f"Scorer bias control, {model}: " + "; ".join(_verdict_groups(control.flags)) + ".")
    return lines


_PLAIN = (
    ((MODEL_BIAS, HIDDEN_BY_SCORER), "the model's bias"),
    ((SCORER_INDUCED,), f"the scorer's ({SCORER_INDUCED})"),
    ((INCONCLUSIVE,), "inconclusive"),
)


def _verdict_groups(flags: list[Check]) -> list[str]:
    parts = []
    for verdicts, label in _PLAIN:
        named = [c.disparity + (" (hidden by the scorer)" if c.verdict == HIDDEN_BY_SCORER else "")
                 for c in flags if c.verdict in verdicts]  # fmt: skip
        parts.append(f"{label}: {', '.join(named) if named else 'none'}")
    quiet = sum(c.verdict == NO_DISPARITY for c in flags)
    undefined = sum(c.verdict == NOT_AVAILABLE for c in flags)
    parts.append(f"no disparity: {quiet} more" + (f"; no verdict (undefined): {undefined}" if undefined else ""))
    parts[-1] += " (see the scorer_induced table)"
    return parts


def with_control_marks(table: Table, controls: Mapping[str, ScorerControl]) -> Table:
    """The paper's table with the control's flags under it (Tables 7/8, TrustGPT Table 4); others unchanged."""
    if not table.name.startswith(PAPER_TABLES) or table.name.endswith("_seeds"):
        return table
    return replace(table, notes=(*table.notes, *marks(controls)))


def control_tables(benchmark: str, controls: Mapping[str, ScorerControl], digits: int) -> list[Table]:
    if not any(c.flags or c.notes for c in controls.values()):
        return []
    stem = benchmark.replace("-", "_")
    first = next(iter(controls.values()))
    unit = first.unit
    minimum = "the documented minimum" if first.min_size is None else f"{first.min_size:g} ({unit})"
    rule = RULE.format(
        alpha=first.alpha, correction="Holm" if first.correction == "holm" else "no correction", minimum=minimum
    )
    flags = Table(
        name=f"{stem}_scorer_induced",
        title=f"Scorer bias control: each disparity ({unit}) on raw and on group-neutral scores",
        columns=(
            "Model",
            "disparity",
            "test",
            "raw [95% CI]",
            "p raw",
            "group-neutral (model's part) [95% CI]",
            "p neutral",
            "scorer's part (raw - neutral) [95% CI]",
            "model's gap (min)",
            "verdict",
        ),
        rows=tuple(
            (
                model,
                c.disparity,
                c.test,
                _side(c.raw, digits),
                _p(c.raw),
                _side(c.neutral, digits),
                _p(c.neutral),
                "n/a" if c.scorer_part is None else _side(c.scorer_part, digits),
                _gap(c, digits),
                verdict_text(c),
            )
            for model, control in controls.items()
            for c in control.flags
        ),
        notes=(rule, HOW, *_notes(controls)),
    )
    effects = _effects_table(stem, unit, controls, digits)
    return [flags, effects, *_fixed_table(stem, first, digits)]


def _effects_table(stem: str, unit: str, controls: Mapping[str, ScorerControl], digits: int) -> Table:
    """The scorer's own effect per group (class) of each model: raw minus group-neutral."""
    return Table(
        name=f"{stem}_scorer_control",
        title=f"Scorer bias control: the scorer's own effect per {'class' if unit.startswith('TT') else 'group'} "
        f"(raw minus group-neutral, {unit})",
        columns=(
            "Model",
            "group",
            "type",
            "responses",
            "named a group",
            "raw [95% CI]",
            "group-neutral [95% CI]",
            "scorer effect [95% CI]",
            "effect",
        ),
        rows=tuple(
            (
                model,
                e.name,
                e.group_type,
                e.responses,
                e.swapped,
                _estimate(e.raw, digits),
                _estimate(e.neutral, digits),
                _estimate(e.scorer_effect, digits),
                _effect(e.effect_significant),
            )
            for model, control in controls.items()
            for e in control.effects
        ),
        notes=("effect: 'scorer' when the 95% interval of raw minus group-neutral excludes 0.", HOW),
    )


def _effect(value: bool | None) -> str:
    return {True: "scorer", False: "-", None: "n/a"}[value]


def _notes(controls: Mapping[str, ScorerControl]) -> list[str]:
    found: dict[str, None] = {}
    for model, control in controls.items():
        found.update(dict.fromkeys(f"{model}: {note}" for note in control.notes))
    return list(found)


def _fixed_table(stem: str, control: ScorerControl, digits: int) -> list[Table]:
    if not control.fixed_text:
        return []
    rows = tuple(
        (
            f.source,
            f.group_type,
            f.sentences,
            ", ".join(f"{g} {'n/a' if m is None else f'{m:.{digits + 2}f}'}" for g, m in f.means.items()),
            _estimate(f.std, digits + 2),
            _estimate(f.delta, digits + 2),
        )
        for f in control.fixed_text
    )
    return [
        Table(
            name=f"{stem}_scorer_fixed_text",
            title=f"Scorer bias control: the scorer's disparity on the built-in sentences ({control.unit})",
            columns=("sentences", "type", "n", "scorer mean per group", "std [95% CI]", "Δ [95% CI]"),
            rows=rows,
            notes=("The same sentence for every group, only the group term differs: any spread is the scorer's.",),
        )
    ]
