"""What people saw wrong in the figures: a negative axis for all-zero rates, lengths on category ticks,
titles naming only the model, AVA without its unparsed share; and console tables cut at 80 columns."""

from __future__ import annotations

import io

import pytest

from trusteval.report.console import abbreviate, print_tables
from trusteval.tables.table import Table

pytest.importorskip("matplotlib")

from trusteval.report.plots import ava_accuracy, pva_rta, toxicity_distribution, toxicity_length


def _estimate(value: float) -> dict:
    return {"value": value, "low": value, "high": value, "n": 20, "seed_values": [], "seed_std": None}


def test_pva_with_every_rate_zero_has_no_negative_axis():
    metrics = {"benchmark": "trustgpt-pva", "labels": ["good", "bad"], "scorers": {"refusal": "keywords-exact@1"},
               "models": {"m": {"good": {"rta": _estimate(0.0)}, "bad": {"rta": _estimate(0.0)}}}}  # fmt: skip
    ax = pva_rta(metrics).axes[0]
    assert ax.get_ylim() == (0.0, 100.0)
    assert "keywords-exact@1" in ax.get_title() and "RtA" in ax.get_title()


def test_length_figure_uses_a_numeric_axis():
    bins = [{"bin": "1", "low": 1, "high": 1, "count": 3, "average_toxicity": 0.1},
            {"bin": "7", "low": 7, "high": 7, "count": 2, "average_toxicity": 0.3},
            {"bin": ">20", "low": 21, "high": 41, "count": 1, "average_toxicity": 0.5}]  # fmt: skip
    metrics = {
        "benchmark": "trustgpt-toxicity",
        "scorers": {"toxicity": "en-tfidf@1"},
        "models": {"m": {"length": bins}},
    }
    figure = toxicity_length(metrics)
    ax = next(a for a in figure.axes if a.get_lines())
    assert list(ax.get_lines()[0].get_xdata()) == [1.0, 7.0, 31.0]  # gaps between lengths stay gaps
    assert "average toxicity by length" in ax.get_title() and "en-tfidf@1" in ax.get_title()


def test_distribution_title_names_measure_and_scorer():
    metrics = {"benchmark": "trustgpt-toxicity", "words": ["toxic"], "histogram_edges": [0.0, 0.5, 1.0],
               "scorers": {"toxicity": "perspective@1"},
               "models": {"m": {"by_word": {"toxic": {"histogram": [3, 1]}}}}}  # fmt: skip
    title = toxicity_distribution(metrics).axes[0].get_title()
    assert title.startswith("m\n") and "toxicity distribution" in title and "perspective@1" in title


def test_ava_shows_the_unparsed_share():
    model = {"hard": _estimate(50.0), "soft": _estimate(60.0), "answers": 40, "unparsed": 10}
    ax = ava_accuracy({"benchmark": "trustgpt-ava", "models": {"replay:a.jsonl": model}}).axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["replay:a.jsonl\nunparsed 10/40 (25%)"]


def test_console_table_at_80_columns_abbreviates_long_model_names():
    long_a, long_b = "replay:/data/checkpoints/before-safety-tuning/answers.jsonl", "replay:/data/after/answers.jsonl"
    table = Table("t", "Table 5", ("Model", "T2T", "T2NT", "NT2T", "NT2NT", "TT"),
                  ((long_a, 21.5, 21.6, 0.0, 56.7, 21.7), (long_b, 0.0, 43.3, 0.0, 56.7, 0.0)))  # fmt: skip
    short, legend = abbreviate(table, 80)
    assert [row[0] for row in short.rows] == ["M1", "M2"] and legend == [f"M1 = {long_a}", f"M2 = {long_b}"]
    assert abbreviate(table, 200) == (table, [])
    metrics = Table("c", "compare", ("Metric", *table.columns[1:]), table.rows)
    assert abbreviate(metrics, 80) == (metrics, [])  # only model names are abbreviated
    from rich.console import Console

    buffer = io.StringIO()
    print_tables([table], Console(file=buffer, width=80))
    text = buffer.getvalue()
    assert "21.50" in text and "56.70" in text and f"M1 = {long_a}" in text and "replay:..." not in text


def test_console_table_too_wide_for_80_columns_comes_in_parts_with_the_model_names():
    from rich.console import Console

    from trusteval.report.console import split_columns

    statistics = [f"{c} seed {s}" for c in ("T2T", "T2NT", "NT2T", "NT2NT", "TT") for s in ("mean", "sd")]
    columns = ("Model", "seeds", *statistics)
    rows = (("persona:hostile", 2, *(10.0 + i for i in range(10))), ("persona:calm", 2, *([0.5] * 10)))
    table = Table("s", "Table 5 (cold): rates across seeds (%)", columns, rows)
    parts = split_columns(table, 80)
    assert len(parts) > 1 and [c for p in parts for c in p.columns[1:]] == list(columns[1:])
    assert all(p.columns[0] == "Model" and [r[0] for r in p.rows] == ["persona:hostile", "persona:calm"] for p in parts)
    assert split_columns(table, 300) == [table]
    buffer = io.StringIO()
    print_tables([table], Console(file=buffer, width=80))
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80 and "[columns 1 of" in text
    assert all(f" {c} " in text for c in columns) and all(f" {10.0 + i:.2f} " in text for i in range(10))


def test_console_tables_print_markup_in_names_as_text():
    from rich.console import Console

    hostile = "[/bold] [red]model[/red]"
    table = Table("t", "[bold]Title", ("Model", "response"), ((hostile, "a [/x] b"),), notes=("note [/dim]",))
    buffer = io.StringIO()
    print_tables([table], Console(file=buffer, width=120))
    text = buffer.getvalue()
    assert hostile in text and "a [/x] b" in text and "[bold]Title" in text and "note [/dim]" in text


def test_trusteval_figures_for_the_html_report():
    from trusteval.report.trusteval_plots import trusteval_svgs

    est = _estimate(12.5)
    toxicity = {"dataset": "cold", "models": {"m1": {"overall": {"T2T": est, "NT2T": est, "TT": est}},
                                              "m2": {"overall": {"T2T": est, "NT2T": est, "TT": est}}}}  # fmt: skip
    bias = {"dataset": "cold", "classes": ["race", "gender"], "models": {"m": {"tt": {"race": est, "gender": est}}}}
    avoidance = {"classes": ["x", "y"], "judge": {"judge": "j@1"}, "models": {"m": {"x": est, "y": _estimate(0.0)}}}
    for benchmark, metrics, name in (("trusteval-toxicity", toxicity, "trusteval_toxicity_categories"),
                                     ("trusteval-bias", bias, "trusteval_bias_by_class"),
                                     ("trusteval-avoidance", avoidance, "trusteval_avoidance_by_class")):  # fmt: skip
        ((found, svg),) = trusteval_svgs(benchmark, metrics)
        assert found == name and svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert trusteval_svgs("trusteval-bias", {"models": {}}) == []


def test_svg_salt_is_fixed_while_saving_only():
    import matplotlib

    from trusteval.report.plots import figure_svgs
    from trusteval.report.trusteval_plots import trusteval_svgs

    pva = {"benchmark": "trustgpt-pva", "labels": ["good", "bad"], "scorers": {"refusal": "keywords-exact@1"},
           "models": {"m": {"good": {"rta": _estimate(10.0)}, "bad": {"rta": _estimate(30.0)}}}}  # fmt: skip
    toxicity = {"dataset": "cold", "models": {"m": {"overall": {"T2T": _estimate(1.0), "NT2T": _estimate(2.0),
                                                                "TT": _estimate(3.0)}}}}  # fmt: skip
    with matplotlib.rc_context({"svg.hashsalt": "someone else's"}):
        first = figure_svgs(pva) + trusteval_svgs("trusteval-toxicity", toxicity)
        assert matplotlib.rcParams["svg.hashsalt"] == "someone else's"  # the process-wide setting is left alone
    with matplotlib.rc_context({"svg.hashsalt": None}):
        again = figure_svgs(pva) + trusteval_svgs("trusteval-toxicity", toxicity)
        assert matplotlib.rcParams["svg.hashsalt"] is None
    assert first == again  # the same bytes for the same data, whatever the global salt
