"""One self-contained HTML file: header, tables, figures and a sample browser, with nothing loaded from anywhere.

Prompts, responses, model and category names are untrusted. Every text goes through `html.escape`; the sample
rows travel as JSON in a `<script type="application/json">` block with `<`, `>` and `&` written as \\u escapes
(so no `</script>` can end it) and are shown by the script through `textContent`. Figures are SVG documents in
`<img src="data:...">`, where a browser runs no script and fetches nothing. A Content-Security-Policy that
allows only this page's own script (by hash) and data: images is the second line of defence.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from html import escape

from trusteval.metrics.stats import Estimate
from trusteval.report.directions import better
from trusteval.report.html_assets import SCRIPT, STYLE
from trusteval.report.html_data import SAMPLE_FIELDS, Figure, ReportDoc, RunFacts, Sample
from trusteval.report.tables import format_cell
from trusteval.tables.table import Cell, Table

JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: object) -> str:
    """JSON that is safe inside a <script> element: no `</script>`, `<!--` or line separator can appear."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for char, escaped in JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def _numeric(cell: Cell) -> float | None:
    if isinstance(cell, Estimate):
        return None if math.isnan(cell.value) else cell.value
    if isinstance(cell, float) and not math.isnan(cell):
        return cell
    return None


def extremes(table: Table) -> dict[tuple[int, int], str]:
    """(row, column) -> "hi good" / "lo bad" / ...: the highest and lowest value of each column that has a good
    direction (report.directions) and at least two distinct values; good marks the better end."""
    marks: dict[tuple[int, int], str] = {}
    for column in range(1, len(table.columns)):
        direction = better(table.name, table.columns[column])
        if direction is None:
            continue
        values = [(row, _numeric(cells[column])) for row, cells in enumerate(table.rows) if column < len(cells)]
        known = [(row, v) for row, v in values if v is not None]
        if len(known) < 2 or min(v for _, v in known) == max(v for _, v in known):
            continue
        top, bottom = max(v for _, v in known), min(v for _, v in known)
        high, low = ("good", "bad") if direction == "high" else ("bad", "good")
        marks.update({(row, column): f"hi {high}" for row, v in known if v == top})
        marks.update({(row, column): f"lo {low}" for row, v in known if v == bottom})
    return marks


def row_link(table: Table, row: Sequence[Cell], column: int) -> str | None:
    """The sample browser filtered to a cell's rows: its model (a table with a Model column) and, for a
    per-class column ('TT region', 'AR gender'), its class; None for other cells."""
    from urllib.parse import quote

    if not table.columns or table.columns[0] != "Model" or column == 0 or _numeric(row[column]) is None:
        return None
    params = f"model={quote(str(row[0]), safe='')}"
    head = table.columns[column]
    prefix, _, rest = head.partition(" ")
    if prefix in {"TT", "AR"} and rest and rest != "all":
        params += f"&class={quote(rest, safe='')}"
    return "#" + params


def table_html(table: Table, links: bool = False) -> str:
    """A result table; with `links` (the page has a sample browser) each number links to its rows there."""
    marks = extremes(table)
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    lines = [f'<h3 id="{escape(table.name)}">{escape(table.title)}</h3>', f'<table class="result"><tr>{head}</tr>']
    for r, row in enumerate(table.rows):
        cells = []
        for c, cell in enumerate(row):
            classes = " ".join(x for x in ("num" if _numeric(cell) is not None else "", marks.get((r, c), "")) if x)
            text = escape(format_cell(cell, table.digits, table.show_intervals or isinstance(cell, Estimate)))
            link = row_link(table, row, c) if links else None
            text = f'<a href="{escape(link)}">{text}</a>' if link else text
            cells.append(f'<td class="{classes}">{text}</td>' if classes else f"<td>{text}</td>")
        lines.append("<tr>" + "".join(cells) + "</tr>")
    lines.append("</table>")
    if table.notes:
        lines.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in table.notes) + "</ul>")
    return "\n".join(lines)


def facts_html(facts: RunFacts) -> str:
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in facts.entries)
    counts = "".join(
        f'<span class="{"bad" if n and k != "rows" else ""}">{escape(k)}: {n}</span>' for k, n in facts.counts.items()
    )
    meanings = "".join(f"<li>{escape(k)}: {escape(v)}</li>" for k, v in facts.meanings.items())
    return (
        f"<h3>Run {escape(facts.run_id)} ({escape(facts.benchmark)})</h3>"
        f'<p class="counts">{counts}</p>'
        + (f'<ul class="notes meanings">{meanings}</ul>' if meanings else "")
        + "<details><summary>models, data (sha256), settings, scorers, stage times "
        f'({len(facts.entries)} entries)</summary><table class="facts">{rows}</table></details>'
    )


def figure_html(figure: Figure) -> str:
    start = figure.svg.find("<svg")
    svg = figure.svg[start:] if start >= 0 else figure.svg
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    name = escape(figure.name)
    return (
        f'<figure class="plot" id="fig-{name}"><img alt="{name}" src="data:image/svg+xml;base64,{data}">'
        f"<figcaption>{name}</figcaption></figure>"
    )


BROWSER_COLUMNS = ("model", "seed", "class", "outcome", "prompt", "response", "scores", "verdict")
FILTERS = (("model", "model"), ("class", "class"), ("outcome", "outcome"), ("judge verdict", "verdict"))


def browser_html(samples: Sequence[Sample]) -> str:
    """The sample browser: the rows as JSON (`{"judges": [id, ...], "rows": [...]}`, a row names its judge by
    index), rendered a page at a time by the page's script."""
    judges = {judge: index for index, judge in enumerate(dict.fromkeys(s.judge for s in samples if s.judge))}
    data = script_json({"judges": list(judges), "rows": [s.as_list(judges) for s in samples]})
    select = '<label>{0} <select id="f-{1}"><option value="">all</option></select></label>'
    controls = "".join(select.format(label, key) for label, key in FILTERS)
    cols = "".join(f'<col class="c-{c}">' for c in BROWSER_COLUMNS)
    head = "".join(f"<th>{'judge verdict' if c == 'verdict' else c}</th>" for c in BROWSER_COLUMNS)
    return (
        '<section id="browser"><h2>Samples (worst first)</h2>'
        f'<div class="controls">{controls}<label>text <input id="f-q" type="search"></label>'
        '<label>score \u2265 <input id="f-min" type="number" min="0" max="1" step="0.05" size="5"></label>'
        '<label>view <select id="f-view"><option value="">rows</option>'
        '<option value="side">models side by side</option></select></label>'
        '<button id="prev" type="button">previous</button><button id="next" type="button">next</button>'
        '<span id="sample-info" class="muted"></span></div>'
        f'<table id="row-table"><colgroup>{cols}</colgroup><thead><tr>{head}</tr></thead>'
        '<tbody id="sample-rows"></tbody></table>'
        '<table id="side-table" hidden><thead id="side-head"></thead><tbody id="side-rows"></tbody></table>'
        f'<script type="application/json" id="sample-data">{data}</script></section>'
    )


def _policy(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"


def _section(title: str, parts: Iterable[str]) -> str:
    body = "\n".join(parts)
    return f"<h2>{escape(title)}</h2>\n{body}" if body else ""


def render_html(doc: ReportDoc) -> str:
    from trusteval.report.html_data import _when

    legend = (
        '<p class="muted">Where a column is one measure compared across models, its highest value is marked \u25b2 '
        "and its lowest \u25bc, green at the better end and red at the worse (NT2NT and avoidance: high is good; "
        "TT, T2T, NT2T, \u03c3, \u0394, \u03c1 and toxicity: low is good). Other columns (tests, p-values, counts) "
        "are not marked. Intervals are 95% bootstrap intervals.</p>"
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in doc.notes)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_policy(SCRIPT)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(doc.title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{escape(doc.title)}</h1>",
        f'<p class="muted">trusteval {escape(doc.version)}, written {_when(doc.generated_at)}; '
        f"sample fields: {escape(', '.join(SAMPLE_FIELDS))}</p>",
        f'<ul class="notes">{notes}</ul>' if notes else "",
        _section("Runs", (facts_html(f) for f in doc.runs)),
        _section("Tables", [legend, *(table_html(t, bool(doc.samples)) for t in doc.tables)] if doc.tables else []),
        _section("Figures", (figure_html(f) for f in doc.figures)),
        browser_html(doc.samples) if doc.samples else "",
        f"<script>{SCRIPT}</script>" if doc.samples else "",
        "</body></html>",
    ]
    return "\n".join(p for p in parts if p) + "\n"
