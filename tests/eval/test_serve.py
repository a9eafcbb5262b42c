"""`diaforge serve` (`diaforge.eval.serve`) in process, through httpx's ASGI transport: the OpenAI
client reads its calls, questions and streams; bad requests are OpenAI-style 4xx errors and the next
good one is answered; concurrent requests share a batch; and ``eval run --backend openai`` against
it equals ``eval run --backend hf`` on the same model, with every aid on and with none."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from _repo import ROOT

from diaforge.eval.serve import Batcher, ServeConfig, build_app, load_server
from diaforge.eval.serve_protocol import ServedModel
from diaforge.format import PromptFormat
from diaforge.jsonl import write_jsonl
from diaforge.llm.base import ChatResult, GenerationRequest, Usage
from diaforge.llm.decoding import DecodingConfig
from diaforge.schema import load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
ALL_ON = DecodingConfig(loop_stop=True, constrain_calls=True, ground_values=True, copy_thoughts=True)
ALL_OFF = DecodingConfig(loop_stop=False, constrain_calls=False, ground_values=False, copy_thoughts=False)


@pytest.fixture(scope="module")
def small_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    write_jsonl(path, load_dialogues(BENCH)[:3])
    return path


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, small_bench: Path) -> Path:
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(small_bench) for t in d.turns if t.content]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts, seed=0)


def _client(app: Any, *, api_key: str = "sk-test") -> openai.AsyncOpenAI:
    """The real OpenAI client, its HTTP going to `app` in this process."""
    transport = httpx.ASGITransport(app=app)
    http = httpx.AsyncClient(transport=transport, base_url="http://serve.test")
    return openai.AsyncOpenAI(
        base_url="http://serve.test/v1", api_key=api_key, http_client=http, max_retries=0
    )


class Scripted:
    """A generator that writes the text a request's last user message names (`TEXTS`), for the
    protocol's tests: what the server makes of a reply, not what a model writes."""

    TEXTS = {
        "call": '<think>\nThe user wants a ticket.\n</think>\n[{"name": "open_ticket", "args": {"queue": "IT", "n": 2}}]',
        "ask": "<think>\nWhich queue?\n</think>\nWhich queue should the ticket go to?",
        "bad": '<think>\nHm.\n</think>\nSure! [{"name": "open_ticket", "args": {}}]',
        "cut": "<think>\nThe user wants",
    }

    def __init__(self) -> None:
        self.seen: list[GenerationRequest] = []
        self.tokenizer = lambda text, add_special_tokens=False: {"input_ids": text.split()}

    def render(self, messages: list[dict[str, Any]], tools: Any = None) -> str:
        return " ".join(str(m.get("content") or "") for m in messages)

    def generate_batch(self, requests: Sequence[GenerationRequest], *, batch_size: int) -> list[ChatResult]:
        out = []
        for r in requests:
            self.seen.append(r)
            key = r.messages[-1]["content"]
            finish = {"cut": "length", "loop": "loop"}.get(key, "stop")
            text = self.TEXTS.get(key, "<think>\nAgain.\n</think>\nok ok ok")
            out.append(
                ChatResult(text, Usage(3, 5, 1), finish_reason=finish, counters={"constrained_tokens": 4})
            )
        return out


@pytest.fixture
def scripted() -> Iterator[tuple[Any, Scripted]]:
    backend = Scripted()
    served = ServedModel(
        "scripted", PromptFormat(), DecodingConfig(), max_new_tokens=8, max_tokens_cap=512, max_messages=8
    )
    batcher = Batcher(backend, batch_size=4, wait_s=0.0, context=400)
    yield build_app(served, batcher, api_key="sk-test", max_body_bytes=20_000), backend
    batcher.close()


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "open_ticket",
            "description": "Open a ticket.",
            "parameters": {
                "type": "object",
                "properties": {"queue": {"type": "string"}, "n": {"type": "integer"}},
                "required": ["queue"],
            },
        },
    }
]


def test_the_openai_client_gets_calls_questions_and_what_was_applied(scripted: tuple[Any, Scripted]) -> None:
    app, backend = scripted

    async def run() -> list[Any]:
        client = _client(app)
        ask = {"model": "scripted", "tools": TOOLS, "temperature": 0}
        replies = [
            await client.chat.completions.create(messages=[{"role": "user", "content": key}], **ask)
            for key in ("call", "ask", "bad", "cut", "loop")
        ]
        models = await client.models.list()
        return [*replies, models]

    call, question, bad, cut, loop, models = asyncio.run(run())
    (tool_call,) = call.choices[0].message.tool_calls
    assert call.choices[0].finish_reason == "tool_calls" and call.choices[0].message.content is None
    assert tool_call.type == "function" and tool_call.id.startswith("call_")
    assert tool_call.function.name == "open_ticket"
    assert json.loads(tool_call.function.arguments) == {"queue": "IT", "n": 2}
    assert call.choices[0].message.model_extra["reasoning_content"] == "The user wants a ticket."
    assert question.choices[0].message.content == "Which queue should the ticket go to?"
    assert question.choices[0].finish_reason == "stop" and not question.choices[0].message.tool_calls
    assert question.choices[0].message.model_extra["reasoning_content"] == "Which queue?"
    # Malformed output is the text as written; a cut reply and a looping one say so.
    assert bad.choices[0].message.content == Scripted.TEXTS["bad"] and bad.choices[0].finish_reason == "stop"
    assert cut.choices[0].finish_reason == "length" and loop.choices[0].finish_reason == "loop"
    # The echo: the executor, the whole decoding applied (the server's), the counters, the text.
    echo = call.model_extra["diaforge"]
    assert echo == {
        "executor": "diaforge-serve",
        "decoding": DecodingConfig().as_dict(),
        "counters": {"constrained_tokens": 4},
        "text": Scripted.TEXTS["call"],
    }
    assert call.usage.prompt_tokens == 3 and call.usage.completion_tokens == 5
    (card,) = models.data
    assert card.id == "scripted" and card.model_extra["diaforge"]["executor"] == "diaforge-serve"
    # Prompt mode with tools=: the server writes the system prompt that lists them, as training did.
    system = backend.seen[0].messages[0]
    assert system["role"] == "system" and '"name": "open_ticket"' in system["content"]
    assert [t.name for t in backend.seen[0].candidates] == ["open_ticket"]


def test_a_stream_carries_the_same_message(scripted: tuple[Any, Scripted]) -> None:
    app, _ = scripted

    async def run() -> list[Any]:
        client = _client(app)
        stream = await client.chat.completions.create(
            model="scripted",
            messages=[{"role": "user", "content": "call"}],
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
        return [chunk async for chunk in stream]

    chunks = asyncio.run(run())
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [tc for d in deltas for tc in (d.tool_calls or [])]
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("open_ticket", {"queue": "IT", "n": 2})
    ]
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == "The user wants a ticket."
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finals] == ["tool_calls"]
    assert finals[0].model_extra["diaforge"]["executor"] == "diaforge-serve"
    assert chunks[-1].usage.completion_tokens == 5 and not chunks[-1].choices


def test_decoding_is_taken_per_request_and_echoed(scripted: tuple[Any, Scripted]) -> None:
    app, backend = scripted

    async def run() -> Any:
        client = _client(app)
        return await client.chat.completions.create(
            model="scripted",
            messages=[{"role": "user", "content": "ask"}],
            extra_body={
                "diaforge": {"decoding": {"constrain_calls": True, "ground_values": True}, "said": ["IT"]}
            },
        )

    reply = asyncio.run(run())
    asked = {**DecodingConfig().as_dict(), "constrain_calls": True, "ground_values": True}
    assert reply.model_extra["diaforge"]["decoding"] == asked
    (request,) = backend.seen
    assert request.decoding.as_dict() == asked and request.said == ("IT",) and request.candidates == ()


def _bad_requests() -> list[tuple[str, Any]]:
    """Twenty-odd requests a server must refuse, each with a 4xx: ``(what, body)``; a body of
    bytes is sent as it is."""
    user = [{"role": "user", "content": "ask"}]

    def tool(**function: Any) -> list[dict[str, Any]]:
        return [{"type": "function", "function": {"name": "open_ticket", **function}}]

    called = {"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {"name": "drop_table", "arguments": "{}"}}]}  # fmt: skip
    return [
        ("not JSON", b"{not json"),
        ("a JSON list", b"[1, 2]"),
        ("no messages", {"model": "scripted"}),
        ("empty messages", {"messages": []}),
        ("an unknown role", {"messages": [{"role": "wizard", "content": "hi"}]}),
        ("content a number", {"messages": [{"role": "user", "content": 7}]}),
        ("an image part", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]}),
        ("too many messages", {"messages": user * 9}),
        ("an unknown model", {"model": "gpt-9", "messages": user}),
        ("tools not a list", {"messages": user, "tools": {"open_ticket": {}}}),
        ("a tool without a function", {"messages": user, "tools": [{"type": "function"}]}),
        ("a tool name with spaces", {"messages": user, "tools": [{"type": "function", "function": {"name": "open ticket"}}]}),
        ("parameters not an object schema", {"messages": user, "tools": tool(parameters={"type": "string"})}),
        ("required names no property", {"messages": user, "tools": tool(parameters={"type": "object", "properties": {}, "required": ["queue"]})}),
        ("a tool listed twice", {"messages": user, "tools": tool() + tool()}),
        ("a call to an unknown tool in history", {"messages": [*user, called, *user], "tools": tool()}),
        ("an unknown tool in history text", {"messages": [*user, {"role": "assistant", "content": '[{"name": "drop_table", "args": {}}]'}, *user], "tools": tool()}),
        ("arguments that are not JSON", {"messages": [*user, {**called, "tool_calls": [{"function": {"name": "open_ticket", "arguments": "{oops"}}]}, *user], "tools": tool()}),
        ("temperature 5", {"messages": user, "temperature": 5}),
        ("max_tokens 0", {"messages": user, "max_tokens": 0}),
        ("max_tokens over the cap", {"messages": user, "max_tokens": 10_000}),
        ("n 2", {"messages": user, "n": 2}),
        ("stream 'yes'", {"messages": user, "stream": "yes"}),
        ("tool_choice required", {"messages": user, "tool_choice": "required"}),
        ("an unknown diaforge key", {"messages": user, "diaforge": {"decodng": {}}}),
        ("a decoding field that is not a bool", {"messages": user, "diaforge": {"decoding": {"constrain_calls": "yes"}}}),
        ("an unknown decoding field", {"messages": user, "diaforge": {"decoding": {"beam_search": True}}}),
        ("grounded values without constrained calls", {"messages": user, "diaforge": {"decoding": {"ground_values": True}}}),
        ("aids with sampling", {"messages": user, "temperature": 0.7, "diaforge": {"decoding": {"constrain_calls": True}}}),
        ("a bad candidate record", {"messages": user, "diaforge": {"candidates": [{"nam": "x"}]}}),
        ("a body over the limit", {"messages": [{"role": "user", "content": "x" * 30_000}]}),
        ("a prompt longer than the context", {"messages": [{"role": "user", "content": "w " * 500}]}),
    ]  # fmt: skip


def test_bad_requests_get_openai_errors_and_the_server_keeps_serving(scripted: tuple[Any, Scripted]) -> None:
    app, _ = scripted
    cases = _bad_requests()
    assert len(cases) >= 20

    async def run() -> list[httpx.Response]:
        headers = {"authorization": "Bearer sk-test", "content-type": "application/json"}
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://serve.test"
        ) as http:
            out = []
            for _, body in cases:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                out.append(await http.post("/v1/chat/completions", content=data, headers=headers))
                good = {"messages": [{"role": "user", "content": "ask"}]}
                out.append(await http.post("/v1/chat/completions", json=good, headers=headers))
            out.append(await http.post("/v1/chat/completions", json=good))  # no key
            out.append(await http.get("/v1/chat/completions", headers=headers))
            out.append(await http.get("/v1/nothing", headers=headers))
            out.append(await http.get("/health"))  # no key needed
            return out

    responses = asyncio.run(run())
    for (what, _), bad, good in zip(cases, responses[0::2], responses[1::2], strict=False):
        assert 400 <= bad.status_code < 500, (what, bad.status_code, bad.text)
        error = bad.json()["error"]
        assert error["message"] and error["type"] == "invalid_request_error", (what, error)
        assert "Traceback" not in bad.text
        assert good.status_code == 200, (what, good.text)
        assert good.json()["choices"][0]["message"]["content"] == "Which queue should the ticket go to?"
    unauthorised, wrong_method, nowhere, health = responses[-4:]
    assert unauthorised.status_code == 401 and unauthorised.json()["error"]["code"] == "invalid_api_key"
    assert wrong_method.status_code == 405 and nowhere.status_code == 404 and nowhere.json()["error"]
    assert health.status_code == 200 and health.json()["status"] == "ok"
    by_name = dict(zip([w for w, _ in cases], responses[0::2], strict=False))
    assert by_name["an unknown model"].status_code == 404
    assert by_name["a body over the limit"].status_code == 413
    assert by_name["a call to an unknown tool in history"].json()["error"]["code"] == "unknown_tool"
    assert by_name["a prompt longer than the context"].json()["error"]["code"] == "context_length_exceeded"


def test_native_history_reaches_the_template_with_object_arguments(scripted: tuple[Any, Scripted]) -> None:
    """An assistant call in the history, its arguments a JSON string as OpenAI clients send them,
    reaches the chat template as an object, as evaluation renders it."""
    app, backend = scripted
    history = [
        {"role": "user", "content": "open one"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "open_ticket", "arguments": '{"queue": "IT"}'}}
            ],
        },
        {"role": "user", "content": "ask"},
    ]

    async def run() -> Any:
        return await _client(app).chat.completions.create(model="scripted", messages=history, tools=TOOLS)

    asyncio.run(run())
    assert backend.seen[0].messages[2]["tool_calls"][0]["function"]["arguments"] == {"queue": "IT"}


def test_concurrent_requests_share_a_batch_and_get_their_own_replies(tiny_model: Path) -> None:
    served, batcher = load_server(ServeConfig(model=str(tiny_model), batch_wait_ms=200))
    app = build_app(served, batcher)
    prompts = [f"Please help with case {i}." for i in range(6)]

    async def ask(client: openai.AsyncOpenAI, text: str) -> str:
        reply = await client.chat.completions.create(
            model=served.name, messages=[{"role": "user", "content": text}], max_tokens=6, temperature=0
        )
        return reply.model_extra["diaforge"]["text"]

    async def run() -> tuple[list[str], list[str]]:
        client = _client(app)
        together = await asyncio.gather(*(ask(client, p) for p in prompts))
        alone = [await ask(client, p) for p in prompts]
        return list(together), alone

    try:
        together, alone = asyncio.run(run())
    finally:
        batcher.close()
    # One call for the six sent together; the six sent one after another (a call may run on into
    # the next request, which arrives as the reply before it is delivered).
    assert batcher.batches[0] == len(prompts) and sum(batcher.batches[1:]) == len(prompts)
    assert together == alone


def test_a_request_that_arrives_while_a_batch_decodes_joins_it(tiny_model: Path) -> None:
    """Continuous batching across requests: the second request reaches the server while the
    first is decoding (the batch's first call for more work waits until it is queued), joins that
    batch instead of waiting for it to end, and both get what they get alone."""
    served, batcher = load_server(ServeConfig(model=str(tiny_model), batch_wait_ms=0))
    app = build_app(served, batcher)
    backend, queued = batcher.backend, threading.Event()
    real = backend.generate_continuous

    delivered: list[Any] = []
    joined_after: list[int] = []  # how many replies had been delivered when a request joined

    def spied(first: Any, more: Any, deliver: Any, **kw: Any) -> None:
        def later(room: int, key: Any) -> Any:
            if not queued.is_set():
                loop.call_soon_threadsafe(decoding.set)
                deadline = time.monotonic() + 30
                while not batcher._jobs and time.monotonic() < deadline:
                    time.sleep(0.01)
                queued.set()
            taken = more(room, key)
            joined_after.extend(len(delivered) for _ in taken)
            return taken

        def heard(tag: Any, result: Any) -> None:
            delivered.append(tag)
            deliver(tag, result)

        real(first, later, heard, **kw)

    backend.generate_continuous = spied

    async def ask(client: openai.AsyncOpenAI, text: str) -> str:
        reply = await client.chat.completions.create(
            model=served.name, messages=[{"role": "user", "content": text}], max_tokens=12, temperature=0
        )
        return reply.model_extra["diaforge"]["text"]

    async def run() -> tuple[list[str], list[str]]:
        nonlocal loop, decoding
        loop, decoding = asyncio.get_running_loop(), asyncio.Event()
        client = _client(app)
        first = asyncio.create_task(ask(client, "Open a ticket for the printer."))
        await asyncio.wait_for(decoding.wait(), timeout=120)
        second = await ask(client, "Close the ticket about the VPN.")
        together = [await first, second]
        alone = [
            await ask(client, "Open a ticket for the printer."),
            await ask(client, "Close the ticket about the VPN."),
        ]
        return together, alone

    loop: Any = None
    decoding: Any = None
    try:
        together, alone = asyncio.run(run())
    finally:
        batcher.close()
    assert queued.is_set()
    assert joined_after[0] == 0  # the second request joined before the first one's reply
    assert sum(batcher.batches) == 4
    assert together == alone


# --------------------------------------------------------------------------------------------
# Parity: eval run --backend openai against diaforge serve equals eval run --backend hf
# --------------------------------------------------------------------------------------------

#: What differs between two runs of one model by construction: how it was reached, and time.
RUN_IDENTITY = {
    "backend",
    "checkpoint",
    "training",
    "seconds",
    "no_tool_seconds",
    "wall_seconds",
    "model",
    "peak_rss_mb",
}


def _evaluate(config: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    import diaforge.similarity
    from diaforge.eval import evaluate

    monkeypatch.setattr(
        diaforge.similarity, "get_encoder", lambda name="auto": diaforge.similarity.TfidfEncoder()
    )
    return evaluate(config)


@pytest.mark.parametrize("decoding", [ALL_ON, ALL_OFF], ids=["every-aid-on", "every-aid-off"])
def test_serving_equals_evaluating(
    tiny_model: Path,
    small_bench: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    decoding: DecodingConfig,
) -> None:
    from diaforge.eval import EvalConfig

    common = {
        "bench": str(small_bench),
        "limit": 3,
        "t_max": 2,
        "max_new_tokens": 24,
        "batch_size": 4,
        "no_tool_bench": "none",
        "quiet": True,
        "label": "tiny",
        "decoding": decoding,
    }
    local = _evaluate(EvalConfig(model=str(tiny_model), out=str(tmp_path / "hf"), **common), monkeypatch)

    # The server's own default is the opposite of what eval asks: only the request's decoding counts.
    default = ALL_OFF if decoding == ALL_ON else ALL_ON
    served, batcher = load_server(
        ServeConfig(model=str(tiny_model), served_model_name="tiny", decoding=default)
    )
    app = build_app(served, batcher)
    real = openai.AsyncOpenAI

    def through_app(**kwargs: Any) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://serve.test")
        return real(**kwargs, http_client=http)

    monkeypatch.setattr("diaforge.llm.openai_backend.openai.AsyncOpenAI", through_app)
    try:
        remote = _evaluate(
            EvalConfig(
                model="tiny",
                backend="openai",
                base_url="http://serve.test/v1",
                out=str(tmp_path / "served"),
                **common,
            ),
            monkeypatch,
        )
    finally:
        batcher.close()

    def turns(result: Any) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in t.model_dump(mode="json").items() if k != "model"} for t in result.transcripts
        ]

    assert turns(remote) == turns(local)
    # Every dialogue of both modes answered (the tiny model's random text runs to its budget or
    # its loop stop; calls and replies are the slow test's, on SmolLM2).
    assert len([x for t in turns(local) for x in t["turns"] if x["role"] == "assistant"]) >= 6
    a, b = ({k: v for k, v in r.metrics.items() if k not in RUN_IDENTITY} for r in (local, remote))
    decoding_a, decoding_b = a.pop("decoding"), b.pop("decoding")
    assert a == b
    assert decoding_a.pop("executor") == "hf" and decoding_b.pop("executor") == "diaforge-serve"
    assert decoding_a.pop("prefix_cache") and decoding_b.pop("prefix_cache") is None
    assert decoding_a == decoding_b and decoding_a["unapplied"] == []
    if decoding.constrain_calls:  # the rules' counters, summed over the run, are one
        assert decoding_a["constraint_stats"] == decoding_b["constraint_stats"]
        assert set(decoding_a["constraint_stats"]) >= {"constrained_tokens", "thought_copies"}


def test_aids_are_refused_by_a_server_that_does_not_apply_them(tiny_model: Path) -> None:
    """A served model whose server is not diaforge serve: the aids are refused in one line once
    its /models says so, before any generation; with none asked the run goes on."""
    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.llm.base import BackendConfigError

    async def stock_models(request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "me"}]})

    from starlette.applications import Starlette
    from starlette.routing import Route

    stock = Starlette(routes=[Route("/v1/models", stock_models)])
    real = openai.AsyncOpenAI

    def through_app(**kwargs: Any) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=stock), base_url="http://stock.test")
        return real(**kwargs, http_client=http)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("diaforge.llm.openai_backend.openai.AsyncOpenAI", through_app)
        spec = ModelSpec("m", backend="openai", base_url="http://stock.test/v1", decoding=ALL_ON)
        model = ModelUnderTest(spec)
        with pytest.raises(
            BackendConfigError,
            match=r"^--constrain-calls on, --ground-values on, --copy-thoughts on: .*`diaforge serve`",
        ):
            asyncio.run(model.check())
        assert model.executor == "openai"
        plain = ModelUnderTest(dataclasses.replace(spec, decoding=DecodingConfig()))
        asyncio.run(plain.check())
        assert plain.executor == "openai" and plain.cfg.decoding.unapplied(plain.executor) == ["loop_stop"]


def test_the_model_may_be_named_by_its_folder(scripted: tuple[Any, Scripted]) -> None:
    """``eval run --backend openai --model outputs/x/scripted`` names the folder the server serves:
    taken, from any folder; another name is a 404."""
    app, _ = scripted

    async def run(model: str) -> Any:
        return await _client(app).chat.completions.create(
            model=model, messages=[{"role": "user", "content": "ask"}]
        )

    assert asyncio.run(run("../outputs/x/scripted")).choices[0].message.content
    with pytest.raises(openai.NotFoundError, match="not served here"):
        asyncio.run(run("outputs/x/other"))


def test_a_client_that_went_away_cancels_its_reply() -> None:
    from diaforge.eval.serve import _while_connected
    from diaforge.eval.serve_protocol import RequestError

    class Gone:
        async def is_disconnected(self) -> bool:
            return True

    async def run() -> asyncio.Future[None]:
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with pytest.raises(RequestError, match="went away") as caught:
            await _while_connected(Gone(), never, poll_s=0.01)
        assert caught.value.status == 499
        await asyncio.sleep(0)
        return never

    assert asyncio.run(run()).cancelled()


@pytest.mark.parametrize("history_reasoning", ["keep", "strip"])
def test_a_thought_sent_back_as_reasoning_content_reaches_the_prompt_as_training_wrote_it(
    history_reasoning: str,
) -> None:
    """A client that sends the assistant's earlier thoughts back as ``reasoning_content`` gets the
    prompt evaluation gives the model: the think block before each earlier reply with
    ``history_reasoning: keep``, none with ``strip``."""
    from diaforge.eval.serve_protocol import read_request
    from diaforge.format import to_chat_messages
    from diaforge.format.prompt import openai_tools

    dialogue = next(
        d
        for d in load_dialogues(ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl")
        if sum(t.role == "assistant" and bool(t.thought) and not t.tool_calls for t in d.turns) >= 2
    )
    upto = max(i for i, t in enumerate(dialogue.turns) if t.role == "user") + 1
    messages = []
    for turn in dialogue.turns[:upto]:
        message = {"role": turn.role, "content": turn.content}
        if turn.thought:
            message["reasoning_content"] = turn.thought
        messages.append(message)
    fmt = PromptFormat(history_reasoning=history_reasoning)
    served = ServedModel("m", fmt, DecodingConfig())
    body = {"model": "m", "messages": messages, "tools": openai_tools(list(dialogue.candidate_tools))}
    got = read_request(body, served).generation.messages
    want = to_chat_messages(dialogue, upto=upto, history_reasoning=history_reasoning)
    assert got[1:] == want[1:]
    assert any("<think>" in m["content"] for m in got[1:]) == (history_reasoning == "keep")
