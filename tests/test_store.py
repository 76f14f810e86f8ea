from __future__ import annotations

import multiprocessing
import sqlite3

import pytest

from trusteval.errors import StoreError
from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, text_subject
from trusteval.store import STORE_FILENAME, Store


def _plan(n: int = 3):
    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i}", lang="en", label=i % 2) for i in range(n)]
    items = []
    for prompt in prompts:
        request = Request.build("m", (("user", prompt.text),), GenerationParams(), 42)
        items.append((request, "model-a", prompt, {}))
    return prompts, items


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "ws")
    yield s
    s.close()


def test_begin_run_twice_does_not_duplicate_rows(store):
    prompts, items = _plan()
    for _ in range(2):
        store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    assert store.count("run_items") == 3
    assert store.count("prompts") == 3
    assert [i.prompt.id for i in store.run_items("r1")] == ["p0", "p1", "p2"]


def test_generations_are_stored_once_and_failures_are_retried(store):
    prompts, items = _plan()
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    keys = [r.key for r, *_ in items]
    store.add_generations([Generation(keys[0], "answer"), Generation.failure(keys[1], "HTTP 503")])
    store.add_generations([Generation(keys[0], "another answer")])
    assert store.stored_generation_keys(keys) == {keys[0]}  # the failure stays pending
    rows = {i.request_key: i for i in store.run_items("r1")}
    assert rows[keys[0]].response == "answer"
    assert rows[keys[0]].response_subject == text_subject("answer")
    assert rows[keys[1]].response is None and rows[keys[1]].error == "HTTP 503"
    store.add_generations([Generation(keys[1], "late answer")])
    assert store.run_items("r1")[1].error is None
    assert store.count("generations") == 2


def test_error_scores_are_replaced_but_final_scores_are_kept(store):
    store.add_scores([Score("s1", "sc", 0.2), Score("s2", "sc", None, "error", detail="boom")])
    assert store.scored_subjects("sc", ["s1", "s2"]) == {"s1"}
    store.add_scores([Score("s1", "sc", 0.9), Score("s2", "sc", 0.7)])
    found = store.scores("sc", ["s1", "s2"])
    assert found["s1"].value == 0.2 and found["s2"].value == 0.7
    store.add_scores([Score("s3", "sc", None, "unparsed", detail="maybe?")])
    assert "s3" in store.scored_subjects("sc", ["s3"])  # unparsed is a final value, not retried


def test_store_uses_wal_and_passes_integrity_check(store):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_not_a_store_is_a_clear_error(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "trusteval.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a database"):
        Store.open(folder)


def test_read_only_store_is_a_clear_error_and_keeps_rows(tmp_path):
    store = Store.open(tmp_path / "ws")
    store.add_scores([Score("s1", "sc", 0.5)])
    store.close()
    ro = Store(
        sqlite3.connect(f"file:{tmp_path / 'ws' / 'trusteval.sqlite'}?mode=ro", uri=True, isolation_level=None),
        tmp_path / "ws" / "trusteval.sqlite",
    )
    with pytest.raises(StoreError, match="not writable"):
        ro.add_scores([Score("s2", "sc", 0.5)])
    ro.close()
    again = Store.open(tmp_path / "ws")
    assert again.scores("sc", ["s1"])["s1"].value == 0.5
    again.close()


def test_read_only_open_reads_and_never_writes(tmp_path):
    import hashlib

    store = Store.open(tmp_path / "ws")
    store.add_scores([Score("s1", "sc", 0.25)])
    store.close()
    db = tmp_path / "ws" / "trusteval.sqlite"
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    reader = Store.open_read_only(tmp_path / "ws")
    assert reader.scores("sc", ["s1"])["s1"].value == 0.25
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.conn.execute("DELETE FROM scores")
    reader.close()
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    with pytest.raises(StoreError, match="no store in"):
        Store.open_read_only(tmp_path / "elsewhere")


def test_a_store_another_run_is_creating_is_read_through_its_locks_never_as_immutable(tmp_path, monkeypatch):
    # A run creating a store has made its file, not yet its tables: a `mode=ro` read says 'no such table'. The
    # reader then read the file `immutable=1`, past the creator's locks and WAL: with two starting runs reading
    # while two others created the store, 6 of 100 rounds read half-written pages ('database disk image is
    # malformed', which ended the run). Only a folder that cannot hold the -shm file is read immutable.
    (tmp_path / "ws").mkdir()
    sqlite3.connect(tmp_path / "ws" / STORE_FILENAME).execute("PRAGMA journal_mode = WAL").close()
    opened, connect = [], sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda target, *a, **k: opened.append(str(target)) or connect(target, *a, **k)
    )
    with pytest.raises(StoreError, match="no such table: runs"):
        Store.open_read_only(tmp_path / "ws")
    assert [uri.rsplit("?", 1)[-1] for uri in opened] == ["mode=ro"]


def _open_when_released(folder, barrier, outcomes) -> None:
    barrier.wait()
    try:
        Store.open(folder).close()
        outcomes.put("ok")
    except StoreError as exc:
        outcomes.put(str(exc))


@pytest.mark.slow
def test_processes_opening_one_new_store_at_once_all_succeed(tmp_path):
    # SQLite answers "database is locked" at once, without waiting, when two connections switch a new file to
    # WAL together; without a retry 42 of 50 such rounds of 4 processes failed.
    context = multiprocessing.get_context("fork")
    processes_per_round = 4
    for round_number in range(8):
        barrier, outcomes = context.Barrier(processes_per_round), context.Queue()
        folder = tmp_path / f"ws{round_number}"
        workers = [
            context.Process(target=_open_when_released, args=(folder, barrier, outcomes))
            for _ in range(processes_per_round)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert sorted(outcomes.get(timeout=5) for _ in workers) == ["ok"] * processes_per_round
        with sqlite3.connect(folder / STORE_FILENAME) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
