"""Thread counts for the `llamacpp` backend, alone and beside busy processes.

Usage: python bench/bench_llamacpp_threads.py [--threads 1,2,default] [--busy 0,2] [--batch 16] [--prompts 16]
       [--max-tokens 32] [--rounds 2]

For each number of busy processes (`python -c 'while True: pass'`, started by the script and stopped after),
each round runs one child process per thread count, alternating the order, that decodes the prompts of
bench_llamacpp_batch.py with the backend's `BatchDecoder` (`--batch 1`: a plain `create_chat_completion`
loop) and reports completion tokens per second of the decoding, the thread counts used, and the user and
system CPU seconds of the child. `default` is the backend's default: `ThreadChooser` sampled while the model
loads, then followed between forward passes. Each measurement records the 1-minute load average after it.
Writes bench/results/llamacpp_threads.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "bench")]


def child(threads: str, batch: int, prompts: int, max_tokens: int) -> None:
    from bench_llamacpp_batch import requests
    from trusteval.models.embedded import embedded_gguf_path
    from trusteval.models.llamacpp import load_llama
    from trusteval.models.llamacpp_batch import BatchDecoder
    from trusteval.models.llamacpp_threads import ThreadChooser

    todo = requests(prompts, max_tokens, 0.0)
    chooser = ThreadChooser().start() if threads == "default" else None
    count = chooser.cores if chooser else int(threads)
    llama = load_llama(embedded_gguf_path(), n_ctx=1024, n_threads=count)
    if chooser:
        count = chooser.initial()
        llama._ctx.set_n_threads(count, count)
    used = [count]
    started = time.perf_counter()
    if batch == 1:
        tokens = 0
        for r in todo:
            out = llama.create_chat_completion(messages=r.chat(), temperature=0.0, max_tokens=max_tokens)
            tokens += out["usage"]["completion_tokens"]
            if chooser and (changed := chooser.follow()) is not None:
                llama._ctx.set_n_threads(changed, changed)
                used.append(changed)
    else:
        decoder = BatchDecoder(llama, parallel=batch, n_ctx_seq=1024, n_threads=count, chooser=chooser)
        follow = decoder._follow_threads

        def noted() -> None:
            follow()
            if decoder.n_threads != used[-1]:
                used.append(decoder.n_threads)

        decoder._follow_threads = noted  # type: ignore[method-assign]
        tokens = sum(g.completion_tokens or 0 for g in decoder.run(todo))
    print(json.dumps({"tokens_per_s": tokens / (time.perf_counter() - started), "threads_used": used}))


def measure(args: argparse.Namespace, threads: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, __file__, "--child", threads, "--batch", str(args.batch), "--prompts", str(args.prompts),
         "--max-tokens", str(args.max_tokens)],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["load_average"] = round(os.getloadavg()[0], 2)
    result["user_s"] = round(after.ru_utime - before.ru_utime, 2)
    result["sys_s"] = round(after.ru_stime - before.ru_stime, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", default="1,2,default")
    parser.add_argument("--busy", default="0,2")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", default=None)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.batch, args.prompts, args.max_tokens)
        return
    counts = args.threads.split(",")
    results = {}
    for busy in [int(b) for b in args.busy.split(",")]:
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            runs: dict[str, list[dict]] = {t: [] for t in counts}
            for index in range(args.rounds):
                for threads in counts if index % 2 == 0 else counts[::-1]:
                    runs[threads].append(measure(args, threads))
                    print(busy, threads, runs[threads][-1], file=sys.stderr)
        finally:
            for hog in hogs:
                hog.terminate()
                hog.wait()
        median = {t: round(statistics.median(r["tokens_per_s"] for r in v), 1) for t, v in runs.items()}
        results[f"busy={busy}"] = {f"threads={t}": {"tokens_per_s_median": median[t], "runs": runs[t]} for t in counts}
    result = {"batch": args.batch, "prompts": args.prompts, "max_tokens": args.max_tokens, "results": results,
              "load_average_at_end": round(os.getloadavg()[0], 1)}  # fmt: skip
    out = REPO / "bench" / "results" / "llamacpp_threads.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
