"""Avoidance rate (TrustEval section 3.3): the arithmetic, and the benchmark through the pipeline with a
scripted model and a scripted judge (the real SmolLM2 judge runs in test_trusteval_avoidance_e2e.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats

from trusteval.config import build_run_spec
from trusteval.errors import UsageError
from trusteval.metrics.avoidance import Judgements, avoidance_by_category, avoidance_rate
from trusteval.models import BACKENDS
from trusteval.pipeline import execute
from trusteval.records import Generation, Request, text_subject
from trusteval.report.results import run_results
from trusteval.scorers.judge import JudgePrompt
from trusteval.store import Store


def _judgements(rows):
    """rows: (prompt id, seed, class, value or None, status)."""
    ids, seeds, classes, values, statuses = zip(*rows, strict=True)
    return Judgements(
        np.asarray(ids, dtype=object), np.asarray(seeds), np.asarray(classes, dtype=object),
        np.asarray([np.nan if v is None else v for v in values], dtype=float), np.asarray(statuses, dtype=object),
    )  # fmt: skip


def test_ar_is_the_seed_averaged_percentage_of_parsed_judgements():
    rows = [
        ("a", 1, "race", 1, "ok"), ("b", 1, "race", 0, "ok"), ("c", 1, "race", None, "unparsed"),
        ("a", 2, "race", 1, "ok"), ("b", 2, "race", 1, "ok"), ("c", 2, "race", 1, "ok"),
        ("d", 1, "gender", 0, "ok"), ("d", 2, "gender", None, "error"), ("e", 1, "gender", None, "no response"),
    ]  # fmt: skip
    rates = avoidance_by_category(_judgements(rows), resamples=200)
    # race: seed 1 -> 1/2, seed 2 -> 3/3: AR = 100 * (0.5 + 1.0) / 2
    assert rates["race"].estimate.value == pytest.approx(75.0)
    assert rates["race"].estimate.seed_values == (50.0, 100.0)
    assert (rates["race"].judged, rates["race"].unparsed) == (5, 1)
    assert rates["gender"].estimate.value == 0.0
    assert rates["gender"].not_judged == {"error": 1, "no response": 1}
    assert rates["overall"].not_judged == {"unparsed": 1, "error": 1, "no response": 1}


def test_a_class_with_no_parsed_judgement_is_nan_not_zero():
    rate = avoidance_rate(_judgements([("a", 1, "race", None, "unparsed")]))
    assert np.isnan(rate.estimate.value) and rate.unparsed == 1 and rate.judged == 0


def test_ar_interval_matches_scipy_bootstrap():
    rng = np.random.default_rng(0)
    values = (rng.random(200) < 0.35).astype(float)
    rows = [(f"p{i}", 42, "region", v, "ok") for i, v in enumerate(values)]
    rate = avoidance_rate(_judgements(rows), resamples=20000)
    ref = stats.bootstrap((100 * values,), np.mean, n_resamples=20000, method="percentile", random_state=1)
    assert rate.estimate.value == pytest.approx(100 * values.mean())
    assert rate.estimate.low == pytest.approx(ref.confidence_interval.low, abs=0.5 + 1e-9)
    assert rate.estimate.high == pytest.approx(ref.confidence_interval.high, abs=0.5 + 1e-9)


# -- the benchmark through the pipeline ---------------------------------------------------------------------


class Answerer:
    """A model that apologises to prompts whose text length is even and repeats the others."""

    batch_size = 4
    max_concurrency = 1

    def __init__(self, spec, settings):
        return None

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [Generation(r.key, self.answer(r.messages[-1][1], r.seed)) for r in requests]

    @staticmethod
    def answer(text: str, seed: int) -> str:
        return "Sorry, I will not say that." if len(text) % 2 == 0 else f"{text} (seed {seed})"

    async def aclose(self):
        return None

    def describe(self):
        return {"backend": "answerer"}


class Judge(Answerer):
    """Answers 1 to an apology, 0 to a repeat, and rambles (unparsed) when the prompt has a digit."""

    calls: ClassVar[list[str]] = []

    async def generate(self, requests):
        out = []
        for r in requests:
            user = r.messages[-1][1]
            Judge.calls.append(user)
            prompt = user.split("<prompt>\n", 1)[1].split("\n</prompt>", 1)[0]
            answer = "1" if "Sorry" in user else "0"
            out.append(Generation(r.key, "hmm, hard to say" if any(c.isdigit() for c in prompt) else answer))
        return out


@pytest.fixture
def scripted():
    BACKENDS.register("answerer", Answerer)
    BACKENDS.register("scripted-judge", Judge)
    Judge.calls = []
    yield
    BACKENDS.unregister("answerer")
    BACKENDS.unregister("scripted-judge")


def _spec(tmp_path, data_dir, cache_dir, **extra):
    flags = {"benchmark": "trusteval-avoidance", "models": ["answerer:a"], "judge": "scripted-judge:j",
             "per_category": 5, "seeds": [42, 43], "store": str(tmp_path / "ws"), "data_dir": str(data_dir),
             "cache_dir": str(cache_dir), **extra}  # fmt: skip
    return build_run_spec(flags, env={})


def _expected(prompt: str, seed: int) -> float | None:
    if any(c.isdigit() for c in prompt):
        return None
    return 1.0 if len(prompt) % 2 == 0 else 0.0


@pytest.mark.slow
def test_avoidance_run_counts_unparsed_and_reuses_every_judgement(tmp_path, data_dir, cache_dir, scripted):
    spec = _spec(tmp_path, data_dir, cache_dir)
    first = execute(spec, env={})
    store = Store.open(spec.store)
    items = store.run_items(spec.run_id)
    assert len(items) == 30 and {i.prompt.label for i in items} == {1}
    assert sorted({i.prompt.category for i in items}) == ["gender", "race", "region"]
    judge_id = store.aggregate(spec.run_id, "tasks")["avoidance_judge"]
    prompt_sha = JudgePrompt.load("avoidance_v1").sha256
    assert prompt_sha[:12] in judge_id
    by_subject = store.scores(judge_id, [text_subject(i.prompt.text, i.response) for i in items])
    assert len(by_subject) == len({(i.prompt.text, i.response) for i in items})
    assert all(json.loads(s.detail)["prompt_sha256"] == prompt_sha for s in by_subject.values())

    metrics = first.metrics["models"]["answerer:a"]
    for category in ("gender", "race", "region", "overall"):
        mine = [i for i in items if category in ("overall", i.prompt.category)]
        expected = [_expected(i.prompt.text, i.seed) for i in mine]
        parsed = [v for v in expected if v is not None]
        assert metrics[category]["unparsed"] == sum(v is None for v in expected)
        if parsed:  # both seeds see the same prompts, so the seed average is the plain mean
            assert metrics[category]["value"] == pytest.approx(100 * np.mean(parsed))
    assert first.unparsed == metrics["overall"]["unparsed"] and first.score_failures == 0

    calls = len(Judge.calls)
    second = execute(spec, env={})
    assert len(Judge.calls) == calls and (second.generated, second.scored) == (0, 0)
    assert run_results(store, spec.run_id).metrics == second.metrics
    store.close()


def test_pairs_reach_the_judge_in_a_shuffled_order(tmp_path, data_dir, cache_dir, scripted):
    spec = _spec(tmp_path, data_dir, cache_dir, seeds=[42], per_category=10)
    execute(spec, env={})
    store = Store.open(spec.store)
    planned = [i.prompt.text for i in store.run_items(spec.run_id)]
    store.close()
    judged = [call.split("<prompt>\n", 1)[1].split("\n</prompt>", 1)[0] for call in Judge.calls]
    assert sorted(judged) == sorted(planned) and judged != planned


def test_avoidance_refuses_limit_before_writing_anything(tmp_path, data_dir, cache_dir, scripted):
    with pytest.raises(UsageError, match="--per-category"):
        execute(_spec(tmp_path, data_dir, cache_dir, limit=3), env={})
    assert not (tmp_path / "ws").exists()


def test_an_unknown_judge_stops_the_run_before_writing_anything(tmp_path, data_dir, cache_dir, scripted):
    with pytest.raises(UsageError, match="unknown model backend 'nosuch'"):
        execute(_spec(tmp_path, data_dir, cache_dir, judge="nosuch:x"), env={})
    assert not (tmp_path / "ws").exists()
