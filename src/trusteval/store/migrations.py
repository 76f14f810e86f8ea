"""The store's schema: named migrations, applied in order, each once (the shape of simonw/llm's migrations).

A schema change is a new function at the end of MIGRATIONS, never an edit of an old one: a store written by any
earlier version opens and is brought up to date. Each migration is recorded by its function's name in
`migrations`; a function runs each statement with its own `execute`, so no SQL text is ever split (a `;` inside a
string literal is safe) and a migration may compute in Python.

Stores written before migrations had names recorded versions 1-3 in `schema_migrations`; those versions are the
first three names (LEGACY_NAMES). Every migration also still records its position there, so an earlier
trusteval, which reads only that table, sees a store of a newer schema as newer.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

Migration = Callable[[sqlite3.Connection], None]


def _execute_each(conn: sqlite3.Connection, statements: Sequence[str]) -> None:
    for statement in statements:
        conn.execute(statement)


def m001_runs_prompts_requests_answers_scores(conn: sqlite3.Connection) -> None:
    _execute_each(
        conn,
        (
            """CREATE TABLE runs (
                    run_id TEXT PRIMARY KEY,
                    created_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    benchmark TEXT NOT NULL,
                    dataset TEXT NOT NULL,
                    spec TEXT NOT NULL,
                    status TEXT NOT NULL
                )""",
            """CREATE TABLE prompts (
                    dataset TEXT NOT NULL,
                    prompt_id TEXT NOT NULL,
                    text TEXT NOT NULL,
                    lang TEXT NOT NULL,
                    label INTEGER,
                    category TEXT,
                    attributes TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    PRIMARY KEY (dataset, prompt_id)
                )""",
            """CREATE TABLE requests (
                    key TEXT PRIMARY KEY,
                    model TEXT NOT NULL,
                    messages TEXT NOT NULL,
                    params TEXT NOT NULL,
                    seed INTEGER NOT NULL
                )""",
            """CREATE TABLE run_items (
                    run_id TEXT NOT NULL REFERENCES runs(run_id),
                    request_key TEXT NOT NULL REFERENCES requests(key),
                    model TEXT NOT NULL,
                    seed INTEGER NOT NULL,
                    dataset TEXT NOT NULL,
                    prompt_id TEXT NOT NULL,
                    variant TEXT NOT NULL,
                    PRIMARY KEY (run_id, request_key)
                )""",
            """CREATE TABLE generations (
                    key TEXT PRIMARY KEY,
                    text TEXT NOT NULL,
                    subject TEXT NOT NULL,
                    finish_reason TEXT,
                    latency_s REAL,
                    prompt_tokens INTEGER,
                    completion_tokens INTEGER,
                    retries INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL
                )""",
            """CREATE TABLE generation_failures (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    key TEXT NOT NULL,
                    error TEXT NOT NULL,
                    retries INTEGER NOT NULL DEFAULT 0,
                    created_at REAL NOT NULL
                )""",
            """CREATE INDEX generation_failures_key ON generation_failures(key)""",
            """CREATE TABLE scores (
                    subject TEXT NOT NULL,
                    scorer TEXT NOT NULL,
                    value REAL,
                    status TEXT NOT NULL,
                    label TEXT,
                    detail TEXT,
                    created_at REAL NOT NULL,
                    PRIMARY KEY (subject, scorer)
                )""",
            """CREATE TABLE scorers (
                    scorer TEXT PRIMARY KEY,
                    info TEXT NOT NULL
                )""",
            """CREATE TABLE aggregates (
                    run_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    value TEXT NOT NULL,
                    created_at REAL NOT NULL,
                    PRIMARY KEY (run_id, name)
                )""",
        ),
    )


def m002_leases(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)")


def m003_prompts_source_id(conn: sqlite3.Connection) -> None:
    # Prompts are stored under a content-versioned id (Prompt.content_key); source_id keeps the dataset's own
    # id. Rows written before this migration have source_id NULL: their prompt_id is the dataset's id.
    conn.execute("ALTER TABLE prompts ADD COLUMN source_id TEXT")


MIGRATIONS: tuple[Migration, ...] = (
    m001_runs_prompts_requests_answers_scores,
    m002_leases,
    m003_prompts_source_id,
)
MIGRATION_NAMES: tuple[str, ...] = tuple(m.__name__ for m in MIGRATIONS)
# what schema_migrations' versions 1-3 meant before migrations had names; never grows
LEGACY_NAMES: tuple[str, ...] = MIGRATION_NAMES[:3]


def applied_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the migrations `conn`'s store has had, legacy version numbers read as their names."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    names: set[str] = set()
    if "migrations" in tables:
        names |= {row[0] for row in conn.execute("SELECT name FROM migrations")}
    if "schema_migrations" in tables:
        versions = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        names |= {name for version, name in enumerate(LEGACY_NAMES, start=1) if version in versions}
    return names


def newest_legacy_version(conn: sqlite3.Connection) -> int:
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations")]
    return max((v for v in versions if isinstance(v, int)), default=0)


def apply_migrations(conn: sqlite3.Connection) -> None:
    """Run the migrations `conn`'s store has not had yet, inside the caller's transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    done = applied_names(conn)
    for version, migrate in enumerate(MIGRATIONS, start=1):
        if migrate.__name__ not in done:
            migrate(conn)
        conn.execute(
            "INSERT OR IGNORE INTO migrations (name, applied_at) VALUES (?, ?)", (migrate.__name__, time.time())
        )
        conn.execute("INSERT OR IGNORE INTO schema_migrations (version) VALUES (?)", (version,))
