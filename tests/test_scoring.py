"""scorers/scoring.py: the one "score what is not stored yet" loop behind runs, judge validation and scorer
validation (issue 12), on a real store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from trusteval.progress import NullProgress
from trusteval.records import Prompt, text_subject
from trusteval.scorers.base import Outcome
from trusteval.scorers.scoring import ScoreCounts, score_missing
from trusteval.scorers.validation import score_prompts
from trusteval.store import Store

TEXTS = [f"text {i}" for i in range(10)]


@dataclass
class LengthScorer:
    """Scores a text by its length parity; `broken` texts make the whole batch raise, `short` returns one
    outcome too few for a batch holding it, and `refused` texts are unparsed."""

    id: str = "length@1"
    kind: str = "toxicity"
    languages: frozenset[str] = frozenset()
    threshold: float = 0.5
    batch_size: int = 3
    broken: set[str] = field(default_factory=set)
    short: set[str] = field(default_factory=set)
    refused: set[str] = field(default_factory=set)
    seen: list[list[str]] = field(default_factory=list)

    def score(self, texts: Sequence[str]) -> list[Outcome]:
        self.seen.append(list(texts))
        if self.broken & set(texts):
            raise RuntimeError("model crashed")
        outcomes = [
            Outcome.unscored("unparsed", "no verdict") if t in self.refused else Outcome(float(len(t) % 2))
            for t in texts
        ]
        return outcomes[:-1] if self.short & set(texts) else outcomes

    def describe(self) -> dict[str, str]:
        return {"scorer": self.id}

    @property
    def scorer_id(self) -> str:
        return self.id

    @property
    def run(self):
        async def run(batch: list[tuple[str, ...]]) -> list[Outcome]:
            return self.score([inputs[0] for inputs in batch])

        return run


def _score(store: Store, scorer: LengthScorer, **options) -> ScoreCounts:
    inputs = {text_subject(t): (t,) for t in TEXTS}
    return asyncio.run(score_missing(store, scorer, inputs, NullProgress(), "score", **options))


def test_crash_and_wrong_count_are_error_scores_retried_next_time(tmp_path) -> None:
    store = Store.open(tmp_path)
    try:
        scorer = LengthScorer(broken={"text 0"}, short={"text 4"}, refused={"text 9"})
        first = _score(store, scorer)  # batches [0 1 2] (crash) [3 4 5] (short) [6 7 8] [9]
        assert first == ScoreCounts(attempted=10, scored=3, reused=0, failures=6, unparsed=1)
        stored = store.scores(scorer.id, [text_subject(t) for t in TEXTS])
        assert stored[text_subject("text 1")].detail == "RuntimeError: model crashed"
        assert stored[text_subject("text 3")].detail == "scorer returned 2 outcomes for 3 inputs"
        again = _score(store, LengthScorer())
        assert again == ScoreCounts(attempted=6, scored=6, reused=4, failures=0, unparsed=1)
        assert _score(store, LengthScorer()) == ScoreCounts(attempted=0, scored=0, reused=10, unparsed=1)
    finally:
        store.close()


def test_seeded_order_and_batches_in_flight_store_the_same_scores(tmp_path) -> None:
    values = []
    for in_flight, seed in ((1, None), (4, 0)):
        store = Store.open(tmp_path / str(in_flight))
        scorer = LengthScorer()
        try:
            _score(store, scorer, in_flight=in_flight, shuffle_seed=seed)
            values.append({s: v.value for s, v in store.scores(scorer.id, map(text_subject, TEXTS)).items()})
        finally:
            store.close()
        order = [t for batch in scorer.seen for t in batch]
        assert sorted(order) == sorted(TEXTS) and (order == TEXTS) == (seed is None)
    assert values[0] == values[1] and len(values[0]) == len(TEXTS)


def test_scorer_validation_stores_a_crash_and_leaves_its_items_out(tmp_path) -> None:
    """Before the shared loop, a scorer that raised stopped `scorers validate` with a traceback."""
    prompts = [Prompt(f"p{i}", "d", t, "en", label=i % 2) for i, t in enumerate(TEXTS)]
    store = Store.open(tmp_path)
    try:
        values = score_prompts(LengthScorer(broken={"text 0"}), prompts, store)
        assert values[:3] == [None, None, None]
        assert values[3:] == [float(len(t) % 2) for t in TEXTS[3:]]
        assert score_prompts(LengthScorer(), prompts, store) == [float(len(t) % 2) for t in TEXTS]
    finally:
        store.close()
