"""Reading an OpenAI-compatible chat completion body, which a hostile or broken server may fill with anything.

- `message.content` a string: the answer. A list of content parts (the OpenAI content-parts form): the text
  parts joined. `null` with a `refusal` field (or only refusal parts): the refusal text, marked with
  `finish_reason` `refusal`. `null` otherwise: an empty answer. An object, a number or a boolean: a failure.
- `usage` that is not an object of integer counts is ignored: token counts are optional, the answer is not.
- The answer is capped, its Unicode repaired and the key scrubbed by the answer rule
  (`trusteval.untrusted.answers.safe_answer`: only the whole key or a long piece of it; the answer is then marked).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from trusteval.records import Generation
from trusteval.untrusted.answers import REFUSAL, TRUSTEVAL_MARKS, mark, repair_unicode, safe_answer
from trusteval.untrusted.redact import scrub

EXCERPT_CHARS = 200
TEXT_PART_TYPES = frozenset({"text", "output_text"})
JSON_TYPES = {dict: "an object", list: "a list", bool: "a boolean", int: "a number", float: "a number"}


@dataclass(frozen=True)
class Rejected:
    """Why a body is not an answer, and whether asking again may help (a truncated body) or not (a wrong type)."""

    reason: str
    retryable: bool = True


def excerpt(text: str, limit: int = EXCERPT_CHARS, *, secret: str | None = None) -> str:
    """A one-line cut of a server's text; secrets are redacted before cutting, so no part of them survives."""
    flat = " ".join(scrub(repair_unicode(text[: limit * 50])[0], [secret]).split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _type_name(value: Any) -> str:
    return JSON_TYPES.get(type(value), type(value).__name__)


def _parts_text(parts: list[Any]) -> tuple[str, str | None] | Rejected:
    texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") in TEXT_PART_TYPES
             and isinstance(p.get("text"), str)]  # fmt: skip
    if texts:
        return "".join(texts), None
    refusals = [p["refusal"] for p in parts if isinstance(p, dict) and isinstance(p.get("refusal"), str)]
    if refusals:
        return "".join(refusals), REFUSAL
    return Rejected(f"message content is a list with no text part: {excerpt(_dump(parts))}", retryable=False)


def message_text(message: dict[str, Any]) -> tuple[str, str | None] | Rejected:
    """The answer in a chat message and trusteval's mark for it (`refusal` or None), or why there is none."""
    content = message.get("content")
    if isinstance(content, str):
        return content, None
    if isinstance(content, list):
        return _parts_text(content)
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            return refusal, REFUSAL
        return "", None
    said = excerpt(_dump(content))
    return Rejected(f"message content is {_type_name(content)}, not text: {said}", retryable=False)


def _count(usage: Any, name: str) -> int | None:
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53 else None


def _server_reason(value: Any) -> str | None:
    """The server's finish_reason without trusteval's own marks: a server cannot claim a redaction or a cut."""
    if not isinstance(value, str):
        return None
    return "+".join(part for part in value.split("+") if part not in TRUSTEVAL_MARKS) or None


def read_completion(key: str, body: Any, *, secret: str | None = None) -> Generation | Rejected:
    """The Generation in a chat completion body, or why the body is not one."""
    if not isinstance(body, dict):
        return Rejected(f"response is not a JSON object: {excerpt(_dump(body), secret=secret)}")
    choices = body.get("choices")
    if not choices or not isinstance(choices, list):
        return Rejected(f"response has no choices: {excerpt(_dump(body), secret=secret)}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        return Rejected(f"response choice has no message: {excerpt(_dump(choice), secret=secret)}")
    found = message_text(message)
    if isinstance(found, Rejected):
        return found
    text, own_mark = found
    finish_reason = mark(_server_reason(choice.get("finish_reason")), *filter(None, [own_mark]))
    text, finish_reason = safe_answer(text, finish_reason, [secret])
    usage = body.get("usage")
    return Generation(
        key=key,
        text=text,
        finish_reason=finish_reason,
        prompt_tokens=_count(usage, "prompt_tokens"),
        completion_tokens=_count(usage, "completion_tokens"),
    )
