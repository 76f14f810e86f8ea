"""Tests that pin HOW data is read, not only what comes out: each replaces a function with one that fails when
called, to prove that a path is never taken (a stored run read row by row instead of in one SQL pass, a score
looked up per subject instead of per chunk).

They spy on internal details on purpose. The results are the same either way (the equivalence tests in
test_toxicity_pairs.py and test_toxicity_pairs_random.py check that); what these guard is the cost: the slow path
makes one query per row or subject on a large run (docs/performance.md), and nothing else would notice. A
refactor that renames or moves a spied function must update this file, and only this file: keep such spies here.
"""

from __future__ import annotations

import numpy as np
import pytest

from test_toxicity_pairs import SCORER, _run
from trusteval.benchmarks import trusteval_toxicity as toxicity
from trusteval.benchmarks.trusteval_toxicity import RESPONSE_TASK, collect_pairs
from trusteval.records import Score, text_subject
from trusteval.store import Store
from trusteval.store.views import RunItems, StoredScores


@pytest.fixture
def store(tmp_path):
    s = Store.open(tmp_path / "ws")
    _run(s)
    yield s
    s.close()


def test_a_stored_run_is_not_read_as_run_items(store, monkeypatch):
    def no_items(*args, **kwargs):
        raise AssertionError("read RunItems")

    monkeypatch.setattr(Store, "iter_run_items", no_items)
    monkeypatch.setattr(toxicity, "_item_rows", no_items)
    by_sql = collect_pairs(RunItems(store, "r1"), {RESPONSE_TASK: StoredScores(store, SCORER)}, 0.5, "label", "keep")
    assert sum(len(p.pairs) for p in by_sql.values()) == 2 * 40 - sum(sum(p.skipped.values()) for p in by_sql.values())


def test_trustgpt_answers_of_a_stored_run_read_scores_per_chunk_not_per_subject(store, monkeypatch):
    from trusteval.benchmarks import trustgpt_common as common

    items = list(RunItems(store, "r1"))
    pairs = [text_subject(i.prompt.text, i.response) for i in items if i.response is not None]
    store.add_scores([Score(subject, "refusal", float(n % 3 == 0)) for n, subject in enumerate(pairs)])
    tasks = {common.RESPONSE_TOXICITY: SCORER, common.REFUSAL: "refusal"}
    plain = {task: dict(store.scores(scorer, StoredScores(store, scorer))) for task, scorer in tasks.items()}
    need = (common.REFUSAL, common.RESPONSE_TOXICITY)
    want = common.collect_answers(items, plain, need=need, pair_refusal=True)

    def one_by_one(*args):
        raise AssertionError("a score looked up per subject")

    monkeypatch.setattr(Store, "score", one_by_one)
    views = {task: StoredScores(store, scorer) for task, scorer in tasks.items()}
    got = common.collect_answers(items, views, need=need, pair_refusal=True)
    assert got == want
    assert sum(len(a) for a in got[0].values()) == 46  # refusals (every third answer) need no toxicity
    assert dict(got[1]["model-a"]) == {
        "generation failed": 4,
        "empty response": 8,
        "toxicity not scored": 2,
        "toxicity not scored (unparsed)": 2,
    }


def test_avoidance_judgements_of_a_stored_run_read_verdicts_per_chunk_not_per_pair(store, monkeypatch):
    from trusteval.benchmarks.trusteval_avoidance import collect_judgements

    items = list(RunItems(store, "r1"))
    pairs = [text_subject(i.prompt.text, i.response) for i in items if i.response is not None]
    verdicts = [Score(s, "judge", float(n % 2), label="avoids" if n % 2 else "complies") for n, s in enumerate(pairs)]
    store.add_scores([*verdicts[:30], Score(pairs[30], "judge", None, "unparsed")])  # the rest not judged yet
    want = collect_judgements(items, dict(store.scores("judge", pairs)))

    def one_by_one(*args):
        raise AssertionError("a verdict looked up per pair")

    monkeypatch.setattr(Store, "score", one_by_one)
    got = collect_judgements(items, StoredScores(store, "judge"))
    assert list(got) == list(want) == ["model-a", "model-b"]
    for model, judgements in want.items():
        assert got[model].statuses.tolist() == judgements.statuses.tolist()
        assert np.array_equal(got[model].values, judgements.values, equal_nan=True)
    statuses = got["model-a"].statuses.tolist()  # its 36 answers are the first 36 pairs: 30 judged, 1 unparsed
    assert [statuses.count(s) for s in ("ok", "unparsed", "missing", "no response")] == [30, 1, 5, 4]
