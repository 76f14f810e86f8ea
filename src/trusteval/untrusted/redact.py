"""Secrets never leave trusteval: one redaction step for every text that comes out of a backend or scorer.

A backend or scorer that holds an API key passes it to `scrub` (messages) or `scrub_answer` (model answers);
nothing is remembered process-wide, so a key reaches exactly the texts of the part that read it.

Only a key that is a secret is ever matched (`is_secret`): at least `MIN_SECRET_CHARS` letters and digits,
`MIN_DISTINCT_CHARS` different ones, and not a known placeholder (`sk-no-key-required`, `EMPTY`, `ollama`,
`none`, `dummy`...). A key of fewer than 8 letters and digits (`1`, `abc`, `sk-1`) is never matched anywhere:
it cannot be told from ordinary text, and it protects nothing.

A server may echo the key in altered form, so matching ignores case and everything but ASCII letters and
digits, and looks for the key as written, reversed, hex-encoded (also what is left of a percent-encoded key),
as JSON `\\u` escapes, as `\\xNN` escapes (a Python repr of bytes, a C string) or HTML hex entities
(`&#x73;`), as HTML decimal entities (`&#115;`) and base64-encoded (at any of the three alignments). Not
covered (no real server is known to echo a key so): base32, rot13, base64 of base64, compressed bodies. Two
rules:

- `scrub` (error bodies, failure reasons, score details, messages): any piece of `FRAGMENT_CHARS` (8)
  consecutive key characters counts, so an upper-cased key, a key split by spaces or dashes, and either half
  of a cut key are all caught. No 8-character piece of a key survives.
- `scrub_answer` (model answers, which are scored and exported): only the whole key or a piece of at least
  `ANSWER_PIECE_CHARS` (16) consecutive key characters counts, so an answer is never changed for a word that
  happens to be in the key ("password12" of `sk-proj-Password1234567890xyz`). It says whether it changed the
  answer, and the caller marks such an answer (finish_reason `redacted_by_trusteval`).

`credential_in_options` finds keys put where they would be stored with a run (a spec option named like a key,
a `base_url`, or any URL of a comma-separated list of them, with a user:password part, a `?key=` query, or
the key itself in its path or fragment); callers refuse such specs without repeating them.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import parse_qsl, unquote, urlsplit

REDACTED = "[redacted]"
FRAGMENT_CHARS = 8  # messages: no piece this long survives
ANSWER_PIECE_CHARS = 16  # answers: only the whole key or a piece this long is redacted
MIN_SECRET_CHARS = 8
MIN_DISTINCT_CHARS = 5
# Keys that local servers document or accept as "no key" (compared as lower-case letters and digits; a leading
# `sk` is ignored): never matched, since they are not secrets and are ordinary words.
PLACEHOLDERS = frozenset(
    {"nokeyrequired", "notrequired", "notneeded", "nokey", "empty", "ollama", "none", "null", "nil", "dummy",
     "dummykey", "token", "key", "apikey", "yourapikey", "test", "testkey", "fake", "fakekey", "placeholder",
     "unused", "anything", "changeme", "secret", "password", "lmstudio", "vllm", "sglang", "llamacpp", "local",
     "localkey", "xxx", "openai", "noauth", "insecure", "default", "mykey", "abc123"}
)  # fmt: skip
# Option or query names that hold a credential, compared without case, dashes or underscores.
SECRET_NAMES = frozenset(
    {"key", "apikey", "token", "accesstoken", "authtoken", "password", "passwd", "pwd", "secret", "clientsecret",
     "auth", "authorization", "bearer", "credential", "credentials", "sig", "signature", "xgoogapikey"}
)  # fmt: skip
SECRET_SUFFIXES = ("apikey", "secretkey", "accesskey", "privatekey", "token", "secret", "password")
URL_OPTIONS = ("base_url", "url")
ALNUM = re.compile(r"[A-Za-z0-9]")
NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")


def _flat(text: str) -> str:
    return NOT_ALNUM.sub("", text).lower()


def is_secret(key: str | None) -> bool:
    """Whether a key is worth redacting: long enough, varied enough, and not a documented placeholder."""
    flat = _flat(key or "")
    if len(flat) < MIN_SECRET_CHARS or len(set(flat)) < MIN_DISTINCT_CHARS:
        return False
    return flat not in PLACEHOLDERS and not (flat.startswith("sk") and flat[2:] in PLACEHOLDERS)


def looks_like_token(text: str) -> bool:
    """Whether a piece of a URL looks like a key rather than a name: 20 or more letters and digits, both
    kinds, and 10 or more different ones (`v1`, `openai`, `deployments` do not; a random key does)."""
    flat = _flat(text)
    has_both = any(c.isdigit() for c in flat) and any(c.isalpha() for c in flat)
    return len(flat) >= 20 and has_both and len(set(flat)) >= 10


def _base64_forms(raw: bytes) -> list[str]:
    """The base64 characters that depend on the key's bytes alone, for the key at each offset mod 3 of a
    longer encoded text (a server may encode "Bearer <key>" or a whole JSON body)."""
    forms = []
    for offset in range(3):
        padded = bytes(offset) + raw + bytes(-(offset + len(raw)) % 3)
        encoded = base64.b64encode(padded).decode("ascii")
        first, last = math.ceil(8 * offset / 6), (8 * (offset + len(raw))) // 6
        forms.append(_flat(encoded[first:last]))
    return forms


@lru_cache(maxsize=64)
def _forms(secret: str) -> tuple[tuple[str, float], ...]:
    """Every form of a key a server may echo, as lower-case letters and digits, with how many of its
    characters one key character takes."""
    raw = secret.encode("utf-8")
    flat = _flat(secret)
    forms = [(flat, 1.0), (flat[::-1], 1.0), (raw.hex(), 2.0), ("".join(f"u{b:04x}" for b in raw), 5.0)]
    forms += [(form, 4 / 3) for form in _base64_forms(raw)]
    # a Python repr of bytes or a C escape (\xNN), an HTML hex entity (&#xNN;): both flatten to xNN per byte
    forms.append(("".join(f"x{b:02x}" for b in raw), 3.0))
    decimal = "".join(str(b) for b in raw)  # HTML decimal entities (&#115;&#107;...)
    forms.append((decimal, len(decimal) / max(len(raw), 1)))
    return tuple((form, ratio) for form, ratio in forms if form)


@dataclass(frozen=True)
class _Pieces:
    """The pieces of one form of a key that count as a match, all `size` long, and anchors: blocks of the form
    such that every piece holds one whole, so that texts without any anchor are passed over at C speed."""

    size: int
    pieces: frozenset[str]
    anchors: tuple[str, ...]


@lru_cache(maxsize=64)
def _pieces(secret: str, key_chars: int) -> tuple[_Pieces, ...]:
    """Per form, every piece that stands for `key_chars` key characters (the whole form when shorter)."""
    found = []
    for form, ratio in _forms(secret):
        size = min(len(form), math.ceil(key_chars * ratio))
        block = (size + 1) // 2  # any `size`-long window of the form holds one of these aligned blocks whole
        anchors = tuple(dict.fromkeys(form[j * block : (j + 1) * block] for j in range(len(form) // block)))
        found.append(_Pieces(size, frozenset(form[i : i + size] for i in range(len(form) - size + 1)), anchors))
    return tuple(found)


def _covered_spans(text: str, secret: str, key_chars: int) -> list[tuple[int, int]]:
    """Spans of `text` (start, end) that hold a piece of any form of `secret`, however cased or split."""
    flat_text = _flat(text)
    candidates = [p for p in _pieces(secret, key_chars) if any(a in flat_text for a in p.anchors)]
    if not candidates:
        return []  # the common case, at C speed
    positions = [m.start() for m in ALNUM.finditer(text)]
    flat = "".join(text[i] for i in positions).lower()
    found: list[tuple[int, int]] = []
    for form in candidates:
        size = form.size
        found += [(positions[i], positions[i + size - 1] + 1) for i in range(len(flat) - size + 1)
                  if flat[i : i + size] in form.pieces]  # fmt: skip
    spans: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans


def _replace(text: str, secrets: Iterable[str | None], key_chars: int) -> str:
    for secret in {s for s in secrets if s and is_secret(s)}:
        for start, end in reversed(_covered_spans(text, secret, key_chars)):
            text = text[:start] + REDACTED + text[end:]
    return text


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """A message (error body, reason, detail) with every piece of each secret replaced by [redacted]."""
    return _replace(text, secrets, FRAGMENT_CHARS)


def scrub_answer(text: str, secrets: Iterable[str | None] = ()) -> tuple[str, bool]:
    """A model answer with each whole secret, or long piece of one, replaced; and whether anything was."""
    scrubbed = _replace(text, secrets, ANSWER_PIECE_CHARS)
    return scrubbed, scrubbed != text


def is_secret_name(name: str) -> bool:
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    if compact.endswith("env"):  # api_key_env names a variable, it is not the key
        return False
    return compact in SECRET_NAMES or compact.endswith(SECRET_SUFFIXES)


def credential_in_url(url: str, secrets: Iterable[str | None] = ()) -> str | None:
    """Where a URL holds a credential ('its user:password part', 'its query parameter key', 'its path'), or
    None. A URL's path and fragment are searched for the `secrets` themselves."""
    try:
        parts = urlsplit(url)
        in_userinfo = bool(parts.username or parts.password)
    except ValueError:
        return None
    secrets = [s for s in secrets if s]
    if in_userinfo:
        return "its user:password part"
    named = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(name)]
    if named:
        return f"its query parameter '{named[0]}'"
    for where, value in (("path", parts.path), ("fragment", parts.fragment)):
        if scrub(unquote(value), secrets) != unquote(value) or scrub(value, secrets) != value:
            return f"its {where}"
    return None


def credential_in_options(options: Mapping[str, str], secrets: Iterable[str | None] = ()) -> str | None:
    """Where spec options hold a credential, named without its value; None when they hold none."""
    named = sorted(name for name in options if is_secret_name(name))
    if named:
        return f"option '{named[0]}'"
    secrets = [s for s in secrets if s]
    for name in URL_OPTIONS:
        for url in options.get(name, "").split(","):  # a list of URLs (the openai backend's replicas)
            where = credential_in_url(url.strip(), secrets)
            if where:
                return f"{where} of {name}"
    return None
