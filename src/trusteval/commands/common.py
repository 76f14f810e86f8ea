"""Helpers shared by the command handlers (cli.py's and commands/*'s): opening a stored run, checking flags.

Imported inside handlers, so `trusteval --help` stays fast; the work is imported inside each helper.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trusteval.store import Store


def open_run(store_folder: str | None, run_id: str | None) -> tuple[Store, str]:
    """The read-only store in the --store folder (or its default) and the run asked for (or the latest)."""
    from pathlib import Path

    from trusteval.errors import UsageError
    from trusteval.folders import store_folder as resolve_store_folder
    from trusteval.store import STORE_FILENAME, Store

    folder = resolve_store_folder(store_folder)
    if not (Path(folder) / STORE_FILENAME).is_file():
        raise UsageError(f"no store in '{folder}'; pass --store with the folder given to `trusteval run`")
    store = Store.open_read_only(folder)
    run_id = run_id or store.latest_run_id()
    if run_id is None or store.run_info(run_id) is None:
        store.close()
        raise UsageError(f"no run '{run_id}' in '{folder}'; `trusteval runs --store {folder}` lists them")
    return store, run_id


def samples_limit(value: int | None) -> int | None:
    """The --samples flag: how many sample answers a report shows (None: its default)."""
    from trusteval.errors import UsageError

    if value is not None and value < 0:
        raise UsageError(f"flag --samples {value}: use 0 or more")
    return value
