"""A misbehaving OpenAI-compatible server on 127.0.0.1, for fault-injection tests.

A real HTTP/1.1 server (asyncio, in a daemon thread) that answers `POST /v1/chat/completions` and, at a
configurable rate, injects one of these faults instead of an answer:

- `429`: Too Many Requests with `Retry-After`;  `500`, `503`: server errors;
- `close`: reads the request, then closes the connection without a response;
- `stall`: waits `stall_s` (longer than the client's timeout) before answering;
- `malformed`: 200 with a truncated JSON body;  `empty`: 200 with an empty `choices` list.

Whether an attempt is faulted depends only on (seed, request, attempt number), never on timing or
concurrency, so a run is reproducible. The answer to a request is deterministic too (its prompt and seed),
so an interrupted run and an uninterrupted one must store the same rows. Every attempt is logged as an
`Attempt`, which is the server-side truth the tests compare the store against.

Security fixtures: `unauthorized_rate` answers that share of requests 401 for good, and `echo_headers` puts
the request headers (Authorization included) into every error body, as careless servers do.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from fixtures.llama_server import Reply, SeenRequest, completion_body, encode_response, read_request

FAULTS = ("429", "500", "503", "close", "stall", "malformed", "empty")

# What the openai backend's stored failure reason says for each fault (checked against the store).
FAULT_REASONS = {
    "429": "HTTP 429",
    "500": "HTTP 500",
    "503": "HTTP 503",
    "close": "RemoteProtocolError",
    "stall": "no answer from",
    "malformed": "malformed JSON",
    "empty": "response has no choices",
    "401": "HTTP 401",
}


@dataclass
class FaultConfig:
    rate: float = 0.0
    kinds: tuple[str, ...] = FAULTS
    seed: int = 0
    stall_s: float = 5.0
    retry_after: str = "1"
    latency_s: float = 0.0  # delay of every normal answer
    answer_repeat: int = 1  # longer answers make the scoring stage longer
    unauthorized_rate: float = 0.0
    echo_headers: bool = False


@dataclass(frozen=True)
class Attempt:
    identity: str  # the request: its messages and seed (see request_identity)
    number: int  # 0 for the first attempt of that request
    fault: str | None  # None when answered


def request_identity(messages_json: str, seed: int) -> str:
    """Messages as the store keeps them (canonical JSON of [role, content] pairs) plus the seed."""
    return hashlib.sha256(f"{messages_json}|{seed}".encode()).hexdigest()


def identity_of_body(body: dict) -> str:
    pairs = [[m["role"], m["content"]] for m in body["messages"]]
    messages_json = json.dumps(pairs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return request_identity(messages_json, int(body["seed"]))


def answer_text(body: dict, repeat: int = 1) -> str:
    """The deterministic answer: the user's message and the seed, so answers differ and can be scored."""
    return " ".join([f"{body['messages'][-1]['content']} ({body['seed']})"] * repeat)


class FaultyOpenAIServer:
    """Use as a context manager; `attempts` lists every chat request received, in arrival order."""

    def __init__(self, config: FaultConfig | None = None) -> None:
        self.config = config or FaultConfig()
        self.attempts: list[Attempt] = []
        self.seen_headers: list[dict[str, str]] = []
        self.seen_bodies: list[dict] = []
        self._attempts_of: dict[str, int] = defaultdict(int)
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fault_counts(self) -> Counter:
        return Counter(a.fault for a in self.attempts if a.fault is not None)

    def __enter__(self) -> FaultyOpenAIServer:
        self._thread.start()
        if not self._ready.wait(timeout=10):
            raise RuntimeError("the faulty OpenAI server did not start")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=10)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        connections: set[asyncio.Task] = set()

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            connections.add(task)
            try:
                await self._serve_connection(reader, writer)
            except (asyncio.CancelledError, ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                connections.discard(task)
                writer.close()

        server = await asyncio.start_server(on_connection, "127.0.0.1", 0, backlog=1024)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            request = await read_request(reader)
            if request is None:
                return
            if request.method == "GET":
                writer.write(encode_response(Reply(body={"object": "list", "data": [{"id": "faulty"}]})))
            else:
                reply = await self._chat_reply(request)
                if reply is None:  # the `close` fault
                    return
                writer.write(encode_response(reply))
            await writer.drain()

    async def _chat_reply(self, request: SeenRequest) -> Reply | None:
        body = request.json()
        identity = identity_of_body(body)
        number = self._attempts_of[identity]
        self._attempts_of[identity] += 1
        self.seen_headers.append(request.headers)
        self.seen_bodies.append(body)
        fault = self._fault_for(identity, number)
        self.attempts.append(Attempt(identity, number, fault))
        if fault is None:
            if self.config.latency_s:
                await asyncio.sleep(self.config.latency_s)
            return Reply(body=completion_body(answer_text(body, self.config.answer_repeat)))
        return await self._fault_reply(fault, body, request.headers)

    def _fault_for(self, identity: str, number: int) -> str | None:
        config = self.config
        if config.unauthorized_rate and random.Random(f"401|{identity}").random() < config.unauthorized_rate:
            return "401"
        draw = random.Random(f"{config.seed}|{identity}|{number}")
        if draw.random() >= config.rate:
            return None
        return config.kinds[draw.randrange(len(config.kinds))]

    async def _fault_reply(self, fault: str, body: dict, headers: dict[str, str]) -> Reply | None:
        echo = {"headers": headers} if self.config.echo_headers else {}
        said = f"{fault}: {headers.get('authorization')} is not welcome" if self.config.echo_headers else fault
        error = {"error": {"message": said, **echo}}
        if fault == "close":
            return None
        if fault == "stall":
            await asyncio.sleep(self.config.stall_s)
            return Reply(body=completion_body(answer_text(body, self.config.answer_repeat)))
        if fault == "malformed":  # a body cut short, as by a proxy that dropped the connection mid-answer
            return Reply(body=json.dumps({"message": said, **echo, "choices": [{"message": {"content": "x"}}]})[:-12])
        if fault == "empty":
            return Reply(body={"message": said, "object": "chat.completion", "choices": [], **echo})
        extra = {"Retry-After": self.config.retry_after} if fault == "429" else {}
        return Reply(status=int(fault), body=error, headers=extra)


@dataclass
class AttemptSummary:
    """The server-side view of one request: its attempts and their faults, in order."""

    faults: list[str | None] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(1 for f in self.faults if f is None)


def attempts_by_request(attempts: list[Attempt]) -> dict[str, AttemptSummary]:
    by_request: dict[str, AttemptSummary] = defaultdict(AttemptSummary)
    for attempt in sorted(attempts, key=lambda a: a.number):
        by_request[attempt.identity].faults.append(attempt.fault)
    return dict(by_request)
