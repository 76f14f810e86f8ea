"""Every read of a run's rows and scores: the one place read SQL lives (besides store/core.py's own bookkeeping).

`Store` inherits these methods. Two ways of reading serve two access patterns, both from here: row by row
through the indexes (a run's items in chunks, a score per subject: the pipeline and `trusteval report`), and
whole tables in one sequential scan (report/bulk_read.py: tables over most of a store).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from trusteval.records import GenerationParams, Request, Score, ScoreStatus
from trusteval.store.rows import RunItem, chunked, run_item

READ_CHUNK = 10_000  # run items read at a time (keyset pagination on the run_items rowid)
SCRIPT_FUNCTION = "trusteval_script_code"  # SQL name of the response-script function the caller passes
ScriptCode = Callable[[str | None], float | None]
SKIP_FUNCTION = "trusteval_skip_text"  # SQL name of the "not scored" test of a response text the caller passes
KEEP_FUNCTION = "trusteval_keep_key"  # SQL name of the "in this slice" test of a request key the caller passes

# A model's items of a run, after a rowid, each with whether it is answered and, if not, its request.
MODEL_ITEMS_SQL = f"""
SELECT i.rowid, i.request_key, g.key IS NOT NULL, r.model,
       CASE WHEN g.key IS NULL THEN r.messages END, r.params, r.seed
FROM run_items i NOT INDEXED JOIN requests r ON r.key = i.request_key
LEFT JOIN generations g ON g.key = i.request_key
WHERE i.rowid > ? AND i.rowid <= ? AND i.run_id = ? AND i.model = ? AND {KEEP_FUNCTION}(i.request_key)
ORDER BY i.rowid
LIMIT ?
"""
ANSWERED_SQL = f"""
SELECT i.model, SUM(g.key IS NOT NULL), SUM(g.key IS NULL)
FROM run_items i NOT INDEXED LEFT JOIN generations g ON g.key = i.request_key
WHERE i.rowid BETWEEN ? AND ? AND i.run_id = ? AND {KEEP_FUNCTION}(i.request_key)
GROUP BY i.model
"""

PROMPT_SUBJECTS_SQL = """
SELECT DISTINCT p.subject AS subject FROM run_items i NOT INDEXED
JOIN prompts p ON p.dataset = i.dataset AND p.prompt_id = i.prompt_id
WHERE i.rowid BETWEEN ? AND ? AND i.run_id = ?
"""
RESPONSE_SUBJECTS_SQL = f"""
SELECT DISTINCT g.subject AS subject FROM run_items i NOT INDEXED JOIN generations g ON g.key = i.request_key
WHERE i.rowid BETWEEN ? AND ? AND i.run_id = ? AND g.text IS NOT NULL AND NOT {SKIP_FUNCTION}(g.text)
"""
# The distinct subjects in subject order: the look-ups then walk the scores index in its own order, page after
# page, instead of jumping across it (half the time of the unordered join at 100,000 subjects; the DISTINCT's
# temporary B-tree gives the order for free).
SUBJECT_COUNTS_SQL = """
SELECT COUNT(*), COALESCE(SUM(s.subject IS NULL OR s.status = 'error'), 0),
       COALESCE(SUM(s.status NOT IN ('ok', 'error')), 0)
FROM ({subjects} ORDER BY subject) d LEFT JOIN scores s ON s.subject = d.subject AND s.scorer = ?
"""


def _pairs_sql(prompt_id: str, scan: str, where: str) -> str:
    """The pair rows read for the toxicity benchmarks: (rowid, model, seed, `prompt_id`, class or 'all', label
    is 1, language, the response's script code, the ok value of its score and of the prompt's)."""
    return f"""
SELECT i.rowid, i.model, i.seed, {prompt_id}, COALESCE(NULLIF(p.category, ''), 'all'),
       typeof(p.label) IN ('integer', 'real') AND p.label = 1, p.lang, {SCRIPT_FUNCTION}(g.text),
       CASE WHEN rs.status = 'ok' THEN rs.value END, CASE WHEN ps.status = 'ok' THEN ps.value END
FROM run_items i {scan}
JOIN prompts p ON p.dataset = i.dataset AND p.prompt_id = i.prompt_id
LEFT JOIN generations g ON g.key = i.request_key
LEFT JOIN scores rs ON rs.subject = g.subject AND rs.scorer = ?
LEFT JOIN scores ps ON ps.subject = p.subject AND ps.scorer = ?
WHERE {where}
"""


# A run's rows in planned order, a page at a time; {source_id}: the column of the dataset's own id, or NULL.
RUN_PAIRS_SQL = _pairs_sql(
    "COALESCE({source_id}, p.prompt_id)",
    "NOT INDEXED",
    "i.rowid > ? AND i.rowid <= ? AND i.run_id = ?\nORDER BY i.rowid\nLIMIT ?",
)
# A run's rows for `trusteval tables`: RUN_PAIRS_SQL's columns, with the prompt's rowid for its id.
PAIRS_SQL = _pairs_sql("p.rowid", "", "i.run_id = ? AND i.model IN ({models})")

JUDGED_SQL = """
SELECT i.model, i.seed, p.rowid, p.category, p.text, g.text
FROM run_items i
JOIN prompts p ON p.dataset = i.dataset AND p.prompt_id = i.prompt_id
LEFT JOIN generations g ON g.key = i.request_key
WHERE i.run_id = ? AND i.model IN ({models})
ORDER BY i.rowid
"""


class StoreReads:
    conn: sqlite3.Connection

    # -- runs -----------------------------------------------------------------------------------------------

    def run_rows(self) -> list[dict[str, Any]]:
        """run_id, benchmark, dataset, spec (parsed) and updated_at of every run, newest first."""
        rows = self.conn.execute(
            "SELECT run_id, benchmark, dataset, spec, updated_at FROM runs ORDER BY updated_at DESC"
        )
        return [{**dict(row), "spec": json.loads(row["spec"])} for row in rows]

    def request_identities(self, run_id: str) -> dict[str, str]:
        """Each model of a run (as written) and the identity its requests are keyed by."""
        rows = self.conn.execute(
            "SELECT i.model, min(r.model) FROM run_items i JOIN requests r ON r.key = i.request_key"
            " WHERE i.run_id = ? GROUP BY i.model",
            (run_id,),
        )
        return {model: identity for model, identity in rows}

    def aggregates_named(self, name: str) -> list[tuple[str, Any]]:
        """(run_id, value) of every aggregate called `name`, oldest first."""
        rows = self.conn.execute("SELECT run_id, value FROM aggregates WHERE name = ? ORDER BY created_at", (name,))
        return [(run_id, json.loads(value)) for run_id, value in rows]

    def lease_holders(self) -> list[tuple[str, str]]:
        """(owner, key) of every lease."""
        return [(owner, key) for owner, key in self.conn.execute("SELECT owner, key FROM leases")]

    # -- a run's items, row by row ---------------------------------------------------------------------------

    def run_items(self, run_id: str) -> list[RunItem]:
        """Every item of a run, in planned order (a small run; large ones read `iter_run_items`)."""
        return [item for chunk in self.iter_run_items(run_id) for item in chunk]

    def iter_run_items(self, run_id: str, chunk_size: int = READ_CHUNK) -> Iterator[list[RunItem]]:
        """A run's items in planned order, `chunk_size` at a time: one query per chunk (keyset pagination on
        the run_items rowid, walked with the rowid B-tree: through the (run_id, request_key) index each chunk
        would sort the whole run again), so a run of any size is read in bounded memory and linear time."""
        source_id = "p.source_id" if self._has_column("prompts", "source_id") else "NULL"  # an old read-only store
        sql = f"""
            SELECT i.rowid AS item_rowid, i.request_key, i.model, i.seed, i.variant,
                   p.dataset, COALESCE({source_id}, p.prompt_id) AS prompt_id, p.text AS prompt_text,
                   p.lang, p.label, p.category, p.attributes, p.subject AS prompt_subject,
                   g.text AS response, g.subject AS response_subject,
                   CASE WHEN g.key IS NULL THEN (SELECT f.error FROM generation_failures f
                        WHERE f.key = i.request_key ORDER BY f.id DESC LIMIT 1) END AS error
            FROM run_items i NOT INDEXED
            JOIN prompts p ON p.dataset = i.dataset AND p.prompt_id = i.prompt_id
            LEFT JOIN generations g ON g.key = i.request_key
            WHERE i.rowid > ? AND i.rowid <= ? AND i.run_id = ?
            ORDER BY i.rowid
            LIMIT ?
            """
        for rows in self._item_pages(sql, run_id, chunk_size, rows=self._named_rows):
            yield [run_item(row) for row in rows]

    def run_item_rowids(self, run_id: str) -> tuple[int | None, int | None]:
        """The smallest and largest rowid of a run's items (None, None for none)."""
        lowest, highest = self.conn.execute(
            "SELECT min(rowid), max(rowid) FROM run_items WHERE run_id=?", (run_id,)
        ).fetchone()
        return lowest, highest

    def answered_counts(self, run_id: str, keep: Callable[[str], bool] | None = None) -> dict[str, tuple[int, int]]:
        """{model: (its items that have an answer, those that have none)} of a run's items whose request key
        `keep` accepts. Counted in SQL: no item read into Python."""
        self.conn.create_function(KEEP_FUNCTION, 1, keep or _every, deterministic=True)
        lowest, highest = self.run_item_rowids(run_id)
        return {
            model: (answered, left) for model, answered, left in self._tuples(ANSWERED_SQL, (lowest, highest, run_id))
        }

    def iter_model_requests(
        self, run_id: str, model: str, keep: Callable[[str], bool] | None = None, chunk_size: int = READ_CHUNK
    ) -> Iterator[tuple[int, list[Request]]]:
        """A model's items of a run in planned order, `chunk_size` at a time (those whose request key `keep`
        accepts): per chunk, how many are answered, and the requests of the others, rebuilt from their rows.
        One query per chunk, so answers written between chunks are seen."""
        self.conn.create_function(KEEP_FUNCTION, 1, keep or _every, deterministic=True)
        for rows in self._item_pages(MODEL_ITEMS_SQL, run_id, chunk_size, trailing=(model,)):
            requests = [_request(*row[1:2], *row[3:]) for row in rows if not row[2]]
            yield len(rows) - len(requests), requests

    def requests(self, keys: Iterable[str]) -> list[Request]:
        """The stored requests of `keys` (in no particular order)."""
        found: list[Request] = []
        for chunk in chunked(list(dict.fromkeys(keys)), 900):
            query = (
                f"SELECT key, model, messages, params, seed FROM requests WHERE key IN ({','.join('?' * len(chunk))})"
            )
            found += [_request(*row) for row in self._tuples(query, chunk)]
        return found

    def count_run_items(self, run_id: str) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM run_items WHERE run_id=?", (run_id,)).fetchone()[0]

    def run_languages(self, run_id: str) -> set[str]:
        """The languages of the prompts a run evaluated."""
        sql = (
            "SELECT DISTINCT p.lang FROM run_items i"
            " JOIN prompts p ON p.dataset = i.dataset AND p.prompt_id = i.prompt_id WHERE i.run_id = ?"
        )
        return {row[0] for row in self._tuples(sql, (run_id,))}

    def score_label_counts(self, run_id: str, scorer_id: str, label: str) -> dict[str, tuple[int, int]]:
        """Per model of a run: (its answers whose ok score under `scorer_id` has `label`, its answers with an ok
        score). Counted in SQL: no item read into Python."""
        rows = self.conn.execute(
            "SELECT i.model, COALESCE(SUM(s.label = ?), 0), COUNT(s.subject) FROM run_items i "
            "LEFT JOIN generations g ON g.key = i.request_key "
            "LEFT JOIN scores s ON s.subject = g.subject AND s.scorer = ? AND s.status = 'ok' "
            "WHERE i.run_id = ? GROUP BY i.model",
            (label, scorer_id, run_id),
        )
        return {model: (int(found), int(scored)) for model, found, scored in rows}

    def count_marked_answers(self, run_id: str, mark: str) -> tuple[int, int]:
        """Of a run's answers: how many carry `mark` among their finish_reason's marks, and how many there are."""
        row = self.conn.execute(
            "SELECT COALESCE(SUM(('+' || COALESCE(g.finish_reason, '') || '+') LIKE ?), 0), COUNT(g.key) "
            "FROM run_items i JOIN generations g ON g.key = i.request_key WHERE i.run_id = ?",
            (f"%+{mark}+%", run_id),
        ).fetchone()
        return int(row[0]), int(row[1])

    def pair_rows(
        self, run_id: str, models: Sequence[str], scorers: tuple[str | None, str | None], script_code: ScriptCode
    ) -> list[tuple]:
        """PAIRS_SQL rows of `models` in a run (as iter_run_pairs's, with the prompt's rowid for its id): the ok
        values of the response and prompt scores under `scorers` (response, prompt) and each response's script
        code."""
        self.conn.create_function(SCRIPT_FUNCTION, 1, script_code, deterministic=True)
        return self._tuples(_models_query(PAIRS_SQL, models), (*scorers, run_id, *models))

    def iter_run_pairs(
        self,
        run_id: str,
        scorers: tuple[str | None, str | None],
        script_code: ScriptCode,
        chunk_size: int = READ_CHUNK,
    ) -> Iterator[list[tuple]]:
        """A run's items in planned order as RUN_PAIRS_SQL rows, `chunk_size` at a time (walked like
        iter_run_items): (rowid, model, seed, prompt id, class or 'all', label is 1, language, the response's
        script code (None: no response), the ok value of its score under `scorers[0]` and of the prompt's
        under `scorers[1]` (None: no ok score))."""
        self.conn.create_function(SCRIPT_FUNCTION, 1, script_code, deterministic=True)
        source_id = "p.source_id" if self._has_column("prompts", "source_id") else "NULL"
        sql = RUN_PAIRS_SQL.format(source_id=source_id)
        yield from self._item_pages(sql, run_id, chunk_size, leading=scorers)

    def judged_rows(self, run_id: str, models: Sequence[str]) -> list[tuple]:
        """(model, seed, prompt rowid, category, prompt text, response) of `models` in a run, in planned order."""
        return self._tuples(_models_query(JUDGED_SQL, models), (run_id, *models))

    # -- whole tables, in one sequential scan (report/bulk_read.py) -----------------------------------------

    def scan_generations(self, script_code: ScriptCode) -> list[tuple]:
        """(key, subject, script code of the text) of every answer in the store."""
        self.conn.create_function(SCRIPT_FUNCTION, 1, script_code, deterministic=True)
        return self._tuples(f"SELECT key, subject, {SCRIPT_FUNCTION}(text) FROM generations")

    def scan_scores(self, scorer_id: str | None) -> list[tuple]:
        """(subject, value, status) of every score of one scorer."""
        return self._tuples("SELECT subject, value, status FROM scores WHERE scorer = ?", (scorer_id,))

    def scan_prompts(self, dataset: str) -> list[tuple]:
        """(prompt_id, rowid, category, label, subject, lang) of every stored prompt of a dataset."""
        query = "SELECT prompt_id, rowid, category, label, subject, lang FROM prompts WHERE dataset = ?"
        return self._tuples(query, (dataset,))

    def run_item_span(self, run_id: str) -> tuple[int, str | None, str | None]:
        """The number of a run's items and its smallest and largest request key (a cheap plan check)."""
        count, low, high = self.conn.execute(
            "SELECT COUNT(*), min(request_key), max(request_key) FROM run_items WHERE run_id = ?", (run_id,)
        ).fetchone()
        return count, low, high

    def scan_run_items(self, run_id: str, models: Sequence[str]) -> list[tuple]:
        """(request_key, index of the model in `models`, seed, dataset, prompt_id) of the run's items of
        `models`, read in one sequential pass over the run's rowid range."""
        lowest, highest = self.run_item_rowids(run_id)
        model_code = "CASE model " + " ".join(f"WHEN ? THEN {i}" for i in range(len(models))) + " END"
        return self._tuples(
            f"SELECT request_key, {model_code}, seed, dataset, prompt_id FROM run_items NOT INDEXED"
            f" WHERE rowid BETWEEN ? AND ? AND run_id = ? AND model IN ({','.join('?' * len(models))})",
            (*models, lowest, highest, run_id, *models),
        )

    # -- scores ---------------------------------------------------------------------------------------------

    def task_subjects(
        self, run_id: str, scorer_id: str, *, prompts: bool, skip: Callable[[str], bool]
    ) -> tuple[int, int, int]:
        """Over the distinct prompt subjects (`prompts`) or response subjects of a run's items, responses
        for which `skip` is true left out: how many there are, how many have no final score under `scorer_id`,
        and how many have a final score without a value. Counted in SQL: no item read into Python."""
        self.conn.create_function(SKIP_FUNCTION, 1, skip, deterministic=True)
        subjects = PROMPT_SUBJECTS_SQL if prompts else RESPONSE_SUBJECTS_SQL
        lowest, highest = self.run_item_rowids(run_id)  # the rowid range, walked like iter_run_items
        total, missing, unparsed = self.conn.execute(
            SUBJECT_COUNTS_SQL.format(subjects=subjects), (lowest, highest, run_id, scorer_id)
        ).fetchone()
        return total, missing, unparsed

    def score(self, scorer_id: str, subject: str) -> Score | None:
        row = self.conn.execute(
            "SELECT subject, scorer, value, status, label, detail FROM scores WHERE subject=? AND scorer=?",
            (subject, scorer_id),
        ).fetchone()
        if row is None:
            return None
        subject, scorer, value, status, label, detail = row
        return Score(subject, scorer, value, ScoreStatus(status), label, detail)

    def scored_by(self, scorer_id: str) -> Iterator[str]:
        """Every subject this scorer has a stored score for (any status)."""
        return (row[0] for row in self.conn.execute("SELECT subject FROM scores WHERE scorer=?", (scorer_id,)))

    def scores(self, scorer_id: str, subjects: Iterable[str]) -> dict[str, Score]:
        """The stored scores of `subjects` under one scorer: one query per 900 subjects."""
        found: dict[str, Score] = {}
        for chunk in chunked(list(dict.fromkeys(subjects)), 900):
            marks = ",".join("?" * len(chunk))
            query = f"SELECT subject, value, status, label, detail FROM scores WHERE scorer=? AND subject IN ({marks})"
            for subject, value, status, label, detail in self._tuples(query, (scorer_id, *chunk)):
                found[subject] = Score(subject, scorer_id, value, ScoreStatus(status), label, detail)
        return found

    def ok_values(self, scorer_id: str, subjects: Iterable[str]) -> dict[str, float]:
        """The values of the ok scores of `subjects` under one scorer (records.ok_value of each stored score,
        absent where that is None): one query per 900 subjects, no Score built."""
        found: dict[str, float] = {}
        for chunk in chunked(list(dict.fromkeys(subjects)), 900):
            marks = ",".join("?" * len(chunk))
            query = (
                "SELECT subject, value FROM scores WHERE scorer=? AND status='ok' AND value IS NOT NULL"
                f" AND subject IN ({marks})"
            )
            found.update(self._tuples(query, (scorer_id, *chunk)))
        return found

    def count_unparsed(self, scorer_id: str, subjects: Iterable[str]) -> int:
        """How many of the subjects have a final score without a value (unparsed, or refused by the scorer)."""
        found = self._existing(
            "SELECT subject FROM scores WHERE scorer=? AND status NOT IN ('ok', 'error') AND subject IN ({})",
            subjects,
            scorer_id,
        )
        return len(found)

    # -- helpers --------------------------------------------------------------------------------------------

    def _item_pages(
        self,
        sql: str,
        run_id: str,
        chunk_size: int,
        *,
        leading: Sequence[Any] = (),
        trailing: Sequence[Any] = (),
        rows: Callable[[str, Sequence[Any]], list] | None = None,
    ) -> Iterator[list]:
        """The rows of `sql` over a run's items, `chunk_size` at a time: keyset pagination on the run_items
        rowid, which `sql` selects first and binds as `rowid > ? AND rowid <= ? AND run_id = ?` (after the
        `leading` parameters, before the `trailing` ones and the LIMIT). `rows` runs a query and fetches its
        rows (default: plain tuples)."""
        run = rows or self._tuples
        lowest, highest = self.run_item_rowids(run_id)
        if lowest is None:
            return
        after = lowest - 1
        while page := run(sql, (*leading, after, highest, run_id, *trailing, chunk_size)):
            after = page[-1][0]
            yield page

    def _named_rows(self, sql: str, params: Sequence[Any] = ()) -> list:
        return self.conn.execute(sql, params).fetchall()  # the connection's sqlite3.Row, read by name

    def _tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: sqlite3.Row objects are slower to build
        return cursor.execute(sql, params).fetchall()

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.conn.execute(f"PRAGMA table_info({table})"))

    def _existing(self, sql: str, keys: Iterable[str], *leading: Any) -> set[str]:
        found: set[str] = set()
        for chunk in chunked(list(dict.fromkeys(keys)), 900):
            query = sql.format(",".join("?" * len(chunk)))
            found.update(row[0] for row in self.conn.execute(query, (*leading, *chunk)))
        return found


def _every(key: str) -> bool:
    return True


def _request(key: str, model: str, messages: str, params: str, seed: int) -> Request:
    """A Request as it was planned, from its stored row (the key is the planned one, not hashed again)."""
    turns = tuple((role, content) for role, content in json.loads(messages))
    return Request(key=key, model=model, messages=turns, params=GenerationParams(**json.loads(params)), seed=seed)


def _models_query(sql: str, models: Sequence[str]) -> str:
    return sql.format(models=",".join("?" * len(models)))
