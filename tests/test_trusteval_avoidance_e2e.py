"""trusteval-avoidance end to end through the real CLI: SmolLM2 answers COLD's toxic prompts and the real
llama.cpp server judges them (a weak judge: the pipeline and the unparsed path are what is tested)."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow

CLASSES = ("gender", "race", "region")


@pytest.fixture(scope="module")
def avoidance_run(tmp_path_factory, cache_dir, llama_server):
    store = tmp_path_factory.mktemp("avoidance") / "ws"
    args = ("run", "--benchmark", "trusteval-avoidance", "--per-category", "2", "--seeds", "42",
            "--max-new-tokens", "32", "--judge", f"openai:{llama_server.model}?base_url={llama_server.base_url}",
            "--store", store, "--cache-dir", cache_dir, "--json")  # fmt: skip
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr[-3000:]
    return store, args, result.json()


def _completions(server) -> int:
    return server.log_path.read_text(errors="replace").count("POST /v1/chat/completions")


def _exported(store, run_id):
    result = run_cli("export", run_id, "--store", store, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_ar_and_unparsed_counts_follow_from_the_stored_judgements(avoidance_run):
    store, _, out = avoidance_run
    assert (out["requests"], out["generated"], out["failed"]) == (6, 6, 0)
    rows = _exported(store, out["run_id"])
    assert len(rows) == 6 and {r["label"] for r in rows} == {1}
    assert Counter(r["category"] for r in rows) == dict.fromkeys(CLASSES, 2)
    model = out["metrics"]["models"]["default"]
    for c in (*CLASSES, "overall"):
        mine = [r for r in rows if c in ("overall", r["category"])]
        parsed = [r["avoidance_judge"] for r in mine if r["avoidance_judge_status"] == "ok"]
        unparsed = sum(r["avoidance_judge_status"] == "unparsed" for r in mine)
        assert model[c]["unparsed"] == unparsed and model[c]["judged"] == len(parsed)
        assert len(parsed) + unparsed == len(mine)
        if parsed:
            assert model[c]["value"] == pytest.approx(100 * np.mean(parsed))
            assert set(parsed) <= {0.0, 1.0}
        else:
            assert model[c]["value"] is None or np.isnan(model[c]["value"])
    judge = out["metrics"]["judge"]
    assert judge["temperature"] == 0 and judge["prompt"] == "avoidance_v1.txt"
    assert judge["scorer"].startswith(f"judge/avoidance_v1@{judge['prompt_sha256'][:12]}/openai:smollm2/")
    assert out["unparsed"] == model["overall"]["unparsed"] and out["score_failures"] == 0


def test_table10_lists_the_classes_and_the_unparsed_count(avoidance_run):
    store, _, out = avoidance_run
    markdown = (store / "reports" / out["run_id"] / "table10_cold.md").read_text()
    assert "| Model | AR gender | AR race | AR region | AR all | judged | unparsed | not judged |" in markdown
    unparsed = out["metrics"]["models"]["default"]["overall"]["unparsed"]
    assert f"| {6 - unparsed} | {unparsed} | 0 |" in markdown


def test_second_run_makes_no_model_or_judge_call(avoidance_run, llama_server):
    _, args, out = avoidance_run
    judged_before = _completions(llama_server)
    again = run_cli(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    second = again.json()
    assert (second["generated"], second["reused"], second["scored"], second["score_failures"]) == (0, 6, 0, 0)
    assert second["scores_reused"] == 6
    assert json.dumps(second["metrics"], sort_keys=True) == json.dumps(out["metrics"], sort_keys=True)
    assert _completions(llama_server) == judged_before  # the server only answered the preflight probe
