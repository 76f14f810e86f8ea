"""Wall time and peak memory of whole runs at scale: N prompts answered by a replay model, scored by cold-tfidf
on prompts and responses, then the same run again (everything reused).

Usage: python bench/bench_scale.py [--prompts 100000 300000] [--keep DIR] [--baseline-src DIR] [--first-only]

Each size writes a synthetic `file:` dataset of N distinct Chinese sentences and a replay file answering each,
runs `trusteval run` in a child process and reads its peak RSS from the kernel (ru_maxrss of the child, from
`wait4`). The resident size is also sampled every 0.2 s (/proc), so the figures say when the peak came and
what the run held after its first 30 seconds. The detector is trained once beforehand in a shared cache, so its
training is not in the figures. With --baseline-src (the `src` folder of another checkout, e.g. `git archive
main src | tar -x -C /tmp/main`) each size is also run by that code, in its own store, the two alternating
(baseline first), so before and after come from one session. --first-only skips the identical reruns. Writes
bench/results/scale.json.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
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


def resident_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((x for x in status.splitlines() if x.startswith("VmRSS:")), None)
    return int(line.split()[1]) / 1024 if line else None


def sample_resident(pid: int, samples: list[tuple[float, float]], done: threading.Event) -> None:
    started = time.perf_counter()
    while not done.wait(0.2):
        rss = resident_mb(pid)
        if rss is not None:
            samples.append((time.perf_counter() - started, rss))


def run_child(args: list[str], src: Path) -> tuple[dict, dict]:
    """The figures of one `trusteval run` (wall and CPU seconds, peak RSS in MB from the kernel, when the
    sampled peak came, the sampled peak after 30 s) and its --json output. CPU seconds (user + system) are
    what a loaded machine does not inflate."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "trusteval", *args], stdout=out, stderr=err, env=env)
        samples: list[tuple[float, float]] = []
        done = threading.Event()
        sampler = threading.Thread(target=sample_resident, args=(child.pid, samples, done), daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"run failed ({child.returncode}): {err.read()[-2000:]}")
        summary = json.loads(out.read())
    peak_at = max(samples, key=lambda s: s[1])[0] if samples else 0.0
    later = [rss for at, rss in samples if at >= 30]
    figures = {
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "sampled_peak_at_s": round(peak_at, 1),
        "sampled_peak_after_30s_mb": round(max(later)) if later else None,
        "timeline_s_mb": [(round(at, 1), round(rss)) for at, rss in samples[::10]],  # every 2 s
    }
    return figures, summary


def inputs(count: int, work: Path) -> tuple[Path, Path]:
    """The size's data and answers files, written once per work folder (a kept folder reuses them)."""
    folder = work / f"n{count}"
    data, answers = folder / "data.csv", folder / "answers.jsonl"
    if not (folder / "inputs-done").exists():
        folder.mkdir(parents=True, exist_ok=True)
        write_inputs(folder, count)
        (folder / "inputs-done").touch()
    return data, answers


def measure(count: int, work: Path, cache: Path, src: Path, name: str, rerun: bool = True) -> dict:
    data, answers = inputs(count, work)
    store = work / f"n{count}" / f"ws-{name}"
    shutil.rmtree(store, ignore_errors=True)
    args = ["run", "--benchmark", "trusteval-toxicity", "--dataset", f"file:{data}?lang=zh&category=category",
            "--model", f"replay:{answers}", "--seeds", "42", "--store", str(store), "--cache-dir",
            str(cache), "--resamples", "200", "--json", "--no-progress"]  # fmt: skip
    first_run, first = run_child(args, src)
    result = {"prompts": count, "code": name, "first_run": {**first_run, "generated": first["generated"]}}
    if rerun:
        again_run, again = run_child(args, src)
        result["identical_rerun"] = {**again_run, "reused": again["reused"]}
    result["store_mb"] = round((store / "trusteval.sqlite").stat().st_size / 2**20)
    result["metrics_sha256"] = hashlib.sha256(json.dumps(first["metrics"], sort_keys=True).encode()).hexdigest()
    return result


def without_timelines(result: dict) -> dict:
    return {k: without_timelines(v) if isinstance(v, dict) else v for k, v in result.items() if k != "timeline_s_mb"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, nargs="+", default=[100_000])
    parser.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    parser.add_argument("--baseline-src", type=Path, help="another checkout's src folder, run beside this one")
    parser.add_argument("--first-only", action="store_true", help="skip the identical reruns")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="trusteval-scale-"))
    cache = work / "cache"
    sources = {"this": REPO / "src"}
    if args.baseline_src:
        sources = {"baseline": args.baseline_src.resolve(), **sources}
    measure(50, work, cache, sources["this"], "this")  # trains the detector into the shared cache
    results = []
    for count in args.prompts:
        for name, src in sources.items():
            results.append(measure(count, work, cache, src, name, rerun=not args.first_only))
            results[-1]["load_average"] = round(os.getloadavg()[0], 1)
            print(json.dumps(without_timelines(results[-1])), flush=True)
    out = REPO / "bench" / "results" / "scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": "scale", "cpus": os.cpu_count(), "sizes": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
