"""How close the `openai` backend comes to ideal concurrency.

Against a local fake OpenAI-compatible server (its own process) with a fixed latency per request, N requests
at concurrency C should take N x latency / C; the target is at most 1.3 times that. The backend is driven the
way the pipeline drives it (C generate() calls of one request each in flight) and with one generate() call
over all requests. The baseline is the same backend with a single httpx client whose pool holds C
connections: httpcore's pool does work that grows with its size on every request, which is why the backend
spreads connections over several small clients. Optionally, a small run against a real llama.cpp server
(which answers one request at a time) gives its throughput. A pool run (`--replicas`, default 4) spreads the
same total concurrency over that many fake servers in one `base_url=URL1,URL2,...` spec.

    PYTHONPATH=src python bench/bench_openai_concurrency.py [--requests 500 --concurrency 32 --latency 0.2]

Prints one JSON line and writes bench/results/openai_concurrency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]

import httpx  # noqa: E402

from fixtures.llama_server import (  # noqa: E402
    Reply,
    ScriptedOpenAIServer,
    completion_body,
    llama_server_available,
    start_llama_server,
    stop_llama_server,
)
from trusteval.models.base import BackendSettings, ModelSpec  # noqa: E402
from trusteval.models.embedded import embedded_gguf_path  # noqa: E402
from trusteval.models.openai import CONNECTIONS_PER_CLIENT, OpenAIBackend, create, read_config  # noqa: E402
from trusteval.models.openai_pool import Replica  # noqa: E402
from trusteval.records import Generation, GenerationParams, Request  # noqa: E402

TARGET_RATIO = 1.3
RESULTS = REPO / "bench" / "results" / "openai_concurrency.json"


def make_requests(count: int, max_new_tokens: int) -> list[Request]:
    params = GenerationParams(temperature=0.0, top_p=0.9, max_new_tokens=max_new_tokens)
    return [
        Request.build("openai:bench", (("user", f"Write one sentence about the number {i}."),), params, 1)
        for i in range(count)
    ]


async def drive_like_pipeline(backend: OpenAIBackend, requests: list[Request]) -> list[Generation]:
    """Keep `max_concurrency` generate() calls of one request each in flight, as the pipeline does."""
    slots = asyncio.Semaphore(backend.max_concurrency)

    async def one(request: Request) -> Generation:
        async with slots:
            [generation] = await backend.generate([request])
            return generation

    return list(await asyncio.gather(*(one(r) for r in requests)))


async def drive_in_one_call(backend: OpenAIBackend, requests: list[Request]) -> list[Generation]:
    return await backend.generate(requests)


def timed_run(backend: OpenAIBackend, requests: list[Request], driver) -> tuple[float, list[Generation]]:
    async def go() -> tuple[float, list[Generation]]:
        try:
            started = time.perf_counter()
            generations = await driver(backend, requests)
            return time.perf_counter() - started, generations
        finally:
            await backend.aclose()

    return asyncio.run(go())


def summarise(elapsed: float, generations: list[Generation], ideal_s: float | None = None) -> dict:
    failed = [g.error for g in generations if not g.ok]
    summary = {
        "elapsed_s": round(elapsed, 3),
        "requests_per_s": round(len(generations) / elapsed, 2),
        "ok": len(generations) - len(failed),
        "failed": len(failed),
    }
    if failed:
        summary["first_error"] = failed[0]
    if ideal_s is not None:
        summary["ideal_s"] = round(ideal_s, 3)
        summary["ratio"] = round(elapsed / ideal_s, 3)
    return summary


class FixedLatency:
    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s

    def __call__(self, _index: int, _request) -> Reply:
        return Reply(body=completion_body(), delay_s=self.latency_s)


def serve_fixed_latency(latency_s: float, port_sender, stop) -> None:
    with ScriptedOpenAIServer(FixedLatency(latency_s), record=False) as server:
        port_sender.send(server.port)
        stop.wait()


@contextmanager
def fixed_latency_server(latency_s: float):
    """The fake server in a child process, so that it does not share the client's interpreter lock."""
    receiver, sender = multiprocessing.Pipe(duplex=False)
    stop = multiprocessing.Event()
    process = multiprocessing.Process(target=serve_fixed_latency, args=(latency_s, sender, stop), daemon=True)
    process.start()
    try:
        if not receiver.poll(30):
            raise RuntimeError("the fixed-latency server did not start")
        yield f"http://127.0.0.1:{receiver.recv()}/v1"
    finally:
        stop.set()
        process.join(10)
        if process.is_alive():
            process.kill()


def one_client_backend(spec: ModelSpec, settings: BackendSettings) -> OpenAIBackend:
    """The baseline: the same backend with one httpx client holding all `concurrency` connections."""
    config = read_config(spec, settings)
    limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
    client = httpx.AsyncClient(limits=limits, timeout=config.timeout_s, trust_env=False)
    return OpenAIBackend(spec, config, [Replica(config.base_url, [client], config.concurrency)])


def fixed_latency_bench(count: int, concurrency: int, latency_s: float, *, baseline: bool = True) -> dict:
    ideal_s = count * latency_s / concurrency
    requests = make_requests(count, 16)
    results: dict = {"requests": count, "concurrency": concurrency, "latency_s": latency_s}
    results["ideal_s"] = ideal_s
    results["httpx_clients"] = -(-concurrency // CONNECTIONS_PER_CLIENT)
    with fixed_latency_server(latency_s) as url:
        spec = ModelSpec.parse(f"openai:bench?base_url={url}&concurrency={concurrency}")
        settings = BackendSettings()
        runs = [("pipeline", create, drive_like_pipeline), ("one_call", create, drive_in_one_call)]
        if baseline:
            runs.append(("baseline_one_client", one_client_backend, drive_like_pipeline))
        for name, make_backend, driver in runs:
            elapsed, generations = timed_run(make_backend(spec, settings), requests, driver)
            results[name] = summarise(elapsed, generations, ideal_s)
    results["ratio"] = results["pipeline"]["ratio"]
    results["meets_target"] = results["ratio"] <= TARGET_RATIO
    return results


def pool_bench(count: int, concurrency: int, latency_s: float, replicas: int) -> dict:
    """The same total concurrency spread over `replicas` fake servers (base_url=URL1,URL2,...)."""
    per_url = max(1, concurrency // replicas)
    ideal_s = count * latency_s / (per_url * replicas)
    results: dict = {"requests": count, "replicas": replicas, "concurrency_per_url": per_url, "latency_s": latency_s}
    with ExitStack() as stack:
        urls = [stack.enter_context(fixed_latency_server(latency_s)) for _ in range(replicas)]
        spec = ModelSpec.parse(f"openai:bench?base_url={','.join(urls)}&concurrency={per_url}")
        elapsed, generations = timed_run(create(spec, BackendSettings()), make_requests(count, 16), drive_like_pipeline)
    results["pipeline"] = summarise(elapsed, generations, ideal_s)
    return results


def llama_server_bench(count: int, concurrency: int, max_new_tokens: int) -> dict:
    missing = llama_server_available()
    if missing:
        return {"skipped": missing}
    requests = make_requests(count, max_new_tokens)
    results: dict = {"requests": count, "max_new_tokens": max_new_tokens}
    with tempfile.TemporaryDirectory() as folder:
        server = start_llama_server(embedded_gguf_path(), Path(folder) / "server.log")
        try:
            for level in (1, concurrency):
                spec = ModelSpec.parse(f"openai:{server.model}?base_url={server.base_url}&concurrency={level}")
                elapsed, generations = timed_run(create(spec, BackendSettings()), requests, drive_like_pipeline)
                summary = summarise(elapsed, generations)
                tokens = sum(g.completion_tokens or 0 for g in generations)
                summary["completion_tokens_per_s"] = round(tokens / elapsed, 1)
                results[f"concurrency_{level}"] = summary
        finally:
            stop_llama_server(server)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds the fake server takes per request")
    parser.add_argument(
        "--high-concurrency", type=int, default=128, help="a second run at this concurrency; 0 skips it"
    )
    parser.add_argument("--replicas", type=int, default=4, help="a pool run over this many servers; 0 skips it")
    parser.add_argument("--llama-requests", type=int, default=16, help="0 skips the llama.cpp server run")
    parser.add_argument("--llama-concurrency", type=int, default=4)
    parser.add_argument("--llama-max-new-tokens", type=int, default=32)
    args = parser.parse_args()

    results = {"fixed_latency": fixed_latency_bench(args.requests, args.concurrency, args.latency)}
    if args.high_concurrency > 0:
        results["fixed_latency_high_concurrency"] = fixed_latency_bench(
            args.high_concurrency * 8, args.high_concurrency, args.latency
        )
    if args.replicas > 0:
        results["fixed_latency_pool"] = pool_bench(args.requests, args.concurrency, args.latency, args.replicas)
    if args.llama_requests > 0:
        results["llama_cpp_server"] = llama_server_bench(
            args.llama_requests, args.llama_concurrency, args.llama_max_new_tokens
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
