"""Throughput of the offline toxicity detectors (cold-tfidf, en-tfidf): texts per second.

Each detector scores `--texts` distinct texts of its own dataset (COLD, HateXplain; all splits), in batches of
the scorer's batch size (what the pipeline does), against the naive baseline of one text per call, in the same
run. Every measurement starts from a freshly loaded scorer, so the word cache of the char_wb transform starts
empty. For en-tfidf it also times the batched path with the plain sklearn transforms, to show what the
word-factored transform (scorers/tfidf_fast.py: WordFactoredCharWb) buys. Target: each detector >= 10,000
texts/s batched.

    PYTHONPATH=src TRUSTEVAL_DATA_DIR=../shared/data python bench/bench_detectors.py [--texts 20000]

Prints one JSON line and writes bench/results/detectors.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src")]

from trusteval.data import load_dataset  # noqa: E402
from trusteval.data.sources import DataContext  # noqa: E402
from trusteval.scorers import ScorerContext, load_scorer  # noqa: E402

RESULTS = REPO / "bench" / "results" / "detectors.json"
TARGET_TEXTS_PER_S = 10_000
DATASETS = {
    "cold-tfidf": ("cold?split=test", "cold?split=dev", "cold?split=train"),
    "en-tfidf": ("hatexplain?split=test", "hatexplain?split=validation", "hatexplain?split=train"),
}


def texts_per_second(score, texts: list[str], batch_size: int) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), batch_size):
        score(texts[start : start + batch_size])
    return len(texts) / (time.perf_counter() - started)


def distinct_texts(name: str, data_dir: Path, count: int) -> list[str]:
    texts: dict[str, None] = {}
    for spec in DATASETS[name]:
        texts.update(dict.fromkeys(p.text for p in load_dataset(spec, DataContext(data_dir=data_dir)).prompts))
    return list(texts)[:count]


def measure(name: str, data_dir: Path, cache_dir: Path, count: int, naive_count: int) -> dict:
    def fresh():
        return load_scorer(name, ScorerContext(data_dir=data_dir, cache_dir=cache_dir))

    texts = distinct_texts(name, data_dir, count)
    fresh().score(texts[:10])  # trains the detector if the cache has none
    scorer = fresh()
    batched = texts_per_second(scorer.score, texts, scorer.batch_size)
    one_at_a_time = texts_per_second(fresh().score, texts[:naive_count], 1)
    result = {
        "texts": len(texts),
        "mean_chars": round(sum(map(len, texts)) / len(texts), 1),
        "batch_size": scorer.batch_size,
        "batched_texts_per_s": round(batched),
        "one_per_call_texts_per_s": round(one_at_a_time),
        "ratio": round(batched / one_at_a_time, 1),
    }
    detector = fresh().detector
    if any(t is not v for t, v in zip(detector.fast_transforms, detector.vectorizers, strict=True)):
        detector.fast_transforms = None  # the plain sklearn transforms
        plain = texts_per_second(lambda batch: detector.predict(batch), texts, scorer.batch_size)
        result["batched_plain_sklearn_texts_per_s"] = round(plain)
        result["fast_transform_speedup"] = round(batched / plain, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=20_000)
    parser.add_argument("--naive-texts", type=int, default=1_000)
    parser.add_argument("--cache-dir", help="trusteval cache with trained detectors (default: a fresh temp folder)")
    args = parser.parse_args()
    data_dir = Path(os.environ.get("TRUSTEVAL_DATA_DIR", REPO.parent / "shared" / "data"))
    with tempfile.TemporaryDirectory() as tmp:
        cache_dir = Path(args.cache_dir) if args.cache_dir else Path(tmp)
        detectors = {name: measure(name, data_dir, cache_dir, args.texts, args.naive_texts) for name in DATASETS}
    report = {
        "bench": "detectors",
        "target_texts_per_s": TARGET_TEXTS_PER_S,
        "meets_target": all(d["batched_texts_per_s"] >= TARGET_TEXTS_PER_S for d in detectors.values()),
        "detectors": detectors,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
