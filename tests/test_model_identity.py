"""Model identity: operational options (threads, URL, concurrency) never split a model's answers, runs or rows."""

from __future__ import annotations

import csv
import json

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer, completion_body
from helpers import run_cli
from trusteval.config import build_run_spec
from trusteval.data.sources import sha256_file
from trusteval.errors import BackendError
from trusteval.models import model_identity
from trusteval.models.embedded import embedded_gguf_path


def test_aliases_and_operational_options_give_one_identity_with_the_weights_hash():
    weights = sha256_file(embedded_gguf_path())[:16]
    same = {model_identity(raw) for raw in ("default", "smollm2", "llamacpp:smollm2?n_threads=1",
                                            "llamacpp:SmolLM2-135M-Instruct?n_threads=3")}  # fmt: skip
    assert same == {f"llamacpp:smollm2?sha256={weights}"}
    assert model_identity("llamacpp:smollm2?n_ctx=512") == f"llamacpp:smollm2?n_ctx=512&sha256={weights}"
    first = model_identity("openai:m?base_url=http://127.0.0.1:1/v1&concurrency=2&timeout=5")
    assert first == model_identity("openai:m?base_url=http://127.0.0.1:2/v1") == "openai:m"
    pool = "openai:m?base_url=http://127.0.0.1:1/v1,http://127.0.0.1:2/v1,http://127.0.0.1:3/v1&concurrency=4"
    assert model_identity(pool) == first  # replicas of one model: the same answers, whichever answered
    assert model_identity("hf:x?dtype=bfloat16&batch_size=4&device=cpu") == "hf:x?dtype=bfloat16"


def test_a_gguf_file_is_known_by_its_content_not_its_folder(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.gguf").write_bytes(b"weights")
    first, second = (model_identity(f"llamacpp:{tmp_path / f / 'm.gguf'}") for f in ("a", "b"))
    assert first == second == f"llamacpp:m.gguf?sha256={sha256_file(tmp_path / 'a' / 'm.gguf')[:16]}"
    (tmp_path / "b" / "m.gguf").write_bytes(b"other weights")
    assert model_identity(f"llamacpp:{tmp_path / 'b' / 'm.gguf'}") != first
    with pytest.raises(BackendError, match="no GGUF file"):
        model_identity(f"llamacpp:{tmp_path / 'missing.gguf'}")


def test_run_ids_count_models_by_identity():
    def run_id(*models: str) -> str:
        return build_run_spec({"benchmark": "b", "models": list(models)}, env={}).run_id

    assert run_id("default") == run_id("llamacpp:smollm2?n_threads=1") != run_id("llamacpp:smollm2?n_ctx=512")
    assert run_id("openai:m?base_url=http://127.0.0.1:1/v1") == run_id(
        "openai:m?base_url=http://127.0.0.1:2/v1&concurrency=3"
    )
    assert run_id("openai:m?base_url=http://127.0.0.1:1/v1") == run_id(
        "openai:m?base_url=http://127.0.0.1:2/v1,http://127.0.0.1:3/v1"
    )
    assert run_id("openai:m") != run_id("openai:n")


def _replay_file(data_dir, target):
    """An answer for every COLD test prompt, so the replay model fails nothing."""
    with (data_dir / "cold" / "test.csv").open(encoding="utf-8", newline="") as handle:
        texts = {row["TEXT"].strip() for row in csv.DictReader(handle)}
    target.write_text("".join(json.dumps({"prompt": t, "response": "ok"}, ensure_ascii=False) + "\n" for t in texts))
    return target


def _run(store, cache_dir, *models: str):
    flags = [flag for model in models for flag in ("--model", model)]
    return run_cli(
        "run", "--benchmark", "trusteval-toxicity", "--dataset", "cold", "--limit", "3", "--seeds", "42",
        "--max-new-tokens", "12", "--prompt-toxicity", "label", "--store", store, "--cache-dir", cache_dir,
        "--json", "--no-progress", *flags,
    )  # fmt: skip


@pytest.mark.slow
def test_default_and_a_thread_count_are_one_run_and_one_table_row(tmp_path, data_dir, cache_dir):
    store = tmp_path / "ws"
    replay = _replay_file(data_dir, tmp_path / "answers.jsonl")
    first = _run(store, cache_dir, "default", f"replay:{replay}")
    assert first.returncode == 0, first.stderr[-2000:]
    again = _run(store, cache_dir, "llamacpp:smollm2?n_threads=1", f"replay:{replay}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.json()["run_id"] == first.json()["run_id"] and again.json()["generated"] == 0
    alone = _run(store, cache_dir, "llamacpp:smollm2?n_threads=1")  # another run with the same model in it
    assert alone.returncode == 0 and alone.json()["run_id"] != first.json()["run_id"]
    assert (alone.json()["generated"], alone.json()["reused"]) == (0, 3)

    tables = run_cli("tables", "--store", store, "--json", "--format", "csv")
    assert tables.returncode == 0, tables.stderr[-2000:]
    table5 = next(t for t in tables.json()["tables"] if t["name"].startswith("table5"))
    assert [row[0] for row in table5["rows"]] == ["llamacpp:smollm2?n_threads=1", f"replay:{replay}"]
    ztests = tables.json()["metrics"][0]["ztests_tt"]
    assert len(ztests) == 1  # the model against the replay, not against itself

    both = _run(store, cache_dir, "default", "llamacpp:smollm2?n_threads=2")
    assert both.returncode == 2 and "are the same model (llamacpp:smollm2?sha256=" in both.stderr


@pytest.mark.slow
def test_a_server_on_another_port_keeps_the_run_id_and_the_answers(tmp_path, cache_dir):
    store = tmp_path / "ws"
    with ScriptedOpenAIServer([Reply(body=completion_body("a calm answer"))]) as first_server:
        first = _run(store, cache_dir, f"openai:m?base_url={first_server.base_url}")
        # the first server stays open, so the second cannot be given the same port
        with ScriptedOpenAIServer([Reply(body=completion_body("another answer"))]) as second_server:
            again = _run(store, cache_dir, f"openai:m?base_url={second_server.base_url}&concurrency=2")
            asked = [r for r in second_server.seen if r.path.endswith("/chat/completions")]
    assert first.returncode == 0, first.stderr[-2000:]
    assert again.returncode == 0, again.stderr[-2000:]
    assert first_server.port != second_server.port and asked == []
    assert again.json()["run_id"] == first.json()["run_id"]
    assert (again.json()["generated"], again.json()["reused"]) == (0, 3)
    (now,), (before,) = again.json()["metrics"]["models"].values(), first.json()["metrics"]["models"].values()
    assert now == before and now["pairs"] == 3
    tables = run_cli("tables", "--store", store, "--json", "--format", "csv")
    table5 = next(t for t in tables.json()["tables"] if t["name"].startswith("table5"))
    assert [row[0] for row in table5["rows"]] == [f"openai:m?base_url={second_server.base_url}&concurrency=2"]
