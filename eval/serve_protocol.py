"""The OpenAI chat-completions requests of `diaforge serve` (`diaforge.eval.serve`), without the web
framework: a request body read into a `GenerationRequest` for the one generator, or refused as an
OpenAI-style 4xx error (`RequestError`). Its replies are `diaforge.eval.serve_replies`.

What a request means:

- ``messages``: system (``developer`` too), user, assistant and tool messages. An assistant's
  ``tool_calls`` may carry their arguments as a JSON string (as OpenAI clients send them) or an
  object; the chat template gets an object, as evaluation gives it. A call, in ``tool_calls`` or in
  an assistant's text (prompt mode), to a tool the request does not name is refused.
- ``tools``: OpenAI function specs. In native mode they go to the chat template; in prompt mode the
  server writes the system prompt that lists them, as training did (the checkpoint's
  ``prompt_format.json``: its rules, tool style and custom prompt), and a system message the client
  sent follows it. Without ``tools`` the messages are taken as they come: the client wrote the
  prompt itself, as ``eval run`` does.
- ``extra_body={"diaforge": {...}}`` (``DIAFORGE_KEYS``): ``decoding``, some fields of
  `DecodingConfig` over the server's own (its flags); ``candidates``, the `diaforge.schema.Tool`
  records the call rule holds a call to (default: the tools of ``tools``); ``said``, the user's
  words grounded values copy (default: the user messages' text).

What a reply holds: the model's text read by `diaforge.format.parse_assistant`. A call list gives
``tool_calls`` (id, type ``function``, name, arguments as a JSON string), a reply gives
``content``; the thought of either is ``reasoning_content``. Malformed output is ``content``, the
text as written (its thought inside). ``finish_reason`` is ``tool_calls`` or ``stop``, or
``length`` (cut by the token budget) and ``loop`` (ended by the loop stop) whatever the text holds.
Beside the choices, ``diaforge`` echoes what was applied: the executor (``diaforge-serve``), the
whole decoding config, the rules' counters and the model's text as written, which the toolkit's
`openai` backend reads back so that a served reply is the local reply (`ECHO`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.format import THINK_OPEN, PromptFormat, parse_assistant
from diaforge.format.prompt import fill_system_prompt, system_prompt
from diaforge.format.rendering import with_thought
from diaforge.llm.base import GenerationRequest
from diaforge.llm.decoding import DecodingConfig
from diaforge.schema import Tool

#: The executor a diaforge server names in its echo and its model list (`APPLIED_BY`).
EXECUTOR = "diaforge-serve"
#: The key of the toolkit's extension, in a request (``extra_body``) and in a reply (the echo).
ECHO = "diaforge"
#: What a request's ``diaforge`` mapping may hold.
DIAFORGE_KEYS = ("decoding", "candidates", "said")
#: Message roles a request may use (``developer`` is read as ``system``).
ROLES = ("system", "developer", "user", "assistant", "tool")
#: Request fields read here; any other is ignored, as OpenAI-compatible servers do, except those
#: in `UNSUPPORTED` when they ask for something this server does not do.
READ_FIELDS = (
    "model",
    "messages",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "seed",
    "stop",
    "n",
    "stream",
    "stream_options",
    "logprobs",
    ECHO,
)
_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,128}$")
MAX_STOP = 4
MAX_TOOLS = 128


class RequestError(Exception):
    """A request the server refuses: its HTTP status and the OpenAI error object's fields."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message, self.status, self.param, self.code, self.kind = message, status, param, code, kind

    def body(self) -> dict[str, Any]:
        """``{"error": {"message", "type", "param", "code"}}``, as the OpenAI API answers."""
        return error_body(self.message, kind=self.kind, param=self.param, code=self.code)


def error_body(
    message: str, *, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """An OpenAI-style error object."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass(frozen=True)
class ServedModel:
    """What the server knows of the model it serves: how requests are read."""

    name: str
    """The model name clients send (``--served-model-name``, default the folder's name)."""
    prompt_format: PromptFormat
    """The checkpoint's prompt format (``prompt_format.json``; the defaults without one)."""
    decoding: DecodingConfig
    """The decoding of a request that names none (the server's flags)."""
    max_new_tokens: int = 384
    """The budget of a request that gives none."""
    max_tokens_cap: int = 4096
    """The largest ``max_tokens`` a request may ask for."""
    max_messages: int = 512
    """The most messages a request may hold."""
    aliases: tuple[str, ...] = ()
    """Other names a request may give as ``model``: the model folder, as given and resolved; a
    path whose last part is one of the names is taken too (``eval run --backend openai --model
    outputs/demo/sft`` from another folder)."""


@dataclass
class ChatRequest:
    """A request read: what the generator is asked, and how the reply is sent."""

    generation: GenerationRequest
    decoding: DecodingConfig
    stream: bool = False
    include_usage: bool = False
    model: str = ""
    tool_names: tuple[str, ...] = field(default_factory=tuple)


def _fail(message: str, param: str | None = None, code: str | None = None) -> RequestError:
    return RequestError(message, param=param, code=code)


def _text(content: Any, param: str) -> str | None:
    """Message content as text: a string, None, or a list of text parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if (
                not isinstance(part, Mapping)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise _fail(f"{param}[{i}] must be a text part ({{'type': 'text', 'text': ...}})", param)
            parts.append(part["text"])
        return "".join(parts)
    raise _fail(f"{param} must be a string, a list of text parts or null", param)


def _arguments(value: Any, param: str) -> dict[str, Any]:
    if isinstance(value, str):
        if not value.strip():
            return {}
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise _fail(f"{param} is not valid JSON: {exc}", param) from None
    if not isinstance(value, dict):
        raise _fail(f"{param} must be a JSON object", param)
    return value


def _tool_calls(calls: Any, param: str) -> list[dict[str, Any]]:
    if not isinstance(calls, list):
        raise _fail(f"{param} must be a list", param)
    out = []
    for i, call in enumerate(calls):
        where = f"{param}[{i}]"
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise _fail(
                f"{where} must be {{'type': 'function', 'function': {{'name': ..., 'arguments': ...}}}}",
                where,
            )
        entry: dict[str, Any] = {
            "type": "function",
            "function": {
                "name": function["name"],
                "arguments": _arguments(function.get("arguments"), f"{where}.function.arguments"),
            },
        }
        if isinstance(call.get("id"), str):
            entry = {"id": call["id"], **entry}
        out.append(entry)
    return out


def read_messages(raw: Any, limit: int) -> list[dict[str, Any]]:
    """The request's messages as the chat template takes them (module docstring)."""
    if not isinstance(raw, list) or not raw:
        raise _fail("messages must be a non-empty list", "messages")
    if len(raw) > limit:
        raise _fail(f"messages holds {len(raw)} messages; this server takes at most {limit}", "messages")
    messages = []
    for i, message in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise _fail(f"{where} must be an object", where)
        role = message.get("role")
        if role not in ROLES:
            raise _fail(f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}", f"{where}.role")
        out: dict[str, Any] = {
            "role": "system" if role == "developer" else role,
            "content": _text(message.get("content"), f"{where}.content"),
        }
        if role == "assistant":
            if message.get("tool_calls"):
                out["tool_calls"] = _tool_calls(message["tool_calls"], f"{where}.tool_calls")
            reasoning = message.get("reasoning_content", message.get("reasoning"))
            if isinstance(reasoning, str):
                out["reasoning_content"] = reasoning
        elif out["content"] is None:
            raise _fail(f"{where}.content is missing", f"{where}.content")
        for key in ("name", "tool_call_id"):
            if isinstance(message.get(key), str):
                out[key] = message[key]
        messages.append(out)
    return messages


def read_tools(raw: Any) -> tuple[list[dict[str, Any]], list[Tool]]:
    """The request's ``tools``, checked, and the same as `Tool` records."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        raise _fail("tools must be a list of function specs", "tools")
    if len(raw) > MAX_TOOLS:
        raise _fail(f"tools holds {len(raw)} tools; this server takes at most {MAX_TOOLS}", "tools")
    specs, tools, seen = [], [], set()
    for i, spec in enumerate(raw):
        where = f"tools[{i}]"
        function = spec.get("function") if isinstance(spec, Mapping) else None
        if (
            not isinstance(spec, Mapping)
            or spec.get("type", "function") != "function"
            or not isinstance(function, Mapping)
        ):
            raise _fail(
                f"{where} must be {{'type': 'function', 'function': {{'name': ..., 'parameters': ...}}}}",
                where,
            )
        name = function.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise _fail(
                f"{where}.function.name must be 1 to 128 letters, digits, '_', '-', '.' or ':', got {name!r}",
                f"{where}.function.name",
            )
        if name in seen:
            raise _fail(f"{where}: tool {name!r} is listed twice", f"{where}.function.name")
        seen.add(name)
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        problem = _schema_problem(parameters)
        if problem is not None:
            raise _fail(f"{where}.function.parameters: {problem}", f"{where}.function.parameters")
        description = function.get("description", "")
        if not isinstance(description, str):
            raise _fail(f"{where}.function.description must be a string", f"{where}.function.description")
        try:
            tools.append(Tool(name=name, description=description, parameters=parameters))
        except (ValidationError, ValueError, TypeError) as exc:
            raise _fail(
                f"{where}.function.parameters: {_first_line(exc)}", f"{where}.function.parameters"
            ) from None
        specs.append({"type": "function", "function": dict(function)})
    return specs, tools


def _schema_problem(parameters: Any) -> str | None:
    """Why a function's ``parameters`` is not an object schema the call rule can hold calls to."""
    if not isinstance(parameters, Mapping):
        return "must be a JSON Schema object"
    if parameters.get("type", "object") != "object":
        return f"type must be 'object', got {parameters.get('type')!r}"
    properties = parameters.get("properties", {})
    if not isinstance(properties, Mapping) or not all(isinstance(v, Mapping) for v in properties.values()):
        return "properties must map each argument to a schema object"
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "required must be a list of argument names"
    missing = [r for r in required if r not in properties]
    if missing:
        return f"required names {missing[0]!r}, which properties does not define"
    return None


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _candidates(raw: Any) -> list[Tool]:
    if not isinstance(raw, list):
        raise _fail("diaforge.candidates must be a list of tool records", f"{ECHO}.candidates")
    out = []
    for i, record in enumerate(raw):
        try:
            out.append(Tool.model_validate(record))
        except ValidationError as exc:
            raise _fail(f"diaforge.candidates[{i}]: {_first_line(exc)}", f"{ECHO}.candidates") from None
    return out


def read_decoding(raw: Any, default: DecodingConfig) -> DecodingConfig:
    """``diaforge.decoding``: the fields given, over the server's own; what a rule needs checked."""
    if raw is None:
        return default
    if not isinstance(raw, Mapping):
        raise _fail("diaforge.decoding must be an object of decoding fields", f"{ECHO}.decoding")
    try:
        decoding = type(default)(**{**default.as_dict(), **raw})
        decoding.check(EXECUTOR)
    except (ValidationError, TypeError) as exc:
        raise _fail(f"diaforge.decoding: {_first_line(exc)}", f"{ECHO}.decoding") from None
    except InputError as exc:
        raise _fail(f"diaforge.decoding: {exc}", f"{ECHO}.decoding") from None
    return decoding


def _number(body: Mapping[str, Any], key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or not low <= value <= high
    ):
        raise _fail(f"{key} must be a number between {low:g} and {high:g}, got {value!r}", key)
    return float(value)


def _integer(body: Mapping[str, Any], key: str, low: int, high: int) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(f"{key} must be a whole number between {low} and {high}, got {value!r}", key)
    return value


def _stop(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    stops = [raw] if isinstance(raw, str) else raw
    if not isinstance(stops, list) or len(stops) > MAX_STOP or not all(isinstance(s, str) for s in stops):
        raise _fail(f"stop must be a string or a list of at most {MAX_STOP} strings", "stop")
    return tuple(s for s in stops if s)


def _prompt_mode_system(
    messages: list[dict[str, Any]], tools: list[Tool], fmt: PromptFormat
) -> list[dict[str, Any]]:
    """Prompt mode with ``tools=``: the system prompt training showed, listing them, first; the
    client's own system messages follow it in the same message."""
    if fmt.system_prompt is None:
        listing = system_prompt(tools, tool_style=fmt.tool_style)
    else:
        listing = fill_system_prompt(
            fmt.system_prompt, tools, prompt_mode="prompt", tool_style=fmt.tool_style
        )
    own = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
    rest = [m for m in messages if m["role"] != "system"]
    return [{"role": "system", "content": "\n\n".join([listing, *own])}, *rest]


def _prompt_mode_messages(
    messages: list[dict[str, Any]], tools: list[Tool], fmt: PromptFormat
) -> list[dict[str, Any]]:
    """Prompt mode: earlier thoughts written as training wrote them, then the system prompt that
    lists `tools` (when the request names any)."""
    messages = _prompt_mode_thoughts(messages, fmt.history_reasoning == "keep")
    return _prompt_mode_system(messages, tools, fmt) if tools else messages


def _prompt_mode_thoughts(messages: list[dict[str, Any]], keep: bool) -> list[dict[str, Any]]:
    """Prompt mode: an assistant message's ``reasoning_content`` written into its text as training
    wrote earlier thoughts (``history_reasoning: keep``: the think block before the reply), or left
    out (``strip``); a text that already holds a think block is taken as it is."""
    out = []
    for m in messages:
        thought = m.get("reasoning_content")
        if m["role"] != "assistant" or thought is None:
            out.append(m)
            continue
        m = {k: v for k, v in m.items() if k != "reasoning_content"}
        text = m.get("content") or ""
        if keep and THINK_OPEN not in text:
            m["content"] = with_thought(thought, text)
        out.append(m)
    return out


def _history_calls(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """``(message index, tool name)`` of every call the history's assistant messages made, in
    ``tool_calls`` or written as a call list in their text."""
    out = []
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        out += [(i, c["function"]["name"]) for c in m.get("tool_calls", [])]
        if m.get("content"):
            parsed = parse_assistant(m["content"])
            if parsed.kind == "tool_calls":
                out += [(i, c.name) for c in parsed.tool_calls]
    return out


def read_extension(
    raw: Any, served: ServedModel, tools: list[Tool]
) -> tuple[DecodingConfig, list[Tool], list[str] | None]:
    """The request's ``diaforge`` mapping: its decoding over the server's, the candidates (default
    `tools`) and what the user said (None: the user messages' text)."""
    extension = raw or {}
    if not isinstance(extension, Mapping):
        raise _fail("diaforge must be an object", ECHO)
    unknown = sorted(set(extension) - set(DIAFORGE_KEYS))
    if unknown:
        raise _fail(
            f"diaforge.{unknown[0]} is not a key this server reads ({', '.join(DIAFORGE_KEYS)})", ECHO
        )
    decoding = read_decoding(extension.get("decoding"), served.decoding)
    candidates = _candidates(extension["candidates"]) if "candidates" in extension else tools
    said = extension.get("said")
    if said is not None and (not isinstance(said, list) or not all(isinstance(s, str) for s in said)):
        raise _fail("diaforge.said must be a list of strings", f"{ECHO}.said")
    return decoding, candidates, said


def read_request(body: Any, served: ServedModel) -> ChatRequest:
    """A chat-completions body read into what the generator is asked (module docstring), or the
    `RequestError` that refuses it."""
    if not isinstance(body, Mapping):
        raise _fail("the request body must be a JSON object")
    model = body.get("model")
    names = (served.name, *served.aliases)
    if model is not None and (
        not isinstance(model, str) or (model not in names and PurePath(model).name not in names)
    ):
        raise RequestError(
            f"the model {model!r} is not served here; this server serves {served.name!r}",
            status=404,
            param="model",
            code="model_not_found",
        )
    messages = read_messages(body.get("messages"), served.max_messages)
    specs, tools = read_tools(body.get("tools"))
    choice = body.get("tool_choice")
    if choice not in (None, "auto"):
        raise _fail(
            "tool_choice: only 'auto' is supported (the model decides whether to call)", "tool_choice"
        )
    _integer(body, "n", 1, 1)
    if body.get("logprobs"):
        raise _fail("logprobs are not supported", "logprobs")
    top_p = _number(body, "top_p", 0.0, 1.0)
    if top_p is not None and top_p < 1.0:
        raise _fail("top_p: only 1 is supported", "top_p")
    temperature = _number(body, "temperature", 0.0, 2.0)
    budget = _integer(body, "max_completion_tokens", 1, served.max_tokens_cap)
    if budget is None:
        budget = _integer(body, "max_tokens", 1, served.max_tokens_cap)
    seed = _integer(body, "seed", -(2**63), 2**63 - 1)
    stop = _stop(body.get("stop"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise _fail("stream must be true or false", "stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, Mapping):
        raise _fail("stream_options must be an object", "stream_options")

    decoding, candidates, said = read_extension(body.get(ECHO), served, tools)
    if decoding.aids() and temperature:
        raise _fail(
            f"temperature {temperature:g}: the decoding aids ({', '.join(decoding.aids())}) need greedy decoding; "
            "send temperature 0 or turn them off in extra_body diaforge.decoding",
            "temperature",
        )

    known = {t.name for t in tools} | {t.name for t in candidates}
    for i, name in _history_calls(messages):
        if name not in known:
            raise _fail(
                f"messages[{i}] calls the tool {name!r}, which this request does not name in tools",
                f"messages[{i}]",
                "unknown_tool",
            )
    native = served.prompt_format.prompt_mode == "native"
    if not native:
        messages = _prompt_mode_messages(messages, tools, served.prompt_format)
    generation = GenerationRequest(
        messages,
        tools=specs if native and specs else None,
        candidates=tuple(candidates),
        said=tuple(said) if said is not None else None,
        decoding=decoding,
        temperature=temperature,
        max_tokens=budget if budget is not None else served.max_new_tokens,
        seed=seed,
        stop=stop,
    )
    return ChatRequest(
        generation,
        decoding,
        stream=stream,
        include_usage=bool(options.get("include_usage")),
        model=served.name,
        tool_names=tuple(sorted(known)),
    )
