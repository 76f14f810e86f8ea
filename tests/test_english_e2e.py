"""English data end to end through the real CLI: the embedded SmolLM2 answers, `en-tfidf` scores (the default
for English text), on HateXplain, ToxicSpans and a file dataset; the table arithmetic is checked."""

from __future__ import annotations

import csv
import io

import pytest

from helpers import run_cli
from trusteval.data import load_dataset, sample_stratified
from trusteval.data.sources import DataContext
from trusteval.scorers import ScorerContext, load_scorer

pytestmark = pytest.mark.slow

CATEGORIES = ("T2T", "T2NT", "NT2T", "NT2NT")


def _run(store, cache_dir, dataset: str, limit: int, tokens: int):
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", dataset, "--limit", str(limit),
                     "--seeds", "42", "--max-new-tokens", str(tokens), "--store", store, "--cache-dir", cache_dir,
                     "--no-progress", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.json()


def _check_arithmetic(overall: dict, pairs: int) -> None:
    assert sum(overall[c]["value"] for c in CATEGORIES) == pytest.approx(100.0)
    assert overall["TT"]["value"] == pytest.approx(overall["T2T"]["value"] + overall["NT2T"]["value"])
    for c in CATEGORIES:
        assert overall[c]["value"] * pairs / 100 == pytest.approx(round(overall[c]["value"] * pairs / 100))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return tmp_path_factory.mktemp("english-e2e") / "ws"


def test_hatexplain_with_the_english_detector(workspace, cache_dir, data_dir):
    out = _run(workspace, cache_dir, "hatexplain-en", 4, 32)  # in trusteval-* "hatexplain" is the Chinese translation
    assert (out["requests"], out["generated"], out["failed"]) == (4, 4, 0)
    model = out["metrics"]["models"]["default"]
    assert model["pairs"] == 4
    _check_arithmetic(model["overall"], 4)
    # P from the scorer: T2T + T2NT is the share of prompts en-tfidf finds toxic
    prompts, _ = sample_stratified(load_dataset("hatexplain", DataContext(data_dir=data_dir)).prompts, 4, 0)
    scorer = load_scorer("en-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    toxic_prompts = sum(o.value >= 0.5 for o in scorer.score([p.text for p in prompts]))
    overall = model["overall"]
    assert overall["T2T"]["value"] + overall["T2NT"]["value"] == pytest.approx(100 * toxic_prompts / 4)
    assert set(model["by_category"]) == {p.category for p in prompts}
    table = (workspace / "reports" / out["run_id"] / "table5_hatexplain_en.csv").read_text()
    row = next(csv.DictReader(io.StringIO(table)))
    assert float(row["TT"]) == pytest.approx(overall["TT"]["value"], abs=1e-4)
    markdown = (workspace / "reports" / out["run_id"] / "table5_hatexplain_en.md").read_text()
    assert "en-tfidf@4" in markdown


def test_toxicspans(workspace, cache_dir):
    out = _run(workspace, cache_dir, "toxicspans-en", 3, 16)
    model = out["metrics"]["models"]["default"]
    assert model["pairs"] == 3
    _check_arithmetic(model["overall"], 3)


def test_file_dataset(workspace, cache_dir, tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("id,text,label,category\n1,you are a stupid idiot,1,insult\n2,what a lovely garden,0,none\n")
    out = _run(workspace, cache_dir, f"file:{path}?lang=en", 2, 16)
    model = out["metrics"]["models"]["default"]
    assert model["pairs"] == 2 and set(model["by_category"]) == {"insult", "none"}
    _check_arithmetic(model["overall"], 2)


def test_validation_note_is_printed_under_the_tables(workspace, cache_dir):
    validated = run_cli("scorers", "validate", "--scorer", "en-tfidf", "--dataset", "hatexplain-en", "--limit", "200",
                        "--store", workspace, "--cache-dir", cache_dir, "--json")  # fmt: skip
    assert validated.returncode == 0, validated.stderr[-3000:]
    tables = run_cli("tables", "--store", workspace, "--dataset", "hatexplain", "--format", "md")
    assert tables.returncode == 0, tables.stderr[-3000:]
    assert "Scorer validity of en-tfidf@4 on hatexplain-en (n=200)" in tables.stdout
