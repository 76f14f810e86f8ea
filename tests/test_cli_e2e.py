"""End to end through the real CLI with the embedded defaults: real SmolLM2 answers, the offline detector."""

from __future__ import annotations

import csv
import io
import json

import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow

CATEGORIES = ("T2T", "T2NT", "NT2T", "NT2NT")


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, cache_dir):
    store = tmp_path_factory.mktemp("e2e") / "ws"
    args = ("run", "--benchmark", "trusteval-toxicity", "--dataset", "cold", "--limit", "8", "--seeds", "42,43",
            "--max-new-tokens", "48", "--store", store, "--cache-dir", cache_dir, "--json")  # fmt: skip
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return store, args, result.json()


def test_first_run_generates_every_request_and_fills_table5(first_run):
    _, _, out = first_run
    assert (out["requests"], out["generated"], out["reused"], out["failed"]) == (16, 16, 0, 0)
    assert out["scored"] > 0
    overall = out["metrics"]["models"]["default"]["overall"]
    assert sum(overall[c]["value"] for c in CATEGORIES) == pytest.approx(100.0)
    assert overall["TT"]["value"] == pytest.approx(overall["T2T"]["value"] + overall["NT2T"]["value"])
    for by_class in out["metrics"]["models"]["default"]["by_category"].values():
        assert sum(by_class[c]["value"] for c in CATEGORIES) == pytest.approx(100.0)


def test_table_files_hold_the_same_numbers(first_run):
    store, _, out = first_run
    folder = store / "reports" / out["run_id"]
    rows = list(csv.DictReader(io.StringIO((folder / "table5_cold.csv").read_text())))
    assert [r["Model"] for r in rows] == ["default"]
    values = {c: float(rows[0][c]) for c in (*CATEGORIES, "TT")}
    assert sum(values[c] for c in CATEGORIES) == pytest.approx(100.0, abs=1e-4)
    assert values["TT"] == pytest.approx(out["metrics"]["models"]["default"]["overall"]["TT"]["value"], abs=1e-4)
    markdown = (folder / "table5_cold.md").read_text()
    assert "| Model | T2T | T2NT | NT2T | NT2NT | TT |" in markdown and "cold-tfidf@4" in markdown
    assert (folder / "table6_cold.tex").read_text().startswith("\\begin{table}")


def test_second_run_makes_no_model_call(first_run):
    _, args, out = first_run
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    second = again.json()
    assert second["run_id"] == out["run_id"]
    assert (second["generated"], second["reused"], second["scored"]) == (0, 16, 0)
    assert second["metrics"] == out["metrics"]


def test_export_and_report_read_the_store(first_run):
    store, _, out = first_run
    exported = run_cli("export", out["run_id"], "--store", store, "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    assert len(rows) == 16 and len({(r["prompt_id"], r["seed"]) for r in rows}) == 16
    assert all(r["response"] is not None and 0 <= r["response_toxicity"] <= 1 for r in rows)
    assert all(0 <= r["prompt_toxicity"] <= 1 for r in rows)
    as_csv = run_cli("export", "--store", store, "--format", "csv")
    assert len(list(csv.DictReader(io.StringIO(as_csv.stdout)))) == 16
    reported = run_cli("report", out["run_id"], "--store", store, "--json")
    assert json.loads(reported.stdout)["metrics"] == out["metrics"]
    printed = run_cli("report", "--store", store)
    assert "Table 5 (cold)" in printed.stdout and "default" in printed.stdout
