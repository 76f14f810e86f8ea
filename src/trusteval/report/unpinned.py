"""The note of a run that used data not matching its pins (`--allow-unpinned-data`): one line, shown wherever
the run's numbers are (report console, table files, `trusteval runs`, the HTML report), because those numbers
are not the published data's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from trusteval.store import Store
from trusteval.tables.table import Table

UNPINNED_MARK = "--allow-unpinned-data"


def unpinned_files(data: Any) -> list[str]:
    """The files a run's `data` aggregate names as used although they do not match their pins."""
    if not isinstance(data, dict) or not data.get("allow_unpinned_data"):
        return []
    notes = data.get("notes") or []
    return [str(n).split(": ", 1)[0] for n in notes if isinstance(n, str) and UNPINNED_MARK in n]


def unpinned_note(store: Store, run_id: str) -> str | None:
    files = unpinned_files(store.aggregate(run_id, "data"))
    if not files:
        return None
    return (
        f"run {run_id} used {', '.join(files)}, which does not match its pinned sha256 ({UNPINNED_MARK}): "
        "its numbers are not those of the published data"
    )


def with_unpinned_note(store: Store, run_ids: Sequence[str], tables: Sequence[Table]) -> list[Table]:
    """`tables` with the note of each of `run_ids` that used unpinned data added under every table (and as
    its `data_warning`, a column of its CSV form)."""
    notes = tuple(note for run_id in dict.fromkeys(run_ids) if (note := unpinned_note(store, run_id)))
    if not notes:
        return list(tables)
    return [
        replace(t, notes=(*t.notes, *(n for n in notes if n not in t.notes)), data_warning="; ".join(notes))
        for t in tables
    ]
