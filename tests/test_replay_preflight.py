"""The replay backend's preflight reads its answers file once per content: an identical rerun (which answers
nothing) does not read it again, while an edited or broken file is checked, and refused, every time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from trusteval.errors import DataError
from trusteval.models import BackendSettings, ModelSpec, preflight, replay, replay_index
from trusteval.records import GenerationParams, Request


@pytest.fixture
def reads(monkeypatch, tmp_path):
    """Every answers file read by the replay backend, in order; the hash cache in a folder of its own."""
    monkeypatch.setenv("TRUSTEVAL_CACHE_DIR", str(tmp_path / "cache"))
    seen: list[str] = []
    real = replay_index.scan

    def counting(path, *args, **kwargs):
        seen.append(Path(path).name)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(replay_index, "scan", counting)  # a JSON Lines file is read line by line by `scan`
    return seen


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _preflight(raw: str) -> None:
    asyncio.run(preflight(ModelSpec.parse(raw), BackendSettings()))


def test_an_unchanged_file_is_read_once_by_preflight_and_again_by_the_backend(tmp_path, reads):
    answers = _write(tmp_path / "answers.jsonl", [{"prompt": "a", "response": "A"}, {"prompt": "b", "response": "B"}])
    _preflight(f"replay:{answers}")
    _preflight(f"replay:{answers}")
    assert reads == ["answers.jsonl"]
    backend = replay.create(ModelSpec.parse(f"replay:{answers}"), BackendSettings())
    request = Request.build("m", (("user", "b"),), GenerationParams(), 42)
    assert asyncio.run(backend.generate([request]))[0].text == "B"
    assert reads == ["answers.jsonl", "answers.jsonl"]


def test_other_fields_are_checked_again(tmp_path, reads):
    answers = _write(tmp_path / "answers.jsonl", [{"prompt": "a", "response": "A", "answer": 3}])
    _preflight(f"replay:{answers}")
    with pytest.raises(DataError, match=r"line 1, field 'answer': expected text, found int"):
        _preflight(f"replay:{answers}?response_field=answer")
    assert reads == ["answers.jsonl", "answers.jsonl"]


def test_an_edited_file_is_checked_again_and_a_broken_one_refused_every_time(tmp_path, reads):
    answers = _write(tmp_path / "answers.jsonl", [{"prompt": "a", "response": "A"}])
    _preflight(f"replay:{answers}")
    _write(answers, [{"prompt": "a", "response": "A"}, {"prompt": "b", "response": ["not", "text"]}])
    for _ in range(2):
        with pytest.raises(DataError, match=r"answers.jsonl.*line 2, field 'response': expected text, found list"):
            _preflight(f"replay:{answers}")
    assert reads == ["answers.jsonl"] * 3


def test_a_missing_file_is_refused(tmp_path, reads):
    with pytest.raises(DataError):
        _preflight(f"replay:{tmp_path / 'none.jsonl'}")
