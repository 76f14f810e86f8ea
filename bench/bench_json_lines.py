"""CPU seconds to read 100,000 JSON Lines rows: a data file (`read_records` and one more pass) and the replay
model's answers (`replay_index.scan`), each in its own process, this checkout and a baseline alternating.

Usage: python bench/bench_json_lines.py [--rows 100000] [--rounds 6] [--baseline-src DIR]

The data file is ASCII (one English prompt a row), the answers file Chinese: the two ways a line's byte
offset is counted. Only the reading is timed (time.process_time in the child), not the start-up. Writes
bench/results/json_lines.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = """
import sys, time
from collections import deque
from pathlib import Path
from trusteval.data.files import read_records
from trusteval.models import replay_index
kind, path = sys.argv[1], Path(sys.argv[2])
start = time.process_time()
if kind == "data":
    deque(read_records(path), maxlen=0)
else:
    with path.open("rb") as handle:
        deque(replay_index.scan(path, handle, ("prompt", "response", "seed")), maxlen=0)
print(time.process_time() - start)
"""


def write_files(folder: Path, rows: int) -> dict[str, Path]:
    data, answers = folder / "data.jsonl", folder / "answers.jsonl"
    with data.open("w", encoding="utf-8") as out:
        for i in range(rows):
            text = f"This is prompt number {i}; is it harmful? " * 2
            out.write(json.dumps({"text": text, "label": i % 2, "lang": "en", "id": f"p{i}"}) + "\n")
    with answers.open("w", encoding="utf-8") as out:
        for i in range(rows):
            row = {"prompt": f"第{i}个问题：这句话是否有害？", "response": f"回答 {i}: 没有。" * 3, "seed": 42}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"data": data, "scan": answers}


def cpu_seconds(src: Path, kind: str, path: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, "-c", CHILD, kind, str(path)], env=env, capture_output=True, check=True)
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--baseline-src", type=Path)
    args = parser.parse_args()
    sources = {"this": REPO / "src"}
    if args.baseline_src:
        sources["baseline"] = args.baseline_src.resolve()
    result: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind, path in write_files(Path(folder), args.rows).items():
            times: dict[str, list[float]] = {name: [] for name in sources}
            for _ in range(args.rounds):
                for name, src in sources.items():
                    times[name].append(round(cpu_seconds(src, kind, path), 4))
            result[kind] = times
            print(kind, {name: round(statistics.mean(values), 3) for name, values in times.items()})
    out = REPO / "bench" / "results" / "json_lines.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": args.rows, "cpu_s": result, "load": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
