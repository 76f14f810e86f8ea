"""Formula-looking prompts, classes and model answers never become live spreadsheet formulas in CSV output.

A full run through the CLI on a generic dataset (with a BOM, which must load) whose texts and attribute
classes start with `=`, `+`, `-`, `@`, tab or CR, answered by a `replay` file (also with a BOM) whose answers
do the same. Exported CSV rows and the CSV tables must carry every such cell with a leading apostrophe; the
JSONL export keeps the text exactly; Markdown and LaTeX tables escape their special characters.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from helpers import run_cli
from trusteval.report.tables import to_csv, to_latex, to_markdown
from trusteval.tables.table import Table

pytestmark = pytest.mark.slow

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
HOSTILE = [
    "=cmd|' /C calc'!A0",
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    '=HYPERLINK("http://example.invalid","点这里")',
]
CLASSES = ["=cmd|' /C calc'!A0", "@class", "+class"]


def _is_number(text: str) -> bool:
    return re.fullmatch(r"[+-]?\d+(\.\d+)?([eE][+-]?\d+)?", text) is not None


def _live_formulas(csv_text: str) -> list[str]:
    cells = [cell for row in csv.reader(io.StringIO(csv_text, newline="")) for cell in row]
    return [c for c in cells if c.startswith(FORMULA_START) and not _is_number(c)]


def _write_inputs(folder):
    # Datasets strip a text's surrounding whitespace, so leading tab / CR are tried in answers only.
    starts = [h for h in HOSTILE if not h.startswith(("\t", "\r"))]
    prompts = [f"{start} 第{i}句" for i, start in enumerate(starts)] + ["普通的句子一", "普通的句子二"]
    data = folder / "hostile.csv"
    with data.open("w", encoding="utf-8-sig", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label", "category"])
        for i, text in enumerate(prompts):
            writer.writerow([text, i % 2, CLASSES[i % len(CLASSES)]])
    answers = folder / "answers.jsonl"
    lines = [json.dumps({"prompt": p, "response": HOSTILE[i]}, ensure_ascii=False) for i, p in enumerate(prompts)]
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8-sig")
    return data, answers, prompts


def test_exports_and_tables_never_hold_a_live_formula(tmp_path, cache_dir, figures):
    data, answers, prompts = _write_inputs(tmp_path)
    store, tables = tmp_path / "ws", tmp_path / "tables"
    run = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                  "--model", f"replay:{answers}", "--seeds", "42", "--store", store, "--cache-dir", cache_dir,
                  "--resamples", "100", "--json", "--no-progress")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.json()["generated"] == len(HOSTILE)

    exported = tmp_path / "rows.csv"  # a file read with newline="", as a spreadsheet reads it: CR stays CR
    as_csv = run_cli("export", "--store", store, "--format", "csv", "-o", exported)
    as_jsonl = run_cli("export", "--store", store, "--format", "jsonl")
    report = run_cli("report", "--store", store, "--out", tables)
    assert as_csv.returncode == as_jsonl.returncode == report.returncode == 0

    csv_text = exported.read_bytes().decode("utf-8")
    assert _live_formulas(csv_text) == []
    rows = list(csv.DictReader(io.StringIO(csv_text, newline="")))
    assert sorted(r["response"] for r in rows) == sorted("'" + h for h in HOSTILE)
    records = [json.loads(line) for line in as_jsonl.stdout.splitlines()]
    assert sorted(r["prompt"] for r in records) == sorted(prompts), "JSONL keeps the text exactly"

    table_files = sorted(tables.glob("*.csv")) + sorted((store / "reports").rglob("*.csv"))
    assert table_files and all(_live_formulas(p.read_bytes().decode("utf-8")) == [] for p in table_files)
    by_class = next(p for p in tables.glob("toxicity_by_category_*.csv"))
    assert "'=cmd|' /C calc'!A0" in {row["Class"] for row in csv.DictReader(by_class.open(encoding="utf-8"))}
    markdown = next(tables.glob("toxicity_by_category_*.md")).read_text("utf-8")
    assert "=cmd\\|' /C calc'!A0" in markdown, "a | inside a cell is escaped in Markdown"
    figures["spreadsheet_injection"] = {
        "hostile_cells": len(HOSTILE) + len(CLASSES),
        "csv_files_checked": len(table_files) + 1,
        "live_formulas_found": 0,
    }


def test_table_renderers_escape_hostile_cells():
    table = Table(
        name="t",
        title="Title with 50% & $ # _ {x}",
        columns=("Model", "=bad", "Value"),
        rows=(("@model", "-1+1", -1.5), ("\tx", "a|b\nnext line", 2.0)),
    )
    assert _live_formulas(to_csv(table)) == []
    rows = list(csv.reader(io.StringIO(to_csv(table))))
    assert rows[0][1] == "'=bad" and rows[1][:3] == ["'@model", "'-1+1", "-1.5"]
    markdown_rows = [line for line in to_markdown(table).splitlines() if line.startswith("|")]
    assert len(markdown_rows) == 4, "a line break inside a cell must not split the Markdown row"
    assert "a\\|b" in markdown_rows[-1]
    latex = to_latex(table)
    assert r"50\% \& \$ \# \_ \{x\}" in latex
