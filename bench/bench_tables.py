"""How long every paper table takes from a large store (target: under 5 s for 300,000 scored rows).

A synthetic store is built through the Store's own methods (begin_run, add_generations, add_scores): 11
models x 3 datasets x 3 seeds x ~3,031 prompts = 300,000 scored responses (plus the prompts' scores), each
dataset with a trusteval-toxicity run and a trusteval-bias run over the same requests. Then, in the same
process:

- `tables`: report.collect.build_tables over the whole store (Tables 5-8, the seed tables, Kendall's tau,
  pairwise z-tests), wall and CPU seconds (the CPU time is the work done when other processes share the
  cores; the load average is recorded), and its read alone;
- baseline `per_run_report`: the same tables the existing way, report.results.run_results for each run (RunItems built
  row by row, scores fetched by subject in chunks of 900);
- `bootstrap`: Table 6's 33 TT intervals with the vectorised bootstrap against a per-resample Python loop.

    PYTHONPATH=src python bench/bench_tables.py [--prompts 3031 --resamples 1000]

Prints one JSON line and writes bench/results/tables.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from trusteval.config import RunSpec  # noqa: E402
from trusteval.metrics.stats import bootstrap_mean, per_prompt_means  # noqa: E402
from trusteval.records import Generation, GenerationParams, Prompt, Request, Score, text_subject  # noqa: E402
from trusteval.report import collect  # noqa: E402
from trusteval.report.bulk_read import BulkLookup  # noqa: E402
from trusteval.report.results import run_results  # noqa: E402
from trusteval.store import Store  # noqa: E402

TARGET_S = 5.0
RESULTS = REPO / "bench" / "results" / "tables.json"
SCORER = "cold-tfidf@2"
DATASETS = {
    "cold": ("gender", "race", "region"),
    "hatexplain": ("gender", "race", "religion", "sexual_orientation", "other"),
    "toxicspans": ("insult", "obscenity", "other"),
}
MODELS = [f"hf:org/model-{i}" for i in range(11)]
SEEDS = [42, 43, 44]


def build_store(folder: Path, prompts_per_dataset: int, rng: np.random.Generator) -> dict[str, int]:
    store = Store.open(folder)
    store.register_scorer(SCORER, {"scorer": SCORER})
    params = GenerationParams()
    rows = 0
    for dataset, classes in DATASETS.items():
        prompts = [
            Prompt(f"{dataset}:{i}", dataset, f"{dataset} prompt {i}", "zh", int(rng.random() < 0.5),
                   classes[i % len(classes)])
            for i in range(prompts_per_dataset)
        ]  # fmt: skip
        prompt_scores = rng.beta(2, 3, len(prompts))
        pairs = zip(prompts, prompt_scores, strict=True)
        store.add_scores(Score(text_subject(p.text), SCORER, float(v)) for p, v in pairs)
        items, generations, scores = [], [], []
        for m, model in enumerate(MODELS):
            bias = {c: 0.05 * m / len(MODELS) + 0.03 * k for k, c in enumerate(classes)}
            for seed in SEEDS:
                for p, prompt_score in zip(prompts, prompt_scores, strict=True):
                    request = Request.build(model, (("user", p.text),), params, seed)
                    items.append((request, model, p, {}))
                    text = f"{model} answers {p.id} with seed {seed}"
                    generations.append(Generation(request.key, text))
                    toxic = rng.random() < 0.1 + 0.4 * prompt_score + bias[p.category]
                    scores.append(Score(text_subject(text), SCORER, float(0.5 + 0.4 * toxic - 0.2 * rng.random())))
        for benchmark in ("trusteval-toxicity", "trusteval-bias"):
            spec = RunSpec(benchmark=benchmark, models=MODELS, dataset=dataset, seeds=SEEDS, store=str(folder))
            store.begin_run(spec.run_id, benchmark=benchmark, dataset=dataset, spec=spec.model_dump(),
                            prompts=prompts, items=items)  # fmt: skip
            store.put_aggregate(spec.run_id, "tasks", {"prompt_toxicity": SCORER, "response_toxicity": SCORER})
            store.finish_run(spec.run_id, "complete")
        store.add_generations(generations)
        store.add_scores(scores)
        rows += len(scores)
    counts = {"scored_responses": rows, "scores": store.count("scores"), "run_items": store.count("run_items")}
    store.close()
    return counts


def time_tables(folder: Path, resamples: int) -> dict:
    """Wall and CPU seconds of build_tables (CPU time shows the work when other processes share the cores),
    and of its read alone."""
    store = Store.open(folder)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        bulk = BulkLookup(store)
        for group in collect.group_runs(collect.find_runs(store)):
            for run in group.runs:
                collect.read_pairs(store, run, list(group.models), bulk)
        read_s, read_cpu_s = time.perf_counter() - started, time.process_time() - cpu
        started, cpu = time.perf_counter(), time.process_time()
        tables = collect.build_tables(store, resamples=resamples).tables
        total_s, total_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    finally:
        store.close()
    return {"elapsed_s": round(total_s, 3), "cpu_s": round(total_cpu_s, 3), "read_s": round(read_s, 3),
            "read_cpu_s": round(read_cpu_s, 3), "tables": len(tables)}  # fmt: skip


def time_per_run_report(folder: Path) -> dict:
    store = Store.open(folder)
    try:
        started, cpu = time.perf_counter(), time.process_time()
        tables = [t for run in store.runs() for t in run_results(store, run["run_id"]).tables]
        return {"elapsed_s": round(time.perf_counter() - started, 3), "cpu_s": round(time.process_time() - cpu, 3),
                "tables": len(tables)}  # fmt: skip
    finally:
        store.close()


def loop_bootstrap_mean(values: np.ndarray, resamples: int, rng: np.random.Generator) -> tuple[float, float]:
    means = [values[rng.integers(0, len(values), len(values))].mean() for _ in range(resamples)]
    return tuple(np.percentile(means, [2.5, 97.5]))


def time_bootstrap(folder: Path, resamples: int) -> dict:
    """Table 6 (TT interval per model and dataset) with the vectorised and with a loop bootstrap."""
    store = Store.open(folder)
    try:
        per_prompt = []
        for run in collect.find_runs(store, benchmark="trusteval-toxicity"):
            pairs, _ = collect.read_pairs(store, run, run.spec.models)
            for found in pairs.values():
                toxic = found.pairs.response_toxic.astype(float)[:, None]
                per_prompt.append(per_prompt_means(found.pairs.prompt_ids, toxic)[:, 0])
    finally:
        store.close()
    started = time.perf_counter()
    fast = [bootstrap_mean(v, resamples=resamples) for v in per_prompt]
    fast_s = time.perf_counter() - started
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    slow = [loop_bootstrap_mean(v, resamples, rng) for v in per_prompt]
    loop_s = time.perf_counter() - started
    widest_gap = max(max(abs(f.low - s[0]), abs(f.high - s[1])) for f, s in zip(fast, slow, strict=True))
    return {"intervals": len(per_prompt), "vectorised_s": round(fast_s, 4), "loop_s": round(loop_s, 3),
            "speedup": round(loop_s / fast_s, 1), "max_interval_gap": round(float(widest_gap), 4)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=3031, help="prompts per dataset (3031: 300k rows)")
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ws"
        started = time.perf_counter()
        counts = build_store(folder, args.prompts, np.random.default_rng(0))
        build_s = time.perf_counter() - started
        tables = time_tables(folder, args.resamples)
        baseline = time_per_run_report(folder)
        bootstrap = time_bootstrap(folder, args.resamples)
    result = {
        "store": {**counts, "models": len(MODELS), "datasets": len(DATASETS), "seeds": len(SEEDS),
                  "build_s": round(build_s, 1)},
        "tables": {**tables, "target_s": TARGET_S, "under_target": tables["elapsed_s"] < TARGET_S},
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "baseline_per_run_report": {**baseline, "ratio": round(baseline["elapsed_s"] / tables["elapsed_s"], 2),
                                    "cpu_ratio": round(baseline["cpu_s"] / tables["cpu_s"], 2)},
        "bootstrap_table6": bootstrap,
        "resamples": args.resamples,
    }  # fmt: skip
    print(json.dumps(result))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
