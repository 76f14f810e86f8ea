"""The hf classifier scorer against the FLOP limit, against its eager model, and its int8 option, in one run.

Usage: python bench/bench_hf_scorer.py [--model DIR] [--texts 1024] [--layers 6] [--batch-size 32] [--rounds 3]
       [--onnx]

Without --model it builds a randomly initialised BERT classifier of roberta-base's width (hidden 768,
intermediate 3072, 12 heads; --layers of them, 6 by default to halve the run: every layer does the same work,
so the fraction hardly depends on the count; weights do not change the arithmetic) with the test fixtures'
offline tokenizer, and scores real COLD test comments from TRUSTEVAL_DATA_DIR; 1,024 texts by default, one
pipeline call (CALL_BATCHES x batch size), so the padding is a run's. The machine is shared, so each round
measures, interleaved: two fp32 matmul rates on the model's own layer shapes (torch's matmul, MKL on this build,
at 2,048 tokens; and oneDNN's packed linear kernel, the one the fused scorer calls, on a layer's four linear
shapes at a batch's real token count), the scorer as shipped (oneDNN-fused float32, padded layout), the same
with unpad=1 (fused, real tokens only: opt-in), with fuse=0 (the eager model) and with
quantize=int8 (with --onnx also runtime=onnx, float and int8). Reported (medians over rounds, with the load
average before and after):
- texts/s for each, and speedups over the eager model within each round (wall and CPU seconds);
- the FLOP-limit fraction: texts/s divided by (matmul rate / FLOPs per text), per wall and per CPU second,
  against either rate (keys ending `_onednn`: against oneDNN's packed kernel), with
  FLOPs per text counted two ways: the issue's 2 x non-embedding parameters x real tokens, and the matmuls
  actually needed (2 x encoder parameters x tokens, the pooler and classifier once per text, plus attention's
  4 x length x hidden x layers per token); padded tokens per real token for this run's texts, and projected
  for the pipeline's calls of CALL_BATCHES x batch size texts (tokenizer only);
- the tokenizer's share of the time, and the largest score differences (fused vs eager and vs arrival-order
  batching: must be under 1e-5; int8 vs float: must be under 0.01).
Writes bench/results/hf_scorer.json.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

from trusteval.scorers import ScorerContext, load_scorer  # noqa: E402
from trusteval.scorers.hf_classifier import CALL_BATCHES  # noqa: E402


def base_width_classifier(layers: int, parent: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from fixtures.tiny_models import _save, build_wordpiece_tokenizer

    tokenizer = build_wordpiece_tokenizer()
    config = BertConfig(
        vocab_size=len(tokenizer), num_labels=2, num_hidden_layers=layers, pad_token_id=tokenizer.pad_token_id
    )
    torch.manual_seed(0)
    folder = parent / "bert-base-width-random"
    return _save(BertForSequenceClassification(config), tokenizer, folder)


def cold_texts() -> list[str]:
    path = Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data")) / "cold" / "test.csv"
    with path.open(encoding="utf-8") as handle:
        rows = [row["TEXT"] for row in csv.DictReader(handle)]
    random.Random(0).shuffle(rows)  # the pipeline shuffles what it scores
    return rows


def non_embedding_parameters(model) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if "embeddings" not in name)


def matmul_flops_per_text(model, lengths: list[int]) -> float:
    """The matmul FLOPs a text needs, on average: every encoder weight once per token, the pooler and
    classifier once per text, and attention's scores and weighted sum (2 x 2 x length x hidden per token and
    layer). The issue's 2 x non-embedding parameters x tokens counts the head per token and leaves out
    attention."""
    config = model.config
    encoder = sum(p.numel() for name, p in model.named_parameters() if "encoder." in name)
    head = non_embedding_parameters(model) - encoder
    per_text = [2 * encoder * n + 2 * head + 4 * n * n * config.hidden_size * config.num_hidden_layers for n in lengths]
    return sum(per_text) / len(per_text)


def matmul_gflops(hidden: int, intermediate: int, tokens: int = 2048, repeats: int = 5) -> tuple[float, float]:
    """Measured fp32 matmul rate on the shapes a transformer layer uses (tokens x hidden x intermediate), per
    wall second and per CPU second of this process."""
    import torch

    x, w1 = torch.randn(tokens, hidden), torch.randn(hidden, intermediate)
    h, w2 = torch.randn(tokens, intermediate), torch.randn(intermediate, hidden)
    with torch.inference_mode():
        x @ w1
        seconds, cpu_seconds = timed(lambda: [(x @ w1, h @ w2) for _ in range(repeats)])[:2]
    gflop = 2 * 2 * tokens * hidden * intermediate * repeats / 1e9
    return gflop / seconds, gflop / cpu_seconds


def onednn_gflops(hidden: int, intermediate: int, rows: int, repeats: int = 5) -> tuple[float, float]:
    """Measured rate of oneDNN's packed fp32 linear kernel (what the fused scorer calls, bias in the epilogue) on
    the four linear shapes of one layer (query/key/value, attention output, intermediate, output) at `rows`
    tokens per matmul (a batch's real tokens), per wall second and per CPU second of this process."""
    import torch

    from trusteval.scorers.hf_fused import PACKING_BATCH_HINT

    mkldnn = torch.ops.mkldnn
    shapes = [(hidden, 3 * hidden), (hidden, hidden), (hidden, intermediate), (intermediate, hidden)]
    layers = [
        (torch.randn(rows, k), mkldnn._reorder_linear_weight(torch.randn(n, k), PACKING_BATCH_HINT), torch.randn(n))
        for k, n in shapes
    ]

    def one_layer() -> list:
        return [mkldnn._linear_pointwise(x, w, b, "none", [], "") for x, w, b in layers]

    with torch.inference_mode():
        one_layer()
        seconds, cpu_seconds = timed(lambda: [one_layer() for _ in range(repeats)])[:2]
    gflop = 2 * rows * sum(k * n for k, n in shapes) * repeats / 1e9
    return gflop / seconds, gflop / cpu_seconds


def padding_ratio(lengths: list[int], call: int, batch: int) -> float:
    """Padded tokens per real token when calls of `call` texts are each sorted into batches of `batch`."""
    padded = 0
    for start in range(0, len(lengths), call):
        ordered = sorted(lengths[start : start + call], reverse=True)
        padded += sum(max(ordered[i : i + batch]) * len(ordered[i : i + batch]) for i in range(0, len(ordered), batch))
    return padded / sum(lengths)


def arrival_order(scorer, texts: list[str]) -> list[float]:
    step = scorer.model_batch_size
    return [o.value for i in range(0, len(texts), step) for o in scorer._score_or_split(texts[i : i + step])]


def timed(fn) -> tuple[float, float, list]:
    """Wall seconds, CPU seconds of this process (all threads), and the result."""
    started, cpu_started = time.perf_counter(), time.process_time()
    values = fn()
    return time.perf_counter() - started, time.process_time() - cpu_started, values


def one_round(scorers: dict, texts: list[str], config, rows: int, flip: bool) -> dict:
    """Matmul rates (torch's matmul, i.e. MKL, and oneDNN's packed linear), then each scorer, interleaved (the
    order flips every round)."""
    wall_rate, cpu_rate = matmul_gflops(config.hidden_size, config.intermediate_size)
    onednn_wall, onednn_cpu = onednn_gflops(config.hidden_size, config.intermediate_size, rows)
    out = {"matmul_gflops": wall_rate, "matmul_gflops_cpu": cpu_rate}
    out |= {"onednn_gflops": onednn_wall, "onednn_gflops_cpu": onednn_cpu}
    for name in sorted(scorers, reverse=flip):
        out[name] = timed(lambda s=scorers[name]: [o.value for o in s.score(texts)])
    out["tokenizer_s"] = timed(lambda: scorers["float"]._encode(texts))[0]
    return out


def rates(rounds: list[dict], texts: int, flops: dict[str, float], padding_gain: float) -> dict:
    """Medians (and per-round lists) of texts/s, speedups over eager, and FLOP-limit fractions: per wall
    second and per CPU second (on a shared machine time spent waiting for a core counts in neither, so the
    CPU figure is the stable one)."""
    median = statistics.median
    out: dict = {
        "matmul_gflops_median": round(median(r["matmul_gflops"] for r in rounds), 1),
        "matmul_gflops_per_round": [round(r["matmul_gflops"], 1) for r in rounds],
        "matmul_gflops_per_cpu_s_median": round(median(r["matmul_gflops_cpu"] for r in rounds), 1),
        "onednn_gflops_per_cpu_s_per_round": [round(r["onednn_gflops_cpu"], 1) for r in rounds],
        "onednn_gflops_per_cpu_s_median": round(median(r["onednn_gflops_cpu"] for r in rounds), 1),
    }
    names = [name for name in ("float", "eager", "unpadded", "int8", "onnx", "onnx_int8") if name in rounds[0]]
    for name in names:
        out[f"{name}_texts_per_s_median"] = round(median(texts / r[name][0] for r in rounds), 2)
        out[f"{name}_cpu_s_per_round"] = [round(r[name][1], 2) for r in rounds]
    for name in [*names[2:], "float"]:
        cpu = [r["eager"][1] / r[name][1] for r in rounds]
        out[f"{name}_cpu_speedup_over_eager_per_round"] = [round(x, 2) for x in cpu]
        out[f"{name}_cpu_speedup_over_eager_median"] = round(median(cpu), 2)
        out[f"{name}_wall_speedup_over_eager_median"] = round(median(r["eager"][0] / r[name][0] for r in rounds), 2)
    unpadded = [r["float"][1] / r["unpadded"][1] for r in rounds]
    out["unpadded_cpu_speedup_over_float_per_round"] = [round(x, 2) for x in unpadded]
    out["unpadded_cpu_speedup_over_float_median"] = round(median(unpadded), 2)
    if "onnx_int8" in names:
        int8 = [r["int8"][1] / r["onnx_int8"][1] for r in rounds]
        out["onnx_int8_cpu_speedup_over_torch_int8_per_round"] = [round(x, 2) for x in int8]
        out["onnx_int8_cpu_speedup_over_torch_int8_median"] = round(median(int8), 2)
    for name, reference, formula in itertools.product(("float", "unpadded", "eager"), ("matmul", "onednn"), flops):
        per_text = flops[formula]
        wall = [texts / r[name][0] * per_text / (r[f"{reference}_gflops"] * 1e9) for r in rounds]
        cpu = [texts / r[name][1] * per_text / (r[f"{reference}_gflops_cpu"] * 1e9) for r in rounds]
        key = f"{name}_flop_limit_fraction_{formula}" + ("_onednn" if reference == "onednn" else "")
        out[f"{key}_wall_median"] = round(median(wall), 3)
        out[f"{key}_cpu_per_round"] = [round(x, 3) for x in cpu]
        out[f"{key}_cpu_median"] = round(median(cpu), 3)
        if name != "unpadded":  # unpad=1 multiplies no padding: its fraction hardly moves with it
            out[f"{key}_cpu_projected_for_pipeline_calls"] = round(median(cpu) * padding_gain, 3)
    return out


def differences(last: dict, arrival: list[float]) -> dict:
    fused = last["float"][2]

    def largest(values: list[float]) -> float:
        return max(abs(x - y) for x, y in zip(fused, values, strict=True))

    out = {"max_abs_difference_sorted_vs_arrival": largest(arrival)}
    for name in ("eager", "unpadded", "int8", "onnx", "onnx_int8"):
        if name in last:
            out[f"max_abs_difference_{name}_vs_fused"] = largest(last[name][2])
    return out


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trusteval-bench-") as scratch:  # the random model, ~170 MB
        measure(Path(scratch))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="local classifier folder (default: random BERT of roberta-base width)")
    parser.add_argument("--texts", type=int, default=CALL_BATCHES * 32)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--onnx", action="store_true", help="also runtime=onnx, float and int8 (the onnx extra)")
    return parser.parse_args()


def load_scorers(folder: Path, batch_size: int, onnx: bool) -> dict:
    spec = f"hf:{folder}?batch_size={batch_size}"
    options = {"float": "", "eager": "&fuse=0", "unpadded": "&unpad=1", "int8": "&quantize=int8"}
    if onnx:
        options |= {"onnx": "&runtime=onnx", "onnx_int8": "&runtime=onnx&quantize=int8"}
    return {name: load_scorer(spec + extra, ScorerContext()) for name, extra in options.items()}


def measure(scratch: Path) -> None:
    args = arguments()
    load_before = os.getloadavg()
    folder = Path(args.model) if args.model else base_width_classifier(args.layers, scratch)
    scorers = load_scorers(folder, args.batch_size, args.onnx)
    corpus = cold_texts()
    texts = corpus[: args.texts]
    for scorer in scorers.values():
        scorer.score(texts[: args.batch_size])  # warm-up
    lengths = [len(ids) for ids in scorers["float"]._encode(texts)]
    rows = round(args.batch_size * sum(lengths) / len(lengths))  # real tokens in a forward pass
    config = scorers["eager"]._model.config
    rounds = [one_round(scorers, texts, config, rows, flip=r % 2 == 1) for r in range(args.rounds)]

    corpus_lengths = [len(ids) for ids in scorers["float"]._encode(corpus)]
    model = scorers["eager"]._model
    params = non_embedding_parameters(model)
    tokens_per_text = sum(lengths) / len(lengths)
    flops = {"issue": 2 * params * tokens_per_text, "counted": matmul_flops_per_text(model, lengths)}
    run_padding = padding_ratio(lengths, len(texts), args.batch_size)
    call_padding = padding_ratio(corpus_lengths, CALL_BATCHES * args.batch_size, args.batch_size)
    result = {
        "bench": "hf_scorer",
        "model": str(folder) if args.model else f"random BERT, roberta-base width, {args.layers} layers",
        "texts": len(texts),
        "rounds": args.rounds,
        "batch_size": args.batch_size,
        "torch_threads": __import__("torch").get_num_threads(),
        "cpu_count": os.cpu_count(),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "kernels": scorers["float"].describe()["kernels"],
        "onednn_reference_rows": rows,
        "non_embedding_parameters": params,
        "real_tokens_per_text": round(tokens_per_text, 1),
        "gflop_per_text_issue_formula": round(flops["issue"] / 1e9, 3),
        "gflop_per_text_counted_matmuls": round(flops["counted"] / 1e9, 3),
        "padded_per_real_token_this_run": round(run_padding, 3),
        "padded_per_real_token_pipeline_calls": round(call_padding, 3),
        **rates(rounds, len(texts), flops, run_padding / call_padding),
        "tokenizer_share": round(statistics.median(r["tokenizer_s"] / r["float"][0] for r in rounds), 4),
        **differences(rounds[-1], arrival_order(scorers["float"], texts)),
    }
    print(json.dumps(result))
    out = REPO / "bench" / "results" / "hf_scorer.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
