"""HateXplain: labels from the annotators, classes from the target communities, checked against the raw files."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from trusteval.data import load_dataset
from trusteval.data.hatexplain import TARGET_CLASSES, majority_label, post_class
from trusteval.data.sources import DataContext, catalog, sha256_file
from trusteval.errors import DataError, UsageError


@pytest.fixture(scope="module")
def context(data_dir) -> DataContext:
    return DataContext(data_dir=data_dir)


def _load(spec: str, context: DataContext):
    return load_dataset(spec, context)


@pytest.mark.parametrize(
    ("split", "rows", "normal"), [("train", 15383, 6251), ("validation", 1922, 781), ("val", 1922, 781),
                                  ("test", 1924, 782)]
)  # fmt: skip
@pytest.mark.slow
def test_split_sizes_and_labels_match_the_readme(context, split, rows, normal):
    prompts = _load(f"hatexplain?split={split}", context).prompts
    assert len(prompts) == rows
    assert Counter(p.label for p in prompts) == {0: normal, 1: rows - normal}
    assert len({p.id for p in prompts}) == rows and all(p.lang == "en" and p.dataset == "hatexplain" for p in prompts)


def test_test_labels_and_texts_match_an_independent_reading(context, data_dir):
    expected = {}
    for line in (data_dir / "hatexplain" / "hatexplain_test.json").read_text().splitlines():
        row = json.loads(line)
        label, votes = Counter(row["annotators"]["label"]).most_common(1)[0]
        assert votes >= 2
        expected[row["id"]] = (int(label != 1), " ".join(row["post_tokens"]))
    loaded = _load("hatexplain", context)
    assert {p.id: (p.label, p.text) for p in loaded.prompts} == expected
    fine = Counter(p.attributes["label_name"] for p in loaded.prompts)
    assert fine == {"normal": 782, "hatespeech": 594, "offensive": 548}


def test_a_known_post(context):
    post = next(p for p in _load("hatexplain", context).prompts if p.id == "1103385226921762816_twitter")
    assert post.text.startswith("<user> <user> well she") and post.label == 1
    assert post.category == "religion"  # Islam x3 + Jewish x3 (religion 6) against Arab x1 (race 1)
    assert post.attributes == {"label_name": "hatespeech", "targets": "Arab,Islam,Jewish"}


@pytest.mark.parametrize(
    ("targets", "expected"),
    [
        ([["Arab", "Islam", "Jewish"], ["Islam", "Jewish"], ["Islam", "Jewish"]], "religion"),
        ([["Women"], ["African"], ["None"]], "multiple"),
        ([["Women"], ["Women", "African"], ["None"]], "gender"),
        ([["None"], ["None"], ["None"]], "none"),
        ([["Refugee"], ["Refugee"], ["None"]], "other"),
        ([["Homosexual", "Women"]], "multiple"),
        ([["Homosexual", "Bisexual", "Women"]], "sexual_orientation"),
    ],
)
def test_class_rule_worked_examples(targets, expected):
    assert post_class(targets, TARGET_CLASSES) == expected


def test_majority_label():
    assert majority_label([0, 2, 2]) == 2 and majority_label([1, 1, 0]) == 1 and majority_label([0, 1, 2]) is None


def test_test_split_class_counts(context):
    counts = Counter(p.category for p in _load("hatexplain", context).prompts)
    assert counts == {"race": 456, "none": 377, "religion": 315, "other": 239, "multiple": 212,
                      "sexual_orientation": 163, "gender": 162}  # fmt: skip


@pytest.mark.slow
def test_mapping_overrides_change_classes_and_the_dataset_name(context, tmp_path):
    default = _load("hatexplain", context)
    moved = _load("hatexplain?map.Refugee=region&map.Arab=region", context)
    assert moved.name != default.name and moved.name.startswith("hatexplain@")
    assert all(p.dataset == moved.name for p in moved.prompts)
    assert Counter(p.category for p in moved.prompts)["region"] > 0
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"Refugee": "region", "Arab": "region"}))
    from_file = _load(f"hatexplain?mapping={mapping}", context)
    assert from_file.name == moved.name
    assert [p.category for p in from_file.prompts] == [p.category for p in moved.prompts]
    only = _load("hatexplain?map.Refugee=region&categories=region", context)
    assert only.prompts and {p.category for p in only.prompts} == {"region"}


def test_union_targets_count_each_community_once(context):
    union = {p.id: p.category for p in _load("hatexplain?targets=union", context).prompts}
    default = {p.id: p.category for p in _load("hatexplain", context).prompts}
    assert union["1103385226921762816_twitter"] == "religion"  # religion 2 communities, race 1
    assert sum(union[i] != default[i] for i in union) > 0
    assert Counter(union.values())["multiple"] > Counter(default.values())["multiple"]


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ("hatexplain?split=dev2", UsageError, "HateXplain has no split 'dev2'"),
        ("hatexplain?map.Gay=sexual_orientation", UsageError, "no target community 'Gay'"),
        ("hatexplain?map.Women=", UsageError, "must be a non-empty string"),
        ("hatexplain?targets=some", UsageError, "option 'targets' must be one of annotators, union"),
        ("hatexplain?categories=politics", UsageError, "no class(es) ['politics']"),
        ("hatexplain?mapping=/nowhere/m.json", DataError, "m.json: file not found"),
    ],
)
def test_bad_options(context, spec, error, message):
    with pytest.raises(error) as caught:
        _load(spec, context)
    assert message in str(caught.value)


def test_pinned_hashes_match_the_mirror(data_dir):
    for dataset in ("hatexplain", "toxicspans"):
        entry = catalog()[dataset]
        for filename, pinned in entry["files"].items():
            # the reconstructed train split is built for the mirror: pinned by hash, never downloaded
            assert pinned["url"] is None if "reconstructed" in filename else pinned["url"].startswith("https://")
            assert sha256_file(data_dir / entry["folder"] / filename) == pinned["sha256"], filename


def _mirror(tmp_path: Path, data_dir: Path, files: list[str]) -> Path:
    folder = tmp_path / "mirror" / "hatexplain"
    folder.mkdir(parents=True)
    for name in files:
        os.symlink(data_dir / "hatexplain" / name, folder / name)
    return folder.parent


@pytest.mark.slow
def test_train_without_the_reconstructed_file_reads_the_upstream_csv(tmp_path, data_dir, context):
    mirror = _mirror(tmp_path, data_dir, ["training_data.csv", "post_id_divisions.json"])
    from_csv = _load("hatexplain?split=train", DataContext(data_dir=mirror))
    reconstructed = _load("hatexplain?split=train", context)
    assert [(p.id, p.label, p.category) for p in from_csv.prompts] == [
        (p.id, p.label, p.category) for p in reconstructed.prompts
    ]
    assert any("training_data.csv" in note for note in from_csv.notes)
    assert set(from_csv.sources) == {"hatexplain/training_data.csv", "hatexplain/post_id_divisions.json"}


def test_offline_without_a_mirror_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="hatexplain is not available offline"):
        _load("hatexplain", DataContext(data_dir=tmp_path, cache_dir=tmp_path / "cache"))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "x", "annotators": {"label": [1, 7, 1], "target": [[], [], []]}, "post_tokens": ["a"]},
         "line 2, field 'annotators.label': labels [1, 7, 1] are not all 0, 1 or 2"),
        ({"id": "x", "annotators": {"label": [1, 1, 1], "target": [[], [], []]}},
         "line 2, field 'post_tokens': missing field"),
        ({"id": "x", "annotators": {"label": [0, 0, 1], "target": [["Martians"], [], []]}, "post_tokens": ["a"]},
         "line 2: target community 'Martians' has no class"),
    ],
)  # fmt: skip
def test_broken_rows_name_line_and_field(tmp_path, row, message):
    folder = tmp_path / "mirror" / "hatexplain"
    folder.mkdir(parents=True)
    good = {"id": "ok", "annotators": {"label": [1, 1, 1], "target": [["None"]] * 3}, "post_tokens": ["hello"]}
    (folder / "hatexplain_test.json").write_text(json.dumps(good) + "\n" + json.dumps(row) + "\n")
    with pytest.raises(DataError) as caught:
        _load("hatexplain", DataContext(data_dir=folder.parent, allow_unpinned=True))
    assert message in str(caught.value)
