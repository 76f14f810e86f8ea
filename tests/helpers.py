"""Running the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one JSON line on stdout, got {len(lines)}:\n{self.stdout[:2000]}"
        return json.loads(lines[0])


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUSTEVAL_") or k == "TRUSTEVAL_DATA_DIR"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **extra)
    return env


def run_cli(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 900) -> CliResult:
    done = subprocess.run(
        [sys.executable, "-m", "trusteval", *map(str, args)],
        capture_output=True,
        text=True,
        env=env or cli_env(),
        timeout=timeout,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)


def cli_command(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "trusteval", *map(str, args)]
