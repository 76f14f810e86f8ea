"""The same GGUF and seed answer alike in process (`llamacpp:smollm2?batch=1`) and through the real
`python -m llama_cpp.server` with `openai:...?sampling=llamacpp`; a preset that server cannot honour fails once."""

from __future__ import annotations

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer
from helpers import generate_then_close, openai_backend, run_cli, write_labelled_csv
from trusteval.models import BackendSettings, ModelSpec
from trusteval.models import llamacpp as llamacpp_module
from trusteval.models.openai import chat_payload, names_invalid_parameter
from trusteval.records import GenerationParams, Request

pytest.importorskip("llama_cpp")

TOPICS = ("rain", "a cat", "trains", "coffee", "the sea", "winter", "a library", "bread")
SEEDS = (42, 43)


def parity_requests() -> list[Request]:
    params = GenerationParams(temperature=0.7, top_p=0.9, max_new_tokens=24)
    return [
        Request.build("parity", (("user", f"Write one sentence about {topic}."),), params, seed)
        for topic in TOPICS
        for seed in SEEDS
    ]


@pytest.fixture(scope="module")
def in_process_answers() -> list[str | None]:
    backend = llamacpp_module.create(ModelSpec.parse("llamacpp:smollm2?batch=1"), BackendSettings())
    return [g.text for g in generate_then_close(backend, parity_requests())]


def test_llamacpp_preset_gives_the_in_process_answers_through_the_real_server(llama_server, in_process_answers):
    backend = openai_backend(llama_server.base_url, "sampling=llamacpp&concurrency=1")
    served = [g.text for g in generate_then_close(backend, parity_requests())]
    assert None not in served
    assert len(set(served)) > 4  # sampled, not one greedy answer
    assert served == in_process_answers


def test_standard_sampling_on_the_real_server_differs_from_in_process(llama_server, in_process_answers):
    """The server's own repeat_penalty default (1.1) changes answers: why the llamacpp preset exists."""
    backend = openai_backend(llama_server.base_url, "concurrency=1")
    served = [g.text for g in generate_then_close(backend, parity_requests())]
    assert sum(a == b for a, b in zip(served, in_process_answers, strict=True)) < len(served)


def test_neutral_preset_fails_once_on_the_real_server_naming_top_k(llama_server):
    backend = openai_backend(llama_server.base_url, "sampling=neutral&max_retries=6&backoff_base=0.01")
    [generation] = generate_then_close(backend, parity_requests()[:1])
    assert generation.error is not None
    assert "top_k" in generation.error
    assert "not retried" in generation.error
    assert generation.retries == 0


def test_a_500_naming_an_invalid_parameter_is_not_retried_on_any_replica():
    body = b'{"error": {"message": "1 validation error: top_k Input should be greater than or equal to 0"}}'
    with ScriptedOpenAIServer([Reply(status=500, body=body)] * 3) as server:
        backend = openai_backend(server.base_url, "max_retries=6&backoff_base=0.01")
        [generation] = generate_then_close(backend, parity_requests()[:1])
        assert generation.retries == 0
        assert len(server.seen) == 1


def test_llamacpp_preset_sends_llama_cpp_server_names_and_no_rejected_value():
    payload = chat_payload("m", parity_requests()[0], "llamacpp")
    assert payload["top_k"] == 40 and payload["min_p"] == 0.05 and payload["repeat_penalty"] == 1.0
    assert "repetition_penalty" not in payload
    assert names_invalid_parameter("Input should be greater than or equal to 0")
    assert not names_invalid_parameter("server overloaded")


def test_a_run_with_a_preset_the_real_server_cannot_honour_is_refused_before_any_request(llama_server, tmp_path):
    texts = ["这个地区的人都很友好", "那些女人真恶心"]
    data = write_labelled_csv(tmp_path / "data.csv", texts)
    model = f"openai:{llama_server.model}?base_url={llama_server.base_url}&sampling=neutral"
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
                     "--model", model, "--seeds", "42", "--store", tmp_path / "ws", "--no-progress")  # fmt: skip
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "sampling=neutral" in line and "openai backend" in line and "top_k=-1" in line
    listed = run_cli("runs", "--store", tmp_path / "ws", "--json")
    assert listed.returncode != 0 or listed.json()["runs"] == []
