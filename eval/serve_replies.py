"""The replies of `diaforge serve` (`diaforge.eval.serve`): a `ChatResult` written back as an
OpenAI ``chat.completion`` or as its stream chunks, with the echo of what was applied, and the
served model's card in ``/v1/models``. What a reply holds is described in
`diaforge.eval.serve_protocol`."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

from diaforge.eval.serve_protocol import ECHO, EXECUTOR, ChatRequest, ServedModel
from diaforge.format import parse_assistant
from diaforge.llm.base import ChatResult
from diaforge.llm.decoding import DecodingConfig


def reply_message(text: str) -> tuple[dict[str, Any], str]:
    """The assistant message of the model's `text` (module docstring) and its kind (``reply``,
    ``tool_calls`` or ``malformed``)."""
    parsed = parse_assistant(text)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if parsed.kind == "tool_calls":
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.args, ensure_ascii=False)},
            }
            for c in parsed.tool_calls
        ]
    elif parsed.kind == "reply":
        message["content"] = parsed.content
    else:
        message["content"] = text
    if parsed.kind != "malformed" and parsed.thought is not None:
        message["reasoning_content"] = parsed.thought
    return message, parsed.kind


def finish_reason(result: ChatResult, kind: str) -> str:
    """``length`` and ``loop`` as the generator said; otherwise ``tool_calls`` for a call, ``stop``."""
    if result.finish_reason in ("length", "loop"):
        return result.finish_reason
    return "tool_calls" if kind == "tool_calls" else "stop"


def echo(result: ChatResult, decoding: DecodingConfig) -> dict[str, Any]:
    """What the server applied, beside the choices: executor, decoding, counters, the text."""
    return {
        "executor": EXECUTOR,
        "decoding": decoding.as_dict(),
        "counters": dict(result.counters),
        "text": result.text,
    }


def _usage(result: ChatResult) -> dict[str, int]:
    prompt, completion = result.usage.prompt_tokens, result.usage.completion_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(
    result: ChatResult, request: ChatRequest, *, completion_id: str | None = None
) -> dict[str, Any]:
    """The ``chat.completion`` object of one reply."""
    message, kind = reply_message(result.text)
    return {
        "id": completion_id or new_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason(result, kind), "logprobs": None}
        ],
        "usage": _usage(result),
        ECHO: echo(result, request.decoding),
    }


def chunks(
    result: ChatResult, request: ChatRequest, *, completion_id: str | None = None
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one reply, streamed once it is written: the role,
    the thought, the content or each call, then the finish reason with the echo (and the usage,
    when ``stream_options.include_usage`` asked for it)."""
    message, kind = reply_message(result.text)
    base = {
        "id": completion_id or new_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": request.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
            **more,
        }

    out = [chunk({"role": "assistant", "content": ""})]
    if "reasoning_content" in message:
        out.append(chunk({"reasoning_content": message["reasoning_content"]}))
    for i, call in enumerate(message.get("tool_calls", [])):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    if message["content"]:
        out.append(chunk({"content": message["content"]}))
    out.append(chunk({}, finish_reason(result, kind), **{ECHO: echo(result, request.decoding)}))
    if request.include_usage:
        out.append({**base, "choices": [], "usage": _usage(result)})
    return out


def new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


def model_card(served: ServedModel, created: int) -> dict[str, Any]:
    """The served model in ``/v1/models``, with what it applies (``diaforge``: the executor, the
    default decoding, the prompt format), so that a client knows it talks to a diaforge server."""
    return {
        "id": served.name,
        "object": "model",
        "created": created,
        "owned_by": "diaforge",
        ECHO: {
            "executor": EXECUTOR,
            "decoding": served.decoding.as_dict(),
            "prompt_format": served.prompt_format.as_dict(),
        },
    }


def sse(events: Sequence[dict[str, Any]]) -> list[str]:
    """Server-sent events of `events`, then ``[DONE]``."""
    return [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events] + ["data: [DONE]\n\n"]
