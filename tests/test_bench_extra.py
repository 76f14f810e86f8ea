"""The `bench` extra (jieba), as bench/zh_response_detector.py uses it for its word-feature candidates."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("jieba", reason="the bench extra is not installed (pip install 'trusteval[bench]')")

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_segmented_splits_chinese_into_space_separated_words(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    from zh_response_detector import segmented

    assert segmented(["我们一起去公园散步", "不要有地域歧视。"]) == ["我们 一起 去 公园 散步", "不要 有 地域 歧视 。"]
