"""Figures of the TrustEval benchmarks for the HTML report, drawn from a run's metrics like `report.plots`.

- trusteval-toxicity: T2T, NT2T and TT per model with their 95% intervals (Table 5 as bars);
- trusteval-bias: TT per attribute class per model with intervals (the disparity behind sigma and delta), and
  each model's sigma and delta beside its scorer-bias control (the scorer's own disparity, with its interval);
- trusteval-avoidance: the avoidance rate per class per model with intervals.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from trusteval.report.plots import Metrics, _figure, _grouped_bars, same_svg_for_same_data

NAN_ESTIMATE = {"value": float("nan"), "low": float("nan"), "high": float("nan")}


def toxicity_categories(metrics: Metrics) -> Any:
    figure, (ax,) = _figure(1, width=7.0)
    categories = ["T2T", "NT2T", "TT"]
    series = {model: [m["overall"].get(c, NAN_ESTIMATE) for c in categories] for model, m in metrics["models"].items()}
    _grouped_bars(ax, series, categories, "% of prompt-response pairs")
    ax.set_title(f"Toxicity categories ({metrics.get('dataset', '')}), 95% intervals")
    return figure


def _per_class(
    metrics: Metrics, pick: Callable[[Mapping[str, Any], str], Mapping[str, Any] | None], ylabel: str, title: str
) -> Any:
    classes = [str(c) for c in metrics.get("classes") or []]
    figure, (ax,) = _figure(1, width=max(6.0, 0.6 * len(classes) * max(1, len(metrics["models"]))))
    series = {model: [pick(m, c) or NAN_ESTIMATE for c in classes] for model, m in metrics["models"].items()}
    _grouped_bars(ax, series, classes, ylabel)
    ax.set_title(title)
    return figure


def bias_by_class(metrics: Metrics) -> Any:
    return _per_class(metrics, lambda m, c: (m.get("tt") or {}).get(c), "TT (%)",
                      f"Total toxicity per attribute class ({metrics.get('dataset', '')}), 95% intervals")  # fmt: skip


def avoidance_by_class(metrics: Metrics) -> Any:
    judge = (metrics.get("judge") or {}).get("judge", "")
    return _per_class(metrics, lambda m, c: m.get(c), "avoidance (%)",
                      f"Avoidance per class, judge {judge}, 95% intervals")  # fmt: skip


def bias_control(metrics: Metrics) -> Any | None:
    """Each model's σ and Δ of TT over the classes on raw scores beside the same on group-neutral scores (its
    scorer bias control), with 95% intervals. None when no control was computed."""
    chosen = {
        model: [c for c in f["scorer_control"]["flags"] if c["kind"] in ("sigma", "delta")]
        for model, f in metrics["models"].items()
        if f.get("scorer_control")
    }
    chosen = {model: flags for model, flags in chosen.items() if flags}
    if not chosen:
        return None
    categories = [str(flag["disparity"]) for flag in next(iter(chosen.values()))]
    series: dict[str, list[dict[str, Any]]] = {}
    for model, flags in chosen.items():
        series[f"{model} (raw)"] = [_side(flag["raw"]) for flag in flags]
        series[f"{model} (group-neutral)"] = [_side(flag["neutral"]) for flag in flags]
    figure, (ax,) = _figure(1, width=max(6.0, 1.4 * len(series)))
    _grouped_bars(ax, series, categories, "disparity (TT, percentage points)")
    ax.set_title(f"Attribute disparity on raw and group-neutral scores ({metrics.get('dataset', '')})")
    return figure


def _side(side: Mapping[str, Any]) -> dict[str, Any]:
    def number(value: float | None) -> float:
        return float("nan") if value is None else float(value)

    return {"value": number(side.get("value")), "low": number(side.get("low")), "high": number(side.get("high"))}


TRUSTEVAL_PLOTS = {
    "trusteval-toxicity": (("trusteval_toxicity_categories", toxicity_categories),),
    "trusteval-bias": (("trusteval_bias_by_class", bias_by_class), ("trusteval_bias_scorer_control", bias_control)),
    "trusteval-avoidance": (("trusteval_avoidance_by_class", avoidance_by_class),),
}


def trusteval_svgs(benchmark: str, metrics: Mapping[str, Any]) -> list[tuple[str, str]]:
    import io

    if not metrics.get("models"):
        return []
    found = []
    for name, build in TRUSTEVAL_PLOTS.get(benchmark, ()):
        figure = build(metrics)
        if figure is None:
            continue
        buffer = io.StringIO()
        with same_svg_for_same_data():
            figure.savefig(buffer, format="svg", metadata={"Date": None})
        found.append((name, buffer.getvalue()))
    return found
