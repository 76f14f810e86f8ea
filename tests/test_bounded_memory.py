"""Bounded memory (issue 13): a plan holds its prompts but no request, the generate stage holds one chunk of
requests, and the score stage one chunk of inputs; results are those of holding everything."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Sequence
from contextlib import contextmanager
from typing import ClassVar

import pytest

from trusteval.benchmarks import BENCHMARKS
from trusteval.config import build_run_spec
from trusteval.models import BACKENDS
from trusteval.pipeline import execute, generate
from trusteval.pipeline.prepare import data_context
from trusteval.pipeline.score import input_chunks, task_inputs
from trusteval.pipeline.seen import SeenSubjects
from trusteval.progress import NullProgress
from trusteval.records import Generation, GenerationParams, Prompt, Request, text_subject
from trusteval.scorers.base import Outcome, ScoringTask
from trusteval.scorers.scoring import score_chunks, score_missing
from trusteval.store import Store


def _live_requests() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Request)


class CountingBackend:
    """Echoes the prompt and records, at each call, how many Request objects the process holds."""

    batch_size = 2
    max_concurrency = 1
    alive: ClassVar[list[int]] = []

    def __init__(self, spec, settings):
        self.spec = spec

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        CountingBackend.alive.append(_live_requests())
        return [Generation(r.key, f"echo: {r.messages[-1][1]}") for r in requests]

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "counting"}


@pytest.fixture
def counting():
    BACKENDS.register("counting", lambda spec, settings: CountingBackend(spec, settings))
    CountingBackend.alive = []
    yield CountingBackend
    BACKENDS.unregister("counting")


def _spec(folder, data_dir, cache_dir, **extra):
    flags = {
        "benchmark": "trusteval-toxicity",
        "models": ["counting:echo"],
        "limit": 40,
        "seeds": [42],
        "store": str(folder),
        "data_dir": str(data_dir),
        "cache_dir": str(cache_dir),
        **extra,
    }
    return build_run_spec(flags, env={})


def test_a_plan_holds_no_request_and_builds_the_same_items_on_every_pass(data_dir, cache_dir) -> None:
    spec = _spec("unused", data_dir, cache_dir, models=["counting:a", "counting:b"], seeds=[1, 2])
    before = _live_requests()
    plan = BENCHMARKS.get(spec.benchmark)(spec).plan(data_context(spec))
    assert _live_requests() == before, "a plan built every request up front"
    first = [(i.request, i.model, i.prompt, i.variant) for i in plan.items]
    assert len(plan.items) == len(first) == 2 * 40 * 2
    assert [(i.request, i.model, i.prompt, i.variant) for i in plan.items] == first
    assert [i[1] for i in first[:80]] == ["counting:a"] * 80 and [i[0].seed for i in first[:2]] == [1, 2]
    assert plan.items[-1].request == first[-1][0] and plan.items[:3] == [plan.items[i] for i in range(3)]


def test_the_generate_stage_holds_one_chunk_of_requests(tmp_path, data_dir, cache_dir, counting, monkeypatch):
    whole = execute(_spec(tmp_path / "whole", data_dir, cache_dir), env={})
    assert max(counting.alive) >= 40, "with one chunk, every request of the run is held"
    counting.alive = []
    monkeypatch.setattr(generate, "GENERATE_CHUNK", 5)
    chunked = execute(_spec(tmp_path / "chunked", data_dir, cache_dir), env={})
    assert len(counting.alive) == 8 * 3 and max(counting.alive) <= 5  # 8 chunks of 5: batches of 2, 2, 1
    assert (chunked.requests, chunked.generated, chunked.reused) == (40, 40, 0)
    assert json.dumps(chunked.metrics, sort_keys=True) == json.dumps(whole.metrics, sort_keys=True)  # NaN too
    again = execute(_spec(tmp_path / "chunked", data_dir, cache_dir), env={})
    assert (again.generated, again.reused, len(counting.alive)) == (0, 40, 24)


def test_a_shard_answers_its_slice_only(tmp_path, data_dir, cache_dir, counting, monkeypatch):
    monkeypatch.setattr(generate, "GENERATE_CHUNK", 3)
    halves = [execute(_spec(tmp_path / "ws", data_dir, cache_dir, shard=f"{i}/2"), env={}) for i in range(2)]
    assert sum(h.generated for h in halves) == sum(h.requests for h in halves) == 40
    store = Store.open(tmp_path / "ws")
    assert store.count("generations") == 40 and store.count("run_items") == 40
    store.close()


def test_a_run_recorded_by_another_process_meanwhile_is_kept(tmp_path) -> None:
    """Two processes starting one run: the second sees the first's items inside its write transaction and
    keeps them (the generate stage reads them back while the first is answering them)."""
    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i}", lang="en") for i in range(5)]
    items = [(Request.build("m", (("user", p.text),), GenerationParams(), 42), "m", p, {}) for p in prompts]
    record = {"benchmark": "b", "dataset": "d", "spec": {}, "prompts": prompts, "items": items}
    first, second = Store.open(tmp_path), Store.open(tmp_path)
    digest = second._items_digest

    def digest_then_the_other_records(*args):
        found = digest(*args)
        if not first.count_run_items("r"):  # once: the first process records the run right after the read
            first.begin_run("r", **record)
        return found

    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(second, "_items_digest", digest_then_the_other_records, raising=False)
    changes = second.conn.total_changes
    second.begin_run("r", **record)
    monkeypatch.undo()
    written = second.conn.total_changes - changes - 1  # the run's own row is written again
    assert written == 0, "the second process dropped and wrote again the items the first recorded"
    assert first.count_run_items("r") == 5
    first.close()
    second.close()


def test_score_inputs_in_chunks_are_the_inputs_of_the_whole_run(monkeypatch) -> None:
    from trusteval.store.rows import RunItem

    texts = ["a", "b", "a", "c", "b", "d", "a", "e"]  # repeated across chunks of 3
    items = [
        RunItem(f"k{i}", "m", 42, Prompt(f"p{i}", "d", "x", "en"), "ps", {}, text, text_subject(text), None)
        for i, text in enumerate(texts)
    ]
    task = ScoringTask("response_toxicity", "s", lambda item: (item.response,), _never, 2)
    monkeypatch.setattr("trusteval.store.views.READ_CHUNK", 3)
    chunks = list(input_chunks(items, task))
    assert [list(c.values()) for c in chunks] == [[("a",), ("b",)], [("c",), ("d",)], [("e",)]]
    merged = {subject: inputs for chunk in chunks for subject, inputs in chunk.items()}
    assert list(merged.items()) == list(task_inputs(items, task).items())


async def _never(inputs):
    raise AssertionError("not scored here")


class Recorder:
    scorer_id = "rec@1"
    batch_size = 2

    def __init__(self) -> None:
        self.order: list[str] = []

    @property
    def run(self):
        async def run(batch):
            self.order += [inputs[0] for inputs in batch]
            return [Outcome(float(len(inputs[0]) % 2)) for inputs in batch]

        return run


@contextmanager
def _opened(folder):
    store = Store.open(folder)
    try:
        yield store
    finally:
        store.close()


def test_one_chunk_is_scored_in_score_missings_shuffled_order(tmp_path) -> None:
    inputs = {text_subject(t): (t,) for t in (f"text {i}" for i in range(20))}
    whole, chunked = Recorder(), Recorder()
    options = {"shuffle_seed": 0}
    with _opened(tmp_path / "a") as a:
        counts = asyncio.run(score_missing(a, whole, inputs, NullProgress(), "s", **options))
    with _opened(tmp_path / "b") as b:
        same = asyncio.run(score_chunks(b, chunked, [inputs], NullProgress(), "s", **options))
    assert chunked.order == whole.order != [t for (t,) in inputs.values()] and same == counts
    halves = [dict(list(inputs.items())[:10]), dict(list(inputs.items())[10:])]
    with _opened(tmp_path / "c") as c:
        split = asyncio.run(score_chunks(c, Recorder(), halves, NullProgress(), "s", total=20, **options))
        again = asyncio.run(score_chunks(c, Recorder(), halves, NullProgress(), "s", total=20, **options))
    assert (split.attempted, split.scored, again.reused, again.attempted) == (20, 20, 20, 0)


def test_seen_subjects_keep_each_subject_once() -> None:
    seen = SeenSubjects()
    a, b, c = (text_subject(t) for t in "abc")
    assert seen.add_new([a, b]) == [a, b]
    assert seen.add_new([c, a, "not a hash", c]) == [c, "not a hash"]
    assert seen.add_new(["not a hash", b, "0" * 64]) == ["0" * 64]
    assert len(seen) == 5


def _labelled_csv(path, rows: int):
    lines = ["text,label,category"] + [f"sentence number {i},{i % 2},{('race', 'gender')[i % 2]}" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_csv_file_s_records_are_read_again_not_held(tmp_path) -> None:
    import tracemalloc

    from trusteval.data.files import read_records

    path = _labelled_csv(tmp_path / "data.csv", 20_000)
    tracemalloc.start()
    records = read_records(path)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held < 2_000_000, f"{held:,} bytes held: every row dict (about 8 MB) is kept"
    assert len(records) == 20_000 and records[0] == (2, {"text": "sentence number 0", "label": "0", "category": "race"})
    assert records[-1][0] == 20_001 and [line for line, _ in records][:3] == [2, 3, 4]
    assert list(records) == list(records)


def test_prompts_of_a_file_share_their_language_class_and_empty_attributes(tmp_path) -> None:
    from trusteval.data import load_dataset
    from trusteval.data.sources import DataContext

    path = _labelled_csv(tmp_path / "data.csv", 6)
    prompts = load_dataset(f"file:{path}?lang=zh", DataContext(data_dir=None, cache_dir=tmp_path)).prompts
    assert [p.category for p in prompts] == ["race", "gender"] * 3 and prompts[0].attributes == {}
    assert prompts[0].category is prompts[2].category and prompts[0].attributes is prompts[1].attributes


def test_each_chunk_s_freed_memory_goes_back_to_the_system(tmp_path, data_dir, cache_dir, counting, monkeypatch):
    from trusteval.pipeline import memory

    assert memory.release_free_memory() is True, "glibc's malloc_trim is found on this Linux machine"
    calls: list[int] = []
    monkeypatch.setattr(generate, "release_free_memory", lambda: calls.append(len(counting.alive)))
    monkeypatch.setattr(generate, "GENERATE_CHUNK", 10)
    execute(_spec(tmp_path / "ws", data_dir, cache_dir), env={})
    assert calls == [5, 10, 15, 20], "after each chunk of 10 requests (5 batches of 2)"
