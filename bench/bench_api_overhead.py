"""Fixed cost of a 500-request API run beyond generation, through the real CLI.

Usage: python bench/bench_api_overhead.py [--requests 500] [--rounds 3] [--latency 0.1] [--baseline-src DIR]
[--profile DIR]

A fake OpenAI-compatible server (its own process; --latency seconds per request, default none) answers
`trusteval run --benchmark trusteval-toxicity` over a synthetic Chinese `file:` dataset of N prompts at
concurrency 32, scored by
cold-tfidf (trained once beforehand into a shared cache, so training is not in the figures). Each round runs a
fresh store, one child process per run, and reads the run's own stage times from the store: overhead = the
process's wall time - the generate stage; the first request's start is the earliest stored answer's time
minus its latency, after the process's start. With --baseline-src (a `src` folder of another checkout, e.g.
`git archive main src | tar -x -C /tmp/main`), each round also runs that code, alternating which goes first,
and the ratio is per round; so is the CPU time (user + sys) the baseline's process used beyond this one's,
which a loaded machine disturbs less than wall time. --profile DIR also writes `-X importtime` and cProfile
output of one run of this checkout. Writes bench/results/api_overhead.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests"), str(REPO / "bench")]

from bench_openai_concurrency import fixed_latency_server  # noqa: E402
from bench_scale import write_inputs  # noqa: E402
from trusteval.store import Store  # noqa: E402


def run_args(data: Path, url: str, store: Path, cache: Path) -> list[str]:
    return ["run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
            "--model", f"openai:bench?base_url={url}&concurrency=32", "--seeds", "42", "--store", str(store),
            "--cache-dir", str(cache), "--json", "--no-progress"]  # fmt: skip


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_run(src: Path, args: list[str], python_flags: tuple[str, ...] = ()) -> tuple[float, float, dict, str]:
    """Wall and CPU seconds (user + sys) of one `trusteval` process, its --json summary and its stderr."""
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "bench"}
    started, cpu_before = time.perf_counter(), children_cpu_s()
    done = subprocess.run(
        [sys.executable, *python_flags, "-m", "trusteval", *args], capture_output=True, text=True, env=env
    )
    wall, cpu = time.perf_counter() - started, children_cpu_s() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    return wall, cpu, json.loads(done.stdout), done.stderr


def stage_times(store: Path, run_id: str) -> dict[str, float]:
    opened = Store.open_read_only(store)
    try:
        return dict(opened.aggregate(run_id, "timings") or [])
    finally:
        opened.close()


def first_request_at(store: Path) -> float:
    """When the first request left (wall clock): the earliest answer stored minus its latency."""
    opened = Store.open_read_only(store)
    try:
        return opened.conn.execute("SELECT MIN(created_at - latency_s) FROM generations").fetchone()[0]
    finally:
        opened.close()


def measured(src: Path, data: Path, url: str, folder: Path, cache: Path) -> dict:
    store = Path(tempfile.mkdtemp(dir=folder))
    started = time.time()
    wall, cpu, summary, _ = one_run(src, run_args(data, url, store, cache))
    stages = stage_times(store, summary["run_id"])
    overhead = wall - stages["generate"]
    first = first_request_at(store) - started
    return {"wall_s": wall, "cpu_s": cpu, "generate_s": stages["generate"], "overhead_s": overhead,
            "first_request_s": first, **stages}  # fmt: skip


def profile(src: Path, data: Path, url: str, folder: Path, cache: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    store = Path(tempfile.mkdtemp(dir=folder))
    _, _, _, imports = one_run(src, run_args(data, url, store, cache), ("-X", "importtime"))
    (out / "importtime.txt").write_text(imports)
    flags = ("-m", "cProfile", "-o", str(out / "run.pstats"))
    env = {**os.environ, "PYTHONPATH": str(src), "OPENAI_API_KEY": "bench"}
    args = run_args(data, url, Path(tempfile.mkdtemp(dir=folder)), cache)
    subprocess.run([sys.executable, *flags, "-m", "trusteval", *args], capture_output=True, env=env, check=True)


def median_of(rows: list[dict], key: str) -> float:
    return round(statistics.median(row[key] for row in rows), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the fake server takes per request")
    parser.add_argument("--baseline-src", type=Path)
    parser.add_argument("--profile", type=Path)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="trusteval-overhead-"))
    try:
        measure_in(folder, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure_in(folder: Path, args: argparse.Namespace) -> None:
    data, _ = write_inputs(folder, args.requests)
    cache = folder / "cache"
    sources = {"this": REPO / "src"}
    if args.baseline_src:
        sources["baseline"] = args.baseline_src.resolve()
    load_before = os.getloadavg()[0]
    with fixed_latency_server(args.latency) as url:
        measured(sources["this"], data, url, folder, cache)  # trains cold-tfidf into the cache
        rounds = []
        for r in range(args.rounds):
            order = list(sources) if r % 2 == 0 else list(reversed(sources))
            rounds.append({name: measured(sources[name], data, url, folder, cache) for name in order})
        if args.profile:
            profile(sources["this"], data, url, folder, cache, args.profile)
    result: dict = {
        "bench": "api_overhead",
        "requests": args.requests,
        "rounds": args.rounds,
        "latency_s": args.latency,
    }
    result["load_average_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    for name in sources:
        rows = [r[name] for r in rounds]
        result[name] = {key: median_of(rows, key) for key in rows[0]}
        result[name]["per_round"] = [{k: round(row[k], 2) for k in ("wall_s", "cpu_s", "generate_s")} for row in rows]
    if "baseline" in sources:
        ratios = [r["baseline"]["overhead_s"] / r["this"]["overhead_s"] for r in rounds]
        result["overhead_baseline_over_this_per_round"] = [round(x, 2) for x in ratios]
        result["overhead_baseline_over_this_median"] = round(statistics.median(ratios), 2)
        saved = [r["baseline"]["cpu_s"] - r["this"]["cpu_s"] for r in rounds]
        result["cpu_saved_s_per_round"] = [round(x, 3) for x in saved]
    print(json.dumps(result))
    out = REPO / "bench" / "results" / "api_overhead.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
