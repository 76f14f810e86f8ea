"""Batched decoding of the `llamacpp` backend against a one-at-a-time llama-cpp-python loop.

Usage: python bench/bench_llamacpp_batch.py [--prompts 32] [--max-tokens 64] [--threads 2] [--batch 16]
       [--rounds 2] [--curve 1,2,4,8,16,32] [--temperature 0] [--seeds 1] [--no-share]

Whole process: each round starts one child process per side, alternating which goes first: a plain loop of
`Llama.create_chat_completion` over the prompts (the model loaded as the backend loads it, same threads), and
the backend's `BatchDecoder` at `--batch`. Each child reports its completion tokens, its generation seconds and
its texts; the parent times the whole process (interpreter start, imports, model load, generation, exit).
Ratios are per round. Then the curve: one child decodes the same prompts at each batch size of `--curve`
(two passes, the second in reverse order), tokens/s of the decoding itself. Greedy by default; the texts of
both sides are compared prompt by prompt. `--seeds N` asks each prompt under N seeds (42, 43, ...), side by side
as a run plans them: the batched side then shares each prompt's pass among its copies (`--no-share` turns that
off), and the plain loop reuses the previous request's cached prompt as llama-cpp-python does. Writes
bench/results/llamacpp_batch.json.
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


def requests(n: int, max_tokens: int, temperature: float, seeds: int = 1) -> list:
    from trusteval.records import GenerationParams, Request

    params = GenerationParams(temperature=temperature, top_p=0.9, max_new_tokens=max_tokens)
    return [Request.build("bench", (("user", text),), params, 42 + s) for text in prompts(n) for s in range(seeds)]


def child(args: argparse.Namespace) -> None:
    """One side, in this process: print {tokens, gen_s, texts} (or the curve) as one JSON line."""
    from trusteval.models.embedded import embedded_gguf_path
    from trusteval.models.llamacpp import load_llama
    from trusteval.models.llamacpp_batch import BatchDecoder

    batch = requests(args.prompts, args.max_tokens, args.temperature, args.seeds)
    llama = load_llama(embedded_gguf_path(), n_ctx=512 if args.side == "batched" else 2048, n_threads=args.threads)
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
    if args.side == "curve":
        print(json.dumps(curve(args, llama, batch)))
        return
    decoder = BatchDecoder(llama, parallel=args.batch, n_ctx_seq=2048, n_threads=args.threads, share_prompts=args.share)
    started = time.perf_counter()
    gens = decoder.run(batch)
    gen_s = time.perf_counter() - started
    tokens = sum(g.completion_tokens or 0 for g in gens)
    print(json.dumps({"tokens": tokens, "gen_s": gen_s, "texts": [g.text for g in gens],
                      "decoded_tokens": decoder.decoded_tokens}))  # fmt: skip


def timed_decoder(llama: object, parallel: int, threads: int) -> object:
    """A BatchDecoder that times its forward passes that carry no prompt token (with the sampling after them):
    the decoding alone, as llama-batched-bench's S_TG."""
    from trusteval.models.llamacpp_batch import BatchDecoder

    class Timed(BatchDecoder):
        def _step(self, active):  # type: ignore[no-untyped-def]
            now = time.perf_counter()
            if self.last is not None:  # the previous pass, its sampling and bookkeeping
                self.passes.append((now - self.last[0], *self.last[1:]))
            decoding = sum(s.decoding for s in active)
            self.last = (now, decoding, any(s.prefilling for s in active))
            return super()._step(active)

    decoder = Timed(llama, parallel=parallel, n_ctx_seq=2048, n_threads=threads)
    decoder.passes, decoder.last = [], None  # type: ignore[attr-defined]
    return decoder


def curve(args: argparse.Namespace, llama: object, batch: list) -> dict:
    """New tokens per second at each batch size of --curve and of the plain loop, all in this process, in two
    passes (the second in reverse order): whole (prompts included) and decoding alone (passes without prompt)."""
    sizes = [int(s) for s in args.curve.split(",")]
    whole: dict[str, list[float]] = {str(b): [] for b in ["plain", *sizes]}
    per_cpu_s: dict[str, list[float]] = {str(b): [] for b in ["plain", *sizes]}
    decode: dict[str, list[float]] = {str(b): [] for b in sizes}
    for order in (["plain", *sizes], [*sizes[::-1], "plain"]):
        for b in order:
            cpu = time.process_time()
            if b == "plain":
                started = time.perf_counter()
                tokens = sum(plain_answer(llama, r)["usage"]["completion_tokens"] for r in batch)
                whole["plain"].append(tokens / (time.perf_counter() - started))
                per_cpu_s["plain"].append(tokens / (time.process_time() - cpu))
                continue
            decoder = timed_decoder(llama, b, args.threads)
            started = time.perf_counter()
            gens = decoder.run(batch)  # type: ignore[attr-defined]
            ended = time.perf_counter()
            per_cpu_s[str(b)].append(sum(g.completion_tokens or 0 for g in gens) / (time.process_time() - cpu))
            decoder.passes.append((ended - decoder.last[0], *decoder.last[1:]))  # type: ignore[attr-defined]
            whole[str(b)].append(sum(g.completion_tokens or 0 for g in gens) / (ended - started))
            pure = [(s, n) for s, n, prompt in decoder.passes if not prompt]  # type: ignore[attr-defined]
            decode[str(b)].append(sum(n for _, n in pure) / max(sum(s for s, _ in pure), 1e-9))
            decoder.close()  # type: ignore[attr-defined]
    from trusteval.models.llamacpp_batch import completion_args

    prompt_tokens = [len(completion_args(llama, r).prompt) for r in batch]
    return {
        "whole": whole,
        "per_cpu_s": per_cpu_s,
        "decode": decode,
        "mean_prompt_tokens": statistics.mean(prompt_tokens),
    }


def plain_answer(llama: object, r: object) -> dict:
    return llama.create_chat_completion(  # type: ignore[attr-defined]
        messages=r.chat(), temperature=r.params.temperature, top_p=r.params.top_p,  # type: ignore[attr-defined]
        max_tokens=r.params.max_new_tokens, seed=r.seed,  # type: ignore[attr-defined]
    )  # fmt: skip


def run_child(args: argparse.Namespace, side: str) -> tuple[float, dict]:
    cmd = [sys.executable, __file__, "--child", side, "--prompts", str(args.prompts), "--max-tokens",
           str(args.max_tokens), "--threads", str(args.threads), "--batch", str(args.batch), "--curve", args.curve,
           "--temperature", str(args.temperature), "--seeds", str(args.seeds)]  # fmt: skip
    if not args.share:
        cmd.append("--no-share")
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{side} failed: {done.stderr[-2000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def llama_batched_bench(args: argparse.Namespace, prompt_tokens: int) -> list[dict]:
    """llama.cpp's own batched decoding on the same model, threads and sizes: each of B sequences gets a prompt
    of the curve's mean prompt length and --max-tokens new tokens (no sampling, no end), flash attention off as
    in the backend's context. One JSON object per batch size, as the binary prints it, one process per size
    (its CPU seconds, model load included, in `cpu_s`), the sizes in order then in reverse."""
    from trusteval.models.embedded import embedded_gguf_path

    sizes = [int(b) for b in args.curve.split(",")]
    rows = []
    for size in [*sizes, *sizes[::-1]]:
        n_ctx = size * (prompt_tokens + args.max_tokens) + 64
        cmd = [args.anchor, "-m", str(embedded_gguf_path()), "-c", str(n_ctx), "-b", "2048", "-ub", "512",
               "-npp", str(prompt_tokens), "-ntg", str(args.max_tokens), "-npl", str(size), "-t", str(args.threads),
               "-tb", str(args.threads), "-fa", "off", "--output-format", "jsonl"]  # fmt: skip
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, capture_output=True, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise SystemExit(f"llama-batched-bench failed: {done.stderr[-2000:]}")
        row = next(json.loads(line) for line in (done.stdout + done.stderr).splitlines() if line.startswith("{"))
        row["new_tokens_per_s"] = row["pl"] * row["tg"] / row["t"]  # prompts included, as the curve's "whole"
        row["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        row["new_tokens_per_cpu_s"] = row["pl"] * row["tg"] / row["cpu_s"]
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--curve", default="1,2,4,8,16,32")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--anchor", default=None, help="a llama-batched-bench binary: run it on the same model")
    parser.add_argument("--seeds", type=int, default=1, help="each prompt under this many seeds, side by side")
    parser.add_argument("--no-share", dest="share", action="store_false", help="each copy of a prompt computes it")
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
            "batched_decoded_tokens": batched.get("decoded_tokens"),
        })  # fmt: skip
        print(json.dumps(rounds[-1]), file=sys.stderr)
    curve = run_child(args, "curve")[1] if args.curve else None
    anchor = llama_batched_bench(args, round(curve["mean_prompt_tokens"])) if curve and args.anchor else None
    result = {
        "threads": args.threads, "prompts": args.prompts, "max_tokens": args.max_tokens, "batch": args.batch,
        "temperature": args.temperature, "seeds": args.seeds, "share": args.share, "rounds": rounds,
        "process_ratio_median": statistics.median(r["process_ratio"] for r in rounds) if rounds else None,
        "decode_ratio_median": statistics.median(r["decode_ratio"] for r in rounds) if rounds else None,
        "curve_tokens_per_s": curve, "llama_batched_bench": anchor, "load_average_at_end": round(os.getloadavg()[0], 1),
    }  # fmt: skip
    out = REPO / "bench" / "results" / "llamacpp_batch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
