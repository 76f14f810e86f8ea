"""`llamacpp`: a GGUF model in process through llama-cpp-python, with the chat template stored in the file.

Spec: `llamacpp:/path/model.gguf?n_ctx=4096&n_threads=4`, or `llamacpp:smollm2` for the embedded default.
One model instance answers one request at a time (llama.cpp contexts are not thread-safe); each request sets
its own sampling seed, so an answer does not depend on what ran before it.

llama.cpp's "extra buffer types" (weight repacking, AMX tiles on Xeon CPUs that report AMX) are off unless the
spec says `extra_bufts=true`: on some CPUs the AMX path dies with an illegal instruction, and on the embedded
model they gain little (docs/performance.md). llama-cpp-python's `Llama` has no keyword for this setting (it
silently ignores unknown keywords), so the model's default parameters are adjusted while it loads, and the
setting the model was loaded with is checked.

Identity: `llamacpp:<file name>?sha256=<first 16 hex digits of the GGUF file>` (the embedded model is
`llamacpp:smollm2?sha256=...`), plus `n_ctx` when given; the folder, `n_threads` and `extra_bufts` are
operational. The hash is cached by (path, size, mtime, ctime, inode), so a 100 MB file is hashed once.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import Field

from trusteval.errors import BackendError, missing_extra
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.embedded import EMBEDDED_NAMES, embedded_gguf_path, weights_sha256
from trusteval.options import Flag, PluginOptions, read_spec_options
from trusteval.records import Generation, Request

OPERATIONAL_OPTIONS = frozenset({"n_threads", "extra_bufts"})  # how it computes, not what it answers
EMBEDDED_IDENTITY = "smollm2"


def identity_parts(spec: ModelSpec) -> tuple[str, dict[str, str]]:
    """The model's name (the embedded one's canonical name, else the file's name) and its file's hash."""
    path = resolve_gguf(spec.name)
    name = EMBEDDED_IDENTITY if spec.name in EMBEDDED_NAMES else path.name
    return name, {"sha256": weights_sha256(path)[:16]}


def resolve_gguf(name: str) -> Path:
    if name in EMBEDDED_NAMES:
        return embedded_gguf_path()
    path = Path(name).expanduser()
    if not path.is_file():
        raise BackendError(f"llamacpp: no GGUF file at '{path}'")
    return path


class LlamaCppBackend:
    batch_size = 1
    max_concurrency = 1

    def __init__(self, spec: ModelSpec, path: Path, llama: Any) -> None:
        self.spec = spec
        self.path = path
        self._llama = llama
        self._busy = threading.Lock()  # held while an answer is computed (in a worker thread)

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        return await asyncio.to_thread(lambda: [self._answer(r) for r in requests])

    def _answer(self, request: Request) -> Generation:
        with self._busy:
            if self._llama is None:
                return Generation.failure(request.key, "llamacpp: the model was closed")
            return self._answer_now(request)

    def _answer_now(self, request: Request) -> Generation:
        started = time.perf_counter()
        try:
            out = self._llama.create_chat_completion(
                messages=request.chat(),
                temperature=request.params.temperature,
                top_p=request.params.top_p,
                max_tokens=request.params.max_new_tokens,
                seed=request.seed,
            )
        except Exception as exc:  # a bad request must not end the run; it is stored as a failure
            return Generation.failure(request.key, f"llamacpp: {exc}", latency_s=time.perf_counter() - started)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Generation(
            key=request.key,
            text=choice["message"].get("content") or "",
            finish_reason=choice.get("finish_reason"),
            latency_s=time.perf_counter() - started,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
        )

    async def aclose(self) -> None:
        """Free the model once no answer is in progress. On Ctrl-C the run's task is cancelled while a worker
        thread is still inside llama.cpp; freeing the model under it crashed the process (SIGSEGV, exit 139,
        issue 21). Waiting for that one answer (its result is discarded) makes the run end with exit 130."""
        await asyncio.to_thread(self._close_when_idle)

    def _close_when_idle(self) -> None:
        with self._busy:
            llama, self._llama = self._llama, None
        close = getattr(llama, "close", None)
        if close:
            close()

    def describe(self) -> dict[str, Any]:
        return {"backend": "llamacpp", "model": self.spec.identity, "file": self.path.name}


class Options(PluginOptions):
    n_ctx: int = Field(4096, ge=0, description="context length in tokens; 0: the model's own (part of its identity)")
    n_threads: int | None = Field(None, ge=1, description="CPU threads (default: all cores)")
    extra_bufts: Flag = Field(False, description="use llama.cpp's extra buffer types (repacked CPU weights)")


_LOADING = threading.Lock()


@contextmanager
def model_defaults(extra_bufts: bool) -> Iterator[None]:
    """While a model loads, llama.cpp's default model parameters carry `use_extra_bufts=extra_bufts`."""
    import llama_cpp.llama_cpp as native

    if "use_extra_bufts" not in {entry[0] for entry in native.llama_model_params._fields_}:
        raise BackendError("llamacpp: this llama-cpp-python is too old (no use_extra_bufts); install >= 0.3.15")
    original = native.llama_model_default_params

    def defaults() -> Any:
        params = original()
        params.use_extra_bufts = extra_bufts
        return params

    with _LOADING:
        native.llama_model_default_params = defaults
        try:
            yield
        finally:
            native.llama_model_default_params = original


def load_llama(path: Path, *, n_ctx: int, n_threads: int, extra_bufts: bool = False) -> Any:
    """A `llama_cpp.Llama` for a GGUF file, with llama.cpp's extra buffer types as asked (off by default)."""
    from llama_cpp import Llama

    with model_defaults(extra_bufts):
        llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, seed=0, verbose=False)
    if bool(llama.model_params.use_extra_bufts) != extra_bufts:
        raise BackendError(f"llamacpp: could not set use_extra_bufts={extra_bufts} for '{path.name}'")
    return llama


def preflight(spec: ModelSpec, settings: BackendSettings) -> None:
    read_spec_options(Options, spec)
    resolve_gguf(spec.name)
    if importlib.util.find_spec("llama_cpp") is None:
        raise missing_extra("llama-cpp-python", "llamacpp")


def create(spec: ModelSpec, settings: BackendSettings) -> LlamaCppBackend:
    options = read_spec_options(Options, spec)
    path = resolve_gguf(spec.name)
    if importlib.util.find_spec("llama_cpp") is None:
        raise missing_extra("llama-cpp-python", "llamacpp")
    n_ctx = options.n_ctx
    n_threads = options.n_threads or max(1, (os.cpu_count() or 2))
    extra_bufts = options.extra_bufts
    try:
        llama = load_llama(path, n_ctx=n_ctx, n_threads=n_threads, extra_bufts=extra_bufts)
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(f"llamacpp: cannot load '{path}': {exc}") from exc
    return LlamaCppBackend(spec, path, llama)
