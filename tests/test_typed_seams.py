"""Typed seams: score statuses and task subjects are enums whose stored and written form is the plain string
they replaced, so stores and JSON written before them read back the same."""

from __future__ import annotations

import json
import sqlite3

import pytest

from trusteval.records import Score, ScoreStatus, TaskSubject, task_subject
from trusteval.scorers.base import ScorerInfo, ScoringTask
from trusteval.store import STORE_FILENAME, Store


def test_score_statuses_keep_their_stored_strings():
    assert [s.value for s in ScoreStatus] == ["ok", "unparsed", "error", "refused"]
    assert json.dumps({ScoreStatus.UNPARSED: ScoreStatus.ERROR}) == '{"unparsed": "error"}'
    assert f"{ScoreStatus.REFUSED}" == "refused" and str(ScoreStatus.OK) == "ok"


def test_a_status_is_stored_as_text_and_read_back_as_the_enum(tmp_path):
    store = Store.open(tmp_path)
    store.add_scores([Score("a", "sc", None, ScoreStatus.UNPARSED, detail="?"), Score("b", "sc", 1.0)])
    store.close()
    raw = sqlite3.connect(tmp_path / STORE_FILENAME).execute("SELECT subject, status, typeof(status) FROM scores")
    assert sorted(raw.fetchall()) == [("a", "unparsed", "text"), ("b", "ok", "text")]
    found = Store.open_read_only(tmp_path).scores("sc", ["a", "b"])
    assert found["a"].status is ScoreStatus.UNPARSED and not found["a"].ok
    assert found["b"].status is ScoreStatus.OK and found["b"].ok


def test_a_plain_string_status_still_compares_equal():
    assert Score("a", "sc", 1.0, "ok").ok  # type: ignore[arg-type]
    assert not Score("a", "sc", None, "error").ok  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "subject"),
    [("prompt_toxicity", TaskSubject.PROMPT), ("response_toxicity", TaskSubject.RESPONSE),
     ("refusal", TaskSubject.RESPONSE), ("avoidance_judge", TaskSubject.RESPONSE)],
)  # fmt: skip
def test_a_stored_task_name_tells_its_subject(name, subject):
    assert task_subject(name) is subject


async def _nothing(batch):
    return []


def test_a_scoring_task_whose_name_misleads_readers_is_refused():
    with pytest.raises(ValueError, match="prompt_toxicity"):
        ScoringTask("prompt_toxicity", "s", lambda item: None, _nothing, 1)
    with pytest.raises(ValueError, match="toxicity"):
        ScoringTask("toxicity", "s", lambda item: None, _nothing, 1, subject_kind=TaskSubject.PROMPT)
    task = ScoringTask("prompt_toxicity", "s", lambda item: None, _nothing, 1, subject_kind=TaskSubject.PROMPT)
    assert task.subject_kind is TaskSubject.PROMPT


def test_scorer_info_writes_the_description_with_the_validity_keys_in_their_old_order():
    info = ScorerInfo(
        {"scorer": "tfidf@1", "test_accuracy": 0.9}, validation_note="valid on x", validity=None,
        validity_detail={"verdict": "valid"}, judge_validation={"kappa": 0.5}, validity_looked_up=True,
    )  # fmt: skip
    assert list(info.as_dict().items()) == [("scorer", "tfidf@1"), ("test_accuracy", 0.9),
        ("validation_note", "valid on x"), ("validity", None), ("validity_detail", {"verdict": "valid"})]  # fmt: skip
    assert info.scorer_id("fallback") == "tfidf@1" and ScorerInfo().scorer_id("fallback") == "fallback"
    assert ScorerInfo({"id": "a", "scorer": "b"}).scorer_id(None) == "a"
    assert ScorerInfo({"scorer": "s"}).as_dict() == {"scorer": "s"}  # validity never looked up: not written
