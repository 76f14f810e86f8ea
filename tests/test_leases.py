"""Leases on request keys: who answers what when several processes run the same spec on one store."""

from __future__ import annotations

import os
import time
from types import SimpleNamespace

from trusteval.records import Generation
from trusteval.store import Store
from trusteval.store import core as store_module
from trusteval.store.leases import Leases

KEYS = [f"{i:064x}" for i in range(6)]


def test_a_key_leased_to_another_owner_is_left_to_it(tmp_path) -> None:
    store = Store.open(tmp_path)
    first, second = Leases(store), Leases(store)
    assert first.split(KEYS[:3]) == (KEYS[:3], [], [])
    mine, foreign, answered = second.split(KEYS[:4])
    assert (mine, foreign, answered) == ([KEYS[3]], KEYS[:3], [])


def test_keys_are_claimed_ahead_in_one_write(tmp_path) -> None:
    store = Store.open(tmp_path)
    first, second = Leases(store), Leases(store)
    first.split(KEYS[:1], ahead=KEYS[1:4])
    assert second.split(KEYS[1:5])[:2] == ([KEYS[4]], KEYS[1:4])


def test_a_dead_owners_keys_are_taken_over_when_the_lease_ends(tmp_path, monkeypatch) -> None:
    # The store's clock moves only when the test says so: with real 0.2 s leases, a loaded machine that paused
    # the test for 0.2 s between two lines ended the lease before the checks that it still holds.
    clock = [time.time()]
    monkeypatch.setattr(store_module, "time", SimpleNamespace(time=lambda: clock[0], sleep=time.sleep))
    store = Store.open(tmp_path)
    dead, alive = Leases(store, ttl_s=60), Leases(store, ttl_s=60)
    dead.split(KEYS[:2])  # and never answers nor releases: killed
    clock[0] += 59
    assert alive.split(KEYS[:2])[1] == KEYS[:2]
    assert alive.retry_foreign(KEYS[:2]) == []
    clock[0] += 2
    assert alive.retry_foreign(KEYS[:2]) == KEYS[:2]


def test_a_key_answered_by_its_holder_is_not_asked_again(tmp_path) -> None:
    store = Store.open(tmp_path)
    holder, waiter = Leases(store), Leases(store)
    holder.split(KEYS[:2])
    assert waiter.split(KEYS[:2])[1] == KEYS[:2]
    store.add_generations([Generation(key=KEYS[0], text="answer")], lease_owner=holder.owner)
    assert waiter.retry_foreign(KEYS[:2]) == [], "the answered key is free but stored; the other is still held"
    assert KEYS[0] in waiter.answered
    assert store.conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 1


def test_leases_of_a_process_gone_from_this_host_end_at_once(tmp_path) -> None:
    import asyncio
    import socket
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    store = Store.open(tmp_path)
    dead = f"{socket.gethostname()}:{child.pid}:deadbeef"
    live = f"{socket.gethostname()}:{os.getpid()}:cafe"  # another Leases of a live process (this one)
    elsewhere = f"other-host:{child.pid}:beef"  # cannot be checked from here: left to its lease time
    for owner, key in ((dead, KEYS[0]), (live, KEYS[1]), (elsewhere, KEYS[2])):
        store.claim([key], owner, 60.0)

    async def split_after_enter() -> tuple:
        async with Leases(store) as leases:
            return leases.split(KEYS[:3])

    mine, foreign, _ = asyncio.run(split_after_enter())
    assert mine == [KEYS[0]]
    assert foreign == KEYS[1:3]


def test_a_failed_renewal_is_tried_again_and_leases_are_still_released(tmp_path, monkeypatch) -> None:
    """A renewal that fails (a lock held past the retry window, a full disk) used to end the heartbeat: the
    leases then lapsed for the rest of the run, and leaving the block raised the renewal's error, which hid
    the run's own outcome and skipped releasing the leases."""
    import asyncio

    from trusteval.errors import StoreError

    store = Store.open(tmp_path)
    renewals: list[str] = []
    real_renew = store.renew_leases

    def flaky_renew(owner: str, ttl_s: float) -> None:
        renewals.append("failed" if not renewals else "renewed")
        if renewals[-1] == "failed":
            raise StoreError("store: database is locked")
        real_renew(owner, ttl_s)

    monkeypatch.setattr(store, "renew_leases", flaky_renew)

    async def run() -> Leases:
        async with Leases(store, ttl_s=0.15) as leases:
            leases.split(KEYS[:2])
            deadline = time.monotonic() + 60
            while len(renewals) < 2 and time.monotonic() < deadline:  # a beat every 0.05 s
                await asyncio.sleep(0.01)
        return leases

    asyncio.run(run())
    assert renewals[0] == "failed" and "renewed" in renewals
    assert store.conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
