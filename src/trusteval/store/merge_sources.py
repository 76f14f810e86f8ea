"""The stores `trusteval merge` reads: opened read-only and checked before anything is written anywhere.

A source is an input: it is never opened for writing (which would migrate it, and checkpoint its WAL into the
file). A file that is not a trusteval store (empty, a foreign SQLite file), one of a newer schema than this
version knows, one with a table or column this version does not know (it would be dropped silently), and one
whose shard aggregates are malformed are refused with one line naming the file.
"""

from __future__ import annotations

import json
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

from trusteval.errors import StoreError
from trusteval.store.migrations import (
    MIGRATION_NAMES,
    MIGRATIONS,
    applied_names,
    apply_migrations,
    newest_legacy_version,
)
from trusteval.store.shards import parse_shard

INTERNAL_TABLES = {"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"}
SHARD = "shard"
MERGED_SHARDS = "merged_shards"  # run id -> {shard ("" for a whole run): its status}, kept in the target


@cache
def known_schema() -> dict[str, frozenset[str]]:
    """Every table this version's migrations create, with its columns."""
    conn = sqlite3.connect(":memory:")
    try:
        apply_migrations(conn)
        return _schema(conn)
    finally:
        conn.close()


def _schema(conn: sqlite3.Connection) -> dict[str, frozenset[str]]:
    tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    return {
        name: frozenset(row[1] for row in conn.execute(f'PRAGMA table_info("{name}")'))
        for name in tables
        if name not in INTERNAL_TABLES
    }


def source_uri(path: Path) -> str:
    """A read-only URI for the store file at `path`, checked: a StoreError names the file and what is wrong."""
    if path.stat().st_size == 0:
        raise StoreError(f"'{path}' is not a trusteval store: the file is empty")
    failure: sqlite3.Error | None = None
    for query in _queries(path):
        uri = f"{path.resolve().as_uri()}?{query}"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        except sqlite3.Error as exc:
            failure = exc
            continue
        try:
            check_source(conn, path)
            return uri
        except sqlite3.Error as exc:
            failure = exc
            if "readonly" not in str(exc).lower() and "unable to open" not in str(exc).lower():
                break
        finally:
            conn.close()
    raise StoreError(f"'{path}' is not a trusteval store: {failure}")


def _queries(path: Path) -> tuple[str, ...]:
    """How to open a source read-only. With no -wal file beside it, no process is writing it and nothing is
    pending: `immutable=1` reads the file alone and creates nothing beside it (no -wal, no -shm). With one
    (a run still writing, or killed before it checkpointed), `mode=ro` reads the rows in the WAL too; in a
    read-only folder, where SQLite cannot make the -shm file, `immutable=1` is the fallback."""
    if Path(f"{path}-wal").exists():
        return ("mode=ro", "mode=ro&immutable=1")
    return ("mode=ro&immutable=1",)


def check_source(conn: sqlite3.Connection, path: Path) -> None:
    tables = _schema(conn)
    if "schema_migrations" not in tables or "runs" not in tables:
        raise StoreError(f"'{path}' is not a trusteval store: it has no trusteval tables")
    newest = newest_legacy_version(conn)
    unknown = sorted(applied_names(conn) - set(MIGRATION_NAMES))
    if newest > len(MIGRATIONS) or unknown:
        which = f"migration '{unknown[0]}'" if unknown else f"schema version {newest}"
        raise StoreError(
            f"'{path}' was written by a newer trusteval ({which}; this version knows {len(MIGRATIONS)} "
            f"migrations, up to '{MIGRATION_NAMES[-1]}'): merge it with that version"
        )
    known = known_schema()
    for table, columns in sorted(tables.items()):
        if table not in known:
            raise StoreError(f"'{path}' has a table this trusteval does not know: '{table}' (a newer version?)")
        extra = sorted(columns - known[table])
        if extra:
            raise StoreError(f"'{path}' has a column this trusteval does not know: '{table}.{extra[0]}'")
    shards_of(conn, "main", path)  # malformed shard aggregates are refused before anything is written


def shards_of(conn: sqlite3.Connection, schema: str, path: Path) -> dict[str, dict[str, str]]:
    """The shards each run of a store holds, with their status; a merged store names the shards it joined."""
    runs = {run_id: {"": status} for run_id, status in conn.execute(f"SELECT run_id, status FROM {schema}.runs")}
    for run_id, name, value in conn.execute(
        f"SELECT run_id, name, value FROM {schema}.aggregates WHERE name IN ('{SHARD}', '{MERGED_SHARDS}')"
        " ORDER BY name DESC"  # a store that ran a shard and was merged into: its merged_shards come last
    ):
        where = f"'{path}': aggregate '{name}' of run '{run_id}'"
        if run_id not in runs:
            raise StoreError(f"{where}: the run is not in the store's runs table")
        if name == SHARD:
            runs[run_id] = {_shard(_json(value, where), where): runs[run_id][""]}
        else:
            runs[run_id] = _merged_shards(_json(value, where), where)
    return runs


def _json(value: Any, where: str) -> Any:
    try:
        return json.loads(value)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{where} is not JSON: {exc}") from exc


def _shard(value: Any, where: str) -> str:
    if value == "":
        return value  # a whole run
    if not isinstance(value, str):
        raise StoreError(f'{where} must be a string such as "0/4", not {type(value).__name__}')
    try:
        parse_shard(value)
    except ValueError as exc:
        raise StoreError(f"{where} is not a valid shard {value!r}: {exc}") from exc
    return value


def _merged_shards(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise StoreError(f"{where} must be an object of shard: status, not {type(value).__name__}")
    for shard, status in value.items():
        _shard(shard, where)
        if not isinstance(status, str):
            raise StoreError(f"{where}: the status of shard {shard!r} must be a string, not {type(status).__name__}")
    return value
