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
import concurrent.futures
import importlib.util
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import Field

from trusteval.errors import BackendError, missing_extra
from trusteval.models.base import BackendSettings, ModelSpec
from trusteval.models.embedded import EMBEDDED_NAMES, embedded_gguf_path, weights_sha256
from trusteval.models.llamacpp_batch import BatchDecoder
from trusteval.models.llamacpp_rate import RateWatch
from trusteval.models.llamacpp_threads import ThreadChooser
from trusteval.options import Flag, PluginOptions, read_spec_options
from trusteval.records import Generation, Request

OPERATIONAL_OPTIONS = frozenset({"n_threads", "extra_bufts", "batch"})  # how it computes, not what it answers
EMBEDDED_IDENTITY = "smollm2"
DEFAULT_BATCH = 64  # sequences decoded together, at most (docs/performance.md, "The shared prompt pass and batch 64")
REFILL_FACTOR = 4  # requests per generate call, per decoding slot


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
        from trusteval.registry import did_you_mean

        hint = "" if os.sep in name or name.endswith(".gguf") else did_you_mean(name, sorted(EMBEDDED_NAMES))
        raise BackendError(f"llamacpp: no GGUF file at '{path}'." + hint.replace("'", "'llamacpp:", 1))
    return path


class LlamaCppBackend:
    """Answers requests `parallel` at a time through a BatchDecoder, or one at a time (`batch=1`) through
    `Llama.create_chat_completion`. `generate_stream` yields each answer as its sequence ends (the pipeline
    stores it at once); `generate` collects them. A cancelled call (Ctrl-C) stops the decoding thread after
    its current forward pass and waits for it, so the model is never closed under a running decode."""

    max_concurrency = 1

    def __init__(
        self,
        spec: ModelSpec,
        path: Path,
        llama: Any,
        decoder: BatchDecoder | None = None,
        chooser: ThreadChooser | None = None,
    ) -> None:
        self.spec = spec
        self.path = path
        self._llama = llama
        self._decoder = decoder
        self._chooser = chooser  # the default thread count, followed between requests when batch=1
        # A call holds several slots' worth of requests, so a finished sequence's slot is refilled at once.
        self.batch_size = decoder.parallel * REFILL_FACTOR if decoder else 1
        self._cancelled = threading.Event()
        # Every llama.cpp call from one thread: OpenMP keeps a team of worker threads per calling thread, so
        # calls from the event loop's pool of threads would leave several teams competing for the cores.
        self._thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="llamacpp")
        self._running: asyncio.Future[list[Generation]] | None = None
        self.rate = RateWatch(threads=int(getattr(llama, "n_threads", 0) or 0))

    async def generate(self, requests: Sequence[Request]) -> list[Generation]:
        by_key = {g.key: g async for g in self.generate_stream(requests)}
        return [by_key[r.key] for r in requests]

    async def generate_stream(self, requests: Sequence[Request]) -> AsyncIterator[Generation]:
        """Each request's Generation as soon as it is answered (in the order the sequences end). The decoding
        thread hands each one to the event loop; the stream ends when the thread has returned."""
        self._cancelled.clear()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Generation | None] = asyncio.Queue()

        def on_answer(generation: Generation) -> None:  # in the decoding thread
            loop.call_soon_threadsafe(queue.put_nowait, generation)

        work: Callable[[list[Request]], list[Generation]]
        work = partial(self._decoder.run if self._decoder else self._answer_each, on_answer=on_answer)
        self._running = running = asyncio.ensure_future(loop.run_in_executor(self._thread, work, list(requests)))
        # Queued after every answer: the thread hands its answers over before it returns.
        running.add_done_callback(lambda _: queue.put_nowait(None))
        started = time.perf_counter()
        answered: list[Generation] = []
        try:
            while (generation := await queue.get()) is not None:
                answered.append(generation)
                yield generation
        except (asyncio.CancelledError, GeneratorExit):
            await self._stop_running()
            raise
        running.result()  # the thread's own error, if it raised one
        self.rate.threads = self._decoder.n_threads if self._decoder else int(self._llama.n_threads)
        self.rate.observe(answered, time.perf_counter() - started)

    async def _stop_running(self) -> None:
        """Ask the decoding thread to stop after its current step, and wait for it."""
        running = self._running
        if running is None or running.done():
            return
        self._cancelled.set()
        if self._decoder:
            self._decoder.cancel()
        with suppress(BaseException):
            await asyncio.wait([running])

    def _answer_each(
        self, requests: list[Request], on_answer: Callable[[Generation], None] | None = None
    ) -> list[Generation]:
        answers = []
        for request in requests:
            if self._cancelled.is_set():
                answers.append(Generation.failure(request.key, "llamacpp: cancelled"))
            else:
                answers.append(self._answer(request))
                threads = self._chooser.follow() if self._chooser else None
                if threads is not None:
                    self._llama._ctx.set_n_threads(threads, threads)
                    self._llama.n_threads = self._llama.n_threads_batch = threads
            if on_answer is not None:
                on_answer(answers[-1])
        return answers

    def _answer(self, request: Request) -> Generation:
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
        """Free the model once no answer is in progress. On Ctrl-C the run's task is cancelled while the
        decoding thread is still inside llama.cpp; freeing the model under it crashed the process (SIGSEGV,
        issue 21): the thread is asked to stop after its current step and waited for first."""
        await self._stop_running()
        self._thread.shutdown(wait=True)
        if self._decoder:
            self._decoder.close()
        close = getattr(self._llama, "close", None)
        if close:
            close()

    def describe(self) -> dict[str, Any]:
        parallel = self._decoder.parallel if self._decoder else 1
        return {"backend": "llamacpp", "model": self.spec.identity, "file": self.path.name, "batch": parallel}


class Options(PluginOptions):
    n_ctx: int = Field(
        4096, ge=0, description="context length in tokens per request; 0: the model's own (part of its identity)"
    )
    n_threads: int | None = Field(None, ge=1, description="CPU threads (default: the idle cores, followed)")
    extra_bufts: Flag = Field(False, description="use llama.cpp's extra buffer types (repacked CPU weights)")
    batch: int = Field(
        DEFAULT_BATCH, ge=1, le=256, description="requests decoded together; 1: one at a time (create_chat_completion)"
    )


_LOADING = threading.Lock()


@contextmanager
def model_defaults(extra_bufts: bool) -> Iterator[None]:
    """While a model loads, llama.cpp's default model parameters carry `use_extra_bufts=extra_bufts`."""
    import llama_cpp.llama_cpp as native

    if "use_extra_bufts" not in {entry[0] for entry in native.llama_model_params._fields_}:
        raise BackendError("llamacpp: this llama-cpp-python is too old (no use_extra_bufts); install >= 0.3.36")
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
        llama = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, seed=0, verbose=False
        )
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
    # No thread count given: the cores other processes leave free, sampled while the model loads, then followed.
    chooser = None if options.n_threads else ThreadChooser().start()
    n_threads = options.n_threads or (chooser.cores if chooser else 1)
    batched = options.batch > 1
    # Batched, the Llama only holds the model (its own context is unused): a small context saves memory.
    n_ctx = min(options.n_ctx or 512, 512) if batched else options.n_ctx
    try:
        llama = load_llama(path, n_ctx=n_ctx, n_threads=n_threads, extra_bufts=options.extra_bufts)
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(f"llamacpp: cannot load '{path}': {exc}") from exc
    if chooser:
        n_threads = llama.n_threads = llama.n_threads_batch = chooser.initial()
        llama._ctx.set_n_threads(n_threads, n_threads)
    decoder = None
    if batched:
        n_ctx_seq = options.n_ctx or int(llama._model.n_ctx_train())
        decoder = BatchDecoder(llama, parallel=options.batch, n_ctx_seq=n_ctx_seq, n_threads=n_threads, chooser=chooser)
    return LlamaCppBackend(spec, path, llama, decoder, chooser=None if batched else chooser)
