"""`diaforge serve MODEL`: the model under test behind an OpenAI-compatible server, decoded by the
generator evaluation uses, with the same rules.

    diaforge serve outputs/demo/sft --port 8000 --constrain-calls on --ground-values on

Routes: ``POST /v1/chat/completions`` (streamed or not; the protocol is
`diaforge.eval.serve_protocol`), ``GET /v1/models`` (the served model, with what the server applies)
and ``GET /health``. The model is loaded as ``eval run --backend hf`` loads it
(`diaforge.eval.models.load_hf_model`: a base, merged or LoRA adapter folder) and prompted in the
format recorded with it (``prompt_format.json``). Every request is decoded by
`diaforge.llm.hf_backend.HFBackend.generate_batch`: one worker thread takes every request waiting
and decodes them in one call, so concurrent clients share the continuous batch. The decoding of a
request is the server's flags (the decoding flags of ``eval run``), overridden field by field by
the request's ``extra_body={"diaforge": {"decoding": {...}}}``, and echoed in its reply.

A bad request (malformed or oversized body, unknown model, bad ``tools`` schema, a call in the
history to a tool the request does not name, a prompt longer than the model's context) is answered
with an OpenAI-style 4xx JSON error; nothing a client sends gives a traceback, and the server keeps
serving. ``--api-key`` (or the environment variable ``DIAFORGE_SERVE_API_KEY``) makes every
``/v1`` route ask for ``Authorization: Bearer KEY``. The server binds to 127.0.0.1 unless
``--host`` says otherwise.

A streamed reply is sent once it is written (the OpenAI chunks of its role, thought, calls or
content, then its finish reason): the generator does not hand out tokens as it decodes them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import json
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass as plain_dataclass
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field
from pydantic.dataclasses import dataclass

from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, add_field_flags
from diaforge.errors import InputError, command_main
from diaforge.eval.serve_protocol import ChatRequest, RequestError, ServedModel, error_body, read_request
from diaforge.eval.serve_replies import chunks, completion, model_card, new_id, sse
from diaforge.llm.base import ChatResult, GenerationRequest
from diaforge.llm.decoding import DecodingConfig, decoding_keys

logger = logging.getLogger(__name__)

#: The environment variable that may hold the bearer key instead of ``--api-key``.
API_KEY_ENV = "DIAFORGE_SERVE_API_KEY"


@dataclass(config=ConfigDict(extra="forbid", use_attribute_docstrings=True))
class ServeConfig:
    """How `diaforge serve` serves a model (its flags)."""

    model: str
    """The model folder: a base, merged or LoRA adapter folder, as ``eval run --backend hf`` takes it."""
    host: str = "127.0.0.1"
    """Address to bind. Default 127.0.0.1 (this machine only); 0.0.0.0 serves every interface."""
    port: int = Field(default=8000, ge=0, le=65535)
    """Port to listen on (0: any free port). Default 8000."""
    api_key: str | None = None
    """Bearer key every /v1 route asks for (also read from DIAFORGE_SERVE_API_KEY). Default none: no key."""
    served_model_name: str | None = None
    """The name clients send as model. Default the model folder's name."""
    device: str = "cpu"
    """Torch device of the model: cpu, cuda, cuda:N. Default cpu."""
    max_new_tokens: int = Field(default=384, ge=1)
    """Reply budget of a request that gives no max_tokens. Default 384, eval run's fallback."""
    max_tokens_cap: int = Field(default=4096, ge=1)
    """The largest max_tokens a request may ask for. Default 4096."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Temperature of a request that gives none. Default 0: greedy, as evaluation decodes."""
    batch_size: int = Field(default=16, ge=1)
    """Rows the generator decodes at once (later requests take the place of rows that end). Default 16."""
    batch_wait_ms: float = Field(default=5.0, ge=0.0)
    """How long an idle worker waits after the first request for others to join its batch. Default 5."""
    max_body_bytes: int = Field(default=4_000_000, ge=1024)
    """Largest request body accepted; a larger one is refused with 413. Default 4000000."""
    max_messages: int = Field(default=512, ge=1)
    """Most messages one request may hold. Default 512."""
    decoding: DecodingConfig = Field(default_factory=DecodingConfig)
    """The decoding of a request that names none (the decoding flags of eval run)."""


#: The fields of `ServeConfig` that are flags (the model is the positional argument; decoding is
#: its own fields' flags).
FLAG_FIELDS = [name for name in ServeConfig.__pydantic_fields__ if name not in ("model", "decoding")]


@plain_dataclass
class _Job:
    request: ChatRequest
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[ChatResult]


class Batcher:
    """One worker thread in front of a generator: it takes every request waiting, checks each
    prompt (the chat template renders it, it fits the context), and decodes the rest in one
    `generate_batch` call, so concurrent requests share a batch. A request whose prompt cannot be
    rendered or does not fit is answered with its `RequestError`; a batch that fails is decoded
    again one request at a time, so one request cannot fail the others."""

    def __init__(
        self, backend: Any, *, batch_size: int, wait_s: float = 0.005, context: int | None = None
    ) -> None:
        self.backend = backend
        self.batch_size = batch_size
        self.wait_s = wait_s
        self.context = context
        self.batches: list[int] = []
        """The size of every batch decoded (what shared a `generate_batch` call)."""
        self._jobs: list[_Job] = []
        self._cv = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._cv:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="diaforge-serve-generator", daemon=True
                )
                self._thread.start()

    def close(self) -> None:
        """Stop taking requests; those still waiting are answered 503 (the batch being decoded
        finishes)."""
        with self._cv:
            self._closed = True
            waiting, self._jobs = self._jobs, []
            self._cv.notify_all()
        for job in waiting:
            _deliver(job, error=RequestError("the server is shutting down", status=503, kind="server_error"))
        if self._thread is not None:
            self._thread.join(timeout=30)

    async def submit(self, request: ChatRequest) -> ChatResult:
        """The reply to `request`, once the worker has decoded it."""
        self.start()
        loop = asyncio.get_running_loop()
        job = _Job(request, loop, loop.create_future())
        with self._cv:
            if self._closed:
                raise RequestError("the server is shutting down", status=503, kind="server_error")
            self._jobs.append(job)
            self._cv.notify()
        return await job.future

    def _take(self) -> list[_Job] | None:
        with self._cv:
            while not self._jobs and not self._closed:
                self._cv.wait()
            if self._closed:
                return None
        if self.wait_s:
            time.sleep(self.wait_s)
        with self._cv:
            jobs, self._jobs = self._jobs, []
        return jobs

    def _run(self) -> None:
        while (jobs := self._take()) is not None:
            ready = [job for job in jobs if self._admit(job)]
            if ready and getattr(self.backend, "continuous", False):
                self._decode_continuous(ready)
            elif ready:
                self._decode(ready)

    def _decode_continuous(self, jobs: list[_Job]) -> None:
        """Decode the jobs that share the first one's decode key in one continuous batch, which
        every request of that key arriving meanwhile joins as a row frees (the others wait for
        the next batch); each reply is delivered as it ends. When the batch fails, the jobs not
        yet answered are decoded again one at a time."""
        backend = self.backend
        key = backend.decode_key(jobs[0].request.generation)
        first = [job for job in jobs if backend.decode_key(job.request.generation) == key]
        later = [job for job in jobs if backend.decode_key(job.request.generation) != key]
        if later:
            with self._cv:
                self._jobs[:0] = later
        open_jobs = {id(job): job for job in first}
        count = len(first)

        def more(room: int, key: tuple[Any, ...]) -> list[tuple[_Job, GenerationRequest]]:
            nonlocal count
            with self._cv:
                if self._closed:
                    return []
                taken, kept = [], []
                for job in self._jobs:
                    fits = len(taken) < room and backend.decode_key(job.request.generation) == key
                    (taken if fits else kept).append(job)
                self._jobs = kept
            ready = [job for job in taken if self._admit(job)]
            open_jobs.update((id(job), job) for job in ready)
            count += len(ready)
            return [(job, job.request.generation) for job in ready]

        def deliver(job: _Job, result: ChatResult) -> None:
            open_jobs.pop(id(job), None)
            _deliver(job, result=result)

        try:
            backend.generate_continuous(
                [(job, job.request.generation) for job in first], more, deliver, batch_size=self.batch_size
            )
        except Exception:
            logger.exception("a continuous batch failed; its open requests are decoded one at a time")
            for job in list(open_jobs.values()):
                self._decode([job])
            return
        self.batches.append(count)

    def _admit(self, job: _Job) -> bool:
        """Whether the job's prompt renders and fits; answers it with the error when not. A job
        whose client went away is dropped."""
        if job.future.cancelled():
            return False
        g = job.request.generation
        try:
            text = self.backend.render(g.messages, g.tools)
            length = len(self.backend.tokenizer(text, add_special_tokens=False)["input_ids"])
        except Exception as exc:  # a template that cannot take these messages: the client's request
            _deliver(job, error=RequestError(f"the chat template cannot render these messages: {_line(exc)}"))
            return False
        if self.context is not None and length + (g.max_tokens or 0) > self.context:
            message = (
                f"the prompt is {length} tokens and max_tokens {g.max_tokens}: more than the model's "
                f"context of {self.context} tokens"
            )
            _deliver(job, error=RequestError(message, param="messages", code="context_length_exceeded"))
            return False
        return True

    def _decode(self, jobs: list[_Job]) -> None:
        requests: list[GenerationRequest] = [job.request.generation for job in jobs]
        try:
            results = self.backend.generate_batch(requests, batch_size=self.batch_size)
        except Exception:
            if len(jobs) > 1:
                for job in jobs:
                    self._decode([job])
                return
            logger.exception("generation failed")
            error = RequestError(
                "generation failed on the server (see its log)", status=500, kind="server_error"
            )
            _deliver(jobs[0], error=error)
            return
        self.batches.append(len(jobs))
        for job, result in zip(jobs, results, strict=True):
            _deliver(job, result=result)


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def _deliver(job: _Job, *, result: ChatResult | None = None, error: BaseException | None = None) -> None:
    def settle() -> None:
        if job.future.done():  # the client went away
            return
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(result)  # type: ignore[arg-type]

    with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for it
        job.loop.call_soon_threadsafe(settle)


def build_app(
    served: ServedModel, batcher: Batcher, *, api_key: str | None = None, max_body_bytes: int = 4_000_000
) -> Any:
    """The ASGI application of a server (routes in the module docstring), on Starlette (which the
    ``serve`` extra's FastAPI brings)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    created = int(time.time())

    def refuse(error: RequestError) -> JSONResponse:
        return JSONResponse(error.body(), status_code=error.status)

    def authorised(request: Request) -> bool:
        if not api_key:
            return True
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), api_key.encode())

    def guarded(endpoint: Callable[[Request], Any]) -> Callable[[Request], Any]:
        """The key checked first (on /v1), and any failure an OpenAI-style error, never a traceback."""

        async def run(request: Request) -> Response:
            if request.url.path.startswith("/v1") and not authorised(request):
                message = "a valid API key is needed: Authorization: Bearer KEY"
                return refuse(RequestError(message, status=401, code="invalid_api_key"))
            try:
                return await endpoint(request)
            except RequestError as error:
                return refuse(error)
            except Exception:
                logger.exception("unexpected error on %s", request.url.path)
                body = error_body("the server failed on this request (see its log)", kind="server_error")
                return JSONResponse(body, status_code=500)

        return run

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": served.name})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [model_card(served, created)]})

    async def chat(request: Request) -> Response:
        chat_request = read_request(await _body(request, max_body_bytes), served)
        result = await _while_connected(request, batcher.submit(chat_request))
        completion_id = new_id()
        if not chat_request.stream:
            return JSONResponse(completion(result, chat_request, completion_id=completion_id))
        events = sse(chunks(result, chat_request, completion_id=completion_id))

        async def stream() -> AsyncIterator[str]:
            for event in events:
                yield event

        return StreamingResponse(stream(), media_type="text/event-stream")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        batcher.start()
        yield
        batcher.close()

    routes = [
        Route("/health", guarded(health), methods=["GET"]),
        Route("/v1/models", guarded(models), methods=["GET"]),
        Route("/v1/chat/completions", guarded(chat), methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=lifespan)


async def _while_connected(request: Any, reply: Any, poll_s: float = 1.0) -> ChatResult:
    """`reply` awaited while the client waits for it; a client that went away (a timeout, then a
    retry) cancels it, so that the worker does not decode it for nobody."""
    task = asyncio.ensure_future(reply)
    while True:
        done, _ = await asyncio.wait({task}, timeout=poll_s)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            raise RequestError("the client went away", status=499, code="client_closed_request")


async def _http_error(request: Any, exc: Exception) -> Any:
    """A route that does not exist, or a method it does not take: an OpenAI-style error too."""
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse

    status = exc.status_code if isinstance(exc, HTTPException) else 500
    code = {404: "not_found", 405: "method_not_allowed"}.get(status)
    detail = exc.detail if isinstance(exc, HTTPException) else "server error"
    body = error_body(f"{request.method} {request.url.path}: {detail}", code=code)
    return JSONResponse(body, status_code=status)


async def _body(request: Any, limit: int) -> Any:
    """The request's JSON body, or the `RequestError` that refuses it (too large, not JSON)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(
            f"the request body is larger than {limit} bytes", status=413, code="request_too_large"
        )
    data = bytearray()
    async for part in request.stream():
        data += part
        if len(data) > limit:
            raise RequestError(
                f"the request body is larger than {limit} bytes", status=413, code="request_too_large"
            )
    try:
        return json.loads(bytes(data))
    except (ValueError, RecursionError) as exc:
        raise RequestError(f"the request body is not valid JSON: {_line(exc)}") from None


def load_server(config: ServeConfig) -> tuple[ServedModel, Batcher]:
    """The model of `config` loaded as evaluation loads it, and its worker (not yet started)."""
    from diaforge.eval.models import choose_prompt_format, load_hf_model
    from diaforge.llm.hf_backend import HFBackend

    choice = choose_prompt_format(config.model)
    model, tokenizer, info = load_hf_model(config.model, device=config.device)
    name = config.served_model_name or Path(config.model).resolve().name
    backend = HFBackend.from_model(
        model,
        tokenizer,
        model_name=name,
        max_new_tokens=config.max_new_tokens,
        default_temperature=config.temperature or None,
        decoding=config.decoding,
    )
    served = ServedModel(
        name=name,
        prompt_format=choice.prompt_format,
        decoding=config.decoding,
        max_new_tokens=config.max_new_tokens,
        max_tokens_cap=config.max_tokens_cap,
        max_messages=config.max_messages,
        aliases=(config.model, str(Path(config.model).resolve()), Path(config.model).resolve().name),
    )
    context = getattr(model.config, "max_position_embeddings", None)
    batcher = Batcher(
        backend, batch_size=config.batch_size, wait_s=config.batch_wait_ms / 1000, context=context
    )
    return served, batcher


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="diaforge serve",
        description="Serve a model folder behind an OpenAI-compatible API, decoded as eval run decodes it.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "model", help="a base, merged or LoRA adapter folder (as eval run --backend hf takes it)"
    )
    add_field_flags(parser, ServeConfig.__pydantic_fields__, FLAG_FIELDS)
    decoding = parser.add_argument_group(
        "decoding (the default of every request; extra_body diaforge.decoding overrides it)"
    )
    add_field_flags(decoding, DecodingConfig.__pydantic_fields__, decoding_keys())
    return parser


def config_from_args(args: argparse.Namespace) -> ServeConfig:
    """The `ServeConfig` of a command line (a flag not given keeps its field's default)."""
    given = {name: getattr(args, name) for name in FLAG_FIELDS if getattr(args, name) is not None}
    decoding = {name: getattr(args, name) for name in decoding_keys() if getattr(args, name) is not None}
    given.setdefault("api_key", os.environ.get(API_KEY_ENV) or None)
    try:
        config = ServeConfig(
            model=args.model, decoding=DecodingConfig(**{**DecodingConfig().as_dict(), **decoding}), **given
        )
        config.decoding.check("diaforge-serve")
    except ValueError as exc:  # pydantic's ValidationError is one
        raise InputError(f"diaforge serve: {_line(exc)}") from None
    return config


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    config = config_from_args(args)
    from diaforge.eval.models import describe_checkpoint, offline_env

    offline_env()
    describe_checkpoint(config.model)  # a missing or wrong folder: one line, before anything loads
    import uvicorn

    served, batcher = load_server(config)
    app = build_app(served, batcher, api_key=config.api_key, max_body_bytes=config.max_body_bytes)
    print(
        f"serving {served.name} on http://{config.host}:{config.port}/v1 "
        f"(decoding: {', '.join(f'{k}={v}' for k, v in config.decoding.as_dict().items())})",
        file=sys.stderr,
    )
    uvicorn.run(app, host=config.host, port=config.port, log_level="info", timeout_graceful_shutdown=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
