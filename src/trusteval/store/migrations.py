"""The store's schema: append-only migrations, applied in order, each once (recorded in `schema_migrations`).

A schema change is a new script at the end of MIGRATIONS, never an edit of an old one: a store written by any
earlier version opens and is brought up to date (the shape of simonw/llm's plain migrations).
"""

from __future__ import annotations

import sqlite3

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        benchmark TEXT NOT NULL,
        dataset TEXT NOT NULL,
        spec TEXT NOT NULL,
        status TEXT NOT NULL
    );
    CREATE TABLE prompts (
        dataset TEXT NOT NULL,
        prompt_id TEXT NOT NULL,
        text TEXT NOT NULL,
        lang TEXT NOT NULL,
        label INTEGER,
        category TEXT,
        attributes TEXT NOT NULL,
        subject TEXT NOT NULL,
        PRIMARY KEY (dataset, prompt_id)
    );
    CREATE TABLE requests (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        params TEXT NOT NULL,
        seed INTEGER NOT NULL
    );
    CREATE TABLE run_items (
        run_id TEXT NOT NULL REFERENCES runs(run_id),
        request_key TEXT NOT NULL REFERENCES requests(key),
        model TEXT NOT NULL,
        seed INTEGER NOT NULL,
        dataset TEXT NOT NULL,
        prompt_id TEXT NOT NULL,
        variant TEXT NOT NULL,
        PRIMARY KEY (run_id, request_key)
    );
    CREATE TABLE generations (
        key TEXT PRIMARY KEY,
        text TEXT NOT NULL,
        subject TEXT NOT NULL,
        finish_reason TEXT,
        latency_s REAL,
        prompt_tokens INTEGER,
        completion_tokens INTEGER,
        retries INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    CREATE TABLE generation_failures (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        key TEXT NOT NULL,
        error TEXT NOT NULL,
        retries INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL
    );
    CREATE INDEX generation_failures_key ON generation_failures(key);
    CREATE TABLE scores (
        subject TEXT NOT NULL,
        scorer TEXT NOT NULL,
        value REAL,
        status TEXT NOT NULL,
        label TEXT,
        detail TEXT,
        created_at REAL NOT NULL,
        PRIMARY KEY (subject, scorer)
    );
    CREATE TABLE scorers (
        scorer TEXT PRIMARY KEY,
        info TEXT NOT NULL
    );
    CREATE TABLE aggregates (
        run_id TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    """,
    """
    CREATE TABLE leases (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    # Prompts are stored under a content-versioned id (Prompt.content_key); source_id keeps the dataset's own
    # id. Rows written before this migration have source_id NULL: their prompt_id is the dataset's id.
    """
    ALTER TABLE prompts ADD COLUMN source_id TEXT;
    """,
)


def apply_migrations(conn: sqlite3.Connection) -> None:
    """Run the migrations `conn`'s store has not had yet, inside the caller's transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)")
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    for version, script in enumerate(MIGRATIONS, start=1):
        if version in done:
            continue
        for statement in filter(str.strip, script.split(";")):
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations (version) VALUES (?)", (version,))
