"""Where trusteval keeps its files by default: the store folder and the cache folder, resolved one way.

A flag wins, then the environment (`TRUSTEVAL_STORE`, `TRUSTEVAL_CACHE_DIR`), then the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_PREFIX = "TRUSTEVAL_"
DEFAULT_STORE = "trusteval-workspace"
DEFAULT_CACHE = Path.home() / ".cache" / "trusteval"


def store_folder(value: str | None, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return value or env.get(ENV_PREFIX + "STORE") or DEFAULT_STORE


def cache_folder(value: str | None, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    return Path(value or env.get("TRUSTEVAL_CACHE_DIR") or DEFAULT_CACHE)
