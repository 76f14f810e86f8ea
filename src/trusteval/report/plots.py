"""Plots of a benchmark's metrics (PNG and SVG, matplotlib's Agg canvas, no pyplot state).

`write_plots(metrics, folder)` draws every figure the benchmark named in `metrics["benchmark"]` has, from the
metrics alone (the same JSON the run stores), so `trusteval report` can redraw them from the store. Each
figure is one file per format, named like the table that holds its numbers. matplotlib is imported only here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from itertools import pairwise
from pathlib import Path
from typing import Any

from trusteval.errors import TrustEvalError, missing_extra

FORMATS = ("png", "svg")
Metrics = Mapping[str, Any]


def _figure(panels: int, *, width: float = 4.2, height: float = 3.4, columns: int = 3) -> tuple[Any, list[Any]]:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise missing_extra("matplotlib", "plots") from None

    columns = max(1, min(columns, panels))
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(width * columns, height * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def same_svg_for_same_data() -> AbstractContextManager[None]:
    """A fixed salt for the SVG element ids while saving, without changing matplotlib's global rcParams."""
    import matplotlib

    return matplotlib.rc_context({"svg.hashsalt": "trusteval"})


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float("nan") if v is None else float(v) for v in values]


def _short(model: str, limit: int = 40) -> str:
    return model if len(model) <= limit else "…" + model[-(limit - 1) :]


def _scorer(metrics: Metrics, kind: str) -> str:
    """ ", scorer X" for a title, or nothing when the metrics do not name one."""
    name = (metrics.get("scorers") or {}).get(kind)
    return f", {kind} scorer {_short(str(name), 36)}" if name else ""


def _title(model: str, measure: str) -> str:
    return f"{_short(model)}\n{measure}"


def _from_zero(ax: Any, values: Sequence[float], full_scale: float) -> None:
    """Rates start at 0; with every rate 0 the axis shows the full scale instead of a band around 0."""
    finite = [v for v in values if not math.isnan(v)]
    top = ax.get_ylim()[1]
    ax.set_ylim(0, top if finite and max(finite) > 0 else full_scale)


# -- TrustGPT toxicity -------------------------------------------------------------------------------------


def toxicity_distribution(metrics: Metrics) -> Any:
    """Figures 2/3: the distribution of toxicity per model, one curve per prompt word."""
    models = metrics["models"]
    edges = metrics["histogram_edges"]
    centers = [(a + b) / 2 for a, b in pairwise(edges)]
    width = edges[1] - edges[0]
    figure, axes = _figure(len(models))
    for ax, (model, m) in zip(axes, models.items(), strict=True):
        for word in metrics["words"]:
            counts = m["by_word"][word]["histogram"]
            total = sum(counts)
            density = [c / (total * width) if total else 0.0 for c in counts]
            ax.step(centers, density, where="mid", label=f"{word} (n={total})")
        measure = "toxicity distribution" + _scorer(metrics, "toxicity")
        ax.set(title=_title(model, measure), xlabel="toxicity", ylabel="density", xlim=(0, 1))
        ax.legend(fontsize="small")
    return figure


def toxicity_length(metrics: Metrics) -> Any:
    """Figure 7: average toxicity per response length in words, with the count of each bin."""
    models = metrics["models"]
    figure, axes = _figure(len(models))
    for ax, (model, m) in zip(axes, models.items(), strict=True):
        bins = m["length"]
        # a numeric axis: each bin at its length (the last, open bin at the middle of its range), so gaps in
        # the lengths show as gaps rather than as evenly spaced categories
        x = [(b["low"] + b["high"]) / 2 for b in bins]
        widths = [max(0.8, (b["high"] - b["low"] + 1) * 0.8) for b in bins]
        counts = ax.twinx()
        counts.bar(x, [b["count"] for b in bins], color="0.85", width=widths)
        counts.set_ylabel("responses")
        ax.set_zorder(counts.get_zorder() + 1)
        ax.patch.set_visible(False)
        ax.plot(x, [b["average_toxicity"] for b in bins], marker="o")
        measure = "average toxicity by length" + _scorer(metrics, "toxicity")
        ax.set(title=_title(model, measure), xlabel="response length (words)", ylabel="average toxicity")
    return figure


# -- TrustGPT bias -----------------------------------------------------------------------------------------


def bias_groups(metrics: Metrics) -> Any:
    """Figure 4: group averages in ascending order and the least-squares line whose slope is the max slope."""
    models = metrics["models"]
    figure, axes = _figure(len(models))
    for ax, (model, m) in zip(axes, models.items(), strict=True):
        pairs = [(g, d["average_toxicity"]["value"]) for g, d in m["by_group"].items()]
        pairs = sorted((p for p in pairs if p[1] is not None and not math.isnan(p[1])), key=lambda p: p[1])
        x = list(range(1, len(pairs) + 1))
        ax.plot(x, [v for _, v in pairs], marker="o", linestyle="none")
        slope = m["max_slope"]
        if pairs and slope is not None and not math.isnan(slope):
            mean_x, mean_t = sum(x) / len(x), sum(v for _, v in pairs) / len(pairs)
            ax.plot(x, [mean_t + slope * (xi - mean_x) for xi in x], label=f"slope k = {slope:.4f}")
            ax.legend(fontsize="small")
        ax.set_xticks(x, [g for g, _ in pairs], rotation=45, ha="right")
        ax.set(title=_title(model, "group toxicity" + _scorer(metrics, "toxicity")), ylabel="average toxicity")
    return figure


def bias_pvalues(metrics: Metrics) -> Any:
    """Figure 5: the Mann-Whitney U p-value of every pair of groups as an annotated heatmap."""
    models = metrics["models"]
    adjusted = bool(metrics.get("holm"))
    figure, axes = _figure(len(models), width=5.0, height=4.4)
    image = None
    for ax, (model, m) in zip(axes, models.items(), strict=True):
        tests = m["mann_whitney"]
        matrix = [_finite(row) for row in (tests["p_holm"] if adjusted else tests["p"])]
        image = ax.imshow(matrix, vmin=0, vmax=1, cmap="coolwarm")
        ticks = range(len(tests["groups"]))
        ax.set_xticks(ticks, tests["groups"], rotation=90)
        ax.set_yticks(ticks, tests["groups"])
        marks = _control_marks(m.get("scorer_control"), tests["groups"])
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                text = ("n/a" if math.isnan(value) else f"{value:.2f}") + marks.get((i, j), "")
                ax.text(j, i, text, ha="center", va="center", fontsize=7)
        ax.set_title(_title(model, "Mann-Whitney U p-values" + (" (Holm)" if adjusted else "")))
        if marks:
            ax.set_xlabel("S: SCORER-INDUCED, H: hidden by the scorer (scorer bias control)", fontsize=7)
    if image is not None:
        figure.colorbar(image, ax=axes, label="p-value", shrink=0.8)
    return figure


def _control_marks(control: Mapping[str, Any] | None, groups: Sequence[str]) -> dict[tuple[int, int], str]:
    """Heatmap cells whose pair the scorer bias control flags: S (SCORER-INDUCED) or H (hidden by the scorer)."""
    from trusteval.metrics.scorer_bias import HIDDEN_BY_SCORER, SCORER_INDUCED

    index = {g: i for i, g in enumerate(groups)}
    found = {}
    for flag in (control or {}).get("flags", []):
        mark = {SCORER_INDUCED: " S", HIDDEN_BY_SCORER: " H"}.get(flag["verdict"])
        first, _, second = str(flag["disparity"]).partition(" - ")
        if flag["kind"] == "pair" and mark and first in index and second in index:
            found[(index[first], index[second])] = found[(index[second], index[first])] = mark
    return found


def _error_bars(estimates: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    """Distances from each value down to its interval's low end and up to its high end (0 where undefined)."""

    def gap(a: float | None, b: float | None) -> float:
        return 0.0 if a is None or b is None or math.isnan(a) or math.isnan(b) else abs(a - b)

    return [[gap(e["value"], e["low"]) for e in estimates], [gap(e["high"], e["value"]) for e in estimates]]


def _grouped_bars(
    ax: Any, series: Mapping[str, Sequence[Mapping[str, Any]]], categories: Sequence[str], ylabel: str
) -> None:
    """One bar per estimate (its 95% interval as an error bar), grouped by category."""
    count = max(1, len(series))
    width = 0.8 / count
    for index, (label, estimates) in enumerate(series.items()):
        offsets = [c + (index - (count - 1) / 2) * width for c in range(len(categories))]
        values = _finite([e["value"] for e in estimates])
        ax.bar(offsets, values, width=width, label=_short(label), yerr=_error_bars(estimates), capsize=3)
    ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize="small")
    values = [v for estimates in series.values() for v in _finite([e["value"] for e in estimates])]
    _from_zero(ax, values, 100.0 if "%" in ylabel else 1.0)


def bias_rta(metrics: Metrics) -> Any:
    """Table 6 as bars: RtA per group, one bar per model."""
    groups = [g for members in metrics["groups"].values() for g in members]
    figure, (ax,) = _figure(1, width=7.0)
    series = {model: [m["by_group"][g]["rta"] for g in groups] for model, m in metrics["models"].items()}
    _grouped_bars(ax, series, groups, "RtA (%)")
    ax.set_title("RtA per group" + _scorer(metrics, "refusal"))
    return figure


# -- TrustGPT value alignment ------------------------------------------------------------------------------


def ava_accuracy(metrics: Metrics) -> Any:
    """Figure 6 (AVA): hard and soft accuracy per model."""
    figure, (ax,) = _figure(1, width=6.0)
    models = metrics["models"]
    series = {kind: [m[kind] for m in models.values()] for kind in ("hard", "soft")}
    labels = [f"{_short(m, 24)}\n{_unparsed(v)}" for m, v in models.items()]
    _grouped_bars(ax, series, labels, "accuracy (%)")
    ax.set_title("AVA accuracy (unparsed answers count as wrong)")
    return figure


def _unparsed(model: Mapping[str, Any]) -> str:
    answers, unparsed = model.get("answers") or 0, model.get("unparsed") or 0
    return f"unparsed {unparsed}/{answers} ({100 * unparsed / answers:.0f}%)" if answers else "no answers"


def pva_rta(metrics: Metrics) -> Any:
    """Figure 6 (PVA): RtA on good and on bad norms per model."""
    figure, (ax,) = _figure(1, width=6.0)
    models = metrics["models"]
    series = {f"{label} norms": [m[label]["rta"] for m in models.values()] for label in metrics["labels"]}
    _grouped_bars(ax, series, [_short(m, 24) for m in models], "RtA (%)")
    ax.set_title("PVA refusal rate (RtA)" + _scorer(metrics, "refusal"))
    return figure


PLOTS: dict[str, tuple[tuple[str, Callable[[Metrics], Any]], ...]] = {
    "trustgpt-toxicity": (
        ("trustgpt_toxicity_distribution", toxicity_distribution),
        ("trustgpt_toxicity_length", toxicity_length),
    ),
    "trustgpt-bias": (
        ("trustgpt_bias_groups", bias_groups),
        ("trustgpt_bias_pvalues", bias_pvalues),
        ("trustgpt_bias_rta", bias_rta),
    ),
    "trustgpt-ava": (("trustgpt_ava", ava_accuracy),),
    "trustgpt-pva": (("trustgpt_pva", pva_rta),),
}


def write_plots(metrics: Metrics, folder: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Draw the benchmark's figures into `folder`; a benchmark without figures writes nothing."""
    builders = PLOTS.get(str(metrics.get("benchmark")), ())
    if not builders or not metrics.get("models"):
        return []
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, build in builders:
        figure = build(metrics)
        for fmt in formats:
            path = folder / f"{name}.{fmt}"
            with same_svg_for_same_data():
                figure.savefig(path, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
            written.append(path)
    return written


def figure_svgs(metrics: Metrics) -> list[tuple[str, str]]:
    """The benchmark's figures as SVG documents (name, text), for pages that embed them."""
    import io

    builders = PLOTS.get(str(metrics.get("benchmark")), ())
    if not builders or not metrics.get("models"):
        return []
    found = []
    for name, build in builders:
        buffer = io.StringIO()
        with same_svg_for_same_data():
            build(metrics).savefig(buffer, format="svg", metadata={"Date": None})
        found.append((name, buffer.getvalue()))
    return found


def write_plots_if_possible(metrics: Metrics, folder: Path) -> tuple[list[Path], str | None]:
    """`write_plots`, or no files and the reason when matplotlib is not installed (a run must not fail on it)."""
    try:
        return write_plots(metrics, folder), None
    except TrustEvalError as exc:
        return [], str(exc)
