"""A run's record beside its rows: what the store's `aggregates` table holds for each run, read and written by
name instead of by JSON key (the shape of inspect_ai's typed eval log).

Each aggregate is one JSON value keyed (run id, name). A run writes `tasks`, `tool`, `models`, `data` and (with
`--shard`) `shard` when it starts, and `timings`, `metrics` and `tables` when it ends; `trusteval merge` writes
`metrics` and `tables` again. Stored JSON is unchanged: canonical JSON of the same values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trusteval.store.core import Store

TASKS = "tasks"  # scoring task name -> scorer id
TOOL = "tool"  # {"trusteval": version} of the latest invocation
MODELS = "models"  # model spec as written -> identity
DATA = "data"  # RunData
SHARD = "shard"  # "i/n"
TIMINGS = "timings"  # [[stage, seconds], ...] in stage order
METRICS = "metrics"  # the benchmark's metrics
TABLES = "tables"  # [Table.as_dict(), ...]
SAMPLING = "sampling"  # model spec -> its sampling description (trusteval.models.sampling)


@dataclass(frozen=True)
class RunData:
    """The data a run read: the loader's notes, the source files (with their hashes), the sha256 of the prompts'
    content, and whether files that do not match their pins were allowed."""

    notes: tuple[str, ...] = ()
    sources: Any = None
    content_sha256: str | None = None
    allow_unpinned_data: bool = False
    languages: tuple[str, ...] = ()  # of the prompts: the response check set a scorer's verdict is looked up on

    @property
    def language(self) -> str | None:
        """The one language of the run's prompts, or None (several, or a run stored before languages were)."""
        return self.languages[0] if len(self.languages) == 1 else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "notes": list(self.notes),
            "sources": self.sources,
            "content_sha256": self.content_sha256,
            "languages": list(self.languages),
            "allow_unpinned_data": self.allow_unpinned_data,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any] | None) -> RunData:
        """A stored `data` aggregate; a run stored without one (or an older one) reads as no data."""
        value = value or {}
        return cls(
            tuple(value.get("notes", ())),
            value.get("sources"),
            value.get("content_sha256"),
            bool(value.get("allow_unpinned_data", False)),
            tuple(value.get("languages") or ()),
        )


class RunRecord:
    """One run's aggregates in a store. Each is read when asked for (metrics and tables can be large)."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    # -- reads -------------------------------------------------------------------------------------------

    def tasks(self) -> dict[str, str]:
        """Scoring task -> scorer id ({} for a run stored before its tasks were recorded)."""
        return self.store.aggregate(self.run_id, TASKS) or {}

    def data(self) -> RunData:
        return RunData.from_dict(self.store.aggregate(self.run_id, DATA))

    def models(self) -> dict[str, str] | None:
        """Model spec -> identity, or None in a store written before they were recorded."""
        recorded = self.store.aggregate(self.run_id, MODELS)
        return recorded if isinstance(recorded, dict) else None

    def sampling(self) -> dict[str, dict[str, Any]]:
        """Model spec -> how it sampled ({} for a run stored before sampling was recorded)."""
        recorded = self.store.aggregate(self.run_id, SAMPLING)
        return recorded if isinstance(recorded, dict) else {}

    def shard(self) -> str | None:
        return self.store.aggregate(self.run_id, SHARD)

    def timings(self) -> dict[str, float]:
        """Stage -> seconds of the latest invocation, in stage order."""
        return dict(self.store.aggregate(self.run_id, TIMINGS) or [])

    def tool_version(self) -> str | None:
        return (self.store.aggregate(self.run_id, TOOL) or {}).get("trusteval")

    # -- writes ------------------------------------------------------------------------------------------

    def record_start(
        self,
        tasks: Mapping[str, str],
        version: str,
        models: Mapping[str, str],
        data: RunData,
        shard: str | None,
        sampling: Mapping[str, Any] | None = None,
    ) -> None:
        put = self.store.put_aggregate
        put(self.run_id, TASKS, dict(tasks))
        put(self.run_id, TOOL, {"trusteval": version})
        put(self.run_id, MODELS, dict(models))
        put(self.run_id, DATA, data.as_dict())
        if sampling is not None:
            put(self.run_id, SAMPLING, dict(sampling))
        if shard:
            put(self.run_id, SHARD, shard)

    def record_timings(self, timings: Mapping[str, float]) -> None:
        self.store.put_aggregate(self.run_id, TIMINGS, list(timings.items()))  # pairs: the stage order stays

    def record_results(self, metrics: Mapping[str, Any], tables: Sequence[Mapping[str, Any]]) -> None:
        self.store.put_aggregate(self.run_id, METRICS, metrics)
        self.store.put_aggregate(self.run_id, TABLES, list(tables))
