"""A dialogue as chat messages: the system message, then the turns, each assistant turn in prompt
mode (its text) or native mode (``tool_calls`` and ``reasoning_content``)."""

from __future__ import annotations

import copy
import json
from typing import Any

from diaforge.format.options import ARGUMENTS_AS, HISTORY_REASONING, PROMPT_MODES, check_choice
from diaforge.format.prompt import native_system_prompt, system_prompt
from diaforge.format.rendering import render_assistant
from diaforge.schema import Dialogue, Turn


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
    check_choice("prompt_mode", prompt_mode, PROMPT_MODES)
    check_choice("arguments_as", arguments_as, ARGUMENTS_AS)
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
    check_choice("prompt_mode", prompt_mode, PROMPT_MODES)
    check_choice("history_reasoning", history_reasoning, HISTORY_REASONING)
    check_choice("arguments_as", arguments_as, ARGUMENTS_AS)
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
