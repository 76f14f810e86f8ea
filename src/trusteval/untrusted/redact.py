"""Secrets never leave trusteval: one redaction step for every text that comes out of a backend or scorer.

A backend or scorer that reads an API key calls `register(key)`; from then on `scrub(text)` replaces the key in
any text (failure reasons, score details, answers, notes, error messages) with `[redacted]`. A server may echo
the key in altered form, so matching ignores case and everything but ASCII letters and digits, and any run of
`FRAGMENT_CHARS` consecutive key characters counts: an upper-cased key, a key split by spaces or dashes, and
either half of a cut key are all caught. No `FRAGMENT_CHARS`-character piece of a key survives a scrub.

`credential_in_options` finds keys put where they would be stored with a run (a spec option named like a key,
a `base_url`, or any URL of a comma-separated list of them, with a user:password part or a `?key=` query);
callers refuse such specs without repeating them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from urllib.parse import parse_qsl, urlsplit

REDACTED = "[redacted]"
FRAGMENT_CHARS = 8
# Option or query names that hold a credential, compared without case, dashes or underscores.
SECRET_NAMES = frozenset(
    {"key", "apikey", "token", "accesstoken", "authtoken", "password", "passwd", "pwd", "secret", "clientsecret",
     "auth", "authorization", "bearer", "credential", "credentials", "sig", "signature", "xgoogapikey"}
)  # fmt: skip
SECRET_SUFFIXES = ("apikey", "secretkey", "accesskey", "privatekey", "token", "secret", "password")
URL_OPTIONS = ("base_url", "url")
ALNUM = re.compile(r"[A-Za-z0-9]")
NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")

_registered: set[str] = set()


def register(secret: str | None) -> None:
    """Remember a secret this process holds, so that every later `scrub` removes it."""
    if secret:
        _registered.add(secret)


def forget_all() -> None:
    """Forget every registered secret (for tests, which run many parts in one process)."""
    _registered.clear()


def _normalized(text: str) -> tuple[str, list[int]]:
    """Lower-cased ASCII letters and digits of `text`, and the index in `text` of each one."""
    positions = [m.start() for m in ALNUM.finditer(text)]
    return "".join(text[i] for i in positions).lower(), positions


@lru_cache(maxsize=64)
def _pieces(secret: str) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """Every FRAGMENT_CHARS-long piece of a secret's letters and digits, and a pattern finding any of them."""
    key = NOT_ALNUM.sub("", secret).lower()
    size = min(FRAGMENT_CHARS, len(key))
    pieces = frozenset(key[i : i + size] for i in range(len(key) - size + 1)) if key else frozenset()
    return pieces, re.compile("|".join(map(re.escape, sorted(pieces)))) if pieces else None


def _covered_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Spans of `text` (start, end) that hold a FRAGMENT_CHARS-long piece of `secret`, however cased or split."""
    pieces, pattern = _pieces(secret)
    if pattern is None or not pattern.search(NOT_ALNUM.sub("", text).lower()):
        return []  # the common case, at C speed
    size = len(next(iter(pieces)))
    flat, positions = _normalized(text)
    spans: list[tuple[int, int]] = []
    for i in range(len(flat) - size + 1):
        if flat[i : i + size] in pieces:
            start, end = positions[i], positions[i + size - 1] + 1
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
    return spans


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every registered secret, and every one in `secrets`, replaced by [redacted]."""
    for secret in _registered.union(s for s in secrets if s):
        if len(secret) < 4:  # too short to tell from ordinary text: only the exact string
            text = text.replace(secret, REDACTED)
            continue
        for start, end in reversed(_covered_spans(text, secret)):
            text = text[:start] + REDACTED + text[end:]
    return text


def scrub_optional(text: str | None, secrets: Iterable[str | None] = ()) -> str | None:
    return None if text is None else scrub(text, secrets)


def is_secret_name(name: str) -> bool:
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    if compact.endswith("env"):  # api_key_env names a variable, it is not the key
        return False
    return compact in SECRET_NAMES or compact.endswith(SECRET_SUFFIXES)


def credential_in_url(url: str) -> str | None:
    """Where a URL holds a credential ('its user:password part', 'its query parameter key'), or None."""
    try:
        parts = urlsplit(url)
        in_userinfo = bool(parts.username or parts.password)
    except ValueError:
        return None
    if in_userinfo:
        return "its user:password part"
    named = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if is_secret_name(name)]
    return f"its query parameter '{named[0]}'" if named else None


def credential_in_options(options: Mapping[str, str]) -> str | None:
    """Where spec options hold a credential, named without its value; None when they hold none."""
    named = sorted(name for name in options if is_secret_name(name))
    if named:
        return f"option '{named[0]}'"
    for name in URL_OPTIONS:
        for url in options.get(name, "").split(","):  # a list of URLs (the openai backend's replicas)
            where = credential_in_url(url.strip())
            if where:
                return f"{where} of {name}"
    return None
