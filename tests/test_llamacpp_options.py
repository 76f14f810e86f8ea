"""The llamacpp backend loads models with llama.cpp's extra buffer types off (the AMX repacking path crashes on
some CPUs with SIGILL), and `extra_bufts=true` turns them on; the real library and the embedded SmolLM2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trusteval.errors import UsageError
from trusteval.models import BackendSettings, ModelSpec
from trusteval.models import llamacpp as backend_module

pytestmark = pytest.mark.slow
llama_cpp = pytest.importorskip("llama_cpp")

# A verbose load in a child: llama.cpp logs every tensor it could not place in the CPU_REPACK buffer type, which
# it only considers when extra buffer types are on.
VERBOSE_LOAD = """
import sys
from llama_cpp import Llama
from trusteval.models.embedded import embedded_gguf_path
from trusteval.models.llamacpp import model_defaults
with model_defaults(sys.argv[1] == "on"):
    Llama(model_path=str(embedded_gguf_path()), n_ctx=128, n_threads=1, verbose=True)
"""


def _create(raw: str):
    return backend_module.create(ModelSpec.parse(raw), BackendSettings())


@pytest.mark.parametrize(
    ("raw", "expected"), [("llamacpp:smollm2", False), ("llamacpp:smollm2?extra_bufts=true", True)]
)
def test_extra_buffer_types_are_off_unless_the_spec_turns_them_on(raw, expected):
    backend = _create(raw + ("&" if "?" in raw else "?") + "n_ctx=256&n_threads=1")
    try:
        assert bool(backend._llama.model_params.use_extra_bufts) is expected
    finally:
        import asyncio

        asyncio.run(backend.aclose())


def test_the_setting_reaches_llama_cpp_loader():
    logs = {}
    for mode in ("on", "off"):
        done = subprocess.run([sys.executable, "-c", VERBOSE_LOAD, mode], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        logs[mode] = done.stderr
    assert "CPU_REPACK" in logs["on"]
    assert "CPU_REPACK" not in logs["off"]


def test_llama_ignores_an_unknown_keyword_silently_which_is_why_the_defaults_are_adjusted():
    """Guard: if llama-cpp-python ever takes `use_extra_bufts=` itself, this fails and the workaround can go."""
    from trusteval.models.embedded import embedded_gguf_path

    llama = llama_cpp.Llama(
        model_path=str(embedded_gguf_path()), n_ctx=128, n_threads=1, verbose=False, use_extra_bufts=False
    )
    assert bool(llama.model_params.use_extra_bufts) is True
    llama.close()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("llamacpp:smollm2?extra_bufts=maybe", "'extra_bufts' must be true or false (also on/off, yes/no, 1/0)"),
        ("llamacpp:smollm2?extra_buffers=true", "unknown option 'extra_buffers'. Did you mean 'extra_bufts'"),
    ],
)
def test_bad_options_are_usage_errors_before_anything_loads(raw, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        backend_module.preflight(ModelSpec.parse(raw), BackendSettings())
