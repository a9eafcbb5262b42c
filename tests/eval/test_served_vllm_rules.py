"""``eval run --backend openai --base-url vllm-rules+http://...``: a vLLM server that runs the
decoding rules as its logits processor (`diaforge.llm.vllm_rules`), declared by the base URL's
scheme prefix. Against a stand-in for vLLM's HTTP server (an ASGI app that answers ``/v1/models``
as vLLM does and records every chat request), each request carries ``vllm_xargs`` whose payload
reads back (`read_payload`) as its dialogue's decoding, candidate tools and user's words; the aids
are not refused, and ``metrics.json["decoding"]`` names the executor ``vllm-rules``. Without the
prefix the same server is a stock one: the aids are refused, and no payload is sent."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from _repo import ROOT

from diaforge.errors import InputError
from diaforge.jsonl import write_jsonl
from diaforge.llm.base import BackendConfigError
from diaforge.llm.decoding import DecodingConfig
from diaforge.llm.openai_backend import OpenAIBackend
from diaforge.llm.vllm_rules import XARGS_KEY, read_payload
from diaforge.schema import load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
ALL_ON = DecodingConfig(loop_stop=True, constrain_calls=True, ground_values=True, copy_thoughts=True)
REPLY = "<think>\nThe user has not said which one.\n</think>\nWhich of these do you mean?"


class StandInVLLM:
    """vLLM's OpenAI server as the client sees it: ``/v1/models`` owned by ``vllm`` (no diaforge
    executor), and chat completions that answer `REPLY` and keep every request body."""

    def __init__(self) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        self.bodies: list[dict[str, Any]] = []
        self.app = Starlette(
            routes=[
                Route("/v1/models", self.models),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
            ]
        )

    async def models(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        card = {"id": "m", "object": "model", "owned_by": "vllm", "root": "m", "max_model_len": 8192}
        return JSONResponse({"object": "list", "data": [card]})

    async def chat(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await request.json()
        self.bodies.append(body)
        message = {"role": "assistant", "content": REPLY}
        return JSONResponse(
            {
                "id": f"chatcmpl-{len(self.bodies)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 12, "total_tokens": 22},
            }
        )


def _records(tools: Any) -> tuple[str, ...]:
    """Tool records as their JSON, to compare (and hash) them whole."""
    return tuple(t.model_dump_json() for t in tools)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> StandInVLLM:
    """The stand-in, every `OpenAIBackend`'s HTTP going to it in this process."""
    stand_in = StandInVLLM()
    real = openai.AsyncOpenAI

    def through_app(**kwargs: Any) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=stand_in.app), base_url="http://vllm.test")
        return real(**kwargs, http_client=http)

    monkeypatch.setattr("diaforge.llm.openai_backend.openai.AsyncOpenAI", through_app)
    return stand_in


@pytest.fixture(scope="module")
def small_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    write_jsonl(path, load_dialogues(BENCH)[:3])
    return path


def test_the_prefix_declares_the_executor_and_is_not_sent() -> None:
    backend = OpenAIBackend("m", base_url="vllm-rules+http://127.0.0.1:8000/v1")
    assert backend.executor == "vllm-rules" and backend.endpoint == "http://127.0.0.1:8000/v1"
    assert OpenAIBackend("m", base_url="http://127.0.0.1:8000/v1").executor is None
    with pytest.raises(BackendConfigError, match="must start with http"):
        OpenAIBackend("m", base_url="vllm-rules+ftp://127.0.0.1/v1")
    # What the executor applies: every rule but speculation, which it leaves out.
    ALL_ON.check("vllm-rules")
    assert ALL_ON.unapplied("vllm-rules") == []
    assert dataclasses.replace(ALL_ON, speculate=4).unapplied("vllm-rules") == ["speculate"]
    with pytest.raises(
        InputError, match=r"run only where the toolkit's rules run \(hf, diaforge-serve, vllm-rules\)"
    ):
        ALL_ON.check("openai")


def test_eval_run_sends_each_dialogue_its_rules_through_vllm_xargs(
    server: StandInVLLM, small_bench: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import diaforge.similarity
    from diaforge.eval import EvalConfig, evaluate

    monkeypatch.setattr(
        diaforge.similarity, "get_encoder", lambda name="auto": diaforge.similarity.TfidfEncoder()
    )
    decoding = dataclasses.replace(ALL_ON, speculate=2)
    result = evaluate(
        EvalConfig(
            model="m",
            backend="openai",
            base_url="vllm-rules+http://vllm.test/v1",
            bench=str(small_bench),
            limit=3,
            t_max=2,
            max_new_tokens=24,
            no_tool_bench="none",
            quiet=True,
            out=str(tmp_path / "run"),
            decoding=decoding,
        )
    )
    record = result.metrics["decoding"]
    assert record["executor"] == "vllm-rules" and record["unapplied"] == ["speculate"]
    assert record["constraint_stats"] is None  # vLLM echoes no counters

    tools = {d.id: _records(d.candidate_tools) for d in load_dialogues(small_bench)}
    asked = set()  # (dialogue's candidate tools, the user's words so far) of every assistant turn
    for t in result.transcripts:
        for i, turn in enumerate(t.turns):
            if turn.role == "assistant":
                said = tuple(u.content for u in t.turns[:i] if u.role == "user" and u.content)
                asked.add((tools[t.id], said))
    assert len(server.bodies) == sum(1 for t in result.transcripts for x in t.turns if x.role == "assistant")
    sent = set()
    for body in server.bodies:
        assert set(body["vllm_xargs"]) == {XARGS_KEY} and body["temperature"] == 0
        found = read_payload(body["vllm_xargs"])
        assert found is not None and found.decoding == decoding
        users = tuple(m["content"] for m in body["messages"] if m["role"] == "user")
        assert found.said == users  # the words of the conversation this request carries
        sent.add((_records(found.candidates), found.said))
    assert sent == asked and {c for c, _ in sent} == set(tools.values())


def test_without_the_prefix_the_aids_are_refused_and_nothing_is_sent(server: StandInVLLM) -> None:
    from diaforge.eval.models import ModelSpec, ModelUnderTest

    spec = ModelSpec("m", backend="openai", base_url="http://vllm.test/v1", decoding=ALL_ON)
    model = ModelUnderTest(spec)
    with pytest.raises(BackendConfigError, match=r"^--constrain-calls on, .*vllm-rules\+http://"):
        asyncio.run(model.check())
    assert model.executor == "openai" and server.bodies == []

    plain = ModelUnderTest(dataclasses.replace(spec, decoding=DecodingConfig()))
    asyncio.run(plain.check())
    dialogue = load_dialogues(BENCH)[0]
    (reply,) = asyncio.run(plain.respond([dialogue.model_copy(update={"turns": dialogue.turns[:1]})]))
    assert reply.raw == REPLY and len(server.bodies) == 1 and "vllm_xargs" not in server.bodies[0]
    assert plain.executor == "openai" and plain.cfg.decoding.unapplied(plain.executor) == ["loop_stop"]
