"""Frozen records that cross stages: Prompt -> Request -> Generation -> Score.

Records are plain, typed and serialisable. Every stage reads and writes these and nothing else, so a stage can
be re-run from the store without the one before it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10: the same behaviour, spelled out (str() and format() give the value)

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str(self.value).__format__(spec)


TOXIC = 1
NON_TOXIC = 0


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the input of every content hash."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(value: Any) -> str:
    return sha256_hex(canonical_json(value))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The row-level JSON below writes what canonical_json writes for the shapes a run has per row (strings, whole
# numbers, None, empty objects, chat messages), joined by hand: json.dumps builds an encoder on every call,
# which was most of the cost of recording a run's rows (tests/test_records.py compares them on odd inputs).
_STR_JSON = json.encoder.encode_basestring  # json.dumps' own C function for a str with ensure_ascii=False


def scalar_json(value: Any) -> str:
    """canonical_json of one value; str, int and None without the encoder."""
    kind = type(value)
    if kind is str:
        return _STR_JSON(value)
    if kind is int:
        return int.__repr__(value)
    return "null" if value is None else canonical_json(value)


def object_json(value: Any) -> str:
    """canonical_json of a JSON object (a variant, attributes); the common empty one without the encoder."""
    return "{}" if type(value) is dict and not value else canonical_json(value)


def messages_json(messages: tuple[tuple[str, str], ...]) -> str:
    """canonical_json of chat messages, (role, content) pairs of strings."""
    parts = []
    for message in messages:
        if type(message) is not tuple or len(message) != 2:
            return canonical_json(messages)
        role, content = message
        if type(role) is not str or type(content) is not str:
            return canonical_json(messages)
        parts.append(f"[{_STR_JSON(role)},{_STR_JSON(content)}]")
    return f"[{','.join(parts)}]"


@dataclass(frozen=True, slots=True)  # slots: one per planned item, a run holds 100,000s
class Prompt:
    """One evaluation item from a dataset.

    `label` is the dataset's toxicity label (1 toxic, 0 non-toxic) when it has one; `category` is the attribute
    class used for bias (COLD topic, HateXplain target class, ...); `attributes` carries anything else a
    benchmark needs (a norm's judgment, a fine-grained label).
    """

    id: str
    dataset: str
    text: str
    lang: str
    label: int | None = None
    category: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def content_key(self) -> str:
        """The stored prompt's id: the dataset's id plus a hash of everything the prompt says (text, language,
        label, category, attributes), so two versions of a data file never share or overwrite a stored prompt."""
        parts = (self.text, self.lang, self.label, self.category)  # then the attributes: canonical_json's list
        content = f"[{','.join(map(scalar_json, parts))},{object_json(self.attributes)}]"
        return f"{self.id}@{sha256_hex(content)[:16]}"


@dataclass(frozen=True, slots=True)
class GenerationParams:
    temperature: float = 0.7
    top_p: float = 0.9
    max_new_tokens: int = 512

    def as_dict(self) -> dict[str, Any]:
        # Spelled out: dataclasses.asdict deep-copies, and this runs once per planned request.
        return {"temperature": self.temperature, "top_p": self.top_p, "max_new_tokens": self.max_new_tokens}

    def json(self) -> str:
        """canonical_json(self.as_dict()); the last parameters' JSON is kept (a run's requests share one
        GenerationParams object), by identity: 1 == 1.0 and 0.0 == -0.0 are written differently."""
        global _LAST_PARAMS
        last = _LAST_PARAMS  # read once: another thread may replace it meanwhile
        if last[0] is not self:
            last = _LAST_PARAMS = (self, canonical_json(self.as_dict()))
        return last[1]


_LAST_PARAMS: tuple[Any, str] = (None, "")  # (GenerationParams, its JSON): the last one asked, kept alive


@dataclass(frozen=True, slots=True)
class Request:
    """A chat request for one model, one prompt, one seed. `key` is its content hash."""

    key: str
    model: str
    messages: tuple[tuple[str, str], ...]
    params: GenerationParams
    seed: int

    @staticmethod
    def build(
        model_identity: str,
        messages: tuple[tuple[str, str], ...],
        params: GenerationParams,
        seed: int,
    ) -> Request:
        # canonical_json of {"model", "messages", "params", "seed"}: keys in sorted order
        key = sha256_hex(
            f'{{"messages":{messages_json(messages)},"model":{scalar_json(model_identity)},'
            f'"params":{params.json()},"seed":{scalar_json(seed)}}}'
        )
        return Request(key=key, model=model_identity, messages=messages, params=params, seed=seed)

    def chat(self) -> list[dict[str, str]]:
        return [{"role": role, "content": content} for role, content in self.messages]


@dataclass(frozen=True)
class Generation:
    """A model's answer to a Request. A failure is a Generation with `error` set and `text` None."""

    key: str
    text: str | None
    finish_reason: str | None = None
    error: str | None = None
    latency_s: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    retries: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None

    @staticmethod
    def failure(key: str, reason: str, *, retries: int = 0, latency_s: float = 0.0) -> Generation:
        return Generation(key=key, text=None, error=reason, retries=retries, latency_s=latency_s)


class ScoreStatus(StrEnum):
    """Why a score has (or lacks) a value. A `str`: stored in SQLite and written to JSON as its plain value."""

    OK = "ok"
    UNPARSED = "unparsed"  # the scorer answered, but its answer could not be read as a value
    ERROR = "error"  # the call failed (network, model, quota): scored again on the next run
    REFUSED = "refused"  # the scorer declines this text for good (e.g. an empty comment)


@dataclass(frozen=True)
class Score:
    """A scorer's value for one subject (a text, or a prompt-response pair).

    `value` is None when the scorer could not produce one; then `status` says why (a ScoreStatus other than OK)
    and `detail` keeps the raw output. A failed score is never turned into 0 or 1.
    """

    subject: str
    scorer: str
    value: float | None
    status: ScoreStatus = ScoreStatus.OK
    label: str | None = None
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == ScoreStatus.OK and self.value is not None


class TaskSubject(StrEnum):
    """What a scoring task scores of each run item."""

    PROMPT = "prompt"  # the prompt text
    RESPONSE = "response"  # the response text, or the (prompt, response) pair


def task_subject(task: str) -> TaskSubject:
    """The subject of a stored scoring task, from its name: a prompt task's name begins with "prompt"
    (prompt_toxicity). The store keeps only task names, so this is how rows read back are told apart;
    ScoringTask checks that every task it builds keeps to it."""
    return TaskSubject.PROMPT if task.startswith(TaskSubject.PROMPT) else TaskSubject.RESPONSE


def ok_value(score: Score | None) -> float | None:
    """A score's value when it is ok, else None (not scored, failed, unparsed, refused)."""
    return score.value if score is not None and score.ok else None


def text_subject(*parts: str) -> str:
    """The subject key of a text (or a tuple of texts): its content hash."""
    if all(type(part) is str for part in parts):
        return sha256_hex("[" + ",".join(map(_STR_JSON, parts)) + "]")
    return content_hash(list(parts))
