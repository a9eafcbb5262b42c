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
(`PromptFormat` and ``prompt_format.json``), `trl_rows` (the export's prompt-completion rows,
one per assistant turn) and `preference` (preference pairs as TRL's prompt/chosen/rejected rows). Import from the package: its names below are the interface.
"""

from diaforge.format.messages import assistant_message, to_chat_messages
from diaforge.format.options import (
    ARGUMENTS_AS,
    HISTORY_REASONING,
    PROMPT_MODES,
    TARGET_REASONING,
    TOOL_STYLES,
)
from diaforge.format.parsing import Kind, ParsedMessage, parse_assistant, parse_openai_message
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
from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN, render_assistant, render_calls
from diaforge.format.trl_rows import (
    EXPORT_FORMATS,
    ROW_KEYS,
    export_format,
    export_rows_jsonl,
    iter_rows,
    prompt_completion_rows,
)

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
    "ROW_KEYS",
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
    "export_rows_jsonl",
    "fill_system_prompt",
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
    "shown_value",
    "system_prompt",
    "to_chat_messages",
    "tool_listing",
    "tool_signature",
]
