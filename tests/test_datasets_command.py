"""`trusteval datasets show`: a loader's own description when it has one, counts otherwise."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from helpers import run_cli
from trusteval.commands.datasets import describe_dataset
from trusteval.data import DATASETS, LoadedDataset
from trusteval.data.sources import DataContext
from trusteval.records import Prompt

BAD = Path(__file__).parent / "data" / "bad_inputs"


def _table(output: str) -> dict[str, list[str]]:
    """The count rows printed under a 'class toxic non-toxic unlabelled total' header."""
    rows, inside = {}, False
    for line in output.splitlines():
        words = line.split()
        if words[:2] == ["class", "toxic"]:
            inside, rows = True, {}
            continue
        if inside and len(words) == 5:
            rows[words[0]] = words[1:]
        else:
            inside = False
    return rows


@pytest.mark.slow
def test_hatexplain_prints_its_mapping_and_counts_per_split():
    result = run_cli("datasets", "show", "hatexplain")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "religion             Buddhism, Christian, Hindu, Islam, Jewish, Nonreligious" in out
    assert "split train:" in out and "split validation:" in out and "split test:" in out
    test_rows = _table(out.split("split test:")[1])
    assert test_rows["all"] == ["1142", "782", "0", "1924"]
    assert test_rows["race"] == ["359", "97", "0", "456"]


@pytest.mark.slow
def test_a_mapping_override_shows_in_the_table():
    result = run_cli("datasets", "show", "hatexplain?map.Refugee=region")
    assert result.returncode == 0, result.stderr
    assert "region               Refugee" in result.stdout


@pytest.mark.slow
def test_toxicspans_prints_its_rule_notes_and_counts():
    result = run_cli("datasets", "show", "toxicspans")
    assert result.returncode == 0, result.stderr
    assert "Profane/Obscene        obscenity" in result.stdout
    assert "1 comment(s) with more than 7 annotations" in result.stdout
    assert _table(result.stdout)["all"] == ["10990", "5109", "0", "16099"]


def test_a_dataset_without_describe_gets_counts_and_hashes():
    result = run_cli("datasets", "show", "cold")
    assert result.returncode == 0, result.stderr
    assert "source cold/test.csv: sha256 b06d3148" in result.stdout
    rows = _table(result.stdout)
    assert set(rows) == {"gender", "race", "region", "all"}
    assert int(rows["all"][3]) == sum(int(rows[t][3]) for t in ("gender", "race", "region"))


def test_file_dataset_counts():
    result = run_cli("datasets", "show", f"file:{BAD / 'good.csv'}?lang=en")
    assert result.returncode == 0, result.stderr
    assert _table(result.stdout) == {"gender": ["0", "1", "0", "1"], "race": ["1", "0", "0", "1"],
                                     "all": ["1", "1", "0", "2"]}  # fmt: skip


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hatexplan", "unknown dataset 'hatexplan'. Did you mean 'hatexplain'?"),
        (f"file:{BAD / 'empty_class.csv'}?lang=en", "line 3, field 'category': empty attribute class"),
    ],
)
def test_errors_are_one_line(spec, message):
    result = run_cli("datasets", "show", spec)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_describe_is_preferred_when_the_loader_module_has_one(monkeypatch):
    module = types.ModuleType("fake_dataset_module")

    def load(spec, context):
        return LoadedDataset("fake", [Prompt("1", "fake", "hi", "en", 1, "x")])

    load.__module__ = module.__name__
    module.load = load
    module.describe = lambda spec, context: f"custom description of {spec.kind} ({spec.options.get('k')})"
    monkeypatch.setitem(__import__("sys").modules, module.__name__, module)
    DATASETS.register("fake-described", load)
    try:
        assert describe_dataset("fake-described?k=v", DataContext()) == "custom description of fake-described (v)"
        del module.describe
        assert "1 prompts; language en 1" in describe_dataset("fake-described", DataContext())
    finally:
        DATASETS.unregister("fake-described")
