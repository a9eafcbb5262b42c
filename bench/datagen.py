"""Data generation concurrency against a local OpenAI-compatible server (part `datagen` of
`python -m diaforge.bench.run`; see bench/README.md).

Requests per second through the OpenAI backend against `FaultyOpenAIServer` (in its own process,
with a fixed latency and a trivial reply) over the ideal (concurrency / latency), at 8, 32 and 64
requests in flight; also through the engine's own scheduling (seeds of sequential requests, twice
the concurrency in flight, one shared request limit).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any


def _serve(latency: float, port_queue, stop_event) -> None:
    """Child process: the test server with a fixed latency and a trivial reply, until told to stop."""
    from diaforge.bench.fake_server import FaultyOpenAIServer

    with FaultyOpenAIServer(lambda request: "ok", latency=latency) as server:
        port_queue.put(server.port)
        stop_event.wait()
        port_queue.put(server.stats.max_in_flight)


async def _backend_requests(base_url: str, concurrency: int, total: int) -> float:
    """`total` independent requests, at most `concurrency` in flight; returns the wall time."""
    from diaforge.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("test-model", base_url=base_url, max_retries=0, timeout=60)
    gate = asyncio.Semaphore(concurrency)
    messages = [{"role": "user", "content": "hello"}]

    async def one() -> None:
        async with gate:
            await backend.chat(messages, max_tokens=8)

    try:
        await asyncio.gather(*(one() for _ in range(concurrency)))  # open the connections
        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        return time.perf_counter() - start
    finally:
        await backend.aclose()


async def _engine_requests(base_url: str, concurrency: int, seeds: int, per_seed: int) -> float:
    """The engine's scheduling: `seeds` seeds of `per_seed` sequential requests, twice the
    concurrency of seeds in flight (diaforge.data_gen.engine._run_seeds), every request through
    `seed_engine.LimitedBackend` sharing one limit of `concurrency` (engine.generate)."""
    from diaforge.data_gen.seed_engine import LimitedBackend
    from diaforge.llm.openai_backend import OpenAIBackend

    inner = OpenAIBackend("test-model", base_url=base_url, max_retries=0, timeout=60)
    backend = LimitedBackend(inner, asyncio.Semaphore(concurrency))
    in_flight = asyncio.Semaphore(max(2, 2 * concurrency))
    messages = [{"role": "user", "content": "hello"}]

    async def seed() -> None:
        async with in_flight:
            for _ in range(per_seed):
                await backend.chat(messages, max_tokens=8)

    try:
        await asyncio.gather(*(backend.chat(messages, max_tokens=8) for _ in range(concurrency)))
        start = time.perf_counter()
        await asyncio.gather(*(seed() for _ in range(seeds)))
        return time.perf_counter() - start
    finally:
        await backend.aclose()


def bench_datagen(latency: float, levels=(8, 32, 64), waves: int = 8, per_seed: int = 4) -> dict[str, Any]:
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    port_queue, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_serve, args=(latency, port_queue, stop), daemon=True)
    server.start()
    try:
        port = port_queue.get(timeout=60)
        base_url = f"http://127.0.0.1:{port}/v1"
        backend, engine = {}, {}
        for c in levels:
            total = waves * c
            wall = asyncio.run(_backend_requests(base_url, c, total))
            ideal = c / latency
            backend[str(c)] = {
                "requests": total,
                "seconds": round(wall, 3),
                "requests_per_s": round(total / wall, 2),
                "ideal_requests_per_s": round(ideal, 2),
                "efficiency": round(total / wall / ideal, 4),
            }
            seeds = waves * c // per_seed
            wall = asyncio.run(_engine_requests(base_url, c, seeds, per_seed))
            requests = seeds * per_seed
            engine[str(c)] = {
                "seeds": seeds,
                "requests_per_seed": per_seed,
                "seconds": round(wall, 3),
                "requests_per_s": round(requests / wall, 2),
                "seeds_per_s": round(seeds / wall, 3),
                "efficiency": round(requests / wall / ideal, 4),
            }
        stop.set()
        max_in_flight = port_queue.get(timeout=30)
    finally:
        stop.set()
        server.join(timeout=30)
        if server.is_alive():
            server.terminate()
    return {
        "value": {c: backend[c]["efficiency"] for c in backend},
        "latency_s": latency,
        "server": "diaforge.bench.fake_server.FaultyOpenAIServer in its own process, fixed latency, reply 'ok'",
        "server_max_in_flight": max_in_flight,
        "backend": backend,
        "engine_scheduling": engine,
    }
