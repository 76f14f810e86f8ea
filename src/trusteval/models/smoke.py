"""Install check: generate a few tokens with the embedded model in a child process, so that a native crash of
llama.cpp (an illegal instruction from a CPU-specific build, a segfault) is reported in one clear line instead of
killing the caller. `scripts/setup.sh` ends with `python -m trusteval.models.smoke`."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence

# The model loads exactly as the llamacpp backend loads it (extra buffer types off), so the check tests what runs.
CHILD_CODE = """
from trusteval.models.embedded import embedded_gguf_path
from trusteval.models.llamacpp import load_llama
llama = load_llama(embedded_gguf_path(), n_ctx=256, n_threads=2)
out = llama.create_completion("The capital of France is", max_tokens=4, temperature=0.0)
print(out["choices"][0]["text"].strip()[:40])
"""

REMEDY = (
    "rebuild llama-cpp-python with portable flags: rm -rf ~/.cache/trusteval/wheels/llama-cpp-python-* .venv "
    "&& scripts/setup.sh (or set TRUSTEVAL_LLAMA_CMAKE_ARGS, e.g. '-DGGML_NATIVE=OFF' alone for a CPU without AVX2)"
)


def default_command() -> list[str]:
    return [sys.executable, "-c", CHILD_CODE]


FAILED = "setup check failed: the embedded model's test generation"


def describe_failure(returncode: int, stderr: str) -> str:
    """One line: what crashed, the likely cause, the remedy."""
    if returncode < 0:
        sig = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        if sig == "SIGILL":
            cause = "llama.cpp was compiled for CPU instructions this machine lacks (for example AVX-512 or AMX)"
        else:
            cause = "the llama.cpp library crashed in native code"
        return f"{FAILED} died with {sig}; likely cause: {cause}; remedy: {REMEDY}"
    last = (stderr.strip().splitlines() or ["no message"])[-1][:300]
    return f"{FAILED} exited with status {returncode} ({last}); remedy: {REMEDY}"


def check(command: Sequence[str] | None = None, timeout_s: float = 300.0) -> tuple[bool, str]:
    """Run the child; return (ok, one line to print)."""
    try:
        done = subprocess.run(
            list(command or default_command()), capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return False, f"{FAILED} took over {timeout_s:.0f} s"
    if done.returncode != 0:
        return False, describe_failure(done.returncode, done.stderr)
    return True, f"setup check passed: the embedded model generated {done.stdout.strip()!r}"


def main() -> int:
    ok, line = check()
    print(line, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
