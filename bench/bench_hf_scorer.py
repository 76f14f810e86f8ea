"""The hf classifier scorer: length-sorted batches against arrival-order batches, and both against the FLOP limit.

Usage: python bench/bench_hf_scorer.py [--model DIR] [--texts 256] [--batch-size 32] [--repeats 2]

Without --model it builds a randomly initialised classifier of roberta-base's shape (12 layers, hidden 768,
about 85 M non-embedding parameters; weights do not change the arithmetic) with the test fixtures' offline
tokenizer, and scores real COLD test comments from TRUSTEVAL_DATA_DIR. Reported, all from the same run:
- texts/s for the scorer as shipped (sorted by token length) and for the old arrival-order batching;
- padded tokens per real token for each;
- the FLOP-limit fraction: texts/s divided by (matmul rate / (2 x non-embedding parameters x real tokens per
  text)), with the matmul rate measured on this machine, in this run, on the model's own layer shapes;
- the largest score difference between the two orders (must be under 1e-5).
Writes bench/results/hf_scorer.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from trusteval.scorers import ScorerContext, load_scorer  # noqa: E402


def base_size_classifier() -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from fixtures.tiny_models import _save, build_wordpiece_tokenizer

    tokenizer = build_wordpiece_tokenizer()
    config = BertConfig(vocab_size=len(tokenizer), num_labels=2, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    folder = Path(tempfile.mkdtemp(prefix="trusteval-bench-")) / "bert-base-random"
    return _save(BertForSequenceClassification(config), tokenizer, folder)


def cold_texts(count: int) -> list[str]:
    path = Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data")) / "cold" / "test.csv"
    with path.open(encoding="utf-8") as handle:
        rows = [row["TEXT"] for row in csv.DictReader(handle)]
    return rows[:count]


def non_embedding_parameters(model) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if "embeddings" not in name)


def matmul_gflops(hidden: int, intermediate: int, tokens: int = 2048, repeats: int = 5) -> float:
    """Measured fp32 matmul rate on the shapes a transformer layer uses (tokens x hidden x intermediate)."""
    import torch

    x, w1 = torch.randn(tokens, hidden), torch.randn(hidden, intermediate)
    h, w2 = torch.randn(tokens, intermediate), torch.randn(intermediate, hidden)
    with torch.inference_mode():
        x @ w1
        started = time.perf_counter()
        for _ in range(repeats):
            x @ w1
            h @ w2
        seconds = time.perf_counter() - started
    return 2 * 2 * tokens * hidden * intermediate * repeats / seconds / 1e9


def padding_ratio(lengths: list[int], batch_size: int) -> float:
    padded = sum(max(chunk) * len(chunk) for chunk in _chunks(lengths, batch_size))
    return padded / sum(lengths)


def _chunks(values: list[int], size: int) -> list[list[int]]:
    return [values[start : start + size] for start in range(0, len(values), size)]


def arrival_order(scorer, texts: list[str]) -> list[float]:
    out = []
    for start in range(0, len(texts), scorer.batch_size):
        out += [o.value for o in scorer._score_or_split(texts[start : start + scorer.batch_size])]
    return out


def timed(fn, repeats: int) -> tuple[float, list[float]]:
    best, values = float("inf"), []
    for _ in range(repeats):
        started = time.perf_counter()
        values = fn()
        best = min(best, time.perf_counter() - started)
    return best, values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="local classifier folder (default: random roberta-base-shaped BERT)")
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    folder = Path(args.model) if args.model else base_size_classifier()
    scorer = load_scorer(f"hf:{folder}?batch_size={args.batch_size}", ScorerContext())
    texts = cold_texts(args.texts)
    lengths = [len(ids) for ids in scorer._encode(texts)]
    scorer.score(texts[: args.batch_size])  # warm-up

    sorted_s, sorted_values = timed(lambda: [o.value for o in scorer.score(texts)], args.repeats)
    arrival_s, arrival_values = timed(lambda: arrival_order(scorer, texts), args.repeats)
    config = scorer._model.config
    rate = matmul_gflops(config.hidden_size, config.intermediate_size)
    params = non_embedding_parameters(scorer._model)
    tokens_per_text = sum(lengths) / len(lengths)
    limit = rate * 1e9 / (2 * params * tokens_per_text)
    result = {
        "bench": "hf_scorer",
        "model": str(folder) if args.model else "random BERT of roberta-base shape",
        "texts": len(texts),
        "batch_size": args.batch_size,
        "non_embedding_parameters": params,
        "real_tokens_per_text": round(tokens_per_text, 1),
        "matmul_gflops": round(rate, 1),
        "flop_limit_texts_per_s": round(limit, 2),
        "sorted": {
            "texts_per_s": round(len(texts) / sorted_s, 2),
            "padded_per_real_token": round(padding_ratio(sorted(lengths, reverse=True), args.batch_size), 3),
            "flop_limit_fraction": round(len(texts) / sorted_s / limit, 3),
        },
        "arrival_order": {
            "texts_per_s": round(len(texts) / arrival_s, 2),
            "padded_per_real_token": round(padding_ratio(lengths, args.batch_size), 3),
            "flop_limit_fraction": round(len(texts) / arrival_s / limit, 3),
        },
        "speedup": round(arrival_s / sorted_s, 2),
        "max_abs_score_difference": max(abs(a - b) for a, b in zip(sorted_values, arrival_values, strict=True)),
    }
    print(json.dumps(result))
    out = REPO / "bench" / "results" / "hf_scorer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
