"""util/atomic.py: a file is replaced whole or not at all, and no temporary file is left behind."""

from __future__ import annotations

import pytest

from trusteval.util.atomic import atomic_target, write_atomic


def test_write_atomic_replaces_the_whole_file_and_leaves_nothing_beside_it(tmp_path):
    target = tmp_path / "sub" / "card.json"
    write_atomic(target, "first\n")
    write_atomic(target, "zweite Zeile, 第二\n")
    write_atomic(tmp_path / "raw.bin", b"\x00\xff")
    assert target.read_bytes() == "zweite Zeile, 第二\n".encode()
    assert (tmp_path / "raw.bin").read_bytes() == b"\x00\xff"
    assert sorted(p.name for p in target.parent.iterdir()) == ["card.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "weights.npz"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_target(target, suffix=".npz") as temporary:
        assert temporary.parent == tmp_path and temporary.name.endswith(".npz")
        temporary.write_text("half")
        raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["weights.npz"]
