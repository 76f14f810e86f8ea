"""Shared test setup: offline hub, the data mirror, and the fixtures that build real parts offline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
# Clients that honour proxy settings (Perspective) must reach the tests' servers on 127.0.0.1 directly.
for _name in ("NO_PROXY", "no_proxy"):
    os.environ[_name] = ",".join(filter(None, ["127.0.0.1,localhost,::1", os.environ.get(_name, "")]))
# Absolute, so tests that symlink data files or change directory see the same mirror (CI passes ../shared/data).
os.environ["TRUSTEVAL_DATA_DIR"] = str(
    Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data")).resolve()
)

pytest_plugins = ["fixtures.tiny_models", "fixtures.llama_server"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = Path(os.environ["TRUSTEVAL_DATA_DIR"])
    if not (path / "cold" / "test.csv").is_file():
        pytest.fail(f"TRUSTEVAL_DATA_DIR={path} does not hold the evaluation data (cold/test.csv missing)")
    return path


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    """One trusteval cache per test session, so the offline detectors are trained once."""
    return tmp_path_factory.mktemp("trusteval-cache")
