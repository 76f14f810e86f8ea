"""Which process owns a run, and whether it is still alive: a run whose process died (SIGKILL, a native crash in
llama.cpp, a power cut) would otherwise stay `running` in the store forever.

A run records its owner when it begins or resumes: the process id, the host name, and the process's start
time (Linux: boot id + start tick from /proc/<pid>/stat), so a pid reused by another process after a crash is
not mistaken for the run. Readers (`trusteval runs`, `trusteval report`) show a `running` run whose owner is
gone from this host as `interrupted`. A run owned by another host is left as stored: its liveness cannot be
seen from here.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from trusteval.errors import StoreError
from trusteval.store.core import Store

OWNER_AGGREGATE = "owner"
RUNNING = "running"
INTERRUPTED = "interrupted"
PROC = Path("/proc")


@dataclass(frozen=True)
class RunOwner:
    pid: int
    host: str
    started: str | None  # None where the platform offers no process start time

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: Any) -> RunOwner | None:
        if not isinstance(value, dict) or not isinstance(value.get("pid"), int):
            return None
        started = value.get("started")
        return cls(value["pid"], str(value.get("host", "")), started if isinstance(started, str) else None)


def process_start(pid: int, proc: Path = PROC) -> str | None:
    """A token that differs between two processes that had the same pid: boot id and start tick (Linux)."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        boot_id = (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
    except OSError:
        return None
    # Field 2 (the command name) may hold spaces and parentheses: the fields after it start past the last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    return f"{boot_id}:{fields[19]}" if len(fields) > 19 else None


def current_owner() -> RunOwner:
    pid = os.getpid()
    return RunOwner(pid=pid, host=socket.gethostname(), started=process_start(pid))


def owner_alive(owner: RunOwner, host: str | None = None) -> bool | None:
    """True or False on this host; None (unknown) for a run owned by another host."""
    if owner.host != (host or socket.gethostname()):
        return None
    started = process_start(owner.pid)
    if started is not None and owner.started is not None:
        return started == owner.started
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


def record_owner(store: Store, run_id: str) -> None:
    store.put_aggregate(run_id, OWNER_AGGREGATE, current_owner().as_dict())


def run_status(store: Store, run_id: str, stored_status: str) -> str:
    """The status to show: a `running` run whose owner process is gone is `interrupted`."""
    if stored_status != RUNNING:
        return stored_status
    owner = RunOwner.from_dict(store.aggregate(run_id, OWNER_AGGREGATE))
    if owner is not None and owner_alive(owner) is False:
        return INTERRUPTED
    return stored_status


def release_run(store: Store, run_id: str) -> None:
    """Mark a run this process owns, and that is still `running`, as `interrupted` (it ends with an error).

    A run another process has resumed since is left alone; a store that cannot be written keeps `running`,
    which readers then show as `interrupted` once this process is gone.
    """
    with suppress(StoreError, sqlite3.Error):
        info = store.run_info(run_id) or {}
        owner = RunOwner.from_dict(store.aggregate(run_id, OWNER_AGGREGATE))
        if info.get("status") == RUNNING and owner == current_owner():
            store.finish_run(run_id, INTERRUPTED)
