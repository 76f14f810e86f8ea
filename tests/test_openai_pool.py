"""The `openai` backend over several replicas (`base_url=URL1,URL2`): spread, per-URL concurrency, failover.

Replicas are real servers on 127.0.0.1: the llama.cpp server fixture and scripted fakes that answer, refuse
connections (nothing listening) or die mid-run (`ScriptedOpenAIServer.die()` drops every open connection).
Each fake names itself in its answers, so the tests see which replica answered each request.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections import Counter
from contextlib import ExitStack, closing

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer, completion_body, free_port
from helpers import generate_then_close, openai_backend, run_cli
from trusteval.errors import BackendError, UsageError
from trusteval.models import model_identity
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.openai import OpenAIBackend, create
from trusteval.models.openai_pool import Replica, ReplicaPool, public_url
from trusteval.records import Generation, GenerationParams, Request

FAST_RETRIES = "backoff_base=0.01&backoff_max=0.05"


def make_requests(count: int, *, max_new_tokens: int = 16) -> list[Request]:
    params = GenerationParams(temperature=0.0, top_p=0.9, max_new_tokens=max_new_tokens)
    return [Request.build("openai:m", (("user", f"Say a word about {i}."),), params, 1) for i in range(count)]


def pool_backend(urls: list[str], options: str = "", *, model: str = "m", **settings) -> OpenAIBackend:
    return openai_backend(",".join(urls), options, model=model, **settings)


run = generate_then_close


def echo(name: str, *, delay_s: float = 0.05, die_after: int | None = None):
    """A script answering `name|prompt`; with `die_after`, the replica dies on its chat request number
    `die_after` (0-based), which goes unanswered like every request then in flight."""
    chats = 0
    server: list[ScriptedOpenAIServer] = []

    def answer(index: int, request) -> Reply:
        nonlocal chats
        if request.path.endswith("/chat/completions"):
            if chats == die_after:
                server[0].die()
                return Reply(body=completion_body("never sent"), delay_s=5.0)
            chats += 1
        prompt = request.json()["messages"][0]["content"] if request.body else ""
        return Reply(body=completion_body(f"{name}|{prompt}"), delay_s=delay_s)

    return answer, server


def replica(name: str, stack: ExitStack, **options) -> ScriptedOpenAIServer:
    script, holder = echo(name, **options)
    server = stack.enter_context(ScriptedOpenAIServer(script))
    holder.append(server)
    return server


def chats_answered(server: ScriptedOpenAIServer) -> int:
    """Chat requests the server answered in full (its probes, GET /models, are answered too)."""
    return server.answered - sum(1 for r in server.seen if r.method == "GET")


def answered_by(generations: list[Generation]) -> Counter:
    return Counter(g.text.split("|", 1)[0] for g in generations if g.ok)


def check_answers(generations: list[Generation], requests: list[Request]) -> None:
    """Every request answered, in order, with its own prompt."""
    assert [g.key for g in generations] == [r.key for r in requests]
    assert all(g.ok for g in generations), [g.error for g in generations if not g.ok][:3]
    assert [g.text.split("|", 1)[1] for g in generations] == [r.messages[0][1] for r in requests]


# --- spread and per-URL concurrency ---------------------------------------------------------------


def test_requests_spread_over_every_replica_within_the_per_url_concurrency():
    requests = make_requests(36)
    with ExitStack() as stack:
        servers = {name: replica(name, stack, delay_s=0.15) for name in "abc"}  # long enough to fill 3 slots
        backend = pool_backend([s.base_url for s in servers.values()], "concurrency=3")
        assert backend.max_concurrency == 9  # concurrency is per URL
        generations = run(backend, requests)
    check_answers(generations, requests)
    counts = answered_by(generations)
    assert set(counts) == set("abc") and min(counts.values()) >= 6, counts
    assert {name: s.answered for name, s in servers.items()} == dict(counts)  # each request answered once
    assert [s.max_in_flight for s in servers.values()] == [3, 3, 3]


@pytest.mark.slow
def test_the_real_llama_server_and_a_fake_share_the_requests(llama_server):
    requests = make_requests(4, max_new_tokens=4)
    with ExitStack() as stack:
        fake = replica("fake", stack, delay_s=0.3)
        urls = [llama_server.base_url, fake.base_url]
        generations = run(pool_backend(urls, "concurrency=1&api_key_env=", model=llama_server.model), requests)
    assert all(g.ok for g in generations), [g.error for g in generations]
    from_fake = [g for g in generations if g.text.startswith("fake|")]
    assert 1 <= len(from_fake) < len(requests) and fake.answered == len(from_fake)
    assert fake.max_in_flight == 1
    assert all(g.prompt_tokens > 5 for g in generations if g not in from_fake)  # the real model's counts


# --- failover -------------------------------------------------------------------------------------


def test_a_replica_that_dies_mid_run_has_its_requests_answered_by_the_others_once():
    requests = make_requests(30)
    with ExitStack() as stack:
        alive, dying = replica("alive", stack), replica("dying", stack, die_after=5)
        backend = pool_backend([alive.base_url, dying.base_url], f"concurrency=2&max_retries=0&{FAST_RETRIES}")
        generations = run(backend, requests)
    check_answers(generations, requests)  # with max_retries=0: failover is not a retry
    counts = answered_by(generations)
    assert counts["dying"] == dying.answered <= 5 and counts["alive"] == alive.answered
    assert alive.answered + dying.answered == len(requests)
    assert max(alive.max_in_flight, dying.max_in_flight) <= 2
    moved = [g for g in generations if g.retries]
    assert moved and all(g.text.startswith("alive|") for g in moved)


def test_a_refused_replica_is_left_out_for_its_back_off_and_costs_few_attempts():
    requests = make_requests(20)
    refused = f"http://127.0.0.1:{free_port()}/v1"
    with ExitStack() as stack:
        alive = replica("alive", stack)
        generations = run(pool_backend([refused, alive.base_url], "concurrency=2&backoff_base=0.5"), requests)
    check_answers(generations, requests)
    assert alive.answered == 20
    assert 1 <= sum(g.retries for g in generations) <= 6  # each attempt on the refused URL is one failover


def test_a_client_error_is_not_failed_over():
    with ExitStack() as stack:
        servers = [stack.enter_context(ScriptedOpenAIServer([Reply(status=400, body={"error": "bad"})]))]
        servers.append(replica("b", stack))
        backend = pool_backend([s.base_url for s in servers], "concurrency=1")
        [generation] = run(backend, make_requests(1))
    assert not generation.ok and "HTTP 400" in generation.error and generation.retries == 0
    assert servers[1].answered == 0


def test_when_every_replica_is_down_requests_fail_with_the_reason_not_a_hang():
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    generations = run(pool_backend(urls, f"max_retries=2&{FAST_RETRIES}"), make_requests(4))
    assert len(generations) == 4  # the run returned: every request ended, none waits on a replica forever
    for generation in generations:
        assert not generation.ok
        assert "connection refused" in generation.error and "all 2 replicas are down" in generation.error
        # max_retries retries, and in each of the 3 rounds at most one failover (to the other replica)
        assert 2 <= generation.retries <= 2 + 3


def test_probe_passes_while_one_replica_answers_and_names_every_url_when_none_does():
    down = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    with ScriptedOpenAIServer([Reply()]) as server:
        asyncio.run(pool_backend([down[0], server.base_url]).probe())
    with pytest.raises(BackendError, match=rf"cannot reach {down[0]}: connection refused; {down[1]}: connection"):
        asyncio.run(pool_backend(down).probe())


# --- the pool's bookkeeping -----------------------------------------------------------------------


def test_a_down_replica_comes_back_after_its_back_off_and_a_lone_one_is_never_left_out():
    async def go() -> None:
        pool = ReplicaPool([Replica(f"http://r{i}/v1", [None], 1) for i in range(2)], backoff_base_s=0.05,
                           backoff_max_s=1.0)  # fmt: skip
        first = await pool.acquire()
        pool.release(first)
        pool.failed(first.replica, "broken")
        again = await pool.acquire()
        assert again.replica is not first.replica
        pool.failed(again.replica, "broken")
        assert pool.down_summary() == "all 2 replicas are down"
        started = time.monotonic()
        back = await pool.acquire()  # waits for the first replica's return, 0.05 s
        assert back.replica is first.replica and time.monotonic() - started > 0.03  # no earlier than its back-off
        lone = ReplicaPool([Replica("http://r/v1", [None], 1)], backoff_base_s=5, backoff_max_s=5)
        lone.failed(lone.replicas[0], "broken")
        assert lone.any_up() and lone.down_summary() == ""

    asyncio.run(go())


def test_a_released_slot_wakes_a_request_that_can_use_it_not_a_failover_that_avoids_it():
    # A failover from replica a waits for b while b is up; a request waiting behind it can use a's slot. The
    # wake-up of a's release went to the failover, which waited again: a's slot stayed idle until b answered.
    async def go() -> None:
        pool = ReplicaPool([Replica(f"http://{n}/v1", [None], 1) for n in "ab"], backoff_base_s=5, backoff_max_s=5)
        on_a, on_b = await pool.acquire(), await pool.acquire()
        failover = asyncio.ensure_future(pool.acquire(avoid={on_a.replica}))
        plain = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0)
        pool.release(on_a)
        got = await asyncio.wait_for(plain, timeout=10)
        assert got.replica is on_a.replica and not failover.done()
        pool.release(on_b)
        assert (await asyncio.wait_for(failover, timeout=10)).replica is on_b.replica

    asyncio.run(go())


# --- spec, identity, messages ---------------------------------------------------------------------


def test_the_identity_and_run_id_do_not_depend_on_the_replicas():
    one = model_identity("openai:m?base_url=http://127.0.0.1:1/v1")
    assert one == model_identity("openai:m?base_url=http://127.0.0.1:1/v1,http://127.0.0.1:2/v1&concurrency=4")
    assert one == model_identity("openai:m?base_url=http://10.0.0.2:8000/v1,http://10.0.0.3:8000/v1") == "openai:m"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("base_url=http://127.0.0.1:1/v1,ftp://h/v1", "base_url must be an http"),
        ("base_url=http://127.0.0.1:1/v1,http://127.0.0.1:1/v1/", "the same URL twice"),
        ("concurrency=1025", "option 'concurrency' must be a whole number between 1 and 1024, not '1025'"),
        ("concurrency=0", "option 'concurrency' must be a whole number between 1 and 1024, not '0'"),
        ("max_retries=101", "option 'max_retries' must be a whole number between 0 and 100"),
        ("timeout=0", "option 'timeout' must be a number > 0 and <= 86400, not '0'"),
    ],
)
def test_bad_pool_options_are_one_clear_usage_error(options, message):
    with pytest.raises(UsageError, match=message):
        create(ModelSpec.parse(f"openai:m?{options}"), BackendSettings(env={"OPENAI_API_KEY": "sk-x"}))


def test_a_credential_in_any_listed_url_is_refused_without_repeating_it():
    canary = "sk-canary-7f3e1d"
    with pytest.raises(UsageError) as caught:
        ModelSpec.parse(f"openai:m?base_url=http://127.0.0.1:1/v1,http://me:{canary}@127.0.0.1:2/v1")
    assert "user:password" in str(caught.value) and canary not in str(caught.value)


def test_messages_name_urls_without_query_or_userinfo_and_never_the_key():
    key = "sk-pool-secret-0b9c8d7e"
    assert public_url("http://u:p@127.0.0.1:9/v1?tenant=x#f") == "http://127.0.0.1:9/v1"

    def leak(index, request):
        return Reply(status=503, body={"error": f"overloaded, your key {key} is fine"})

    with ScriptedOpenAIServer(leak) as first, ScriptedOpenAIServer(leak) as second:
        urls = [first.base_url + "?tenant=a", second.base_url]
        backend = pool_backend(urls, f"max_retries=1&{FAST_RETRIES}", env={"OPENAI_API_KEY": key})
        [generation] = run(backend, make_requests(1))
    assert not generation.ok and key not in generation.error and "[redacted]" in generation.error
    assert "HTTP 503" in generation.error and "all 2 replicas are down" in generation.error
    assert "tenant" not in generation.error


# --- through the CLI: every replica dies, the run ends incomplete, the next run resumes --------------------


def _run(store, cache_dir, urls: list[str]):
    model = f"openai:m?base_url={','.join(urls)}&concurrency=2&{FAST_RETRIES}"
    return run_cli(
        "run", "--benchmark", "trusteval-toxicity", "--dataset", "cold", "--limit", "10", "--seeds", "42",
        "--max-new-tokens", "12", "--prompt-toxicity", "label", "--max-retries", "1", "--store", store,
        "--cache-dir", cache_dir, "--json", "--no-progress", "--model", model,
    )  # fmt: skip


@pytest.mark.slow
def test_a_pool_that_dies_ends_the_run_incomplete_with_reasons_and_the_next_run_resumes(tmp_path, cache_dir):
    store = tmp_path / "ws"
    with ExitStack() as stack:
        dying = [replica(name, stack, delay_s=0.02, die_after=3) for name in ("a", "b")]
        first = _run(store, cache_dir, [s.base_url for s in dying])
    assert first.returncode == 3, first.stderr[-2000:]
    out = first.json()
    answered = sum(chats_answered(s) for s in dying)
    assert out["generated"] == answered and out["failed"] == out["requests"] - answered > 0
    with closing(sqlite3.connect(store / "trusteval.sqlite")) as db:
        reasons = [error for (error,) in db.execute("SELECT error FROM generation_failures")]
        status = db.execute("SELECT status FROM runs WHERE run_id = ?", (out["run_id"],)).fetchone()[0]
    assert status == "incomplete" and reasons
    assert all("all 2 replicas are down" in r for r in reasons), reasons[:3]
    with ExitStack() as stack:
        fresh = [replica(name, stack, delay_s=0.0) for name in ("c", "d")]
        again = _run(store, cache_dir, [s.base_url for s in fresh])
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = again.json()
    assert resumed["run_id"] == out["run_id"]  # other URLs, the same run
    assert (resumed["generated"], resumed["reused"], resumed["failed"]) == (out["failed"], answered, 0)
    assert sum(chats_answered(s) for s in fresh) == out["failed"]


def test_clients_share_one_ssl_context_built_once(monkeypatch):
    """Loading the CA bundle costs about 40 ms a client; a run builds 2 clients per URL, twice."""
    import httpx

    from trusteval.models import openai as openai_backend

    built = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda **kw: built.append(kw) or real(**kw))
    openai_backend.shared_ssl_context.cache_clear()
    urls = ["http://127.0.0.1:9/v1", "https://127.0.0.1:9/v1", "https://127.0.0.2:9/v1"]
    backends = [pool_backend(urls, concurrency=32) for _ in range(2)]
    clients = [client for backend in backends for replica in backend.pool.replicas for client in replica.clients]
    assert len(clients) == 12
    assert built == [{"trust_env": False}]
    https = [c for b in backends for r in b.pool.replicas if r.base_url.startswith("https") for c in r.clients]
    contexts = {id(client._transport._pool._ssl_context) for client in https}
    assert contexts == {id(openai_backend.shared_ssl_context())}
    openai_backend.shared_ssl_context.cache_clear()


def test_plain_http_clients_do_not_load_the_ca_bundle(monkeypatch):
    """A local server (vLLM, llama.cpp) is plain http: its clients never use TLS, so they do not pay for the
    CA bundle (20 ms); their context still verifies, against no authority, so TLS through it would fail."""
    import ssl

    import httpx

    from trusteval.models import openai as openai_backend

    monkeypatch.setattr(httpx, "create_ssl_context", lambda **kw: pytest.fail("the CA bundle was loaded"))
    openai_backend.shared_ssl_context.cache_clear()
    backend = pool_backend(["http://127.0.0.1:9/v1", "http://127.0.0.2:9/v1"], concurrency=32)
    contexts = {client._transport._pool._ssl_context for r in backend.pool.replicas for client in r.clients}
    assert len(contexts) == 1
    [context] = contexts
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    openai_backend.shared_ssl_context.cache_clear()
