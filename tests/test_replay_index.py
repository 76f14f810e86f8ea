"""The replay model's JSON Lines answers are indexed, not held: answers and errors are those of the dict the
backend held before (`load_answers`, still used for other formats), in a few MB for 100,000 rows."""

from __future__ import annotations

import asyncio
import json
import tracemalloc
from pathlib import Path

import pytest

from trusteval.errors import DataError
from trusteval.models import BackendSettings, ModelSpec, replay, replay_index
from trusteval.records import GenerationParams, Request

ROWS = [
    {"prompt": "a", "response": "A for every seed"},
    {"prompt": "a", "response": "A for seed 7", "seed": 7},
    {"prompt": "b", "response": "B first", "seed": 42},
    {"prompt": "b", "response": "B later duplicate wins", "seed": 42},
    {"prompt": "c", "response": "C", "seed": ""},
    {"prompt": "c", "response": "C duplicate, no seed"},
    {"prompt": "你好，世界 ☃", "response": "回答 – ünïcode 🎉"},
    {"prompt": "tab\tand\nnewline", "response": "escaped line break", "seed": "3"},
    {"prompt": "d", "response": "D only for seed 1", "seed": 1},
]
PROMPTS = ["a", "b", "c", "d", "你好，世界 ☃", "tab\tand\nnewline", "absent", ""]
SEEDS = [None, 1, 3, 7, 42]


def _write(path: Path, rows: list[dict], *, ensure_ascii: bool = True, newline: str = "\n", bom: str = "") -> Path:
    text = bom + "".join(json.dumps(row, ensure_ascii=ensure_ascii) + newline for row in rows)
    path.write_bytes(text.encode("utf-8"))
    return path


def _request(prompt: str, seed: int | None) -> Request:
    return Request.build("m", (("system", "ignored"), ("user", prompt)), GenerationParams(), seed)


def _answers(backend: replay.ReplayBackend) -> list[tuple[str | None, str | None]]:
    requests = [_request(prompt, seed) for prompt in PROMPTS for seed in SEEDS]
    return [(g.text, g.error) for g in asyncio.run(backend.generate(requests))]


def _old_backend(path: Path) -> replay.ReplayBackend:
    """The backend as it was: every answer read into a dict by `read_records`."""
    spec = ModelSpec.parse(f"replay:{path}")
    return replay.ReplayBackend(spec, replay.HeldAnswers(replay.load_answers(path, "prompt", "response", "seed")))


def _new_backend(path: Path) -> replay.ReplayBackend:
    backend = replay.create(ModelSpec.parse(f"replay:{path}"), BackendSettings())
    assert isinstance(backend._answers, replay_index.AnswerIndex)
    return backend


@pytest.mark.parametrize(
    "layout",
    [{}, {"ensure_ascii": False}, {"newline": "\r\n"}, {"bom": "\ufeff"}, {"ensure_ascii": False, "newline": "\n\n"}],
    ids=["ascii", "utf8", "crlf", "bom", "blank-lines"],
)
def test_answers_are_those_of_the_dict_it_replaces(tmp_path, layout):
    path = _write(tmp_path / "answers.jsonl", ROWS, **layout)
    new, old = _new_backend(path), _old_backend(path)
    answers = _answers(new)
    assert answers == _answers(old)
    assert new.describe() == old.describe() == {"backend": "replay", "file": str(path), "responses": 7}
    by_request = dict(zip([(p, s) for p in PROMPTS for s in SEEDS], answers, strict=True))
    assert by_request[("a", 7)] == ("A for seed 7", None)
    assert by_request[("a", 42)] == by_request[("a", None)] == ("A for every seed", None)
    assert by_request[("b", 42)] == ("B later duplicate wins", None)
    assert by_request[("b", 1)] == (None, f"replay: no response in '{path}' for this prompt")
    assert by_request[("c", 3)] == ("C duplicate, no seed", None)
    assert by_request[("d", None)][0] is None and by_request[("d", 1)][0] == "D only for seed 1"
    assert by_request[("你好，世界 ☃", 42)] == ("回答 – ünïcode 🎉", None)
    assert by_request[("tab\tand\nnewline", 3)] == ("escaped line break", None)
    assert by_request[("absent", 42)] == (None, f"replay: no response in '{path}' for this prompt")
    asyncio.run(new.aclose())


def test_a_hash_collision_never_gives_a_wrong_answer(tmp_path, monkeypatch):
    monkeypatch.setattr(replay_index, "key_hash", lambda prompt, seed: 5)  # every row collides
    path = _write(tmp_path / "answers.jsonl", ROWS, ensure_ascii=False)
    new = _new_backend(path)
    assert _answers(new) == _answers(_old_backend(path))
    assert len(new._answers) == 7


def test_a_raw_line_separator_is_text_not_a_line_end(tmp_path):
    """U+2028 and U+0085 are left raw by json.dumps(ensure_ascii=False); before, `str.splitlines` cut the record
    there ("line 2: not valid JSON (Unterminated string"). Only "\\n", "\\r\\n" and "\\r" end a line."""
    path = tmp_path / "answers.jsonl"
    path.write_text('{"prompt": "a", "response": "x"}\n{"prompt": "b\x85", "response": "y\u2028z"}\n', "utf-8")
    for backend in (_old_backend(path), _new_backend(path)):
        found = asyncio.run(backend.generate([_request("b\x85", None)]))
        assert [(g.text, g.error) for g in found] == [("y\u2028z", None)]
        asyncio.run(backend.aclose())
    path.write_text('{"prompt": "a\u2028", "response": "x"}\u2028{"prompt": "b", "response": "y"}\n', "utf-8")
    for load in (lambda: _old_backend(path), lambda: _new_backend(path)):
        with pytest.raises(DataError, match=r"line 1: not valid JSON \(Extra data"):
            load()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "the file is empty"),
        (b" \n\n", "the file is empty"),
        (b"\xef\xbb\xbf", "the file has no rows"),
        (b"\xff\xfe{}", "the file is UTF-16"),
        (b'{"prompt": "a", "response": "A"}\n{"prompt": "\xe4\xb8", "response": "B"}\n', "line 2: not UTF-8"),
        (b'{"prompt": "a", "response": "A\x00"}\n', "line 1: contains a NUL byte"),
        (b'{"prompt": "a"}\n', "line 1, field 'response': missing column(s) 'response'"),
        (b'{"prompt": "a", "response": "A"}\n{"prompt": "b"}\n', "line 2, field 'response': expected text"),
        (b'{"prompt": "a", "response": "A", "seed": [1]}\n', "line 1, field 'seed': seed must be an integer"),
        (b'{"prompt": "a", "response": "A", "seed": "x"}\n', "line 1, field 'seed': seed must be an integer"),
        (b'{"prompt": "a", "response": "\\ud800"}\n', "line 1, field 'response': the value holds a lone"),
        (b'{"prompt": "a", "response": "' + b"x" * 1_000_001 + b'"}\n', "line 1, field 'response': the value has"),
    ],
)
def test_a_broken_file_is_refused_with_the_same_error(tmp_path, content, expected):
    path = tmp_path / "answers.jsonl"
    path.write_bytes(content)
    errors = []
    for load in (lambda: _old_backend(path), lambda: _new_backend(path)):
        with pytest.raises(DataError) as caught:
            load()
        errors.append(str(caught.value))
    assert errors[0] == errors[1]
    assert f"{path}, {expected}" in errors[1] or f"{path}: {expected}" in errors[1], errors[1]


def test_a_file_changed_during_the_run_is_refused(tmp_path):
    path = _write(tmp_path / "answers.jsonl", ROWS)
    backend = _new_backend(path)
    assert _answers(backend)[0] == ("A for every seed", None)
    _write(path, [{"prompt": "a", "response": "edited"}, *ROWS])
    with pytest.raises(DataError, match=r"answers.jsonl: the answers file changed while a run was reading it"):
        asyncio.run(backend.generate([_request("a", 42)]))


@pytest.mark.slow
def test_an_index_of_100000_rows_takes_a_few_megabytes(tmp_path):
    rows = [{"prompt": f"第{i}个问题：这句话是否有害？", "response": f"回答 {i}: 没有。" * 3} for i in range(100_000)]
    path = _write(tmp_path / "answers.jsonl", rows, ensure_ascii=False)
    tracemalloc.start()
    try:
        backend = _new_backend(path)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 2.5 * 2**20, held  # 16 bytes a row; the dict of these rows held about 30 MB
    assert peak < 8 * 2**20, peak
    assert _answers(backend)[0] == (None, f"replay: no response in '{path}' for this prompt")
    found = asyncio.run(backend.generate([_request("第99999个问题：这句话是否有害？", 42)]))
    assert found[0].text == "回答 99999: 没有。" * 3
