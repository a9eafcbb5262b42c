"""The `serve` part of `make bench`: requests per second of `diaforge serve MODEL`
(`diaforge.eval.serve`) at 1, 8 and 16 concurrent clients, and of `transformers serve` on the same
requests at the same concurrencies, in one run.

The requests: the opening user turn of each of the first `--serve-requests` held-out dialogues,
its candidate tools as OpenAI ``tools=``, greedy (temperature 0), ``max_tokens`` `--serve-budget`;
the same list at every concurrency, at most that many in flight (an asyncio semaphore over the
OpenAI async client). transformers serve is sent the prompt ours renders (`as_rendered`: the tool
listing in the system prompt, where the model's chat template would drop ``tools=``), so both read
one prompt; each server's prompt and completion token counts are recorded. Each server runs as a process of its own on a free port of 127.0.0.1, with
the bench's torch threads, and is stopped afterwards (terminated, then killed); it answers one
untimed request before the first batch is timed. The value is our rate at the second concurrency
over our rate at the first (8 over 1 by default; the target is >= 3); `over_transformers` divides
ours by transformers serve's at each concurrency. A transformers serve that cannot start or answer
is recorded with its reason; the part goes on without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["add_serve_args", "as_rendered", "bench_serve", "serve_requests"]

CONCURRENCY = (1, 8, 16)
BASELINES = ("transformers", "none")
STARTUP_TIMEOUT_S = 300.0
REQUEST_TIMEOUT_S = 900.0


def serve_requests(bench_path: Path, count: int, budget: int) -> list[dict[str, Any]]:
    """The chat completion bodies (without the model): the opening user turn of each of the
    first `count` dialogues of `bench_path` that has one, with its candidates as ``tools=``."""
    from diaforge.format.prompt import openai_tools
    from diaforge.schema import load_dialogues

    bodies = []
    for dialogue in load_dialogues(bench_path):
        opening = next((t.content for t in dialogue.turns if t.role == "user" and t.content), None)
        if opening is None:
            continue
        bodies.append(
            {
                "messages": [{"role": "user", "content": opening}],
                "tools": openai_tools(dialogue.candidate_tools),
                "temperature": 0,
                "max_tokens": budget,
            }
        )
        if len(bodies) == count:
            break
    if not bodies:
        raise ValueError(f"{bench_path}: no dialogue with a user turn")
    return bodies


def as_rendered(model: Path, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bodies as `diaforge serve` reads them for `model`: where its prompt format puts the
    tool listing in the system prompt, the messages with that system prompt and no ``tools=``.
    A server whose chat template drops ``tools=`` (SmolLM2's does) then reads the same prompt."""
    from diaforge.eval.models import choose_prompt_format
    from diaforge.eval.serve_protocol import ServedModel, read_request
    from diaforge.llm.decoding import DecodingConfig

    served = ServedModel("bench", choose_prompt_format(str(model)).prompt_format, DecodingConfig())
    out = []
    for body in bodies:
        generation = read_request({"model": "bench", **body}, served).generation
        rendered = {**body, "messages": generation.messages}
        if generation.tools is None:
            rendered.pop("tools", None)
        out.append(rendered)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_ready(url: str, dead: Callable[[], str | None], timeout_s: float) -> float:
    """Seconds until `url` answers 200; RuntimeError when `dead` gives a reason or time runs out."""
    import httpx

    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        reason = dead()
        if reason is not None:
            raise RuntimeError(reason)
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=5.0).status_code == 200:
                return time.perf_counter() - start
        time.sleep(0.5)
    raise RuntimeError(f"{url} did not answer within {timeout_s:.0f} s")


def _tail(path: Path, chars: int = 600) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return " ".join(text[-chars:].split())


@contextlib.contextmanager
def _process(cmd: list[str], ready_url: str, env: dict[str, str], log: Path) -> Iterator[float]:
    """A server process, its output in `log`; yields the seconds it took to answer `ready_url`."""
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)

    def dead() -> str | None:
        if proc.poll() is None:
            return None
        return f"{Path(cmd[0]).name} exited with {proc.returncode}: {_tail(log)}"

    try:
        yield _wait_ready(ready_url, dead, STARTUP_TIMEOUT_S)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def _in_process(model: Path, port: int) -> Iterator[float]:
    """`diaforge serve` in a thread of this process (the tests: no process started)."""
    import uvicorn

    from diaforge.eval.serve import ServeConfig, build_app, load_server

    start = time.perf_counter()
    served, batcher = load_server(ServeConfig(model=str(model), port=port))
    config = uvicorn.Config(build_app(served, batcher), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="bench-serve", daemon=True)
    thread.start()

    def dead() -> str | None:
        return None if thread.is_alive() else "the in-process server stopped"

    try:
        _wait_ready(f"http://127.0.0.1:{port}/health", dead, STARTUP_TIMEOUT_S)
        yield time.perf_counter() - start
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _env(threads: int) -> dict[str, str]:
    """The servers' environment: offline, `threads` torch threads, this process's diaforge first."""
    import diaforge

    root = str(Path(diaforge.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    extra = {"OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    return {**os.environ, **extra, "PYTHONPATH": path}


def _transformers_cli() -> tuple[list[str] | None, str | None]:
    """The `transformers` command, or why `transformers serve` cannot run here."""
    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        return None, f"transformers serve needs {', '.join(missing)} (pip install -e '.[serve]')"
    cli = Path(sys.executable).parent / "transformers"
    if not cli.is_file():
        return None, f"no `transformers` command beside {sys.executable}"
    return [str(cli)], None


async def _time_batch(client: Any, model: str, bodies: list[dict[str, Any]], concurrency: int) -> dict:
    """Every body sent, at most `concurrency` in flight: seconds, rates and completion tokens."""
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> tuple[int, int]:
        async with gate:
            reply = await client.chat.completions.create(model=model, **body)
        usage = reply.usage
        return (usage.prompt_tokens, usage.completion_tokens) if usage is not None else (0, 0)

    start = time.perf_counter()
    counts = await asyncio.gather(*(one(b) for b in bodies))
    seconds = time.perf_counter() - start
    tokens = sum(c for _, c in counts)
    return {
        "seconds": round(seconds, 3),
        "requests_per_s": len(bodies) / seconds,
        "completion_tokens": tokens,
        "tokens_per_s": tokens / seconds,
        "prompt_tokens": sum(p for p, _ in counts),
    }


def _measure(port: int, model: str, bodies: list[dict[str, Any]], levels: Sequence[int]) -> dict:
    """One untimed request, then the batch at each concurrency, against the server on `port`."""
    import openai

    async def run() -> dict[str, dict]:
        client = openai.AsyncOpenAI(
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="sk-bench",
            max_retries=0,
            timeout=REQUEST_TIMEOUT_S,
        )
        try:
            await client.chat.completions.create(model=model, **bodies[0])
            return {str(c): await _time_batch(client, model, bodies, c) for c in levels}
        finally:
            await client.close()

    runs = asyncio.run(run())
    return {
        key: {c: round(r[key], 4) if isinstance(r[key], float) else r[key] for c, r in runs.items()}
        for key in ("requests_per_s", "tokens_per_s", "seconds", "completion_tokens", "prompt_tokens")
    }


def _serve_ours(
    model: Path, bodies: list, levels: Sequence[int], threads: int, logs: Path, in_process: bool
) -> dict[str, Any]:
    """`diaforge serve` measured: as its own process, or in a thread of this one."""
    port = _free_port()
    if in_process:
        server = _in_process(model, port)
    else:
        cmd = [sys.executable, "-m", "diaforge.eval.serve", str(model), "--port", str(port)]
        server = _process(cmd, f"http://127.0.0.1:{port}/health", _env(threads), logs / "diaforge.log")
    with server as startup:
        return {**_measure(port, str(model), bodies, levels), "startup_s": round(startup, 1)}


def _serve_transformers(model: Path, bodies: list, levels: Sequence[int], threads: int, logs: Path) -> dict:
    """transformers serve as the Makefile's `serve` target runs it; {"skipped": why} when it
    cannot start or answer."""
    cli, why = _transformers_cli()
    if cli is None:
        return {"skipped": why}
    port = _free_port()
    cmd = [*cli, "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    cmd += ["--log-level", "info", str(model)]
    log = logs / "transformers.log"
    try:
        # /health: its /v1/models scans the hub's cache folder, and answers 500 where there is none.
        with _process(cmd, f"http://127.0.0.1:{port}/health", _env(threads), log) as startup:
            return {**_measure(port, str(model), bodies, levels), "startup_s": round(startup, 1)}
    except Exception as exc:  # recorded: the baseline is not the part
        reason = " ".join(str(exc).split())[:900] or type(exc).__name__
        if "exited with" not in reason:
            reason += f" (its log ends: {_tail(log, 300)})"
        return {"skipped": f"{type(exc).__name__}: {reason}"}


def bench_serve(
    model_path: Path,
    bench_path: Path,
    num_requests: int = 16,
    budget: int = 96,
    concurrency: Sequence[int] = CONCURRENCY,
    baseline: str = "transformers",
    threads: int = 1,
    in_process: bool = False,
) -> dict[str, Any]:
    """Both servers on the same requests (module docstring); `baseline` "none" leaves
    transformers serve out, `in_process` runs ours in a thread of this process."""
    levels = sorted(set(concurrency))
    if baseline not in BASELINES or len(levels) < 2 or levels[0] < 1:
        raise ValueError(
            f"baseline {baseline!r} (one of {', '.join(BASELINES)}), concurrency {levels} (two or more)"
        )
    bodies = serve_requests(bench_path, num_requests, budget)
    with tempfile.TemporaryDirectory(prefix="diaforge-bench-serve-") as tmp:
        ours = _serve_ours(model_path, bodies, levels, threads, Path(tmp), in_process)
        theirs = (
            _serve_transformers(model_path, as_rendered(model_path, bodies), levels, threads, Path(tmp))
            if baseline == "transformers"
            else {"skipped": "--serve-baseline none"}
        )
    rates = ours["requests_per_s"]
    scaling = {str(c): round(rates[str(c)] / rates[str(levels[0])], 3) for c in levels[1:]}
    over = None
    if "requests_per_s" in theirs:
        over = {c: round(r / theirs["requests_per_s"][c], 3) for c, r in rates.items()}
    where = "in this process" if in_process else "as a process of its own"
    against = (
        "; against transformers serve --device cpu as `make serve` runs it" if baseline != "none" else ""
    )
    return {
        "value": scaling[str(levels[1])],
        "scaling": scaling,
        "over_transformers": over,
        "diaforge": ours,
        "transformers": theirs,
        "requests": len(bodies),
        "setup": (
            f"the opening user turn of the first {len(bodies)} dialogues of {bench_path.name}, its candidate "
            f"tools as tools=, temperature 0, max_tokens={budget}, sent by the OpenAI async client with "
            f"{', '.join(map(str, levels))} in flight; diaforge serve {model_path.name} (its default decoding, "
            f"batch 16) {where}{against} (sent the prompt ours renders: the tool listing in the system "
            f"prompt, since SmolLM2's chat template drops tools=; prompt_tokens are each server's count)"
            f"; each server on 127.0.0.1 with {threads} torch thread(s), warmed up "
            f"by one request; value = diaforge serve's requests/s at {levels[1]} over at {levels[0]}"
        ),
    }


def _levels(text: str) -> tuple[int, ...]:
    """`--serve-concurrency`: positive whole numbers, comma-separated."""
    import argparse

    try:
        levels = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        levels = ()
    if len(set(levels)) < 2 or min(levels) < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r}: two or more comma-separated numbers of clients, each >= 1"
        )
    return levels


def add_serve_args(parser: Any) -> None:
    """The options of the serve part."""
    parser.add_argument(
        "--serve-model", help="model of the serve part, a folder (default: none, SmolLM2-135M-Instruct)"
    )
    parser.add_argument(
        "--serve-requests", type=int, default=16, help="requests of the serve part (held-out dialogues)"
    )
    parser.add_argument(
        "--serve-budget", type=int, default=96, help="max_tokens of the serve part's requests"
    )
    parser.add_argument(
        "--serve-concurrency",
        type=_levels,
        default=",".join(map(str, CONCURRENCY)),
        help="comma-separated clients in flight of the serve part (the value: the second over the first)",
    )
    parser.add_argument(
        "--serve-baseline",
        choices=BASELINES,
        default="transformers",
        help="the server the serve part compares with (none: diaforge serve alone)",
    )
