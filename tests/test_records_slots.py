"""Planned items and run items are slotted (issue 13: memory per planned item) and still cross process
boundaries (the Ray executor pickles Requests to its actors)."""

from __future__ import annotations

import pickle

from trusteval.benchmarks.base import PlannedItem, render_messages
from trusteval.records import GenerationParams, Prompt, Request
from trusteval.store.rows import RunItem


def test_planned_and_run_items_have_no_instance_dict_and_pickle():
    prompt = Prompt(id="p1", dataset="d", text="文本", lang="zh", label=1, category="c", attributes={"k": "v"})
    request = Request.build("m", render_messages("{text}", prompt.text), GenerationParams(), 42)
    planned = PlannedItem(request, "m", prompt, {"word": "x"})
    run_item = RunItem(request.key, "m", 42, prompt, "s", {}, "answer", "t", None)
    for value in (prompt, request, request.params, planned, run_item):
        assert not hasattr(value, "__dict__")
        assert pickle.loads(pickle.dumps(value)) == value
    assert pickle.loads(pickle.dumps(prompt)).content_key == prompt.content_key
    assert request.messages == (("user", "文本"),)
