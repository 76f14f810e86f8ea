"""Text that came from a model, a server or a file, made safe to store: the one step every Generation and
score passes through on its way out of a backend or scorer (`trusteval.pipeline`).

- Lone UTF-16 surrogates (a JSON `"\\ud800"` escape decodes to one) cannot be encoded as UTF-8, so SQLite
  and every output would fail on them: each becomes U+FFFD and the answer's `finish_reason` records it.
- An answer longer than `MAX_ANSWER_CHARS` is cut there and its `finish_reason` records the cut; a server's
  HTTP body is read up to `MAX_RESPONSE_BYTES` and no further.
- Secrets are scrubbed by the backend or scorer that holds them (`trusteval.untrusted.redact`): messages by the strict
  rule; an answer only for a whole key or a long piece of one, and such an answer's `finish_reason` records it.
- A JSON body is parsed with integers of any length allowed (`load_json`): Python refuses to convert one of
  more than 4,300 digits, and such a number (say, in `usage`) must not cost the answer beside it.

`finish_reason` keeps the backend's own value first, then trusteval's marks, joined by `+`:
`stop+invalid_unicode_replaced`, `length+truncated_by_trusteval`, `stop+redacted_by_trusteval`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from trusteval.records import Generation, Score
from trusteval.untrusted.redact import scrub, scrub_answer

MAX_ANSWER_CHARS = 100_000
MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # an answer of MAX_ANSWER_CHARS fits, even all \uXXXX-escaped
TRUNCATED = "truncated_by_trusteval"
UNICODE_REPLACED = "invalid_unicode_replaced"
ANSWER_REDACTED = "redacted_by_trusteval"  # a secret (whole, or a long piece) was cut out of the answer
TRUSTEVAL_MARKS = frozenset({TRUNCATED, UNICODE_REPLACED, ANSWER_REDACTED})  # only trusteval sets these
MAX_INT_DIGITS = 4000  # below Python's int conversion limit (4300 digits)
REFUSAL = "refusal"
MAX_FINISH_REASON_CHARS = 100


def repair_unicode(text: str) -> tuple[str, bool]:
    """`text` with each lone surrogate replaced by U+FFFD (a valid pair is joined), and whether any was."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"), True
    return text, False


def safe_text(text: str, limit: int = MAX_ANSWER_CHARS, secrets: Iterable[str | None] = ()) -> str:
    """Any untrusted text (a reason, a detail): at most `limit` characters, valid Unicode, none of `secrets`."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return scrub(repair_unicode(cut)[0], secrets)


def _bounded_int(digits: str) -> int | float:
    if len(digits) <= MAX_INT_DIGITS:
        return int(digits)
    return float("-inf") if digits.startswith("-") else float("inf")  # no count; a number all the same


def load_json(data: str | bytes) -> Any:
    """`json.loads`, but an integer too long for Python to convert reads as +-infinity instead of failing the
    whole document (ValueError and RecursionError still mean malformed JSON)."""
    return json.loads(data, parse_int=_bounded_int)


def mark(finish_reason: str | None, *marks: str) -> str | None:
    own = safe_text(finish_reason, MAX_FINISH_REASON_CHARS) if finish_reason else ""
    parts = [p for p in own.split("+") if p]
    parts += [m for m in marks if m not in parts]
    return "+".join(parts) or None


def safe_answer(text: str, finish_reason: str | None, secrets: Iterable[str | None] = ()) -> tuple[str, str | None]:
    """An answer cut to MAX_ANSWER_CHARS, with valid Unicode and no whole or long piece of a secret (the answer
    rule of `trusteval.untrusted.redact`), and its marked finish_reason."""
    marks = []
    if len(text) > MAX_ANSWER_CHARS:
        text = text[:MAX_ANSWER_CHARS]
        marks.append(TRUNCATED)
    text, repaired = repair_unicode(text)
    if repaired:
        marks.append(UNICODE_REPLACED)
    text, redacted = scrub_answer(text, secrets)
    if redacted:
        marks.append(ANSWER_REDACTED)
    return text, mark(finish_reason, *marks)


def safe_generation(generation: Generation) -> Generation:
    if generation.text is None:
        return replace(generation, error=safe_text(generation.error or "unknown error"))
    text, finish_reason = safe_answer(generation.text, generation.finish_reason)
    return replace(generation, text=text, finish_reason=finish_reason)


def safe_score(score: Score) -> Score:
    detail = None if score.detail is None else safe_text(score.detail)
    label = None if score.label is None else safe_text(score.label)
    return replace(score, detail=detail, label=label)
