"""Text from data, models and servers shown on a terminal or written into a document shows as written.

Attribute classes hold a screen-clearing escape sequence, an OSC title sequence, Rich markup (a live link, a
stray closing tag `[/b]` that used to crash printing after the run was stored), HTML, a Markdown link to
`javascript:` and LaTeX specials. A full run through the CLI prints them to the console and writes them into
the Markdown and LaTeX tables; none may act, and each must still be readable.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console

from helpers import cli_env, run_cli
from trusteval.report.console import print_tables
from trusteval.tables.table import Table
from trusteval.untrusted.safetext import latex_text, markdown_text, one_line, strip_controls

CLEAR_SCREEN = "\x1b[2J"
SET_TITLE = "\x1b]0;pwned\x07"
CLASSES = [
    f"{CLEAR_SCREEN}clear",
    f"{SET_TITLE}title",
    "[link=https://evil.invalid]click[/link]",
    "[/b]",
    "<script>alert(1)</script>",
    "[x](javascript:alert(1))",
    "a\\b >= c",
]


def _assert_no_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text, repr(text[:500])


def test_strip_controls_keeps_text_and_newlines_but_no_escape_sequence():
    assert strip_controls(f"a{CLEAR_SCREEN}b\tc\nd\x9b31m\u202eé") == "a[2Jb\tc\nd31mé"
    assert one_line("first\r\nsecond\x1b[0m\tthird") == "first second[0m third"


def test_markdown_text_is_inert():
    assert markdown_text("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    linked = markdown_text("[x](javascript:alert(1))")
    assert linked == "[x\\](javascript&#58;alert(1))", "no link: the ] is escaped and the scheme inert"
    assert markdown_text("[ref]: http://x") == "[ref\\]: http://x"
    assert markdown_text("0.12 [0.10, 0.14]") == "0.12 [0.10, 0.14]", "intervals stay readable"
    assert markdown_text("a|b\\") == "a\\|b\\\\"


def test_latex_text_escapes_each_character_once():
    assert latex_text("a\\b") == r"a\textbackslash{}b", "a backslash must not become a visible \\{}"
    assert latex_text("x >= 1 < 2 | y") == r"x \textgreater{}= 1 \textless{} 2 \textbar{} y"
    assert latex_text("50% {x} ~^") == r"50\% \{x\} \textasciitilde{}\textasciicircum{}"


def test_console_tables_show_markup_and_escapes_literally():
    table = Table(
        name="t", title="[bold]title[/bold]", columns=("Class", "[red]n"), rows=tuple((c, 1) for c in CLASSES),
        notes=("[/dim] a note with [link=https://evil.invalid]a link[/link]",),
    )  # fmt: skip
    buffer = io.StringIO()
    print_tables([table], Console(file=buffer, width=300, force_terminal=True, color_system="truecolor"))
    shown = buffer.getvalue()
    for text in ("[bold]title[/bold]", "[red]n", "[/b]", "[link=https://evil.invalid]click[/link]", "[/dim]"):
        assert text in shown, text
    assert "\x1b]8;" not in shown, "no live hyperlink"
    assert CLEAR_SCREEN not in shown and SET_TITLE not in shown


def _write_inputs(folder):
    prompts = [f"第{i}句测试文本" for i in range(len(CLASSES))]
    data = folder / "hostile.csv"
    with data.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label", "category"])
        writer.writerows([text, i % 2, CLASSES[i]] for i, text in enumerate(prompts))
    answers = folder / "answers.jsonl"
    lines = [json.dumps({"prompt": p, "response": f"回答{i}"}, ensure_ascii=False) for i, p in enumerate(prompts)]
    answers.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data, answers


@pytest.mark.slow
def test_hostile_class_names_reach_console_and_documents_inert(tmp_path, cache_dir, figures):
    data, answers = _write_inputs(tmp_path)
    store, tables = tmp_path / "ws", tmp_path / "tables"
    wide = cli_env(COLUMNS="400")  # no cell wrapped, so each class name shows on one line
    run = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                  "--model", f"replay:{answers}", "--seeds", "42", "--store", store, "--cache-dir", cache_dir,
                  "--resamples", "100", "--no-progress", env=wide)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    report = run_cli("report", "--store", store, "--out", tables, env=wide)
    assert report.returncode == 0, report.stderr[-3000:]
    for output in (run.stdout, run.stderr, report.stdout, report.stderr):
        _assert_no_controls(output)
    for shown in (run.stdout, report.stdout):
        assert "[/b]" in shown and "[link=https://evil.invalid]click[/link]" in shown, "markup shown as written"

    markdown = "".join(p.read_text("utf-8") for p in tables.glob("*.md"))
    latex = "".join(p.read_text("utf-8") for p in tables.glob("*.tex"))
    _assert_no_controls(markdown + latex)
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown
    assert "](javascript:" not in markdown and "javascript:" not in markdown
    assert r"a\textbackslash{}b \textgreater{}= c" in latex and r"\textbackslash\{\}" not in latex
    figures["hostile_output"] = {"classes": len(CLASSES), "escape_sequences_reaching_output": 0}
