"""Batched decoding for the `llamacpp` backend: several requests decoded together, one sequence each, in one
llama.cpp context through llama-cpp-python's low-level bindings.

Each forward pass (`llama_decode`) carries one new token of every sequence being answered (and prompt tokens
of the sequences just admitted), so llama.cpp multiplies the weights by a matrix of tokens instead of a vector:
on a CPU the weights are read from memory once per step for all sequences. A sequence leaves when it ends
(end-of-generation token, a stop string, its token limit) and the next request takes its slot at once
(continuous batching).

Each request is answered exactly as `Llama.create_chat_completion` would answer it alone: its prompt, stop
strings and sampling settings are taken from llama-cpp-python's own chat handler (`completion_args`), and each
sequence samples through its own llama.cpp sampler chain (the chain `Llama._init_sampler` builds, seeded with
the request's seed), so a request's answer depends on its own key only. Batched greedy output equals
one-at-a-time output except where floating-point rounding of the batched matrix products changes an argmax
(docs/backends-llamacpp.md gives the measured rate).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trusteval.models.llamacpp_threads import ThreadChooser
from trusteval.records import Generation, Request

SEQ_CTX_STEP = 256  # llama.cpp pads each sequence's share of the cache to this many cells
CACHE_BUDGET_BYTES = 768 << 20  # the cache's size in all (float16 keys and values): fewer slots for long requests
FALLBACK_CACHE_CELLS = 16_384  # where the model's shape cannot be read
PENALTY_LAST_N = 64  # llama-cpp-python's `last_n_tokens_size` default


class _Captured(Exception):
    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class _CaptureCompletion:
    """Stands in for a `Llama` inside its chat handler: every attribute is the real model's, except that
    `create_completion` records its arguments (prompt tokens, stop strings, sampling) instead of generating."""

    def __init__(self, llama: Any) -> None:
        self._llama = llama

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:  # some handlers call `llama(prompt=...)`
        raise _Captured(kwargs)


@dataclass(frozen=True)
class CompletionArgs:
    """What `create_chat_completion` would decode for a request: prompt tokens, stops and sampling."""

    prompt: list[int]
    stop: list[bytes]
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    min_p: float
    typical_p: float
    repeat_penalty: float
    frequency_penalty: float
    presence_penalty: float
    seed: int


def completion_args(llama: Any, request: Request) -> CompletionArgs:
    """The prompt, stop strings and sampling settings llama-cpp-python's chat handler gives this request."""
    from llama_cpp import Llama

    try:
        Llama.create_chat_completion(
            _CaptureCompletion(llama),  # type: ignore[arg-type]
            messages=request.chat(),  # type: ignore[arg-type]
            temperature=request.params.temperature,
            top_p=request.params.top_p,
            max_tokens=request.params.max_new_tokens,
            seed=request.seed,
        )
    except _Captured as captured:
        kwargs = captured.kwargs
    else:  # pragma: no cover - a chat handler that does not call create_completion
        raise RuntimeError("this model's chat handler cannot be batched; use ?batch=1")
    prompt = kwargs["prompt"]
    if isinstance(prompt, str):
        prompt = llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
    stop = kwargs.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    return CompletionArgs(
        prompt=list(prompt),
        stop=[s.encode("utf-8") for s in stop],
        max_tokens=int(kwargs.get("max_tokens") or 0),
        temperature=float(kwargs.get("temperature", 0.8)),
        top_p=float(kwargs.get("top_p", 0.95)),
        top_k=int(kwargs.get("top_k", 40)),
        min_p=float(kwargs.get("min_p", 0.05)),
        typical_p=float(kwargs.get("typical_p", 1.0)),
        repeat_penalty=float(kwargs.get("repeat_penalty", 1.0)),
        frequency_penalty=float(kwargs.get("frequency_penalty", 0.0)),
        presence_penalty=float(kwargs.get("presence_penalty", 0.0)),
        seed=int(kwargs["seed"]) if kwargs.get("seed") is not None else request.seed,
    )


def make_sampler(args: CompletionArgs, n_vocab: int) -> Any:
    """The sampler chain `Llama._init_sampler` builds for these settings (no grammar, no mirostat)."""
    import llama_cpp as native

    chain = native.llama_sampler_chain_init(native.llama_sampler_chain_default_params())
    stages = [
        native.llama_sampler_init_penalties(
            n_vocab, PENALTY_LAST_N, args.repeat_penalty, args.frequency_penalty, args.presence_penalty
        )
    ]
    if args.temperature < 0.0:
        stages.append(native.llama_sampler_init_dist(args.seed))
    elif args.temperature == 0.0:
        stages.append(native.llama_sampler_init_greedy())
    else:
        stages += [
            native.llama_sampler_init_top_k(args.top_k),
            native.llama_sampler_init_typical(args.typical_p, 1),
            native.llama_sampler_init_top_p(args.top_p, 1),
            native.llama_sampler_init_min_p(args.min_p, 1),
            native.llama_sampler_init_temp(args.temperature),
            native.llama_sampler_init_dist(args.seed),
        ]
    for stage in stages:
        native.llama_sampler_chain_add(chain, stage)
    return chain


class _Answers:
    """One slot per request of a `run`; `put` fills one and reports it to `on_answer` at once."""

    def __init__(self, size: int, on_answer: Callable[[Generation], None] | None) -> None:
        self.items: list[Generation | None] = [None] * size
        self._on_answer = on_answer

    def put(self, index: int, generation: Generation) -> None:
        self.items[index] = generation
        if self._on_answer is not None:
            self._on_answer(generation)

    def has(self, index: int) -> bool:
        return self.items[index] is not None


@dataclass
class _Slot:
    """One request being answered: its sequence id in the context, its prompt still to feed, its answer."""

    index: int  # the request's position in the call
    seq_id: int
    args: CompletionArgs
    sampler: Any
    started: float
    fed: int = 0  # prompt tokens already in the cache
    tokens: list[int] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)
    logit_row: int = -1  # row of this sequence's logits in the last batch; -1: none
    source: _Slot | None = None  # a slot with the same prompt whose prompt pass this one shares
    text: bytes | None = None
    finish: str | None = None
    multibyte_fix: int = 0

    @property
    def prefilling(self) -> bool:
        return self.source is None and self.fed < len(self.args.prompt)

    @property
    def decoding(self) -> bool:
        return self.source is None and self.fed >= len(self.args.prompt)


class BatchDecoder:
    """Decodes requests `parallel` at a time in one llama.cpp context over the `Llama`'s model.

    Not thread-safe: one `run` at a time (the backend serialises calls). `cancel` (any thread) makes the
    running `run` stop after the current forward pass and answer the unfinished requests as failures.
    """

    def __init__(
        self,
        llama: Any,
        *,
        parallel: int,
        n_ctx_seq: int,
        n_threads: int,
        n_batch: int = 512,
        chooser: ThreadChooser | None = None,
        share_prompts: bool = True,
    ) -> None:
        self.llama = llama
        self.share_prompts = share_prompts  # requests with the same prompt tokens share one prompt pass
        self.parallel = max(1, parallel)
        self.n_ctx_seq_max = n_ctx_seq
        self.n_threads = n_threads
        self.chooser = chooser  # the default thread count, followed between forward passes
        self.n_batch = max(n_batch, self.parallel)
        self.cache_cells = cache_cells(llama)  # tokens of cache the budget allows this model, read once
        self.cancelled = threading.Event()
        self._ctx: Any = None
        self._ctx_seq = 0  # cells per sequence of the current context
        self._slots = 0  # sequences of the current context (parallel, fewer for long requests)
        self._batch: Any = None
        self.decode_s = 0.0  # seconds inside llama_decode, summed over all runs
        self.decoded_tokens = 0

    def cancel(self) -> None:
        self.cancelled.set()

    def close(self) -> None:
        import llama_cpp as native

        if self._batch is not None:
            native.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx is not None:
            native.llama_free(self._ctx)
            self._ctx = None

    def run(
        self, requests: Sequence[Request], on_answer: Callable[[Generation], None] | None = None
    ) -> list[Generation]:
        """One Generation per request, in order; a request that cannot be answered is a failed Generation.
        `on_answer` (called in this thread) receives each Generation as soon as its request is answered."""
        self.cancelled.clear()
        answers = _Answers(len(requests), on_answer)
        admitted: deque[tuple[int, Request, CompletionArgs]] = deque()
        for index, request in enumerate(requests):
            try:
                admitted.append((index, request, completion_args(self.llama, request)))
            except Exception as exc:
                answers.put(index, Generation.failure(request.key, f"llamacpp: {exc}"))
        if admitted and self.share_prompts:
            admitted = _same_prompts_together(admitted)
        if admitted:
            needed = max(len(a.prompt) + max(a.max_tokens, 1) for _, _, a in admitted)
            self._ensure_context(needed, sequences=len(admitted))
            self._decode_all(requests, admitted, answers)
        for index, request in enumerate(requests):
            if not answers.has(index):
                answers.put(index, Generation.failure(request.key, "llamacpp: not answered"))
        return [a for a in answers.items if a is not None]

    def _ensure_context(self, needed: int, sequences: int) -> None:
        """A context for `sequences` requests at most `parallel` at a time, each sequence's share holding
        `needed` tokens (capped by n_ctx), within the cache budget; made or grown."""
        import llama_cpp as native

        cells = min(self.n_ctx_seq_max, -(-needed // SEQ_CTX_STEP) * SEQ_CTX_STEP)
        slots = max(1, min(self.parallel, sequences, self.cache_cells // max(cells, 1)))
        if self._ctx is not None and self._ctx_seq >= cells and self._slots >= slots:
            return
        self.close()
        # The Llama's own settings (flash attention off, its RoPE scaling), so a sequence computes as it does there.
        own = self.llama.context_params
        params = type(own).from_buffer_copy(own)
        params.n_ctx = cells * slots
        params.n_batch = self.n_batch
        params.n_ubatch = self.n_batch
        params.n_seq_max = slots
        params.n_threads = self.n_threads
        params.n_threads_batch = self.n_threads
        params.kv_unified = False
        params.no_perf = True
        ctx = native.llama_init_from_model(self.llama._model.model, params)
        if not ctx:
            raise RuntimeError(f"llama.cpp could not create a context of {params.n_ctx} tokens")
        self._ctx = ctx
        self._slots = slots
        self._ctx_seq = int(native.llama_n_ctx_seq(ctx)) if hasattr(native, "llama_n_ctx_seq") else cells
        self._batch = native.llama_batch_init(self.n_batch, 0, 1)

    def _decode_all(
        self,
        requests: Sequence[Request],
        waiting: deque[tuple[int, Request, CompletionArgs]],
        answers: _Answers,
    ) -> None:
        import llama_cpp as native

        memory = native.llama_get_memory(self._ctx)
        free_ids = list(range(self._slots - 1, -1, -1))
        active: list[_Slot] = []
        try:
            while waiting or active:
                while waiting and free_ids:
                    slot = self._admit(*waiting.popleft(), free_ids, answers, memory)
                    if slot is not None:
                        slot.source = self._prompt_source(slot, active)
                        active.append(slot)
                if not active:
                    continue
                if self.cancelled.is_set():
                    for slot in active:
                        answers.put(slot.index, self._failure(requests[slot.index], slot, "cancelled"))
                    for index, request, _ in waiting:
                        answers.put(index, Generation.failure(request.key, "llamacpp: cancelled"))
                    waiting.clear()
                    break
                error = self._step(active)
                if error is None:
                    self._hand_over_prompts(active, memory)
                self._follow_threads()
                for slot in list(active):
                    if error is not None and slot.logit_row >= 0:
                        answers.put(slot.index, self._failure(requests[slot.index], slot, error))
                    elif slot.logit_row >= 0:
                        self._sample(slot)
                    if not answers.has(slot.index) and slot.finish is not None:
                        answers.put(slot.index, self._answer(requests[slot.index], slot))
                    if answers.has(slot.index):
                        active.remove(slot)
                        self._release(slot, free_ids, memory)
        finally:
            for slot in active:
                self._release(slot, free_ids, memory)

    def _follow_threads(self) -> None:
        threads = self.chooser.follow() if self.chooser else None
        if threads is not None:
            import llama_cpp as native

            native.llama_set_n_threads(self._ctx, threads, threads)
            self.n_threads = threads

    def _admit(
        self,
        index: int,
        request: Request,
        args: CompletionArgs,
        free_ids: list[int],
        answers: _Answers,
        memory: Any,
    ) -> _Slot | None:
        """A slot for the request, or None when it cannot be answered (its failure stored in `answers`)."""
        import llama_cpp as native

        limit = self._ctx_seq
        if len(args.prompt) >= limit:
            message = f"llamacpp: Requested tokens ({len(args.prompt)}) exceed context window of {limit}"
            answers.put(index, Generation.failure(request.key, message))
            return None
        max_tokens = args.max_tokens if args.max_tokens > 0 else limit - len(args.prompt)
        max_tokens = min(max_tokens, limit - len(args.prompt))
        args = CompletionArgs(**{**args.__dict__, "max_tokens": max_tokens})
        seq_id = free_ids.pop()
        native.llama_memory_seq_rm(memory, seq_id, -1, -1)
        sampler = make_sampler(args, native.llama_vocab_n_tokens(self.llama._model.vocab))
        return _Slot(index=index, seq_id=seq_id, args=args, sampler=sampler, started=time.perf_counter())

    def _step(self, active: list[_Slot]) -> str | None:
        """One forward pass: the last token of each decoding sequence, then the prompt tokens of one sequence
        while they fit. Returns llama.cpp's error, or None."""
        import llama_cpp as native

        batch = self._batch
        n = 0

        def add(token: int, pos: int, seq_id: int, logits: bool) -> None:
            nonlocal n
            batch.token[n] = token
            batch.pos[n] = pos
            batch.n_seq_id[n] = 1
            batch.seq_id[n][0] = seq_id
            batch.logits[n] = logits
            n += 1

        for slot in active:
            slot.logit_row = -1
            if slot.source is not None and slot.source.sampler is None:  # its source failed before its prompt
                slot.source = None
            if slot.decoding:
                slot.logit_row = n
                add(slot.tokens[-1], len(slot.args.prompt) + len(slot.tokens) - 1, slot.seq_id, True)
        # One prompt per pass: prompts of several sequences in one pass change llama.cpp's rounding (measured:
        # greedy answers then differ from one-at-a-time ones); one prompt beside single decode tokens does not.
        slot = next((s for s in active if s.prefilling), None)
        while slot is not None and slot.prefilling and n < self.n_batch:
            last = slot.fed == len(slot.args.prompt) - 1
            if last:
                slot.logit_row = n
            add(slot.args.prompt[slot.fed], slot.fed, slot.seq_id, last)
            slot.fed += 1
        batch.n_tokens = n
        started = time.perf_counter()
        code = native.llama_decode(self._ctx, batch)
        self.decode_s += time.perf_counter() - started
        self.decoded_tokens += n
        return None if code == 0 else f"llama_decode returned {code}"

    def _prompt_source(self, slot: _Slot, active: list[_Slot]) -> _Slot | None:
        """An active slot whose prompt pass is still to come and whose prompt equals this slot's, if any."""
        if not self.share_prompts:
            return None
        return next((s for s in active if s.prefilling and s.args.prompt == slot.args.prompt), None)

    def _hand_over_prompts(self, active: list[_Slot], memory: Any) -> None:
        """Followers of a slot whose prompt pass has just ended take a copy of its cache and sample their first
        token from its logits row. The copy holds the same values the follower's own prompt pass would compute
        (one prompt per pass, so a prompt's values do not depend on its neighbours in the batch), so each
        answer stays what the request alone gives; only the repeated prompt work is saved."""
        import llama_cpp as native

        for slot in active:
            source = slot.source
            if source is None or source.prefilling or source.logit_row < 0:
                continue
            native.llama_memory_seq_cp(memory, source.seq_id, slot.seq_id, -1, -1)
            slot.source = None
            slot.fed = len(slot.args.prompt)
            slot.logit_row = source.logit_row

    def _sample(self, slot: _Slot) -> None:
        """Sample the slot's next token and apply llama-cpp-python's end rules (eog, stop string, length)."""
        import llama_cpp as native

        token = native.llama_sampler_sample(slot.sampler, self._ctx, slot.logit_row)
        vocab = self.llama._model.vocab
        if native.llama_vocab_is_eog(vocab, token):
            slot.text, slot.finish = b"".join(slot.pieces), "stop"
            return
        slot.tokens.append(token)
        slot.pieces.append(self.llama.detokenize([token]))
        text = b"".join(slot.pieces)
        slot.multibyte_fix = _multibyte_fix(text, slot.multibyte_fix)
        if slot.multibyte_fix > 0:  # as llama-cpp-python: wait for the rest of a character, even past the limit
            slot.multibyte_fix -= 1
            return
        stops = [s for s in slot.args.stop if s in text]
        if stops:
            slot.text, slot.finish = text[: text.index(stops[0])], "stop"
        elif len(slot.tokens) >= slot.args.max_tokens:
            slot.text, slot.finish = text, "length"

    def _answer(self, request: Request, slot: _Slot) -> Generation:
        return Generation(
            key=request.key,
            text=(slot.text or b"").decode("utf-8", errors="ignore"),
            finish_reason=slot.finish,
            latency_s=time.perf_counter() - slot.started,
            prompt_tokens=len(slot.args.prompt),
            completion_tokens=len(slot.tokens),
        )

    def _failure(self, request: Request, slot: _Slot, reason: str) -> Generation:
        return Generation.failure(request.key, f"llamacpp: {reason}", latency_s=time.perf_counter() - slot.started)

    def _release(self, slot: _Slot, free_ids: list[int], memory: Any) -> None:
        import llama_cpp as native

        if slot.sampler is not None:
            native.llama_sampler_free(slot.sampler)
            slot.sampler = None
            native.llama_memory_seq_rm(memory, slot.seq_id, -1, -1)
            free_ids.append(slot.seq_id)


def cache_cells(llama: Any) -> int:
    """Tokens of cache that fit CACHE_BUDGET_BYTES for this model: float16 keys and values of every layer
    (llama.cpp's default cache type), from the model's layer count and key/value heads."""
    import llama_cpp as native

    try:
        model = llama._model.model
        layers, embd = native.llama_model_n_layer(model), native.llama_model_n_embd(model)
        heads, kv_heads = native.llama_model_n_head(model), native.llama_model_n_head_kv(model)
        per_token = layers * 2 * (embd // heads) * kv_heads * 2
    except (AttributeError, TypeError, ValueError, ZeroDivisionError):
        return FALLBACK_CACHE_CELLS
    return max(SEQ_CTX_STEP, CACHE_BUDGET_BYTES // per_token) if per_token > 0 else FALLBACK_CACHE_CELLS


def _same_prompts_together(
    admitted: deque[tuple[int, Request, CompletionArgs]],
) -> deque[tuple[int, Request, CompletionArgs]]:
    """The requests reordered so that those with the same prompt tokens follow each other (first appearance
    order kept), so they are admitted together and share one prompt pass. Answers do not depend on order."""
    groups: dict[tuple[int, ...], list[tuple[int, Request, CompletionArgs]]] = {}
    for entry in admitted:
        groups.setdefault(tuple(entry[2].prompt), []).append(entry)
    return deque(entry for group in groups.values() for entry in group)


def _multibyte_fix(text: bytes, fix: int) -> int:
    """llama-cpp-python's count of tokens to wait while the text ends inside a multi-byte UTF-8 character
    (its `_create_completion`, kept exactly, including how it reads texts shorter than 3 bytes)."""
    for k, char in enumerate(text[-3:]):
        k = 3 - k
        for num, pattern in ((2, 192), (3, 224), (4, 240)):
            if num > k and pattern & char == pattern:
                fix = num - k
    return fix
