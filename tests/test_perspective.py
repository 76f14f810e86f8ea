"""The Perspective API scorer against a fake server on 127.0.0.1 (tests never call Google)."""

from __future__ import annotations

import json
import time
from email.utils import formatdate
from urllib.parse import parse_qs, urlparse

import pytest

from fixtures.llama_server import Reply, ScriptedOpenAIServer
from helpers import cli_env, run_cli
from trusteval.errors import UsageError
from trusteval.scorers import load_scorer
from trusteval.scorers.base import ScorerContext
from trusteval.scorers.perspective import PerspectiveScorer, RateLimiter
from trusteval.specs import Spec

KEY = "test-key-123"


def analysis(span: float, summary: float) -> dict:
    return {
        "attributeScores": {
            "TOXICITY": {
                "spanScores": [{"begin": 0, "end": 5, "score": {"value": span, "type": "PROBABILITY"}}],
                "summaryScore": {"value": summary, "type": "PROBABILITY"},
            }
        },
        "languages": ["en"],
    }


def by_text(index, request) -> Reply:
    """A score that depends on the text: len(text) / 100 for spans, half that for the summary."""
    text = request.json()["comment"]["text"]
    return Reply(body=analysis(len(text) / 100, len(text) / 200))


def error(status: int, message: str, kind: str | None = None) -> Reply:
    details = (
        [{"@type": "type.googleapis.com/google.commentanalyzer.v1alpha1.Error", "errorType": kind}] if kind else []
    )
    return Reply(status=status, body={"error": {"code": status, "message": message, "details": details}})


def scorer(server, tmp_path, **options):
    query = "&".join(f"{k}={v}" for k, v in {"base_url": f"http://127.0.0.1:{server.port}", "rps": "1000",
                                               "backoff_base": "0.01", **options}.items())  # fmt: skip
    return load_scorer(f"perspective?{query}", ScorerContext(env={"PERSPECTIVE_API_KEY": KEY}, cache_dir=tmp_path))


def test_span_and_summary_fields_and_the_request_sent(tmp_path):
    with ScriptedOpenAIServer(by_text) as server:
        span = scorer(server, tmp_path / "a")
        summary = scorer(server, tmp_path / "b", field="summary")
        assert [o.value for o in span.score(["hello", "hi"])] == [0.05, 0.02]
        assert [o.value for o in summary.score(["hello"])] == [0.025]
        seen = server.seen[0]
    url = urlparse(seen.path)
    assert url.path == "/v1alpha1/comments:analyze" and parse_qs(url.query) == {}, "the key is not in the URL"
    assert seen.headers["x-goog-api-key"] == KEY
    assert seen.json() == {"comment": {"text": "hello"}, "requestedAttributes": {"TOXICITY": {}}}
    assert (span.id, summary.id) == ("perspective-TOXICITY-span@v1alpha1", "perspective-TOXICITY-summary@v1alpha1")
    assert span.describe()["field"] == "spanScores[0]"


def test_every_answer_is_cached_so_a_finished_run_never_calls_again(tmp_path):
    with ScriptedOpenAIServer(by_text) as server:
        first = scorer(server, tmp_path).score(["one", "two", "three"])
        assert server.served == 3
        again = scorer(server, tmp_path, field="summary").score(["three", "two", "one"])
        assert server.served == 3  # same texts, another field: read from the cache
    assert [o.value for o in first] == [0.03, 0.03, 0.05]
    assert [o.value for o in again] == [0.025, 0.015, 0.015]


def test_quota_and_server_errors_are_retried_with_backoff(tmp_path):
    script = [
        error(429, "Quota exceeded", "RESOURCE_EXHAUSTED"),
        error(503, "unavailable"),
        Reply(body=analysis(0.7, 0.6)),
    ]
    with ScriptedOpenAIServer(script) as server:
        (outcome,) = scorer(server, tmp_path).score(["hey"])
        assert (outcome.value, server.served) == (0.7, 3)


def test_retries_run_out_into_an_error_that_the_next_run_retries(tmp_path):
    with ScriptedOpenAIServer([error(503, "backend unavailable")]) as server:
        (outcome,) = scorer(server, tmp_path, max_retries="2").score(["hey"])
        assert outcome.status == "error" and "HTTP 503: backend unavailable (after 2 retries)" in outcome.detail
        assert server.served == 3
        scorer(server, tmp_path, max_retries="0").score(["hey"])
        assert server.served == 4  # a failure is not cached


def test_a_refused_key_stops_the_batch_with_a_clear_message(tmp_path):
    with ScriptedOpenAIServer([error(403, "Permission denied: API key not valid")]) as server:
        outcomes = scorer(server, tmp_path).score(["a", "b", "c"])
        assert server.served == 1
    assert [o.status for o in outcomes] == ["error"] * 3
    assert "refused the key (HTTP 403: Permission denied: API key not valid)" in outcomes[2].detail
    assert "retiring Perspective API" in outcomes[0].detail


def test_a_bad_key_answered_with_400_is_a_key_problem_never_cached(tmp_path):
    message = "API key not valid. Please pass a valid API key."
    bad_key = Reply(
        status=400, body={"error": {"code": 400, "message": message, "details": [{"reason": "API_KEY_INVALID"}]}}
    )
    with ScriptedOpenAIServer([bad_key, Reply(body=analysis(0.2, 0.1))]) as server:
        first = scorer(server, tmp_path).score(["a", "b"])
        assert server.served == 1
        (later,) = scorer(server, tmp_path).score(["a"])  # a fixed key: the text is asked again
    assert [o.status for o in first] == ["error", "error"] and "refused the key" in first[0].detail
    assert "API_KEY_INVALID" in first[0].detail and later.value == 0.2


def test_an_unsupported_language_is_a_final_refusal_and_cached(tmp_path):
    message = "Attribute TOXICITY does not support request languages: xx"
    with ScriptedOpenAIServer([error(400, message, "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE")]) as server:
        (outcome,) = scorer(server, tmp_path).score(["blorp zzk"])
        (cached,) = scorer(server, tmp_path).score(["blorp zzk"])
        (empty,) = scorer(server, tmp_path).score(["   "])
        assert server.served == 1
    assert outcome.status == cached.status == "refused" and outcome.value is None
    assert "LANGUAGE_NOT_SUPPORTED_BY_ATTRIBUTE" in outcome.detail
    assert empty.status == "refused" and "empty text" in empty.detail


def test_a_text_the_service_refuses_does_not_stop_the_batch(tmp_path):
    def script(index, request):
        if request.json()["comment"]["text"] == "too long":
            return error(400, "Comment text too long", "COMMENT_TOO_LONG")
        return by_text(index, request)

    with ScriptedOpenAIServer(script) as server:
        outcomes = scorer(server, tmp_path).score(["too long", "fine"])
        assert server.served == 2
    assert [o.status for o in outcomes] == ["refused", "ok"] and "COMMENT_TOO_LONG" in outcomes[0].detail


def test_the_key_comes_only_from_the_injected_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSPECTIVE_API_KEY", "from-the-process")  # must be ignored
    with pytest.raises(UsageError, match="set PERSPECTIVE_API_KEY") as error_info:
        load_scorer("perspective", ScorerContext(env={}, cache_dir=tmp_path))
    assert "retiring" in str(error_info.value)
    named = load_scorer("perspective?api_key_env=MY_KEY", ScorerContext(env={"MY_KEY": "k"}, cache_dir=tmp_path))
    assert named.api_key == "k"
    with pytest.raises(UsageError, match="option 'field' must be one of span, summary"):
        load_scorer("perspective?field=spans", ScorerContext(env={"PERSPECTIVE_API_KEY": "k"}, cache_dir=tmp_path))


def test_a_retry_after_given_as_an_http_date_is_honoured(tmp_path):
    slept: list[float] = []

    def script(index, request) -> Reply:
        if index > 0:
            return Reply(body=analysis(0.4, 0.3))
        # made as the reply is sent, so a slow start cannot eat the wait: whole seconds, 3 to 4 s from then
        later = formatdate(time.time() + 4, usegmt=True)
        return Reply(status=429, headers={"Retry-After": later}, body={"error": {"message": "quota"}})

    with ScriptedOpenAIServer(script) as server:
        options = f"base_url=http://127.0.0.1:{server.port}&rps=1000&backoff_base=0.01"
        found = PerspectiveScorer(Spec.parse(f"perspective?{options}", bare=True), KEY, tmp_path, sleep=slept.append)
        (outcome,) = found.score(["hey"])
    assert outcome.value == 0.4
    assert 2.0 <= max(slept) <= 4.0, f"waited {slept}: the date asks for about 3 s (it used to be 0.01 s)"


def test_the_scorer_goes_through_the_proxy_of_the_environment(tmp_path, monkeypatch):
    """A user behind a proxy sets HTTP(S)_PROXY; the scorer used to ignore it (trust_env=False)."""
    with ScriptedOpenAIServer([Reply(body=analysis(0.9, 0.8))]) as proxy:
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.port}")
        context = ScorerContext(env={"PERSPECTIVE_API_KEY": KEY}, cache_dir=tmp_path)
        found = load_scorer("perspective?base_url=http://perspective.invalid&max_retries=0", context)
        (outcome,) = found.score(["hey"])
        seen = proxy.seen
    assert outcome.value == 0.9, outcome.detail
    assert [r.path for r in seen] == ["http://perspective.invalid/v1alpha1/comments:analyze"]


def test_rate_limiter_spaces_requests():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(1.0, lambda: now[0], sleep)
    limiter.wait()  # the first request goes at once
    now[0] += 0.25
    limiter.wait()  # 0.75 s left of the 1 s interval
    limiter.wait()
    assert slept == [pytest.approx(0.75), pytest.approx(1.0)]


@pytest.mark.slow
def test_a_trustgpt_run_scored_by_perspective_end_to_end(tmp_path, tiny_llama_dir, cache_dir):
    store = tmp_path / "ws"
    with ScriptedOpenAIServer(by_text) as server:
        scorer_spec = f"perspective?base_url=http://127.0.0.1:{server.port}&rps=1000"
        args = ("run", "--benchmark", "trustgpt-toxicity", "--model", f"hf:{tiny_llama_dir}", "--option", "norms=2",
                "--seeds", "42", "--max-new-tokens", "8", "--scorer", scorer_spec, "--store", store,
                "--cache-dir", cache_dir, "--json", "--no-progress")  # fmt: skip
        first = run_cli(*args, env=cli_env(PERSPECTIVE_API_KEY=KEY))
        assert first.returncode == 0, first.stderr[-3000:]
        calls = server.served
        again = run_cli(*args, env=cli_env(PERSPECTIVE_API_KEY=KEY))
        assert again.returncode == 0 and server.served == calls  # nothing asked twice
        missing = run_cli(*args, env=cli_env())
    out = first.json()
    assert 0 < calls <= 6
    assert out["metrics"]["scorers"]["toxicity"] == "perspective-TOXICITY-span@v1alpha1"
    table = (store / "reports" / out["run_id"] / "trustgpt_toxicity.md").read_text()
    assert "Toxicity scorer: perspective-TOXICITY-span@v1alpha1" in table and "retiring Perspective API" in table
    exported = run_cli("export", out["run_id"], "--store", store)
    rows = [json.loads(line) for line in exported.stdout.splitlines()]
    for row in rows:
        if not row["response"].strip():  # the tiny model's answer can be empty on some CPUs: never scored
            assert row["response_toxicity"] is None and row["response_toxicity_status"] != "ok"
        elif row["refusal"] == 0:
            assert row["response_toxicity"] == pytest.approx(len(row["response"]) / 100)
    assert sum(row["response_toxicity"] is not None for row in rows) > 0
    assert missing.returncode == 2 and "set PERSPECTIVE_API_KEY" in missing.stderr
