"""An assistant turn as prompt-mode text: ``<think>\\n{thought}\\n</think>\\n{reply}``, where the
reply is a message for the user or only the JSON list of calls.

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

import json
import re
from collections.abc import Iterable

from diaforge.schema import ToolCall, Turn

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
THINK_BLOCK = f"{re.escape(THINK_OPEN)}.*?{re.escape(THINK_CLOSE)}"
"""A regular expression of one whole think block (with `re.S`), for code that strips thoughts."""


def render_calls(calls: Iterable[ToolCall]) -> str:
    """The JSON list of calls exactly as an assistant writes it: ``[{"name": ..., "args": ...}]``."""
    payload = [{"name": call.name, "args": call.args} for call in calls]
    # default=str: a valid Turn may hold non-JSON values (dates); rendering must not fail.
    text = json.dumps(payload, ensure_ascii=False, default=str)
    # A think tag inside a string would be taken for the end of the thought; `<` only occurs in
    # JSON strings, where its escape decodes to the same value.
    return text.replace(THINK_CLOSE, "\\u003c/think>").replace(THINK_OPEN, "\\u003cthink>")


def with_thought(thought: str, body: str) -> str:
    """Prompt-mode text of a reply with its thought: the think block, then the reply."""
    return f"{THINK_OPEN}\n{thought}\n{THINK_CLOSE}\n{body}"


def render_assistant(turn: Turn, *, include_thought: bool = True) -> str:
    """An assistant turn as prompt-mode text: the optional think block, then the reply text or
    only the JSON list of calls (a call turn's `content` is not rendered)."""
    body = render_calls(turn.tool_calls) if turn.tool_calls else turn.content
    if include_thought and turn.thought is not None:
        return with_thought(turn.thought, body)
    return body
