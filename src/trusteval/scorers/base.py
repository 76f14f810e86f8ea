"""The scorer protocol: a batched callable over texts that records who it is on every score; a ScoringTask
applies one scorer to one kind of input of every run item.

A scorer is built once by its factory (its model loaded once) and then called on batches of texts. It
returns one Outcome per text; an Outcome without a value carries the reason (`status`, `detail`), so a failed
score is stored as a failure and counted, never turned into 0 or 1.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from trusteval.records import ScoreStatus, TaskSubject, task_subject
from trusteval.store.rows import RunItem
from trusteval.util.folders import DEFAULT_CACHE

if TYPE_CHECKING:
    from trusteval.scorers.judge_validity import StoredValidation

Inputs = tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    value: float | None
    status: ScoreStatus = ScoreStatus.OK
    label: str | None = None
    detail: str | None = None

    @staticmethod
    def unscored(status: ScoreStatus, detail: str) -> Outcome:
        return Outcome(value=None, status=status, detail=detail)


@dataclass(frozen=True)
class ScorerContext:
    """What a scorer factory is given: the environment (for API keys), the data folder (for detectors trained
    on first use) and the cache folder (for trained detectors and cached API responses)."""

    env: Mapping[str, str] = field(default_factory=dict)
    data_dir: Path | None = None
    cache_dir: Path = DEFAULT_CACHE
    allow_unpinned_data: bool = False  # train detectors on mirror files that do not match their pins


@runtime_checkable
class TextScorer(Protocol):
    """Scores texts. `id` is unique per model and version (it keys stored scores); `languages` lists the
    languages it is valid for (empty: any); `threshold` turns a value into toxic / not toxic."""

    id: str
    kind: str
    languages: frozenset[str]
    threshold: float
    batch_size: int

    def score(self, texts: Sequence[str]) -> list[Outcome]: ...

    def describe(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ScoringTask:
    """One scorer applied to one kind of input of every run item.

    `select` picks the inputs of an item (None: nothing to score, e.g. a failed generation); `run` scores a
    batch of inputs. The stored subject is the content hash of the inputs, so the same text is scored once
    per scorer, whatever model or benchmark produced it.
    """

    name: str
    scorer_id: str
    select: Callable[[RunItem], Inputs | None]
    run: Callable[[list[Inputs]], Awaitable[list[Outcome]]]
    batch_size: int
    info: dict[str, Any] = field(default_factory=dict)
    close: Callable[[], Awaitable[None]] | None = None
    # the spec load_scorer rebuilds this task's TextScorer from (it scores the first input), so an executor can
    # score on other machines; None: the scorer exists only in this process (a judge holding a backend)
    scorer_spec: str | None = None
    in_flight: int = 1  # batches scored at once (a pool of remote workers: executors/ray_scoring.py)
    subject_kind: TaskSubject = TaskSubject.RESPONSE
    # `select` returns exactly the item's prompt text or response text (text_task): its subject is the stored
    # prompt_subject / response_subject, so the score stage counts what is left in SQL (Store.task_subjects)
    stored_text: bool = False
    skip_empty: bool = False  # with stored_text: empty and whitespace-only responses are not selected
    # responses in another script than their prompt's language are not selected (option off_language=exclude)
    skip_off_language: bool = False

    def __post_init__(self) -> None:
        if task_subject(self.name) != self.subject_kind:  # readers tell a stored task's subject by its name
            raise ValueError(f"scoring task {self.name!r} scores the {self.subject_kind} but its name says otherwise")


@dataclass(frozen=True)
class ScorerInfo:
    """What a run knows of one task's scorer: the description it stored (its `describe()`, free-form per
    scorer) and what validation found on the run's data (scorers.validation.scorer_info builds it)."""

    described: Mapping[str, Any] = field(default_factory=dict)
    validation_note: str | None = None  # the line printed under tables computed with this scorer
    validity: str | None = None  # the verdict on the run's data, "not validated", or None (no data hash)
    validity_detail: Mapping[str, Any] | None = None
    judge_validation: StoredValidation | None = None  # a judge's stored agreement with human labels
    validity_looked_up: bool = False  # validation was looked up: `validity` is written even when None
    data_verdict: Any = None  # scorers.verdict.VerdictRecord on the run's data, when there is one
    response_verdict: Any = None  # scorers.verdict.VerdictRecord on the response check set of the data's language
    response_note: str | None = None  # the line saying the verdict on responses, printed under the tables

    def as_dict(self) -> dict[str, Any]:
        """The description with the validity keys beside it, as the metrics write it (judge_validation apart)."""
        found: dict[str, Any] = dict(self.described)
        if self.validation_note:
            found["validation_note"] = self.validation_note
        if self.validity_looked_up:
            found["validity"] = self.validity
        if self.validity_detail:
            found["validity_detail"] = self.validity_detail
        if self.validity_looked_up and self.response_note:
            found["validity_on_responses"] = self.response_verdict.verdict if self.response_verdict else "not validated"
        return found

    def scorer_id(self, fallback: str | None) -> str | None:
        """The id that keys the scorer's stored scores (`id` when its description has one, else `scorer`)."""
        return self.described.get("id") or self.described.get("scorer") or fallback

    def get(self, key: str, default: Any = None) -> Any:
        """One field of the scorer's own description (held-out accuracy, judge prompt, ...)."""
        return self.described.get(key, default)
