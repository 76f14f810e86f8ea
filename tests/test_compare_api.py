"""`trusteval compare` (differences, intervals, tests checked against scipy) and the Python API (DataFrames,
running inside an event loop, a cheap `import trusteval`)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Sequence

import numpy as np
import pytest
from scipy import stats

import trusteval
from helpers import run_cli
from trusteval.metrics.compare import interval_difference, paired_difference
from trusteval.models import BACKENDS
from trusteval.records import Generation, Request


class Persona:
    """`persona:echo` repeats the prompt (toxic when the prompt is); `persona:calm` answers politely."""

    batch_size = 16
    max_concurrency = 1

    def __init__(self, spec, settings):
        self.name = spec.name

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, self._answer(r.messages[-1][1])) for r in requests]

    def _answer(self, text: str) -> str:
        return text if self.name == "echo" else "谢谢你的分享，我们应该尊重每一个人。"

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "persona"}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, data_dir, cache_dir):
    """A before (echo) and an after (calm) run on the same 16 prompts, both through `trusteval.run`, the
    second from inside a running event loop as in a notebook."""
    BACKENDS.register("persona", Persona)
    folder = tmp_path_factory.mktemp("compare") / "ws"
    base = {"store": str(folder), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42, 43],
            "limit": 16, "resamples": 100, "benchmark": "trusteval-toxicity"}  # fmt: skip

    async def in_a_notebook():
        asyncio.get_running_loop()  # a loop is running here, as in a Jupyter cell
        return trusteval.run({**base, "models": ["persona:calm"]}, env={})

    try:
        before = trusteval.run({**base, "models": ["persona:echo"]}, env={})
        after = asyncio.run(in_a_notebook())
    finally:
        BACKENDS.unregister("persona")
    return folder, before, after


def test_run_inside_a_running_event_loop(two_runs):
    _, before, after = two_runs
    assert (before.generated, after.generated, after.failed) == (32, 32, 0)


def test_api_dataframes(two_runs):
    folder, before, after = two_runs
    runs = trusteval.runs(folder)
    assert set(runs.run_id) == {before.run_id, after.run_id}
    assert list(runs.set_index("run_id").loc[after.run_id, "models"]) == ["persona:calm"]
    rows = trusteval.rows(folder, before.run_id)
    assert len(rows) == 32 and (rows.response == rows.prompt).all()
    assert (rows.response_toxicity == rows.prompt_toxicity).all()
    table = trusteval.run_metrics(folder, before.run_id)
    tt = table[(table.model == "persona:echo") & (table.metric == "overall/TT")].iloc[0]
    assert tt.value == pytest.approx(before.metrics["models"]["persona:echo"]["overall"]["TT"]["value"])
    assert tt.low <= tt.value <= tt.high and tt.n > 0
    with pytest.raises(trusteval.errors.UsageError, match="no run 'nope'"):
        trusteval.rows(folder, "nope")


@pytest.mark.slow
def test_compare_cli_matches_scipy(two_runs):
    folder, before, after = two_runs
    result = run_cli("compare", before.run_id, after.run_id, "--store", folder, "--json", "--resamples", "70000")
    assert result.returncode == 0, result.stderr[-2000:]
    found = {m["metric"]: m for m in result.json()["metrics"]}
    toxicity = found["response_toxicity (per-prompt mean)"]
    a = trusteval.rows(folder, before.run_id).groupby("prompt_id").response_toxicity.mean().sort_index()
    b = trusteval.rows(folder, after.run_id).groupby("prompt_id").response_toxicity.mean().sort_index()
    assert toxicity["n"] == 16 and toxicity["diff"] == pytest.approx((b - a).mean())
    reference = stats.permutation_test(
        (b.to_numpy(), a.to_numpy()), lambda x, y: np.mean(x - y), permutation_type="samples", n_resamples=10**5
    )
    assert toxicity["p"] == pytest.approx(reference.pvalue, abs=1e-9)  # both exact: 2^16 sign flips
    assert toxicity["low"] <= toxicity["diff"] <= toxicity["high"]
    tt = found["overall / TT"]
    assert tt["a"] == pytest.approx(before.metrics["models"]["persona:echo"]["overall"]["TT"]["value"])
    assert tt["b"] == 0 and tt["p"] < 0.05 and tt["test"] == "two-proportion z (pooled)"
    assert "pairs" not in found and not any("skipped" in name for name in found)  # counts are not compared
    assert not any("threshold" in name for name in found)  # nor settings (the scorer's threshold)


@pytest.mark.slow
def test_report_of_two_runs_prints_stage_times(two_runs):
    folder, before, after = two_runs
    result = run_cli("report", before.run_id, after.run_id, "--store", folder)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.count("stage times (latest invocation): generate ") == 2
    assert "score response_toxicity" in result.stdout and result.stdout.count("Table 6 (cold)") == 2


@pytest.mark.slow
def test_compare_markdown_and_html(two_runs, tmp_path):
    folder, before, after = two_runs
    markdown = run_cli("compare", before.run_id, after.run_id, "--store", folder, "--format", "md")
    assert markdown.returncode == 0, markdown.stderr
    assert "| Metric | A | B | B - A | 95% interval | p | n | test |" in markdown.stdout
    page = tmp_path / "compare.html"
    html = run_cli("compare", before.run_id, after.run_id, "--store", folder, "--format", "html", "-o", page)
    assert html.returncode == 0, html.stderr
    text = page.read_text(encoding="utf-8")
    assert "response_toxicity (per-prompt mean)" in text
    assert 'id="browser"' not in text and "sample-data" not in text  # no empty sample browser
    assert 'class="hi' not in text and 'class="num hi' not in text  # no marks across unrelated metrics or on p
    missing = run_cli("compare", before.run_id, "nope", "--store", folder)
    assert missing.returncode == 2 and missing.stderr.startswith("error: no run 'nope'")


def test_paired_difference_matches_scipy_exact_permutation():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.4, 0.2, 10), rng.normal(0.55, 0.2, 10)
    ours = paired_difference(a, b, resamples=2000)
    reference = stats.permutation_test((b, a), lambda x, y: np.mean(x - y), permutation_type="samples")
    assert ours.p == pytest.approx(reference.pvalue, abs=1e-12)
    assert ours.diff == pytest.approx(np.mean(b - a))
    boot = stats.bootstrap((b - a,), np.mean, n_resamples=20000, method="percentile", random_state=1)
    assert ours.low == pytest.approx(boot.confidence_interval.low, abs=0.02)
    assert ours.high == pytest.approx(boot.confidence_interval.high, abs=0.02)


def test_paired_difference_sampled_permutation_is_close_to_scipy():
    rng = np.random.default_rng(5)
    a, b = rng.normal(0.5, 0.3, 40), rng.normal(0.6, 0.3, 40)
    ours = paired_difference(a, b, resamples=20000)
    reference = stats.permutation_test((b, a), lambda x, y: np.mean(x - y), permutation_type="samples",
                                       n_resamples=20000, random_state=2)  # fmt: skip
    assert ours.p == pytest.approx(reference.pvalue, abs=0.01)


def test_interval_difference_is_a_z_test():
    a = {"value": 40.0, "low": 30.0, "high": 50.0, "n": 100}
    b = {"value": 25.0, "low": 17.0, "high": 33.0, "n": 100}
    found = interval_difference(a, b)
    se = np.hypot(20 / (2 * stats.norm.ppf(0.975)), 16 / (2 * stats.norm.ppf(0.975)))
    assert found.diff == -15.0 and found.p == pytest.approx(2 * stats.norm.sf(15 / se))
    assert found.low == pytest.approx(-15 - stats.norm.ppf(0.975) * se)


def test_import_trusteval_is_cheap():
    heavy = "('pandas', 'numpy', 'trusteval.pipeline')"
    code = f"import json, sys, trusteval; print(json.dumps([m for m in {heavy} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
    assert callable(trusteval.run_metrics) and callable(trusteval.rows)


def test_compare_and_tables_print_one_p_for_one_pair_of_rates(two_runs):
    """TT of A against TT of B: `tables` (both models in one table) and `compare` run the same named test
    (two-proportion z, pooled, two-sided; n = prompts answered) and print the same p, which is statsmodels'."""
    from statsmodels.stats.proportion import proportions_ztest

    folder, before, after = two_runs
    compared = run_cli("compare", before.run_id, after.run_id, "--store", folder, "--json")
    assert compared.returncode == 0, compared.stderr[-2000:]
    tt = {m["metric"]: m for m in compared.json()["metrics"]}["overall / TT"]
    tables = run_cli("tables", "--store", folder, "--runs", f"{before.run_id},{after.run_id}", "--json",
                     "--out", folder / "tables")  # fmt: skip
    assert tables.returncode == 0, tables.stderr[-2000:]
    (group,) = [g for g in tables.json()["metrics"] if "ztests_tt" in g]
    (ztest,) = group["ztests_tt"]
    assert tt["p"] == pytest.approx(ztest["p_value"], abs=1e-12) and tt["n"] == ztest["n_a"] == 16
    echo = round(tt["a"] / 100 * 16)
    _, reference = proportions_ztest([echo, 0], [16, 16])
    assert tt["p"] == pytest.approx(reference, abs=1e-12)
    assert tt["test"] == "two-proportion z (pooled)"


def test_compare_refuses_runs_of_other_benchmarks_and_points_to_merge(two_runs, tmp_path, data_dir, cache_dir):
    folder, before, _ = two_runs
    base = {"data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42], "resamples": 100,
            "models": ["persona:calm"]}  # fmt: skip
    BACKENDS.register("persona", Persona)
    try:
        other = trusteval.run({**base, "store": str(folder), "benchmark": "trustgpt-toxicity",
                               "options": {"norms": "2"}}, env={})  # fmt: skip
        elsewhere = trusteval.run({**base, "store": str(tmp_path / "other"), "benchmark": "trusteval-toxicity",
                                   "limit": 4}, env={})  # fmt: skip
    finally:
        BACKENDS.unregister("persona")
    mixed = run_cli("compare", before.run_id, other.run_id, "--store", folder)
    assert mixed.returncode == 2
    assert "different benchmarks (trusteval-toxicity and trustgpt-toxicity)" in mixed.stderr
    foreign = run_cli("compare", before.run_id, elsewhere.run_id, "--store", folder)
    assert foreign.returncode == 2 and "trusteval merge" in foreign.stderr
