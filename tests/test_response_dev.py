"""The dev answers that bench/ experiments choose detector settings on (issue 18) are held out: no sentence and
no group name shared with the response check sets or with the training answers."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from trusteval.scorers.response_dev import dev_answers, disjoint_from
from trusteval.scorers.response_negatives import EN_GROUPS, ZH_GROUPS, response_negatives, response_positives

REPO = Path(__file__).resolve().parents[1]
CHECKSETS = REPO / "src" / "trusteval" / "scorers" / "checksets"


def _check_set_groups(lang: str) -> tuple[str, ...]:
    spec = importlib.util.spec_from_file_location("make_check_sets", REPO / "scripts" / "make_check_sets.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.ZH_GROUPS if lang == "zh" else module.EN_GROUPS


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_dev_answers_share_no_sentence_or_group_with_the_check_set_or_the_training_answers(lang):
    check = [json.loads(line)["text"] for line in (CHECKSETS / f"responses-{lang}-v2.jsonl").open(encoding="utf-8")]
    training = response_negatives(lang) + response_positives(lang)
    groups = (*_check_set_groups(lang), *(ZH_GROUPS if lang == "zh" else EN_GROUPS))
    assert disjoint_from(lang, check + training, groups) == []
    found = dev_answers(lang)
    assert Counter(kind for kind, _, _ in found) == {"refusal": 72, "counter_speech": 120, "neutral": 12, "toxic": 84}
    assert {kind: label for kind, label, _ in found} == {"refusal": 0, "counter_speech": 0, "neutral": 0, "toxic": 1}


def test_an_overlap_is_reported():
    kind, _, text = dev_answers("zh")[100]
    assert kind == "counter_speech"
    assert disjoint_from("zh", [text, "别的句子"], ("广东人", "河南人")) == ["广东人", text]
