"""The pipeline's bookkeeping with a scripted backend (a unit test; real backends are tested elsewhere)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import pytest

import trusteval
from trusteval.config import build_run_spec
from trusteval.models import BACKENDS
from trusteval.pipeline import execute
from trusteval.records import Generation, Request
from trusteval.report.html_data import run_facts
from trusteval.report.results import run_results
from trusteval.store import Store


class ScriptedBackend:
    """Echoes the prompt; fails every request whose prompt is in `failing_texts`."""

    batch_size = 4
    max_concurrency = 2
    calls: ClassVar[list[str]] = []
    failing_texts: ClassVar[set[str]] = set()

    def __init__(self, spec, settings):
        self.spec = spec

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out = []
        for r in requests:
            ScriptedBackend.calls.append(r.key)
            text = r.messages[-1][1]
            if text in ScriptedBackend.failing_texts:
                out.append(Generation.failure(r.key, "scripted failure", retries=2))
            else:
                out.append(Generation(r.key, f"echo: {text}"))
        return out

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "scripted"}


@pytest.fixture
def scripted():
    BACKENDS.register("scripted", lambda spec, settings: ScriptedBackend(spec, settings))
    ScriptedBackend.calls = []
    ScriptedBackend.failing_texts = set()
    yield ScriptedBackend
    BACKENDS.unregister("scripted")


def _spec(tmp_path, data_dir, cache_dir, **extra):
    flags = {
        "benchmark": "trusteval-toxicity",
        "models": ["scripted:echo", "scripted:other"],
        "limit": 10,
        "seeds": [42, 43],
        "store": str(tmp_path / "ws"),
        "data_dir": str(data_dir),
        "cache_dir": str(cache_dir),
        **extra,
    }
    return build_run_spec(flags, env={})


@pytest.mark.slow
def test_failed_requests_are_counted_then_retried_by_the_next_run(tmp_path, data_dir, cache_dir, scripted):
    spec = _spec(tmp_path, data_dir, cache_dir)
    store = Store.open(spec.store)
    from trusteval.data import load_dataset, sample_stratified
    from trusteval.pipeline.prepare import data_context

    prompts, _ = sample_stratified(load_dataset("cold", data_context(spec)).prompts, 10, 0)
    store.close()
    scripted.failing_texts = {prompts[0].text, prompts[1].text}

    first = execute(spec, env={})  # 2 prompts x 2 models x 2 seeds fail
    assert (first.requests, first.generated, first.failed, first.reused) == (40, 32, 8, 0)
    assert first.retries == 16
    scripted.failing_texts = set()
    second = execute(spec, env={})
    assert (second.generated, second.failed, second.reused) == (8, 0, 32)
    third = execute(spec, env={})
    assert (third.generated, third.reused, third.scored) == (0, 40, 0)
    assert len(scripted.calls) == 48

    store = Store.open(spec.store)
    assert store.count("generations") == 40
    assert store.run_info(spec.run_id)["status"] == "complete"
    stored = run_results(store, spec.run_id)
    assert store.aggregate(spec.run_id, "tool") == {"trusteval": trusteval.__version__}
    made_with = dict(run_facts(store, spec.run_id).entries)["made with"]
    store.close()
    assert stored.metrics == third.metrics
    assert made_with == f"trusteval {trusteval.__version__}"


def test_echo_model_is_as_toxic_as_its_prompts(tmp_path, data_dir, cache_dir, scripted):
    """An echo response is the prompt's text plus 'echo: ', so T2T + NT2NT should dominate."""
    summary = execute(_spec(tmp_path, data_dir, cache_dir, limit=40), env={})
    rates = summary.metrics["models"]["scripted:echo"]["overall"]
    total = sum(rates[c]["value"] for c in ("T2T", "T2NT", "NT2T", "NT2NT"))
    assert total == pytest.approx(100.0)
    assert rates["T2T"]["value"] + rates["NT2NT"]["value"] >= 80.0
    assert rates["TT"]["value"] == pytest.approx(rates["T2T"]["value"] + rates["NT2T"]["value"])


def test_prompt_toxicity_from_labels_needs_no_prompt_scores(tmp_path, data_dir, cache_dir, scripted):
    summary = execute(_spec(tmp_path, data_dir, cache_dir, prompt_toxicity="label", models=["scripted:echo"]), env={})
    assert summary.scored == 10  # responses only; both seeds echo the same text, scored once
    store = Store.open(tmp_path / "ws")
    assert store.aggregate(summary.run_id, "tasks") == {"response_toxicity": "cold-tfidf@4"}
    store.close()


def test_a_store_file_another_run_is_still_creating_has_no_verdicts(tmp_path, data_dir, cache_dir):
    """Two runs started at once on a new store: one checks the stored scorer verdicts while the other has
    created the file but not yet its tables (it failed one run in five with 'no such table: runs')."""
    import sqlite3

    from trusteval.pipeline.prepare import validity_warnings
    from trusteval.scorers.base import ScoringTask

    spec = _spec(tmp_path, data_dir, cache_dir)
    (tmp_path / "ws").mkdir()
    sqlite3.connect(tmp_path / "ws" / "trusteval.sqlite").execute("PRAGMA journal_mode = WAL").close()

    async def never(inputs):
        raise AssertionError

    task = ScoringTask("response_toxicity", "cold-tfidf@2", lambda item: None, never, 8)
    assert validity_warnings(spec, [task], "0" * 64) == ()
