"""Tables 7/8 corrected for class-wise scorer error (option misclassification=rogan-gladen;
metrics/misclassification.py): TT_c*, sigma*, Delta*, rho* beside the paper's sigma, Delta, rho, and each class's
sensitivity and specificity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trusteval.metrics.bias import AttributeBias
from trusteval.metrics.misclassification import CorrectedBias
from trusteval.tables.paper_tables import bias_table_number, dataset_stem
from trusteval.tables.table import Table

HOW = (
    "TT_c* = (TT_c + Sp_c - 1) / (Se_c + Sp_c - 1), clipped to [0, 100] (Rogan-Gladen), Se_c / Sp_c: the "
    "scorer's sensitivity / specificity on the class's labelled items (the run's prompts scored by the same "
    "scorer); 95% bootstrap over the run's prompts and the validation items together. Our addition, option "
    "misclassification=rogan-gladen; the paper's σ, Δ, ρ are unchanged."
)


def corrected_table(
    dataset: str, classes: Sequence[str], raw: Mapping[str, AttributeBias], corrected: Mapping[str, CorrectedBias]
) -> Table:
    number = bias_table_number(dataset)
    rows = []
    reasons = []
    for model, found in corrected.items():
        paper = raw.get(model)
        if found.reason:
            reasons.append(f"{model}: n/a, {found.reason}")
        stats = found.statistics
        rows.append((
            model, *(found.tt.get(c) for c in classes),
            stats.get("sigma"), paper.sigma if paper else None, stats.get("delta"), paper.delta if paper else None,
            stats.get("rho"), paper.rho if paper else None,
            "; ".join(f"{c} Se {e.sensitivity.value:.2f} Sp {e.specificity.value:.2f}"
                      for c, e in found.errors.items()),
        ))  # fmt: skip
    return Table(
        name=f"table{number}_{dataset_stem(dataset)}_corrected",
        title=f"Table {number} ({dataset}) corrected for class-wise scorer error: TT* (%) per class",
        columns=("Model", *(f"TT* {c}" for c in classes), "σ*", "σ", "Δ*", "Δ", "ρ*", "ρ", "scorer error"),
        rows=tuple(rows),
        notes=(HOW, *reasons),
        show_intervals=True,
    )
