"""`--timeout` is a deadline for a whole answer (connect, headers, body), not for each read; the GET /models
probe has its own. A real server on 127.0.0.1 that trickles one byte every 2 s, and the real CLI in a
subprocess: the subprocess timeout is only a guard (the run used to last until stopped from outside)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from store_checks import query

from helpers import run_cli

TRICKLE_EVERY_S = 2.0
GUARD_S = 300  # a guard only: the run takes about 12 s (probe 3 s, two attempts of 3 s), plus a first
# training of the offline detector in a fresh cache; it used to last until stopped from outside (2,000 s here)


class TricklingServer:
    """Answers POST with HTTP 200 headers at once, then a body of one byte every 2 s; answers GET (the probe)
    with its status line and headers themselves one byte every 2 s (about 500 s in all). Each connection in its
    own thread."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.posts = 0
        self._stop = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> TricklingServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head = _read_head(conn)
            if head.startswith(b"POST"):
                self.posts += 1
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
                drip: Iterator[bytes] = iter([b" "] * 1000)
            else:
                drip = iter(bytes([b]) for b in b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n")
            for byte in drip:
                if self._stop.wait(TRICKLE_EVERY_S):
                    return
                try:
                    conn.sendall(byte)
                except OSError:
                    return  # the client gave up: what a deadline does


def _read_head(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.slow
def test_a_server_that_trickles_its_answer_fails_the_request_within_the_deadline(tmp_path, cache_dir):
    with TricklingServer() as server:
        run = run_cli("run", "--benchmark", "trusteval-toxicity", "--limit", "1", "--seeds", "42",
                      "--model", f"openai:m?base_url={server.base_url}&api_key_env=&backoff_base=0.01",
                      "--timeout", "3", "--max-retries", "1", "--store", tmp_path / "ws", "--cache-dir", cache_dir,
                      "--json", "--no-progress", timeout=GUARD_S)  # fmt: skip
        posts = server.posts
    assert run.returncode == 3, run.stderr[-3000:]  # stored, incomplete: the request failed
    out = run.json()
    assert (out["failed"], out["retries"], posts) == (1, 1, 2), "two attempts, each ended by the deadline"
    [(error,)] = query(tmp_path / "ws", "SELECT error FROM generation_failures")
    assert f"no answer from {server.base_url} within 3 s" in error and "after 1 retry" in error, error


def test_the_models_probe_has_its_own_deadline():
    """GET /models answered one byte every 2 s used to hold the probe for minutes (still probing after 90 s):
    each byte reset httpx's read timeout. It now ends at its deadline (5 s, or `timeout` if shorter) and
    counts the server as reachable (it connected), so the run goes on to its requests."""
    import asyncio

    from helpers import openai_backend

    async def probe(backend) -> None:
        try:
            await asyncio.wait_for(backend.probe(), GUARD_S)  # a guard: about 5 s is expected
        finally:
            await backend.aclose()

    with TricklingServer() as server:
        asyncio.run(probe(openai_backend(server.base_url, "api_key_env=", model="m", timeout_s=60.0)))
        assert server.posts == 0


def test_the_perspective_scorer_cuts_off_a_trickled_answer_at_its_timeout(tmp_path):
    """The same trickling body held the Perspective scorer for as long as the server kept sending."""
    from trusteval.scorers import load_scorer
    from trusteval.scorers.base import ScorerContext

    found: list = []
    with TricklingServer() as server:
        context = ScorerContext(env={"PERSPECTIVE_API_KEY": "test-key-123"}, cache_dir=tmp_path)
        scorer = load_scorer(f"perspective?base_url=http://127.0.0.1:{server.port}&timeout=3&max_retries=0", context)
        worker = threading.Thread(target=lambda: found.extend(scorer.score(["hey"])), daemon=True)
        worker.start()
        worker.join(GUARD_S)  # a guard: about 3 s is expected
    [outcome] = found
    assert outcome.status == "error" and "ReadTimeout" in outcome.detail, outcome.detail
