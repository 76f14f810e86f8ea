"""An identical rerun (issue 13) counts stored scores in SQL instead of reading every item: the counts must be
the ones reading the items gives (score_missing), and a run with anything left to score still reads them."""

from __future__ import annotations

import asyncio

import pytest

from trusteval.benchmarks.trusteval_toxicity import collect_pairs
from trusteval.pipeline import score
from trusteval.pipeline.score import subject_counts, task_inputs
from trusteval.pipeline.summary import RunSummary
from trusteval.progress import NullProgress
from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, TaskSubject, text_subject
from trusteval.scorers.base import ScoringTask
from trusteval.scorers.language import is_empty
from trusteval.store import Store
from trusteval.store.views import RunItems, StoredScores

RESPONSES = ["same answer", "same answer", "   ", None, "another answer", "third answer"]


async def _never_called(inputs):
    raise AssertionError("nothing is scored here")


def _task(kind: TaskSubject, *, stored_text: bool = True) -> ScoringTask:
    def select(item):
        if kind == TaskSubject.PROMPT:
            return (item.prompt.text,)
        if item.response is None or is_empty(item.response):
            return None
        return (item.response,)

    name = "prompt_toxicity" if kind == TaskSubject.PROMPT else "response_toxicity"
    return ScoringTask(name, "s", select, _never_called, 8, subject_kind=kind, stored_text=stored_text, skip_empty=True)


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "ws")
    prompts = [Prompt(id=f"p{i}", dataset="d", text=f"text {i % 4}", lang="en") for i in range(len(RESPONSES))]
    requests = [Request.build("m", (("user", p.text + str(i)),), GenerationParams(), 42) for i, p in enumerate(prompts)]
    items = [(r, "m", p, {}) for r, p in zip(requests, prompts, strict=True)]
    s.begin_run("r", benchmark="b", dataset="d", spec={}, prompts=prompts, items=items)
    s.add_generations(
        Generation(r.key, text) if text is not None else Generation.failure(r.key, "boom")
        for r, text in zip(requests, RESPONSES, strict=True)
    )
    yield s
    s.close()


def _reference(store: Store, task: ScoringTask) -> tuple[int, int, int]:
    """(subjects, missing, unparsed) as score_missing finds them from the items, subjects re-hashed."""
    inputs = task_inputs(list(RunItems(store, "r")), _task(task.subject_kind, stored_text=False))
    done = store.scored_subjects("s", inputs)
    return len(inputs), len(inputs) - len(done), store.count_unparsed("s", done)


def _items_read(items, task):
    raise AssertionError("a run with every subject scored reads no item")


def _stage_summary(store: Store, task: ScoringTask, monkeypatch) -> RunSummary:
    monkeypatch.setattr(score, "input_chunks", _items_read)
    summary = RunSummary("r", "b", "d")
    asyncio.run(score.score_stage(store, RunItems(store, "r"), task, NullProgress(), summary))
    return summary


@pytest.mark.parametrize("kind", [TaskSubject.RESPONSE, TaskSubject.PROMPT])
def test_subject_counts_equal_the_counts_read_from_the_items(store, kind, monkeypatch):
    task = _task(kind)
    texts = [f"text {i}" for i in range(4)] if kind == TaskSubject.PROMPT else ["same answer", "another answer"]
    store.add_scores([Score(text_subject(texts[0]), "s", 0.5), Score(text_subject(texts[1]), "s", None, "unparsed")])
    found = subject_counts(store, RunItems(store, "r"), task)
    assert found == _reference(store, task) and found is not None and found[1] > 0
    store.add_scores([Score(text_subject(t), "s", 0.1) for t in texts[2:]])
    if kind == TaskSubject.RESPONSE:
        store.add_scores([Score(text_subject("third answer"), "s", None, "error")])  # an error is scored again
        assert subject_counts(store, RunItems(store, "r"), task) == _reference(store, task) == (3, 1, 1)
        store.add_scores([Score(text_subject("third answer"), "s", 0.9)])
    total, missing, unparsed = _reference(store, task)
    assert subject_counts(store, RunItems(store, "r"), task) == (total, missing, unparsed)
    assert (total, missing, unparsed) == ((4, 0, 1) if kind == TaskSubject.PROMPT else (3, 0, 1))
    summary = _stage_summary(store, task, monkeypatch)
    assert (summary.scores_reused, summary.unparsed, summary.scored, summary.score_failures) == (total, unparsed, 0, 0)


def test_task_inputs_use_the_stored_subjects(store):
    items = list(RunItems(store, "r"))
    for kind in TaskSubject:
        assert task_inputs(items, _task(kind)) == task_inputs(items, _task(kind, stored_text=False))


def test_pairs_from_stored_scores_read_per_chunk_equal_pairs_from_a_dict(store):
    subjects = [text_subject(t) for t in ("same answer", "another answer", "third answer")]
    prompt_subjects = [text_subject(f"text {i}") for i in range(4)]
    store.add_scores([Score(subjects[0], "s", 0.7), Score(subjects[1], "s", None, "unparsed")])
    store.add_scores([Score(s, "s", 0.1 * i) for i, s in enumerate(prompt_subjects)])
    stored = {"response_toxicity": StoredScores(store, "s"), "prompt_toxicity": StoredScores(store, "s")}
    held = {name: dict(scores.items()) for name, scores in stored.items()}
    assert store.ok_values("s", [*subjects, "unknown"]) == {subjects[0]: 0.7}
    by_view = collect_pairs(RunItems(store, "r"), stored, 0.5, "scorer")
    by_dict = collect_pairs(list(RunItems(store, "r")), held, 0.5, "scorer")
    assert by_view["m"].skipped == by_dict["m"].skipped
    assert by_view["m"].skipped == {"generation failed": 1, "empty response": 1, "response not scored": 2}
    assert by_view["m"].pairs.response_toxic.tolist() == by_dict["m"].pairs.response_toxic.tolist() == [1, 1]
    assert by_view["m"].pairs.prompt_toxic.tolist() == by_dict["m"].pairs.prompt_toxic.tolist() == [0, 0]
