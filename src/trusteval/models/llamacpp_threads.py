"""The `llamacpp` backend's thread count when the spec sets none: the cores other processes leave free, read
from /proc when the model loads and followed while it decodes.

llama.cpp's threads meet at a barrier at every step of a forward pass and spin while they wait, so one thread
that waits for a core stalls all of them: more threads than free cores decode far slower than fewer
(docs/performance.md, "Threads"). Two signals, both from the kernel and both immediate:

- **idle cores**: the idle share of every core over a short window (`/proc/stat`); at start, while the model
  loads, the cores left idle plus the share this process itself used are the free ones (0.7 of a core counts
  as one): loading keeps one core busy, and that core is ours to decode on;
- **our threads' wait**: the seconds this process's threads were runnable but waited for a core
  (`/proc/self/task/*/schedstat`). While it decodes, a window in which they waited for a core a tenth of the
  time or more means another process wants our cores: one thread fewer. A window that leaves 0.7 of a core
  idle means one more, up to every usable core.

The usable cores are those the process may run on (its CPU affinity), and no more than a container's CPU
quota allows (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`): /proc/stat counts every core of the host, so in a
container limited to 2 CPUs of a 64-core host the idle share alone would say 60 cores are free.

The 1-minute load average, the signal before, lags by about a minute and still counts the last run's threads.
Where /proc cannot be read it is the fallback. A different thread count gives the same answers: each output
of a llama.cpp CPU operation is computed by one thread in the same order (`tests/test_llamacpp_threads.py`).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

FREE_FROM = 0.7  # an idle share of a core from which it counts as free
WAIT_SHARE = 0.1  # our threads' wait for a core, per thread and wall second, from which we use one fewer
START_WINDOW_S = 0.15  # the first sample's window (overlapped with loading the model)
FOLLOW_WINDOW_S = 1.0  # while decoding, the thread count is reconsidered after each window this long
CGROUP_ROOT = Path("/sys/fs/cgroup")


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity, capped by a container's CPU quota (whole CPUs)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpu_quota(CGROUP_ROOT)
    return cores if quota is None else max(1, min(cores, int(quota)))


def cpu_quota(root: Path) -> float | None:
    """CPUs the cgroup quota allows (quota over period), or None: no quota, or no cgroup files to read."""
    # cgroup v2 (a container sees its own group at the root), then v1's two files
    pairs: list[tuple[Path, Path | None]] = [(root / "cpu.max", None)]
    for v1 in ("cpu", "cpu,cpuacct"):
        pairs.append((root / v1 / "cpu.cfs_quota_us", root / v1 / "cpu.cfs_period_us"))
    for quota_file, period_file in pairs:
        try:
            if period_file is None:
                quota, period = quota_file.read_text().split()[:2]
            else:
                quota, period = quota_file.read_text().strip(), period_file.read_text().strip()
        except (OSError, ValueError):
            continue
        if quota in ("max", "-1"):
            return None
        try:
            return int(quota) / int(period) if int(quota) > 0 and int(period) > 0 else None
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class CpuSample:
    """One reading of the kernel's counters: when, every core's idle seconds, our threads' wait for a core,
    and this process's own CPU seconds."""

    wall: float
    idle_s: float
    waited_s: float
    own_s: float = 0.0


def _ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, OSError, ValueError):
        return 100


def cpu_sample() -> CpuSample | None:
    """The counters now, or None where /proc cannot be read (not Linux)."""
    try:
        with open("/proc/stat", "rb") as stat:
            fields = stat.readline().split()
        idle_s = (int(fields[4]) + int(fields[5])) / _ticks()  # idle + iowait
    except (OSError, ValueError, IndexError):
        return None
    waited_ns = 0
    try:
        tasks = list(os.scandir("/proc/self/task"))
    except OSError:
        tasks = []
    for task in tasks:
        try:
            with open(f"{task.path}/schedstat", "rb") as schedstat:
                waited_ns += int(schedstat.read().split()[1])
        except (OSError, ValueError, IndexError):  # a thread that ended meanwhile, or no schedstats
            continue
    return CpuSample(time.monotonic(), idle_s, waited_ns / 1e9, time.process_time())


def threads_from_load(cores: int) -> int:
    """The fallback: every usable core minus the 1-minute load average (0.7 counts as one), at least one."""
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):
        return cores
    return max(1, min(cores, cores - int(busy + 1 - FREE_FROM)))


class ThreadChooser:
    """The default thread count: `start` before the model loads, `initial` after it, then `follow` between
    forward passes, which returns a new count when the last window asks for one (else None)."""

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or usable_cores()
        self.threads = self.cores
        self._last: CpuSample | None = None

    def start(self) -> ThreadChooser:
        self._last = cpu_sample()
        return self

    def initial(self) -> int:
        """The free cores over the window since `start` (at least START_WINDOW_S long): those left idle and the
        share this process used itself (loading the model)."""
        if self._last is None:
            self.threads = threads_from_load(self.cores)
            return self.threads
        left = START_WINDOW_S - (time.monotonic() - self._last.wall)
        if left > 0:
            time.sleep(left)
        now = cpu_sample()
        if now is None:
            self.threads = threads_from_load(self.cores)
            return self.threads
        wall = max(now.wall - self._last.wall, 1e-6)
        free = (now.idle_s - self._last.idle_s + now.own_s - self._last.own_s) / wall
        self._last = now
        self.threads = max(1, min(self.cores, int(free + 1 - FREE_FROM)))
        return self.threads

    def follow(self) -> int | None:
        """A new thread count once a window has passed and it says so: one fewer when our threads waited for
        a core WAIT_SHARE of the time or more, one more when FREE_FROM of a core stayed idle."""
        if self._last is None or time.monotonic() - self._last.wall < FOLLOW_WINDOW_S:
            return None
        now = cpu_sample()
        if now is None:
            return None
        wall = max(now.wall - self._last.wall, 1e-6)
        waited = (now.waited_s - self._last.waited_s) / wall / self.threads
        idle = (now.idle_s - self._last.idle_s) / wall
        self._last = now
        wanted = self.threads
        if waited >= WAIT_SHARE and self.threads > 1:
            wanted = self.threads - 1
        elif idle >= FREE_FROM and self.threads < self.cores:
            wanted = self.threads + 1
        if wanted == self.threads:
            return None
        self.threads = wanted
        return wanted
