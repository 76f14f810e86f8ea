"""`replay`: responses generated elsewhere, read from a JSONL/CSV/JSON/Parquet file.

Spec: `replay:answers.jsonl?prompt_field=prompt&response_field=response&seed_field=seed`. Each row gives the
user message (the prompt exactly as sent) and the response; a `seed` column, when present, matches the run's
seeds, otherwise one response serves every seed. A prompt with no row in the file is a failed generation
with the reason, not a silent gap. The file is checked in full before a run writes anything (`preflight`)
and read again when the backend is created; a file whose content was checked before with the same fields is
not read at preflight again (an identical rerun, which answers nothing, never reads it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import Field

from trusteval.data.files import read_records, require_columns
from trusteval.errors import DataError
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.options import PluginOptions, read_spec_options
from trusteval.records import Generation, Request


def _last_user_message(request: Request) -> str:
    for role, content in reversed(request.messages):
        if role == "user":
            return content
    return ""


OPERATIONAL_OPTIONS: frozenset[str] = frozenset()  # the field names decide which answers are read


def identity_parts(spec: ModelSpec) -> tuple[str, dict[str, str]]:
    """`replay:<file name>?sha256=<16 hex>`: an edited answers file is another model; a moved one is not."""
    from trusteval.models.embedded import weights_sha256

    path = Path(spec.name).expanduser()
    if not path.is_file():
        raise DataError(path, "replay file not found")
    return path.name, {"sha256": weights_sha256(path)[:16]}


class ReplayBackend:
    batch_size = 256
    max_concurrency = 1

    def __init__(self, spec: ModelSpec, answers: dict[tuple[str, int | None], str]) -> None:
        self.spec = spec
        self._answers = answers

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [self._answer(r) for r in requests]

    def _answer(self, request: Request) -> Generation:
        prompt = _last_user_message(request)
        text = self._answers.get((prompt, request.seed), self._answers.get((prompt, None)))
        if text is None:
            return Generation.failure(request.key, f"replay: no response in '{self.spec.name}' for this prompt")
        return Generation(key=request.key, text=text, finish_reason="replay")

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"backend": "replay", "file": self.spec.name, "responses": len(self._answers)}


def load_answers(path: Path, prompt_field: str, response_field: str, seed_field: str) -> dict:
    records = read_records(path)
    require_columns(path, list(records[0][1]), [prompt_field, response_field])
    answers: dict[tuple[str, int | None], str] = {}
    for line, row in records:
        prompt, response = row.get(prompt_field), row.get(response_field)
        for field, value in ((prompt_field, prompt), (response_field, response)):
            if not isinstance(value, str):
                raise DataError(path, f"expected text, found {type(value).__name__}", line=line, field=field)
        seed = row.get(seed_field)
        if seed not in (None, ""):
            try:
                seed = int(seed)
            except (TypeError, ValueError):
                raise DataError(path, f"seed must be an integer, not {seed!r}", line=line, field=seed_field) from None
        else:
            seed = None
        answers[(str(prompt), seed)] = str(response)  # both checked to be text above
    return answers


CHECK_VERSION = 1  # of load_answers' checks: raise it when they change, so files are checked again


def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    """Read and check the whole answers file, unless a file of the same content (sha256) was checked with the
    same fields before: a mark in the hash cache remembers it (a broken file is never marked)."""
    options = read_spec_options(Options, spec)
    path = Path(spec.name).expanduser()
    mark = _checked_mark(path, options) if path.is_file() else None
    if mark is not None and mark.is_file():
        return
    _load(path, options)
    if mark is not None:
        with suppress(OSError):  # best effort: an unwritable cache only costs reading the file again
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()


class Options(PluginOptions):
    prompt_field: str = Field("prompt", description="the JSONL field holding the prompt (part of the identity)")
    response_field: str = Field("response", description="the field holding the answer (part of the identity)")
    seed_field: str = Field("seed", description="the field holding the seed, if any (part of the identity)")


def _fields(options: Options) -> tuple[str, str, str]:
    return options.prompt_field or "prompt", options.response_field or "response", options.seed_field or "seed"


def _load(path: Path, options: Options) -> dict:
    return load_answers(path, *_fields(options))


def _checked_mark(path: Path, options: Options) -> Path:
    """The mark of a file checked with these fields: its content's sha256 (cached by path, size and mtime)."""
    from trusteval.models.embedded import hash_cache_dir, weights_sha256

    fields = hashlib.sha256("\x1f".join(_fields(options)).encode()).hexdigest()[:16]
    return hash_cache_dir() / "replay-checked" / f"v{CHECK_VERSION}-{weights_sha256(path)}-{fields}"


def create(spec: ModelSpec, settings: BackendSettings) -> ReplayBackend:
    options = read_spec_options(Options, spec)
    return ReplayBackend(spec, _load(Path(spec.name).expanduser(), options))
