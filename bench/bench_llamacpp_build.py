"""SmolLM2 tokens/s through llama.cpp with its extra buffer types (weight repacking, AMX) off and on.

Usage: python bench/bench_llamacpp_build.py [--repeats 5] [--max-tokens 128] [--threads 2]

Both models are loaded the way the llamacpp backend loads them (`load_llama`), from the embedded GGUF, in one
process; the two settings alternate within each repeat (in alternating order) so machine noise falls on both.
Each measurement is a greedy completion of the same prompt from an empty cache. Prints one JSON line (with
llama.cpp's build and CPU features) and writes bench/results/llamacpp_build.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

from trusteval.models.embedded import embedded_gguf_path  # noqa: E402
from trusteval.models.llamacpp import load_llama  # noqa: E402

PROMPT = (
    "<|im_start|>user\nWrite a long story about a lighthouse keeper and a storm.<|im_end|>\n<|im_start|>assistant\n"
)


def measure(llama, max_tokens: int) -> tuple[float, int, float, str]:
    """(generated tokens/s, tokens, prompt-eval seconds, text) of one greedy completion from an empty cache."""
    llama.reset()
    started = time.perf_counter()
    first = None
    pieces = []
    stream = llama.create_completion(PROMPT, max_tokens=max_tokens, temperature=0.0, seed=0, stream=True)
    for chunk in stream:
        first = first or time.perf_counter()
        pieces.append(chunk["choices"][0]["text"])
    ended = time.perf_counter()
    text = "".join(pieces)
    tokens = len(llama.tokenize(text.encode(), add_bos=False, special=True))
    decode_s = max(ended - (first or started), 1e-9)
    return (tokens - 1) / decode_s, tokens, (first or ended) - started, text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import llama_cpp

    path = embedded_gguf_path()
    models = {
        mode: load_llama(path, n_ctx=512, n_threads=args.threads, extra_bufts=mode == "on") for mode in ("off", "on")
    }
    for llama in models.values():
        measure(llama, 8)  # warm-up: page the weights in
    rates: dict[str, list[float]] = {"off": [], "on": []}
    prompt_s: dict[str, list[float]] = {"off": [], "on": []}
    texts: dict[str, set[str]] = {"off": set(), "on": set()}
    for repeat in range(args.repeats):
        for mode in ("off", "on") if repeat % 2 == 0 else ("on", "off"):
            rate, _, first_s, text = measure(models[mode], args.max_tokens)
            rates[mode].append(rate)
            prompt_s[mode].append(first_s)
            texts[mode].add(text)
            print(f"repeat {repeat + 1}/{args.repeats} extra_bufts={mode}: {rate:.1f} tokens/s", file=sys.stderr)
    median = {mode: statistics.median(values) for mode, values in rates.items()}
    result = {
        "model": path.name,
        "llama_cpp_python": llama_cpp.__version__,
        "system_info": llama_cpp.llama_print_system_info().decode().strip(),
        "cpu": platform.processor() or platform.machine(),
        "threads": args.threads,
        "load_average_1min_at_end": round(os.getloadavg()[0], 1),
        "max_tokens": args.max_tokens,
        "repeats": args.repeats,
        "tokens_per_s_median": {mode: round(value, 1) for mode, value in median.items()},
        "tokens_per_s_all": {mode: [round(v, 1) for v in values] for mode, values in rates.items()},
        "time_to_first_token_s_median": {mode: round(statistics.median(v), 3) for mode, v in prompt_s.items()},
        "off_vs_on": round(median["off"] / median["on"], 3),
        "same_text_both_ways": texts["off"] == texts["on"] and len(texts["off"]) == 1,
    }
    out = REPO / "bench" / "results" / "llamacpp_build.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
