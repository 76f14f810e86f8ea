"""Hostile server answers and replay files: each becomes the right text or a per-request failure with a
reason, never a crash. A real HTTP server on 127.0.0.1 and the real CLI; the store is read from outside."""

from __future__ import annotations

import asyncio
import json

import pytest
from store_checks import query

from fixtures.llama_server import Reply, ScriptedOpenAIServer, completion_body
from helpers import run_cli
from trusteval.errors import DataError
from trusteval.models import BackendSettings, ModelSpec
from trusteval.models.replay import create as create_replay
from trusteval.records import GenerationParams, Request
from trusteval.store import Store

MAX_ANSWER_CHARS = 100_000  # the documented caps (docs/backends-openai.md)
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


def with_message(message: dict, **extra) -> Reply:
    body = completion_body()
    body["choices"][0]["message"] = {"role": "assistant", **message}
    return Reply(body={**body, **extra})


LONE_SURROGATE = Reply(body=json.dumps(completion_body("bad \ud800 half")))  # json.dumps writes \ud800
PARTS = [
    {"type": "text", "text": "part one, "},
    {"type": "image_url", "image_url": {}},
    {"type": "text", "text": "two"},
]
HOSTILE = [
    LONE_SURROGATE,
    with_message({"content": PARTS}),
    with_message({"content": {"text": "an object"}}),
    with_message({"content": 42}),
    with_message({"content": None, "refusal": "I can't help with that."}),
    Reply(body={**completion_body("usage is broken"), "usage": "many"}),
    Reply(body={**completion_body("x" * 5_000_000), "usage": {"prompt_tokens": "7", "completion_tokens": -1}}),
    Reply(body=completion_body("y" * (MAX_RESPONSE_BYTES + 10))),
]


def test_hostile_answers_become_text_or_failures_with_reasons_end_to_end(tmp_path, cache_dir, figures):
    store = tmp_path / "ws"
    posts = iter(range(10**6))  # the preflight's GET /models is not an answer: count POSTs only

    def script(index, request) -> Reply:
        return HOSTILE[next(posts) % len(HOSTILE)] if request.method == "POST" else Reply(body={"data": []})

    with ScriptedOpenAIServer(script) as server:
        run = run_cli("run", "--benchmark", "trusteval-toxicity", "--limit", str(len(HOSTILE)), "--seeds", "42",
                      "--model", f"openai:m?base_url={server.base_url}&api_key_env=", "--concurrency", "1",
                      "--store", store, "--cache-dir", cache_dir, "--json", "--no-progress")  # fmt: skip
        served = sum(r.method == "POST" for r in server.seen)
    assert "Traceback" not in run.stderr and run.returncode == 3, run.stderr[-3000:]  # stored, incomplete
    assert served == len(HOSTILE), "no answer was asked for twice: these failures are final"
    out = run.json()
    assert (out["generated"], out["failed"]) == (5, 3)
    assert query(store, "SELECT status FROM runs") == [("incomplete",)]
    stored = {text[:20]: (len(text), reason, tokens) for text, reason, tokens in
              query(store, "SELECT text, finish_reason, prompt_tokens FROM generations")}  # fmt: skip
    assert stored == {
        "bad \ufffd half": (10, "stop+invalid_unicode_replaced", 7),
        "part one, two": (13, "stop", 7),
        "I can't help with th": (23, "stop+refusal", 7),
        "usage is broken": (15, "stop", None),
        "x" * 20: (MAX_ANSWER_CHARS, "stop+truncated_by_trusteval", None),
    }
    errors = sorted(error for (error,) in query(store, "SELECT error FROM generation_failures"))
    assert len(errors) == 3
    assert "message content is a number, not text: 42" in errors[0]
    assert "message content is an object, not text" in errors[1]
    assert "larger than 8 MiB; it was not read past that" in errors[2]
    figures["hostile_answers"] = {"answers": len(HOSTILE), "stored": len(stored), "failed_with_reason": 3}


def _replay(path, prompts: list[str]):
    backend = create_replay(ModelSpec.parse(f"replay:{path}"), BackendSettings())
    requests = [Request.build("replay", (("user", p),), GenerationParams(), 42) for p in prompts]
    return asyncio.run(backend.generate(requests))


def test_a_replay_file_with_a_lone_surrogate_is_refused_naming_line_and_field(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(
        json.dumps({"prompt": "p1", "response": "fine"})
        + "\n"
        + json.dumps({"prompt": "p2", "response": "half \ud800"})
        + "\n"
    )
    with pytest.raises(DataError, match="surrogate") as refused:
        _replay(answers, ["p1"])
    assert (refused.value.line, refused.value.field) == (2, "response")


def test_a_long_replay_answer_is_capped_like_a_server_answer(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"prompt": "p2", "response": "z" * (MAX_ANSWER_CHARS + 5)}) + "\n")
    store = Store.open(tmp_path / "ws")
    store.add_generations(_replay(answers, ["p2"]))
    stored = store.conn.execute("SELECT text, finish_reason FROM generations").fetchall()
    store.close()
    assert [tuple(row) for row in stored] == [("z" * MAX_ANSWER_CHARS, "replay+truncated_by_trusteval")]


def test_a_file_over_the_read_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from trusteval.data import files

    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"prompt": "p", "response": "r" * 2000}) + "\n")
    monkeypatch.setattr(files, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(files.Path, "read_bytes", lambda self: pytest.fail("the file was read"))
    with pytest.raises(DataError, match="more than the limit of 1,000 bytes"):
        _replay(answers, ["p"])


def test_an_integer_of_five_thousand_digits_in_usage_costs_only_the_token_counts():
    """Python refuses to convert an integer of more than 4,300 digits; the answer beside it used to be lost as
    'malformed JSON' (the docs promise that a bad `usage` only loses the token counts)."""
    from helpers import generate_then_close, openai_backend

    body = json.dumps(completion_body("a good answer"))
    huge = body.replace('"prompt_tokens": 7', '"prompt_tokens": ' + "9" * 5000)
    huge = huge.replace('"completion_tokens": 2', '"completion_tokens": -' + "9" * 5000)
    assert huge != body
    request = Request.build("openai:m", (("user", "hi"),), GenerationParams(), 1)
    with ScriptedOpenAIServer([Reply(body=huge)]) as server:
        [answer] = generate_then_close(openai_backend(server.base_url, "api_key_env=", model="m"), [request])
    assert (answer.text, answer.finish_reason, answer.error) == ("a good answer", "stop", None)
    assert (answer.prompt_tokens, answer.completion_tokens) == (None, None)


def test_a_server_cannot_claim_trusteval_s_own_marks():
    """`answers_redacted` counts finish_reason marks: a server that sends them itself must not be counted."""
    from trusteval.models.chat_answers import read_completion

    body = completion_body("plain", finish_reason="stop+redacted_by_trusteval+truncated_by_trusteval")
    assert read_completion("k", body).finish_reason == "stop"
