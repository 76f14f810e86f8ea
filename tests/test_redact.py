"""The shared redaction step: no 8-character piece of a key survives, however the key was altered."""

from __future__ import annotations

import random
import re
import string

import pytest

from trusteval.errors import UsageError
from trusteval.options import read_spec_options
from trusteval.scorers import perspective
from trusteval.specs import Spec
from trusteval.untrusted.redact import credential_in_options, is_secret_name, scrub


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
