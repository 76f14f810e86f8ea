"""Class columns with several tags per cell (`category_sep=`, `category_map=`) for `file:` and `hf:` datasets:
the same rule as the TisEval translations (first class in the map's order)."""

from __future__ import annotations

import csv
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import run_cli
from trusteval.data import load_dataset
from trusteval.data.multilabel import parse_category_map, parse_separators
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError

ROWS = [
    ["id", "text", "label", "tags"],
    ["a", "你是个白痴", "1", "侮辱"],
    ["b", "今天天气很好", "0", "其他"],
    ["c", "滚开，否则揍你", "1", "威胁,侮辱"],
    ["d", "脏话连篇", "1", "亵渎/淫秽，侮辱"],
    ["e", "随便说说", "0", "其他 威胁"],
]
MAP = "亵渎/淫秽:obscenity,侮辱:insults,人身攻击:insults,*:others"


def _file(folder: Path, rows=ROWS) -> Path:
    path = folder / "tags.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle).writerows(rows)
    return path


def _spec(path: Path, sep: str = ",，space", mapping: str = MAP) -> str:
    return f"file:{path}?lang=zh&category=tags&category_sep={quote(sep)}&category_map={quote(mapping)}"


def test_several_tags_go_to_the_first_class_in_the_maps_order(tmp_path):
    loaded = load_dataset(_spec(_file(tmp_path)), DataContext())
    got = {p.id: (p.category, p.attributes.get("classes")) for p in loaded.prompts}
    assert got == {
        "a": ("insults", None),
        "b": ("others", None),
        "c": ("insults", "insults,others"),
        "d": ("obscenity", "obscenity,insults"),
        "e": ("others", None),  # two tags, one class
    }
    assert loaded.notes[0].startswith("2 of 5 rows have several classes. Several classes in one row: counted once, "
                                      "under the first in the order obscenity, insults, others")  # fmt: skip


def test_an_unmapped_tag_without_a_default_is_one_line_naming_file_line_column_and_tag(tmp_path):
    path = _file(tmp_path)
    with pytest.raises(DataError, match=r"tags.csv, line 4, field 'tags': tag '威胁' has no class"):
        load_dataset(_spec(path, mapping="侮辱:insults,其他:others"), DataContext())
    result = run_cli("datasets", "show", _spec(path, mapping="侮辱:insults,其他:others"))
    assert result.returncode == 2 and "tag '威胁' has no class" in result.stderr.strip().splitlines()[-1]


def test_without_the_options_a_tag_list_stays_one_class(tmp_path):
    loaded = load_dataset(f"file:{_file(tmp_path)}?lang=zh&category=tags", DataContext())
    assert [p.category for p in loaded.prompts][2] == "威胁,侮辱" and loaded.notes == ()


def test_datasets_show_counts_the_mapped_classes(tmp_path):
    result = run_cli("datasets", "show", _spec(_file(tmp_path)))
    assert result.returncode == 0, result.stderr
    assert "note: 2 of 5 rows have several classes" in result.stdout
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line.startswith("  ")}
    assert rows["insults"] == ["2", "0", "0", "2"] and rows["others"] == ["0", "2", "0", "2"]


def test_bad_options_are_usage_errors(tmp_path):
    path = _file(tmp_path)
    with pytest.raises(UsageError, match="category_sep needs category_map"):
        load_dataset(f"file:{path}?lang=zh&category=tags&category_sep=,", DataContext())
    with pytest.raises(UsageError, match="category_map entry 'oops' is not TAG:CLASS"):
        load_dataset(_spec(path, mapping="oops"), DataContext())
    with pytest.raises(UsageError, match="need a category column"):
        load_dataset(f"file:{path}?lang=zh&category_map=a:b", DataContext())


def test_parsers():
    assert parse_category_map("a:x,b:y,c:x,*:z") == ({"a": "x", "b": "y", "c": "x"}, "z", ("x", "y", "z"))
    assert parse_separators(",space") == (",", True) and parse_separators(";") == (";", False)


def test_hf_datasets_accept_the_same_options(tmp_path):
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    columns = list(zip(*ROWS[1:], strict=True))
    datasets.Dataset.from_dict({"id": list(columns[0]), "text": list(columns[1]), "label": [int(v) for v in columns[2]],
                                "tags": list(columns[3])}).save_to_disk(str(saved))  # fmt: skip
    spec = _spec(saved).replace("file:", "hf:", 1)
    loaded = load_dataset(spec, DataContext())
    assert [p.category for p in loaded.prompts] == ["insults", "others", "insults", "obscenity", "others"]
    assert loaded.notes and loaded.notes[0].startswith("2 of 5 rows have several classes")
