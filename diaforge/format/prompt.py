"""The system prompt and the tool specs a model sees: the reference prompt of prompt mode (role,
output contract, the candidate tools as JSON specs or compact signatures), the native-mode prompt
(the tools travel in ``tools=``), and custom prompts read from a file and filled per dialogue."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from diaforge.format.options import PROMPT_MODES, TOOL_STYLES, check_choice
from diaforge.schema import Tool

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


def tool_signature(tool: Tool) -> str:
    """`name(arg*: type, opt: type)`: the head of a tool's compact line (`*` marks required
    arguments; enums list their values)."""
    params = ", ".join(_compact_param(tool, k, v) for k, v in tool.properties.items())
    return f"{tool.name}({params})"


def compact_tool(tool: Tool) -> str:
    """One line per tool: `name(arg*: type, opt: type): description` (`tool_signature`, then the
    description). About a quarter of the tokens of the JSON spec."""
    return f"- {tool_signature(tool)}: {tool.description}"


def tool_listing(tools: list[Tool], style: str = "json") -> str:
    """The tools as the prompt-mode system prompt shows them: `json` (default) gives one compact
    JSON spec per line; `compact` gives one signature line per tool, for small models and CPU
    budgets (the prompt goes into every training sample and every evaluation turn)."""
    check_choice("tool_style", style, TOOL_STYLES)
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


def reference_prompt_template(prompt_mode: str) -> str:
    """The reference system prompt as a template (`fill_system_prompt` gives back exactly
    `system_prompt` or `native_system_prompt`): in prompt mode the rules and ``{tools}`` where the
    candidate tools go; in native mode the rules alone. An export records it in
    ``prompt_format.json``, so the file holds the text it was rendered with and its hash."""
    check_choice("prompt_mode", prompt_mode, PROMPT_MODES)
    if prompt_mode == "native":
        return _NATIVE_RULES
    return f"{_PROMPT_RULES}\n\nAvailable tools:\n{{tools}}"


def native_system_prompt(extra_instructions: str | None = None) -> str:
    """System prompt for native mode, where the tools travel in the template's ``tools=``."""
    return _with_extra(_NATIVE_RULES, extra_instructions)


def openai_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """OpenAI / Hugging Face ``tools=`` entries: ``{"type": "function", "function": {...}}``."""
    return [copy.deepcopy(tool.openai_spec()) for tool in tools]


def read_system_prompt_file(path: str | Path) -> str:
    """The text of a system prompt file, stripped; `InputError` naming the file when it is missing
    or empty."""
    from diaforge.errors import InputError
    from diaforge.hygiene import read_text_file

    p = Path(path)
    text = read_text_file(p, what="system prompt file", max_bytes=1 << 20).strip()
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
