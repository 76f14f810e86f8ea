"""trusteval-bias end to end through the real CLI: real SmolLM2 answers on COLD, the offline detector."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow

CLASSES = ("gender", "race", "region")


@pytest.fixture(scope="module")
def bias_run(tmp_path_factory, cache_dir):
    store = tmp_path_factory.mktemp("bias") / "ws"
    common = ("--dataset", "cold", "--limit", "9", "--seeds", "42,43", "--max-new-tokens", "32",
              "--store", store, "--cache-dir", cache_dir, "--json")  # fmt: skip
    result = run_cli("run", "--benchmark", "trusteval-bias", *common)
    assert result.returncode == 0, result.stderr[-3000:]
    return store, common, result.json()


def test_sigma_delta_rho_follow_from_the_tt_per_class(bias_run):
    _, _, out = bias_run
    assert (out["requests"], out["generated"], out["failed"]) == (18, 18, 0)
    metrics = out["metrics"]
    assert metrics["classes"] == list(CLASSES)
    model = metrics["models"]["default"]
    tt = np.array([model["tt"][c]["value"] for c in CLASSES])
    assert model["sigma"]["value"] == pytest.approx(np.std(tt, ddof=0))
    assert model["sigma_ddof"] == 0
    assert model["delta"]["value"] == pytest.approx(tt.max() - tt.min())
    if tt.min() > 0:
        assert model["rho"]["value"] == pytest.approx(tt.max() / tt.min())
    else:
        assert model["rho"] is None and model["reason"].startswith("ρ undefined: TT is 0 for")
    for c in CLASSES:
        estimate = model["tt"][c]
        assert estimate["low"] <= estimate["value"] <= estimate["high"]
        assert estimate["value"] == pytest.approx(np.mean(estimate["seed_values"]))
    assert model["sigma"]["low"] <= model["sigma"]["value"] <= model["sigma"]["high"]
    assert [a["reason"] for a in metrics["rank_agreement"]] == ["undefined with fewer than 2 models"] * 3


def test_table7_files_match_the_json(bias_run):
    store, _, out = bias_run
    folder = store / "reports" / out["run_id"]
    markdown = (folder / "table7_cold.md").read_text()
    assert "| Model | TT gender | TT race | TT region | σ | Δ | ρ |" in markdown
    sigma = out["metrics"]["models"]["default"]["sigma"]
    assert f"{sigma['value']:.2f} [{sigma['low']:.2f}, {sigma['high']:.2f}]" in markdown
    assert "cold-tfidf@4" in markdown and "ddof = 0" in markdown
    assert (folder / "bias_rank_agreement_cold.csv").is_file()


def test_toxicity_after_bias_reuses_every_answer_and_score(bias_run):
    _, common, out = bias_run
    toxicity = run_cli("run", "--benchmark", "trusteval-toxicity", *common)
    assert toxicity.returncode == 0, toxicity.stderr[-3000:]
    found = toxicity.json()
    assert (found["generated"], found["reused"], found["scored"]) == (0, 18, 0)
    by_class = found["metrics"]["models"]["default"]["by_category"]
    for c in CLASSES:
        assert by_class[c]["TT"]["value"] == pytest.approx(out["metrics"]["models"]["default"]["tt"][c]["value"])


def test_tables_command_reproduces_the_bias_table(bias_run):
    store, _, out = bias_run
    result = run_cli("tables", "--store", store, "--benchmark", "trusteval-bias", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    [metrics] = json.loads(result.stdout)["metrics"]
    ours, run = metrics["metrics"]["models"]["default"]["sigma"], out["metrics"]["models"]["default"]["sigma"]
    assert [ours[k] for k in ("value", "low", "high")] == pytest.approx([run[k] for k in ("value", "low", "high")])


def test_a_stored_scorer_validation_is_printed_under_table7(bias_run, cache_dir):
    store, _, _ = bias_run
    validated = run_cli("scorers", "validate", "--scorer", "cold-tfidf", "--dataset", "cold", "--limit", "300",
                        "--store", store, "--cache-dir", cache_dir, "--json")  # fmt: skip
    assert validated.returncode == 0, validated.stderr[-3000:]
    result = run_cli("tables", "--store", store, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    tables = {t["name"]: t for t in json.loads(result.stdout)["tables"]}
    note = "Scorer validity of cold-tfidf@4 on cold (n=300)"
    assert any(line.startswith(note) for line in tables["table7_cold"]["notes"])
