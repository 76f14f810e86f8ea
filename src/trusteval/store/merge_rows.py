"""The rows `trusteval merge` reads, checked before anything is written: their types, and their conflicts.

**Malformed rows.** SQLite keeps whatever a column is given (a BLOB in an answer's `text`, a string in a score's
`value`); such a row would reach the tables as a traceback. Every column of every source is checked against its
declared type (TEXT: text; REAL: a number; INTEGER: an integer; NULL only where the column allows it) and the
first row that fails is refused with one line naming the file, table, row and column.

**Conflicts.** Two stores that hold different answers (generations: `text`) or different scores (scores:
`value`, `status`, `label`) under the same key conflict. The rule (`--on-conflict`, documented in
docs/reliability.md):

- `refuse` (the default): the conflicts are counted and reported, the merge exits 2 and writes nothing;
- `first`: the row seen first is kept: the target's own rows, then the sources in the order given;
- `last`: the row seen last replaces it: the last source given that holds the key wins.

Conflicts are counted by key (a key that differs among three stores is one conflict), between every pair of
the stores involved (the target when it exists, and every source).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from trusteval.errors import StoreError

ON_CONFLICT = ("refuse", "first", "last")
CONFLICT_COLUMNS: dict[str, tuple[str, ...]] = {
    "generations": ("text",),
    "scores": ("value", "status", "label"),
}
MAX_EXAMPLES = 5
ALLOWED_TYPES = {"TEXT": ("text",), "REAL": ("real", "integer"), "INTEGER": ("integer",)}


@dataclass
class Conflicts:
    """Keys whose rows differ between two of the stores merged, per table, with a few examples."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: list[dict[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict[str, object]:
        return {"total": self.total, "counts": self.counts, "examples": self.examples}

    def summary(self) -> str:
        tables = ", ".join(f"{table} {count}" for table, count in self.counts.items() if count)
        first = self.examples[0] if self.examples else {}
        example = f"; e.g. {first['table']} key {first['key']} differs between {first['a']} and {first['b']}"
        return f"{self.total} conflicting keys ({tables}){example if first else ''}"


class MergeConflictError(StoreError):
    """The stores hold different rows under one key and the rule is to refuse."""

    def __init__(self, conflicts: Conflicts):
        super().__init__(
            f"merge refused, nothing written: {conflicts.summary()}; choose a side with --on-conflict first "
            "(the target's rows, then the sources in the order given) or --on-conflict last"
        )
        self.conflicts = conflicts


def check_rows(conn: sqlite3.Connection, schema: str, path: Path) -> None:
    """Refuse the first row of any table whose value does not have its column's declared type."""
    tables = [row[0] for row in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type='table'")]
    for table in tables:
        columns = conn.execute(f'PRAGMA {schema}.table_info("{table}")').fetchall()
        checks = [(row[1], _allowed(row[2], bool(row[3]) or bool(row[5]))) for row in columns]
        checks = [(name, allowed) for name, allowed in checks if allowed]
        if checks:
            _check_table(conn, schema, path, table, checks)


def _allowed(declared: str, not_null: bool) -> tuple[str, ...]:
    allowed = ALLOWED_TYPES.get(declared.upper(), ())
    return allowed if not allowed or not_null else (*allowed, "null")


def _check_table(
    conn: sqlite3.Connection, schema: str, path: Path, table: str, checks: list[tuple[str, tuple[str, ...]]]
) -> None:
    wrong = " OR ".join(f'typeof("{name}") NOT IN ({_quoted(allowed)})' for name, allowed in checks)
    cases = " ".join(f"WHEN typeof(\"{name}\") NOT IN ({_quoted(allowed)}) THEN '{name}'" for name, allowed in checks)
    row = conn.execute(f'SELECT rowid, CASE {cases} END FROM {schema}."{table}" WHERE {wrong} LIMIT 1').fetchone()
    if row is None:
        return
    rowid, column = row
    found = conn.execute(f'SELECT typeof("{column}") FROM {schema}."{table}" WHERE rowid=?', (rowid,)).fetchone()[0]
    declared = dict(checks)[column][0]
    raise StoreError(
        f"'{path}': table {table}, row {rowid}, column '{column}' holds a {found}, not {declared}: "
        "a malformed row (written by something other than trusteval?); nothing was merged"
    )


def _quoted(types: tuple[str, ...]) -> str:
    return ", ".join(f"'{t}'" for t in types)


def find_conflicts(stores: list[tuple[str, str]]) -> Conflicts:
    """The conflicts among `stores` ((name, read-only URI), in merge order: the target first when it exists)."""
    keys: dict[str, set[tuple[object, ...]]] = {table: set() for table in CONFLICT_COLUMNS}
    conflicts = Conflicts()
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for (name_a, uri_a), (name_b, uri_b) in combinations(stores, 2):
            conn.execute("ATTACH DATABASE ? AS a", (uri_a,))
            conn.execute("ATTACH DATABASE ? AS b", (uri_b,))
            try:
                for table in CONFLICT_COLUMNS:
                    for key in _differing(conn, table):
                        if key not in keys[table] and len(conflicts.examples) < MAX_EXAMPLES:
                            conflicts.examples.append({"table": table, "key": "/".join(map(str, key)),
                                                       "a": name_a, "b": name_b})  # fmt: skip
                        keys[table].add(key)
            finally:
                conn.execute("DETACH DATABASE a")
                conn.execute("DETACH DATABASE b")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot compare the stores to merge: {exc}") from exc
    finally:
        conn.close()
    conflicts.counts = {table: len(found) for table, found in keys.items()}
    return conflicts


def primary_key(conn: sqlite3.Connection, schema: str, table: str) -> list[str]:
    rows = conn.execute(f'PRAGMA {schema}.table_info("{table}")').fetchall()
    return [row[1] for row in sorted(rows, key=lambda row: row[5]) if row[5]]


def _differing(conn: sqlite3.Connection, table: str) -> list[tuple[object, ...]]:
    key = primary_key(conn, "a", table)
    join = " AND ".join(f'x."{c}" = y."{c}"' for c in key)
    differ = " OR ".join(f'x."{c}" IS NOT y."{c}"' for c in CONFLICT_COLUMNS[table])
    listing = ", ".join(f'x."{c}"' for c in key)
    sql = f'SELECT {listing} FROM a."{table}" AS x JOIN b."{table}" AS y ON {join} WHERE {differ} ORDER BY 1'
    return [tuple(row) for row in conn.execute(sql)]


def replace_conflicting_sql(conn: sqlite3.Connection, table: str) -> str:
    """For `--on-conflict last`: overwrite the target's rows that the attached source holds differently."""
    key = primary_key(conn, "main", table)
    present = {row[1] for row in conn.execute(f'PRAGMA source.table_info("{table}")')}
    columns = [row[1] for row in conn.execute(f'PRAGMA main.table_info("{table}")') if row[1] in present]
    same_key = " AND ".join(f's."{c}" = main."{table}"."{c}"' for c in key)
    differ = " OR ".join(f's."{c}" IS NOT main."{table}"."{c}"' for c in CONFLICT_COLUMNS[table])
    targets = ", ".join(f'"{c}"' for c in columns)
    values = ", ".join(f's."{c}"' for c in columns)
    return (
        f'UPDATE main."{table}" SET ({targets}) = (SELECT {values} FROM source."{table}" AS s WHERE {same_key}) '
        f'WHERE EXISTS (SELECT 1 FROM source."{table}" AS s WHERE {same_key} AND ({differ}))'
    )


def check_rows_at(uri: str, path: Path) -> None:
    """`check_rows` on the store at a read-only URI."""
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        check_rows(conn, "main", path)
    except sqlite3.Error as exc:
        raise StoreError(f"'{path}': cannot read its rows: {exc}") from exc
    finally:
        conn.close()
