"""TrustEval benchmarks on the paper's translations: `--dataset hatexplain` / `toxicspans` run tiseval-*, and
Table 8 shows the paper's classes, the several-classes rule and the scorer's verdict (replay answers, offline)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import run_cli, write_replay_answers
from trusteval.benchmarks import BENCHMARKS
from trusteval.config import RunSpec, build_run_spec
from trusteval.data.sources import DataContext


def _replay(folder: Path, benchmark: str, dataset: str, limit: int) -> Path:
    """Answers for every prompt the run plans: every third one rude, the rest polite."""
    spec = build_run_spec({"benchmark": benchmark, "dataset": dataset, "models": ["default"], "seeds": [42],
                           "limit": limit}, env={})  # fmt: skip
    assert spec.dataset == f"tiseval-{dataset}"  # resolved when the spec is built: the run records what it ran
    plan = BENCHMARKS.get(benchmark)(spec).plan(DataContext(data_dir=Path(os.environ["TRUSTEVAL_DATA_DIR"])))
    prompts = list(dict.fromkeys(dict(item.request.messages)["user"] for item in plan.items))
    answers = ["滚开，你这个蠢货，白痴" if i % 3 == 0 else "你说得对。" for i in range(len(prompts))]
    return write_replay_answers(folder / f"{dataset}.jsonl", prompts, answers)


def _bias_table(store: Path, cache: Path, dataset: str, replay: Path, *extra: str) -> str:
    result = run_cli("run", "--benchmark", "trusteval-bias", "--dataset", dataset, "--limit", "12", "--seeds", "42",
                     "--model", f"replay:{replay}", "--resamples", "50", "--store", store, "--cache-dir", cache,
                     "--no-progress", *extra)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    tables = list((store / "reports").glob(f"*/table8_tiseval_{dataset}.md"))
    assert len(tables) == 1, tables
    return tables[0].read_text(encoding="utf-8")


@pytest.mark.slow
def test_bias_on_toxicspans_runs_the_translation_with_the_papers_classes_and_verdict(tmp_path, cache_dir):
    store = tmp_path / "ws"
    validated = run_cli("scorers", "validate", "--scorer", "cold-tfidf", "--dataset", "tiseval-toxicspans",
                        "--store", store, "--cache-dir", cache_dir)  # fmt: skip
    assert validated.returncode == 0, validated.stderr[-2000:]
    replay = _replay(tmp_path, "trusteval-bias", "toxicspans", 12)
    table = _bias_table(store, cache_dir, "toxicspans", replay, "--prompt-toxicity", "label")
    assert "**Table 8 (tiseval-toxicspans: ToxicSpans, the paper's Chinese translation)" in table
    assert "| Model | TT insults | TT obscenity | TT others | σ | Δ | ρ |" in table
    assert "Scorer validity of cold-tfidf@4 on tiseval-toxicspans (n=5000): INVALID" in table
    assert "Prompt toxicity from: dataset labels (--prompt-toxicity label)" in table
    assert "under the first in the order obscenity, insults, others (rule 'first in order')" in table
    tables = run_cli("tables", "--store", store, "--dataset", "toxicspans", "--format", "md")  # the short name finds it
    assert tables.returncode == 0, tables.stderr[-2000:]
    assert "Table 8 (tiseval-toxicspans: ToxicSpans, the paper's Chinese translation)" in " ".join(
        tables.stdout.split()
    )


def test_bias_on_hatexplain_runs_the_translation_and_english_stays_reachable(tmp_path, cache_dir):
    store = tmp_path / "ws"
    replay = _replay(tmp_path, "trusteval-bias", "hatexplain", 12)
    table = _bias_table(store, cache_dir, "hatexplain", replay)
    assert "| Model | TT gender | TT others | TT politics | TT region | σ | Δ | ρ |" in table
    assert "Scorer validity of cold-tfidf@4: not validated on this data" in table
    assert "Prompt toxicity from: the scorer" in table
    english = RunSpec(benchmark="trusteval-bias", dataset="hatexplain-en", models=["default"], seeds=[42], limit=12)
    plan = BENCHMARKS.get("trusteval-bias")(english).plan(DataContext(data_dir=Path(os.environ["TRUSTEVAL_DATA_DIR"])))
    assert {p.lang for p in plan.prompts} == {"en"} and plan.dataset.name == "hatexplain"
