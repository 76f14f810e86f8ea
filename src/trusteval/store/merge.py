"""Join stores written by shards (or by separate machines) into one: `trusteval merge STORE... --into DIR`.

Every table is copied row by row with its own primary key, so merging is idempotent: a row already present is
kept, and merging the same store twice adds nothing. Generation failures have no natural key; a failure row
is copied only if no identical one is there. Run aggregates (metrics, tables) are left to the caller to
recompute over the joined rows; those describing a run's setup (scorers, data) are copied.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from trusteval.errors import StoreError
from trusteval.store.core import STORE_FILENAME, Store
from trusteval.store.shards import parse_shard

NOT_COPIED_AGGREGATES = ("metrics", "tables", "shard", "merged_shards")  # recomputed after a merge
MERGED_SHARDS = "merged_shards"  # run id -> {shard ("" for a whole run): its status}, kept in the target
SKIPPED_TABLES = {"schema_migrations", "sqlite_sequence"}
MAX_RESIDUES = 100_000  # shards of different counts: the most residues enumerated to find the missing slices
STATUS_RANK = {"complete": 0, "running": 1, "interrupted": 2, "incomplete": 3}


@dataclass
class MergeReport:
    added: dict[str, int] = field(default_factory=dict)
    runs: dict[str, dict[str, str]] = field(default_factory=dict)  # run id -> {shard seen: its status}


def check_sources(into: Path, sources: list[Path]) -> None:
    """Refuse before the target is created: a folder with no store or an unreadable one, or the target itself."""
    for folder in sources:
        path = Path(folder) / STORE_FILENAME
        if not path.is_file():
            raise StoreError(f"no store in '{folder}'")
        if path.resolve() == (Path(into) / STORE_FILENAME).resolve():
            raise StoreError(f"'{folder}' is the store being merged into")
        Store.open(folder).close()  # a store it cannot open is refused here; an older one gets the current schema


def merge_stores(target: Store, sources: list[Path]) -> MergeReport:
    report = MergeReport()
    check_sources(target.path.parent, sources)
    for folder in sources:
        _merge_one(target, Path(folder) / STORE_FILENAME, report)
    return report


def _merge_one(target: Store, path: Path, report: MergeReport) -> None:
    conn = target.conn
    conn.execute("ATTACH DATABASE ? AS source", (str(path),))
    try:
        shards = _shards_of(conn)
        known = {run_id: _known_shards(target, run_id) for run_id in shards}
        with target.transaction():
            for table in _tables(conn):
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


def _shards_of(conn: sqlite3.Connection, schema: str = "source") -> dict[str, dict[str, str]]:
    """The shards each run of a store holds, with their status; a merged store names the shards it joined."""
    runs = {run_id: {"": status} for run_id, status in conn.execute(f"SELECT run_id, status FROM {schema}.runs")}
    for run_id, name, value in conn.execute(
        f"SELECT run_id, name, value FROM {schema}.aggregates WHERE name IN ('shard', '{MERGED_SHARDS}')"
        " ORDER BY name DESC"  # a store that ran a shard and was merged into: its merged_shards come last
    ):
        if name == "shard":
            runs[run_id] = {json.loads(value): runs[run_id][""]}
        else:
            runs[run_id] = json.loads(value)
    return runs


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
    return _shards_of(target.conn, "main").get(run_id, {})


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
    source = f'SELECT {listing} FROM source."{table}" AS s'
    if table == "aggregates":
        skipped = ", ".join(f"'{name}'" for name in NOT_COPIED_AGGREGATES)
        source += f" WHERE s.name NOT IN ({skipped})"
    if len(kept) < len(columns):  # an autoincrement id: copy a row only if no identical row is there
        same = " AND ".join(f't."{c}" IS s."{c}"' for c in kept)
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
