"""Read-only checks on a store file, from outside the process that wrote it."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

STORE_FILE = "trusteval.sqlite"


def connect_ro(store: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{store / STORE_FILE}?mode=ro", uri=True, timeout=30)


def query(store: Path, sql: str, *params: object) -> list[tuple]:
    with closing(connect_ro(store)) as conn:
        return conn.execute(sql, params).fetchall()


def scalar(store: Path, sql: str, *params: object):
    return query(store, sql, *params)[0][0]


def integrity(store: Path) -> str:
    return scalar(store, "PRAGMA integrity_check")


def runs_count(store: Path) -> int:
    if not (store / STORE_FILE).exists():
        return 0
    return scalar(store, "SELECT COUNT(*) FROM runs")


def duplicates(store: Path) -> dict[str, int]:
    """Rows that repeat a key that must be unique (0 everywhere in a sound store)."""
    checks = {
        "generations": "SELECT COUNT(*) - COUNT(DISTINCT key) FROM generations",
        "scores": "SELECT COUNT(*) - COUNT(DISTINCT subject || '|' || scorer) FROM scores",
        "run_items": "SELECT COUNT(*) - COUNT(DISTINCT run_id || '|' || request_key) FROM run_items",
        "requests": "SELECT COUNT(*) - COUNT(DISTINCT key) FROM requests",
    }
    return {table: scalar(store, sql) for table, sql in checks.items()}


def unanswered_without_reason(store: Path, run_id: str) -> int:
    """Run items with neither a stored answer nor a recorded failure reason: requests lost."""
    return scalar(
        store,
        "SELECT COUNT(*) FROM run_items i WHERE i.run_id = ?"
        " AND NOT EXISTS (SELECT 1 FROM generations g WHERE g.key = i.request_key)"
        " AND NOT EXISTS (SELECT 1 FROM generation_failures f WHERE f.key = i.request_key AND f.error != '')",
        run_id,
    )
