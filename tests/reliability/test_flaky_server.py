"""1,000 requests through the real CLI against a server that faults 30% of the time: nothing lost.

The server's own log of attempts is the truth the store and the CLI's JSON are checked against: every request
is answered once or recorded as failed with the reason of its last fault, attempts never exceed
max_retries + 1, the reported `retries` equals the attempts beyond the first, and the next run sends exactly
the requests that failed for good.
"""

from __future__ import annotations

import pytest
from fault_server import FAULT_REASONS, FAULTS, FaultConfig, FaultyOpenAIServer, attempts_by_request, request_identity
from store_checks import duplicates, integrity, query, scalar, unanswered_without_reason

from helpers import run_cli

pytestmark = pytest.mark.slow

REQUESTS = 1000
MAX_RETRIES = 2
TIMEOUT_S = 2.0


def _run_args(server: FaultyOpenAIServer, store, cache_dir) -> tuple:
    model = f"openai:faulty?base_url={server.base_url}&backoff_base=0.01&backoff_max=0.05&concurrency=32"
    return ("run", "--benchmark", "trusteval-toxicity", "--limit", str(REQUESTS), "--seeds", "42",
            "--model", model, "--timeout", str(TIMEOUT_S), "--max-retries", str(MAX_RETRIES),
            "--resamples", "100", "--store", store, "--cache-dir", cache_dir, "--json", "--no-progress")  # fmt: skip


def _identities(store, run_id: str) -> dict[str, str]:
    """Request key -> the server's identity of that request."""
    rows = query(
        store,
        "SELECT r.key, r.messages, r.seed FROM requests r JOIN run_items i ON i.request_key = r.key WHERE i.run_id = ?",
        run_id,
    )
    return {key: request_identity(messages, seed) for key, messages, seed in rows}


def _last_failure(store) -> dict[str, str]:
    return {key: error for key, error in query(store, "SELECT key, error FROM generation_failures ORDER BY id")}


def test_a_thousand_requests_at_a_30_percent_fault_rate_lose_nothing(tmp_path, cache_dir, figures):
    store = tmp_path / "ws"
    with FaultyOpenAIServer(FaultConfig(rate=0.3, seed=5, stall_s=2.5 * TIMEOUT_S)) as server:
        first = run_cli(*_run_args(server, store, cache_dir), timeout=600)
        assert first.returncode in (0, 3), first.stderr[-3000:]
        out = first.json()
        assert first.returncode == (3 if out["failed"] else 0), "an incomplete run exits 3"
        first_attempts = list(server.attempts)
        generated = {key for (key,) in query(store, "SELECT key FROM generations")}
        failures = _last_failure(store)
        lost = unanswered_without_reason(store, out["run_id"])
        server.config.rate = 0.0
        second = run_cli(*_run_args(server, store, cache_dir), timeout=600)
        assert second.returncode == 0, second.stderr[-3000:]
        again = second.json()
        second_attempts = server.attempts[len(first_attempts) :]

    run_id = out["run_id"]
    keys = _identities(store, run_id)
    assert out["requests"] == REQUESTS and len(keys) == len(set(keys.values()))
    by_request = attempts_by_request(first_attempts)
    assert set(by_request) == set(keys.values()), "every planned request reached the server"

    # Bounded retries, and the reported count is the server's count of attempts beyond the first.
    assert max(len(s.faults) for s in by_request.values()) <= MAX_RETRIES + 1
    assert out["retries"] == len(first_attempts) - len(by_request)
    assert all(s.answered <= 1 for s in by_request.values()), "no request answered twice"

    # Every request answered, or failed with the reason of its last fault.
    for key, identity in keys.items():
        faults = by_request[identity].faults
        if faults[-1] is None:
            assert key in generated
        else:
            assert key not in generated and len(faults) == MAX_RETRIES + 1
            assert FAULT_REASONS[faults[-1]] in failures[key], (faults, failures[key])
    assert (out["generated"], out["failed"]) == (len(generated), len(keys) - len(generated))
    assert out["failed"] > 0, "the fault plan should leave some requests failed for good"
    assert lost == 0

    # The next run sends exactly the requests that failed, and nothing else.
    assert (again["generated"], again["reused"], again["failed"]) == (out["failed"], out["generated"], 0)
    assert len(second_attempts) == out["failed"]
    assert {a.identity for a in second_attempts} == {keys[k] for k in failures}
    # One row per distinct request: two COLD comments with the same text are one request.
    assert scalar(store, "SELECT COUNT(*) FROM generations") == len(keys)
    assert duplicates(store) == {"generations": 0, "scores": 0, "run_items": 0, "requests": 0}
    assert integrity(store) == "ok"
    assert scalar(store, "SELECT status FROM runs WHERE run_id = ?", run_id) == "complete"

    faults = server.fault_counts()
    assert set(faults) == set(FAULTS), "every kind of fault was injected"
    figures["flaky_server"] = {
        "requests": REQUESTS,
        "fault_rate": 0.3,
        "max_retries": MAX_RETRIES,
        "timeout_s": TIMEOUT_S,
        "http_requests_sent": len(first_attempts) + len(second_attempts),
        "faults_injected": sum(faults.values()),
        "faults_by_kind": dict(sorted(faults.items())),
        "retries_reported": out["retries"],
        "failed_for_good_first_run": out["failed"],
        "generated_by_second_run": again["generated"],
        "requests_lost": lost + unanswered_without_reason(store, run_id),
        "duplicates": sum(duplicates(store).values()),
    }
