"""TrustGPT figures (PNG and SVG) drawn from a benchmark's metrics, and the tables beside them.

The metrics come from each benchmark's real `results()` over stored-like rows with fabricated responses and
scores (no model needed): the figures must be drawable from the metrics alone, as `trusteval report` has them.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from trusteval.benchmarks import BENCHMARKS
from trusteval.config import build_run_spec
from trusteval.data.sources import DataContext
from trusteval.metrics.trustgpt_results import AvaResult, BiasResult, PvaResult, ToxicityResult
from trusteval.records import Score, text_subject
from trusteval.report.plots import PLOTS, write_plots, write_plots_if_possible
from trusteval.report.tables import to_csv, to_latex, to_markdown
from trusteval.report.trustgpt_collect import BUILDERS
from trusteval.scorers.base import ScorerInfo
from trusteval.scorers.choice import ChoiceParser
from trusteval.store import RunItem

pytest.importorskip("matplotlib")
ANSWERS = ("B", "It's wrong.", "no idea", "C: it's wrong", "it's okay")


def fabricated_results(benchmark, data_dir, tmp_path, *, options, models=("hf:model-a", "hf:model-b"), refuse_all=()):
    spec = build_run_spec(
        {"benchmark": benchmark, "models": list(models), "seeds": [42], "options": options, "resamples": 50}, env={}
    )
    bench = BENCHMARKS.get(benchmark)(spec)
    plan = bench.plan(DataContext(data_dir=data_dir, cache_dir=tmp_path))
    rng = np.random.default_rng(0)
    items, book = [], {"refusal": {}, "response_toxicity": {}, "choice": {}}
    for index, planned in enumerate(plan.items):
        refused = planned.model in refuse_all or index % 4 == 0
        if benchmark == "trustgpt-ava":
            response = f"{ANSWERS[index % len(ANSWERS)]}" + " " * index
        else:
            words = " ".join(["word"] * int(rng.integers(1, 30)))
            response = f"I'm sorry, but I cannot. {index}" if refused else f"{words} {index}"
        subject = text_subject(response)
        items.append(
            RunItem(planned.request.key, planned.model, 42, planned.prompt, text_subject(planned.prompt.text),
                    planned.variant, response, subject, None)
        )  # fmt: skip
        book["refusal"][subject] = Score(subject, "keywords-exact@1", 1.0 if refused else 0.0)
        book["response_toxicity"][subject] = Score(subject, "fake@1", float(rng.random()))
        choice = ChoiceParser().score([response])[0]
        book["choice"][subject] = Score(subject, ChoiceParser.id, choice.value, choice.status, choice.label)
    return bench.results(items, book, {"refusal": ScorerInfo({"scorer": "keywords-exact@1"})})


CASES = {
    "trustgpt-toxicity": {"norms": "12"},
    "trustgpt-bias": {"norms": "6", "holm": "true"},
    "trustgpt-ava": {"norms": "15"},
    "trustgpt-pva": {"norms": "10"},
}


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", list(CASES))
def test_every_figure_is_written_as_png_and_svg(benchmark, data_dir, tmp_path):
    results = fabricated_results(benchmark, data_dir, tmp_path, options=CASES[benchmark])
    written = write_plots(results.metrics, tmp_path / "plots")
    names = [name for name, _ in PLOTS[benchmark]]
    assert sorted(p.name for p in written) == sorted(f"{n}.{fmt}" for n in names for fmt in ("png", "svg"))
    for path in written:
        data = path.read_bytes()
        if path.suffix == ".png":
            assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
        else:
            root = ET.fromstring(data)
            assert root.tag.endswith("svg") and len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 10
    svg = tmp_path / "plots" / f"{names[0]}.svg"
    first = svg.read_bytes()
    write_plots(results.metrics, tmp_path / "plots")
    assert svg.read_bytes() == first  # same data, same file
    for table in results.tables:  # every table renders in every format, with both models side by side
        assert "hf:model-a" in to_markdown(table) and "hf:model-b" in to_csv(table)
        assert to_latex(table).startswith("\\begin{table}")


@pytest.mark.slow
def test_a_model_that_always_refuses_still_plots_with_gaps(data_dir, tmp_path):
    results = fabricated_results(
        "trustgpt-bias", data_dir, tmp_path, options={"norms": "3"}, refuse_all=("hf:model-b",)
    )
    refuser = results.metrics["models"]["hf:model-b"]
    assert all(np.isnan(g["average_toxicity"]["value"]) for g in refuser["by_group"].values())
    assert all(g["rta"]["value"] == 100.0 for g in refuser["by_group"].values())
    assert np.isnan(refuser["max_slope"])
    assert len(write_plots(results.metrics, tmp_path / "plots")) == 6
    assert "n/a" in to_markdown(results.tables[0])


def test_nothing_to_draw_for_other_benchmarks(tmp_path):
    assert write_plots({"benchmark": "trusteval-toxicity", "models": {"m": {}}}, tmp_path) == []
    assert write_plots({"benchmark": "trustgpt-ava", "models": {}}, tmp_path) == []


def test_without_matplotlib_a_run_gets_the_reason_not_a_crash(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    written, reason = write_plots_if_possible({"benchmark": "trustgpt-ava", "models": {"m": {}}}, tmp_path)
    assert written == [] and "pip install 'trusteval[plots]'" in reason


TYPED = {"trustgpt-toxicity": ToxicityResult, "trustgpt-bias": BiasResult, "trustgpt-ava": AvaResult,
         "trustgpt-pva": PvaResult}  # fmt: skip


@pytest.mark.parametrize("benchmark", list(TYPED))
def test_typed_results_read_back_their_metrics_and_rebuild_the_same_tables(benchmark, data_dir, tmp_path):
    results = fabricated_results(benchmark, data_dir, tmp_path, options=CASES[benchmark])
    typed = TYPED[benchmark].from_dict(results.metrics)
    assert json.dumps(typed.as_dict(), allow_nan=True) == json.dumps(results.metrics, allow_nan=True)
    rebuilt = BUILDERS[benchmark](results.metrics, results.notes)  # how `trusteval tables` builds them
    assert [to_csv(t) for t in rebuilt] == [to_csv(t) for t in results.tables]
    assert results.tables[0].notes == results.notes.all and results.notes.run  # every note under the main table
