"""Leases on request keys, so that two processes running the same spec on one store pay for each answer once.

A process claims the keys of the requests it is about to send; a key leased to another live process is left
to that process and waited for. A lease lasts `ttl_s` and is renewed while its owner runs, so a killed owner's
keys become free again after at most `ttl_s`, or at once for a process of this host that is gone (its pid no
longer runs), so resuming a killed run does not wait out the lease. Leases only decide who asks; answers are
still written by key, so a lease lost in a race costs at most one duplicate call, never a duplicate row.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import Sequence
from contextlib import suppress

from trusteval.errors import StoreError
from trusteval.store.core import Store
from trusteval.store.run_owner import RunOwner, owner_alive

LEASE_TTL_S = 60.0
CLAIM_AHEAD = 32  # keys claimed in one write, so small batches (API backends) do not pay a write each


class Leases:
    def __init__(self, store: Store, ttl_s: float = LEASE_TTL_S) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.mine: set[str] = set()
        self.foreign: set[str] = set()
        self.answered: set[str] = set()  # claimed, but already answered by another process
        self._heartbeat: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Leases:
        self.free_dead_owners()
        self._heartbeat = asyncio.create_task(self._renew_forever())
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            if self._heartbeat:
                self._heartbeat.cancel()
                with suppress(asyncio.CancelledError):
                    await self._heartbeat
        finally:
            with suppress(Exception):  # a full disk must not hide the run's own error; leases expire anyway
                self.store.release(sorted(self.mine), self.owner)

    def free_dead_owners(self) -> None:
        """End the leases of owners (`host:pid:tag`) whose process is gone from this host."""
        held: dict[str, list[str]] = {}
        for owner, key in self.store.lease_holders():
            held.setdefault(owner, []).append(key)
        for owner, keys in held.items():
            host, pid, _ = [*owner.rsplit(":", 2), "", ""][:3]
            if owner != self.owner and pid.isdigit() and owner_alive(RunOwner(int(pid), host, None)) is False:
                self.store.release(keys, owner)

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            # A lock held past the store's retry window or a full disk: try again at the next beat. Ending the
            # heartbeat would let every lease lapse for the rest of the run; a lapsed lease costs at most a
            # duplicate call, and the run's own writes report a lasting store problem.
            with suppress(StoreError):
                self.store.renew_leases(self.owner, self.ttl_s)

    def split(self, keys: Sequence[str], ahead: Sequence[str] = ()) -> tuple[list[str], list[str], list[str]]:
        """(keys to answer, keys another process holds, keys answered meanwhile), claiming unclaimed keys
        together with `ahead`."""
        unknown = [k for k in keys if k not in self.mine and k not in self.foreign]
        if unknown:
            extra = [k for k in ahead if k not in self.mine and k not in self.foreign]
            wanted = list(dict.fromkeys([*unknown, *extra]))[: max(CLAIM_AHEAD, len(unknown))]
            self._take(self.store.claim(wanted, self.owner, self.ttl_s))
            self.foreign |= set(unknown) - self.mine - self.answered
        answered = [k for k in keys if k in self.answered]
        return [k for k in keys if k in self.mine], [k for k in keys if k in self.foreign], answered

    def _take(self, claimed: set[str]) -> None:
        """Keep the claimed keys, except those another process answered before the claim: free them again."""
        stored = self.store.stored_generation_keys(claimed)
        if stored:
            self.store.release(sorted(stored), self.owner)
        self.answered |= stored
        self.mine |= claimed - stored

    def retry_foreign(self, keys: Sequence[str]) -> list[str]:
        """Of keys another process held, those whose lease has since ended and are now ours."""
        if keys:
            self._take(self.store.claim(list(keys), self.owner, self.ttl_s))
            self.foreign -= self.mine
        return [k for k in keys if k in self.mine]

    def done(self, keys: Sequence[str]) -> None:
        self.mine -= set(keys)
