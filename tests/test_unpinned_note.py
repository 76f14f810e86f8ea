"""A run that used data not matching its pins (`--allow-unpinned-data`) says so wherever its numbers are shown:
`trusteval report` (console), the md/csv/tex tables of `report --out` and `tables`, `trusteval runs`, and the HTML
report (a visible note, not only the collapsed run facts). Issue 21, item 6."""

from __future__ import annotations

import csv
import json
import re
import shutil

import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow

NOTE = "does not match its pin"


@pytest.fixture(scope="module")
def unpinned_run(data_dir, tmp_path_factory, cache_dir):
    tmp = tmp_path_factory.mktemp("unpinned")
    mirror = tmp / "mirror"
    shutil.copytree(data_dir / "cold", mirror / "cold")
    test_csv = mirror / "cold" / "test.csv"
    test_csv.write_bytes(test_csv.read_bytes().replace(b",race,1,", b",race,0,", 1))  # one label flipped
    with test_csv.open(encoding="utf-8-sig", newline="") as handle:
        texts = {row["TEXT"].strip() for row in csv.DictReader(handle)}
    answers = tmp / "answers.jsonl"
    answers.write_text("".join(json.dumps({"prompt": t, "response": t}, ensure_ascii=False) + "\n" for t in texts))
    store = tmp / "ws"
    done = run_cli(
        "run", "--benchmark", "trusteval-toxicity", "--dataset", "cold", "--model", f"replay:{answers}",
        "--limit", "12", "--prompt-toxicity", "label", "--seeds", "42", "--store", store, "--data-dir", mirror,
        "--cache-dir", cache_dir, "--allow-unpinned-data", "--json", "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return store, done.json()["run_id"], tmp


def test_report_console_says_the_data_was_unpinned(unpinned_run) -> None:
    store, run_id, _ = unpinned_run
    done = run_cli("report", run_id, "--store", store)
    assert done.returncode == 0, done.stderr
    assert re.search(rf"run {run_id} used .*test\.csv.*{NOTE}", done.stdout + done.stderr), done.stderr[-1500:]


def test_table_files_say_the_data_was_unpinned(unpinned_run) -> None:
    store, run_id, tmp = unpinned_run
    for command, out in (("report", tmp / "report-out"), ("tables", tmp / "tables-out")):
        args = (run_id,) if command == "report" else ()
        done = run_cli(command, *args, "--store", store, "--out", out)
        assert done.returncode == 0, done.stderr
        files = sorted(out.glob("*.md")) + sorted(out.glob("*.csv")) + sorted(out.glob("*.tex"))
        assert {f.suffix for f in files} == {".md", ".csv", ".tex"}
        for path in files:
            assert NOTE in path.read_text(encoding="utf-8"), path


def test_runs_lists_the_run_as_unpinned(unpinned_run) -> None:
    store, run_id, _ = unpinned_run
    text = run_cli("runs", "--store", store).stdout
    line = next(line for line in text.splitlines() if line.startswith(run_id))
    assert "unpinned data" in line
    listed = run_cli("runs", "--store", store, "--json").json()["runs"]
    assert [r["unpinned_data"] for r in listed if r["run_id"] == run_id] == [True]


def test_the_html_report_shows_the_note_outside_collapsed_sections(unpinned_run) -> None:
    store, run_id, tmp = unpinned_run
    page = tmp / "report.html"
    assert run_cli("report", run_id, "--store", store, "--html", page).returncode == 0
    html = page.read_text(encoding="utf-8")
    visible = re.sub(r"<details.*?</details>", "", html, flags=re.S)
    assert NOTE in visible
