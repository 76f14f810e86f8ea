"""`replay`: responses generated elsewhere, read from a JSONL/CSV/JSON/Parquet file.

Spec: `replay:answers.jsonl?prompt_field=prompt&response_field=response&seed_field=seed`. Each row gives the
user message (the prompt exactly as sent) and the response; a `seed` column, when present, matches the run's
seeds, otherwise one response serves every seed. A prompt with no row in the file is a failed generation
with the reason, not a silent gap. The file is checked in full before a run writes anything (`preflight`)
and read again when the backend is created; a file whose content was checked before with the same fields is
not read at preflight again (an identical rerun, which answers nothing, never reads it).

A JSON Lines file is checked line by line and not held: the backend keeps an index of 16 bytes per row and
reads each answer's line back from the file, which must not change during the run (`replay_index`). A CSV,
TSV, JSON or Parquet file is read into a dict of its answers, as before.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from pydantic import Field

from trusteval.data.files import open_checked, read_records, require_columns
from trusteval.errors import DataError
from trusteval.models import replay_index
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.replay_index import AnswerIndex, Fields, checked_answer
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


class HeldAnswers:
    """The answers of a file read in full (CSV, TSV, JSON, Parquet), by (prompt, seed)."""

    def __init__(self, answers: dict[tuple[str, int | None], str]) -> None:
        self._answers = answers

    def get(self, prompt: str, seed: int | None) -> str | None:
        return self._answers.get((prompt, seed))

    def __len__(self) -> int:
        return len(self._answers)

    def close(self) -> None:
        return None


Answers = AnswerIndex | HeldAnswers


class ReplayBackend:
    batch_size = 256
    max_concurrency = 1

    def __init__(self, spec: ModelSpec, answers: Answers) -> None:
        self.spec = spec
        self._answers = answers

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return [self._answer(r) for r in requests]

    def _answer(self, request: Request) -> Generation:
        prompt = _last_user_message(request)
        text = self._answers.get(prompt, request.seed)
        if text is None and request.seed is not None:  # a row without a seed serves every seed
            text = self._answers.get(prompt, None)
        if text is None:
            return Generation.failure(request.key, f"replay: no response in '{self.spec.name}' for this prompt")
        return Generation(key=request.key, text=text, finish_reason="replay")

    async def aclose(self) -> None:
        self._answers.close()

    def describe(self) -> dict[str, Any]:
        return {"backend": "replay", "file": self.spec.name, "responses": len(self._answers)}


def load_answers(path: Path, prompt_field: str, response_field: str, seed_field: str) -> dict:
    records = read_records(path)
    require_columns(path, list(records[0][1]), [prompt_field, response_field])
    fields = (prompt_field, response_field, seed_field)
    answers: dict[tuple[str, int | None], str] = {}
    for line, row in records:
        prompt, seed, response = checked_answer(path, line, row, fields)
        answers[(prompt, seed)] = response
    return answers


def _is_json_lines(path: Path) -> bool:
    return path.suffix.lower() == ".jsonl"


def check_answers(path: Path, fields: Fields) -> None:
    """Every check of the backend's reading, holding nothing."""
    if not _is_json_lines(path):
        load_answers(path, *fields)
        return
    with open_checked(path) as handle:
        deque(replay_index.scan(path, handle, fields), maxlen=0)


def open_answers(path: Path, fields: Fields) -> Answers:
    if _is_json_lines(path):
        return AnswerIndex(path, fields)
    return HeldAnswers(load_answers(path, *fields))


CHECK_VERSION = 1  # of check_answers' checks: raise it when they change, so files are checked again


def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    """Read and check the whole answers file, unless a file of the same content (sha256) was checked with the
    same fields before: a mark in the hash cache remembers it (a broken file is never marked)."""
    options = read_spec_options(Options, spec)
    path = Path(spec.name).expanduser()
    mark = _checked_mark(path, options) if path.is_file() else None
    if mark is not None and mark.is_file():
        return
    check_answers(path, _fields(options))
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


def _checked_mark(path: Path, options: Options) -> Path:
    """The mark of a file checked with these fields: its content's sha256 (cached by path, size, mtime, ctime and
    inode)."""
    from trusteval.models.embedded import hash_cache_dir, weights_sha256

    fields = hashlib.sha256("\x1f".join(_fields(options)).encode()).hexdigest()[:16]
    return hash_cache_dir() / "replay-checked" / f"v{CHECK_VERSION}-{weights_sha256(path)}-{fields}"


def create(spec: ModelSpec, settings: BackendSettings) -> ReplayBackend:
    options = read_spec_options(Options, spec)
    return ReplayBackend(spec, open_answers(Path(spec.name).expanduser(), _fields(options)))
