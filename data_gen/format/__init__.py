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
(system prompts and tool specs), `messages` (a dialogue as chat messages) and `prompt_format`
(`PromptFormat`, ``prompt_format.json`` and the Hugging Face export). Import from the package:
its names below are the interface.
"""

from data_gen.format.messages import assistant_message, to_chat_messages
from data_gen.format.options import (
    ARGUMENTS_AS,
    HISTORY_REASONING,
    PROMPT_MODES,
    TARGET_REASONING,
    TOOL_STYLES,
)
from data_gen.format.parsing import Kind, ParsedMessage, parse_assistant, parse_openai_message
from data_gen.format.prompt import (
    compact_tool,
    fill_system_prompt,
    native_system_prompt,
    openai_tools,
    read_system_prompt_file,
    system_prompt,
    tool_listing,
    tool_signature,
)
from data_gen.format.prompt_format import (
    EXPORT_FORMATS,
    PROMPT_FORMAT_FILE,
    PROMPT_FORMAT_VERSION,
    PromptFormat,
    export_format,
    export_hf_jsonl,
    shown_value,
    to_hf_conversational,
)
from data_gen.format.rendering import THINK_CLOSE, THINK_OPEN, render_assistant, render_calls

__all__ = [
    "ARGUMENTS_AS",
    "EXPORT_FORMATS",
    "HISTORY_REASONING",
    "PROMPT_FORMAT_FILE",
    "PROMPT_FORMAT_VERSION",
    "PROMPT_MODES",
    "TARGET_REASONING",
    "THINK_CLOSE",
    "THINK_OPEN",
    "TOOL_STYLES",
    "Kind",
    "ParsedMessage",
    "PromptFormat",
    "assistant_message",
    "compact_tool",
    "export_format",
    "export_hf_jsonl",
    "fill_system_prompt",
    "native_system_prompt",
    "openai_tools",
    "parse_assistant",
    "parse_openai_message",
    "read_system_prompt_file",
    "render_assistant",
    "render_calls",
    "shown_value",
    "system_prompt",
    "to_chat_messages",
    "to_hf_conversational",
    "tool_listing",
    "tool_signature",
]
