"""The shared redaction step: no 8-character piece of a key survives a message, however the key was altered
(case, splits, halves, base64, hex, percent-encoding, reversal, JSON escapes); an answer loses only a whole key
or a 16-character piece of one; a placeholder or short key is never matched."""

from __future__ import annotations

import base64
import random
import re
import string
from urllib.parse import quote

import pytest

from trusteval.errors import UsageError
from trusteval.models.openai_pool import public_url
from trusteval.options import read_spec_options
from trusteval.scorers import perspective
from trusteval.specs import Spec
from trusteval.untrusted.redact import (
    credential_in_options,
    credential_in_url,
    is_secret,
    is_secret_name,
    scrub,
    scrub_answer,
)


def pieces_left(text: str, key: str) -> list[str]:
    flat_key, flat = (re.sub(r"[^a-z0-9]", "", t.lower()) for t in (key, text))
    return [flat_key[i : i + 8] for i in range(len(flat_key) - 7) if flat_key[i : i + 8] in flat]


def random_key(rng: random.Random) -> str:
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(20, 60)))
    return rng.choice(["sk-", "sk-proj-", "AIza", ""]) + body


def altered(key: str, rng: random.Random) -> list[str]:
    half = rng.randint(8, len(key) - 8)
    width = rng.randint(1, 7)
    split = rng.choice([" ", "-", "\n", ".", ", ", "_"]).join(key[i : i + width] for i in range(0, len(key), width))
    return [key, key.upper(), key.lower(), key.swapcase(), split, key[:half], key[half:], key[3:-3], f'"{key}"']


@pytest.mark.slow
def test_every_altered_form_of_a_key_is_scrubbed_from_surrounding_text():
    rng = random.Random(7)
    survived = []
    for _ in range(300):
        key = random_key(rng)
        for form in altered(key, rng):
            text = f"HTTP 403: the key {form} is not valid for project 12 (see https://x.example/?key={form})"
            scrubbed = scrub(text, [key])
            if pieces_left(scrubbed, key):
                survived.append((key, form, scrubbed))
    assert survived == []


def test_scrub_keeps_the_text_around_the_key_and_ordinary_text_alone():
    key = "sk-TRUSTEVAL-abcdefgh12345678"
    assert scrub("refused sk-trusteval-ABCDEFGH12345678 for you", [key]) == "refused [redacted] for you"
    assert scrub("refused sk-TRUST now", [key]) == "refused sk-TRUST now"  # 7 letters: kept
    assert scrub("a perfectly ordinary answer about keys", [key]) == "a perfectly ordinary answer about keys"
    assert scrub("nothing to hide", []) == "nothing to hide"


@pytest.mark.parametrize("name", ["key", "api_key", "api-key", "API-KEY", "apiKey", "x-goog-api-key", "token",
                                  "access_token", "client_secret", "password", "openai_api_key"])  # fmt: skip
def test_names_that_hold_a_key(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["api_key_env", "base_url", "max_tokens", "timeout", "label", "threshold"])
def test_names_that_do_not(name):
    assert not is_secret_name(name)


def test_credentials_in_options_are_found_by_where_they_are_never_by_value():
    key = "sk-secret-0123456789abcdef"
    found = {
        "option": credential_in_options({"api-key": key}),
        "query": credential_in_options({"base_url": f"http://127.0.0.1:9/v1?key={key}"}),
        "userinfo": credential_in_options({"base_url": f"http://me:{key}@127.0.0.1:9/v1"}),
        "azure": credential_in_options({"base_url": "http://127.0.0.1:9/v1?api-version=2024-02-01"}),
    }
    assert found == {
        "option": "option 'api-key'",
        "query": "its query parameter 'key' of base_url",
        "userinfo": "its user:password part of base_url",
        "azure": None,
    }


def test_a_spec_holding_a_key_is_refused_and_unknown_options_are_named_without_values():
    key = "sk-secret-0123456789abcdef"
    with pytest.raises(UsageError, match="must not hold a credential") as refused:
        Spec.parse(f"openai:m?base_url=http://127.0.0.1:9/v1?key={key}")
    assert pieces_left(str(refused.value), key) == []
    with pytest.raises(UsageError, match="unknown option") as unknown:
        read_spec_options(perspective.Options, Spec.parse(f"perspective?k={key}", bare=True))
    assert pieces_left(str(unknown.value), key) == [] and "perspective?k=..." in str(unknown.value)


# --- round three (issue 21): placeholders, the answer rule, encoded echoes, keys in URLs --------------------

ORDINARY_ANSWER = (
    "No key required: I use Ollama daily, the EMPTY field is empty, none of it is a dummy token. "
    "Answer: 1. Your password12 is weak."
)


@pytest.mark.parametrize(
    "key", ["sk-no-key-required", "EMPTY", "ollama", "none", "dummy", "token", "1", "sk-xxxxxxxxxxxxxxxxxxxx"]
)
def test_a_placeholder_or_short_key_is_never_matched(key):
    assert not is_secret(key)
    assert scrub(ORDINARY_ANSWER, [key]) == ORDINARY_ANSWER, "messages: not a secret, nothing to redact"
    assert scrub_answer(ORDINARY_ANSWER, [key]) == (ORDINARY_ANSWER, False)


@pytest.mark.parametrize("key", ["1", "ab", "a-b", "xyz"])
def test_a_key_under_four_characters_is_never_matched_not_even_exactly(key):
    """The rule for keys under 4 characters (it used to be an exact, case-sensitive replace, which turned a
    judge's 'Answer: 1' into an unparsed verdict): such a key is not a secret and is matched nowhere."""
    text = f"Answer: {key}. HTTP 401: the key '{key}' is not valid"
    assert scrub(text, [key]) == text
    assert scrub_answer(text, [key]) == (text, False)


def test_an_answer_loses_only_the_whole_key_or_a_long_piece_of_a_real_one():
    key = "sk-proj-Password1234567890xyz"
    assert is_secret(key)
    assert scrub_answer("Your password12 is weak.", [key]) == ("Your password12 is weak.", False)
    assert scrub_answer(f"the key is {key}.", [key]) == ("the key is [redacted].", True)
    assert scrub_answer("half: Password1234567890xyz", [key]) == ("half: [redacted]", True)  # 21 key characters
    assert scrub_answer("piece: Password12345678!", [key]) == ("piece: [redacted]!", True)  # 16: the least
    assert scrub_answer("piece: Password1234567!", [key]) == ("piece: Password1234567!", False)  # 15: kept
    # messages keep the strict rule: any 8-character piece goes
    assert scrub("HTTP 401: Your password12 is weak.", [key]) == "HTTP 401: Your [redacted] is weak."


def test_a_short_real_key_is_redacted_from_an_answer_only_whole():
    key = "Zq7-w2Kp9x"  # 9 letters and digits: a secret, shorter than an answer piece
    assert scrub_answer("Zq7w2 and w2Kp9x", [key]) == ("Zq7w2 and w2Kp9x", False)
    assert scrub_answer("it was zq7-w2kp9x", [key]) == ("it was [redacted]", True)


def _encodings(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "base64 url-safe, no padding": base64.urlsafe_b64encode(raw).decode().rstrip("="),
        "base64 of 'Bearer <key>'": base64.b64encode(b"Bearer " + raw).decode(),
        "base64 of 'k=<key>'": base64.b64encode(b"k=" + raw).decode(),
        "percent-encoded": "".join(f"%{b:02X}" for b in raw),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "reversed": key[::-1],
        "json \\u escapes": "".join(f"\\u{b:04x}" for b in raw),
        # issue 32 item 5: the forms a real server plausibly produces (a repr of bytes, an HTML error page)
        "\\xNN escapes (repr of bytes)": "".join(f"\\x{b:02x}" for b in raw),
        "HTML hex entities": "".join(f"&#x{b:02x};" for b in raw),
        "HTML hex entities, upper": "".join(f"&#X{b:02X};" for b in raw),
        "HTML decimal entities": "".join(f"&#{b};" for b in raw),
        "percent-encoded, lower": "".join(f"%{b:02x}" for b in raw),
    }


def test_a_key_echoed_encoded_leaves_no_piece_in_a_message_or_an_answer():
    key = "sk-proj-Q8vLm2Xc9TzR4wYp7NbK1sHd"
    for name, encoded in _encodings(key).items():
        message = f"HTTP 403: bad credentials {encoded} (request 12)"
        scrubbed = scrub(message, [key])
        assert "[redacted]" in scrubbed and scrubbed.endswith("(request 12)"), name
        assert not _leftover(scrubbed, encoded, 12), (name, scrubbed)
        answer, changed = scrub_answer(f"Sure: {encoded}", [key])
        assert changed and not _leftover(answer, encoded, 12), (name, answer)


def _leftover(text: str, encoded: str, size: int) -> list[str]:
    flat, form = (re.sub(r"[^a-z0-9]", "", t.lower()) for t in (text, encoded))
    return [form[i : i + size] for i in range(len(form) - size + 1) if form[i : i + size] in flat]


def test_a_key_in_a_base_url_path_or_fragment_is_found_and_never_shown():
    key = "sk-proj-Q8vLm2Xc9TzR4wYp7NbK1sHd"
    assert credential_in_url(f"http://127.0.0.1:9/v1/{key}", [key]) == "its path"
    assert credential_in_url(f"http://127.0.0.1:9/v1#{key}", [key]) == "its fragment"
    assert credential_in_url(f"http://127.0.0.1:9/{quote(key)}/v1", [key]) == "its path"
    assert credential_in_url("http://127.0.0.1:9/v1", [key]) is None
    shown = public_url(f"http://127.0.0.1:9/gw/{key}/v1#{key}")
    assert shown == "http://127.0.0.1:9/gw/[redacted]/v1", "a token-like path segment is not repeated"
    assert public_url("http://127.0.0.1:9/openai/deployments/gpt-4o/v1") == (
        "http://127.0.0.1:9/openai/deployments/gpt-4o/v1"
    )
