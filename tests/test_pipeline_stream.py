"""A backend with the answer-stream hook (models/base.py: HasAnswerStream): the pipeline stores each answer as
it arrives, before the backend's call ends, and a request the stream never answers is stored as a failure."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import ClassVar

import pytest

from trusteval.config import build_run_spec
from trusteval.models import BACKENDS
from trusteval.models.base import HasAnswerStream
from trusteval.pipeline import execute
from trusteval.records import Generation, Request
from trusteval.store import Store


class StreamingBackend:
    """Yields an echo of each request one at a time, except the last request of every call (left unanswered);
    before each answer after the first, it looks in the store for the answers it has already yielded."""

    batch_size = 4
    max_concurrency = 1
    store_path: ClassVar[str] = ""
    checks: ClassVar[list[tuple[int, int]]] = []  # (answers yielded so far, of those found in the store)

    def __init__(self, spec, settings):
        self.spec = spec

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        raise AssertionError("the pipeline must use generate_stream")

    async def generate_stream(self, requests: Sequence[Request]) -> AsyncIterator[Generation]:
        yielded: list[str] = []
        for r in requests[:-1]:
            if yielded:
                store = Store.open(StreamingBackend.store_path)
                found = store.stored_generation_keys(yielded)
                store.close()
                StreamingBackend.checks.append((len(yielded), len(found)))
            yield Generation(r.key, f"echo: {r.messages[-1][1]}")
            yielded.append(r.key)

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "stream"}


@pytest.fixture
def streaming(tmp_path):
    BACKENDS.register("stream", lambda spec, settings: StreamingBackend(spec, settings))
    StreamingBackend.store_path = str(tmp_path / "ws")
    StreamingBackend.checks = []
    yield StreamingBackend
    BACKENDS.unregister("stream")


def test_each_streamed_answer_is_stored_before_the_call_ends(tmp_path, data_dir, cache_dir, streaming):
    assert isinstance(StreamingBackend(None, None), HasAnswerStream)
    flags = {
        "benchmark": "trusteval-toxicity",
        "models": ["stream:echo"],
        "limit": 8,
        "seeds": [42],
        "store": str(tmp_path / "ws"),
        "data_dir": str(data_dir),
        "cache_dir": str(cache_dir),
    }
    spec = build_run_spec(flags, env={})
    summary = execute(spec, env={})
    assert (summary.requests, summary.generated, summary.failed) == (8, 6, 2)  # 2 calls of 4, 3 answers each
    assert streaming.checks == [(1, 1), (2, 2), (1, 1), (2, 2)]
    store = Store.open(spec.store)
    errors = [row[0] for row in store.conn.execute("SELECT error FROM generation_failures")]
    store.close()
    assert errors == ["backend returned no answer"] * 2
