"""A request cache on disk for chat backends (`diskcache`, safe across threads and processes).

The rule for what is cached: a request is cached only when its reply is meant to be reproducible,
that is when its effective temperature is 0 (greedy) or when it carries an explicit `seed`. A
sampled request without a seed asks for a fresh draw every time; caching it would make two
identical sampled requests (say, the n user-proxy samples of the voting agent) return the same
text, which silently changes what the pipeline computes.

The key is the SHA-256 of the canonical JSON (sorted keys, no spaces) of everything that decides
the reply: model, messages, temperature, max_tokens, seed, tools, stop, extra_body, plus the
endpoint (`base_url`) so that two local servers that both call their model "default" do not share
replies. The stored payload is the reply (text, tool calls, reasoning, model) and the usage of the
request that produced it. A hit comes back as a `ChatResult` whose `usage` counts no new spend
(`cached=1`, zero tokens, zero cost, zero requests); the original counts stay readable with
`RequestCache.get_payload(key)["usage"]`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import diskcache

from diaforge.llm.base import ChatResult, Usage

#: Bump when the stored payload changes shape: old entries are then simply never hit.
CACHE_FORMAT_VERSION = 1


def is_cacheable(temperature: float | None, seed: int | None) -> bool:
    """True when a request's reply is meant to be reproducible: greedy (temperature 0) or seeded.

    `temperature` is the effective temperature (after the backend applied its default); None
    means the server's own default, which samples, so it is cacheable only with a seed."""
    return seed is not None or (temperature is not None and float(temperature) == 0.0)


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, non-JSON values by their `str`."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def make_key(
    *,
    model: str,
    messages: list[dict[str, Any]],
    temperature: float | None,
    max_tokens: int | None,
    seed: int | None,
    tools: list[dict[str, Any]] | None = None,
    stop: list[str] | None = None,
    extra_body: dict[str, Any] | None = None,
    endpoint: str | None = None,
) -> str:
    """SHA-256 hex digest of the canonical JSON of everything that decides the reply."""
    parts = {
        "v": CACHE_FORMAT_VERSION,
        "endpoint": endpoint,
        "model": model,
        "messages": messages,
        # 0 and 0.0 must give the same key.
        "temperature": None if temperature is None else float(temperature),
        "max_tokens": max_tokens,
        "seed": seed,
        "tools": tools,
        "stop": stop,
        "extra_body": extra_body,
    }
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


class RequestCache:
    """Replies stored on disk under `directory`, keyed by `make_key(...)`.

    Several backends (or processes) may open the same directory at once. `hits` and `misses`
    count this object's lookups."""

    def __init__(self, directory: str | Path, *, size_limit: int = 2**30) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._cache = diskcache.Cache(str(self.directory), size_limit=size_limit)
        self.hits = 0
        self.misses = 0

    make_key = staticmethod(make_key)
    cacheable = staticmethod(is_cacheable)

    def get_payload(self, key: str) -> dict[str, Any] | None:
        """The stored payload (text, tool_calls, reasoning, model, usage) or None."""
        payload = self._cache.get(key)
        return payload if isinstance(payload, dict) else None

    def get(self, key: str) -> ChatResult | None:
        """The cached reply as a `ChatResult` that counts no new spend, or None on a miss."""
        payload = self.get_payload(key)
        if payload is None:
            self.misses += 1
            return None
        self.hits += 1
        return ChatResult(
            text=payload.get("text", ""),
            usage=Usage(cached=1),
            tool_calls=payload.get("tool_calls"),
            reasoning=payload.get("reasoning"),
            model=payload.get("model", ""),
        )

    def set(self, key: str, result: ChatResult) -> None:
        """Store a fresh reply and the usage of the request that produced it."""
        self._cache.set(
            key,
            {
                "text": result.text,
                "tool_calls": result.tool_calls,
                "reasoning": result.reasoning,
                "model": result.model,
                "usage": {
                    "prompt_tokens": result.usage.prompt_tokens,
                    "completion_tokens": result.usage.completion_tokens,
                    "cost_usd": result.usage.cost_usd,
                },
            },
        )

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, key: str) -> bool:
        return key in self._cache

    def clear(self) -> None:
        self._cache.clear()

    def close(self) -> None:
        self._cache.close()
