"""Running the real CLI in a subprocess, as a user would."""

from __future__ import annotations

import asyncio
import csv
import json
import os
import subprocess
import sys
from collections.abc import Sequence
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


def write_replay_answers(path: Path, prompts: Sequence[str], responses: Sequence[str]) -> Path:
    """A replay model's answers file: one {"prompt", "response"} JSON line per prompt."""
    rows = [{"prompt": p, "response": r} for p, r in zip(prompts, responses, strict=True)]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def write_labelled_csv(path: Path, texts: Sequence[str]) -> Path:
    """A `file:` dataset: text, label alternating 0/1, category cycling race, gender, region."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label", "category"])
        for i, text in enumerate(texts):
            writer.writerow([text, i % 2, ("race", "gender", "region")[i % 3]])
    return path


def openai_backend(base_url: str, options: str = "", *, model: str = "smollm2", **settings: Any) -> Any:
    """The `openai` backend for `openai:MODEL?base_url=...&options` (a comma-separated URL list is a pool)."""
    from trusteval.models import BackendSettings, ModelSpec
    from trusteval.models.openai import create

    spec = ModelSpec.parse(f"openai:{model}?base_url={base_url}" + (f"&{options}" if options else ""))
    return create(spec, BackendSettings(**settings))


def generate_then_close(backend: Any, requests: Sequence[Any]) -> list[Any]:
    """One `generate` call on a fresh event loop, the backend closed afterwards."""

    async def go() -> list[Any]:
        try:
            return await backend.generate(list(requests))
        finally:
            await backend.aclose()

    return asyncio.run(go())


# A tiny BERT-shaped encoder classifier for the fused and unpadded encoder tests (random weights, from a config)
TINY_ENCODER_SHAPE = {
    "vocab_size": 300,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "max_position_embeddings": 80,
    "num_labels": 3,
    "initializer_range": 0.2,
}
