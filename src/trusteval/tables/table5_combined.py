"""The TrustEval paper's Table 5 as the paper prints it: one table, one row per model, the datasets side by side.

Pure layout (like paper_tables): made from the per-dataset tables (`table5_<dataset>`, which stay as they are,
with their notes); their cells are put next to each other, nothing is recomputed. Named `table5_combined`,
made when at least two datasets are there. Each dataset's columns keep the condition they were measured under
(scorer, threshold, prompt-toxicity source), named in a note: an English dataset has an English scorer, so its
columns and COLD's come from different instruments, which the note says. A dataset measured under two
conditions has two column groups.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from trusteval.metrics.toxicity import CATEGORIES
from trusteval.tables.paper_tables import shown_dataset
from trusteval.tables.table import Cell, Table

COMBINED_NAME = "table5_combined"
VALIDITY = "Scorer validity of"  # the per-dataset notes that name the scorer's verdicts (data and responses)
# the paper's column order (its ToxicSpans and HateXplain are the Chinese translations); the English originals
# follow, then any other dataset by name
PAPER_ORDER = ("cold", "tiseval-toxicspans", "tiseval-hatexplain", "toxicspans-en", "hatexplain-en", "toxicspans",
               "hatexplain")  # fmt: skip
PER_DATASET = re.compile(r"table5_[0-9A-Za-z_]+")


@dataclass(frozen=True)
class DatasetTable5:
    """One dataset's Table 5 (`table5_<dataset>`) and how it was measured."""

    label: str  # the dataset as the column heads name it
    condition: str
    table: Table


def is_table5(table: Table) -> bool:
    """Whether `table` is a per-dataset Table 5 (not its across-seed spread or another table)."""
    name = table.name
    return PER_DATASET.fullmatch(name) is not None and not name.endswith("_seeds") and name != COMBINED_NAME


def _paper_position(part: DatasetTable5) -> tuple[int, str]:
    base = re.split(r"[?@]", part.label)[0]
    return (PAPER_ORDER.index(base) if base in PAPER_ORDER else len(PAPER_ORDER), part.label)


def combined_table5(parts: Sequence[DatasetTable5]) -> list[Table]:
    """One table over every dataset when there are at least two (none otherwise: it would be the per-dataset
    table again). A dataset measured under several conditions gets one column group per condition."""
    if len({part.label for part in parts}) < 2:
        return []
    ordered = sorted(parts, key=_paper_position)
    seen = Counter(part.label for part in ordered)
    numbered: Counter[str] = Counter()
    short = Counter(shown_dataset(label) for label in seen)  # two files of one name keep their full paths
    labelled = []
    for part in ordered:
        numbered[part.label] += 1
        shown = shown_dataset(part.label) if short[shown_dataset(part.label)] == 1 else part.label
        label = shown if seen[part.label] == 1 else f"{shown} ({numbered[part.label]})"
        labelled.append(replace(part, label=label))
    return [_combine(labelled)]


def _combine(parts: Sequence[DatasetTable5]) -> Table:
    models = list(dict.fromkeys(str(row[0]) for part in parts for row in part.table.rows))
    cells: dict[tuple[str, str], tuple[Cell, ...]] = {}
    for part in parts:
        for row in part.table.rows:
            cells[(part.label, str(row[0]))] = tuple(row[1 : 1 + len(CATEGORIES)])
    missing = (None,) * len(CATEGORIES)
    rows = tuple(
        (model, *(value for part in parts for value in cells.get((part.label, model), missing))) for model in models
    )
    labels = ", ".join(part.label for part in parts)
    conditions = [f"{part.label}: {part.condition}" for part in parts]
    if len({part.condition for part in parts}) > 1:
        conditions.append(
            "The datasets were not all measured the same way (each language has its own scorer): compare models "
            "within a dataset's columns; across datasets the instrument differs."
        )
    return Table(
        name=COMBINED_NAME,
        title=f"Table 5 ({labels}): prompt-response toxicity categories (%), datasets side by side",
        columns=("Model", *(f"{part.label} {category}" for part in parts for category in CATEGORIES)),
        rows=rows,
        notes=(
            "The per-dataset tables " + ", ".join(part.table.name for part in parts) + " side by side, as the "
            "paper's Table 5 prints them; their notes (scorer, its validity, rows left out) apply here.",
            *conditions,
            *(f"{part.label}: {note}" for part in parts for note in part.table.notes if note.startswith(VALIDITY)),
            "n/a: the model has no row for that dataset.",
        ),
    )
