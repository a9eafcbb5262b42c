"""The teacher's reasoning traces in the `lookup` style: every lookup the assistant makes is written
out as a copy of what it looks up, before it reasons about it.

A small model fine-tuned on the `summary` traces learns to ask, but when it fills a call it writes
a list of required arguments it has not looked up and values it has not read. In the
`lookup` style an argument-completion thought

* copies the chosen tool's signature from the tool listing verbatim (`tool_signature`, the head of
  the compact listing line: ``name(key*: type, ...)``), then names the required keys;
* for each value the user has given, quotes the user's own words that hold it (between backticks,
  since the words may hold double quotes), then writes the value as the call will carry it (JSON);
* then says what is missing and what it asks for, or that it calls.

A selection thought lists what each candidate does with the tool's name *after* its description
(``moves stock to another plant (create_stock_transfer_inter_plant)``), and the first completion
thought after the user answers starts by naming the option they chose the same way. With earlier
thoughts kept in the history (`history_reasoning: keep`), naming the chosen option is a copy too:
once the model has written the start of the description the user picked, the name follows it in
its own earlier thought.

A copy is what a small transformer does well (an induction head continues a span it has seen), so
each decision follows from text that is a few tokens away instead of from a lookup across the
prompt. The style changes only the thoughts: the replies, the calls and the dialogue are the same
as in the `summary` style for the same seed.
"""

from __future__ import annotations

import json
import re
from typing import Any

from diaforge.data_gen.values import render_value
from diaforge.format.lookup_thought import CHOSE, WHAT_EACH_DOES, options_list, tool_sentence
from diaforge.schema import Tool
from diaforge.text import humanise_param

QUOTE_REACH = 48
"""How far (characters) a parameter's name may stand from its value to be quoted with it."""


def _find(haystack: str, needle: str, start: int = 0) -> int:
    """Where `needle` stands in `haystack` as a whole word (not inside a longer token such as the
    ``6`` of ``QX63``), case-insensitively; -1 when it does not."""
    if not needle:
        return -1
    m = re.compile(rf"(?<![\w-]){re.escape(needle)}(?![\w-])", re.IGNORECASE).search(haystack, start)
    return m.start() if m else -1


def value_quote(user_texts: list[str], key: str, value: Any) -> str | None:
    """The user's words that hold `value` for `key`: the shortest span of one user turn (the
    latest that holds the value) running from the parameter's name to the value, or the value as
    the user said it when the name is not near; None when the value is not in the user's words
    (a boolean said as yes/no, a value the user gave in another form)."""
    if isinstance(value, bool) or value is None:
        return None
    said = render_value(value).strip('"')
    if not said:
        return None
    name = humanise_param(key)
    for text in reversed(user_texts):
        at = _find(text, said)
        if at < 0:
            continue
        end = at + len(said)
        before = text.lower().rfind(name.lower(), max(0, at - QUOTE_REACH), at)
        after = _find(text, name, end)
        if before >= 0:
            start = before
        elif 0 <= after <= end + QUOTE_REACH:
            start, end = at, after + len(name)
        else:
            start = at
        return re.sub(r"\s+", " ", text[start:end]).strip()
    return None


def _value_lines(known: dict[str, Any], user_texts: list[str]) -> str:
    parts = []
    for key, value in known.items():
        shown = json.dumps(value, ensure_ascii=False)
        quote = value_quote(user_texts, key, value)
        parts.append(f"{key}: `{quote}` gives {shown}" if quote else f"{key}: {shown}")
    return "; ".join(parts)


def selection_thought(names: list[str], descriptors: dict[str, str]) -> str:
    """The `lookup` thought of a disambiguating question: the plausible candidates, then what each
    does with its name after the description."""
    return (
        f"Candidates that match the request: {', '.join(names)}. {options_list(names, descriptors)}. "
        "I ask which one the user means, without naming tools."
    )


def chosen_option(tool: Tool, earlier_thoughts: list[str]) -> str | None:
    """``<description> (<name>)`` of `tool` as the latest selection thought wrote it, or None."""
    pattern = re.compile(rf"(?:^|; )([^;()]+ \({re.escape(tool.name)}\))")
    for thought in reversed(earlier_thoughts):
        _, found, options = thought.partition(WHAT_EACH_DOES)
        m = pattern.search(options) if found else None
        if m:
            return m.group(1)
    return None


def completion_thought(
    tool: Tool,
    known: dict[str, Any],
    missing: list[str],
    ask: list[str],
    user_texts: list[str],
    chosen: str | None = None,
) -> str:
    """The `lookup` thought of an argument-completion turn (module docstring): the option the user
    chose (`chosen`, on the first completion turn after a question), the signature, the required
    keys, each known value with the user's words, then what is missing or the call."""
    head = f"{CHOSE}{chosen}. " if chosen else ""
    head += tool_sentence(tool)
    values = _value_lines(known, user_texts)
    body = f" Known: {values}." if values else " Nothing is known yet."
    if not missing:
        return f"{head}{body} Nothing is missing, so I call it."
    return f"{head}{body} Missing: {', '.join(missing)}. I ask for {', '.join(ask)}."
