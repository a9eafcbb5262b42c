"""`parse_assistant` reads prompt-mode text. It is total: it never raises and never evaluates or
executes anything; every input comes back as a `ParsedMessage` of kind ``reply``,
``tool_calls`` or ``malformed`` (with a short reason). The rules, in order:

1. Surrounding whitespace is stripped.
2. Think block. If the text starts with ``<think>`` (no newline needed after it), the thought is
   everything up to the first ``</think>``, stripped; with no ``</think>`` at all the message is
   malformed, ``"unterminated think block"`` (the text after the tag is still kept as the
   thought). If the text does not start with ``<think>`` but contains ``</think>``, everything
   before the first ``</think>`` is the thought: some chat templates open the tag inside the
   prompt, so the model only writes the closing one. If an opening tag sits before that
   ``</think>`` but not at the start, the message is malformed, ``"think block does not start
   the message"``. Tags are matched exactly (lower case, no attributes).
3. The remainder (stripped) is what the user would see. Empty -> malformed ``"empty reply"``.
4. The remainder may be one fenced code block (```` ```json ```` or a bare fence) whose body
   starts with ``[`` or ``{``; the fence is then removed. A missing closing fence is malformed
   (``"unterminated code fence"``), text after the closing fence is ``"tool-call list mixed with
   prose"``. A fenced block in another language is an ordinary reply.
5. A remainder that starts with ``[`` or ``{`` is decoded as JSON:

   * it decodes completely: a list of call objects, or a single call object, gives
     ``tool_calls``. A call object has a non-empty string ``name`` and an object ``args``
     (``arguments`` is accepted instead, also as a JSON-encoded string; other keys are ignored).
     ``[]`` is malformed ``"empty tool-call list"``; any other shape is malformed with a reason
     that names the call (1-based) and what is wrong, e.g. ``"call 2 has no 'name'"``,
     ``"call 1 has no 'args'"``, ``"call 1 is not an object"``.
   * a JSON value followed by more text: malformed ``"tool-call list mixed with prose"`` when
     the value looks like calls (an object with a ``name`` key, or a list holding one);
     otherwise the whole remainder is a reply (``"[1] First, ..."``).
   * it does not decode: when it *starts like* a call list or call object (``[`` followed by
     ``{`` or ``]``, ``{`` followed by a quote or ``}``), or it was fenced, or it is nested too
     deep to decode, it is malformed, ``"invalid JSON in tool-call list: <decoder message>"``
     (``"... nesting too deep"`` for the last case); otherwise it is a reply (so
     ``"[Draft] Could you ..."`` and ``"{placeholder} ..."`` are replies).
6. Anything else is a reply, except that a reply still holding ``<think>`` or ``</think>`` is
   malformed, ``"think tag inside the reply"``, and one with a JSON value that looks like calls
   embedded after some prose (``"Sure! [{"name": ...}]"``) is malformed, ``"tool-call list
   mixed with prose"``.

Non-finite numbers (``NaN``, ``Infinity``) are not JSON and make the list malformed. Nesting too
deep for the decoder, numbers too long to convert, and any unexpected internal error all give a
malformed result instead of an exception.

The round trip with `render_assistant` is described in `diaforge.format.rendering`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN
from diaforge.hygiene import json_problem
from diaforge.schema import ToolCall, Turn

Kind = Literal["reply", "tool_calls", "malformed"]


@dataclass(frozen=True)
class ParsedMessage:
    """What a model said, classified: a reply for the user, tool calls, or malformed output."""

    kind: Kind
    thought: str | None
    """Text of the think block, stripped; None when there was none."""
    content: str
    """Public reply text; "" for tool calls and for malformed output (see `raw`)."""
    tool_calls: list[ToolCall]
    """The calls, [] unless `kind == "tool_calls"`."""
    reason: str | None
    """Why the message is malformed, a short phrase; None otherwise."""
    raw: str
    """The text that was parsed."""

    def to_turn(self, **fields: Any) -> Turn:
        """This message as an assistant `Turn`; `fields` (phase, act, action, metadata, ...) are
        passed on and override the parsed values. A malformed message keeps its raw text as the
        content, its thought if any, and records the reason as ``metadata["malformed"]``."""
        base: dict[str, Any] = {"role": "assistant", "thought": self.thought}
        if self.kind == "tool_calls":
            base["content"] = ""
            base["tool_calls"] = [call.model_copy(deep=True) for call in self.tool_calls]
        elif self.kind == "reply":
            base["content"] = self.content
        else:
            base["content"] = self.raw
            base["metadata"] = {**dict(fields.pop("metadata", None) or {}), "malformed": self.reason}
        base.update(fields)
        return Turn(**base)


def _reply(raw: str, thought: str | None, content: str) -> ParsedMessage:
    return ParsedMessage("reply", thought, content, [], None, raw)


def _calls(raw: str, thought: str | None, calls: list[ToolCall]) -> ParsedMessage:
    return ParsedMessage("tool_calls", thought, "", calls, None, raw)


def _malformed(raw: str, thought: str | None, reason: str) -> ParsedMessage:
    return ParsedMessage("malformed", thought, "", [], reason, raw)


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constants)
_FENCE = "```"
_FENCE_OPEN = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[ \t]*(?:\r?\n)?")
# `[` then `{` or `]`, or `{` then a quote or `}`: the start of a call list or call object.
_CALL_START = re.compile(r"(?:\[\s*(?:\{|\]|\Z)|\{\s*(?:[\"'}]|\Z))")
# A bracket opening what could be embedded call JSON after some prose.
_EMBEDDED = re.compile(r"\[\s*\{\s*\"|\{\s*\"")
_MAX_EMBEDDED_PROBES = 64
_MAX_REASON_DETAIL = 80


def _decode_error(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nesting too deep"
    if isinstance(exc, json.JSONDecodeError):
        return exc.msg
    detail = str(exc) or type(exc).__name__
    return detail if len(detail) <= _MAX_REASON_DETAIL else detail[: _MAX_REASON_DETAIL - 3] + "..."


def _looks_like_calls(value: Any) -> bool:
    """An object with a `name` key, or a list holding one: what a call attempt decodes to."""
    if isinstance(value, dict):
        return "name" in value
    if isinstance(value, list):
        return any(isinstance(item, dict) and "name" in item for item in value)
    return False


def _coerce_args(args: Any, label: str, key: str) -> tuple[dict[str, Any] | None, str | None]:
    if isinstance(args, str):
        if not args.strip():
            return {}, None
        try:
            args = _DECODER.decode(args)
        except (ValueError, RecursionError) as exc:
            return None, f"{label} has '{key}' that is not valid JSON: {_decode_error(exc)}"
    if not isinstance(args, dict):
        return None, f"{label} has '{key}' that is not an object"
    problem = json_problem(args)
    if problem is not None:
        return None, f"{label} has '{key}' that JSON cannot hold ({problem[0]}: {problem[1]})"
    return args, None


def _calls_from_json(value: Any) -> tuple[list[ToolCall] | None, str | None]:
    """Validate a decoded value as a call list (or a single call object)."""
    if isinstance(value, dict):
        items = [value]
    elif isinstance(value, list):
        if not value:
            return None, "empty tool-call list"
        items = value
    else:
        return None, "tool-call JSON is not a list of objects"
    calls: list[ToolCall] = []
    for i, item in enumerate(items, start=1):
        label = f"call {i}"
        if not isinstance(item, dict):
            return None, f"{label} is not an object"
        if "name" not in item:
            return None, f"{label} has no 'name'"
        name = item["name"]
        if not isinstance(name, str):
            return None, f"{label} has a non-string 'name'"
        if not name.strip():
            return None, f"{label} has an empty 'name'"
        if "args" in item and "arguments" in item:
            return None, f"{label} has both 'args' and 'arguments'"
        key = "args" if "args" in item else "arguments" if "arguments" in item else None
        if key is None:
            return None, f"{label} has no 'args'"
        args, reason = _coerce_args(item[key], label, key)
        if args is None:
            return None, reason
        calls.append(ToolCall(name=name, args=args))
    return calls, None


def _has_embedded_calls(text: str) -> bool:
    for probes, match in enumerate(_EMBEDDED.finditer(text)):
        if probes >= _MAX_EMBEDDED_PROBES:
            break
        try:
            value, _ = _DECODER.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            continue
        if _looks_like_calls(value):
            return True
    return False


def _classify(raw: str, thought: str | None, rest: str) -> ParsedMessage:
    """Classify the public part of a message (stripped, without the think block)."""
    if not rest:
        return _malformed(raw, thought, "empty reply")

    body, fenced = rest, False
    if rest.startswith(_FENCE):
        opening = _FENCE_OPEN.match(rest)
        lang = opening.group(1).lower() if opening else ""
        inner = rest[opening.end() :] if opening else rest[len(_FENCE) :]
        if lang in ("", "json") and inner.lstrip().startswith(("[", "{")):
            close = inner.find(_FENCE)
            if close < 0:
                return _malformed(raw, thought, "unterminated code fence")
            if inner[close + len(_FENCE) :].strip():
                return _malformed(raw, thought, "tool-call list mixed with prose")
            body, fenced = inner[:close].strip(), True

    if body.startswith(("[", "{")):
        try:
            value, end = _DECODER.raw_decode(body)
        except (ValueError, RecursionError) as exc:
            if fenced or _CALL_START.match(body) or isinstance(exc, RecursionError):
                return _malformed(raw, thought, f"invalid JSON in tool-call list: {_decode_error(exc)}")
        else:
            if not body[end:].strip():
                calls, reason = _calls_from_json(value)
                if calls is None:
                    return _malformed(raw, thought, reason or "not a tool-call list")
                return _calls(raw, thought, calls)
            if fenced or _looks_like_calls(value):
                return _malformed(raw, thought, "tool-call list mixed with prose")

    if THINK_OPEN in rest or THINK_CLOSE in rest:
        return _malformed(raw, thought, "think tag inside the reply")
    if _has_embedded_calls(rest):
        return _malformed(raw, thought, "tool-call list mixed with prose")
    return _reply(raw, thought, rest)


def _parse(raw: str) -> ParsedMessage:
    text = raw.strip()
    thought: str | None = None
    if text.startswith(THINK_OPEN):
        end = text.find(THINK_CLOSE, len(THINK_OPEN))
        if end < 0:
            return _malformed(raw, text[len(THINK_OPEN) :].strip(), "unterminated think block")
        thought = text[len(THINK_OPEN) : end].strip()
        rest = text[end + len(THINK_CLOSE) :]
    else:
        close = text.find(THINK_CLOSE)
        if close >= 0:
            before = text[:close]
            if THINK_OPEN in before:
                return _malformed(raw, None, "think block does not start the message")
            thought = before.strip()
            rest = text[close + len(THINK_CLOSE) :]
        else:
            rest = text
    return _classify(raw, thought, rest.strip())


def parse_assistant(text: str) -> ParsedMessage:
    """Classify prompt-mode assistant text (rules in the module docstring). Never raises."""
    if not isinstance(text, str):
        return _malformed("", None, f"expected text, got {type(text).__name__}")
    try:
        return _parse(text)
    except Exception as exc:  # totality is the contract: report, never propagate
        return _malformed(text, None, f"unparseable output ({type(exc).__name__})")


def _get(obj: Any, key: str) -> Any:
    """A field of a dict or of an object (SDK models keep unknown fields in `model_extra`)."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(key)
    value = getattr(obj, key, None)
    if value is None:
        extra = getattr(obj, "model_extra", None)
        if isinstance(extra, dict):
            value = extra.get(key)
    return value


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            text = part if isinstance(part, str) else _get(part, "text")
            if isinstance(text, str):
                parts.append(text)
        return "".join(parts)
    return str(content)


def _native_calls(entries: list[Any]) -> tuple[list[ToolCall] | None, str | None]:
    calls: list[ToolCall] = []
    for i, entry in enumerate(entries, start=1):
        label = f"call {i}"
        function = _get(entry, "function") or entry  # also accept flat {"name", "arguments"}
        name = _get(function, "name")
        if not isinstance(name, str) or not name.strip():
            return None, f"{label} has no 'name'"
        arguments = _get(function, "arguments")
        if arguments is None:
            arguments = _get(function, "args")
        if arguments is None:
            arguments = {}
        args, reason = _coerce_args(arguments, label, "arguments")
        if args is None:
            return None, reason
        calls.append(ToolCall(name=name, args=args))
    return calls, None


def _raw_of_native(text: str, entries: list[Any]) -> str:
    def plain(entry: Any) -> dict[str, Any]:
        function = _get(entry, "function") or entry
        return {"name": _get(function, "name"), "arguments": _get(function, "arguments")}

    try:
        return json.dumps(
            {"content": text, "tool_calls": [plain(e) for e in entries]}, ensure_ascii=False, default=str
        )
    except (TypeError, ValueError, RecursionError):
        return text


def _parse_native(message: Any) -> ParsedMessage:
    text = _text_of(_get(message, "content"))
    reasoning = _get(message, "reasoning_content")
    if not isinstance(reasoning, str) or not reasoning.strip():
        reasoning = _get(message, "reasoning")
    reasoning = reasoning.strip() if isinstance(reasoning, str) and reasoning.strip() else None

    entries = _get(message, "tool_calls") or []
    if not isinstance(entries, list):
        entries = list(entries) if isinstance(entries, tuple) else [entries]
    legacy = _get(message, "function_call")
    if not entries and legacy is not None:
        entries = [{"function": legacy}]

    if entries:
        raw = _raw_of_native(text, entries)
        thought = reasoning
        if thought is None and text.strip():
            thought = parse_assistant(text).thought
        calls, reason = _native_calls(entries)
        if calls is None:
            return _malformed(raw, thought, reason or "invalid tool calls")
        return _calls(raw, thought, calls)

    parsed = parse_assistant(text)
    if reasoning is None:
        return parsed
    return ParsedMessage(parsed.kind, reasoning, parsed.content, parsed.tool_calls, parsed.reason, parsed.raw)


def parse_openai_message(message: dict[str, Any] | Any) -> ParsedMessage:
    """Classify a native (OpenAI-style) response message: a dict or an SDK object. Never raises.

    * Structured ``tool_calls`` (arguments as a JSON string or a dict; the legacy
      ``function_call`` too) give kind ``tool_calls``. Text sent next to them is the model's
      preamble: it is not kept, since a call turn has no content, but a think block in it
      supplies the thought. `raw` is then a JSON dump of the content and the calls.
    * Without calls, the content is parsed with `parse_assistant`: it may itself be
      prompt-format text (think block, JSON call list).
    * ``reasoning_content`` (or ``reasoning``), when present and non-empty, is the thought and
      takes precedence over a think block in the content.
    """
    try:
        return _parse_native(message)
    except Exception as exc:  # totality is the contract
        return _malformed("", None, f"unreadable message ({type(exc).__name__})")
