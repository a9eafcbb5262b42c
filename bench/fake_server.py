"""A local OpenAI-compatible HTTP server with deterministic fault injection, for tests and benchmarks.

It is a harness, not a model: the test decides every reply through `responder`, and decides which
requests fail (and how) through `fault_plan`. Standard library only (`asyncio` streams, HTTP/1.1
with keep-alive), run on its own event loop in a background thread, so it serves many concurrent
connections (hundreds) and its `latency` never serialises requests.

    with FaultyOpenAIServer(lambda req: "hello", latency=0.2, fault_plan={0: "429"}) as server:
        backend = OpenAIBackend("test-model", base_url=server.base_url)
        ...
        assert server.stats.max_in_flight >= 32

Endpoints: `POST /v1/chat/completions` (non-streaming), `GET /v1/models`. The `/v1` prefix is
optional. Usage in replies counts whitespace-separated words (prompt: every message's text;
completion: the reply), which is deterministic and good enough for accounting tests.

Fault kinds (what `fault_plan` returns for a request; None means serve it normally):

- a three-digit status such as "429", "500", "503", "400", "404": an OpenAI-style error body with
  that status; "429" carries a `Retry-After` header (`retry_after`, default "0").
- "timeout": the server reads the request and then holds the connection without answering, until
  the client gives up and closes it or `hold_seconds` pass; then it closes the connection.
- "disconnect": the server closes the connection without answering (a connection error).
- "no_choices": HTTP 200 with a completion body that has `usage` but no `choices`.
- "garbage": HTTP 200 whose body is not JSON at all.
- "surrogate": HTTP 200, a normal completion whose text carries a lone UTF-16 surrogate
  (`"\\ud83d"` in the JSON body), as a server that cuts an emoji in half would send.

`stats.prompt_tokens` / `stats.completion_tokens` sum the `usage` of every body the server sent
(normal replies, "no_choices" and "surrogate" ones): what a client should have counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
FaultPlan = Callable[[int, dict[str, Any]], "str | None"]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass
class ServerStats:
    """What the server saw. Updated by the server thread; read it once the client is done."""

    #: chat completion requests received (each one gets a `request_index`, faulted ones included)
    requests: int = 0
    #: chat completion requests answered with HTTP 200
    served: int = 0
    #: `GET /models` requests
    models_requests: int = 0
    #: chat completion requests being handled right now, and the most at any one time
    in_flight: int = 0
    max_in_flight: int = 0
    #: faults injected, by kind ("429", "500", "timeout", ...)
    faults: Counter = field(default_factory=Counter)
    #: TCP connections accepted
    connections: int = 0
    #: tokens reported in the `usage` of every body sent (what the client should count)
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _normalise_plan(fault_plan: FaultPlan | Mapping[int, str] | Sequence[str | None] | None) -> FaultPlan:
    if fault_plan is None:
        return lambda index, request: None
    if callable(fault_plan):
        return fault_plan
    if isinstance(fault_plan, Mapping):
        plan = dict(fault_plan)
        return lambda index, request: plan.get(index)
    seq = list(fault_plan)
    return lambda index, request: seq[index] if index < len(seq) else None


def _words(content: Any) -> int:
    if isinstance(content, str):
        return len(content.split())
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return sum(_words(part.get("text", "")) for part in content if isinstance(part, dict))
    return 0


def _default_responder(request: dict[str, Any]) -> str:
    users = [m for m in request.get("messages", []) if m.get("role") == "user"]
    return f"echo: {users[-1].get('content', '')}" if users else "echo:"


def _openai_tool_calls(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Accept `{"name", "arguments"}` or the OpenAI shape; return the OpenAI shape."""
    out = []
    for i, call in enumerate(calls):
        if "function" in call:
            out.append(
                {"id": call.get("id", f"call_{i}"), "type": "function", **{"function": call["function"]}}
            )
            continue
        arguments = call.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        out.append(
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": call["name"], "arguments": arguments},
            }
        )
    return out


class FaultyOpenAIServer:
    """OpenAI-compatible test server on loopback. Use as a context manager (starts and stops a
    background thread), or call `start()` / `stop()`.

    Args:
        responder: `request_json -> reply`. A string is the reply text; a dict is the message
            (`content`, optional `tool_calls` as `{"name", "arguments"}` or OpenAI shape, optional
            `reasoning_content`). Called on the server loop, so keep it fast. Default: echoes the
            last user message. An exception in it becomes an HTTP 500.
        latency: seconds slept (asynchronously) before answering each chat request.
        fault_plan: a callable `(request_index, request_json) -> None | kind`, or a mapping
            `{request_index: kind}`, or a sequence of kinds indexed by request. Request indices
            count chat completion requests from 0 in arrival order.
        host, port: where to listen; port 0 picks a free port.
        hold_seconds: the longest a "timeout" fault holds a connection, default 30.
        retry_after: value of the `Retry-After` header on "429", default "0" (None: no header).
        model: the id listed by `GET /v1/models`.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        fault_plan: FaultPlan | Mapping[int, str] | Sequence[str | None] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        hold_seconds: float = 30.0,
        retry_after: str | None = "0",
        model: str = "test-model",
    ) -> None:
        self.responder = responder or _default_responder
        self.latency = float(latency)
        self.fault_plan = _normalise_plan(fault_plan)
        self.host = host
        self.port = port
        self.hold_seconds = float(hold_seconds)
        self.retry_after = retry_after
        self.model = model
        self.stats = ServerStats()
        #: every chat request body received, in arrival order
        self.received: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        self._ready = threading.Event()
        self._start_error: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FaultyOpenAIServer:
        if self._thread is not None:
            raise RuntimeError("server already started")
        self._thread = threading.Thread(target=self._run, name="FaultyOpenAIServer", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            self._thread.join()
            self._thread = None
            raise self._start_error
        return self

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        with contextlib.suppress(Exception):
            future.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> FaultyOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._handle, self.host, self.port, backlog=1024)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:  # noqa: BLE001 - handed to the starting thread
            self._start_error = exc
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    # -- HTTP --------------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.stats.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                try:
                    method, target, version = lines[0].split(" ", 2)
                except ValueError:
                    return
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                try:
                    body = await self._read_body(reader, headers)
                except (asyncio.IncompleteReadError, ValueError, ConnectionError):
                    return
                keep_alive = (
                    version.strip() == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                )
                action, status, extra_headers, payload = await self._route(method, target, body)
                if action == "hold":
                    with contextlib.suppress(asyncio.TimeoutError, ConnectionError):
                        await asyncio.wait_for(reader.read(), self.hold_seconds)
                    return
                if action == "disconnect":
                    return
                if isinstance(payload, bytes):
                    data = payload
                else:
                    data = json.dumps(payload).encode("utf-8")
                    usage = payload.get("usage") if isinstance(payload, dict) and status == 200 else None
                    if isinstance(usage, dict):
                        self.stats.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                        self.stats.completion_tokens += int(usage.get("completion_tokens") or 0)
                head_out = [
                    f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                    "Content-Type: application/json",
                    f"Content-Length: {len(data)}",
                    f"Connection: {'keep-alive' if keep_alive else 'close'}",
                    *(f"{k}: {v}" for k, v in extra_headers.items()),
                ]
                writer.write(("\r\n".join(head_out) + "\r\n\r\n").encode("latin-1") + data)
                try:
                    await writer.drain()
                except ConnectionError:
                    return
                if not keep_alive:
                    return
        except asyncio.CancelledError:
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
        if headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip(), 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")
                    return b"".join(chunks)
                chunks.append(await reader.readexactly(size))
                await reader.readexactly(2)
        length = int(headers.get("content-length", "0") or 0)
        return await reader.readexactly(length) if length else b""

    async def _route(self, method: str, target: str, body: bytes) -> tuple[str, int, dict[str, str], Any]:
        path = target.split("?", 1)[0].rstrip("/")
        if path.startswith("/v1"):
            path = path[3:]
        if path == "/models" and method == "GET":
            self.stats.models_requests += 1
            models = [{"id": self.model, "object": "model", "created": 0, "owned_by": "testing-server"}]
            return "reply", 200, {}, {"object": "list", "data": models}
        if path == "/chat/completions" and method == "POST":
            return await self._chat(body)
        return "reply", 404, {}, _error(f"no route for {method} {target}", "not_found_error")

    async def _chat(self, body: bytes) -> tuple[str, int, dict[str, str], Any]:
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return "reply", 400, {}, _error("request body is not JSON", "invalid_request_error")
        index = self.stats.requests
        self.stats.requests += 1
        self.received.append(request)
        self.stats.in_flight += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
        try:
            fault = self.fault_plan(index, request)
            if self.latency:
                await asyncio.sleep(self.latency)
            if fault is not None:
                fault = str(fault)
                self.stats.faults[fault] += 1
                if fault in ("timeout", "disconnect"):
                    return ("hold" if fault == "timeout" else "disconnect"), 0, {}, None
                if fault == "garbage":
                    return "reply", 200, {}, b"<html>502 upstream hiccup</html>"
                if fault in ("no_choices", "surrogate"):
                    body = self._completion(index, request, "half an emoji \ud83d here")
                    if fault == "no_choices":
                        del body["choices"]
                    return "reply", 200, {}, body
                status = int(fault)
                headers = {}
                if status == 429 and self.retry_after is not None:
                    headers["Retry-After"] = str(self.retry_after)
                kind = (
                    "rate_limit_error"
                    if status == 429
                    else ("server_error" if status >= 500 else "invalid_request_error")
                )
                return "reply", status, headers, _error(f"injected fault {fault} on request {index}", kind)
            if request.get("stream"):
                return (
                    "reply",
                    400,
                    {},
                    _error("streaming is not supported by this test server", "invalid_request_error"),
                )
            try:
                reply = self.responder(request)
            except Exception as exc:  # noqa: BLE001 - reported to the client as a 500
                self.stats.faults["responder_error"] += 1
                return "reply", 500, {}, _error(f"responder failed: {exc!r}", "server_error")
            self.stats.served += 1
            return "reply", 200, {}, self._completion(index, request, reply)
        finally:
            self.stats.in_flight -= 1

    def _completion(self, index: int, request: dict[str, Any], reply: str | dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        if isinstance(reply, dict):
            message["content"] = reply.get("content")
            if reply.get("tool_calls"):
                message["tool_calls"] = _openai_tool_calls(reply["tool_calls"])
            for key in ("reasoning_content", "reasoning"):
                if reply.get(key) is not None:
                    message[key] = reply[key]
        else:
            message["content"] = str(reply)
        prompt_tokens = sum(_words(m.get("content")) for m in request.get("messages", []))
        completion_tokens = _words(message.get("content") or "")
        return {
            "id": f"chatcmpl-test-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
