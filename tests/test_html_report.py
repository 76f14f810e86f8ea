"""The HTML report (`trusteval report --html`, `trusteval tables --html`), rendered in headless Chromium.

Runs of a hostile persona (responses with `<script>` and `onerror=`) and a calm one go through the real
pipeline; the page is opened by Debian's `chromium` and its DOM after scripts ran is checked: tables, figures,
the sample browser's filter (read from location.hash), and that no injected script changed the title.
"""

from __future__ import annotations

import base64
import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from helpers import cli_env, run_cli
from trusteval.config import build_run_spec
from trusteval.models import BACKENDS
from trusteval.pipeline import execute
from trusteval.records import Generation, Request
from trusteval.report.html import extremes, render_html, script_json
from trusteval.report.html_data import ReportDoc, Sample
from trusteval.tables.table import Table

pytestmark = pytest.mark.slow  # a real model or a trained detector in most tests (seconds each)

TITLE_MARK = "PWNED"
HOSTILE = (
    f"<script>document.title='{TITLE_MARK}'</script><img src=x onerror=\"document.title='{TITLE_MARK}'\">"
    "</script><!-- 你这个傻子"
)
CALM = "谢谢你的分享，我们应该尊重每一个人。"
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars")  # fmt: skip


class Persona:
    """`persona:hostile` answers with markup (mostly Latin letters: off-language for Chinese data) on even seeds
    and echoes the prompt on odd ones; `persona:calm` answers politely; `persona:judge` judges avoidance: 1 for
    the polite answer, 0 for the markup, an unparsable answer for an echoed prompt."""

    batch_size = 16
    max_concurrency = 1

    def __init__(self, spec, settings):
        self.name = spec.name

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, self._answer(r.messages[-1][1], r.seed)) for r in requests]

    def _answer(self, text: str, seed: int) -> str:
        if self.name == "hostile":
            return HOSTILE if seed % 2 == 0 else text
        if self.name == "judge":  # reads the avoidance prompt: a polite answer avoids harm, markup complies
            return "1" if CALM in text else "0" if TITLE_MARK in text else "hard to say"
        return CALM

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "persona"}


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed: CI must install Debian's `chromium` package (see .ci/run)")
    pytest.skip("chromium is not installed (apt-get install chromium); the HTML report is not rendered")


def browse(page: Path, tmp_path: Path, *extra: str, fragment: str = "") -> str:
    """The DOM after the page's scripts ran (virtual time lets them finish)."""
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    command = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000", *extra]
    done = subprocess.run([*command, page.resolve().as_uri() + fragment], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def sample_rows(dom: str) -> list[list[str]]:
    rows = re.findall(r'<tr class="sample">(.*?)</tr>', dom, re.S)
    return [re.findall(r"<td>(.*?)</td>", row, re.S) for row in rows]


@pytest.fixture(scope="module")
def store_with_runs(tmp_path_factory, data_dir, cache_dir):
    BACKENDS.register("persona", Persona)
    folder = tmp_path_factory.mktemp("html") / "ws"
    base = {"store": str(folder), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42, 43],
            "limit": 12, "resamples": 100, "benchmark": "trusteval-toxicity"}  # fmt: skip
    try:
        spec = build_run_spec({**base, "models": ["persona:hostile", "persona:calm"]}, env={})
        summary = execute(spec, env={})
        spans = {**base, "dataset": "toxicspans-en", "seeds": [42], "limit": 6}  # English: "toxicspans" is Chinese
        spans_run = execute(build_run_spec({**spans, "models": ["persona:calm", "persona:hostile"]}, env={}), env={})
        avoidance = {**base, "benchmark": "trusteval-avoidance", "limit": None, "per_category": 2}
        judged = {**avoidance, "judge": "persona:judge", "models": ["persona:hostile", "persona:calm"]}
        judged_run = execute(build_run_spec(judged, env={}), env={})
        pva = {**base, "benchmark": "trustgpt-pva", "limit": None, "options": {"norms": "6"}}
        figures = execute(build_run_spec({**pva, "models": ["persona:hostile"]}, env={}), env={})
        toxicity = {**pva, "benchmark": "trustgpt-toxicity", "options": {"norms": "3"}}
        execute(build_run_spec({**toxicity, "models": ["persona:hostile", "persona:calm"]}, env={}), env={})
    finally:
        BACKENDS.unregister("persona")
    return folder, summary, figures, {"spans": spans_run, "judged": judged_run}


@pytest.fixture(scope="module")
def report_page(store_with_runs, tmp_path_factory):
    folder, summary, figures, _ = store_with_runs
    page = tmp_path_factory.mktemp("page") / "report.html"
    result = run_cli("report", summary.run_id, figures.run_id, "--store", folder, "--html", page)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "HTML report written to" in result.stderr
    return page, summary, figures


def test_page_is_self_contained_and_escapes_untrusted_text(report_page):
    page, *_ = report_page
    text = page.read_text(encoding="utf-8")
    assert text.count("<script") == 2  # the JSON block and the page's own script, nothing from a response
    assert "onerror=" not in text.replace("onerror=\\", "")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "<link" not in text and "@import" not in text and "url(" not in text
    assert "Content-Security-Policy" in text


def test_chromium_shows_tables_and_runs_no_injected_script(report_page, tmp_path):
    page, summary, figures = report_page
    dom = browse(page, tmp_path, "--dump-dom")
    assert f"<title>trusteval report: {summary.run_id}, {figures.run_id}</title>" in dom
    assert TITLE_MARK not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    # two runs: one view, the toxicity run's tables with both its models as rows and the z-tests between them
    assert dom.count('<table class="result">') == len(summary.tables) + len(figures.tables) + 1 >= 4
    assert "Pairwise two-proportion z-tests on TT (cold)" in dom
    assert "Table 5 (cold)" in dom and 'class="num hi bad"' in dom and "PVA" in dom
    assert re.search(r'<figure class="plot" id="fig-trustgpt_pva"><img alt="trustgpt_pva" src="data:image/svg', dom)
    assert 'id="fig-trusteval_toxicity_categories"' in dom
    rows = sample_rows(dom)
    total = summary.requests + figures.requests
    assert len(rows) == 50 and f"of {total}" in dom  # the first page of 50
    rows = sample_rows(browse(page, tmp_path, "--dump-dom", fragment=f"#q={TITLE_MARK}&page=1"))
    hostile = [r for r in rows if "&lt;script&gt;document.title" in r[5]]
    assert hostile and all("&lt;img src=x onerror=" in r[5] for r in hostile)
    assert "sha256" in dom and "persona:hostile" in dom
    assert re.search(r"<td>time, latest invocation: generate</td><td>\d+\.\d\d s</td>", dom)
    assert "time, latest invocation: score response_toxicity" in dom


def test_whole_store_is_one_view_with_models_side_by_side(store_with_runs, tmp_path):
    """`report --all --html`: one Table 5 per dataset with every model as a row (not one per run), and the
    sample browser's side-by-side view: a row per prompt and seed, a column per model."""
    folder, *_ = store_with_runs
    page = tmp_path / "store.html"
    result = run_cli("report", "--all", "--store", folder, "--html", page)
    assert result.returncode == 0, result.stderr[-3000:]
    text = page.read_text(encoding="utf-8")
    per_dataset = [n for n in re.findall(r'<h3 id="table5_(\w+)"', text) if not n.endswith("_seeds")]
    assert per_dataset[0] == "cold" and "toxicspans" in per_dataset[1] and per_dataset[2:] == ["combined"]
    table5 = text.split('id="table5_cold"', 1)[1].split("</table>", 1)[0]
    assert table5.count("<tr>") == 3 and "persona:hostile" in table5 and "persona:calm" in table5
    assert '<a href="#model=persona%3Acalm">' in table5  # a cell links to its rows
    assert '"Noto Sans CJK SC"' in text and '"WenQuanYi Zen Hei"' in text  # a CJK fallback is named
    dom = browse(page, tmp_path, "--dump-dom", fragment="#view=side&class=region")
    heads = re.findall(r'<thead id="side-head"><tr>(.*?)</tr>', dom, re.S)[0]
    assert re.findall(r"<th>(.*?)</th>", heads)[:3] == ["prompt", "seed", "class"]
    assert "<th>persona:hostile</th>" in heads and "<th>persona:calm</th>" in heads
    sides = re.findall(r'<tr class="side">(.*?)</tr>', dom, re.S)
    assert sides and all(re.findall(r"<td>(.*?)</td>", row, re.S)[2] == "region" for row in sides)
    assert all(row.count('<td class="answer">') == heads.count("<th>") - 3 for row in sides)
    assert CALM in sides[0]  # the calm model's answer sits beside the hostile one's
    scored = browse(page, tmp_path, "--dump-dom", fragment="#min=0.5")
    outcomes = {r[3] for r in sample_rows(scored)}
    assert "toxic" in outcomes and "non-toxic" not in outcomes and "(filtered from " in scored


def test_filter_from_location_hash_shows_only_matching_rows(report_page, tmp_path):
    page, _, figures = report_page
    dom = browse(page, tmp_path, "--dump-dom", fragment="#model=persona%3Acalm&outcome=non-toxic")
    rows = sample_rows(dom)
    assert rows and all(r[0].startswith("persona:calm") and r[3] == "non-toxic" for r in rows)
    assert 'data-shown="24"' in dom and f"(filtered from {48 + figures.requests})" in dom
    searched = sample_rows(browse(page, tmp_path, "--dump-dom", fragment=f"#q={TITLE_MARK}&class=gender"))
    assert searched and all(TITLE_MARK in r[5] and r[2] == "gender" for r in searched)


def test_screenshot_of_the_report(report_page, tmp_path):
    page, *_ = report_page
    shot = tmp_path / "shot.png"
    browse(page, tmp_path, f"--screenshot={shot}", "--window-size=1200,1600")
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_tables_html_covers_the_runs_used(store_with_runs, tmp_path):
    folder, summary, *_ = store_with_runs
    page = tmp_path / "tables.html"
    result = run_cli("tables", "--store", folder, "--out", tmp_path / "t", "--html", page)
    assert result.returncode == 0, result.stderr[-3000:]
    dom = browse(page, tmp_path, "--dump-dom")
    assert "<title>trusteval tables</title>" in dom and f"Run {summary.run_id}" in dom
    assert "TrustGPT Figure 6 (PVA)" in dom and "TrustGPT Table 3" in dom and 'id="fig-trustgpt_pva"' in dom
    assert 'id="fig-trusteval_toxicity_categories"' in dom and 'id="fig-trustgpt_toxicity_length"' in dom
    assert dom.count('<table class="result">') >= 8 and len(sample_rows(dom)) == 50


def test_tables_cover_trustgpt_with_the_most_toxic_responses(store_with_runs, tmp_path):
    from trusteval.report.export import export_records
    from trusteval.store import Store

    folder, *_ = store_with_runs
    result = run_cli("tables", "--store", folder, "--benchmark", "trustgpt-toxicity", "--out", tmp_path, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    tables = {t["name"]: t for t in result.json()["tables"]}
    assert set(tables) >= {"trustgpt_toxicity", "trustgpt_toxicity_rta", "trustgpt_most_toxic"}
    assert [row[0] for row in tables["trustgpt_toxicity"]["rows"]] == ["persona:hostile", "persona:calm"]
    most = tables["trustgpt_most_toxic"]["rows"]
    store = Store.open_read_only(folder)
    try:
        run_id = next(r["run_id"] for r in store.runs() if r["benchmark"] == "trustgpt-toxicity")
        rows = [r for r in export_records(store, run_id) if r["model"] == "persona:hostile"]
    finally:
        store.close()
    top = sorted((r["response_toxicity"] for r in rows), reverse=True)[:5]
    assert [row[2] for row in most if row[0] == "persona:hostile"] == pytest.approx(top)
    assert [row[1] for row in most if row[0] == "persona:calm"] == [1, 2, 3, 4, 5]


def test_script_json_cannot_end_its_block():
    text = script_json(["</script><script>alert(1)</script>", "<!--", "a\u2028b", "&amp;"])
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text


def test_marks_follow_the_measure_direction():
    """▲/▼ on the highest/lowest of a column, green at the better end: NT2NT high is good, TT low is good; a
    column with one distinct value, a table of tests (p-values) and compare's mixed metrics get no marks."""
    table = Table("table5_cold", "t", ("Model", "NT2NT", "TT", "T2T"),
                  (("x", 1.0, 5.0, 2.0), ("y", 3.0, 9.0, 2.0), ("z", 2.0, float("nan"), 2.0)))  # fmt: skip
    assert extremes(table) == {(0, 1): "lo bad", (1, 1): "hi good", (0, 2): "lo good", (1, 2): "hi bad"}
    tests = Table("ztests_tt_cold", "t", ("Model A", "Model B", "TT A (%)", "TT B (%)", "z", "p"),
                  (("x", "y", 1.0, 2.0, 0.3, 1.0), ("x", "z", 1.0, 3.0, 2.1, 0.034)))  # fmt: skip
    compared = Table(
        "compare",
        "t",
        ("Metric", "A", "B", "B - A", "95% interval", "p", "n", "test"),
        (("TT", 19.4, 36.1, 16.7, "", 0.17, 16, "z"), ("σ", 1.0, 0.5, -0.5, "", 1.0, 16, "z")),
    )
    assert extremes(tests) == {} and extremes(compared) == {}
    avoidance = Table("table10_cold", "t", ("Model", "AR region", "judged"), (("x", 80.0, 10), ("y", 60.0, 12)))
    assert extremes(avoidance) == {(0, 1): "hi good", (1, 1): "lo bad"}
    spread = Table("table10_cold_seeds", "t", ("Model", "AR region seed mean", "AR region seed sd"),
                   (("x", 80.0, 1.0), ("y", 60.0, 9.0)))  # fmt: skip
    assert extremes(spread) == {(0, 1): "hi good", (1, 1): "lo bad"}  # a spread across seeds: no marks


def _many_samples(count: int) -> list[Sample]:
    return [Sample("r", f"model-{i % 3}", i % 2, f"class-{i % 5}", "toxic" if i % 4 else "non-toxic",
                   1.0 - i / count, f"prompt {i} " * 6, f"response {i} <b>x</b> " * 8, {"tox": f"{i / count:.3f}"})
            for i in range(count)]  # fmt: skip


def test_hundred_thousand_rows_render_one_page(tmp_path):
    doc = ReportDoc(title="big", runs=[], tables=[], figures=[], samples=_many_samples(100_000), version="test")
    page = tmp_path / "big.html"
    page.write_text(render_html(doc), encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    dom = browse(page, tmp_path, "--dump-dom", fragment="#class=class-3&page=100")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = sample_rows(dom)
    assert len(rows) == 50 and all(r[2] == "class-3" for r in rows)
    assert "rows 4951\u20135000 of 20000 (filtered from 100000), page 100 of 400" in dom
    # CPU time of the browser, not wall time: on a shared CI machine the wall clock measures the neighbours
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 30, f"opening a 100,000-row report took {cpu:.1f} s of CPU"


def test_figures_are_data_images(tmp_path):
    from trusteval.report.html_data import Figure

    svg = '<?xml version="1.0"?><!DOCTYPE svg><svg xmlns="http://www.w3.org/2000/svg"><rect width="5"/></svg>'
    doc = ReportDoc(title="f", runs=[], tables=[], figures=[Figure("fig<1>", svg)], samples=[], version="t")
    text = render_html(doc)
    encoded = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', text).group(1)
    assert base64.b64decode(encoded).decode().startswith("<svg") and 'alt="fig&lt;1&gt;"' in text


def test_export_scores_a_response_that_repeats_its_prompt(store_with_runs):
    """persona:hostile echoes the prompt on odd seeds: that response has the prompt's subject and its own
    score (the export used to leave it unscored, and the sample browser showed it as 'not scored')."""
    from trusteval.report.export import export_records
    from trusteval.store import Store

    folder, summary, *_ = store_with_runs
    store = Store.open_read_only(folder)
    try:
        echoed = [r for r in export_records(store, summary.run_id) if r["response"] == r["prompt"]]
    finally:
        store.close()
    assert len(echoed) == 12
    assert all(r["response_toxicity_status"] == "ok" and r["response_toxicity"] == r["prompt_toxicity"] for r in echoed)


def test_samples_limit_keeps_the_worst_rows(report_page, store_with_runs, tmp_path):
    _, summary, _ = report_page
    folder, *_ = store_with_runs
    page = tmp_path / "few.html"
    result = run_cli("report", summary.run_id, "--store", folder, "--html", page, "--samples", "5")
    assert result.returncode == 0, result.stderr[-2000:]
    text = page.read_text(encoding="utf-8")
    assert f"holds the 5 worst of {summary.requests} rows" in text and "5 sample rows" in result.stderr
    wrong = run_cli("report", summary.run_id, "--store", folder, "--html", page, "--samples", "-1")
    assert wrong.returncode == 2 and wrong.stderr == "error: flag --samples -1: use 0 or more\n"
    ignored = run_cli("report", summary.run_id, "--store", folder, "--samples", "5")  # used to be ignored
    assert ignored.returncode == 2 and "add --html FILE" in ignored.stderr and ignored.stdout == ""


@pytest.fixture(scope="module")
def judged_page(store_with_runs, tmp_path_factory):
    """The report of the COLD toxicity run, the ToxicSpans one and the judged avoidance run."""
    folder, summary, _, more = store_with_runs
    page = tmp_path_factory.mktemp("judged") / "report.html"
    runs = (summary.run_id, more["spans"].run_id, more["judged"].run_id)
    result = run_cli("report", *runs, "--store", folder, "--html", page)
    assert result.returncode == 0, result.stderr[-3000:]
    return page, summary, more


def _table(dom: str, name: str) -> list[list[str]]:
    found = re.search(rf'<h3 id="{name}">.*?</h3>\s*<table class="result">(.*?)</table>', dom, re.S)
    assert found, f"no table {name}"
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row) for row in re.findall(r"<tr>(.*?)</tr>", found.group(1))]


def test_combined_table5_puts_the_datasets_side_by_side(judged_page, tmp_path):
    page, *_ = judged_page
    dom = browse(page, tmp_path, "--dump-dom")
    combined, cold, spans = (_table(dom, name) for name in ("table5_combined", "table5_cold", "table5_toxicspans_en"))
    assert combined[0] == ["Model", *(f"{d} {c}" for d in ("cold", "toxicspans-en") for c in cold[0][1:])]
    by_model = {row[0]: row[1:] for row in combined[1:]}
    assert set(by_model) == {"persona:hostile", "persona:calm"}
    for row in cold[1:]:
        assert by_model[row[0]][:5] == row[1:]
    for row in spans[1:]:
        assert by_model[row[0]][5:] == row[1:]
    assert "Table 5 (cold, toxicspans-en): prompt-response toxicity categories (%), datasets side by side" in dom


def test_tables_command_writes_the_combined_table5(store_with_runs, tmp_path):
    folder, *_ = store_with_runs
    result = run_cli("tables", "--store", folder, "--benchmark", "trusteval-toxicity", "--out", tmp_path, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    tables = {t["name"]: t for t in result.json()["tables"]}
    combined, cold = tables["table5_combined"], tables["table5_cold"]
    assert combined["columns"][1:6] == [f"cold {c}" for c in ("T2T", "T2NT", "NT2T", "NT2NT", "TT")]
    assert combined["columns"][6] == "toxicspans-en T2T" and len(combined["columns"]) == 11
    rows = {row[0]: row for row in combined["rows"]}
    assert [rows[row[0]][1:6] for row in cold["rows"]] == [row[1:] for row in cold["rows"]]
    assert (tmp_path / "table5_combined.md").is_file() and (tmp_path / "table5_cold.md").is_file()
    narrow = run_cli("tables", "--store", folder, "--benchmark", "trusteval-toxicity", "--out", tmp_path,
                     env={**cli_env(), "COLUMNS": "80"})  # fmt: skip
    assert narrow.returncode == 0 and max(len(line) for line in narrow.stdout.splitlines()) <= 80
    # too wide for 80 columns: printed in parts, each with the model names, no header or number cut in two
    assert "datasets side by side [columns 1 of" in " ".join(narrow.stdout.split())
    hostile_tt = next(row[5] for row in cold["rows"] if row[0] == "persona:hostile")
    tt = f"{hostile_tt['value']:.2f}" if isinstance(hostile_tt, dict) else f"{float(hostile_tt):.2f}"
    assert all(f" {c} " in narrow.stdout for c in ("cold NT2NT", "toxicspans-en NT2NT", "T2NT seed mean", tt))


def test_sample_rows_show_the_judge_verdict_and_filter_by_it(judged_page, tmp_path):
    page, _, more = judged_page
    text = page.read_text(encoding="utf-8")
    judge_id = re.search(r'"judges":\["(judge/avoidance_v1@[0-9a-f]{12}/[^"]+)"\]', text).group(1)
    assert "persona:judge" in judge_id
    dom = browse(page, tmp_path, "--dump-dom", fragment="#verdict=complies")
    rows = sample_rows(dom)
    assert rows and all(r[7] == f"complies\njudge: {judge_id}" for r in rows)
    assert all("&lt;script&gt;document.title" in r[5] for r in rows)  # the markup answers, shown as text
    assert TITLE_MARK not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    judged = more["judged"].requests
    assert f'data-shown="{judged // 4}"' in dom  # hostile's even-seed half of its half of the rows
    avoids = sample_rows(browse(page, tmp_path, "--dump-dom", fragment="#verdict=avoids"))
    assert avoids and all(r[0].startswith("persona:calm") for r in avoids) and len(avoids) == judged // 2
    unparsed = sample_rows(browse(page, tmp_path, "--dump-dom", fragment="#verdict=unparsed&outcome=unparsed"))
    assert len(unparsed) == judged // 4
    toxicity = sample_rows(browse(page, tmp_path, "--dump-dom", fragment="#verdict=no%20judge&model=persona%3Acalm"))
    assert toxicity and all(r[7] == "no judge" for r in toxicity)


def test_header_counts_off_language_responses_and_says_why(judged_page, tmp_path):
    page, summary, _ = judged_page
    dom = browse(page, tmp_path, "--dump-dom")
    header = dom[dom.index(f"Run {summary.run_id}") :]
    header = header[: header.index("</details>")]
    assert "off-language responses: 12</span>" in header  # persona:hostile's markup on seed 42, 12 prompts
    assert "another script than the data's language" in header and "option off_language=exclude" in header
    assert "scored and kept in the metrics" in header
    rows = sample_rows(browse(page, tmp_path, "--dump-dom", fragment="#model=persona%3Ahostile&class=gender"))
    assert any("language: off-language (the data is zh)" in r[6] for r in rows)


def test_avoidance_rows_that_comply_come_first(store_with_runs):
    """Worst first: for the avoidance judge 1 means the response avoids harm, so the 0s (complies) lead."""
    from trusteval.report.html_data import run_samples, worst_first
    from trusteval.store import Store

    folder, *_, more = store_with_runs
    store = Store.open_read_only(folder)
    try:
        verdicts = [s.verdict for s in worst_first(list(run_samples(store, more["judged"].run_id)))]
    finally:
        store.close()
    assert verdicts == ["complies"] * 6 + ["avoids"] * 12 + ["unparsed"] * 6


def test_header_names_model_identities_and_scorer_and_judge_validity(judged_page):
    page, *_ = judged_page
    text = page.read_text(encoding="utf-8")
    assert "<td>model identity (persona:hostile)</td><td>persona:hostile</td>" in text
    assert "<td>validity (response_toxicity)</td><td>valid</td>" in text  # cold-tfidf@4's card: COLD test
    judge = re.search(r"<td>judge validity \(avoidance_judge\)</td><td>([^<]*)</td>", text).group(1)
    assert judge.startswith("Judge not validated: no Table 9 for this judge id")


def test_bias_report_draws_the_disparity_beside_the_scorer_control(tmp_path, data_dir, cache_dir):
    BACKENDS.register("persona", Persona)
    try:
        spec = {"store": str(tmp_path / "ws"), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42],
                "limit": 12, "resamples": 50, "benchmark": "trusteval-bias", "models": ["persona:hostile"]}  # fmt: skip
        run = execute(build_run_spec(spec, env={}), env={})
    finally:
        BACKENDS.unregister("persona")
    page = tmp_path / "bias.html"
    result = run_cli("report", run.run_id, "--store", tmp_path / "ws", "--html", page)
    assert result.returncode == 0, result.stderr[-2000:]
    text = page.read_text(encoding="utf-8")
    figure = r'id="fig-trusteval_bias_scorer_control"><img alt="[^"]*" src="data:image/svg\+xml;base64,([^"]+)"'
    svg = re.search(figure, text)
    drawn = base64.b64decode(svg.group(1)).decode()
    assert "persona:hostile (group-neutral)" in drawn and "Δ over classes" in drawn
    assert "Scorer bias control: each disparity (TT (%)) on raw and on group-neutral scores" in text
    assert re.search(r"SCORER-INDUCED|no disparity|model&#x27;s bias|model's bias", text)


def test_hostile_dataset_label_verdict_and_judge_id_stay_text(tmp_path):
    from trusteval.tables.table5_combined import DatasetTable5, combined_table5

    def table5(name: str) -> Table:
        return Table(name, "t", ("Model", "T2T", "T2NT", "NT2T", "NT2NT", "TT"), (("m", 1.0, 2.0, 3.0, 4.0, 5.0),))

    hostile = f"<img src=x onerror=\"document.title='{TITLE_MARK}'\">"
    tables = combined_table5([DatasetTable5(hostile, "c", table5("table5_x")), DatasetTable5("cold", "c", table5("t"))])
    sample = Sample("r", "m", 0, "c", "complies", 1.0, "p", "r", {}, f"<script>document.title='{TITLE_MARK}'</script>",
                    f"judge/{hostile}", True)  # fmt: skip
    page = tmp_path / "hostile.html"
    page.write_text(render_html(ReportDoc("t", [], tables, [], [sample], version="t")), encoding="utf-8")
    dom = browse(page, tmp_path, "--dump-dom")
    assert re.search(r"<title>(.*?)</title>", dom, re.S).group(1) == "t"
    assert "<th>cold T2T</th>" in dom and "<th>&lt;img src=x onerror=" in dom
    assert (
        sample_rows(dom)[0][7]
        == f"&lt;script&gt;document.title='{TITLE_MARK}'&lt;/script&gt;\njudge: judge/&lt;img src=x"
        f" onerror=\"document.title='{TITLE_MARK}'\"&gt;"
    )


def test_bidi_controls_in_sample_rows_are_shown_not_applied():
    """U+202E in an answer used to reach the sample browser live, reversing what a reader sees."""
    sample = Sample("r", "m\u2066x", 1, "c", "toxic", 0.9, "p\u202ad", "evil \u202egnp.exe \u2067done", {"tox": "0.9"})
    page = render_html(ReportDoc(title="b", runs=[], tables=[], figures=[], samples=[sample], version="t"))
    bidi = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
    assert bidi.findall(page) == []
    assert "evil [U+202E]gnp.exe [U+2067]done" in page and "p[U+202A]d" in page and "m[U+2066]x" in page
