"""Batched decoding of the llamacpp backend on the real embedded SmolLM2 GGUF: the same answers as one request
at a time through llama-cpp-python, the same answer for the same request key on a rerun, a failing request that
leaves the others of its batch answered, and a cancelled call that stops the decoding thread."""

from __future__ import annotations

import asyncio
import time

import pytest

from trusteval.models import BackendSettings, ModelSpec
from trusteval.models import llamacpp as backend_module
from trusteval.records import GenerationParams, Request

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp")

TOPICS = ["the sea", "a bicycle", "winter", "a library", "coffee", "mountains", "a lost key", "a robot"]


def _requests(temperature: float, max_tokens: int = 16, seed: int = 42, n: int = 6) -> list[Request]:
    params = GenerationParams(temperature=temperature, top_p=0.9, max_new_tokens=max_tokens)
    return [
        Request.build("test", (("user", f"Write one sentence about {topic}."),), params, seed) for topic in TOPICS[:n]
    ]


def _backend(options: str) -> backend_module.LlamaCppBackend:
    spec = ModelSpec.parse(f"llamacpp:smollm2?n_threads=1&n_ctx=256&{options}")
    return backend_module.create(spec, BackendSettings())


@pytest.fixture(scope="module")
def batched():
    backend = _backend("batch=4")
    yield backend
    asyncio.run(backend.aclose())


@pytest.fixture(scope="module")
def single():
    backend = _backend("batch=1")
    yield backend
    asyncio.run(backend.aclose())


def _texts(backend, requests):
    generations = asyncio.run(backend.generate(requests))
    assert all(g.ok for g in generations), [g.error for g in generations]
    return [g.text for g in generations]


def test_batched_greedy_answers_equal_one_at_a_time(batched, single):
    requests = _requests(temperature=0.0)
    assert batched.batch_size > 1 and single.batch_size == 1
    assert _texts(batched, requests) == _texts(single, requests)


def test_sampled_answers_follow_each_request_seed_as_one_at_a_time(batched, single):
    requests = _requests(temperature=0.8, seed=7, n=4)
    together = _texts(batched, requests)
    assert together == _texts(single, requests)
    assert together == _texts(batched, requests[::-1])[::-1]  # same key, same text, whatever its neighbours
    other_seed = _texts(batched, _requests(temperature=0.8, seed=8, n=4))
    assert other_seed != together


def test_a_request_too_long_for_the_context_fails_alone(batched, single):
    requests = _requests(temperature=0.0, n=3)
    params = requests[0].params
    too_long = Request.build("test", (("user", "word " * 400),), params, 42)
    mixed = [requests[0], too_long, *requests[1:]]
    generations = asyncio.run(batched.generate(mixed))
    assert [g.ok for g in generations] == [True, False, True, True]
    assert "exceed context window of 256" in (generations[1].error or "")
    assert [g.text for g in generations if g.ok] == _texts(single, requests)


def test_a_cancelled_call_stops_decoding_and_the_backend_answers_again(batched):
    requests = _requests(temperature=0.0, max_tokens=200)

    async def cancel_soon() -> float:
        task = asyncio.ensure_future(batched.generate(requests))
        await asyncio.sleep(0.5)
        task.cancel()
        started = time.perf_counter()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert batched._running is not None and batched._running.done()  # the thread has stopped
        return time.perf_counter() - started

    asyncio.run(cancel_soon())
    again = _requests(temperature=0.0, n=2)
    assert _texts(batched, again) == _texts(batched, again)


def test_the_stream_yields_each_answer_as_its_sequence_ends(batched):
    from trusteval.models.base import HasAnswerStream

    long = _requests(temperature=0.0, max_tokens=48, n=3)
    short = _requests(temperature=0.0, max_tokens=1, n=4)[3]  # one token: it ends first
    requests = [long[0], short, long[1], long[2]]

    async def collect() -> list[tuple[str, int, bool]]:
        arrived = []
        async for g in batched.generate_stream(requests):
            assert batched._running is not None
            arrived.append((g.key, g.completion_tokens or 0, batched._running.done()))
        return arrived

    assert isinstance(batched, HasAnswerStream)
    arrived = asyncio.run(collect())
    assert sorted(key for key, _, _ in arrived) == sorted(r.key for r in requests)
    assert arrived[0][:2] == (short.key, 1)
    assert arrived[0][2] is False  # yielded while the other sequences were still decoding
    assert {g.key: g.text for g in asyncio.run(batched.generate(requests))} == {
        g.key: g.text for g in asyncio.run(_collect(batched, requests))
    }


async def _collect(backend, requests):
    return [g async for g in backend.generate_stream(requests)]


def test_the_batch_option_is_operational_and_checked():
    assert ModelSpec.parse("llamacpp:smollm2?batch=1").identity == ModelSpec.parse("llamacpp:smollm2").identity
    from trusteval.errors import UsageError

    with pytest.raises(UsageError, match="batch"):
        backend_module.preflight(ModelSpec.parse("llamacpp:smollm2?batch=0"), BackendSettings())


def test_a_call_far_below_the_best_rate_so_far_prints_one_hint(capsys):
    from trusteval.models.llamacpp_rate import RateWatch
    from trusteval.records import Generation

    def call(tokens: int) -> list[Generation]:
        return [Generation(key=str(i), text="x", completion_tokens=tokens // 4) for i in range(4)]

    watch = RateWatch(threads=2)
    assert watch.observe(call(400), 4.0) is None  # 100 tokens/s: the reference
    assert watch.observe(call(100), 4.0) is None  # too few tokens to judge
    assert watch.observe(call(400), 8.0) is None  # 50 tokens/s: not far below
    hint = watch.observe(call(400), 20.0)  # 20 tokens/s
    assert hint is not None and "20 tokens/s, 20% of the 100 tokens/s" in hint and "?n_threads=1" in hint
    assert watch.observe(call(400), 40.0) is None  # once per run
    assert capsys.readouterr().err.count("warning: llamacpp decodes") == 1


class _Alternating:
    """A ThreadChooser stand-in that asks for another thread count after every forward pass: 2, 1, 2, 1..."""

    def __init__(self) -> None:
        self.threads = 1
        self.changes = 0

    def follow(self) -> int:
        self.threads = 3 - self.threads
        self.changes += 1
        return self.threads


def test_greedy_answers_do_not_depend_on_thread_count_changes_between_passes(single):
    from trusteval.models.llamacpp_batch import BatchDecoder

    requests = _requests(temperature=0.0, max_tokens=24, n=4)
    chooser = _Alternating()
    decoder = BatchDecoder(single._llama, parallel=4, n_ctx_seq=256, n_threads=1, chooser=chooser)  # type: ignore[arg-type]
    try:
        switched = [g.text for g in decoder.run(requests)]
    finally:
        decoder.close()
    assert chooser.changes >= 24 and decoder.n_threads in (1, 2)
    assert switched == _texts(single, requests)


def _seeded(temperature: float, seeds: tuple[int, ...], n: int, max_tokens: int = 20) -> list[Request]:
    return [r for seed in seeds for r in _requests(temperature, max_tokens=max_tokens, seed=seed, n=n)]


def _decoded(single, requests, *, share: bool, parallel: int = 4) -> tuple[list[str], int]:
    from trusteval.models.llamacpp_batch import BatchDecoder

    decoder = BatchDecoder(single._llama, parallel=parallel, n_ctx_seq=256, n_threads=1, share_prompts=share)
    try:
        generations = decoder.run(requests)
    finally:
        decoder.close()
    assert all(g.ok for g in generations), [g.error for g in generations]
    return [g.text for g in generations], decoder.decoded_tokens


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_requests_with_one_prompt_share_its_pass_and_answer_as_alone(single, temperature):
    # Three seeds of three prompts, seed-major (the decoder puts a prompt's copies side by side): with
    # parallel=4 the first prompt's copies share its pass, and a later prompt's copies admitted after its
    # pass is over compute it again; with parallel=2, pairs share. Every answer stays as computed alone.
    requests = _seeded(temperature, seeds=(42, 43, 44), n=3)
    alone, alone_tokens = _decoded(single, requests, share=False)
    assert alone == _texts(single, requests)  # as llama-cpp-python answers each one on its own
    prompt_tokens = [g.prompt_tokens or 0 for g in asyncio.run(single.generate(requests[:3]))]
    for parallel, first_copies_sharing in ((4, 2), (2, 1)):  # the first prompt's copies admitted with it
        shared, shared_tokens = _decoded(single, requests, share=True, parallel=parallel)
        assert shared == alone
        assert alone_tokens - shared_tokens >= first_copies_sharing * prompt_tokens[0]
        assert alone_tokens - shared_tokens <= 2 * sum(prompt_tokens)  # never more than every repeat
    if temperature > 0:
        assert len(set(shared[0::3])) > 1 or len(set(shared)) > 3  # the seeds still answer differently


def test_the_context_holds_as_many_sequences_as_the_call_and_the_cache_budget_allow(single):
    from trusteval.models import llamacpp_batch
    from trusteval.models.llamacpp_batch import BatchDecoder, cache_cells

    # SmolLM2-135M: 30 layers, 3 key/value heads of 64: 23,040 bytes of float16 cache per token
    assert cache_cells(single._llama) == llamacpp_batch.CACHE_BUDGET_BYTES // 23_040
    decoder = BatchDecoder(single._llama, parallel=64, n_ctx_seq=2048, n_threads=1)
    assert decoder.cache_cells == cache_cells(single._llama)
    try:
        decoder.run(_requests(temperature=0.0, max_tokens=2, n=3))
        assert decoder._slots == 3  # a call of 3 requests: 3 sequences, not 64
        decoder.run(_requests(temperature=0.0, max_tokens=600, n=5))  # about 620 tokens each: 768 cells
        assert decoder._slots == 5 and decoder._ctx_seq == 768  # the context grown for the longer call
    finally:
        decoder.close()
