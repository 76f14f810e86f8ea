"""Batched decoding of the `llamacpp` backend against a one-at-a-time llama-cpp-python loop.

Usage: python bench/bench_llamacpp_batch.py [--prompts 32] [--max-tokens 64] [--threads 2] [--batch 16]
       [--rounds 2] [--curve 1,2,4,8,16,32] [--temperature 0]

Whole process: each round starts one child process per side, alternating which goes first: a plain loop of
`Llama.create_chat_completion` over the prompts (the model loaded as the backend loads it, same threads), and
the backend's `BatchDecoder` at `--batch`. Each child reports its completion tokens, its generation seconds and
its texts; the parent times the whole process (interpreter start, imports, model load, generation, exit).
Ratios are per round. Then the curve: one child decodes the same prompts at each batch size of `--curve`
(two passes, the second in reverse order), tokens/s of the decoding itself. Greedy by default; the texts of
both sides are compared prompt by prompt. Writes bench/results/llamacpp_batch.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

TOPICS = [
    "the ocean", "a bicycle", "friendship", "winter", "a library", "coffee", "mountains", "a lost key",
    "rain in the city", "a robot", "gardening", "the moon", "trains", "a birthday", "music", "a small dog",
    "homework", "the desert", "a bakery", "fireworks", "chess", "a lighthouse", "autumn leaves", "a market",
    "an old photograph", "the river", "a thunderstorm", "a school bus", "honey bees", "a museum", "snow", "kites",
]  # fmt: skip
ASKS = ["Write a short paragraph about {}.", "Describe {} to a child.", "What do people like about {}?"]


def prompts(n: int) -> list[str]:
    return [ASKS[i % len(ASKS)].format(TOPICS[i % len(TOPICS)]) for i in range(n)]


def requests(n: int, max_tokens: int, temperature: float) -> list:
    from trusteval.records import GenerationParams, Request

    params = GenerationParams(temperature=temperature, top_p=0.9, max_new_tokens=max_tokens)
    return [Request.build("bench", (("user", text),), params, 42) for text in prompts(n)]


def child(args: argparse.Namespace) -> None:
    """One side, in this process: print {tokens, gen_s, texts} (or the curve) as one JSON line."""
    from trusteval.models.embedded import embedded_gguf_path
    from trusteval.models.llamacpp import load_llama
    from trusteval.models.llamacpp_batch import BatchDecoder

    batch = requests(args.prompts, args.max_tokens, args.temperature)
    llama = load_llama(embedded_gguf_path(), n_ctx=512 if args.side != "plain" else 2048, n_threads=args.threads)
    if args.side == "plain":
        started = time.perf_counter()
        outs = [
            llama.create_chat_completion(messages=r.chat(), temperature=r.params.temperature, top_p=r.params.top_p,
                                         max_tokens=r.params.max_new_tokens, seed=r.seed)
            for r in batch
        ]  # fmt: skip
        gen_s = time.perf_counter() - started
        texts = [o["choices"][0]["message"]["content"] for o in outs]
        tokens = sum(o["usage"]["completion_tokens"] for o in outs)
        print(json.dumps({"tokens": tokens, "gen_s": gen_s, "texts": texts}))
        return
    sizes = [int(s) for s in args.curve.split(",")] if args.side == "curve" else [args.batch]
    decoders = {b: BatchDecoder(llama, parallel=b, n_ctx_seq=2048, n_threads=args.threads) for b in sizes}
    rates: dict[int, list[float]] = {b: [] for b in sizes}
    for order in (sizes, sizes[::-1]) if args.side == "curve" else (sizes,):
        for b in order:
            started = time.perf_counter()
            gens = decoders[b].run(batch)
            gen_s = time.perf_counter() - started
            tokens = sum(g.completion_tokens or 0 for g in gens)
            rates[b].append(tokens / gen_s)
    if args.side == "curve":
        print(json.dumps({"rates": {b: max(v) for b, v in rates.items()}, "all": rates}))
    else:
        print(json.dumps({"tokens": tokens, "gen_s": gen_s, "texts": [g.text for g in gens]}))


def run_child(args: argparse.Namespace, side: str) -> tuple[float, dict]:
    cmd = [sys.executable, __file__, "--child", side, "--prompts", str(args.prompts), "--max-tokens",
           str(args.max_tokens), "--threads", str(args.threads), "--batch", str(args.batch), "--curve", args.curve,
           "--temperature", str(args.temperature)]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{side} failed: {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--curve", default="1,2,4,8,16,32")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--child", dest="side", default=None)
    args = parser.parse_args()
    if args.side:
        child(args)
        return
    rounds = []
    for index in range(args.rounds):
        sides = ("plain", "batched") if index % 2 == 0 else ("batched", "plain")
        result = {side: run_child(args, side) for side in sides}
        (plain_wall, plain), (batched_wall, batched) = result["plain"], result["batched"]
        process = {"plain": plain["tokens"] / plain_wall, "batched": batched["tokens"] / batched_wall}
        decode = {"plain": plain["tokens"] / plain["gen_s"], "batched": batched["tokens"] / batched["gen_s"]}
        same = sum(a == b for a, b in zip(plain["texts"], batched["texts"], strict=True))
        rounds.append({
            "load_average": round(os.getloadavg()[0], 1),
            "process_tokens_per_s": process,
            "decode_tokens_per_s": decode,
            "process_ratio": process["batched"] / process["plain"],
            "decode_ratio": decode["batched"] / decode["plain"],
            "identical_texts": f"{same}/{len(plain['texts'])}",
            "tokens": {"plain": plain["tokens"], "batched": batched["tokens"]},
        })  # fmt: skip
        print(json.dumps(rounds[-1]), file=sys.stderr)
    curve = run_child(args, "curve")[1] if args.curve else None
    result = {
        "threads": args.threads, "prompts": args.prompts, "max_tokens": args.max_tokens, "batch": args.batch,
        "temperature": args.temperature, "rounds": rounds,
        "process_ratio_median": statistics.median(r["process_ratio"] for r in rounds) if rounds else None,
        "decode_ratio_median": statistics.median(r["decode_ratio"] for r in rounds) if rounds else None,
        "curve_tokens_per_s": curve, "load_average_at_end": round(os.getloadavg()[0], 1),
    }  # fmt: skip
    out = REPO / "bench" / "results" / "llamacpp_batch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
