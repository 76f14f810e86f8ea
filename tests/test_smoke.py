"""The install check that `scripts/setup.sh` ends with: a crashing child fails it with one clear line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trusteval.models import smoke

SIGILL_CHILD = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"


def test_a_child_killed_by_sigill_fails_with_the_signal_cause_and_remedy():
    ok, line = smoke.check([sys.executable, "-c", SIGILL_CHILD], timeout_s=60)
    assert ok is False
    assert "\n" not in line
    assert "died with SIGILL" in line
    assert "likely cause: llama.cpp was compiled for CPU instructions this machine lacks" in line
    assert "remedy: rebuild llama-cpp-python with portable flags" in line


def test_a_child_killed_by_another_signal_names_that_signal():
    ok, line = smoke.check([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert ok is False
    assert "died with SIGSEGV" in line and "crashed in native code" in line and "remedy:" in line


def test_a_child_exiting_with_status_3_fails_with_its_status_and_last_message():
    code = "import sys; print('first', file=sys.stderr); print('no GGUF here', file=sys.stderr); sys.exit(3)"
    ok, line = smoke.check([sys.executable, "-c", code], timeout_s=60)
    assert ok is False
    assert "exited with status 3 (no GGUF here)" in line
    assert "remedy:" in line and "\n" not in line


def test_a_child_that_hangs_fails_after_the_timeout():
    ok, line = smoke.check([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert ok is False and "took over" in line


def test_a_child_that_succeeds_passes_with_its_output():
    ok, line = smoke.check([sys.executable, "-c", "print(' Paris ')"], timeout_s=60)
    assert ok is True
    assert line == "setup check passed: the embedded model generated 'Paris'"


@pytest.mark.slow
def test_the_real_embedded_model_passes_and_the_module_exits_0():
    pytest.importorskip("llama_cpp")
    done = subprocess.run([sys.executable, "-m", "trusteval.models.smoke"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("setup check passed: the embedded model generated '")
    assert len(done.stdout.strip()) > len("setup check passed: the embedded model generated ''")


def test_the_module_exits_1_with_the_line_on_stderr_when_the_child_crashes(monkeypatch, capsys):
    monkeypatch.setattr(smoke, "default_command", lambda: [sys.executable, "-c", SIGILL_CHILD])
    assert smoke.main() == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("setup check failed:") and "SIGILL" in captured.err
