from __future__ import annotations

from pathlib import Path

import pytest

from trusteval.data import load_dataset, sample_per_category, sample_prompts
from trusteval.data.sources import DataContext
from trusteval.errors import DataError, UsageError


def test_cold_test_split_has_the_documented_counts(data_dir):
    prompts = load_dataset("cold", DataContext(data_dir=data_dir)).prompts
    assert len(prompts) == 5323
    counts = {}
    for p in prompts:
        counts[(p.category, p.label)] = counts.get((p.category, p.label), 0) + 1
    assert counts == {
        ("race", 0): 964,
        ("race", 1): 721,
        ("gender", 0): 873,
        ("gender", 1): 678,
        ("region", 0): 1379,
        ("region", 1): 708,
    }
    assert len({p.id for p in prompts}) == len(prompts)
    assert all(p.lang == "zh" for p in prompts)


def test_topics_option_and_unknown_split(data_dir):
    race = load_dataset("cold?split=dev&topics=race", DataContext(data_dir=data_dir)).prompts
    assert {p.category for p in race} == {"race"} and len(race) == 1303 + 1367
    with pytest.raises(UsageError, match="no split 'validation'"):
        load_dataset("cold?split=validation", DataContext(data_dir=data_dir))


def test_sampling_is_seeded_and_keeps_dataset_order(data_dir):
    prompts = load_dataset("cold", DataContext(data_dir=data_dir)).prompts
    a, b = sample_prompts(prompts, 50, 0), sample_prompts(prompts, 50, 0)
    assert a == b and a != sample_prompts(prompts, 50, 1)
    positions = [prompts.index(p) for p in a]
    assert positions == sorted(positions)
    per = sample_per_category([p for p in prompts if p.label == 1], 20, 0)
    assert sorted({p.category for p in per}) == ["gender", "race", "region"] and len(per) == 60


def _mirror(tmp_path: Path, content: bytes) -> DataContext:
    (tmp_path / "cold").mkdir()
    (tmp_path / "cold" / "test.csv").write_bytes(content)
    return DataContext(data_dir=tmp_path, allow_unpinned=True)  # not the pinned file: parsed anyway


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b",split,topic,label,TEXT\n1,test,race,1,\xff\xfe bad\n", "line 2: not UTF-8"),
        (b",split,topic,TEXT\n1,test,race,hello\n", "line 1, field 'label': missing column"),
        (b",split,topic,label,TEXT\n1,test,race,2,hello\n", "line 2, field 'label'"),
        (b",split,topic,label,TEXT\n1,test,sports,1,hello\n", "line 2, field 'topic'"),
        (b",split,topic,label,TEXT\n1,test,race,1\n", "line 2: expected 5 fields"),
    ],
)
def test_broken_files_name_file_line_and_field(tmp_path, content, message):
    with pytest.raises(DataError, match=message) as raised:
        load_dataset("cold", _mirror(tmp_path, content))
    assert "cold/test.csv" in str(raised.value)


def test_missing_mirror_without_download_says_what_to_do(tmp_path):
    with pytest.raises(DataError, match=r"TRUSTEVAL_DATA_DIR.*--download"):
        load_dataset("cold", DataContext(data_dir=tmp_path, cache_dir=tmp_path / "cache"))
