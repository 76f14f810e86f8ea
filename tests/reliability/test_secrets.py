"""Secrets: a key echoed back by a server, whole or altered (case, splits, halves), never reaches any output,
and a key put in a spec is refused without being repeated. Real servers on 127.0.0.1, the real CLI."""

from __future__ import annotations

import asyncio
import re
import secrets
import string
from pathlib import Path

import pytest
from store_checks import query, runs_count

from fixtures.llama_server import Reply, ScriptedOpenAIServer, completion_body
from helpers import cli_env, generate_then_close, run_cli
from trusteval.models import BackendSettings, ModelSpec
from trusteval.models.openai import create as create_openai
from trusteval.records import GenerationParams, Request

KEY_ENV = "TRUSTEVAL_CANARY_KEY"
FRAGMENT = 8


def canary() -> str:
    """A key of random letters and digits: an 8-character piece of it never occurs by chance."""
    return "AIza" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32))


def leaked_pieces(text: str, key: str) -> list[str]:
    """Every 8-character piece of `key` found in `text`, ignoring case and anything but letters and digits."""
    flat_key = re.sub(r"[^a-z0-9]", "", key.lower())
    flat = re.sub(r"[^a-z0-9]", "", text.lower())
    return [
        flat_key[i : i + FRAGMENT] for i in range(len(flat_key) - FRAGMENT + 1) if flat_key[i : i + FRAGMENT] in flat
    ]


def altered_forms(key: str) -> str:
    """The ways a careless server echoes a key: as is, upper-cased, lower-cased, split, and cut in halves."""
    half = len(key) // 2
    split = " ".join(key[i : i + 5] for i in range(0, len(key), 5))
    return f"{key} {key.upper()} {key.lower()} {split} {key[:half]}... ...{key[half:]} {'-'.join(key)}"


def echoing_perspective(kind: str):
    """A Perspective API stand-in that refuses every request, echoing the URL and key header it received."""

    def script(index: int, request) -> Reply:
        said = f"{request.path} {altered_forms(request.headers.get('x-goog-api-key', ''))}"
        if kind == "403":
            return Reply(status=403, body={"error": {"code": 403, "message": f"API key not valid: {said}"}})
        if kind == "502":
            return Reply(status=502, body=f"<html><body><h1>502 Bad Gateway</h1><p>{said}</p></body></html>")
        return Reply(status=307, headers={"Location": f"https://elsewhere.example{request.path}"}, body=said)

    return script


def _outputs_and_files(store: Path, tmp_path: Path, env: dict[str, str]) -> tuple[list, list[Path]]:
    exports, tables = tmp_path / "exports", tmp_path / "tables"
    exports.mkdir()
    outputs = [
        run_cli("report", "--store", store, env=env),
        run_cli("report", "--store", store, "--json", env=env),
        run_cli("report", "--store", store, "--out", tmp_path / "report", env=env),
        run_cli("export", "--store", store, "--format", "jsonl", "-o", exports / "rows.jsonl", env=env),
        run_cli("export", "--store", store, "--format", "csv", env=env),
        run_cli("tables", "--store", store, "--out", tables, env=env),
        run_cli("tables", "--store", store, "--json", env=env),
    ]
    files = [p for folder in (store, exports, tables, tmp_path / "report") for p in folder.rglob("*") if p.is_file()]
    return outputs, files


@pytest.mark.parametrize("kind", ["403", "502", "307"])
def test_a_perspective_key_echoed_by_the_server_reaches_no_output(tmp_path, cache_dir, kind):
    key = canary()
    store = tmp_path / "ws"
    env = cli_env(PERSPECTIVE_API_KEY=key)
    with ScriptedOpenAIServer([Reply()]) as model, ScriptedOpenAIServer(echoing_perspective(kind)) as google:
        scorer = f"perspective?base_url=http://127.0.0.1:{google.port}&rps=1000&max_retries=0&backoff_base=0.01"
        run = run_cli(
            "run",
            "--benchmark",
            "trusteval-toxicity",
            "--limit",
            "4",
            "--seeds",
            "42",
            "--model",
            f"openai:m?base_url={model.base_url}&api_key_env=",
            "--scorer",
            scorer,
            "--store",
            store,
            "--cache-dir",
            tmp_path / "cache",
            "--json",
            "--no-progress",
            env=env,
        )
        seen = list(google.seen)
    assert run.returncode == 3, run.stderr[-3000:]  # stored, incomplete: every score failed
    assert seen and all(r.headers.get("x-goog-api-key") == key for r in seen), "the key travels in a header"
    assert all(key not in r.path for r in seen), "the key is never in the URL"
    assert run.json()["score_failures"] > 0, "every score failed with a message that echoes the key"
    outputs, files = _outputs_and_files(store, tmp_path, env)
    assert [o.returncode for o in outputs] == [0] * len(outputs), [o.stderr[-500:] for o in outputs]
    texts = {f"output {i}": o.stdout + o.stderr for i, o in enumerate([run, *outputs])}
    texts.update({str(p): p.read_bytes().decode("latin-1") for p in files})
    texts.update({str(p): p.read_text() for p in (tmp_path / "cache").rglob("*.json")})
    assert {name: leaked_pieces(text, key) for name, text in texts.items() if leaked_pieces(text, key)} == {}
    assert "[redacted]" in run_cli("export", "--store", store, env=env).stdout + "".join(
        p.read_bytes().decode("latin-1") for p in store.rglob("*.sqlite*")
    ), "the failures were stored, with the key redacted"


def test_an_openai_key_echoed_in_altered_forms_leaves_no_piece_in_the_reason():
    key = canary()
    request = Request.build("openai:m", (("user", "hi"),), GenerationParams(), 1)
    replies = [Reply(status=401, body=altered_forms(key)), Reply(body={"error": altered_forms(key)})]
    for reply in replies:
        with ScriptedOpenAIServer([reply]) as server:
            spec = ModelSpec.parse(f"openai:m?base_url={server.base_url}&api_key_env={KEY_ENV}")
            backend = create_openai(spec, BackendSettings(env={KEY_ENV: key}, max_retries=0))

            async def answer(backend=backend):
                try:
                    return await backend.generate([request])
                finally:
                    await backend.aclose()

            [failed] = asyncio.run(answer())
        assert failed.error and "[redacted]" in failed.error
        assert leaked_pieces(failed.error, key) == []


@pytest.mark.parametrize(
    ("where", "template"),
    [
        ("base_url query key=", "openai:m?base_url=http://127.0.0.1:9/v1?key={key}"),
        ("base_url query api_key=", "openai:m?base_url=http%3A%2F%2F127.0.0.1%3A9%2Fv1%3Fx%3D1%26api_key%3D{key}"),
        ("unknown option api-key=", "openai:m?base_url=http://127.0.0.1:9/v1&api-key={key}"),
        ("unknown option X-Goog-Api-Key=", "openai:m?X-Goog-Api-Key={key}"),
    ],
)
def test_a_key_in_a_model_spec_is_refused_without_repeating_it(tmp_path, where, template):
    key = canary()
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--store", tmp_path / "ws", "--no-progress",
                     "--model", template.format(key=key))  # fmt: skip
    assert result.returncode == 2, (where, result.stderr[-2000:])
    assert "must not hold a credential" in result.stderr and "Traceback" not in result.stderr
    assert leaked_pieces(result.stdout + result.stderr, key) == []
    assert runs_count(tmp_path / "ws") == 0


@pytest.mark.parametrize(
    "template",
    ["perspective?base_url=http://127.0.0.1:9?key={key}", "perspective?api-key={key}", "perspective?k={key}"],
)
def test_a_key_in_a_scorer_spec_is_refused_without_repeating_it(tmp_path, template):
    key = canary()
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--store", tmp_path / "ws", "--no-progress",
                     "--scorer", template.format(key=key), env=cli_env(PERSPECTIVE_API_KEY="k" * 12))  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    assert leaked_pieces(result.stdout + result.stderr, key) == []
    assert runs_count(tmp_path / "ws") == 0


# --- round three (issue 21): answers keep their words; a changed answer is marked and counted ---------------

ORDINARY = "No key required: I use Ollama daily, the field is EMPTY, none of it is a dummy token. Answer: 1"


@pytest.mark.parametrize("key", ["sk-no-key-required", "EMPTY", "ollama", "none", "dummy", "1"])
def test_a_placeholder_key_leaves_every_answer_as_the_model_wrote_it(key):
    """llama.cpp documents `sk-no-key-required`, vLLM `EMPTY`: a key that is not a secret matches nothing."""
    request = Request.build("openai:m", (("user", "hi"),), GenerationParams(), 1)
    with ScriptedOpenAIServer([Reply(body=completion_body(ORDINARY))]) as server:
        spec = ModelSpec.parse(f"openai:m?base_url={server.base_url}&api_key_env={KEY_ENV}")
        [answer] = generate_then_close(create_openai(spec, BackendSettings(env={KEY_ENV: key})), [request])
    assert (answer.text, answer.finish_reason) == (ORDINARY, "stop")


def test_an_answer_holding_the_key_is_redacted_marked_and_counted_everywhere(tmp_path, cache_dir):
    key = canary()
    store = tmp_path / "ws"
    env = cli_env(**{KEY_ENV: key})

    def script(index, request) -> Reply:
        if request.method != "POST":
            return Reply(body={"data": []})
        said = f"My key is {key}." if index % 2 else "Your password is weak; no key here."
        return Reply(body=completion_body(said))

    with ScriptedOpenAIServer(script) as server:
        run = run_cli("run", "--benchmark", "trusteval-toxicity", "--limit", "6", "--seeds", "42", "--model",
                      f"openai:m?base_url={server.base_url}&api_key_env={KEY_ENV}", "--concurrency", "1",
                      "--store", store, "--cache-dir", cache_dir, "--json", "--no-progress", env=env)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    stored = query(store, "SELECT text, finish_reason FROM generations")
    marked = [text for text, reason in stored if reason == "stop+redacted_by_trusteval"]
    assert marked and all(text == "My key is [redacted]." for text in marked)
    assert {text for text, reason in stored if reason == "stop"} == {"Your password is weak; no key here."}
    assert run.json()["answers_redacted"] == len(marked)
    report = run_cli("report", "--store", store, "--json", env=env)
    assert report.json()["metrics"]["answers_redacted"] == len(marked)
    console = run_cli("report", "--store", store, env=env)
    note = f"{len(marked)} of {len(stored)} answers had an API key cut out by trusteval"
    assert note in " ".join(console.stdout.split())
    page = tmp_path / "page.html"
    assert run_cli("report", "--store", store, "--html", page, env=env).returncode == 0
    assert note in page.read_text()
    assert leaked_pieces(run.stdout + run.stderr + console.stdout + page.read_text(), key) == []


def test_a_key_in_the_base_url_path_is_refused_without_repeating_it(tmp_path):
    key = canary()
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--store", tmp_path / "ws", "--no-progress",
                     "--model", f"openai:m?base_url=http://127.0.0.1:9/v1/{key}&api_key_env={KEY_ENV}",
                     env=cli_env(**{KEY_ENV: key}))  # fmt: skip
    assert result.returncode == 2, result.stderr[-2000:]
    assert "must not hold the API key" in result.stderr and "Traceback" not in result.stderr
    assert leaked_pieces(result.stdout + result.stderr, key) == []


def test_an_unreachable_base_url_with_a_token_in_its_path_is_not_repeated(tmp_path):
    token = canary() + "7"  # not the key the run holds: known to nobody but the URL (letters and a digit)
    result = run_cli("run", "--benchmark", "trusteval-toxicity", "--store", tmp_path / "ws", "--no-progress",
                     "--model", f"openai:m?base_url=http://127.0.0.1:9/gw/{token}/v1&api_key_env=")  # fmt: skip
    assert result.returncode != 0 and "cannot reach" in result.stderr, result.stderr[-2000:]
    assert leaked_pieces(result.stdout + result.stderr, token) == []
