"""Tables 5-10 across runs (`report.collect`, `trusteval tables`): the same numbers as each run's own report,
one row per model, the latest run for a model seen twice, z-tests, and the scorer-validation note."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence

import numpy as np
import pytest

from helpers import run_cli
from trusteval.config import build_run_spec
from trusteval.errors import UsageError
from trusteval.models import BACKENDS
from trusteval.pipeline import execute
from trusteval.records import Generation, Request
from trusteval.report.collect import build_tables
from trusteval.report.tables import to_csv, to_latex, to_markdown
from trusteval.store import Store


class Persona:
    """`persona:echo` repeats the prompt (toxic when the prompt is), `persona:calm` answers politely,
    `persona:mixed` echoes on even seeds."""

    batch_size = 8
    max_concurrency = 1

    def __init__(self, spec, settings):
        self.name = spec.name

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, self._answer(r.messages[-1][1], r.seed)) for r in requests]

    def _answer(self, text, seed):
        if self.name == "echo" or (self.name == "mixed" and seed % 2 == 0):
            return text
        return "谢谢你的分享，我们应该尊重每一个人。"

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "persona"}


@pytest.fixture(scope="module")
def store_with_runs(tmp_path_factory, data_dir, cache_dir):
    """Toxicity and bias runs of three models, plus an older run of `persona:echo` on another sample."""
    BACKENDS.register("persona", Persona)
    folder = tmp_path_factory.mktemp("tables") / "ws"
    base = {"store": str(folder), "data_dir": str(data_dir), "cache_dir": str(cache_dir), "seeds": [42, 43],
            "limit": 30, "resamples": 200}  # fmt: skip
    summaries = {}
    try:
        summaries["old"] = execute(build_run_spec({**base, "benchmark": "trusteval-toxicity", "sample_seed": 9,
                                                   "models": ["persona:echo"]}, env={}), env={})  # fmt: skip
        models = ["persona:echo", "persona:calm", "persona:mixed"]
        for benchmark in ("trusteval-toxicity", "trusteval-bias"):
            spec = build_run_spec({**base, "benchmark": benchmark, "models": models}, env={})
            summaries[benchmark] = execute(spec, env={})
    finally:
        BACKENDS.unregister("persona")
    return folder, summaries


def _tables(folder, **filters):
    store = Store.open(folder)
    try:
        return build_tables(store, **filters)
    finally:
        store.close()


def _by_name(collected):
    return {t.name: t for t in collected.tables}


@pytest.mark.slow
def test_tables_hold_each_runs_own_numbers(store_with_runs):
    folder, summaries = store_with_runs
    tables = _by_name(_tables(folder))
    toxicity = summaries["trusteval-toxicity"].metrics["models"]
    table5 = tables["table5_cold"]
    assert [row[0] for row in table5.rows] == ["persona:echo", "persona:calm", "persona:mixed"]
    for row in table5.rows:
        for column, category in enumerate(("T2T", "T2NT", "NT2T", "NT2NT", "TT"), start=1):
            expected = toxicity[row[0]]["overall"][category]
            assert (row[column].value, row[column].low, row[column].high) == pytest.approx(
                (expected["value"], expected["low"], expected["high"])
            )
    bias = summaries["trusteval-bias"].metrics["models"]
    table7 = tables["table7_cold"]
    assert table7.columns == ("Model", "TT gender", "TT race", "TT region", "σ", "Δ", "ρ")
    for row in table7.rows:
        assert row[4].value == pytest.approx(bias[row[0]]["sigma"]["value"])
        assert row[4].low == pytest.approx(bias[row[0]]["sigma"]["low"])
        tt = [bias[row[0]]["tt"][c]["value"] for c in ("gender", "race", "region")]
        assert row[4].value == pytest.approx(np.std(tt)) and row[5].value == pytest.approx(max(tt) - min(tt))


@pytest.mark.slow
def test_bias_reuses_every_answer_and_score_of_toxicity(store_with_runs):
    _, summaries = store_with_runs
    bias = summaries["trusteval-bias"]
    assert (bias.generated, bias.scored) == (0, 0) and bias.reused == bias.requests


@pytest.mark.slow
def test_latest_run_gives_the_row_and_a_note_says_so(store_with_runs):
    folder, summaries = store_with_runs
    table5 = _by_name(_tables(folder, benchmark="trusteval-toxicity"))["table5_cold"]
    echo = next(row for row in table5.rows if row[0] == "persona:echo")
    assert echo[5].value == pytest.approx(summaries["trusteval-toxicity"].metrics["models"]["persona:echo"]
                                          ["overall"]["TT"]["value"])  # fmt: skip
    old_run = summaries["old"].run_id
    assert any(f"also in {old_run} (not used)" in note for note in table5.notes)
    only_old = _by_name(_tables(folder, run_ids=[old_run]))["table5_cold"]
    assert [row[0] for row in only_old.rows] == ["persona:echo"]
    new_run = summaries["trusteval-toxicity"].run_id
    assert f"Runs: {old_run} (1 model)" in only_old.notes and f"Runs: {new_run} (3 models)" in table5.notes


@pytest.mark.slow
def test_pairwise_ztests_on_tt_with_holm_as_an_option(store_with_runs):
    from trusteval.metrics.stats import two_proportion_ztest

    folder, summaries = store_with_runs
    plain = _by_name(_tables(folder, benchmark="trusteval-toxicity"))["ztests_tt_cold"]
    holm = _by_name(_tables(folder, benchmark="trusteval-toxicity", adjustment="holm"))["ztests_tt_cold"]
    assert len(plain.rows) == 3 and plain.columns[-1] == "p" and holm.columns[-1] == "p (holm)"
    metrics = summaries["trusteval-toxicity"].metrics["models"]
    a, b = plain.rows[0][:2]
    ta, tb = metrics[a]["overall"]["TT"]["value"] / 100, metrics[b]["overall"]["TT"]["value"] / 100
    expected = two_proportion_ztest(ta * 30, 30, tb * 30, 30)  # 30 prompts each, seeds averaged
    assert plain.rows[0][4] == pytest.approx(expected.z)


@pytest.mark.slow
def test_filters_and_an_empty_selection(store_with_runs):
    folder, _ = store_with_runs
    names = set(_by_name(_tables(folder, benchmark="trusteval-bias")))
    paper = {"table7_cold", "bias_rank_agreement_cold", "table7_cold_seeds"}
    control = {"trusteval_bias_scorer_induced", "trusteval_bias_scorer_control", "trusteval_bias_scorer_fixed_text"}
    assert paper <= names and names - paper <= control and "trusteval_bias_scorer_induced" in names
    assert "table5_cold" in _by_name(_tables(folder, dataset="cold"))
    with pytest.raises(UsageError, match="dataset hatexplain"):
        _tables(folder, dataset="hatexplain")
    with pytest.raises(UsageError, match="tables cover"):
        _tables(folder, benchmark="no-such-benchmark")
    with pytest.raises(UsageError, match=r"no runs of .*trustgpt-toxicity.* match benchmark trustgpt-toxicity"):
        _tables(folder, benchmark="trustgpt-toxicity")  # TrustGPT is covered; this store has no such run


@pytest.mark.slow
def test_scorer_validation_note_is_printed_under_tables_5_to_8(store_with_runs, data_dir, cache_dir):
    """A real validation of the scorer on 200 COLD prompts, stored; every table over cold prints it."""
    from trusteval.data import load_dataset, sample_prompts
    from trusteval.data.sources import DataContext
    from trusteval.report.results import run_results
    from trusteval.scorers import ScorerContext, load_scorer
    from trusteval.scorers.validation import evaluate, score_prompts, store_report, validation_note

    folder, summaries = store_with_runs
    prompts = sample_prompts(load_dataset("cold", DataContext(data_dir=data_dir)).prompts, 200, 0)
    scorer = load_scorer("cold-tfidf", ScorerContext(data_dir=data_dir, cache_dir=cache_dir))
    store = Store.open(folder)
    try:
        values = score_prompts(scorer, prompts, store)
        store_report(store, evaluate(scorer.id, "cold", 0.5, prompts, values, scorer.describe()), "cold")
        note = validation_note(store, scorer.id, "cold")
        own_run = run_results(store, summaries["trusteval-toxicity"].run_id)
    finally:
        store.close()
    assert note is not None and note.startswith("Scorer validity of cold-tfidf@4 on cold (n=200): ROC AUC 0.")
    tables = _by_name(_tables(folder))
    for name in ("table5_cold", "table6_cold", "table7_cold"):
        assert note in tables[name].notes
    assert note in {t.name: t for t in own_run.tables}["table5_cold"].notes


@pytest.mark.slow
def test_rendered_bias_table(store_with_runs):
    folder, _ = store_with_runs
    table7 = _by_name(_tables(folder, benchmark="trusteval-bias"))["table7_cold"]
    markdown = to_markdown(table7)
    assert "| Model | TT gender | TT race | TT region | σ | Δ | ρ |" in markdown
    assert "population standard deviation (ddof = 0)" in markdown
    calm_line = next(line for line in markdown.splitlines() if line.startswith("| persona:calm"))
    assert calm_line.endswith("| 0.00 [0.00, 0.00] | 0.00 [0.00, 0.00] | n/a |")  # polite: TT 0 everywhere
    assert "persona:calm: ρ undefined: TT is 0 for gender, race, region" in table7.notes
    header = next(csv.reader(io.StringIO(to_csv(table7))))
    assert {"σ", "σ_low", "σ_high", "ρ"} <= set(header)
    assert "\\begin{tabular}" in to_latex(table7)


def test_table9_comes_from_stored_judge_validations(tmp_path):
    from trusteval.metrics.agreement import judge_validation
    from trusteval.report.collect import VALIDATION_AGGREGATE

    store = Store.open(tmp_path / "ws")
    found = judge_validation(np.array([[1, 1], [0, 0], [1, 0]]), np.array([[1, 1], [0, 0], [1, 1]]))
    store.put_aggregate("judge-validation-x", VALIDATION_AGGREGATE, {"label": "j on l.csv",
                                                                      "validation": found.as_dict()})  # fmt: skip
    [table] = build_tables(store).tables
    store.close()
    assert table.name == "table9_judge_validation"
    assert table.rows[0][0] == "j on l.csv" and table.rows[0][4] == pytest.approx(100.0)


@pytest.mark.slow
def test_cli_tables_writes_each_format_and_prints_json(store_with_runs, tmp_path):
    folder, summaries = store_with_runs
    out = tmp_path / "out"
    result = run_cli("tables", "--store", folder, "--benchmark", "trusteval-toxicity", "--format", "md,csv",
                     "--out", out, "--p-adjust", "holm", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout)
    assert {t["name"] for t in found["tables"]} >= {"table5_cold", "table6_cold", "ztests_tt_cold"}
    assert (out / "table5_cold.md").is_file() and (out / "table5_cold.csv").is_file()
    assert not (out / "table5_cold.tex").exists()
    metrics = found["metrics"][0]
    assert metrics["p_adjust"] == "holm" and len(metrics["ztests_tt"]) == 3
    assert metrics["metrics"]["models"] == summaries["trusteval-toxicity"].metrics["models"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--format", "md,pdf"), "flag --format 'md,pdf'"),
        (("--runs", "nope"), "no run 'nope'"),
        (("--benchmark", "trusteval-avoidance"), "no runs of"),
    ],
)
@pytest.mark.slow
def test_cli_tables_errors(store_with_runs, args, message):
    folder, _ = store_with_runs
    result = run_cli("tables", "--store", folder, *args)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_cli_tables_without_a_store(tmp_path):
    result = run_cli("tables", "--store", tmp_path / "none")
    assert result.returncode == 2 and "no store in" in result.stderr


@pytest.mark.slow
def test_bulk_read_gives_the_same_pairs_as_the_indexed_read(store_with_runs):
    from trusteval.report.bulk_read import BulkLookup
    from trusteval.report.collect import find_runs, read_pairs

    folder, _ = store_with_runs
    store = Store.open(folder)
    try:
        bulk = BulkLookup(store)
        for run in find_runs(store):
            indexed, indexed_classes = read_pairs(store, run, run.spec.models)
            scanned, scanned_classes = read_pairs(store, run, run.spec.models, bulk)
            assert indexed_classes == scanned_classes and list(indexed) == list(scanned)
            for model, found in indexed.items():
                other = scanned[model]
                order, other_order = np.lexsort((found.pairs.seeds, found.pairs.prompt_ids)), np.lexsort(
                    (other.pairs.seeds, other.pairs.prompt_ids))  # fmt: skip
                for field in ("prompt_ids", "seeds", "prompt_toxic", "response_toxic"):
                    assert list(getattr(found.pairs, field)[order]) == list(getattr(other.pairs, field)[other_order])
                assert list(found.categories[order]) == list(other.categories[other_order])
                assert found.skipped == other.skipped
    finally:
        store.close()


@pytest.mark.slow
def test_tables_are_the_same_whichever_read_path_is_taken(store_with_runs, monkeypatch):
    from trusteval.report import collect

    folder, _ = store_with_runs
    scanned = [t.as_dict() for t in _tables(folder).tables]
    monkeypatch.setattr(collect, "BULK_SHARE", 0)  # never scan: look every row up through the indexes
    indexed = [t.as_dict() for t in _tables(folder).tables]
    assert json.dumps(indexed, sort_keys=True) == json.dumps(scanned, sort_keys=True)


def test_sorted_keys_settle_a_shared_64_bit_prefix_exactly():
    from trusteval.report.bulk_read import SortedKeys

    keys = ["0123456789abcdef" + "0" * 48, "0123456789abcdef" + "1" * 48, "f" * 64]
    lookup = SortedKeys(keys)
    at, found = lookup.find([keys[1], keys[0], "0123456789abcdef" + "2" * 48, "e" * 64, keys[2]])
    assert list(found) == [True, True, False, False, True]
    assert [int(a) for a, f in zip(at, found, strict=True) if f] == [1, 0, 2]


def test_table9_says_why_a_statistic_is_undefined():
    from trusteval.metrics.agreement import judge_validation
    from trusteval.tables.paper_tables import validation_table

    constant_judge = judge_validation(np.ones((4, 3)), np.array([[1], [0], [1], [1]]))
    table = validation_table({"j": constant_judge})
    assert table.rows[0][7] != table.rows[0][7]  # ICC is NaN, rendered n/a
    assert any(n.startswith("j: ICC n/a") for n in table.notes)
    assert any(n.startswith("j: Fleiss' κ n/a") for n in table.notes)
    assert any(n.startswith("j: correlations n/a") for n in table.notes)
    assert "| n/a |" in to_markdown(table)


def test_bias_tables_are_numbered_like_the_paper():
    from trusteval.tables.paper_tables import bias_table

    assert bias_table("cold", [], {}).name == "table7_cold"
    assert bias_table("hatexplain", [], {}).name == "table8_hatexplain"
    assert bias_table("cold?split=dev", [], {}).title.startswith("Table 7 (cold?split=dev)")
