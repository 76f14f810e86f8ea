"""Tables that fit the terminal: long model names (specs, paths) become M1, M2, ... with a legend below, and a
table still wider than the terminal is printed in parts of columns, each repeating the row names.

A run of `replay:/long/path/answers.jsonl` against another model at 80 columns otherwise shows both as
`replay:...`, and the per-seed tables as columns of cut-off numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from trusteval.report.tables import format_cell, rows_as_text
from trusteval.tables.table import Table
from trusteval.untrusted.safetext import console_text

if TYPE_CHECKING:
    from rich.console import Console

SHORT_NAME = 14  # names up to this long stay as they are


def needed_width(table: Table) -> int:
    """Characters a rich table with default padding and borders needs for this table."""
    widths = []
    for index, column in enumerate(table.columns):
        cells = [format_cell(row[index], table.digits, table.show_intervals) for row in table.rows if index < len(row)]
        widths.append(max([len(column), *(len(c) for c in cells)]))
    return sum(widths) + 3 * len(widths) + 1


def abbreviate(table: Table, width: int) -> tuple[Table, list[str]]:
    """The table, its long first-column names replaced by codes when it is wider than `width`, and the legend."""
    if needed_width(table) <= width or table.columns[:1] != ("Model",):
        return table, []  # only model names are abbreviated: a metric name or class is the row's meaning
    names = [str(row[0]) for row in table.rows if row]
    long = [name for name in dict.fromkeys(names) if len(name) > SHORT_NAME]
    if not long:
        return table, []
    codes = {name: f"M{index}" for index, name in enumerate(long, start=1)}
    rows = tuple((codes.get(str(row[0]), row[0]), *row[1:]) if row else row for row in table.rows)
    return replace(table, rows=rows), [f"{code} = {name}" for name, code in codes.items()]


def _column_width(table: Table, index: int) -> int:
    cells = [format_cell(row[index], table.digits, table.show_intervals) for row in table.rows if index < len(row)]
    return max([len(table.columns[index]), *(len(c) for c in cells)]) + 3


def first_column_limit(width: int) -> int:
    """The most a split table's first column takes (longer row names fold onto more lines)."""
    return max(16, width * 2 // 5)


def split_columns(table: Table, width: int) -> list[Table]:
    """The table as parts that each fit `width`, every part repeating the first column (the row's name, folded
    at `first_column_limit`); the table itself when it fits or cannot be split (a column wider than the console
    is folded by rich)."""
    if needed_width(table) <= width or len(table.columns) < 3:
        return [table]
    first = min(_column_width(table, 0), first_column_limit(width)) + 1
    groups: list[list[int]] = [[]]
    used = first
    for index in range(1, len(table.columns)):
        size = _column_width(table, index)
        if groups[-1] and used + size > width:
            groups.append([])
            used = first
        groups[-1].append(index)
        used += size
    if len(groups) == 1:
        return [table]
    return [
        replace(
            table,
            title=f"{table.title} [columns {part} of {len(groups)}]",
            columns=(table.columns[0], *(table.columns[i] for i in group)),
            rows=tuple((row[0], *(row[i] for i in group)) for row in table.rows),
        )
        for part, group in enumerate(groups, start=1)
    ]


def print_tables(tables: Sequence[Table], console: Console) -> set[str]:
    """Render to a rich Console (stderr or stdout, the caller decides) and return the notes printed. Every text is
    shown literally: a dataset's class name or a server's message is neither Rich markup nor a terminal escape
    sequence. A table of models wider than the console shows long model names as M1, M2, ... with a legend, and a
    table still too wide comes in parts of columns, each with the row names (report.console). A note printed under
    an earlier table (the scorer's line, its validity, a warning) is not printed again: one line points to it."""
    from rich.table import Table as RichTable

    printed: dict[str, str] = {}  # note -> the title of the table it was printed under
    for table in tables:
        table, legend = abbreviate(table, console.width)
        parts = split_columns(table, console.width)
        for part in parts:
            rich_table = RichTable(title=console_text(part.title), title_justify="left")
            for index, column in enumerate(part.columns):
                limit = first_column_limit(console.width) if index == 0 and len(parts) > 1 else None
                rich_table.add_column(console_text(column), justify="left" if index == 0 else "right",
                                      overflow="fold", max_width=limit)  # fmt: skip
            for row in rows_as_text(part):
                rich_table.add_row(*(console_text(cell) for cell in row))
            console.print(rich_table)
        for line in legend:
            console.print(console_text("  " + line))
        _print_notes(table, printed, console)
        console.print()
    return set(printed)


def _print_notes(table: Table, printed: dict[str, str], console: Console) -> None:
    """The table's notes not printed yet (recorded in `printed`), then one line for those that were."""
    repeated: dict[str, int] = {}  # the earlier table's title -> how many of its notes
    for note in table.notes:
        if note in printed:
            repeated[printed[note]] = repeated.get(printed[note], 0) + 1
            continue
        printed[note] = table.title
        warns = note.startswith("WARNING") or ": INVALID," in note  # a scorer judged invalid
        console.print(console_text("  " + note, style="bold" if warns else "dim"))
    for title, count in repeated.items():
        console.print(
            console_text(f"  {count} more note{'s' if count > 1 else ''} as under '{title}' above", style="dim")
        )
