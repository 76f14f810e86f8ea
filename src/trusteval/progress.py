"""Progress on stderr: rate, ETA, retries, failures and unparsed scores for every stage of a run.

A live bar (rich) in a terminal, and in Jupyter when ipywidgets is installed. Elsewhere - stderr is a log
file or a pipe, or a notebook without ipywidgets - whole text lines (`LineProgress`): a stage's start, every
tenth of it and its end, never a bar cut to the width of a terminal that is not there.

`failed` counts requests or scores that failed (retried by the next run); `unparsed` counts final scores
without a value (an answer the parser or judge could not read), which are kept and never retried.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

COUNTERS = "retries {task.fields[retries]}  failed {task.fields[failed]}  unparsed {task.fields[unparsed]}"


class ProgressSink(Protocol):
    """What the pipeline reports as it goes: a stage starts, advances (with retries and failures), ends."""

    def start(self, stage: str, total: int) -> None: ...

    def advance(self, stage: str, n: int = 1, *, retries: int = 0, failed: int = 0, unparsed: int = 0) -> None: ...

    def finish(self, stage: str) -> None: ...


class NullProgress:
    """Reports nothing (tests, --no-progress)."""

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, stage: str, total: int) -> None:
        return None

    def advance(self, stage: str, n: int = 1, *, retries: int = 0, failed: int = 0, unparsed: int = 0) -> None:
        return None

    def finish(self, stage: str) -> None:
        return None


class RichProgress:
    """A ProgressSink drawn with rich on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._progress = Progress(
            TextColumn("{task.description:<24}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn(COUNTERS),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> RichProgress:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def start(self, stage: str, total: int) -> None:
        from trusteval.untrusted.safetext import console_markup

        description = console_markup(stage)  # the bar renders its description as Rich markup
        self._tasks[stage] = self._progress.add_task(description, total=total, retries=0, failed=0, unparsed=0, rate="")

    def advance(self, stage: str, n: int = 1, *, retries: int = 0, failed: int = 0, unparsed: int = 0) -> None:
        task_id = self._tasks[stage]
        task = self._progress.tasks[task_id]
        speed = task.speed
        self._progress.update(
            task_id,
            advance=n,
            retries=task.fields["retries"] + retries,
            failed=task.fields["failed"] + failed,
            unparsed=task.fields["unparsed"] + unparsed,
            rate=f"{speed:.1f}/s" if speed else "",
        )

    def finish(self, stage: str) -> None:
        task_id = self._tasks[stage]
        self._progress.update(task_id, completed=self._progress.tasks[task_id].total)


class LineProgress:
    """A ProgressSink that prints whole lines to `stream`: a stage's start, each tenth done, and its end."""

    def __init__(self, stream: Any = None, steps: int = 10) -> None:
        import time

        self._stream = stream
        self._steps = steps
        self._clock = time.monotonic
        self._stages: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def _print(self, text: str) -> None:
        from trusteval.untrusted.safetext import one_line

        stream = self._stream or sys.stderr
        print(one_line(text), file=stream, flush=True)

    def start(self, stage: str, total: int) -> None:
        self._stages[stage] = {"total": total, "done": 0, "retries": 0, "failed": 0, "unparsed": 0,
                               "started": self._clock(), "shown": 0}  # fmt: skip
        self._print(f"{stage}: 0/{total}")

    def advance(self, stage: str, n: int = 1, *, retries: int = 0, failed: int = 0, unparsed: int = 0) -> None:
        found = self._stages[stage]
        found["done"] += n
        found.update(retries=found["retries"] + retries, failed=found["failed"] + failed,
                     unparsed=found["unparsed"] + unparsed)  # fmt: skip
        total = max(1, found["total"])
        step = min(self._steps, int(self._steps * found["done"] / total))
        if step > found["shown"] and found["done"] < found["total"]:
            found["shown"] = step
            self._print(self._line(stage, found))

    def finish(self, stage: str) -> None:
        found = self._stages[stage]
        found["done"] = max(found["done"], found["total"])
        self._print(self._line(stage, found) + " done")

    def _line(self, stage: str, found: dict[str, Any]) -> str:
        elapsed = self._clock() - found["started"]
        rate = f", {found['done'] / elapsed:.1f}/s" if elapsed > 0 and found["done"] else ""
        share = 100 * found["done"] / found["total"] if found["total"] else 100
        return (
            f"{stage}: {found['done']}/{found['total']} ({share:.0f}%){rate}, {elapsed:.0f} s; retries "
            f"{found['retries']}  failed {found['failed']}  unparsed {found['unparsed']}"
        )


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where rich draws with ipywidgets)."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


def live_bar_works(stream: Any = None) -> bool:
    """A live bar needs a terminal, or a notebook with ipywidgets; anything else gets lines."""
    import importlib.util

    if in_notebook():
        return importlib.util.find_spec("ipywidgets") is not None
    isatty = getattr(stream or sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def make_progress(*, enabled: bool) -> RichProgress | LineProgress | NullProgress:
    if not enabled:
        return NullProgress()
    return RichProgress() if live_bar_works() else LineProgress()
