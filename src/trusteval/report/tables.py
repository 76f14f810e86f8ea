"""Tables (trusteval.tables.table) rendered to Markdown, CSV and LaTeX, and written to files (on a console:
`report.console`).

A Table is data (title, columns, rows, notes); these renderers never compute anything.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trusteval.metrics.stats import Estimate
from trusteval.tables.table import Cell, Table
from trusteval.untrusted.safetext import latex_text, markdown_text

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


def rows_as_text(table: Table) -> list[list[str]]:
    return [[format_cell(c, table.digits, table.show_intervals) for c in row] for row in table.rows]


def to_markdown(table: Table) -> str:
    lines = [f"**{markdown_text(table.title)}**", ""]
    lines.append("| " + " | ".join(markdown_text(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(" --- " for _ in table.columns) + "|")
    for row in rows_as_text(table):
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
    warning = [safe_spreadsheet_cell(table.data_warning)] if table.data_warning else []
    header += ["data_warning"] if warning else []
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
        writer.writerow(out + warning)
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
    lines += [" & ".join(latex_text(c) for c in row) + r" \\" for row in rows_as_text(table)]
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
