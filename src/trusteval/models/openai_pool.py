"""Replicas of one model behind several base URLs: per-URL concurrency, least-outstanding dispatch, failover.

A `ReplicaPool` holds one `Replica` per base URL. Each replica has `capacity` slots (the spec's per-URL
`concurrency`), each slot bound to one of its httpx clients, so no URL ever has more than `capacity` requests in
flight. `acquire()` gives a free slot of the live replica with the fewest requests in flight (ties: the one sent
fewest so far, which deals requests round-robin), waiting while every live replica is full. A replica that
fails (broken connection, timeout, HTTP 5xx) is marked down for backoff_base * 2**(n-1) seconds after n
failures in a row (at most backoff_max, at least a server's Retry-After) and gets no requests meanwhile; the
next request after that period probes it, and one answer brings it back. While every replica is down,
`acquire()` waits for the first one to come back, so a request is never sent nowhere and never waits longer
than backoff_max: the caller's retry limit, not the pool, ends requests that no replica can answer.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Collection
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import httpx

from trusteval.untrusted.redact import REDACTED, looks_like_token


def public_url(url: str) -> str:
    """A URL as it may appear in messages: scheme, host, port and path; no user:password, query or fragment,
    and a path segment that looks like a token (`redact.looks_like_token`) shown as [redacted]."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    path = "/".join(REDACTED if looks_like_token(unquote(s)) else s for s in parts.path.split("/"))
    return f"{parts.scheme}://{host}{port}{path}"


def host_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


@dataclass(eq=False)
class Replica:
    """One base URL: its clients, its free slots (each the index of the client it uses) and its health."""

    base_url: str
    clients: list[httpx.AsyncClient] = field(repr=False)
    capacity: int
    free_slots: list[int] = field(default_factory=list, repr=False)
    down_until: float = 0.0
    failures: int = 0  # failures in a row since the last answer
    last_failure: str = ""
    sent: int = 0

    def __post_init__(self) -> None:
        # Slots are dealt round-robin over the clients, so no client has more than its share in flight.
        self.free_slots = [slot % len(self.clients) for slot in range(self.capacity)]

    @property
    def public_url(self) -> str:
        return public_url(self.base_url)

    @property
    def in_flight(self) -> int:
        return self.capacity - len(self.free_slots)

    def is_up(self, now: float) -> bool:
        return self.down_until <= now


@dataclass(frozen=True)
class Slot:
    """A place in one replica's concurrency: the replica and the client to send with. Give it back with
    `ReplicaPool.release`."""

    replica: Replica
    client_index: int

    @property
    def client(self) -> httpx.AsyncClient:
        return self.replica.clients[self.client_index]


class ReplicaPool:
    def __init__(self, replicas: list[Replica], *, backoff_base_s: float, backoff_max_s: float) -> None:
        if not replicas:
            raise ValueError("a replica pool needs at least one replica")
        self.replicas = replicas
        self._backoff_base_s = backoff_base_s
        self._backoff_max_s = backoff_max_s
        self._waiters: deque[tuple[asyncio.Future[None], Collection[Replica]]] = deque()  # and what each avoids

    @property
    def size(self) -> int:
        return len(self.replicas)

    @property
    def capacity(self) -> int:
        return sum(r.capacity for r in self.replicas)

    async def acquire(self, avoid: Collection[Replica] = ()) -> Slot:
        """A free slot on the least busy live replica, one not in `avoid` while any of those is up; waits while
        none is free or every replica is down."""
        while True:
            now = time.monotonic()
            up = [r for r in self.replicas if r.is_up(now)]
            free = [r for r in ([r for r in up if r not in avoid] or up) if r.free_slots]
            if free:
                replica = min(free, key=lambda r: (r.in_flight, r.sent))
                replica.sent += 1
                return Slot(replica, replica.free_slots.pop())
            down = [r.down_until - now for r in self.replicas if not r.is_up(now)]
            await self._wait(min(down) if down else None, avoid)

    def release(self, slot: Slot) -> None:
        slot.replica.free_slots.append(slot.client_index)
        self._wake_one(slot.replica)

    def answered(self, replica: Replica) -> None:
        """The replica answered: it is up, and its count of failures in a row starts again."""
        replica.failures = 0
        replica.down_until = 0.0

    def failed(self, replica: Replica, reason: str, *, at_least_s: float | None = None) -> None:
        """Leave the replica out for a back-off period. A lone replica is never left out: there is nowhere else
        to send its requests, and the caller's own backoff spaces its retries."""
        replica.failures += 1
        replica.last_failure = reason
        if self.size == 1:
            return
        period = min(self._backoff_max_s, self._backoff_base_s * 2 ** (replica.failures - 1))
        period = max(period, at_least_s or 0.0)
        replica.down_until = max(replica.down_until, time.monotonic() + period)
        self._wake_all()  # waiters re-check, and set a timer for the replica's return

    def any_up(self, besides: Collection[Replica] = ()) -> bool:
        """Whether a replica (other than those in `besides`) is up."""
        now = time.monotonic()
        return any(r.is_up(now) for r in self.replicas if r not in besides)

    def down_summary(self) -> str:
        """'all 3 replicas are down' when the last request sent to each one failed (in a pool of more than
        one), else ''. A replica whose back-off has ended but that has not answered since still counts."""
        if self.size == 1 or any(r.failures == 0 for r in self.replicas):
            return ""
        return f"all {self.size} replicas are down"

    async def _wait(self, timeout_s: float | None, avoid: Collection[Replica]) -> None:
        """Until a slot is released, or `timeout_s` passes (when a down replica comes back)."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append((waiter, avoid))
        timer = loop.call_later(max(timeout_s, 0.0), _wake, waiter) if timeout_s is not None else None
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._wake_one()  # this waiter was woken for a free slot: pass the wake-up on
            raise
        finally:
            if timer is not None:
                timer.cancel()

    def _wake_one(self, freed: Replica | None = None) -> None:
        """Wake the first waiter that does not avoid `freed` (whose slot was just released), else the first one.
        A failover that avoids `freed` would take the wake-up and wait again, the slot idle meanwhile."""
        while self._waiters and self._waiters[0][0].done():
            self._waiters.popleft()
        chosen = next((i for i, (w, avoid) in enumerate(self._waiters) if not w.done() and freed not in avoid), 0)
        if self._waiters:
            waiter, _ = self._waiters[chosen]
            del self._waiters[chosen]
            waiter.set_result(None)

    def _wake_all(self) -> None:
        while self._waiters:
            _wake(self._waiters.popleft()[0])


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
