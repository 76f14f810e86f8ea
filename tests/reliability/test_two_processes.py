"""Two `trusteval run` processes on one store at the same moment: no lock error reaches the user, no row is
lost or doubled."""

from __future__ import annotations

import subprocess

import pytest
from fault_server import FaultConfig, FaultyOpenAIServer
from store_checks import duplicates, integrity, query, scalar

from helpers import CliResult, cli_command, cli_env

pytestmark = pytest.mark.slow


def _run_together(*arg_lists: tuple) -> list[CliResult]:
    processes = [
        subprocess.Popen(cli_command(*args), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for args in arg_lists
    ]
    results = []
    for process in processes:
        stdout, stderr = process.communicate(timeout=600)
        results.append(CliResult(process.returncode, stdout, stderr))
    return results


def _items_without_answer(store) -> int:
    return scalar(
        store,
        "SELECT COUNT(*) FROM run_items i WHERE NOT EXISTS (SELECT 1 FROM generations g WHERE g.key = i.request_key)",
    )


@pytest.mark.parametrize(
    ("first_seeds", "second_seeds"),
    [("42,43", "42,43"), ("42", "42,43")],
    ids=["identical-specs", "overlapping-specs"],
)
def test_two_runs_started_at_once_on_one_new_store(tmp_path, cache_dir, figures, first_seeds, second_seeds):
    store = tmp_path / "ws"
    with FaultyOpenAIServer(FaultConfig(latency_s=0.005)) as server:
        model = f"openai:shared?base_url={server.base_url}&concurrency=8"

        def args(seeds: str) -> tuple:
            return ("run", "--benchmark", "trusteval-toxicity", "--limit", "150", "--seeds", seeds,
                    "--model", model, "--resamples", "100", "--store", store, "--cache-dir", cache_dir,
                    "--json", "--no-progress")  # fmt: skip

        results = _run_together(args(first_seeds), args(second_seeds))

    for result in results:
        assert result.returncode == 0, result.stderr[-3000:]
        assert "locked" not in result.stderr.lower() and "Traceback" not in result.stderr
    outs = [r.json() for r in results]
    union = scalar(store, "SELECT COUNT(DISTINCT request_key) FROM run_items")
    assert union == 300
    for out in outs:
        assert out["failed"] == 0 and out["generated"] + out["reused"] == out["requests"]
    assert sum(out["generated"] for out in outs) == union, "each request is paid for once (leases)"
    assert len(server.attempts) == union
    assert scalar(store, "SELECT COUNT(*) FROM generations") == union
    assert _items_without_answer(store) == 0
    assert duplicates(store) == {"generations": 0, "scores": 0, "run_items": 0, "requests": 0}
    assert {status for (status,) in query(store, "SELECT status FROM runs")} == {"complete"}
    assert integrity(store) == "ok"
    if first_seeds == second_seeds:
        assert outs[0]["metrics"] == outs[1]["metrics"]
    figures.setdefault("two_processes", {})[f"{first_seeds} + {second_seeds}"] = {
        "exit_codes": [r.returncode for r in results],
        "lock_errors_shown": 0,
        "requests": union,
        "generated_by_each": [o["generated"] for o in outs],
        "rows_lost": _items_without_answer(store),
        "duplicates": sum(duplicates(store).values()),
    }
