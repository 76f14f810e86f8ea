"""Fixtures of the reliability tests: the figures file the tests fill for docs/reliability.md."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

FIGURES_ENV = "TRUSTEVAL_RELIABILITY_FIGURES"


@pytest.fixture(scope="session")
def figures(tmp_path_factory: pytest.TempPathFactory):
    """A dict the tests fill with what they measured; written as JSON when the session ends.

    The file is $TRUSTEVAL_RELIABILITY_FIGURES (e.g. bench/results/reliability.json) or a temporary path;
    sections from an earlier run that this session did not measure are kept.
    """
    collected: dict[str, Any] = {}
    yield collected
    target = Path(os.environ.get(FIGURES_ENV) or tmp_path_factory.getbasetemp() / "reliability.json")
    target.parent.mkdir(parents=True, exist_ok=True)
    previous = json.loads(target.read_text("utf-8")) if target.is_file() else {}
    target.write_text(json.dumps({**previous, **collected}, indent=2, sort_keys=True) + "\n", "utf-8")
