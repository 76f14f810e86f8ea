"""Tables (trusteval.tables.table) rendered to the console, Markdown, CSV and LaTeX, and written to files.

A Table is data (title, columns, rows, notes); these renderers never compute anything.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trusteval.metrics.stats import Estimate
from trusteval.tables.table import Cell, Table
from trusteval.untrusted.safetext import console_text, latex_text, markdown_text

if TYPE_CHECKING:
    from rich.console import Console

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# RFC 4180's CRLF: with it the csv module quotes any cell holding CR or LF. With "\n" alone a bare CR stays
# unquoted, and spreadsheets start a new row there, so the text after it could begin with a live formula.
CSV_LINE_END = "\r\n"


def format_cell(cell: Cell, digits: int, show_intervals: bool) -> str:
    if cell is None:
        return "n/a"
    if isinstance(cell, Estimate):
        if math.isnan(cell.value):
            return "n/a"
        text = f"{cell.value:.{digits}f}"
        if show_intervals and not math.isnan(cell.low):
            text += f" [{cell.low:.{digits}f}, {cell.high:.{digits}f}]"
        return text
    if isinstance(cell, float):
        return "n/a" if math.isnan(cell) else f"{cell:.{digits}f}"
    return str(cell)


def _rows_as_text(table: Table) -> list[list[str]]:
    return [[format_cell(c, table.digits, table.show_intervals) for c in row] for row in table.rows]


def to_markdown(table: Table) -> str:
    lines = [f"**{markdown_text(table.title)}**", ""]
    lines.append("| " + " | ".join(markdown_text(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(" --- " for _ in table.columns) + "|")
    for row in _rows_as_text(table):
        lines.append("| " + " | ".join(markdown_text(cell) for cell in row) + " |")
    if table.notes:
        lines.append("")
        lines.extend(f"- {markdown_text(note)}" for note in table.notes)
    return "\n".join(lines) + "\n"


def safe_spreadsheet_cell(value: str) -> str:
    """Text that a spreadsheet shows as text: a leading = + - @ would make it a live formula."""
    if value.startswith(FORMULA_START) and not _is_number(value):
        return "'" + value
    return value


def _is_number(value: str) -> bool:
    return re.fullmatch(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?", value) is not None


def to_csv(table: Table) -> str:
    """One value per column; an Estimate spreads into value, low and high columns."""
    header: list[str] = []
    for column_index, column in enumerate(table.columns):
        if any(isinstance(row[column_index], Estimate) for row in table.rows):
            header += [column, f"{column}_low", f"{column}_high"]
        else:
            header.append(column)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=CSV_LINE_END)
    writer.writerow([safe_spreadsheet_cell(h) for h in header])
    for row in table.rows:
        out: list[str] = []
        for column_index, cell in enumerate(row):
            spread = any(isinstance(r[column_index], Estimate) for r in table.rows)
            if isinstance(cell, Estimate):
                out += [_plain(cell.value), _plain(cell.low), _plain(cell.high)]
            else:
                out += [safe_spreadsheet_cell(_plain(cell))] + (["", ""] if spread else [])
        writer.writerow(out)
    return buffer.getvalue()


def _plain(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(round(value, 6))
    return str(value)


def to_latex(table: Table) -> str:
    spec = "l" + "r" * (len(table.columns) - 1)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{latex_text(table.title)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(latex_text(c) for c in table.columns) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(latex_text(c) for c in row) + r" \\" for row in _rows_as_text(table)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [rf"\par\footnotesize {latex_text(note)}" for note in table.notes]
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_tables(tables: Sequence[Table], folder: Path, formats: Sequence[str] = ("md", "csv", "tex")) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    renderers = {"md": to_markdown, "csv": to_csv, "tex": to_latex}
    written = []
    for table in tables:
        for fmt in formats:
            path = folder / f"{table.name}.{fmt}"
            path.write_text(renderers[fmt](table), encoding="utf-8", newline="")  # CSV line ends kept as written
            written.append(path)
    return written


def print_tables(tables: Sequence[Table], console: Console) -> None:
    """Render to a rich Console (stderr or stdout, the caller decides). Every text is shown literally: a
    dataset's class name or a server's message is neither Rich markup nor a terminal escape sequence. A table
    of models wider than the console shows long model names as M1, M2, ... with a legend, and a table still too
    wide comes in parts of columns, each with the row names (report.console)."""
    from rich.table import Table as RichTable

    from trusteval.report.console import abbreviate, first_column_limit, split_columns

    for table in tables:
        table, legend = abbreviate(table, console.width)
        parts = split_columns(table, console.width)
        for part in parts:
            rich_table = RichTable(title=console_text(part.title), title_justify="left")
            for index, column in enumerate(part.columns):
                limit = first_column_limit(console.width) if index == 0 and len(parts) > 1 else None
                rich_table.add_column(console_text(column), justify="left" if index == 0 else "right",
                                      overflow="fold", max_width=limit)  # fmt: skip
            for row in _rows_as_text(part):
                rich_table.add_row(*(console_text(cell) for cell in row))
            console.print(rich_table)
        for line in legend:
            console.print(console_text("  " + line))
        for note in table.notes:
            console.print(console_text("  " + note, style="dim"))
        console.print()
