"""The `llamacpp` backend's default thread count (`models/llamacpp_threads.py`): the free cores read from the
kernel's counters at start, followed while decoding, the load-average fallback; counters scripted here, and
read for real once."""

from __future__ import annotations

import pytest

from trusteval.models import llamacpp_threads
from trusteval.models.llamacpp_threads import CpuSample, ThreadChooser


class _Clock:
    """Scripted /proc readings: each `cpu_sample` call returns the next (wall, idle seconds, waited seconds)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, readings: list[tuple[float, ...]]) -> None:
        self.readings = [CpuSample(*r) for r in readings]
        self.now = readings[0][0]
        monkeypatch.setattr(llamacpp_threads, "cpu_sample", self.sample)
        monkeypatch.setattr(llamacpp_threads.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(llamacpp_threads.time, "sleep", lambda s: None)

    def sample(self) -> CpuSample:
        reading = self.readings.pop(0)
        self.now = reading.wall
        return reading


# (idle core-seconds over a 0.2 s window on 2 cores) -> threads: 0.7 of a core idle counts as a free core
STARTS = [(0.4, 2), (0.3, 1), (0.2, 1), (0.1, 1), (0.0, 1)]


@pytest.mark.parametrize(("idle", "expected"), STARTS)
def test_the_first_count_is_the_cores_left_idle_while_the_model_loads(monkeypatch, idle, expected):
    _Clock(monkeypatch, [(10.0, 100.0, 0.0), (10.2, 100.0 + idle, 0.0)])
    assert ThreadChooser(cores=2).start().initial() == expected


# (idle, our own CPU seconds over a 0.2 s window on 2 cores) -> threads: the core loading the model is ours
OWN_STARTS = [((0.2, 0.2), 2), ((0.0, 0.2), 1), ((0.2, 0.0), 1), ((0.15, 0.2), 2), ((0.1, 0.2), 1)]


@pytest.mark.parametrize(("window", "expected"), OWN_STARTS)
def test_the_core_busy_loading_the_model_counts_as_free(monkeypatch, window, expected):
    idle, own = window
    _Clock(monkeypatch, [(10.0, 100.0, 0.0, 5.0), (10.2, 100.0 + idle, 0.0, 5.0 + own)])
    assert ThreadChooser(cores=2).start().initial() == expected


def test_following_drops_a_thread_when_ours_wait_for_cores_and_adds_one_when_a_core_stays_idle(monkeypatch):
    readings = [
        (0.0, 0.0, 0.0),  # start
        (0.2, 0.4, 0.0),  # idle machine: 2 threads
        (0.7, 0.4, 0.0),  # less than a window later: not read
        (1.2, 0.4, 0.3),  # our 2 threads waited 0.3 s in 1 s: 0.15 per thread -> 1
        (2.2, 0.45, 0.5),  # 1 thread: waiting (it cannot go lower), no idle core -> stays
        (3.2, 1.35, 0.5),  # 0.9 of a core idle -> 2
        (4.2, 1.45, 0.55),  # 2 threads, little wait (0.025 per thread), little idle -> stays
    ]
    clock = _Clock(monkeypatch, readings)
    chooser = ThreadChooser(cores=2).start()
    assert chooser.initial() == 2
    clock.now = 0.7
    assert chooser.follow() is None and len(clock.readings) == 5  # too soon: nothing read
    clock.readings.pop(0)
    clock.now = 1.2
    assert chooser.follow() == 1
    clock.now = 2.2
    assert chooser.follow() is None and chooser.threads == 1
    clock.now = 3.2
    assert chooser.follow() == 2
    clock.now = 4.2
    assert chooser.follow() is None and chooser.threads == 2


def test_without_proc_the_load_average_decides(monkeypatch):
    monkeypatch.setattr(llamacpp_threads, "cpu_sample", lambda: None)
    for load, cores, expected in [(0.1, 2, 2), (0.6, 2, 2), (0.8, 2, 1), (2.3, 2, 1), (1.2, 8, 7), (30.0, 8, 1)]:
        monkeypatch.setattr(llamacpp_threads.os, "getloadavg", lambda load=load: (load, load, load))
        chooser = ThreadChooser(cores=cores).start()
        assert chooser.initial() == expected
        assert chooser.follow() is None


def test_the_counters_are_read_from_this_machine():
    first = llamacpp_threads.cpu_sample()
    if first is None:
        pytest.skip("no /proc/stat here")
    sum(i * i for i in range(200_000))
    second = llamacpp_threads.cpu_sample()
    assert second is not None
    assert second.wall > first.wall and second.idle_s >= first.idle_s >= 0 and second.waited_s >= first.waited_s >= 0


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"cpu.max": "200000 100000\n"}, 2.0),  # cgroup v2: 2 CPUs
        ({"cpu.max": "150000 100000\n"}, 1.5),
        ({"cpu.max": "max 100000\n"}, None),  # no quota
        ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0),  # cgroup v1
        ({"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, None),
        ({"cpu.max": "garbage"}, None),
        ({}, None),  # nothing to read: not limited as far as we can tell
    ],
)
def test_a_containers_cpu_quota_is_read_from_its_cgroup_files(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert llamacpp_threads.cpu_quota(tmp_path) == expected


@pytest.mark.parametrize(("quota", "expected"), [("max 100000", 64), ("200000 100000", 2), ("150000 100000", 1)])
def test_usable_cores_are_capped_by_the_quota_not_only_by_affinity(tmp_path, monkeypatch, quota, expected):
    (tmp_path / "cpu.max").write_text(quota)
    monkeypatch.setattr(llamacpp_threads, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(llamacpp_threads.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert llamacpp_threads.usable_cores() == expected
    assert ThreadChooser().cores == expected
