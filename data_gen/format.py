"""How an assistant turn looks as text, how text turns back into a turn, and chat-message export.

Two ways of showing a dialogue to a model:

* **prompt mode** (the paper's format): the tools are listed in the system prompt and every
  assistant message is plain text, ``<think>\\n{thought}\\n</think>\\n{reply}``, where the reply is
  either a message for the user or *only* a JSON list of calls
  ``[{"name": "...", "args": {...}}]``.
* **native mode**: the tools go to the chat template through ``tools=`` (OpenAI function specs,
  see `openai_tools`) and a call is an OpenAI-style ``tool_calls`` entry; the thought travels as
  ``reasoning_content``.

`parse_assistant` reads prompt-mode text. It is total: it never raises and never evaluates or
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

Round trip (tested as a property): ``parse_assistant(render_assistant(turn))`` gives back the
turn's kind, thought and content or tool calls whenever

* the thought is ``None`` or stripped and contains no ``</think>``;
* a reply's content is non-empty, has no surrounding whitespace, does not start with ``[``,
  ``{`` or a code fence, contains no ``<think>``/``</think>`` tag and no embedded JSON that
  looks like calls;
* call names are non-blank and argument values are finite JSON values (tool-call turns come
  back with ``content == ""``: a call turn renders only its list).

`render_assistant` writes a call list with ``json.dumps(..., ensure_ascii=False)``, except that a
think tag inside a JSON string is escaped (``\\u003c/think>``) so that it cannot end the thought
early; the decoded value is unchanged. It never raises for a valid `Turn`; outside the
precondition it still renders, but the text may parse back differently (typically as
malformed).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from data_gen.hygiene import json_problem
from data_gen.schema import Dialogue, Tool, ToolCall, Turn, write_jsonl

# The allowed values of every option of `PromptFormat`, defined here and nowhere else: recipes
# (train/config.py), slicing, evaluation, export and the benchmarks import them.
PROMPT_MODES = ("prompt", "native")
TOOL_STYLES = ("json", "compact")
HISTORY_REASONING = ("strip", "keep")
TARGET_REASONING = ("keep", "drop")
ARGUMENTS_AS = ("dict", "json")

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"

Kind = Literal["reply", "tool_calls", "malformed"]


# --------------------------------------------------------------------------------------------
# Parsed messages
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def render_calls(calls: Iterable[ToolCall]) -> str:
    """The JSON list of calls exactly as an assistant writes it: ``[{"name": ..., "args": ...}]``."""
    payload = [{"name": call.name, "args": call.args} for call in calls]
    # default=str: a valid Turn may hold non-JSON values (dates); rendering must not fail.
    text = json.dumps(payload, ensure_ascii=False, default=str)
    # A think tag inside a string would be taken for the end of the thought; `<` only occurs in
    # JSON strings, where its escape decodes to the same value.
    return text.replace(THINK_CLOSE, "\\u003c/think>").replace(THINK_OPEN, "\\u003cthink>")


def render_assistant(turn: Turn, *, include_thought: bool = True) -> str:
    """An assistant turn as prompt-mode text: the optional think block, then the reply text or
    only the JSON list of calls (a call turn's `content` is not rendered)."""
    body = render_calls(turn.tool_calls) if turn.tool_calls else turn.content
    if include_thought and turn.thought is not None:
        return f"{THINK_OPEN}\n{turn.thought}\n{THINK_CLOSE}\n{body}"
    return body


# --------------------------------------------------------------------------------------------
# Parsing prompt-mode text
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# System prompts and tool specs
# --------------------------------------------------------------------------------------------

_PROMPT_RULES = """\
You are an assistant for the employees of a large company. You act for them through the \
tools listed at the end, each given as a JSON specification.

Every answer has two parts:
1. Your private reasoning between <think> and </think>. The user never sees it.
2. Then exactly one of:
   - a message to the user in plain, friendly language; or
   - only a JSON list of tool calls and nothing else, in the form
     [{"name": "<tool name>", "args": {"<parameter>": <value>}}]

How to decide:
- First settle which tool the user needs. When more than one tool could fit, ask a short, \
targeted question that tells them apart; describe what the options do, not their names.
- Then gather the required arguments of that tool. Ask only for what the user has not given \
yet. Never guess or invent a value; optional arguments may be left out.
- When the tool is clear and every required argument is known, reply with one call. Give \
values the types the specification asks for; use "args": {} for a tool without parameters.
- If none of the tools can do what the user wants, tell them so instead of calling one."""

_NATIVE_RULES = """\
You are an assistant for the employees of a large company. You act for them through the \
functions supplied with this conversation.

- Think before you answer.
- First settle which function the user needs. When more than one could fit, ask a short, \
targeted question that tells them apart; describe what the options do, not their names.
- Then gather the required arguments of that function. Ask only for what the user has not \
given yet. Never guess or invent a value; optional arguments may be left out.
- When the function is clear and every required argument is known, make one call, with values \
of the types its specification asks for. Do not add a message to the call.
- If no function can do what the user wants, tell them so instead of calling one."""


def _with_extra(prompt: str, extra_instructions: str | None) -> str:
    if extra_instructions and extra_instructions.strip():
        return f"{prompt}\n\nAdditional instructions:\n{extra_instructions.strip()}"
    return prompt


def _compact_param(tool: Tool, key: str, spec: dict[str, Any]) -> str:
    star = "*" if key in tool.required else ""
    if spec.get("enum"):
        kind = "|".join(json.dumps(v, ensure_ascii=False) for v in spec["enum"])
    else:
        kind = tool.param_base_type(key)
        if kind == "array" and isinstance(spec.get("items"), dict) and spec["items"].get("type"):
            kind = f"array of {spec['items']['type']}"
    return f"{key}{star}: {kind}"


def compact_tool(tool: Tool) -> str:
    """One line per tool: `name(arg*: type, opt: type): description` (`*` marks required
    arguments; enums list their values). About a quarter of the tokens of the JSON spec."""
    params = ", ".join(_compact_param(tool, k, v) for k, v in tool.properties.items())
    return f"- {tool.name}({params}): {tool.description}"


def tool_listing(tools: list[Tool], style: str = "json") -> str:
    """The tools as the prompt-mode system prompt shows them: `json` (default) gives one compact
    JSON spec per line; `compact` gives one signature line per tool, for small models and CPU
    budgets (the prompt goes into every training sample and every evaluation turn)."""
    _check_choice("tool_style", style, TOOL_STYLES)
    if not tools:
        return "(no tools are available)"
    if style == "compact":
        return "(* marks a required argument)\n" + "\n".join(compact_tool(tool) for tool in tools)
    return "\n".join(json.dumps(tool.spec(), ensure_ascii=False) for tool in tools)


def system_prompt(
    tools: list[Tool], *, extra_instructions: str | None = None, tool_style: str = "json"
) -> str:
    """The reference prompt-mode system prompt: role, output contract, then the tools (in the
    given order) in `tool_style`. The same tools always give the same text."""
    listing = tool_listing(tools, tool_style)
    return _with_extra(f"{_PROMPT_RULES}\n\nAvailable tools:\n{listing}", extra_instructions)


def native_system_prompt(extra_instructions: str | None = None) -> str:
    """System prompt for native mode, where the tools travel in the template's ``tools=``."""
    return _with_extra(_NATIVE_RULES, extra_instructions)


def openai_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """OpenAI / Hugging Face ``tools=`` entries: ``{"type": "function", "function": {...}}``."""
    return [copy.deepcopy(tool.openai_spec()) for tool in tools]


# --------------------------------------------------------------------------------------------
# Chat messages
# --------------------------------------------------------------------------------------------


def _check_choice(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")


def assistant_message(
    turn: Turn,
    *,
    prompt_mode: str = "prompt",
    include_thought: bool = True,
    arguments_as: str = "dict",
) -> dict[str, Any]:
    """One assistant turn as a chat message.

    Prompt mode: ``{"role": "assistant", "content": render_assistant(turn)}``. Native mode:
    ``content`` is the turn's content, the calls go to ``tool_calls`` (arguments as a dict or a
    JSON string, per `arguments_as`; omitted when there are no calls) and the thought to
    ``reasoning_content`` when `include_thought` and there is one.
    """
    _check_choice("prompt_mode", prompt_mode, PROMPT_MODES)
    _check_choice("arguments_as", arguments_as, ARGUMENTS_AS)
    if prompt_mode == "prompt":
        return {"role": "assistant", "content": render_assistant(turn, include_thought=include_thought)}
    message: dict[str, Any] = {"role": "assistant", "content": turn.content}
    if include_thought and turn.thought is not None:
        message["reasoning_content"] = turn.thought
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": copy.deepcopy(call.args)
                    if arguments_as == "dict"
                    else json.dumps(call.args, ensure_ascii=False, default=str),
                },
            }
            for call in turn.tool_calls
        ]
    return message


def to_chat_messages(
    dialogue: Dialogue,
    *,
    upto: int | None = None,
    prompt_mode: str = "prompt",
    history_reasoning: str = "strip",
    system: str | None = None,
    arguments_as: str = "dict",
    tool_style: str = "json",
) -> list[dict[str, Any]]:
    """The system message followed by ``dialogue.turns[:upto]`` (all turns when `upto` is None).

    `system` replaces the default system prompt (`system_prompt(dialogue.candidate_tools)` in
    prompt mode, `native_system_prompt()` in native mode; an empty string counts as not given).
    Assistant turns keep their thought only with ``history_reasoning="keep"``.
    """
    _check_choice("prompt_mode", prompt_mode, PROMPT_MODES)
    _check_choice("history_reasoning", history_reasoning, HISTORY_REASONING)
    _check_choice("arguments_as", arguments_as, ARGUMENTS_AS)
    n = len(dialogue.turns)
    if upto is not None and (isinstance(upto, bool) or not isinstance(upto, int) or not 0 <= upto <= n):
        raise ValueError(f"upto must be an integer between 0 and {n} (the number of turns), got {upto!r}")
    if prompt_mode == "prompt":
        header = system or system_prompt(dialogue.candidate_tools, tool_style=tool_style)
    else:
        header = system or native_system_prompt()
    keep = history_reasoning == "keep"
    messages: list[dict[str, Any]] = [{"role": "system", "content": header}]
    for turn in dialogue.turns[:upto]:
        if turn.role == "user":
            messages.append({"role": "user", "content": turn.content})
        else:
            messages.append(
                assistant_message(
                    turn, prompt_mode=prompt_mode, include_thought=keep, arguments_as=arguments_as
                )
            )
    return messages


# --------------------------------------------------------------------------------------------
# The prompt format: what the model sees, recorded with every checkpoint
# --------------------------------------------------------------------------------------------

PROMPT_FORMAT_FILE = "prompt_format.json"
"""Written by training beside every adapter, checkpoint and merged model; read by evaluation."""
PROMPT_FORMAT_VERSION = 1


def read_system_prompt_file(path: str | Path) -> str:
    """The text of a system prompt file, stripped; `InputError` naming the file when it is missing
    or empty."""
    from data_gen.errors import InputError

    p = Path(path)
    if not p.is_file():
        raise InputError("system prompt file not found", path=p)
    text = p.read_text(encoding="utf-8").strip()
    if not text:
        raise InputError("the system prompt file is empty", path=p)
    return text


def fill_system_prompt(template: str, tools: list[Tool], *, prompt_mode: str, tool_style: str) -> str:
    """A custom system prompt for one dialogue. In prompt mode ``{tools}`` is replaced by the
    candidate tools in `tool_style`; a template without it gets them appended under "Available
    tools:". In native mode the tools travel in ``tools=`` and the template is used as it is."""
    if prompt_mode == "native":
        return template
    listing = tool_listing(tools, tool_style)
    if "{tools}" in template:
        return template.replace("{tools}", listing)
    return f"{template}\n\nAvailable tools:\n{listing}"


@dataclass(frozen=True)
class PromptFormat:
    """Every option that changes what a model sees or is trained to write, in one place.

    Training builds it from the recipe (`train.config.DiaforgeArguments.prompt_format`), slices
    with it, and saves it as ``prompt_format.json`` beside the adapter, every checkpoint and the
    merged model; ``eval run`` loads it from the model folder, so the model is prompted exactly as
    it was trained. The allowed values are the module constants `PROMPT_MODES`, `TOOL_STYLES`,
    `HISTORY_REASONING` and `TARGET_REASONING` (`CHOICES`).
    """

    prompt_mode: str = "prompt"
    """'prompt' (default, the paper's format): the candidate tools are listed in the system prompt
    and a turn is plain text, '<think>..</think>' then a reply or a JSON call list. 'native': the
    tools go to the chat template's ``tools=`` and calls are ``tool_calls``."""
    tool_style: str = "json"
    """How prompt mode lists the tools: 'json' (default, one JSON spec per line) or 'compact' (one
    signature line per tool, about a quarter of the tokens; for small models and CPU budgets)."""
    history_reasoning: str = "strip"
    """Thoughts of earlier assistant turns in the prompt: 'strip' (default; the model never sees
    its own past reasoning at inference) or 'keep'."""
    target_reasoning: str = "keep"
    """'keep' (default, the paper's format): the model writes a thought before each reply or call.
    'drop': it writes the reply or call alone (the 'without thinking traces' ablation). Evaluation
    uses it to size the ``auto`` token budget."""
    system_prompt: str | None = None
    """A custom system prompt (the text of a recipe's ``system_prompt_file``); in prompt mode
    ``{tools}`` in it is filled per dialogue (see `fill_system_prompt`). Default None: the reference
    prompt of `system_prompt` / `native_system_prompt`."""
    eot_token: str | None = None
    """The end-of-turn token trained after each target. Default None: the chat template's own."""

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "prompt_mode": PROMPT_MODES,
        "tool_style": TOOL_STYLES,
        "history_reasoning": HISTORY_REASONING,
        "target_reasoning": TARGET_REASONING,
    }

    def __post_init__(self) -> None:
        for name, allowed in self.CHOICES.items():
            _check_choice(name, getattr(self, name), allowed)
        for name in ("system_prompt", "eot_token"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")

    # -- what the model sees ------------------------------------------------------------------

    def system_text(self, dialogue: Dialogue) -> str:
        """The system message of `dialogue`: the custom prompt filled with its candidate tools, or
        the reference prompt of this prompt mode."""
        if self.system_prompt is None:
            if self.prompt_mode == "native":
                return native_system_prompt()
            return system_prompt(dialogue.candidate_tools, tool_style=self.tool_style)
        return fill_system_prompt(
            self.system_prompt,
            dialogue.candidate_tools,
            prompt_mode=self.prompt_mode,
            tool_style=self.tool_style,
        )

    def tools(self, dialogue: Dialogue) -> list[dict[str, Any]] | None:
        """The chat template's ``tools=``: the candidate tools in native mode, None in prompt mode."""
        return openai_tools(dialogue.candidate_tools) if self.prompt_mode == "native" else None

    def messages(
        self, dialogue: Dialogue, *, upto: int | None = None, arguments_as: str = "dict"
    ) -> list[dict[str, Any]]:
        """The system message and ``dialogue.turns[:upto]`` as the model sees them (see
        `to_chat_messages`)."""
        return to_chat_messages(
            dialogue,
            upto=upto,
            prompt_mode=self.prompt_mode,
            history_reasoning=self.history_reasoning,
            system=self.system_text(dialogue),
            arguments_as=arguments_as,
            tool_style=self.tool_style,
        )

    def target_message(self, turn: Turn) -> dict[str, Any]:
        """An assistant turn as the model is trained to write it."""
        return assistant_message(
            turn,
            prompt_mode=self.prompt_mode,
            include_thought=self.target_reasoning == "keep",
        )

    def target_text(self, turn: Turn) -> str:
        """An assistant turn as prompt-mode text the model writes (with its thought unless
        `target_reasoning` is 'drop')."""
        return render_assistant(turn, include_thought=self.target_reasoning == "keep")

    # -- prompt_format.json ---------------------------------------------------------------------

    @property
    def system_prompt_sha256(self) -> str | None:
        if self.system_prompt is None:
            return None
        return hashlib.sha256(self.system_prompt.encode("utf-8")).hexdigest()

    def as_dict(self) -> dict[str, Any]:
        """The options, the system prompt text and its hash: the content of ``prompt_format.json``
        and of ``metrics.json``'s ``prompt_format``."""
        return {
            "version": PROMPT_FORMAT_VERSION,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
            "system_prompt_sha256": self.system_prompt_sha256,
        }

    @classmethod
    def from_dict(cls, data: Any) -> PromptFormat:
        """The inverse of `as_dict`; a missing option takes its default. Raises ValueError naming
        the field that is wrong (unknown key, bad value, or a hash that does not match the text)."""
        if not isinstance(data, dict):
            raise ValueError("a prompt format must be a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names - {"version", "system_prompt_sha256"})
        if unknown:
            raise ValueError(f"unknown key {unknown[0]!r}")
        fmt = cls(**{k: v for k, v in data.items() if k in names})
        recorded = data.get("system_prompt_sha256")
        if recorded is not None and recorded != fmt.system_prompt_sha256:
            raise ValueError("system_prompt_sha256 does not match the system_prompt text")
        return fmt

    def save(self, folder: str | Path) -> Path:
        """Write ``prompt_format.json`` into `folder` (created if needed); returns its path."""
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        path = out / PROMPT_FORMAT_FILE
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, folder: str | Path) -> PromptFormat | None:
        """The ``prompt_format.json`` of a model folder (or that file itself), or None when there
        is none (a base model, or a checkpoint trained before the file existed). A damaged file is
        an `InputError` that names it and the field."""
        from data_gen.errors import InputError

        path = Path(folder)
        if not path.is_file():
            path = path / PROMPT_FORMAT_FILE
        if not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"invalid JSON ({exc})", path=path) from None
        try:
            return cls.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise InputError(str(exc), path=path) from None

    def differences(self, other: PromptFormat) -> dict[str, tuple[Any, Any]]:
        """``{option: (this value, other value)}`` for every option that differs."""
        out = {}
        for f in dataclasses.fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if mine != theirs:
                out[f.name] = (mine, theirs)
        return out

    def describe(self) -> str:
        """One line: ``prompt_mode prompt, tool_style compact, ..., system prompt 1a2b3c4d``."""
        parts = [f"{name} {getattr(self, name)}" for name in self.CHOICES]
        if self.system_prompt is not None:
            parts.append(f"custom system prompt {self.system_prompt_sha256[:8]}")
        if self.eot_token is not None:
            parts.append(f"eot_token {self.eot_token}")
        return ", ".join(parts)


def shown_value(name: str, value: Any) -> str:
    """An option's value as a warning shows it: the system prompt by its hash, not its text."""
    if name == "system_prompt" and isinstance(value, str):
        return f"a custom prompt (sha256 {hashlib.sha256(value.encode('utf-8')).hexdigest()[:8]})"
    if value is None:
        return "the default" if name in ("system_prompt", "eot_token") else "None"
    return repr(value)


# --------------------------------------------------------------------------------------------
# Native responses
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Hugging Face conversational export
# --------------------------------------------------------------------------------------------


EXPORT_FORMATS = ("hf", "hf-prompt")
"""``hf``: native messages (``tools`` and ``tool_calls``, thoughts as ``reasoning_content``) for
chat templates that render tools; ``hf-prompt``: the paper's text format (the tools in the system
prompt, a call as its JSON list in ``content``), which every chat template renders."""


def export_format(name: str, **options: Any) -> PromptFormat:
    """The `PromptFormat` of an export format (`EXPORT_FORMATS`); `options` set the others
    (tool_style, target_reasoning, system_prompt)."""
    _check_choice("format", name, EXPORT_FORMATS)
    return PromptFormat(prompt_mode="native" if name == "hf" else "prompt", **options)


def to_hf_conversational(dialogue: Dialogue, fmt: PromptFormat | None = None) -> dict[str, Any]:
    """The dialogue in the TRL / axolotl conversational format: ``{"messages", "tools"}``, both
    lists. `fmt` defaults to native mode (`export_format("hf")`).

    Every assistant message of a whole-dialogue record is trained, so each keeps its thought unless
    ``fmt.target_reasoning`` is 'drop'. In native mode ``tools`` holds
    `openai_tools(candidate_tools)`; in prompt mode the tools are already in the system prompt, so
    ``tools`` is an empty list: a template given them again would show them twice.
    """
    fmt = fmt or export_format("hf")
    messages = to_chat_messages(
        dialogue,
        prompt_mode=fmt.prompt_mode,
        history_reasoning="keep" if fmt.target_reasoning == "keep" else "strip",
        system=fmt.system_text(dialogue),
        tool_style=fmt.tool_style,
    )
    return {"messages": messages, "tools": fmt.tools(dialogue) or []}


def export_hf_jsonl(dialogues: Iterable[Dialogue], path: str | Path, fmt: PromptFormat | None = None) -> int:
    """Write one `to_hf_conversational` record per dialogue (atomically); returns the count."""
    return write_jsonl(path, (to_hf_conversational(d, fmt) for d in dialogues))
