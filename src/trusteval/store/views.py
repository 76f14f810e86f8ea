"""Read-only views of a stored run that hold no rows: its items re-read from the store chunk by chunk on every
pass, and one scorer's scores looked up one subject at a time. A run of any size is aggregated in bounded
memory through them (docs/performance.md)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from trusteval.records import Score, ok_value
from trusteval.store.core import Store
from trusteval.store.reads import READ_CHUNK
from trusteval.store.rows import RunItem, chunked
from trusteval.util.lazyseq import LazySequence


class RunItems(LazySequence[RunItem]):
    """A run's items in planned order; iterating reads them again, READ_CHUNK rows at a time."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id
        self._count: int | None = None

    def __iter__(self) -> Iterator[RunItem]:
        for chunk in self.store.iter_run_items(self.run_id):
            yield from chunk

    def chunks(self) -> Iterator[list[RunItem]]:
        return self.store.iter_run_items(self.run_id)

    def __len__(self) -> int:
        if self._count is None:
            self._count = self.store.count_run_items(self.run_id)
        return self._count


class StoredScores(Mapping[str, Score]):
    """One scorer's stored scores by subject, looked up as they are asked for (benchmarks only `get` the
    subjects of their items); iterating lists every subject the scorer has scored in the store."""

    def __init__(self, store: Store, scorer_id: str) -> None:
        self.store = store
        self.scorer_id = scorer_id

    def __getitem__(self, subject: str) -> Score:
        score = self.store.score(self.scorer_id, subject)
        if score is None:
            raise KeyError(subject)
        return score

    def get(self, subject: str, default: Score | None = None) -> Score | None:  # type: ignore[override]
        score = self.store.score(self.scorer_id, subject)
        return default if score is None else score

    def __iter__(self) -> Iterator[str]:
        return self.store.scored_by(self.scorer_id)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def item_chunks(items: Sequence[RunItem]) -> Iterator[Sequence[RunItem]]:
    """A run's items a chunk at a time: a RunItems view reads one chunk per query, a list is sliced."""
    return items.chunks() if isinstance(items, RunItems) else chunked(items, READ_CHUNK)


def ok_values_of(scores: Mapping[str, Score], subjects: Iterable[str]) -> Mapping[str, float]:
    """records.ok_value of the scores of `subjects`, absent where None: a StoredScores view reads them in one
    query per 900 subjects (instead of one per subject)."""
    if isinstance(scores, StoredScores):
        return scores.store.ok_values(scores.scorer_id, subjects)
    values = {subject: ok_value(scores.get(subject)) for subject in subjects}
    return {subject: value for subject, value in values.items() if value is not None}


def scores_of(scores: Mapping[str, Score], subjects: Iterable[str]) -> Mapping[str, Score]:
    """The stored scores of `subjects` (or all of `scores` when it is not a store view): a StoredScores view
    reads them in one query per 900 subjects instead of one query per subject."""
    if isinstance(scores, StoredScores):
        return scores.store.scores(scores.scorer_id, subjects)
    return scores
