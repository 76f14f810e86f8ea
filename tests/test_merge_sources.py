"""`trusteval merge` treats its sources as read-only inputs: it never writes into one, refuses a file that is not
a trusteval store (or is one of a newer schema), and refuses crafted aggregates with one line, exit 2."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path

import pytest

from helpers import run_cli
from trusteval.errors import StoreError
from trusteval.records import Generation, GenerationParams, Prompt, Request
from trusteval.store import MIGRATIONS, STORE_FILENAME, Store
from trusteval.store.merge import check_sources, merge_stores


def _source(folder: Path, *, run_id: str = "r1", failures: int = 1, shard: str | None = None) -> Path:
    """A small real store: three prompts, two answers and `failures` failed requests, a shard aggregate."""
    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i}", lang="en", label=i % 2) for i in range(3)]
    items = [(Request.build("m", (("user", p.text),), GenerationParams(), 42), "model-a", p, {}) for p in prompts]
    store = Store.open(folder)
    try:
        spec = {"benchmark": "b"} | ({"shard": shard} if shard else {})
        store.begin_run(run_id, benchmark="b", dataset="d", spec=spec, prompts=prompts, items=items)
        keys = [request.key for request, *_ in items]
        store.add_generations([Generation(keys[0], "answer 0"), Generation(keys[1], "answer 1")])
        for i in range(failures):
            store.add_generations([Generation.failure(keys[2], f"HTTP 503 ({i})")])
        if shard:
            store.put_aggregate(run_id, "shard", shard)
        store.finish_run(run_id, "complete")
    finally:
        store.close()
    return folder


def _digest(folder: Path) -> dict[str, str]:
    """sha256 of every file of a store folder (the database and any -wal/-shm beside it)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _sql(folder: Path, *statements: str) -> None:
    conn = sqlite3.connect(folder / STORE_FILENAME, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _count(folder: Path, table: str) -> int:
    conn = sqlite3.connect(f"{(folder / STORE_FILENAME).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def _refused(tmp_path: Path, source: Path, expected: str) -> None:
    """The CLI refuses `source` with exit 2 and one line that names the file; nothing of it changes."""
    before = _digest(source)
    done = run_cli("merge", source, "--into", tmp_path / "into")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert str(source / STORE_FILENAME) in lines[0] and expected in lines[0], lines[0]
    assert _digest(source) == before, "a refused source is left byte for byte as it was"
    assert not (tmp_path / "into" / STORE_FILENAME).exists(), "a refused merge creates no target"


# -- item 2: sources are opened read-only ----------------------------------------------------------------------


def test_merge_leaves_every_source_file_unchanged(tmp_path) -> None:
    sources = [_source(tmp_path / "a"), _source(tmp_path / "b", run_id="r2")]
    writer = sqlite3.connect(sources[1] / STORE_FILENAME, isolation_level=None)  # rows still in b's WAL
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("UPDATE runs SET status='interrupted'")
    try:
        before = [_digest(folder)[STORE_FILENAME] for folder in sources]
        target = Store.open(tmp_path / "into")
        try:
            report = merge_stores(target, sources)
        finally:
            target.close()
        after = [_digest(folder)[STORE_FILENAME] for folder in sources]
    finally:
        writer.close()
    assert report.runs == {"r1": {"": "complete"}, "r2": {"": "interrupted"}}, "rows still in the WAL are read"
    assert after == before, "no source's database file changes"


def test_an_old_store_is_merged_without_being_migrated(tmp_path) -> None:
    """A store of migration 2 (no prompts.source_id) is read as it is: its prompts arrive with source_id NULL."""
    old = _source(tmp_path / "old")
    _sql(
        old,
        "ALTER TABLE prompts DROP COLUMN source_id",
        f"DELETE FROM schema_migrations WHERE version={len(MIGRATIONS)}",
    )
    before = _digest(old)
    target = Store.open(tmp_path / "into")
    try:
        merge_stores(target, [old])
        assert target.count("prompts") == 3 and target.count("run_items") == 3
    finally:
        target.close()
    assert _digest(old) == before


def test_a_foreign_sqlite_file_is_refused_untouched(tmp_path) -> None:
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    _sql(foreign, "CREATE TABLE foo (x)", "INSERT INTO foo VALUES (1)")
    _refused(tmp_path, foreign, "not a trusteval store")
    assert _tables(foreign) == ["foo"], "no trusteval table was added"


def _tables(folder: Path) -> list[str]:
    conn = sqlite3.connect(f"{(folder / STORE_FILENAME).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
    finally:
        conn.close()


def test_an_empty_file_is_refused_untouched(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / STORE_FILENAME).write_bytes(b"")
    _refused(tmp_path, empty, "not a trusteval store")
    assert (empty / STORE_FILENAME).stat().st_size == 0


def test_a_store_of_a_newer_schema_is_refused(tmp_path) -> None:
    newer = _source(tmp_path / "newer")
    newest = len(MIGRATIONS) + 1
    _sql(newer, "ALTER TABLE prompts ADD COLUMN extra TEXT", f"INSERT INTO schema_migrations VALUES ({newest})")
    _refused(tmp_path, newer, "newer")


def test_a_store_with_an_unknown_column_is_refused(tmp_path) -> None:
    odd = _source(tmp_path / "odd")
    _sql(odd, "ALTER TABLE generations ADD COLUMN extra TEXT")
    _refused(tmp_path, odd, "extra")


def test_a_store_with_an_unknown_table_is_refused(tmp_path) -> None:
    odd = _source(tmp_path / "odd")
    _sql(odd, "CREATE TABLE notes (x)")
    _refused(tmp_path, odd, "notes")


# -- item 8: crafted aggregates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ("UPDATE aggregates SET value='not json' WHERE name='shard'", "shard"),
        ("UPDATE aggregates SET value='\"9/3\"' WHERE name='shard'", "9/3"),
        ("UPDATE aggregates SET value='[1, 2]' WHERE name='shard'", "shard"),
        ("INSERT INTO aggregates VALUES ('r1', 'merged_shards', '[\"0/2\"]', 0)", "merged_shards"),
        ("INSERT INTO aggregates VALUES ('r1', 'merged_shards', '{\"5/2\": \"complete\"}', 0)", "5/2"),
        ("INSERT INTO aggregates VALUES ('r1', 'merged_shards', '{\"0/2\": 7}', 0)", "merged_shards"),
        ("INSERT INTO aggregates VALUES ('ghost', 'shard', '\"0/2\"', 0)", "ghost"),
        ("INSERT INTO aggregates VALUES ('ghost', 'merged_shards', '{\"0/2\": \"complete\"}', 0)", "ghost"),
    ],
)
def test_crafted_shard_aggregates_are_refused_with_one_line(tmp_path, statement, expected) -> None:
    crafted = _source(tmp_path / "crafted", shard="0/2")
    _sql(crafted, statement)
    _refused(tmp_path, crafted, expected)


def test_leases_of_a_killed_shard_are_not_copied(tmp_path) -> None:
    source = _source(tmp_path / "a")
    store = Store.open(source)
    try:
        store.claim(["k1", "k2"], "otherhost:123:abcd", ttl_s=3600)  # a shard killed while it held leases
    finally:
        store.close()
    target = Store.open(tmp_path / "into")
    try:
        report = merge_stores(target, [source])
        assert target.conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
        assert "leases" not in report.added
    finally:
        target.close()


def test_check_sources_refuses_before_any_target_exists(tmp_path) -> None:
    with pytest.raises(StoreError, match="not a trusteval store"):
        foreign = tmp_path / "f"
        foreign.mkdir()
        _sql(foreign, "CREATE TABLE foo (x)")
        check_sources(tmp_path / "into", [foreign])
    assert not (tmp_path / "into").exists()


# -- item 15: merging the same store twice adds nothing ------------------------------------------------------


def test_merging_the_same_store_twice_adds_no_row(tmp_path) -> None:
    source = _source(tmp_path / "a", failures=2)
    assert _count(source, "generation_failures") == 2
    target = Store.open(tmp_path / "into")
    try:
        first = merge_stores(target, [source])
        assert first.added["generation_failures"] == 2 and first.added["generations"] == 2
        counts = {t: target.count(t) for t in ("generation_failures", "generations", "run_items", "prompts")}
        time.sleep(0.01)
        second = merge_stores(target, [source, source])
        assert sum(second.added.values()) == 0, second.added
        assert {t: target.count(t) for t in counts} == counts
    finally:
        target.close()


def test_shard_aggregates_are_read_from_a_valid_store(tmp_path) -> None:
    """The checks refuse only what is wrong: a valid shard store merges and names its shard."""
    source = _source(tmp_path / "a", shard="1/2")
    target = Store.open(tmp_path / "into")
    try:
        report = merge_stores(target, [source])
        assert report.runs == {"r1": {"1/2": "complete"}}
        assert json.loads(json.dumps(target.aggregate("r1", "merged_shards"))) == {"1/2": "complete"}
    finally:
        target.close()
