"""How long `trusteval --help` takes, against the bare interpreter start in the same run.

Target: under 0.5 s, which needs every heavy library (torch, transformers, llama_cpp, sklearn, matplotlib)
imported only where it is used. Also lists any heavy module that `import trusteval.cli` pulls in.

    python bench/bench_cli_startup.py [--repeats 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("torch", "transformers", "llama_cpp", "sklearn", "matplotlib", "numpy", "scipy", "httpx", "pydantic")


def timed(command: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def heavy_imports() -> list[str]:
    probe = "import sys, trusteval.cli; trusteval.cli.build_parser(); print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    )
    return [name for name in HEAVY if name in loaded]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    baseline = timed([sys.executable, "-c", "pass"], args.repeats)
    help_time = timed([sys.executable, "-m", "trusteval", "--help"], args.repeats)
    result = {
        "help_s": round(help_time, 4),
        "interpreter_s": round(baseline, 4),
        "ratio_to_interpreter": round(help_time / baseline, 2),
        "target_s": 0.5,
        "heavy_modules_at_startup": heavy_imports(),
    }
    print(json.dumps(result))
    out = Path(__file__).parent / "results" / "cli_startup.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
