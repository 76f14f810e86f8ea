"""Telling a live run from a dead one: owner records, pid reuse, other hosts, and the status readers show."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from trusteval.store import Store
from trusteval.store.run_owner import (
    OWNER_AGGREGATE,
    RunOwner,
    current_owner,
    owner_alive,
    process_start,
    record_owner,
    release_run,
    run_status,
)

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs Linux /proc")


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _store_with_run(tmp_path: Path, run_id: str = "r1") -> Store:
    store = Store.open(tmp_path)
    store.begin_run(run_id, benchmark="b", dataset="d", spec={}, prompts=[], items=[])
    return store


@linux_only
def test_process_start_reads_the_field_after_a_command_name_with_spaces_and_parentheses(tmp_path):
    (tmp_path / "sys" / "kernel" / "random").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "random" / "boot_id").write_text("boot-1\n")
    (tmp_path / "77").mkdir()
    rest = " ".join(str(n) for n in range(3, 30))  # fields 3.. ; field 22 (the start tick) is "22"
    (tmp_path / "77" / "stat").write_text(f"77 (a b) (c)) {rest}\n")
    assert process_start(77, proc=tmp_path) == "boot-1:22"
    assert process_start(78, proc=tmp_path) is None


@linux_only
def test_this_process_is_alive_and_a_finished_one_is_not():
    me = current_owner()
    assert me.pid == os.getpid() and me.started is not None
    assert owner_alive(me) is True
    assert owner_alive(RunOwner(_dead_pid(), me.host, "whatever")) is False
    assert owner_alive(RunOwner(_dead_pid(), me.host, None)) is False  # no start time recorded: pid check only


@linux_only
def test_a_reused_pid_is_not_the_owner():
    me = current_owner()
    assert owner_alive(RunOwner(me.pid, me.host, me.started + "0")) is False


def test_a_run_of_another_host_is_unknown():
    assert owner_alive(RunOwner(os.getpid(), socket.gethostname() + "-elsewhere", None)) is None


def test_status_shown_for_a_running_run_follows_its_owner(tmp_path):
    store = _store_with_run(tmp_path)
    try:
        assert run_status(store, "r1", "running") == "running"  # no owner recorded (an older store): as stored
        record_owner(store, "r1")
        assert run_status(store, "r1", "running") == "running"
        dead = RunOwner(_dead_pid(), socket.gethostname(), None)
        store.put_aggregate("r1", OWNER_AGGREGATE, dead.as_dict())
        assert run_status(store, "r1", "running") == "interrupted"
        assert run_status(store, "r1", "complete") == "complete"
        other_host = RunOwner(dead.pid, "elsewhere", None)
        store.put_aggregate("r1", OWNER_AGGREGATE, other_host.as_dict())
        assert run_status(store, "r1", "running") == "running"
    finally:
        store.close()


def test_release_marks_only_a_run_this_process_still_owns(tmp_path):
    store = _store_with_run(tmp_path)
    try:
        record_owner(store, "r1")
        release_run(store, "r1")
        assert store.run_info("r1")["status"] == "interrupted"

        store.begin_run("r1", benchmark="b", dataset="d", spec={}, prompts=[], items=[])
        store.put_aggregate("r1", OWNER_AGGREGATE, RunOwner(_dead_pid(), "elsewhere", None).as_dict())
        release_run(store, "r1")  # another process resumed it since: not ours to mark
        assert store.run_info("r1")["status"] == "running"
    finally:
        store.close()
