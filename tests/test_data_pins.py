"""Pins are checked on content, never on a (size, mtime) stamp; a detector trained on unpinned data is never
reused by a pinned run, and its scorer id names its data (issue 21, items 4 and 5)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from trusteval.data import load_dataset
from trusteval.data.sources import DataContext, catalog, sha256_file
from trusteval.errors import DataError
from trusteval.models.embedded import weights_sha256
from trusteval.scorers import ScorerContext, load_scorer
from trusteval.scorers.tfidf_detector import DetectorRecipe, load_or_train

PINNED_TRAIN = catalog()["cold"]["files"]["train.csv"]["sha256"]


def _edit_keeping_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    """The edit of `touch -r`: one piece replaced by another of the same length, then size and mtime restored."""
    assert len(old) == len(new)
    stat = path.stat()
    time.sleep(0.02)  # so the edit's ctime differs from the last hash's even on a coarse file-system clock
    content = path.read_bytes()
    assert old in content
    path.write_bytes(content.replace(old, new, 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def _mirror_with_own_cold(data_dir: Path, tmp: Path, train: bytes | None = None) -> Path:
    """A data mirror of symlinks to the real one, with a cold/ of its own (train.csv a copy, maybe changed)."""
    mirror = tmp / "data"
    mirror.mkdir()
    for entry in data_dir.iterdir():
        if entry.name != "cold":
            (mirror / entry.name).symlink_to(entry)
    (mirror / "cold").mkdir()
    for entry in (data_dir / "cold").iterdir():
        if entry.name != "train.csv":
            (mirror / "cold" / entry.name).symlink_to(entry)
    original = (data_dir / "cold" / "train.csv").read_bytes()
    (mirror / "cold" / "train.csv").write_bytes(train if train is not None else original)
    return mirror


def _flip_one_label(content: bytes) -> bytes:
    """The first row labelled 1 relabelled 0 (columns: index, split, topic, label, TEXT): same size."""
    lines = content.split(b"\n")
    index = next(i for i, line in enumerate(lines[1:], 1) if line.split(b",")[3:4] == [b"1"])
    fields = lines[index].split(b",")
    lines[index] = b",".join([*fields[:3], b"0", *fields[4:]])
    return b"\n".join(lines)


# -- item 5: the pin check hashes the content --------------------------------------------------------------


def test_a_data_file_edited_with_touch_r_is_refused(data_dir, tmp_path) -> None:
    mirror = _mirror_with_own_cold(data_dir, tmp_path)
    context = DataContext(data_dir=mirror, cache_dir=tmp_path / "cache")
    assert len(load_dataset("cold?split=train", context).prompts) > 1000  # checked, and remembered
    train = mirror / "cold" / "train.csv"
    _edit_keeping_size_and_mtime(train, *_label_edit(train.read_bytes()))
    with pytest.raises(DataError, match="does not match the pinned"):
        load_dataset("cold?split=train", DataContext(data_dir=mirror, cache_dir=tmp_path / "cache"))


def _label_edit(content: bytes) -> tuple[bytes, bytes]:
    changed = _flip_one_label(content)
    at = next(i for i, (a, b) in enumerate(zip(content, changed, strict=True)) if a != b)
    return content[at - 40 : at + 1], changed[at - 40 : at + 1]


def test_a_replay_file_edited_with_touch_r_is_another_model(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRUSTEVAL_CACHE_DIR", str(tmp_path / "cache"))
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"prompt": "p", "response": "yes"}\n')
    before = weights_sha256(answers)
    assert weights_sha256(answers) == before == sha256_file(answers)
    _edit_keeping_size_and_mtime(answers, b'"yes"', b'"no!"')
    assert weights_sha256(answers) == sha256_file(answers) != before


# -- item 4: a detector trained on unpinned data ----------------------------------------------------------


class Data:
    """A tiny detector's data, claiming to be COLD train with the given hash."""

    def __init__(self, train_sha: str) -> None:
        self.train_sha = train_sha
        self.trainings = 0

    def __call__(self):
        self.trainings += 1
        texts = ["你这个傻瓜", "滚开蠢货", "真是个废物", "今天天气很好", "谢谢你的帮助", "我们去公园吧"]
        labels = [1, 1, 1, 0, 0, 0]
        return texts * 3, labels * 3, texts, labels, {"cold/train.csv": self.train_sha, "tiny": "0" * 64}


def _recipe(data: Data) -> DetectorRecipe:
    return DetectorRecipe(name="tiny", version="1", languages=frozenset({"zh"}), analyzer="char", ngram_range=(1, 2),
                          C=4.0, load_data=data, min_df=1)  # fmt: skip


def test_a_detector_of_unpinned_data_is_cached_apart_and_never_loaded_by_a_pinned_run(tmp_path) -> None:
    tampered = Data("f" * 64)
    detector = load_or_train(_recipe(tampered), tmp_path, allow_unpinned=True)
    assert detector.card["data_sha256"]["cold/train.csv"] == "f" * 64
    assert not (tmp_path / "detectors" / "tiny-1").exists(), "the plain folder is the pinned data's only"
    assert load_or_train(_recipe(tampered), tmp_path, allow_unpinned=True) and tampered.trainings == 3, (
        "reused: its hashes are read again (1) and match the cached one"
    )
    clean = Data(PINNED_TRAIN)
    pinned = load_or_train(_recipe(clean), tmp_path)
    assert clean.trainings == 1 and pinned.card["data_sha256"]["cold/train.csv"] == PINNED_TRAIN
    assert load_or_train(_recipe(clean), tmp_path) is not None and clean.trainings == 1, "the pinned one is cached"


def test_a_pinned_run_never_scores_with_a_detector_of_tampered_data(data_dir, tmp_path) -> None:
    original = (data_dir / "cold" / "train.csv").read_bytes()
    mirror = _mirror_with_own_cold(data_dir, tmp_path, _flip_one_label(original))
    cache = tmp_path / "cache"
    unpinned = load_scorer("cold-tfidf", ScorerContext(data_dir=mirror, cache_dir=cache, allow_unpinned_data=True))
    tampered_sha = sha256_file(mirror / "cold" / "train.csv")
    assert unpinned.describe()["data_sha256"]["cold/train.csv"] == tampered_sha != PINNED_TRAIN
    assert unpinned.id.startswith("cold-tfidf@4+data-"), "a detector of other data has another scorer id"

    (mirror / "cold" / "train.csv").write_bytes(original)  # restored
    pinned = load_scorer("cold-tfidf", ScorerContext(data_dir=mirror, cache_dir=cache))
    assert pinned.id == "cold-tfidf@4"
    assert pinned.describe()["data_sha256"]["cold/train.csv"] == PINNED_TRAIN
    again = load_scorer("cold-tfidf", ScorerContext(data_dir=mirror, cache_dir=cache, allow_unpinned_data=True))
    assert again.id == "cold-tfidf@4", "with the flag and pinned data: the pinned detector"
