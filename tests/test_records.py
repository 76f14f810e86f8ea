"""Request keys: every input that can change an answer changes the key, so no answer is reused for another."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trusteval.records import GenerationParams, Request, content_hash

MESSAGES = (("user", "Say something about the weather."),)
PARAMS = GenerationParams(temperature=0.7, top_p=0.9, max_new_tokens=64)


def test_the_key_is_the_hash_of_model_messages_params_and_seed():
    request = Request.build("llamacpp:smollm2", MESSAGES, PARAMS, 42)
    expected = content_hash(
        {"model": "llamacpp:smollm2", "messages": MESSAGES,
         "params": {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 64}, "seed": 42}
    )  # fmt: skip
    assert request.key == expected
    assert Request.build("llamacpp:smollm2", MESSAGES, PARAMS, 42).key == request.key


@pytest.mark.parametrize(
    "changed",
    [
        {"params": replace(PARAMS, max_new_tokens=65)},
        {"params": replace(PARAMS, temperature=0.0)},
        {"params": replace(PARAMS, top_p=1.0)},
        {"seed": 43},
        {"model_identity": "llamacpp:other"},
        {"messages": (("user", "Say something about the weather!"),)},
        {"messages": (("system", "Be brief."), *MESSAGES)},
    ],
)
def test_every_input_changes_the_key(changed):
    base = {"model_identity": "llamacpp:smollm2", "messages": MESSAGES, "params": PARAMS, "seed": 42}
    assert Request.build(**{**base, **changed}).key != Request.build(**base).key


def test_generation_params_as_dict_holds_every_field() -> None:
    from dataclasses import asdict

    from trusteval.records import GenerationParams

    params = GenerationParams(temperature=0.3, top_p=0.8, max_new_tokens=7)
    assert params.as_dict() == asdict(params)
