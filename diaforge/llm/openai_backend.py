"""Chat backend for any OpenAI-compatible server: OpenAI, vLLM, SGLang, llama.cpp server, Ollama, TGI.

The SDK's own retries are switched off (`max_retries=0`) and replaced by one loop we control:

- retried: HTTP 429, 408 and 5xx, timeouts and connection errors, up to `max_retries` times
  (so at most `max_retries + 1` attempts), sleeping between attempts with exponential backoff and
  full jitter, `uniform(0, min(backoff_max, backoff_base * 2**(attempt-1)))`, drawn from a seeded
  `random.Random` so that runs (and tests) are reproducible. A `Retry-After` (or `retry-after-ms`)
  header, when the server sends one, replaces the drawn delay, capped at `backoff_max`.
- retried too: a 200 reply that is not a usable completion (a body that is not JSON, no
  `choices`); the usage such a reply reports is counted all the same.
- not retried: every other 4xx (bad request, unknown model, bad key): `BackendError` at once,
  with the status and the server's message.
- after the last attempt: `BackendError("<model>: request failed after N attempts: <last error>")`.

The API key comes from the environment variable `api_key_env` only, never from a config file.

Against `diaforge serve` (its ``/v1/models`` names the executor ``diaforge-serve``; `check` asks, and
so does the first `generate_batch` that carries a decoding) every request of `generate_batch`
sends its own decoding, candidate tools and the user's words in ``extra_body={"diaforge": {...}}``,
and its reply must echo the decoding it applied (else `BackendError`). The reply's text is then the
model's text as written, which the server echoes beside the OpenAI message, and its `counters` are
what the rules counted: the same `ChatResult` the hf backend gives for the same request.

A vLLM server that runs the toolkit's rules as its logits processor (`diaforge.llm.vllm_rules`)
cannot say so: its client does, by the scheme prefix of `base_url`, ``vllm-rules+http://host/v1``
(the executor ``vllm-rules``). Every request of `generate_batch` then sends the same decoding,
candidates and user's words as ``extra_body={"vllm_xargs": payload(...)}``; nothing is echoed, so the
reply is vLLM's message and carries no counters. Any other server gets neither field, and decoding
aids asked of it are refused (`require_decoding`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import openai

from diaforge.hygiene import json_problem, repair_value
from diaforge.llm.base import BackendConfigError, BackendError, ChatResult, GenerationRequest, Usage
from diaforge.llm.cache import RequestCache, is_cacheable, make_key

#: The executor a `diaforge serve` endpoint names (`diaforge.llm.decoding.APPLIED_BY`), and the key
#: of its extension in requests, replies and its model list.
SERVED_EXECUTOR = "diaforge-serve"
ECHO_KEY = "diaforge"
#: The executor of a vLLM server running the rules as its logits processor, which a `base_url`
#: declares by its scheme prefix (``vllm-rules+http://127.0.0.1:8000/v1``).
VLLM_RULES_EXECUTOR = "vllm-rules"

logger = logging.getLogger(__name__)

#: Placeholder key sent to local servers, which ignore it (the SDK insists on some key).
LOCAL_PLACEHOLDER_KEY = "sk-local-no-key"

#: Seconds `check()` waits for `GET /models` before declaring the server unreachable.
CHECK_TIMEOUT_S = 5.0

# Models we already warned about (no price): warn once per process, not once per request.
_WARNED_NO_PRICE: set[str] = set()


def _retry_after_seconds(headers: Any) -> float | None:
    """Delay asked for by the server (`retry-after-ms`, or `Retry-After` in seconds or as an
    HTTP date), or None when absent or unreadable."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _describe(exc: BaseException) -> str:
    """One line for an SDK error: the HTTP status and the server's message when there is one."""
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {exc.message}"
    if isinstance(exc, openai.APITimeoutError):
        return "request timed out"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        return f"connection error: {cause}" if cause else "connection error"
    return f"{type(exc).__name__}: {exc}"


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _decode_arguments(arguments: Any) -> Any:
    """Tool-call arguments as a dict when they are valid JSON that JSON can hold again (finite
    numbers, bounded depth), else the raw string (the format parser downstream decides what a
    malformed call means)."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
        return arguments if json_problem(value) is not None else value
    return arguments


class OpenAIBackend:
    """Async chat against an OpenAI-compatible endpoint, with retries, a disk cache and accounting.

    Args:
        model: model name sent with every request (for local servers: the served model name).
        base_url: endpoint such as `http://127.0.0.1:8000/v1`; None means the real OpenAI API
            (the SDK then also honours `OPENAI_BASE_URL`). ``vllm-rules+http://...`` declares a
            vLLM server that applies the decoding rules (module docstring).
        api_key_env: environment variable that holds the key. Required when `base_url` is None;
            with a `base_url` and no key a placeholder is sent (local servers ignore it).
        timeout: seconds per attempt (the whole HTTP request), default 60.
        max_retries: retries after the first attempt, default 6 (so 7 attempts at most).
        backoff_base: first backoff ceiling in seconds, doubled per attempt, default 0.5.
        backoff_max: cap on any single sleep, including a server's `Retry-After`, default 20.
        cache: a `RequestCache`, or a directory to open one in, or None for no caching. Only
            greedy (temperature 0) or seeded requests are cached (see `diaforge.llm.cache`).
        prices: `{model: {"input_per_million": usd, "output_per_million": usd}}`. A model missing
            from it costs 0, with one warning (no warning for a local server with no table).
        default_temperature: used when `chat` gets `temperature=None`, default 0.7.
        extra_body: extra JSON fields sent with every request, e.g. vLLM's
            `{"structured_outputs": {...}}` or `{"chat_template_kwargs": {...}}`.
        default_max_tokens: reply length cap when `chat` gets no `max_tokens`; None (default)
            sends none and lets the server decide.
        jitter_seed: seed of the backoff jitter generator, default 0.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff_base: float = 0.5,
        backoff_max: float = 20.0,
        cache: RequestCache | str | Path | None = None,
        prices: dict[str, dict[str, float]] | None = None,
        default_temperature: float | None = 0.7,
        extra_body: dict[str, Any] | None = None,
        default_max_tokens: int | None = None,
        jitter_seed: int = 0,
    ) -> None:
        if not model:
            raise BackendConfigError("openai backend needs a model name (set `model`)")
        self.declared_executor, base_url = _declared_executor(base_url)
        if max_retries < 0:
            raise BackendConfigError(f"max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise BackendConfigError(f"timeout must be > 0 seconds, got {timeout}")
        if base_url is not None and not str(base_url).startswith(("http://", "https://")):
            raise BackendConfigError(
                f"base_url {base_url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)"
            )
        api_key = os.environ.get(api_key_env) or None
        if api_key is None:
            if base_url is None:
                raise BackendConfigError(
                    f"{api_key_env} is not set: export it, or point base_url at a local "
                    "OpenAI-compatible server"
                )
            api_key = LOCAL_PLACEHOLDER_KEY

        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.prices = dict(prices or {})
        self.default_temperature = default_temperature
        self.default_max_tokens = default_max_tokens
        self.extra_body = dict(extra_body) if extra_body else None
        self.usage = Usage()
        self.executor: str | None = self.declared_executor
        """``diaforge-serve`` when the endpoint is `diaforge serve`, ``vllm-rules`` when `base_url`
        declares it, ``openai`` for any other; None until `check` (or the first `generate_batch`
        with a decoding) asked its ``/models``."""
        self._rng = random.Random(jitter_seed)
        self._owns_cache = cache is not None and not isinstance(cache, RequestCache)
        self.cache = RequestCache(cache) if self._owns_cache else cache  # type: ignore[arg-type]
        # The real OpenAI rejects `max_tokens` for its reasoning models; servers that mimic the
        # API (vLLM, llama.cpp, Ollama, TGI) all read `max_tokens`.
        self._max_tokens_field = "max_completion_tokens" if base_url is None else "max_tokens"
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=self.timeout,
        )

    @property
    def endpoint(self) -> str:
        return str(self._client.base_url).rstrip("/")

    async def check(self) -> None:
        """One cheap request (`GET /models`) to fail early, before any generation, when the
        server is unreachable or rejects the key. Any other HTTP answer means it is up."""
        client = self._client.with_options(timeout=min(CHECK_TIMEOUT_S, self.timeout), max_retries=0)
        try:
            page = await client.models.list()
        except openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                raise BackendConfigError(
                    f"{self.endpoint} rejected the API key from ${self.api_key_env}: {_describe(exc)}"
                ) from None
            # 404 and friends: the server answered, it just has no /models route.
            page = None
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise BackendConfigError(f"cannot reach {self.endpoint}: {_describe(exc)}") from None
        self.executor = self.declared_executor or _executor_of(page)

    def require_decoding(self, decoding: Any) -> None:
        """Refuse, in one line, decoding aids (`DecodingConfig.aids`) that this endpoint does not
        apply: every aid but on `diaforge serve` (after `check`) and on a server declared
        ``vllm-rules``."""
        left_out = decoding.unapplied(self.executor or "openai") if decoding is not None else []
        aids = [name for name in decoding.aids() if name in left_out] if left_out else []
        if aids:
            flags = ", ".join(f"--{name.replace('_', '-')} on" for name in aids)
            raise BackendConfigError(
                f"{flags}: {self.endpoint} does not apply decoding aids (its /models names no "
                f"{SERVED_EXECUTOR} executor); serve the model with `diaforge serve` (or with vLLM and "
                f"its rules, base_url {VLLM_RULES_EXECUTOR}+http://...) or turn them off"
            )

    def _cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        price = self.prices.get(self.model) or self.prices.get(model)
        if price is None:
            # A local server with no price table costs nothing: nothing to warn about.
            if (self.prices or self.base_url is None) and self.model not in _WARNED_NO_PRICE:
                _WARNED_NO_PRICE.add(self.model)
                logger.warning(
                    "no price for model %r in the price table: its cost is counted as 0", self.model
                )
            return 0.0
        return (
            prompt_tokens * float(price.get("input_per_million", 0.0))
            + completion_tokens * float(price.get("output_per_million", 0.0))
        ) / 1_000_000

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(self.backoff_max, retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return self._rng.uniform(0.0, ceiling)

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatResult:
        """One reply. Raises `BackendError` when the request fails for good."""
        return await self._chat(
            messages,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=seed,
            tools=tools,
            stop=stop,
            extra_body=self.extra_body,
        )

    async def _chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None,
        max_tokens: int | None,
        seed: int | None,
        tools: list[dict[str, Any]] | None,
        stop: list[str] | None,
        extra_body: dict[str, Any] | None,
        decoding: dict[str, Any] | None = None,
    ) -> ChatResult:
        """`chat` with this request's `extra_body`; `decoding`: the decoding the reply must echo
        as applied (a `diaforge serve` request)."""
        if temperature is None:
            temperature = self.default_temperature
        # Never send (or key the cache on) text no UTF-8 body can carry.
        messages, _ = repair_value(messages)
        if max_tokens is None:
            max_tokens = self.default_max_tokens
        key = None
        if self.cache is not None and is_cacheable(temperature, seed):
            key = make_key(
                model=self.model,
                messages=messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                tools=tools,
                stop=stop,
                extra_body=extra_body,
                endpoint=self.endpoint,
            )
            hit = self.cache.get(key)
            if hit is not None:
                self.usage.add(hit.usage)
                return hit

        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if temperature is not None:
            request["temperature"] = temperature
        if max_tokens is not None:
            request[self._max_tokens_field] = max_tokens
        if seed is not None:
            request["seed"] = seed
        if tools:
            request["tools"] = tools
        if stop:
            request["stop"] = stop
        if extra_body:
            request["extra_body"] = extra_body

        call = Usage()
        try:
            result = await self._create_with_retries(request, call, decoding)
        finally:
            # Failed calls cost too: their retries, and the tokens of malformed replies.
            self.usage.add(call)
        if key is not None and self.cache is not None and result.repaired is None:
            self.cache.set(key, result)
        return result

    async def generate_batch(
        self, requests: Sequence[GenerationRequest], *, batch_size: int | None = None
    ) -> list[ChatResult]:
        """One reply per request, in their order, at most `batch_size` requests in flight at once
        (None: all). Against `diaforge serve` or a server declared ``vllm-rules`` each request
        sends its decoding, candidates and the user's words (module docstring, `_extension`); any
        other server is sent none, and aids asked of it are refused (`require_decoding`)."""
        requests = list(requests)
        if self.executor is None and any(r.decoding is not None for r in requests):
            await self.check()
        for r in requests:
            self.require_decoding(r.decoding)
        gate = asyncio.Semaphore(batch_size or max(1, len(requests)))

        async def one(r: GenerationRequest) -> ChatResult:
            extra, decoding = self._extension(r)
            async with gate:
                return await self._chat(
                    r.messages,
                    temperature=r.temperature,
                    max_tokens=r.max_tokens,
                    seed=r.seed,
                    tools=r.tools,
                    stop=list(r.stop) or None,
                    extra_body=extra,
                    decoding=decoding,
                )

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def _extension(self, r: GenerationRequest) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The extra body of request `r` and the decoding its reply must echo (None: no echo):
        ``diaforge`` for `diaforge serve`, ``vllm_xargs`` (`diaforge.llm.vllm_rules.payload`, with
        the user's words always named: vLLM sees token ids) for ``vllm-rules``."""
        extra = dict(self.extra_body or {})
        if self.executor == VLLM_RULES_EXECUTOR and r.decoding is not None:
            from diaforge.llm.vllm_rules import payload

            xargs = payload(r.decoding, r.candidates, r.user_texts())
            return {**extra, "vllm_xargs": {**extra.get("vllm_xargs", {}), **xargs}}, None
        if self.executor != SERVED_EXECUTOR:
            return self.extra_body, None
        extension: dict[str, Any] = {}
        decoding = None
        if r.decoding is not None:
            decoding = extension["decoding"] = r.decoding.as_dict()
        if r.candidates:
            extension["candidates"] = [t.model_dump(mode="json") for t in r.candidates]
        if r.said is not None:
            extension["said"] = list(r.said)
        return {**extra, ECHO_KEY: extension}, decoding

    async def _create_with_retries(
        self, request: dict[str, Any], call: Usage, decoding: dict[str, Any] | None = None
    ) -> ChatResult:
        """The reply of `request`, retrying transient HTTP failures and malformed 200 replies
        (a body that is not JSON, a completion without `choices`) within `max_retries`. Every
        attempt's reported usage is added to `call`, failed ones included. `decoding`: what the
        reply must echo as applied; a reply that does not is a `BackendError`."""
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            try:
                response = await self._client.chat.completions.create(**request)
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status != 429 and status != 408 and status < 500:
                    raise BackendError(f"{self.model}: {_describe(exc)}", usage=call) from exc
                retry_after = _retry_after_seconds(exc.response.headers)
                last = _describe(exc)
            except openai.APIConnectionError as exc:  # includes APITimeoutError
                last = _describe(exc)
            except (openai.APIResponseValidationError, ValueError) as exc:
                # A 200 whose body is not a completion (not JSON at all, or not the shape).
                last = f"malformed reply: {type(exc).__name__}: {_one_line(str(exc))}"
            except openai.OpenAIError as exc:
                raise BackendError(f"{self.model}: {_describe(exc)}", usage=call) from exc
            else:
                self._count(response, call)
                problem = self._malformed(response)
                if problem is None:
                    call.requests += 1
                    if decoding is not None:
                        _check_echo(response, decoding, self.model, call)
                    return self._to_result(response, call)
                last = f"malformed reply: {problem}"
            if attempt > self.max_retries:
                raise BackendError(
                    f"{self.model}: request failed after {attempt} attempts: {last}", usage=call
                )
            call.retries += 1
            delay = self._backoff(attempt, retry_after)
            logger.debug("%s: attempt %d failed (%s); retrying in %.2fs", self.model, attempt, last, delay)
            await asyncio.sleep(delay)

    def _count(self, response: Any, call: Usage) -> None:
        """Add the usage a 200 body reports (and its cost) to `call`, whatever else it holds."""
        usage = getattr(response, "usage", None)
        if usage is None:
            return
        try:
            prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        except (TypeError, ValueError):
            return
        model = getattr(response, "model", None) or self.model
        call.prompt_tokens += prompt_tokens
        call.completion_tokens += completion_tokens
        call.cost_usd += self._cost(str(model), prompt_tokens, completion_tokens)

    @staticmethod
    def _malformed(response: Any) -> str | None:
        """Why a 200 reply is not a usable completion, or None."""
        choices = getattr(response, "choices", None)
        if not choices or not isinstance(choices, list):
            return "the server returned no choices"
        message = getattr(choices[0], "message", None)
        if message is None:
            return "the first choice holds no message"
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            return f"message content is a {type(content).__name__}, not text"
        return None

    def _to_result(self, response: Any, call: Usage | int = 0) -> ChatResult:
        """The reply as a `ChatResult`. `call` is the call's usage so far (the response's own
        usage already counted), or, as a plain number, the retries it took (usage then read from
        the response)."""
        if isinstance(call, int):
            retries, call = call, Usage()
            self._count(response, call)
            call.retries = retries
        message = response.choices[0].message
        tool_calls = None
        if message.tool_calls:
            tool_calls = []
            for tc in message.tool_calls:
                function = getattr(tc, "function", None)
                if function is None:  # custom (non-function) tool calls carry no arguments
                    continue
                tool_calls.append({"name": function.name, "arguments": _decode_arguments(function.arguments)})
        extra = message.model_extra or {}
        reasoning = extra.get("reasoning_content") or extra.get("reasoning") or None
        echo = _echo_of(response)
        text = message.content or ""
        counters: dict[str, int] = {}
        if echo is not None and isinstance(echo.get("text"), str):
            # diaforge serve: the model's text as written, read as the hf backend's text is read.
            text, tool_calls = echo["text"], None
            raw = echo.get("counters")
            counters = (
                {str(k): int(v) for k, v in raw.items() if isinstance(v, int)}
                if isinstance(raw, dict)
                else {}
            )
        if reasoning is not None and not isinstance(reasoning, str):
            reasoning = json.dumps(reasoning, ensure_ascii=False)
        model = getattr(response, "model", None) or self.model
        # A lone surrogate (half an emoji) can be neither stored nor sent on: replace it with
        # U+FFFD and say so, so the caller decides what the damaged reply is worth.
        (text, tool_calls, reasoning, model), repaired = repair_value(
            [text, tool_calls, reasoning, str(model)]
        )
        finish = getattr(response.choices[0], "finish_reason", None)
        usage = Usage(
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            requests=1,
            retries=call.retries,
            cost_usd=call.cost_usd,
        )
        return ChatResult(
            text=text,
            usage=usage,
            tool_calls=tool_calls or None,
            reasoning=reasoning,
            model=model,
            finish_reason=str(finish) if finish is not None else None,
            repaired=(
                f"the reply held {repaired} lone UTF-16 surrogate(s) (invalid Unicode), replaced by U+FFFD"
                if repaired
                else None
            ),
            counters=counters,
        )

    async def aclose(self) -> None:
        await self._client.close()
        if self._owns_cache and self.cache is not None:
            self.cache.close()

    async def __aenter__(self) -> OpenAIBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _declared_executor(base_url: str | None) -> tuple[str | None, str | None]:
    """``(executor, url)``: ``vllm-rules`` and the URL after its prefix for a `base_url` written
    ``vllm-rules+http://...``, else None and `base_url` as it is."""
    prefix = VLLM_RULES_EXECUTOR + "+"
    if base_url is not None and str(base_url).startswith(prefix):
        return VLLM_RULES_EXECUTOR, str(base_url)[len(prefix) :]
    return None, base_url


def _executor_of(page: Any) -> str:
    """``diaforge-serve`` when a model of a ``/models`` listing says a diaforge server applies it."""
    for entry in getattr(page, "data", None) or []:
        extension = (getattr(entry, "model_extra", None) or {}).get(ECHO_KEY)
        if isinstance(extension, dict) and extension.get("executor") == SERVED_EXECUTOR:
            return SERVED_EXECUTOR
    return "openai"


def _echo_of(response: Any) -> dict[str, Any] | None:
    """What a diaforge server echoes beside the choices (``diaforge``), or None."""
    extension = (getattr(response, "model_extra", None) or {}).get(ECHO_KEY)
    return extension if isinstance(extension, dict) else None


def _check_echo(response: Any, decoding: dict[str, Any], model: str, call: Usage) -> None:
    """`BackendError` unless the reply echoes `decoding` as the decoding it applied."""
    echo = _echo_of(response)
    applied = echo.get("decoding") if echo is not None else None
    if applied != decoding:
        said = "no decoding" if applied is None else f"decoding {applied}"
        raise BackendError(
            f"{model}: asked to decode with {decoding}, the server echoed {said}: it did not apply "
            "what was asked",
            usage=call,
        )
