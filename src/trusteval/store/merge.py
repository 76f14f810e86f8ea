"""Join stores written by shards (or by separate machines) into one: `trusteval merge STORE... --into DIR`.

Every table is copied row by row with its own primary key, so merging is idempotent: a row already present is
kept, and merging the same store twice adds nothing. Generation failures have no natural key; a failure row
is copied only if no identical one is there. Run aggregates (metrics, tables) are left to the caller to
recompute over the joined rows; those describing a run's setup (scorers, data) are copied. Leases are not
copied: they belong to the processes of the source (a killed shard's would only block the target).

Sources are read-only inputs (`trusteval.store.merge_sources`): attached with `mode=ro`, checked first, never
migrated; an older store's missing columns arrive as NULL.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from trusteval.errors import StoreError
from trusteval.store.core import STORE_FILENAME, Store
from trusteval.store.merge_rows import (
    CONFLICT_COLUMNS,
    Conflicts,
    MergeConflictError,
    check_rows_at,
    find_conflicts,
    replace_conflicting_sql,
)
from trusteval.store.merge_sources import MERGED_SHARDS, shards_of, source_uri
from trusteval.store.shards import parse_shard

NOT_COPIED_AGGREGATES = ("metrics", "tables", "shard", MERGED_SHARDS)  # recomputed after a merge
SKIPPED_TABLES = {"schema_migrations", "migrations", "sqlite_sequence", "leases"}
MAX_RESIDUES = 100_000  # shards of different counts: the most residues enumerated to find the missing slices
STATUS_RANK = {"complete": 0, "running": 1, "interrupted": 2, "incomplete": 3}


@dataclass
class MergeReport:
    added: dict[str, int] = field(default_factory=dict)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)  # run id -> {shard seen: its status}
    conflicts: Conflicts = field(default_factory=Conflicts)
    replaced: dict[str, int] = field(default_factory=dict)  # --on-conflict last: rows overwritten, per table


def check_sources(into: Path, sources: list[Path]) -> list[str]:
    """Refuse before the target is created: a folder with no store, a file that is not a trusteval store (or
    is one of a newer schema), a malformed row, or the target itself. Each source's read-only URI, in order."""
    uris = []
    for folder in sources:
        path = Path(folder) / STORE_FILENAME
        if not path.is_file():
            raise StoreError(f"no store in '{folder}'")
        if path.resolve() == (Path(into) / STORE_FILENAME).resolve():
            raise StoreError(f"'{folder}' is the store being merged into")
        uris.append(source_uri(path))
        check_rows_at(uris[-1], path)
    return uris


def conflicts_of(into: Path, sources: list[Path]) -> Conflicts:
    """The conflicts among the target (when it exists) and the sources; checked before the target is opened."""
    uris = check_sources(into, sources)
    stores = [(str(folder), uri) for folder, uri in zip(sources, uris, strict=True)]
    target = Path(into) / STORE_FILENAME
    if target.is_file() and target.stat().st_size:
        stores.insert(0, (f"{into} (the target)", source_uri(target)))
    return find_conflicts(stores)


def merge_stores(
    target: Store, sources: list[Path], *, on_conflict: str = "refuse", conflicts: Conflicts | None = None
) -> MergeReport:
    """Copy every source into `target`; conflicts follow `on_conflict` (see `trusteval.store.merge_rows`).
    `conflicts`, when given, were found before the target was opened (so a refusal leaves no target)."""
    found = conflicts if conflicts is not None else conflicts_of(target.path.parent, sources)
    if found.total and on_conflict == "refuse":
        raise MergeConflictError(found)
    report = MergeReport(conflicts=found)
    uris = check_sources(target.path.parent, sources)
    for folder, uri in zip(sources, uris, strict=True):
        _merge_one(target, Path(folder) / STORE_FILENAME, uri, report, replace=on_conflict == "last")
    return report


def _attach(conn: sqlite3.Connection, path: Path, uri: str) -> None:
    """Attach the source read-only; refuse if this SQLite did not read the URI as one (it would be a new file)."""
    conn.execute("ATTACH DATABASE ? AS source", (uri,))
    attached = {row[1]: row[2] for row in conn.execute("PRAGMA database_list")}.get("source", "")
    if not attached or Path(attached).resolve() != path.resolve():
        conn.execute("DETACH DATABASE source")
        raise StoreError(f"cannot open '{path}' read-only: this SQLite does not accept file: URIs in ATTACH")


def _merge_one(target: Store, path: Path, uri: str, report: MergeReport, *, replace: bool = False) -> None:
    conn = target.conn
    _attach(conn, path, uri)
    try:
        shards = shards_of(conn, "source", path)
        known = {run_id: _known_shards(target, run_id) for run_id in shards}
        with target.transaction():
            for table in _tables(conn):
                if replace and table in CONFLICT_COLUMNS:
                    before = conn.total_changes
                    conn.execute(replace_conflicting_sql(conn, table))
                    report.replaced[table] = report.replaced.get(table, 0) + conn.total_changes - before
                before = conn.total_changes
                conn.execute(_copy_sql(conn, table))
                report.added[table] = report.added.get(table, 0) + conn.total_changes - before
            _drop_shard_from_specs(conn)
        for run_id, seen in shards.items():
            report.runs[run_id] = _union(known[run_id], seen)
            target.put_aggregate(run_id, MERGED_SHARDS, report.runs[run_id])
    except sqlite3.Error as exc:
        raise StoreError(f"cannot merge '{path}' into '{target.path}': {exc}") from exc
    finally:
        conn.execute("DETACH DATABASE source")


def _union(known: dict[str, str], seen: dict[str, str]) -> dict[str, str]:
    """A slice held twice holds the rows of both copies: it is as finished as the more finished one."""
    joined = dict(known)
    for shard, status in seen.items():
        joined[shard] = min(status, joined.get(shard, status), key=_rank)
    return joined


def _rank(status: str) -> int:
    return STATUS_RANK.get(status, 3)


def _known_shards(target: Store, run_id: str) -> dict[str, str]:
    """The shards the target holds already: merged before, or run in the target itself (so a store can be
    merged into shard by shard as the shards finish)."""
    return shards_of(target.conn, "main", target.path).get(run_id, {})


def _tables(conn: sqlite3.Connection) -> list[str]:
    names = [row[0] for row in conn.execute("SELECT name FROM source.sqlite_master WHERE type='table' ORDER BY rowid")]
    return [name for name in names if name not in SKIPPED_TABLES]


def _columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, bool]]:
    """(name, is an autoincrement id) for each column the target has."""
    rows = conn.execute(f'PRAGMA main.table_info("{table}")').fetchall()
    return [(row[1], bool(row[5]) and row[2].upper() == "INTEGER") for row in rows]


def _copy_sql(conn: sqlite3.Connection, table: str) -> str:
    columns = _columns(conn, table)
    if not columns:
        raise sqlite3.OperationalError(f"the target store has no table {table}")
    kept = [name for name, is_id in columns if not is_id]
    listing = ", ".join(f'"{c}"' for c in kept)
    present = {row[1] for row in conn.execute(f'PRAGMA source.table_info("{table}")')}  # an older store lacks some
    value = {c: f's."{c}"' if c in present else "NULL" for c in kept}
    source = f'SELECT {", ".join(value[c] for c in kept)} FROM source."{table}" AS s'
    if table == "aggregates":
        skipped = ", ".join(f"'{name}'" for name in NOT_COPIED_AGGREGATES)
        source += f" WHERE s.name NOT IN ({skipped})"
    if len(kept) < len(columns):  # an autoincrement id: copy a row only if no identical row is there
        same = " AND ".join(f't."{c}" IS {value[c]}' for c in kept)
        source += f' WHERE NOT EXISTS (SELECT 1 FROM main."{table}" AS t WHERE {same})'
    return f'INSERT OR IGNORE INTO main."{table}" ({listing}) {source}'


def _drop_shard_from_specs(conn: sqlite3.Connection) -> None:
    conn.execute(
        "UPDATE main.runs SET spec = json_remove(spec, '$.shard') WHERE json_extract(spec, '$.shard') IS NOT NULL"
    )


def run_datasets(target: Store, run_id: str) -> list[str]:
    """The dataset versions a run's rows come from: more than one when its shards read different data files."""
    rows = target.conn.execute("SELECT DISTINCT dataset FROM run_items WHERE run_id=? ORDER BY dataset", (run_id,))
    return [row[0] for row in rows]


def merged_status(shards: dict[str, str]) -> str:
    """A run joined from shards is only as finished as its least finished part, and incomplete while any
    shard is missing."""
    if "" in shards:  # the whole run: every slice's rows are there
        return shards[""]
    if missing_shards(set(shards)):
        return "incomplete"
    return max(shards.values(), key=_rank)


def missing_shards(shards: set[str]) -> list[str]:
    """The 'i/n' slices not covered by `shards` (empty when a whole run was merged).

    Shards of different counts are compared modulo the least common multiple L of the counts: shard i/n holds
    the keys whose residue r mod L has r % n == i, so the uncovered residues r are the missing slices 'r/L'
    (each one a valid --shard). With one count this is simply the indexes not seen.
    """
    if "" in shards or not shards:
        return []
    parsed = {parse_shard(s) for s in shards}
    total = math.lcm(*(count for _, count in parsed))
    if total > MAX_RESIDUES:  # too fine to enumerate: list each count's own missing indexes
        return sorted({f"{i}/{n}" for _, n in parsed for i in range(n) if (i, n) not in parsed})
    return [f"{r}/{total}" for r in range(total) if not any(r % n == i for i, n in parsed)]
