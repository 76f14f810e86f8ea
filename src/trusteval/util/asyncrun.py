"""Run a coroutine to the end from synchronous code, also inside a running event loop (a notebook cell)."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, also from inside a running loop, where it uses a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="trusteval-run") as pool:
        return pool.submit(asyncio.run, coroutine).result()
