"""A Table as a record: title, columns, rows, notes; renderers (report/tables.py) never compute anything.

Notes are printed under the table: which scorer produced it, its validity on this data, fallbacks used, counts
of failures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from trusteval.metrics.stats import Estimate

Cell = str | int | float | Estimate | None


@dataclass(frozen=True)
class TableNotes:
    """The notes under a benchmark's tables, by what they are about; each table shows the groups it concerns.
    `all` is every note, main scorer first."""

    main_scorer: tuple[str, ...] = ()  # the scorer behind the main numbers (toxicity scorer, answer parser)
    refusal: tuple[str, ...] = ()  # the refusal detector
    run: tuple[str, ...] = ()  # data, generation, seeds, what was left out, language checks

    @property
    def all(self) -> tuple[str, ...]:
        return (*self.main_scorer, *self.refusal, *self.run)

    @property
    def scorers(self) -> tuple[str, ...]:
        return (*self.main_scorer, *self.refusal)

    def with_run(self, *notes: str) -> TableNotes:
        return replace(self, run=(*self.run, *notes))


@dataclass(frozen=True)
class Table:
    name: str  # file stem, e.g. "table5_cold"
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    notes: tuple[str, ...] = ()
    digits: int = 2
    show_intervals: bool = False
    data_warning: str | None = None  # its data is not the published one (unpinned): in every format, CSV too

    def as_dict(self) -> dict[str, Any]:
        found = {
            "name": self.name,
            "title": self.title,
            "columns": list(self.columns),
            "rows": [[_jsonable(c) for c in row] for row in self.rows],
            "notes": list(self.notes),
        }
        return found | ({"data_warning": self.data_warning} if self.data_warning else {})


def _jsonable(cell: Cell) -> Any:
    if isinstance(cell, Estimate):
        return cell.as_dict()
    if isinstance(cell, float) and math.isnan(cell):
        return None
    return cell
