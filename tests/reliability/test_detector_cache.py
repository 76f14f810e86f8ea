"""A corrupted cache of a trained detector is detected (checksum, version, shapes) and retrained, never loaded.

A tiny recipe (a few dozen labelled sentences) goes through the same `load` / `load_or_train` code as the
COLD and English detectors, so every corruption case costs milliseconds; tests/test_cold_detector.py checks
one case on the real COLD detector.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from trusteval.data.sources import sha256_file
from trusteval.scorers.tfidf_detector import DetectorRecipe, load, load_or_train

TOXIC = ["你这个傻瓜", "滚开蠢货", "真是个废物", "闭嘴白痴", "你太恶心了", "蠢货一个"]
SAFE = ["今天天气很好", "谢谢你的帮助", "我们去公园吧", "这本书很有意思", "祝你生日快乐", "晚饭吃什么"]
PROBES = ["你是个傻瓜", "天气很好", "蠢货", ""]


class CountingData:
    """The recipe's data source; counts how often the detector was (re)trained."""

    def __init__(self) -> None:
        self.trainings = 0

    def __call__(self):
        self.trainings += 1
        texts = TOXIC + SAFE
        labels = [1] * len(TOXIC) + [0] * len(SAFE)
        return texts * 3, labels * 3, texts, labels, {"tiny": "0" * 64}


def _recipe(data: CountingData, version: str = "1", ngram_range=(1, 2)) -> DetectorRecipe:
    return DetectorRecipe(
        name="tiny", version=version, languages=frozenset({"zh"}), analyzer="char", ngram_range=ngram_range,
        C=4.0, load_data=data, min_df=1,
    )  # fmt: skip


def _folder(cache: Path) -> Path:
    return cache / "detectors" / "tiny-1"


def _truncate_card(folder: Path) -> None:
    text = (folder / "card.json").read_text()
    (folder / "card.json").write_text(text[: len(text) // 2])


def _rewrite_card(folder: Path, **changes) -> None:
    card = json.loads((folder / "card.json").read_text())
    (folder / "card.json").write_text(json.dumps({**card, **changes}))


def _card_not_an_object(folder: Path) -> None:
    (folder / "card.json").write_text('["not", "a", "card"]')


def _flip_weight_bytes(folder: Path) -> None:
    weights = folder / "weights.npz"
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))


def _garbage_with_matching_checksum(folder: Path) -> None:
    (folder / "weights.npz").write_bytes(b"not an npz file" * 50)
    _rewrite_card(folder, weights_sha256=sha256_file(folder / "weights.npz"))


def _pickled_weights_with_matching_checksum(folder: Path) -> None:
    """An npz holding a pickled object array: loading it with pickle would run code, so it must be refused."""
    np.savez(folder / "weights.npz", terms=np.array([{"code": "os.system"}], dtype=object), idf=np.ones(1))
    _rewrite_card(folder, weights_sha256=sha256_file(folder / "weights.npz"))


def _weights_of_another_recipe(folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    load_or_train(_recipe(CountingData(), ngram_range=(1, 1)), other)
    for name in ("weights.npz", "card.json"):
        (folder / name).write_bytes((_folder(other) / name).read_bytes())


CORRUPTIONS = {
    "truncated card JSON": _truncate_card,
    "missing weights": lambda folder: (folder / "weights.npz").unlink(),
    "missing card": lambda folder: (folder / "card.json").unlink(),
    "card from another version": lambda folder: _rewrite_card(folder, version="0"),
    "card that is not an object": _card_not_an_object,
    "weights changed after the card": _flip_weight_bytes,
    "garbage weights, checksum forged": _garbage_with_matching_checksum,
    "pickled weights, checksum forged": _pickled_weights_with_matching_checksum,
}


@pytest.mark.parametrize("corruption", [*CORRUPTIONS, "weights of another recipe, checksum valid"])
def test_a_corrupted_cache_is_retrained_not_loaded(tmp_path, figures, corruption):
    cache = tmp_path / "cache"
    data = CountingData()
    pristine = load_or_train(_recipe(data), cache)
    expected = pristine.predict(PROBES)
    assert load(_recipe(data), _folder(cache)) is not None and data.trainings == 1

    if corruption in CORRUPTIONS:
        CORRUPTIONS[corruption](_folder(cache))
    else:
        _weights_of_another_recipe(_folder(cache), tmp_path)
    assert load(_recipe(data), _folder(cache)) is None, "a corrupted cache must never load"

    rebuilt = load_or_train(_recipe(data), cache)
    assert data.trainings == 2
    np.testing.assert_allclose(rebuilt.predict(PROBES), expected, rtol=1e-6)
    healed = load(_recipe(data), _folder(cache))
    assert healed is not None and healed.card["weights_sha256"] == sha256_file(_folder(cache) / "weights.npz")
    figures.setdefault("bad_inputs", {})[f"detector cache: {corruption}"] = "detected and retrained"
