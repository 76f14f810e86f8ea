"""A live progress bar on stderr: rate, ETA, retries, failures and unparsed scores for every stage of a run.

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


def make_progress(*, enabled: bool) -> RichProgress | NullProgress:
    return RichProgress() if enabled else NullProgress()
