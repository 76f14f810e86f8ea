"""Wall time and peak memory of whole runs at scale: N prompts answered by a replay model, scored by cold-tfidf
on prompts and responses, then the same run again (everything reused).

Usage: python bench/bench_scale.py [--prompts 100000 300000] [--keep DIR]

Each size writes a synthetic `file:` dataset of N distinct Chinese sentences and a replay file answering each,
runs `trusteval run` in a child process and reads its peak RSS from the kernel (ru_maxrss of the child). The
detector is trained once beforehand in a shared cache, so its training is not in the figures. Writes
bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORDS = ["这个地区的人", "那些女人", "外国人", "我的同事", "他们", "每个人"]
VERBS = ["都很友好", "真的很烦人", "太蠢了", "很勤劳", "让人恶心", "值得尊重"]


def write_inputs(folder: Path, count: int) -> tuple[Path, Path]:
    data, answers = folder / "data.csv", folder / "answers.jsonl"
    with data.open("w", encoding="utf-8", newline="") as d, answers.open("w", encoding="utf-8") as a:
        writer = csv.writer(d)
        writer.writerow(["text", "label", "category"])
        for i in range(count):
            text = f"{WORDS[i % 6]}{VERBS[(i // 6) % 6]}，第{i}句。"
            writer.writerow([text, i % 2, ("race", "gender", "region")[i % 3]])
            a.write(json.dumps({"prompt": text, "response": f"我不同意：{text}"}, ensure_ascii=False) + "\n")
    return data, answers


WRAPPER = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stderr.write(done.stderr); sys.stdout.write(done.stdout); "
    "use = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(use.ru_maxrss, use.ru_utime + use.ru_stime, file=sys.stderr); sys.exit(done.returncode)"
)


def run_child(args: list[str]) -> tuple[float, float, float, dict]:
    """Wall seconds, CPU seconds, peak RSS in MB, and the --json output of one `trusteval run`; a fresh
    wrapper process per run, because a process's RUSAGE_CHILDREN peak is the largest of all its children so
    far. CPU seconds (user + system) are what a loaded machine does not inflate."""
    command = [sys.executable, "-c", WRAPPER, sys.executable, "-m", "trusteval", *args]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}): {done.stderr[-2000:]}")
    peak_kb, cpu = done.stderr.strip().splitlines()[-1].split()
    return wall, float(cpu), int(peak_kb) / 1024, json.loads(done.stdout)


def measure(count: int, work: Path, cache: Path) -> dict:
    folder = work / f"n{count}"
    folder.mkdir(parents=True, exist_ok=True)
    data, answers = write_inputs(folder, count)
    args = ["run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
            "--model", f"replay:{answers}", "--seeds", "42", "--store", str(folder / "ws"), "--cache-dir",
            str(cache), "--resamples", "200", "--json", "--no-progress"]  # fmt: skip
    first_s, first_cpu, first_mb, first = run_child(args)
    again_s, again_cpu, again_mb, again = run_child(args)
    store_mb = (folder / "ws" / "trusteval.sqlite").stat().st_size / 2**20
    first_run = {"wall_s": round(first_s, 1), "cpu_s": round(first_cpu, 1), "peak_rss_mb": round(first_mb)}
    rerun = {"wall_s": round(again_s, 1), "cpu_s": round(again_cpu, 1), "peak_rss_mb": round(again_mb)}
    return {
        "prompts": count,
        "first_run": {**first_run, "generated": first["generated"]},
        "identical_rerun": {**rerun, "reused": again["reused"]},
        "store_mb": round(store_mb),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, nargs="+", default=[100_000])
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="trusteval-scale-"))
    cache = work / "cache"
    measure(50, work, cache)  # trains the detector into the shared cache
    results = []
    for count in args.prompts:
        results.append(measure(count, work, cache))
        print(json.dumps(results[-1]), flush=True)
    out = REPO / "bench" / "results" / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": "scale", "cpus": os.cpu_count(), "sizes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
