"""The tables of a scorer validation (`trusteval scorers validate`): validity per class, and calibration."""

from __future__ import annotations

from typing import Any

from trusteval.scorers.validation import BinaryMetrics, ValidationReport
from trusteval.tables.table import Table


def validity_tables(report: ValidationReport) -> list[Table]:
    """The validity table (overall and per class) and the reliability table, for printing and files."""

    def cell(m: BinaryMetrics, name: str) -> str:
        value, found = getattr(m, name), m.intervals.get(name)
        if value is None:
            return "n/a"
        return f"{value:.3f}" + (f" [{found[0]:.3f}, {found[1]:.3f}]" if found else "")

    def row(name: str, m: BinaryMetrics) -> tuple[Any, ...]:
        return (name, m.n, m.toxic, cell(m, "roc_auc"), cell(m, "accuracy"), cell(m, "macro_f1"), m.verdict)

    rule = report.thresholds
    notes = [
        f"Verdict: {report.verdict.upper()} (by the ROC AUC interval: valid when its low end >= "
        f"{rule.get('valid_when_auc_lo_at_least')}, invalid when its high end < {rule.get('invalid_when_auc_hi_below')}"
        f", weak otherwise; --valid-auc / --invalid-auc change them)",
        f"95% stratified bootstrap intervals, {report.resamples} resamples; data sha256 {report.data_sha256[:16]}",
        f"Toxic at score >= {report.threshold:g}; ROC AUC is n/a for a class with one label only.",
    ]
    notes += [f"Left out: {n} {why}" for why, n in report.left_out.items()]
    validity = Table(
        name="scorer_validity",
        title=f"Scorer validity: {report.scorer} on {report.dataset}",
        columns=("Class", "n", "toxic", "ROC AUC [95% CI]", "accuracy [95% CI]", "macro-F1 [95% CI]", "verdict"),
        rows=(row("all", report.overall), *(row(c, m) for c, m in report.by_category.items())),
        notes=tuple(notes),
        digits=3,
    )
    cal = report.calibration
    reliability = Table(
        name="scorer_calibration",
        title=f"Calibration: {report.scorer} on {report.dataset} (10 equal-width bins)",
        columns=("score bin", "n", "mean score", "toxic fraction"),
        rows=tuple(
            (f"({b['low']:.1f}, {b['high']:.1f}]", b["count"], b["mean_score"], b["toxic_fraction"]) for b in cal.bins
        ),
        notes=(f"Expected calibration error {cal.ece:.3f}; Brier score {cal.brier:.3f}",),
        digits=3,
    )
    return [validity, reliability]
