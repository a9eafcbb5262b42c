"""How an assistant turn looks as text, how text turns back into a turn, and chat-message export.

Two ways of showing a dialogue to a model:

* **prompt mode** (the paper's format): the tools are listed in the system prompt and every
  assistant message is plain text, ``<think>\\n{thought}\\n</think>\\n{reply}``, where the reply is
  either a message for the user or *only* a JSON list of calls
  ``[{"name": "...", "args": {...}}]``.
* **native mode**: the tools go to the chat template through ``tools=`` (OpenAI function specs,
  see `openai_tools`) and a call is an OpenAI-style ``tool_calls`` entry; the thought travels as
  ``reasoning_content``.

The package's modules: `options` (the allowed values of every format option), `rendering` (a turn
as text), `parsing` (text or a native response message back to a turn, with its rules), `prompt`
(system prompts and tool specs), `messages` (a dialogue as chat messages), `prompt_format`
(`PromptFormat` and ``prompt_format.json``), `response_template` (the declarative parser saved
in ``tokenizer_config.json`` for stock engines), `trl_rows` (the export's prompt-completion rows,
one per assistant turn) and `preference` (preference pairs as TRL's prompt/chosen/rejected rows). Import from the package: its names below are the interface. Each submodule is imported when one of
its names is first asked for, so a command reads only the parts it uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diaforge.format.messages import (
        assistant_message,
        to_chat_messages,
    )
    from diaforge.format.options import (
        ARGUMENTS_AS,
        HISTORY_REASONING,
        PROMPT_MODES,
        TARGET_REASONING,
        TOOL_STYLES,
    )
    from diaforge.format.parsing import (
        Kind,
        ParsedMessage,
        parse_assistant,
        parse_openai_message,
    )
    from diaforge.format.preference import (
        PAIR_KINDS,
        PAIR_RECORD_KEYS,
        PREFERENCE_KEYS,
        load_pair_records,
        pair_record,
        preference_row,
        preference_rows,
        record_turns,
    )
    from diaforge.format.prompt import (
        compact_tool,
        fill_system_prompt,
        native_system_prompt,
        openai_tools,
        read_system_prompt_file,
        reference_prompt_template,
        system_prompt,
        tool_listing,
        tool_signature,
    )
    from diaforge.format.prompt_format import (
        PROMPT_FORMAT_FILE,
        PROMPT_FORMAT_VERSION,
        PromptFormat,
        shown_value,
    )
    from diaforge.format.rendering import (
        THINK_CLOSE,
        THINK_OPEN,
        render_assistant,
        render_calls,
    )
    from diaforge.format.response_template import (
        REASONING_FIELD,
        attach_response_template,
        generation_prompt,
        response_template_for,
    )
    from diaforge.format.trl_rows import (
        EXPORT_FORMATS,
        ROW_KEYS,
        export_format,
        export_rows_jsonl,
        iter_rows,
        prompt_completion_rows,
    )

#: Each public name and the submodule that defines it.
_SUBMODULE = {
    "ARGUMENTS_AS": "options",
    "assistant_message": "messages",
    "attach_response_template": "response_template",
    "compact_tool": "prompt",
    "export_format": "trl_rows",
    "EXPORT_FORMATS": "trl_rows",
    "export_rows_jsonl": "trl_rows",
    "fill_system_prompt": "prompt",
    "generation_prompt": "response_template",
    "HISTORY_REASONING": "options",
    "iter_rows": "trl_rows",
    "Kind": "parsing",
    "load_pair_records": "preference",
    "native_system_prompt": "prompt",
    "openai_tools": "prompt",
    "PAIR_KINDS": "preference",
    "pair_record": "preference",
    "PAIR_RECORD_KEYS": "preference",
    "parse_assistant": "parsing",
    "parse_openai_message": "parsing",
    "ParsedMessage": "parsing",
    "PREFERENCE_KEYS": "preference",
    "preference_row": "preference",
    "preference_rows": "preference",
    "prompt_completion_rows": "trl_rows",
    "PROMPT_FORMAT_FILE": "prompt_format",
    "PROMPT_FORMAT_VERSION": "prompt_format",
    "PROMPT_MODES": "options",
    "PromptFormat": "prompt_format",
    "read_system_prompt_file": "prompt",
    "REASONING_FIELD": "response_template",
    "record_turns": "preference",
    "reference_prompt_template": "prompt",
    "render_assistant": "rendering",
    "render_calls": "rendering",
    "response_template_for": "response_template",
    "ROW_KEYS": "trl_rows",
    "shown_value": "prompt_format",
    "system_prompt": "prompt",
    "TARGET_REASONING": "options",
    "THINK_CLOSE": "rendering",
    "THINK_OPEN": "rendering",
    "to_chat_messages": "messages",
    "tool_listing": "prompt",
    "tool_signature": "prompt",
    "TOOL_STYLES": "options",
}

__all__ = [
    "ARGUMENTS_AS",
    "EXPORT_FORMATS",
    "HISTORY_REASONING",
    "PAIR_KINDS",
    "PAIR_RECORD_KEYS",
    "PREFERENCE_KEYS",
    "PROMPT_FORMAT_FILE",
    "PROMPT_FORMAT_VERSION",
    "PROMPT_MODES",
    "REASONING_FIELD",
    "ROW_KEYS",
    "TARGET_REASONING",
    "THINK_CLOSE",
    "THINK_OPEN",
    "TOOL_STYLES",
    "Kind",
    "ParsedMessage",
    "PromptFormat",
    "assistant_message",
    "attach_response_template",
    "compact_tool",
    "export_format",
    "export_rows_jsonl",
    "fill_system_prompt",
    "generation_prompt",
    "iter_rows",
    "native_system_prompt",
    "load_pair_records",
    "openai_tools",
    "pair_record",
    "parse_assistant",
    "parse_openai_message",
    "preference_row",
    "preference_rows",
    "prompt_completion_rows",
    "read_system_prompt_file",
    "reference_prompt_template",
    "render_assistant",
    "record_turns",
    "render_calls",
    "response_template_for",
    "shown_value",
    "system_prompt",
    "to_chat_messages",
    "tool_listing",
    "tool_signature",
]


def __getattr__(name: str) -> Any:
    module = _SUBMODULE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
