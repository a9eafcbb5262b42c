"""One async chat interface for every agent role.

A backend turns a list of chat messages into a reply. The engine never cares which backend it
talks to: an OpenAI-compatible server (`openai`), a local transformers model (`hf`), or none at all
(`scripted`, whose agents are rule-based policies and never call `chat`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from diaforge.errors import UserError

ROLES = ("user", "assistant", "values", "goal", "relevancy", "critique")


class BackendError(UserError):
    """A backend failed for good (after its retries): the seed is rejected with this reason; a
    command that meets it ends with the line and exit code 1 (the configuration was fine).

    `usage` holds what the failed call cost before it gave up (tokens of malformed replies that
    still reported usage, retries): accounting counts failed calls too."""

    exit_code = 1

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage if usage is not None else Usage()


class BackendConfigError(UserError):
    """A backend cannot be built from its configuration (unknown backend, missing API key,
    unreachable server, bad option). Command-line entry points print it as one line, exit 2."""


@dataclass
class Usage:
    """Token and cost accounting, summed over calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    cached: int = 0
    retries: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.cached += other.cached
        self.retries += other.retries
        self.cost_usd += other.cost_usd

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, float]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "requests": self.requests,
            "cached": self.cached,
            "retries": self.retries,
            "cost_usd": round(self.cost_usd, 6),
        }


@dataclass
class ChatResult:
    """A reply: its text, native tool calls if the server returned any, and what it cost."""

    text: str
    usage: Usage = field(default_factory=Usage)
    tool_calls: list[dict[str, Any]] | None = None
    reasoning: str | None = None
    model: str = ""
    finish_reason: str | None = None
    """Why generation stopped, in the OpenAI API's words: ``"stop"`` (end-of-turn token or stop
    string), ``"length"`` (cut by the token budget: the reply is incomplete), ``"tool_calls"``, ...;
    None when the backend does not say (a cached reply, the scripted backend)."""
    repaired: str | None = None
    """Set when the served reply held invalid Unicode (lone surrogates) that the backend replaced
    with U+FFFD so that it can be stored and sent on: says what was repaired. A generation run
    rejects the attempt that received it; an evaluation keeps the repaired text."""
    counters: dict[str, int] = field(default_factory=dict)
    """What the decoding rules did while writing this reply (`diaforge.llm.rules`), summed by name;
    empty when no rule counted anything or the backend applies none."""


@dataclass(frozen=True)
class GenerationRequest:
    """One reply asked of a backend's `generate_batch`: the conversation, what the prompt shows,
    and how to decode it. Every model backend (hf, openai, vllm) answers a list of these."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    """Tool specs handed to the chat template or the server (native mode); None when the prompt
    lists the tools itself."""
    candidates: tuple[Any, ...] = ()
    """The `diaforge.schema.Tool`s the reply may call: what the call rule holds a call to (the
    listing's tools whether they travel in `tools` or in the prompt)."""
    said: tuple[str, ...] | None = None
    """What the user said, which grounded values copy; None: the user messages' text."""
    decoding: Any = None
    """The `diaforge.llm.decoding.DecodingConfig` of this reply; None: the backend's default."""
    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def user_texts(self) -> tuple[str, ...]:
        """`said`, or the text of every user message when it is not given."""
        if self.said is not None:
            return self.said
        return tuple(
            m["content"]
            for m in self.messages
            if m.get("role") == "user" and isinstance(m.get("content"), str)
        )


@runtime_checkable
class ChatBackend(Protocol):
    """What every model-backed backend provides."""

    name: str
    model: str

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatResult: ...

    async def aclose(self) -> None: ...


async def generate_replies(
    backend: Any, requests: Sequence[GenerationRequest], **options: Any
) -> list[ChatResult]:
    """`backend.generate_batch(requests, **options)`, awaited: a coroutine is awaited as it is, a
    blocking one runs in a worker thread so the event loop stays free."""
    if inspect.iscoroutinefunction(backend.generate_batch):
        return await backend.generate_batch(list(requests), **options)
    return await asyncio.to_thread(backend.generate_batch, list(requests), **options)
