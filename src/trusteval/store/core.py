"""The store: one SQLite file (WAL mode) in a workspace folder, and the only module that writes rows.

Rows are keyed by content hashes, so writing a row twice is a no-op and a killed run resumes by skipping the
keys already present. Every write is its own short transaction: a process killed at any moment loses at most
the work in flight. Schema changes are append-only migrations (store/migrations.py). Every answer, failure
reason and score detail passes through `trusteval.untrusted.answers` on its way in: capped, valid Unicode,
secrets redacted.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any, TypeVar

from trusteval.errors import StoreError
from trusteval.records import (
    Generation,
    Prompt,
    Request,
    Score,
    canonical_json,
    messages_json,
    object_json,
    text_subject,
)
from trusteval.store.migrations import MIGRATIONS as MIGRATIONS  # re-exported
from trusteval.store.migrations import apply_migrations
from trusteval.store.reads import StoreReads
from trusteval.store.rows import PROMPT_COLUMNS, RowDigest, batched, prompt_row
from trusteval.store.rows import RunItem as RunItem  # re-exported: readers import it from here
from trusteval.untrusted.answers import safe_generation, safe_score

STORE_FILENAME = "trusteval.sqlite"
BUSY_TIMEOUT_MS = 60_000
WRITE_CHUNK = 10_000  # rows encoded and written at a time: bounds memory, not transactions
BULK_CACHE_KIB = 32_768  # SQLite's page cache while `begin_run` writes: 100,000 rows took 17% less CPU than at 2 MB
T = TypeVar("T")

DISK_FULL_HINT = "the disk is full; free space and run the same command again (nothing stored is lost)"
NOT_WRITABLE_HINT = "the store is not writable; fix its permissions or pass another --store"


def _hint(message: str) -> str:
    """What to do about an SQLite error, or the message itself when there is nothing to add."""
    lowered = message.lower()
    if "full" in lowered:
        return DISK_FULL_HINT
    if "readonly" in lowered or "read-only" in lowered:
        return NOT_WRITABLE_HINT
    return message


def _open_failure(folder: Path, exc: BaseException) -> str:
    """SQLite says only 'unable to open database file' when it cannot create its -wal/-shm files."""
    path = folder / STORE_FILENAME
    not_writable = not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK))
    if not_writable or isinstance(exc, PermissionError):
        return NOT_WRITABLE_HINT
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return DISK_FULL_HINT
    return _hint(str(exc))


def _content_keys(remembered: int = 1024) -> Callable[[Prompt], str]:
    """Prompt.content_key, remembered for the last `remembered` prompts asked: a prompt's items follow one
    another (its variants and seeds), so this hashes each prompt about once per model, in bounded memory."""
    keys: dict[int, tuple[Prompt, str]] = {}  # the prompt is kept too: its id() is not reused while remembered

    def key_of(prompt: Prompt) -> str:
        found = keys.get(id(prompt))
        if found is None or found[0] is not prompt:
            if len(keys) >= remembered:
                keys.clear()
            found = keys[id(prompt)] = (prompt, prompt.content_key)
        return found[1]

    return key_of


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    message = str(exc).lower()
    return "locked" in message or "busy" in message


def _retry_while_locked(action: Callable[[], T], attempts: int = 20) -> T:
    """`action`, tried again with a growing pause (up to about 30 s in all) while another process holds a lock."""
    for attempt in range(attempts):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc) or attempt == attempts - 1:
                raise
            time.sleep(min(0.05 * 2**attempt, 2.0))
    raise AssertionError("unreachable")


def _cannot_share(exc: sqlite3.Error) -> bool:
    """Whether a `mode=ro` read failed because SQLite cannot make or write the store's -shm file (a read-only
    folder or mount): the one case for an `immutable=1` read, which ignores locks and the WAL. On a store that
    another process is writing (a run creating it: 'no such table'), it read half-written pages ('database disk
    image is malformed') or missed rows still in the WAL."""
    name = getattr(exc, "sqlite_errorname", "")  # Python >= 3.11
    message = str(exc).lower()
    return (
        name.startswith(("SQLITE_CANTOPEN", "SQLITE_READONLY")) or "unable to open" in message or "readonly" in message
    )


class Store(StoreReads):
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path

    @classmethod
    def open(cls, folder: str | Path) -> Store:
        folder = Path(folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / STORE_FILENAME
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # SQLite answers SQLITE_BUSY at once, without its busy handler, when two connections switch a new
            # file to WAL together: two runs started at once on a new store would fail here without a retry.
            _retry_while_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"))
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the store in '{folder}': {_open_failure(folder, exc)}") from exc
        store = cls(conn, path)
        try:
            store._migrate()
        except BaseException:
            conn.close()
            raise
        return store

    @classmethod
    def open_read_only(cls, folder: str | Path) -> Store:
        """An existing store for reading (report, export): works on a read-only file or folder too."""
        path = Path(folder) / STORE_FILENAME
        if not path.is_file():
            raise StoreError(f"no store in '{folder}'")
        for query in ("mode=ro", "immutable=1"):
            try:
                conn = sqlite3.connect(
                    f"{path.resolve().as_uri()}?{query}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None
                )
                conn.row_factory = sqlite3.Row
                conn.execute("SELECT COUNT(*) FROM runs").fetchone()
                return cls(conn, path)
            except sqlite3.Error as exc:
                failure = exc
                conn.close()
                if not _cannot_share(exc):
                    break
        raise StoreError(f"cannot read the store '{path}': {failure}")

    def close(self) -> None:
        self.conn.close()

    # -- transactions -------------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, retried while another process holds the write lock."""
        self._with_retry(lambda: self.conn.execute("BEGIN IMMEDIATE"))
        try:
            yield self.conn
            self._with_retry(lambda: self.conn.execute("COMMIT"))
        except BaseException:
            # SQLite has already rolled back after some errors (a full disk); the original error is what counts.
            if self.conn.in_transaction:
                with suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            raise

    def _with_retry(self, action: Callable[[], T]) -> T:
        try:
            return _retry_while_locked(action)
        except sqlite3.OperationalError as exc:
            raise self._store_error(exc) from exc

    def _store_error(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"store '{self.path}': {_hint(str(exc))}")

    def _write(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if not rows:
            return
        try:
            with self.transaction() as conn:
                conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            raise self._store_error(exc) from exc

    def _migrate(self) -> None:
        try:
            with self.transaction() as conn:
                apply_migrations(conn)
        except sqlite3.DatabaseError as exc:
            if _hint(str(exc)) != str(exc):
                raise self._store_error(exc) from exc
            raise StoreError(f"'{self.path}' is not a usable trusteval store: {exc}") from exc

    # -- runs ---------------------------------------------------------------------------------------------

    def begin_run(
        self,
        run_id: str,
        *,
        benchmark: str,
        dataset: str,
        spec: dict[str, Any],
        prompts: Iterable[Prompt],
        items: Iterable[tuple[Request, str, Prompt, dict[str, Any]]],
        replaces: Callable[[str], bool] | None = None,
    ) -> None:
        """Record a run and its planned requests in one transaction: a run is all there or not at all.

        `items` are (request, model spec as the user wrote it, prompt, variant) tuples, re-iterable (a plan
        builds them again on every pass): they are read once when the run has no stored items, twice when it
        has (to compare them), and written in chunks of WRITE_CHUNK rows, so a run's rows are never all held.
        Running the same run again replaces its stored items (those whose request key `replaces` accepts: a
        shard replaces only its own slice), so a run always reflects the data it last planned (an edited data
        file gives other prompt versions) and its spec as last written (the same run id means the same work;
        only operational options can differ); stored prompts, answers and scores are never overwritten.
        """
        now = time.time()
        stored = self.count_run_items(run_id)
        resumed, asked = self._resumes(run_id, items, replaces)
        try:
            with self._bulk_cache(), self.transaction() as conn:
                if self.count_run_items(run_id) != stored:  # another process recorded this run meanwhile
                    resumed, asked = self._resumes(run_id, items, replaces)
                conn.execute(
                    "INSERT INTO runs VALUES (?,?,?,?,?,?,?) ON CONFLICT(run_id) DO UPDATE SET"
                    " updated_at=excluded.updated_at, status='running', spec=excluded.spec, dataset=excluded.dataset",
                    (run_id, now, now, benchmark, dataset, canonical_json(spec), "running"),
                )
                unasked = (p for p in prompts if id(p) not in asked)  # asked ones are stored with the items
                for chunk in batched(unasked, WRITE_CHUNK):
                    conn.executemany(f"INSERT OR IGNORE INTO prompts ({PROMPT_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                                     [prompt_row(p, p.content_key) for p in chunk])  # fmt: skip
                if not resumed:
                    self._drop_items(run_id, replaces)
                    for chunk in batched(items, WRITE_CHUNK):
                        self._insert_items(run_id, chunk, _content_keys())
        except sqlite3.Error as exc:
            raise self._store_error(exc) from exc

    @contextmanager
    def _bulk_cache(self) -> Iterator[None]:
        """A larger SQLite page cache while a run's rows are written (their keys are hashes, so the inserts land
        all over the indexes: 2 MB, the default, was read again and again), then the size it had."""
        previous = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA cache_size = {int(previous)}")

    def _resumes(
        self,
        run_id: str,
        items: Iterable[tuple[Request, str, Prompt, dict[str, Any]]],
        replaces: Callable[[str], bool] | None,
    ) -> tuple[bool, set[int]]:
        """Whether the run's stored items (this shard's slice) are the planned ones, and then the id() of
        every prompt they ask (stored already: hashing them again is most of a rerun's planning cost). The
        items' prompts are objects of the run's `prompts`, alive throughout, so their id()s stay theirs."""
        recorded = self._items_digest(run_id, replaces)
        if recorded.count == 0:  # a first run: nothing to compare, no pass over the items
            return False, set()
        planned, asked, key_of = RowDigest(), set(), _content_keys()
        for request, model, prompt, _ in items:
            planned.add(request.key, model, key_of(prompt))
            asked.add(id(prompt))
        return (True, asked) if recorded == planned else (False, set())

    def _insert_items(
        self,
        run_id: str,
        chunk: Sequence[tuple[Request, str, Prompt, dict[str, Any]]],
        key_of: Callable[[Prompt], str],
    ) -> None:
        request_rows = [(r.key, r.model, messages_json(r.messages), r.params.json(), r.seed) for r, _, _, _ in chunk]
        self.conn.executemany("INSERT OR IGNORE INTO requests VALUES (?,?,?,?,?)", request_rows)
        item_rows = [
            (run_id, r.key, model, r.seed, prompt.dataset, key_of(prompt), object_json(variant))
            for r, model, prompt, variant in chunk
        ]
        self.conn.executemany("INSERT OR IGNORE INTO run_items VALUES (?,?,?,?,?,?,?)", item_rows)

    def _items_digest(self, run_id: str, replaces: Callable[[str], bool] | None) -> RowDigest:
        digest = RowDigest()
        rows = self.conn.execute("SELECT request_key, model, prompt_id FROM run_items WHERE run_id=?", (run_id,))
        for key, model, prompt_id in rows:
            if replaces is None or replaces(key):
                digest.add(key, model, prompt_id)
        return digest

    def _drop_items(self, run_id: str, replaces: Callable[[str], bool] | None) -> None:
        if replaces is None:
            self.conn.execute("DELETE FROM run_items WHERE run_id = ?", (run_id,))
            return
        stored = self.conn.execute("SELECT request_key FROM run_items WHERE run_id = ?", (run_id,)).fetchall()
        stale = [(run_id, key) for (key,) in stored if replaces(key)]
        self.conn.executemany("DELETE FROM run_items WHERE run_id = ? AND request_key = ?", stale)

    def finish_run(self, run_id: str, status: str) -> None:
        self._write("UPDATE runs SET status=?, updated_at=? WHERE run_id=?", [(status, time.time(), run_id)])

    def run_info(self, run_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        info = dict(row)
        info["spec"] = json.loads(info["spec"])
        return info

    def runs(self) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT r.run_id, r.benchmark, r.dataset, r.status, r.created_at, r.updated_at,"
            " (SELECT COUNT(*) FROM run_items i WHERE i.run_id = r.run_id) AS items"
            " FROM runs r ORDER BY r.updated_at DESC"
        )
        return [dict(row) for row in rows]

    def latest_run_id(self) -> str | None:
        row = self.conn.execute("SELECT run_id FROM runs ORDER BY updated_at DESC LIMIT 1").fetchone()
        return row[0] if row else None

    # -- generations --------------------------------------------------------------------------------------

    def stored_generation_keys(self, keys: Iterable[str]) -> set[str]:
        return self._existing("SELECT key FROM generations WHERE key IN ({})", keys)

    def add_generations(self, generations: Iterable[Generation], *, lease_owner: str | None = None) -> None:
        """Store answers and failures; with `lease_owner`, end that owner's leases on them in the same write."""
        generations = list(generations)
        now = time.time()
        done, failed = [], []
        for g in map(safe_generation, generations):
            if g.ok:
                done.append(
                    (
                        g.key,
                        g.text,
                        text_subject(g.text or ""),
                        g.finish_reason,
                        g.latency_s,
                        g.prompt_tokens,
                        g.completion_tokens,
                        g.retries,
                        now,
                    )
                )
            else:
                failed.append((g.key, g.error or "unknown error", g.retries, now))
        try:
            with self.transaction() as conn:
                conn.executemany("INSERT OR IGNORE INTO generations VALUES (?,?,?,?,?,?,?,?,?)", done)
                conn.executemany(
                    "INSERT INTO generation_failures (key, error, retries, created_at) VALUES (?,?,?,?)",
                    failed,
                )
                if lease_owner is not None:
                    conn.executemany(
                        "DELETE FROM leases WHERE key=? AND owner=?", [(g.key, lease_owner) for g in generations]
                    )
        except sqlite3.Error as exc:
            raise self._store_error(exc) from exc

    # -- leases: which process is answering which request -------------------------------------------------

    def claim(self, keys: Sequence[str], owner: str, ttl_s: float) -> set[str]:
        """Lease the keys nobody else holds (or whose lease ran out) to `owner`; the keys it now holds."""
        now = time.time()
        self._write(
            "INSERT INTO leases VALUES (?,?,?) ON CONFLICT(key) DO UPDATE SET owner=excluded.owner,"
            " expires_at=excluded.expires_at WHERE leases.expires_at < ? OR leases.owner = excluded.owner",
            [(key, owner, now + ttl_s, now) for key in keys],
        )
        return self._existing("SELECT key FROM leases WHERE owner=? AND key IN ({})", keys, owner)

    def renew_leases(self, owner: str, ttl_s: float) -> None:
        self._write("UPDATE leases SET expires_at=? WHERE owner=?", [(time.time() + ttl_s, owner)])

    def release(self, keys: Sequence[str], owner: str) -> None:
        self._write("DELETE FROM leases WHERE key=? AND owner=?", [(key, owner) for key in keys])

    # -- scores -------------------------------------------------------------------------------------------

    def register_scorer(self, scorer_id: str, info: dict[str, Any]) -> None:
        self._write(
            "INSERT INTO scorers VALUES (?,?) ON CONFLICT(scorer) DO UPDATE SET info=excluded.info",
            [(scorer_id, canonical_json(info))],
        )

    def scorer_info(self, scorer_id: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT info FROM scorers WHERE scorer=?", (scorer_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def scored_subjects(self, scorer_id: str, subjects: Iterable[str]) -> set[str]:
        """Subjects that already have a final score (ok or unparsed); errors are scored again."""
        return self._existing(
            "SELECT subject FROM scores WHERE scorer=? AND status != 'error' AND subject IN ({})",
            subjects,
            scorer_id,
        )

    def add_scores(self, scores: Iterable[Score]) -> None:
        now = time.time()
        self._write(
            "INSERT INTO scores VALUES (?,?,?,?,?,?,?) ON CONFLICT(subject, scorer) DO UPDATE SET"
            " value=excluded.value, status=excluded.status, label=excluded.label, detail=excluded.detail,"
            " created_at=excluded.created_at WHERE scores.status = 'error'",
            [(s.subject, s.scorer, s.value, s.status, s.label, s.detail, now) for s in map(safe_score, scores)],
        )

    # -- aggregates ---------------------------------------------------------------------------------------

    def put_aggregate(self, run_id: str, name: str, value: Any) -> None:
        self._write(
            "INSERT INTO aggregates VALUES (?,?,?,?) ON CONFLICT(run_id, name) DO UPDATE SET"
            " value=excluded.value, created_at=excluded.created_at",
            [(run_id, name, canonical_json(value), time.time())],
        )

    def aggregate(self, run_id: str, name: str) -> Any | None:
        row = self.conn.execute("SELECT value FROM aggregates WHERE run_id=? AND name=?", (run_id, name)).fetchone()
        return json.loads(row[0]) if row else None

    def count(self, table: str) -> int:
        if table not in {"generations", "scores", "run_items", "requests", "prompts", "generation_failures"}:
            raise ValueError(table)
        return self.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
