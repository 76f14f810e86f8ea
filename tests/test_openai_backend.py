"""The `openai` backend against a real llama.cpp server, and a scripted local server for retries."""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer, completion_body, free_port
from helpers import generate_then_close, openai_backend
from trusteval.errors import BackendError, UsageError
from trusteval.models import load_backend
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.openai import OpenAIBackend, backoff_delay, create, is_loopback, parse_retry_after
from trusteval.records import Generation, GenerationParams, Request

FAKE_KEY = "sk-test-DO-NOT-LEAK-4f1c9a"
FAST_RETRIES = "backoff_base=0.01&backoff_max=0.05"


def make_requests(count: int, *, max_new_tokens: int = 16, temperature: float = 0.0, seed: int = 1):
    params = GenerationParams(temperature=temperature, top_p=0.9, max_new_tokens=max_new_tokens)
    return [
        Request.build("openai:test", (("user", f"Say a short sentence about the number {i}."),), params, seed)
        for i in range(count)
    ]


def backend_for(url: str, options: str = "", *, model: str = "smollm2", **settings) -> OpenAIBackend:
    return openai_backend(url, options, model=model, **settings)


run = generate_then_close


# --- against the real llama.cpp server ------------------------------------------------------------


@pytest.mark.slow
def test_real_server_answers_with_text_finish_reason_and_token_counts(llama_server):
    backend = load_backend(
        ModelSpec.parse(f"openai:{llama_server.model}?base_url={llama_server.base_url}"), BackendSettings()
    )
    requests = make_requests(3)
    generations = run(backend, requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    for generation in generations:
        assert generation.ok, generation.error
        assert generation.text.strip()
        assert generation.finish_reason in {"stop", "length"}
        assert generation.prompt_tokens > 5
        assert 0 < generation.completion_tokens <= 16
        assert generation.retries == 0
        assert generation.latency_s > 0


@pytest.mark.slow
def test_real_server_respects_max_new_tokens(llama_server):
    params = GenerationParams(temperature=0.0, top_p=0.9, max_new_tokens=5)
    request = Request.build("openai:test", (("user", "Write a long story about a dragon."),), params, 3)
    [generation] = run(backend_for(llama_server.base_url), [request])
    assert generation.ok, generation.error
    assert generation.completion_tokens == 5
    assert generation.finish_reason == "length"


@pytest.mark.slow
def test_real_server_honours_the_seed(llama_server):
    # llama-cpp-python's server passes `seed` to the sampler: same seed, same text; other seeds, other texts.
    prompt = (("user", "Tell me a story about a cat."),)
    params = GenerationParams(temperature=0.7, top_p=0.9, max_new_tokens=40)
    same = [Request.build("openai:test", prompt, params, 11) for _ in range(2)]
    others = [Request.build("openai:test", prompt, params, seed) for seed in (12, 13, 14)]
    texts = [g.text for g in run(backend_for(llama_server.base_url, "concurrency=1"), same + others)]
    assert all(texts)
    assert texts[0] == texts[1]
    assert any(text != texts[0] for text in texts[2:])


@pytest.mark.slow
def test_real_server_answers_every_request_under_concurrency(llama_server):
    requests = make_requests(8, max_new_tokens=8)
    backend = backend_for(llama_server.base_url, "concurrency=4")
    assert backend.max_concurrency == 4
    assert backend.batch_size == 1
    generations = run(backend, requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    assert all(g.ok and g.text for g in generations), [g.error for g in generations]


@pytest.mark.slow
def test_probe_succeeds_against_the_real_server(llama_server):
    """The probe reaches the real server's /v1/models and accepts its answer; the same probe one port over,
    where nothing listens, is refused, so passing here means the server answered."""
    before = llama_server.log_path.read_text(errors="replace").count("GET /v1/models")

    async def probe(url: str) -> None:
        backend = backend_for(url)
        try:
            await backend.probe()
        finally:
            await backend.aclose()

    assert asyncio.run(probe(llama_server.base_url)) is None
    log = llama_server.log_path.read_text(errors="replace")
    assert log.count("GET /v1/models") == before + 1, log[-2000:]
    assert '"GET /v1/models HTTP/1.1" 200' in log
    closed = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendError, match="cannot reach"):
        asyncio.run(probe(closed))


# --- unreachable server ---------------------------------------------------------------------------


def test_unreachable_server_fails_every_request_with_a_clear_reason():
    url = f"http://127.0.0.1:{free_port()}/v1"
    generations = run(backend_for(url, f"max_retries=2&{FAST_RETRIES}"), make_requests(3))
    for generation in generations:
        assert not generation.ok
        assert generation.text is None
        assert f"cannot connect to {url}: connection refused" in generation.error
        assert "after 2 retries" in generation.error
        assert generation.retries == 2


def test_probe_raises_backend_error_for_an_unreachable_server():
    url = f"http://127.0.0.1:{free_port()}/v1"
    backend = backend_for(url)
    with pytest.raises(BackendError, match=rf"cannot reach {url}: connection refused"):
        asyncio.run(backend.probe())


def test_probe_counts_any_http_answer_as_reachable():
    with ScriptedOpenAIServer([Reply(status=404, body={"error": "no such route"})]) as server:
        asyncio.run(backend_for(server.base_url).probe())
        assert server.seen[0].method == "GET"
        assert server.seen[0].path == "/v1/models"


# --- creation: keys and options -------------------------------------------------------------------


def test_missing_api_key_for_a_remote_server_fails_at_creation_naming_the_variable():
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        create(ModelSpec.parse("openai:gpt-4o-mini"), BackendSettings(env={}))
    spec = ModelSpec.parse("openai:m?base_url=https://llm.example.org/v1&api_key_env=MY_LLM_KEY")
    with pytest.raises(BackendError, match="MY_LLM_KEY"):
        create(spec, BackendSettings(env={"OPENAI_API_KEY": FAKE_KEY}))


def test_remote_server_with_key_and_keyless_option_are_created():
    backend = create(ModelSpec.parse("openai:gpt-4o-mini"), BackendSettings(env={"OPENAI_API_KEY": FAKE_KEY}))
    assert backend.describe() == {
        "backend": "openai",
        "model": "openai:gpt-4o-mini",
        "host": "api.openai.com",
        "concurrency": 8,
    }
    assert FAKE_KEY not in repr(backend.config)
    keyless = create(ModelSpec.parse("openai:m?base_url=http://10.0.0.5:8000/v1&api_key_env="), BackendSettings())
    assert keyless.config.api_key is None
    asyncio.run(backend.aclose())
    asyncio.run(keyless.aclose())


def test_options_and_settings_choose_limits():
    spec = ModelSpec.parse("openai:m?base_url=http://127.0.0.1:8000/v1/&timeout=7&concurrency=32&max_retries=2")
    backend = create(spec, BackendSettings(concurrency=3, timeout_s=99, max_retries=9))
    assert (backend.config.timeout_s, backend.max_concurrency, backend.config.max_retries) == (7, 32, 2)
    assert backend.config.base_url == "http://127.0.0.1:8000/v1"
    assert spec.identity == "openai:m"  # operational options do not change the request hash
    defaults = create(ModelSpec.parse("openai:m?base_url=http://localhost:1/v1"), BackendSettings(concurrency=5))
    assert (defaults.max_concurrency, defaults.config.timeout_s, defaults.config.max_retries) == (5, 120, 6)


@pytest.mark.parametrize(
    "options",
    [
        "base_url=ftp://127.0.0.1/v1",
        "base_url=127.0.0.1:8000",
        "concurrency=0",
        "max_retries=-1",
        "colour=red",
    ],
)
def test_bad_options_are_usage_errors(options):
    with pytest.raises(UsageError):
        create(ModelSpec.parse(f"openai:m?{options}"), BackendSettings(env={"OPENAI_API_KEY": FAKE_KEY}))


def test_loopback_addresses():
    assert is_loopback("http://127.0.0.1:8000/v1")
    assert is_loopback("http://127.8.0.1/v1")
    assert is_loopback("http://localhost:11434/v1")
    assert is_loopback("http://[::1]:8000/v1")
    assert not is_loopback("https://api.openai.com/v1")
    assert not is_loopback("http://10.0.0.5:8000/v1")


# --- requests, retries and errors against a scripted server ---------------------------------------


def test_request_body_and_headers_carry_the_parameters():
    params = GenerationParams(temperature=0.3, top_p=0.8, max_new_tokens=21)
    request = Request.build("openai:test", (("system", "Be brief."), ("user", "Hi")), params, 42)
    with ScriptedOpenAIServer([Reply(body=completion_body("hello", prompt_tokens=9, completion_tokens=1))]) as server:
        [generation] = run(backend_for(server.base_url, model="my-model"), [request])
    assert generation == Generation(
        key=request.key,
        text="hello",
        finish_reason="stop",
        latency_s=generation.latency_s,
        prompt_tokens=9,
        completion_tokens=1,
    )
    [seen] = server.seen
    assert (seen.method, seen.path) == ("POST", "/v1/chat/completions")
    assert seen.json() == {
        "model": "my-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "temperature": 0.3,
        "top_p": 0.8,
        "max_tokens": 21,
        "seed": 42,
    }
    assert "authorization" not in seen.headers  # loopback and no key in the environment: no header


def test_a_key_in_the_environment_is_sent_as_bearer_token():
    with ScriptedOpenAIServer([Reply()]) as server:
        backend = backend_for(server.base_url, "api_key_env=LOCAL_KEY", env={"LOCAL_KEY": FAKE_KEY})
        [generation] = run(backend, make_requests(1))
    assert generation.ok
    assert server.seen[0].headers["authorization"] == f"Bearer {FAKE_KEY}"


def test_429_with_retry_after_is_waited_out_then_succeeds():
    script = [Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "1"}), Reply()]
    with ScriptedOpenAIServer(script) as server:
        started = time.perf_counter()
        [generation] = run(backend_for(server.base_url, FAST_RETRIES), make_requests(1))
        elapsed = time.perf_counter() - started
    assert generation.ok, generation.error
    assert generation.text == "scripted answer"
    assert generation.retries == 1
    assert elapsed >= 0.95
    assert generation.latency_s >= 0.95
    assert server.served == 2


def test_503_with_an_http_date_retry_after_is_honoured():
    # The date is made when the first request arrives and the retry's arrival is compared with it: timed from
    # before the server started, a loaded machine's slow start-up ate into the wait the test measured.
    arrivals: list[float] = []
    retry_at: list[float] = []

    def script(index: int, request) -> Reply:
        arrivals.append(time.time())
        if index:
            return Reply()
        retry_at.append(float(int(arrivals[0] + 2)))  # whole seconds: between 1 and 2 s from now
        return Reply(status=503, body="overloaded", headers={"Retry-After": formatdate(retry_at[0], usegmt=True)})

    with ScriptedOpenAIServer(script) as server:
        [generation] = run(backend_for(server.base_url, FAST_RETRIES), make_requests(1))
    assert generation.ok and generation.retries == 1
    assert len(arrivals) == 2 and arrivals[1] >= retry_at[0] - 0.05 >= arrivals[0] + 0.95


@pytest.mark.parametrize(
    "bad_reply",
    [
        Reply(body="{not json"),
        Reply(body={"choices": []}),
        Reply(body={"error": {"message": "internal"}}),
        Reply(status=502, body="bad gateway"),
    ],
    ids=["malformed-json", "empty-choices", "no-choices", "502"],
)
def test_a_bad_answer_is_retried_then_succeeds(bad_reply):
    with ScriptedOpenAIServer([bad_reply, Reply(body=completion_body("second time"))]) as server:
        [generation] = run(backend_for(server.base_url, FAST_RETRIES), make_requests(1))
    assert generation.ok, generation.error
    assert generation.text == "second time"
    assert generation.retries == 1


def test_500_forever_fails_after_max_retries_with_status_and_body():
    with ScriptedOpenAIServer([Reply(status=500, body="boom: engine crashed")]) as server:
        [generation] = run(backend_for(server.base_url, f"max_retries=3&{FAST_RETRIES}"), make_requests(1))
    assert not generation.ok
    assert generation.retries == 3
    assert server.served == 4
    assert "HTTP 500" in generation.error
    assert "boom: engine crashed" in generation.error
    assert "after 3 retries" in generation.error


def test_timeouts_are_retried_then_reported():
    with ScriptedOpenAIServer([Reply(delay_s=2.0)]) as server:
        backend = backend_for(server.base_url, f"timeout=0.2&max_retries=1&{FAST_RETRIES}")
        [generation] = run(backend, make_requests(1))
    assert not generation.ok
    assert generation.retries == 1
    assert "within 0.2 s" in generation.error
    # whichever ends the wait first: httpx's read timeout or the answer's deadline (the same 0.2 s here)
    assert "(ReadTimeout)" in generation.error or "(DeadlineExceeded)" in generation.error


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_fail_at_once_with_the_server_message(status):
    with ScriptedOpenAIServer([Reply(status=status, body={"error": {"message": "model 'x' not found"}})]) as server:
        [generation] = run(backend_for(server.base_url, FAST_RETRIES), make_requests(1))
    assert not generation.ok
    assert generation.retries == 0
    assert server.served == 1
    assert f"HTTP {status}" in generation.error
    assert "model 'x' not found" in generation.error


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_fails_at_once_naming_the_variable_never_the_key(status):
    body = {"error": {"message": f"Incorrect API key provided: {FAKE_KEY}"}}  # some servers echo the key
    with ScriptedOpenAIServer([Reply(status=status, body=body)]) as server:
        backend = backend_for(server.base_url, f"api_key_env=LOCAL_KEY&{FAST_RETRIES}", env={"LOCAL_KEY": FAKE_KEY})
        described = backend.describe()
        [generation] = run(backend, make_requests(1))
    assert server.served == 1
    assert generation.retries == 0
    assert f"HTTP {status}" in generation.error
    assert "refused the API key from LOCAL_KEY" in generation.error
    for text in (repr(generation), str(described), repr(backend.config), repr(backend.spec)):
        assert FAKE_KEY not in text
    with pytest.raises(BackendError) as raised:
        create(ModelSpec.parse("openai:m?base_url=https://api.example.org/v1"), BackendSettings(env={}))
    assert FAKE_KEY not in str(raised.value)


def test_401_without_a_key_says_which_variable_to_set():
    with ScriptedOpenAIServer([Reply(status=401, body={"error": "missing bearer"})]) as server:
        [generation] = run(backend_for(server.base_url), make_requests(1))
    assert "none was sent (set OPENAI_API_KEY)" in generation.error


def test_generate_with_many_requests_keeps_order_and_the_concurrency_limit():
    def answer(index, request):
        return Reply(body=completion_body(request.json()["messages"][0]["content"]), delay_s=0.1)

    requests = make_requests(9)
    with ScriptedOpenAIServer(answer) as server:
        generations = run(backend_for(server.base_url, "concurrency=3"), requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    assert [g.text for g in generations] == [r.messages[0][1] for r in requests]
    assert server.max_in_flight == 3


def test_concurrency_above_one_client_pool_still_fills_every_slot():
    def answer(index, request):
        return Reply(body=completion_body(f"answer {index}"), delay_s=0.3)

    requests = make_requests(80)
    with ScriptedOpenAIServer(answer) as server:
        generations = run(backend_for(server.base_url, "concurrency=40"), requests)
    assert [g.key for g in generations] == [r.key for r in requests]
    assert all(g.ok for g in generations)
    assert server.max_in_flight == 40


# --- pure helpers ---------------------------------------------------------------------------------


def test_parse_retry_after():
    now = 1_700_000_000.0
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("1.5") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("3600") == 60.0
    assert parse_retry_after(formatdate(now + 10, usegmt=True), now=now) == pytest.approx(10.0)
    assert parse_retry_after(formatdate(now - 10, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_backoff_grows_exponentially_with_jitter_and_a_ceiling():
    for retry in range(6):
        delays = [backoff_delay(retry, 0.5, 4.0) for _ in range(50)]
        ceiling = min(4.0, 0.5 * 2**retry)
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1
