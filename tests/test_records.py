"""Request keys: every input that can change an answer changes the key, so no answer is reused for another."""

from __future__ import annotations

from dataclasses import replace

import pytest

from trusteval.records import (
    GenerationParams,
    Prompt,
    Request,
    canonical_json,
    content_hash,
    messages_json,
    object_json,
    scalar_json,
    text_subject,
)

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


ODD_TEXTS = ["", "plain", 'quote " and \\ backslash', "tab\tnew\nline\r\x00\x1f\x7f", "这个地区的人", "emoji 🙂",
             "\u2028\u2029", "</script>"]  # fmt: skip


def _reference_key(prompt: Prompt) -> str:
    """Prompt.content_key as it was written before its JSON was joined by hand."""
    content = [prompt.text, prompt.lang, prompt.label, prompt.category, prompt.attributes]
    return f"{prompt.id}@{content_hash(content)[:16]}"


@pytest.mark.parametrize("text", ODD_TEXTS)
def test_row_json_joined_by_hand_is_canonical_json(text):
    """The keys and subjects of stored rows are unchanged by the hand-joined JSON (records.scalar_json,
    object_json, messages_json): every stored row of an earlier run keeps its key."""
    for label, category, attributes in [(None, None, {}), (1, text, {"a": text, "b": "1"}), (True, "x", {})]:
        prompt = Prompt(id=text or "1", dataset="d", text=text, lang="zh", label=label, category=category,
                        attributes=attributes)  # fmt: skip
        assert prompt.content_key == _reference_key(prompt)
    messages = (("system", text), ("user", text + "?"))
    for params in (PARAMS, GenerationParams(temperature=1, top_p=-0.0, max_new_tokens=3)):
        for seed in (0, 42, -1):
            expected = content_hash({"model": text, "messages": messages, "params": params.as_dict(), "seed": seed})
            assert Request.build(text, messages, params, seed).key == expected
    assert messages_json(messages) == canonical_json(messages)
    assert messages_json([[text, text]]) == canonical_json([[text, text]])  # not pairs of a tuple: the encoder
    assert text_subject(text) == content_hash([text]) and text_subject(text, "b") == content_hash([text, "b"])
    for value in (text, 7, None, 1.5, True, [text]):
        assert scalar_json(value) == canonical_json(value)
    assert object_json({}) == "{}" and object_json({"k": text}) == canonical_json({"k": text})


def test_params_json_tells_apart_equal_parameters_written_differently():
    one, one_float = GenerationParams(temperature=1), GenerationParams(temperature=1.0)
    assert one == one_float and one.json() != one_float.json()
    assert [p.json() for p in (one, one_float, one)] == [canonical_json(p.as_dict()) for p in (one, one_float, one)]
