"""One read API (issue 12) that streams (issue 13): a run's items in chunks, scores looked up per subject,
and no read SQL outside the store modules."""

from __future__ import annotations

import re
import tracemalloc
from pathlib import Path

import pytest

from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, text_subject
from trusteval.store import Store
from trusteval.store.views import RunItems, StoredScores

SRC = Path(__file__).resolve().parents[1] / "src" / "trusteval"
STORE_MODULES = {"store/core.py", "store/migrations.py", "store/reads.py", "store/rows.py"}
# store/merge.py copies one store file into another (ATTACH ... INSERT SELECT): a write at the store layer, not a read
# of a run's rows; it stays beside the store. store/merge_sources.py checks those source files (schema, shard
# aggregates) before the merge writes anything; store/merge_rows.py counts the rows two stores disagree on and
# checks each source column's type (issue 32), inside the same merge.
WRITERS = {"store/merge.py", "store/merge_sources.py", "store/merge_rows.py"}


def _plan(n: int, dataset: str = "d", model: str = "model-a"):
    prompts = [
        Prompt(id=f"p{i}", dataset=dataset, text=f"{dataset} text {i}", lang="en", label=i % 2) for i in range(n)
    ]
    items = [
        (Request.build(model, (("user", p.text),), GenerationParams(), 42), model, p, {"i": i})
        for i, p in enumerate(prompts)
    ]
    return prompts, items


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "ws")
    yield s
    s.close()


def test_no_read_sql_outside_the_store_modules():
    found = []
    for path in SRC.rglob("*.py"):
        if path.relative_to(SRC).as_posix() in STORE_MODULES | WRITERS:
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"\bSELECT\b[^\n]*\bFROM\b", text) or ".conn.execute" in text or ".conn.cursor" in text:
            found.append(str(path.relative_to(SRC)))
    assert found == []


def test_run_items_come_in_chunks_in_planned_order_beside_other_runs(store):
    prompts, items = _plan(25)
    other_prompts, other_items = _plan(7, dataset="e")
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items[:10])
    store.begin_run("r2", benchmark="b", dataset="e", spec={}, prompts=other_prompts, items=other_items)
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)  # a new plan: rewritten
    chunks = list(store.iter_run_items("r1", chunk_size=4))
    assert [len(c) for c in chunks] == [4, 4, 4, 4, 4, 4, 1]
    assert [i.variant["i"] for c in chunks for i in c] == list(range(25))
    assert [i.prompt.id for i in RunItems(store, "r2")] == [f"p{i}" for i in range(7)]
    view = RunItems(store, "r1")
    assert len(view) == 25 and view[0].prompt.id == "p0" and view[-1].prompt.id == "p24"
    assert list(view) == store.run_items("r1") == list(view)  # every pass reads the same rows again
    assert list(store.iter_run_items("none")) == []


def test_an_identical_plan_in_another_order_is_not_rewritten(store):
    prompts, items = _plan(6)
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    before = [row[0] for row in store._tuples("SELECT rowid FROM run_items ORDER BY rowid")]
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items[::-1])
    assert [row[0] for row in store._tuples("SELECT rowid FROM run_items ORDER BY rowid")] == before
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items[1:])
    assert [i.variant["i"] for i in store.run_items("r1")] == [1, 2, 3, 4, 5]


def test_stored_scores_are_looked_up_per_subject(store):
    store.add_scores([Score(text_subject("a"), "s", 0.5), Score(text_subject("b"), "s", None, "unparsed")])
    scores = StoredScores(store, "s")
    assert scores.get(text_subject("a")) == Score(text_subject("a"), "s", 0.5)
    assert scores.get(text_subject("c")) is None and text_subject("c") not in scores
    assert scores[text_subject("b")].status == "unparsed"
    assert sorted(scores) == sorted([text_subject("a"), text_subject("b")])
    assert store.count_unparsed("s", [text_subject("a"), text_subject("b")]) == 1


@pytest.mark.slow
def test_reading_a_run_holds_one_chunk_not_the_run(store):
    prompts, items = _plan(6000)
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    store.add_generations([Generation(r.key, "an answer " * 20) for r, *_ in items])
    tracemalloc.start()
    whole = len(store.run_items("r1"))
    _, peak_list = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    streamed = sum(len(chunk) for chunk in store.iter_run_items("r1", chunk_size=500))
    _, peak_stream = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert whole == streamed == 6000
    assert peak_stream * 4 < peak_list


def test_tables_and_a_runs_metrics_read_a_prompt_without_a_class_alike(store):
    """A prompt whose class is '' or NULL is in class 'all' for a run's own metrics and for `trusteval tables`
    (the tables used to keep '' as a class of its own, so the two disagreed)."""
    from trusteval.scorers.language import script_code

    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i}", lang="en", category=c)
               for i, c in enumerate(["", None, "gender"])]  # fmt: skip
    items = [(Request.build("m", (("user", p.text),), GenerationParams(), 42), "m", p, {}) for p in prompts]
    store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    run_classes = [row[4] for rows in store.iter_run_pairs("r1", (None, None), script_code) for row in rows]
    table_classes = [row[4] for row in sorted(store.pair_rows("r1", ["m"], (None, None), script_code))]
    assert run_classes == table_classes == ["all", "all", "gender"]
