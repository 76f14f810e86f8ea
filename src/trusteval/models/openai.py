"""`openai`: any OpenAI-compatible chat server (vLLM, SGLang, llama.cpp server, Ollama, hosted APIs).

Spec: `openai:<model>?base_url=http://127.0.0.1:8000/v1&api_key_env=OPENAI_API_KEY&timeout=60&concurrency=32`
(also `max_retries`, `backoff_base`, `backoff_max`, `sampling`; read by `trusteval.models.openai_config`).
`base_url` may list several replicas of one model, separated by commas
(`base_url=http://a:8000/v1,http://b:8000/v1`); `concurrency` is then per URL, requests go to the least busy live
replica and move to another when one fails (`trusteval.models.openai_pool`).

The API key is read from the injected environment (`BackendSettings.env`), never from `os.environ`; it is
required only when a base URL is not a loopback address, and `api_key_env=` (empty) sends no key at all. The
key is scrubbed (`trusteval.untrusted.redact`) from reasons and errors, even in part, in another case or
encoded, and from answers when one holds it whole or a long piece of it (such an answer is marked
`redacted_by_trusteval`); a placeholder key (`sk-no-key-required`, `EMPTY`) is not a secret and is never
matched. Messages name URLs without user:password, query or fragment; a base URL holding the key itself is
refused.

Each request is one POST to `{base_url}/chat/completions` of one replica. Overloads, server errors, broken
connections, timeouts, malformed JSON and empty `choices` are retried with exponential backoff and jitter
(`Retry-After` is honoured on 429 and 503); other client errors fail at once. A request that still fails is a
failed Generation with the reason and the number of retries; `generate()` never raises. `timeout` is a deadline
for each attempt's whole answer (connect, headers and body), not for each read, so a server that trickles its
body fails in `timeout` seconds per attempt; the `GET /models` probe has its own deadline of
`PROBE_TIMEOUT_S`. A body is read up to `MAX_RESPONSE_BYTES` and no further; how its answer is read is in
`trusteval.models.chat_answers`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import socket
import ssl
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from trusteval.errors import BackendError, UsageError
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.chat_answers import Rejected, excerpt, read_completion
from trusteval.models.http_retry import DeadlineExceeded, backoff_delay, parse_retry_after, within_deadline
from trusteval.models.openai_config import (
    DEFAULT_API_KEY_ENV,
    KNOWN_OPTIONS,
    OPERATIONAL_OPTIONS,
    OpenAIConfig,
    Options,
    is_loopback,
    read_config,
)
from trusteval.models.openai_pool import Replica, ReplicaPool, Slot
from trusteval.records import Generation, Request
from trusteval.untrusted import redact
from trusteval.untrusted.answers import MAX_RESPONSE_BYTES, load_json

# KNOWN_OPTIONS, OPERATIONAL_OPTIONS and Options are read from this module (the plugin's) by trusteval.models and
# trusteval.options; they are declared in trusteval.models.openai_config with the rest of the spec's reading.
__all__ = [
    "KNOWN_OPTIONS",
    "OPERATIONAL_OPTIONS",
    "OpenAIBackend",
    "Options",
    "backoff_delay",
    "create",
    "is_loopback",
    "parse_retry_after",
    "preflight",
    "read_config",
]

# What every request sends besides the run's temperature, top_p, max_new_tokens and seed: the OpenAI API's
# own sampling knobs at their neutral values, so no server default can change them.
STANDARD_SAMPLING: dict[str, Any] = {"n": 1, "presence_penalty": 0.0, "frequency_penalty": 0.0}
# Knobs outside the OpenAI API (vLLM and SGLang read them; hosted APIs refuse them): sent only with
# `sampling=neutral`, at the values that turn them off, which is how the hf and llamacpp backends sample.
NEUTRAL_EXTRAS: dict[str, Any] = {"top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0}
# `sampling=llamacpp`: llama.cpp's server under the names it reads (llama_cpp/server/types.py:
# CreateChatCompletionRequest has top_k >= 0, min_p, repeat_penalty, no typical_p and no repetition_penalty),
# at the values the in-process llamacpp backend samples with (Llama.create_chat_completion's defaults; the server's
# own repeat_penalty default is 1.1), so the same GGUF and seed give the same answers served and in process.
LLAMACPP_EXTRAS: dict[str, Any] = {"top_k": 40, "min_p": 0.05, "repeat_penalty": 1.0}
PRESET_EXTRAS: dict[str, dict[str, Any]] = {"standard": {}, "neutral": NEUTRAL_EXTRAS, "llamacpp": LLAMACPP_EXTRAS}
RETRYABLE_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
# Statuses that say the replica itself is failing (not the request, not a rate limit): its requests fail over.
REPLICA_FAULT_STATUSES = frozenset({500, 502, 503, 504})
RETRY_AFTER_STATUSES = frozenset({429, 503})
KEY_REFUSED_STATUSES = frozenset({401, 403})
PROBE_TIMEOUT_S = 5.0
# What servers say when a request parameter is invalid (llama.cpp's server answers a failed pydantic check with
# HTTP 500, "Input should be greater than or equal to 0"; OpenAI: "Unrecognized request argument supplied"; vLLM
# and SGLang: 400 with "validation error"): the same on every retry and every replica, so never retried.
INVALID_PARAMETER_MARKS = (
    "input should be",
    "validation error",
    "unrecognized request argument",
    "extra inputs are not permitted",
    "invalid_request_error",
)
CONNECTIONS_PER_CLIENT = 16


def record_missing_sniffio() -> None:
    """httpcore runs `import sniffio` several times per request to tell asyncio from trio, and sniffio is
    optional (anyio 4 no longer installs it). A failed import is not remembered, so without sniffio each one
    searches sys.path again: about 0.1 ms, 0.5 s of CPU per 500 requests. Recording it as missing (None in
    sys.modules) makes the same ImportError immediate; httpcore then assumes asyncio, as it did.

    Called where the cost is paid, when a backend is created (its async clients are the ones that ask), not
    when this module is imported: importing trusteval leaves sys.modules as it was. The Perspective scorer's
    client is synchronous and never asks."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]  # None: "not importable"


class ResponseTooLarge(Exception):
    pass


@dataclass(frozen=True)
class Received:
    """An HTTP answer read in full, but never past MAX_RESPONSE_BYTES."""

    status: int
    headers: httpx.Headers
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


async def receive(client: httpx.AsyncClient, url: str, payload: dict[str, Any]) -> Received:
    """POST and read the answer, stopping (ResponseTooLarge) as soon as it passes MAX_RESPONSE_BYTES."""
    async with client.stream("POST", url, json=payload) as response:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
            raise ResponseTooLarge
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_RESPONSE_BYTES:
                raise ResponseTooLarge
        return Received(response.status_code, response.headers, bytes(body))


@dataclass(frozen=True)
class Attempt:
    """The outcome of one HTTP attempt: a Generation, or a reason and whether trying again may help."""

    generation: Generation | None = None
    reason: str = ""
    retryable: bool = False
    retry_after_s: float | None = None
    replica_fault: bool = False  # the replica failed (connection, timeout, 5xx): try another one


def connection_failure(exc: BaseException) -> str:
    """A short human reason for a transport error, from the innermost OS error when there is one."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return f"host name not found ({cause.strerror or cause})"
        if isinstance(cause, ConnectionResetError):
            return "connection reset by the server"
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def chat_payload(model: str, request: Request, sampling: str = "standard") -> dict[str, Any]:
    """The request body: every sampling parameter trusteval controls, and the preset's server extensions
    (`sampling=neutral`: vLLM/SGLang's top_k, min_p, repetition_penalty switched off; `sampling=llamacpp`:
    llama.cpp server's top_k, min_p, repeat_penalty at the in-process llamacpp backend's values)."""
    return {
        "model": model,
        "messages": request.chat(),
        "temperature": request.params.temperature,
        "top_p": request.params.top_p,
        "max_tokens": request.params.max_new_tokens,
        "seed": request.seed,
        **STANDARD_SAMPLING,
        **PRESET_EXTRAS[sampling],
    }


def names_invalid_parameter(body: str) -> bool:
    """Whether an error body says a request parameter is invalid (INVALID_PARAMETER_MARKS)."""
    lowered = body[:4000].lower()
    return any(mark in lowered for mark in INVALID_PARAMETER_MARKS)


def sampling_settings(sampling: str) -> dict[str, Any]:
    """What the model's sampling is made of: sent (with values) and left to the server."""
    sent = ["temperature", "top_p", "max_tokens", "seed", *STANDARD_SAMPLING, *PRESET_EXTRAS[sampling]]
    server_defaults = {"standard": list(NEUTRAL_EXTRAS), "neutral": [], "llamacpp": ["typical_p"]}[sampling]
    return {"sent": sent, "server_defaults": server_defaults}


def sampling_note(spec: ModelSpec) -> str | None:
    """The run note for a model whose top_k, min_p and repetition_penalty are the server's (no sampling=neutral)."""
    if spec.options.get("sampling", "standard") != "standard":
        return None
    return (
        f"{spec.shown}: top_k, min_p and repetition_penalty are not sent (not in the OpenAI API): the server's "
        "defaults apply (vLLM without --generation-config vllm takes them from the model's generation_config.json, "
        "which the hf and llamacpp backends do not); add ?sampling=neutral to send top_k=-1, min_p=0, "
        "repetition_penalty=1 (vLLM, SGLang; hosted APIs refuse them), or ?sampling=llamacpp on llama.cpp's server "
        "(top_k=40, min_p=0.05, repeat_penalty=1, as the llamacpp backend samples)"
    )


class OpenAIBackend:
    batch_size = 1

    def __init__(self, spec: ModelSpec, config: OpenAIConfig, replicas: Sequence[Replica]) -> None:
        record_missing_sniffio()
        self.spec = spec
        self.config = config
        backoff = {"backoff_base_s": config.backoff_base_s, "backoff_max_s": config.backoff_max_s}
        self.pool = ReplicaPool(list(replicas), **backoff)
        self.max_concurrency = self.pool.capacity

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return list(await asyncio.gather(*(self._answer(r) for r in requests)))

    async def probe(self) -> None:
        """Raise BackendError when no replica answers. Any HTTP answer (even 401 or 404) counts."""
        failures = await asyncio.gather(*(self._probe_one(r) for r in self.pool.replicas))
        if all(failures):
            raise BackendError(self._redact(f"openai: cannot reach {'; '.join(f for f in failures if f)}"))

    async def _probe_one(self, replica: Replica) -> str | None:
        """None when the replica answers, else 'URL: reason'."""
        deadline = min(PROBE_TIMEOUT_S, self.config.timeout_s)
        try:
            await within_deadline(_status_line(replica.clients[0], f"{replica.base_url}/models", deadline), deadline)
        except httpx.ConnectTimeout as exc:
            return f"{replica.public_url}: {connection_failure(exc)}"
        except (httpx.TimeoutException, DeadlineExceeded):
            return None  # connected, but slow to answer (a busy server): reachable
        except httpx.HTTPError as exc:
            return f"{replica.public_url}: {connection_failure(exc)}"
        return None

    async def aclose(self) -> None:
        for replica in self.pool.replicas:
            for client in replica.clients:
                await client.aclose()

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {
            "backend": "openai",
            "model": self.spec.identity,
            "host": self.config.host,
            "concurrency": self.config.concurrency,
            "sampling": sampling_settings(self.config.sampling),
        }
        if self.pool.size > 1:
            described["replicas"] = self.pool.size
        return described

    async def _answer(self, request: Request) -> Generation:
        sent: list[float] = []  # when the first attempt got a slot: a request's latency excludes its queueing
        try:
            generation, retries = await self._answer_with_retries(request, sent)
        except Exception as exc:  # a bug or an unexpected library error must not end the run
            reason = self._redact(f"openai: unexpected {type(exc).__name__}: {exc}")
            return Generation.failure(request.key, reason, latency_s=self._since(sent))
        return replace(generation, latency_s=self._since(sent), retries=retries)

    @staticmethod
    def _since(sent: list[float]) -> float:
        return time.perf_counter() - sent[0] if sent else 0.0

    async def _answer_with_retries(self, request: Request, sent: list[float]) -> tuple[Generation, int]:
        """Send until answered. A replica fault moves the request at once to a live replica it has not failed on
        (a failover); anything else retryable, or a fault with nowhere to go, waits out the backoff, up to
        max_retries. The count returned is retries and failovers: every attempt beyond the first."""
        payload = chat_payload(self.config.model, request, self.config.sampling)
        retries = failovers = 0
        failed_on: set[Replica] = set()
        while True:
            attempt, replica = await self._attempt_on_a_replica(request.key, payload, failed_on, sent)
            if attempt.generation is not None:
                return attempt.generation, retries + failovers
            if attempt.replica_fault:
                failed_on.add(replica)
                if self.pool.any_up(besides=failed_on):
                    failovers += 1
                    continue
            if not attempt.retryable or retries >= self.config.max_retries:
                reason = self._final_reason(attempt, retries + failovers)
                return Generation.failure(request.key, reason), retries + failovers
            await asyncio.sleep(self._delay(retries, attempt.retry_after_s))
            retries += 1
            failed_on.clear()

    async def _attempt_on_a_replica(
        self, key: str, payload: dict[str, Any], avoid: set[Replica], sent: list[float]
    ) -> tuple[Attempt, Replica]:
        slot = await self.pool.acquire(avoid)
        if not sent:
            sent.append(time.perf_counter())
        try:
            attempt = await self._attempt(slot, key, payload)
        finally:
            self.pool.release(slot)
        if attempt.generation is not None:
            self.pool.answered(slot.replica)
        elif attempt.replica_fault:
            self.pool.failed(slot.replica, attempt.reason, at_least_s=attempt.retry_after_s)
        return attempt, slot.replica

    async def _attempt(self, slot: Slot, key: str, payload: dict[str, Any]) -> Attempt:
        url = slot.replica.public_url
        timeout = self.config.timeout_s
        try:
            response = await within_deadline(
                receive(slot.client, f"{slot.replica.base_url}/chat/completions", payload), timeout
            )
        except ResponseTooLarge:
            limit = MAX_RESPONSE_BYTES // 2**20
            return Attempt(reason=f"the answer from {url} is larger than {limit} MiB; it was not read past that")
        except (httpx.TimeoutException, DeadlineExceeded) as exc:
            reason = f"no answer from {url} within {timeout:g} s ({type(exc).__name__})"
            return Attempt(reason=reason, retryable=True, replica_fault=True)
        except httpx.ConnectError as exc:
            reason = f"cannot connect to {url}: {connection_failure(exc)}"
            return Attempt(reason=reason, retryable=True, replica_fault=True)
        except httpx.TransportError as exc:
            reason = f"{type(exc).__name__} from {url}: {connection_failure(exc)}"
            return Attempt(reason=reason, retryable=True, replica_fault=True)
        if not 200 <= response.status < 300:
            return self._status_failure(response, url)
        try:
            body = load_json(response.body)
        except (ValueError, RecursionError):
            said = excerpt(response.text, secret=self.config.api_key)
            reason = f"malformed JSON from {url} (HTTP {response.status}): {said}"
            return Attempt(reason=reason, retryable=True)
        completion = read_completion(key, body, secret=self.config.api_key)
        if isinstance(completion, Rejected):
            return Attempt(reason=f"bad answer from {url}: {completion.reason}", retryable=completion.retryable)
        return Attempt(generation=completion)

    def _status_failure(self, response: Received, url: str) -> Attempt:
        status = response.status
        said = excerpt(response.text, secret=self.config.api_key)
        reason = f"HTTP {status} from {url}: {said}"
        if status in KEY_REFUSED_STATUSES:
            reason = f"HTTP {status} from {url}: {self._key_hint()}; server said {said}"
        elif status == 404:
            reason += f" (check the model name '{self.config.model}' and base_url)"
        if names_invalid_parameter(response.text):
            return Attempt(reason=f"{reason} (a request parameter is invalid for this server: not retried)")
        retry_after = None
        if status in RETRY_AFTER_STATUSES:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        return Attempt(
            reason=reason,
            retryable=status in RETRYABLE_STATUSES,
            retry_after_s=retry_after,
            replica_fault=status in REPLICA_FAULT_STATUSES,
        )

    def _key_hint(self) -> str:
        if self.config.api_key is None:
            variable = self.config.api_key_env or DEFAULT_API_KEY_ENV
            return f"the server wants an API key and none was sent (set {variable})"
        return f"the server refused the API key from {self.config.api_key_env}"

    def _final_reason(self, attempt: Attempt, retries: int) -> str:
        notes = [f"after {retries} {'retry' if retries == 1 else 'retries'}"] if retries else []
        if attempt.replica_fault and self.pool.down_summary():
            notes.append(self.pool.down_summary())
        said = f" ({'; '.join(notes)})" if notes else ""
        return self._redact(f"openai: {attempt.reason}{said}")

    def _delay(self, retry: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return retry_after_s
        return backoff_delay(retry, self.config.backoff_base_s, self.config.backoff_max_s)

    def _redact(self, text: str) -> str:
        return redact.scrub(text, [self.config.api_key])


async def _status_line(client: httpx.AsyncClient, url: str, timeout_s: float) -> int:
    """GET `url` and return its status once the headers are in; the body is never read."""
    async with client.stream("GET", url, timeout=timeout_s) as response:
        return response.status_code


def build_clients(config: OpenAIConfig, base_url: str) -> list[httpx.AsyncClient]:
    """For one base URL: enough clients for one kept-alive connection per concurrent request,
    CONNECTIONS_PER_CLIENT each.

    httpcore's pool scans all its connections on every request and response, so one pool of 64 connections
    runs 4-5 times slower than ideal against a fixed-latency server (bench/bench_openai_concurrency.py);
    pools of 16 keep that overhead flat as concurrency grows.
    """
    headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
    size = min(config.concurrency, CONNECTIONS_PER_CLIENT)
    limits = httpx.Limits(max_connections=size, max_keepalive_connections=size)
    timeout = httpx.Timeout(config.timeout_s, connect=min(config.timeout_s, 10.0))
    count = -(-config.concurrency // CONNECTIONS_PER_CLIENT)
    verify = shared_ssl_context() if urlsplit(base_url).scheme != "http" else plain_http_ssl_context()
    return [
        httpx.AsyncClient(headers=headers, limits=limits, timeout=timeout, trust_env=False, verify=verify)
        for _ in range(count)
    ]


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """httpx's default verifying context (certifi's CA bundle), built once per process: each client would
    otherwise load the bundle again (about 40 ms each; a run builds its clients twice, preflight and run)."""
    return httpx.create_ssl_context(trust_env=False)


@functools.cache
def plain_http_ssl_context() -> ssl.SSLContext:
    """The context of a client that only ever sends plain http (its base URL's; no proxies, no redirects):
    never used, so the CA bundle is not loaded (20 ms of a local server's run). It still verifies, against no
    certificate authority, so a TLS connection through it would fail rather than go unchecked."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def build_replicas(config: OpenAIConfig) -> list[Replica]:
    return [Replica(url, build_clients(config, url), config.concurrency) for url in config.base_urls]


def create(spec: ModelSpec, settings: BackendSettings) -> OpenAIBackend:
    config = read_config(spec, settings)
    return OpenAIBackend(spec, config, build_replicas(config))


# `GET /models` names the server in `owned_by`: llama-cpp-python's "me", llama.cpp's C++ server "llamacpp",
# vLLM "vllm", SGLang "sglang". A preset such a server cannot honour is refused before any request.
SERVER_OWNERS = {"me": "llamacpp", "llamacpp": "llamacpp", "vllm": "vllm", "sglang": "sglang"}
UNHONOURED = {
    ("neutral", "llamacpp"): "llama.cpp's server rejects top_k=-1, ignores repetition_penalty; use sampling=llamacpp",
    ("llamacpp", "vllm"): "vLLM ignores repeat_penalty and samples in another order; use sampling=neutral",
    ("llamacpp", "sglang"): "SGLang ignores repeat_penalty and samples in another order; use sampling=neutral",
}


async def server_kind(replica: Replica) -> str | None:
    """'llamacpp', 'vllm' or 'sglang' from the replica's `GET /models` (`owned_by`), else None."""
    try:
        response = await within_deadline(replica.clients[0].get(f"{replica.base_url}/models"), PROBE_TIMEOUT_S)
        models = response.json().get("data") or []
    except Exception:  # not readable: the server's kind is unknown, nothing is refused
        return None
    owners = {m.get("owned_by") for m in models if isinstance(m, dict)}
    return next((SERVER_OWNERS[o] for o in sorted(owners, key=str) if o in SERVER_OWNERS), None)


async def check_preset(spec: ModelSpec, backend: OpenAIBackend) -> None:
    """Refuse (UsageError, exit 2) a sampling preset the server named by `GET /models` cannot honour."""
    preset = backend.config.sampling
    if preset == "standard":
        return
    for replica in backend.pool.replicas:
        why = UNHONOURED.get((preset, await server_kind(replica) or ""))
        if why:
            raise UsageError(f"spec '{spec.shown}': option sampling={preset} cannot be honoured by the openai "
                             f"backend's server at {replica.public_url}: {why}")  # fmt: skip


async def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    """Before a run writes anything: options valid, API key present, server answering, preset honoured."""
    backend = create(spec, settings)
    try:
        await backend.probe()
        await check_preset(spec, backend)
    finally:
        await backend.aclose()
