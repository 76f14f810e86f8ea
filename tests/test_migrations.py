"""Named migrations: a store of every earlier schema opens and is brought up to date, recorded by name."""

from __future__ import annotations

import sqlite3

import pytest

from trusteval.errors import StoreError
from trusteval.store import STORE_FILENAME, Store
from trusteval.store import migrations as schema
from trusteval.store.merge_sources import check_source, known_schema


def _legacy_store(folder, versions: int) -> None:
    """A store as trusteval wrote it before migrations had names: the first `versions` steps, recorded by number
    in schema_migrations only (0: an empty database file)."""
    folder.mkdir()
    conn = sqlite3.connect(folder / STORE_FILENAME)
    if versions:
        conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)")
        for version in range(1, versions + 1):
            schema.MIGRATIONS[version - 1](conn)
            conn.execute("INSERT INTO schema_migrations VALUES (?)", (version,))
        conn.execute("INSERT INTO runs VALUES ('r', 0, 0, 'b', 'd', '{}', 'complete')")
    conn.commit()
    conn.close()


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


@pytest.mark.parametrize("versions", range(len(schema.LEGACY_NAMES) + 1))
def test_a_store_of_every_earlier_schema_opens_up_to_date(tmp_path, versions) -> None:
    _legacy_store(tmp_path / "s", versions)
    Store.open(tmp_path / "s").close()
    conn = sqlite3.connect(tmp_path / "s" / STORE_FILENAME)
    try:
        names = [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
        assert names == list(schema.MIGRATION_NAMES)
        assert [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")] == list(
            range(1, len(schema.MIGRATIONS) + 1)
        )
        assert "source_id" in _columns(conn, "prompts") and _columns(conn, "leases")
        runs = [row[0] for row in conn.execute("SELECT run_id FROM runs")]
        assert runs == (["r"] if versions else [])  # nothing stored is lost
        check_source(conn, tmp_path / "s")  # and it reads as a store of this version's schema
    finally:
        conn.close()
    assert set(known_schema()) >= {"runs", "migrations", "schema_migrations", "leases"}


def test_a_migration_is_a_function_run_once_and_sql_is_never_split(tmp_path, monkeypatch) -> None:
    calls: list[str] = []

    def m004_note_with_a_semicolon(conn: sqlite3.Connection) -> None:
        calls.append("m004")
        conn.execute("CREATE TABLE notes (text TEXT DEFAULT 'a; b')")
        conn.execute("INSERT INTO notes DEFAULT VALUES")

    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, m004_note_with_a_semicolon))
    Store.open(tmp_path).close()
    Store.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / STORE_FILENAME)
    try:
        assert [row[0] for row in conn.execute("SELECT text FROM notes")] == ["a; b"]
        assert ("m004_note_with_a_semicolon",) in set(conn.execute("SELECT name FROM migrations"))
    finally:
        conn.close()
    assert calls == ["m004"]


def test_a_store_with_a_migration_this_version_does_not_know_is_newer(tmp_path) -> None:
    Store.open(tmp_path).close()
    conn = sqlite3.connect(tmp_path / STORE_FILENAME)
    try:
        conn.execute("INSERT INTO migrations VALUES ('m099_from_the_future', 0)")
        with pytest.raises(StoreError, match=r"newer trusteval \(migration 'm099_from_the_future'"):
            check_source(conn, tmp_path)
    finally:
        conn.close()
