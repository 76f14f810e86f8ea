"""Helpers shared by the command handlers: exit codes, opening a store or a stored run, checking flags.

Imported inside handlers, so `trusteval --help` stays fast; the work is imported inside each helper. Commands
that only read open the store with `Store.open_read_only` (through `open_store` / `open_run`), so they work on
a read-only copy and never change the file.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trusteval.store import Store

EXIT_COMPLETE = 0
EXIT_INCOMPLETE = 3  # the run is stored but some answers or scores failed: run the same command again
EXIT_CODES_HELP = (
    "exit status: 0 the run is complete; 2 bad input (flag, run spec, data file, model), nothing written; "
    "3 the run is stored but incomplete (some generations or scores failed; run the same command again to "
    "retry them); 130 interrupted (everything finished is stored)"
)
COMMAND_EXIT_HELP = (
    "exit status: 0 done (also for tables of a run that is incomplete: a line on stderr says so); 2 bad input "
    "(flag, store, run id, data file, model), nothing written; 3 (translate, judge validate) some model calls "
    "failed, the others are stored: run the same command again to retry them; 130 interrupted (everything "
    "finished is stored)"
)


def open_store(store_folder: str | None) -> tuple[Store, str]:
    """The read-only store in the --store folder (or its default), and that folder."""
    from pathlib import Path

    from trusteval.errors import UsageError
    from trusteval.store import STORE_FILENAME, Store
    from trusteval.util.folders import store_folder as resolve_store_folder

    folder = resolve_store_folder(store_folder)
    if not (Path(folder) / STORE_FILENAME).is_file():
        raise UsageError(f"no store in '{folder}'; pass --store with the folder given to `trusteval run`")
    return Store.open_read_only(folder), folder


def open_run(store_folder: str | None, run_id: str | None) -> tuple[Store, str]:
    """The read-only store in the --store folder (or its default) and the run asked for (or the latest)."""
    store, _ = open_store(store_folder)
    try:
        return store, check_run(store, run_id or store.latest_run_id())
    except BaseException:
        store.close()
        raise


def check_run(store: Store, run_id: str | None) -> str:
    """The run id, or a usage error unless the store holds this run."""
    from trusteval.errors import UsageError

    folder = store.path.parent
    if run_id is None:  # no run named, and the store holds none to default to
        raise UsageError(f"no runs in '{folder}' yet; `trusteval run --store {folder}` makes one")
    if store.run_info(run_id) is None:
        raise UsageError(f"no run '{run_id}' in '{folder}'; `trusteval runs --store {folder}` lists them")
    return run_id


def samples_limit(value: int | None, html: str | None) -> int | None:
    """The --samples flag: how many sample answers a report shows (None: its default); it only shapes the
    HTML page, so without --html it is refused rather than ignored."""
    from trusteval.errors import UsageError

    if value is not None and value < 0:
        raise UsageError(f"flag --samples {value}: use 0 or more")
    if value is not None and not html:
        raise UsageError("flag --samples: it sets the rows of the HTML page's sample browser; add --html FILE")
    return value


def os_reason(exc: OSError) -> str:
    """Why a file could not be written, in a few words (the strerror, without the path)."""
    return exc.strerror or type(exc).__name__


@contextmanager
def first_imports(module: str) -> Iterator[None]:
    """Import a command's modules (when `module` is not imported yet) with the cyclic garbage collector paused,
    then freeze what exists: module-level objects live as long as the process, and every collection during and
    after the imports would traverse them again (about 30 ms of a short run). Only the first time, so a
    process calling the command again and again never freezes garbage of an earlier call."""
    if module in sys.modules or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
