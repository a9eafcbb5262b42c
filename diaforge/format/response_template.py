"""The ``response_template`` of a trained layout: the declarative parser that transformers reads
from ``tokenizer_config.json`` (``tokenizer.parse_response(text, prefix=...)``, the streaming
``tokenizer.get_response_parser``, ``transformers serve``) and that vLLM's
``--tool-call-parser response_template`` reads too, so that a stock engine turns what a tuned
model writes into an OpenAI-style message without the toolkit installed.

Prompt mode (`PromptFormat.prompt_mode` ``"prompt"``). A turn is ``<think>\\n{thought}\\n</think>\\n``
(left out when `target_reasoning` is ``"drop"``), then a reply or only the JSON call list
``[{"name": ..., "args": {...}}]``, then the end-of-turn token. The template maps

* the think block to ``reasoning_content`` (the field name transformers' own templates and its
  server use; the text is stripped, as `parse_assistant` strips the thought);
* a call list to ``tool_calls`` in the OpenAI shape, ``{"type": "function", "function":
  {"name": ..., "arguments": {...}}}``, our key ``args`` becoming ``arguments`` (a dict, as
  transformers' templates give it; its server serialises it to a string);
* anything else to ``content`` (stripped), which ends at the end-of-turn token.

The same template serves both thought settings: a model trained without thoughts simply never
opens the think block.

Native mode renders turns through the model's own chat template (``tools=``, ``tool_calls``,
``reasoning_content``), so the parser that applies is that model family's own: a
``response_template`` shipped with the base tokenizer, transformers' built-in fallback for the
model type, or vLLM's parser for the family. `response_template_for` returns None there and
`attach_response_template` leaves the tokenizer's own template as it is.

What the template language cannot express, compared with `parse_assistant` (which is total):

* malformed output. `parse_assistant` classifies it with a reason; the template either raises
  (a call list that is not valid JSON, a call without ``name`` or ``args``) or reads it as
  something else (a think tag inside a reply opens a second think block; a call list after some
  prose stays in ``content``; ``NaN`` in the arguments is accepted; ``[]`` gives no calls);
* the call shapes `parse_assistant` accepts besides the trained one: a single call object
  ``{"name": ..., "args": ...}``, ``arguments`` instead of ``args`` (also as a JSON string),
  a list in a code fence;
* an empty think block: `parse_assistant` gives the thought ``""``, the template leaves
  ``reasoning_content`` out (transformers drops empty fields);
* a message that starts with ``</think>`` alone: `parse_assistant` takes the text before it as
  the thought; the template needs the ``<think>`` (a chat template that writes it into the
  prompt is covered by passing the prompt as ``prefix=``, which is what servers do).

Everything the toolkit renders for training parses the same way (``tests/diaforge/
test_response_template.py`` checks every assistant turn of the bundled corpus and benchmark).
No decoding aid travels with it: constrained calls, grounded values, copied thoughts and the
loop stop are the toolkit's (``docs/serving.md``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from diaforge.format.prompt_format import PromptFormat
from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN

REASONING_FIELD = "reasoning_content"
"""The message field of the thought: transformers' templates and server use this name."""

# A call list opens only where the message's public part starts: at the start of the message
# or right after the think block (whitespace between). The look-ahead keeps the `[` in the region
# for the JSON decoder; `[` then `{` is where `parse_assistant` too takes text for a call list.
_CALLS_OPEN = rf"(?:(?<![\s\S])|(?<={re.escape(THINK_CLOSE)}))\s*(?=\[\s*\{{)"


def _end_pattern(end_tokens: Iterable[str]) -> str | None:
    tokens = sorted(dict.fromkeys(t for t in end_tokens if t), key=len, reverse=True)
    if not tokens:
        return None
    # Leading whitespace belongs to the end marker: between two markers ("<|im_end|>\n<|endoftext|>")
    # it must not open an empty content region, whose close would overwrite the real content.
    return r"\s*(?:" + "|".join(re.escape(t) for t in tokens) + ")"


def response_template_for(
    fmt: PromptFormat,
    *,
    start_anchor: str | None = None,
    end_tokens: Iterable[str] = (),
) -> dict[str, Any] | None:
    """The ``response_template`` dict for a model trained in layout `fmt`; None in native mode.

    `start_anchor` is the text the chat template writes to open an assistant turn (see
    `generation_prompt`): given ``prefix=`` (the prompt), the parser reads only what follows its
    last occurrence. None: the prefix is ignored (its end is the anchor), right for prompt mode,
    where the model writes its whole turn. `end_tokens` end the message (the end-of-turn token
    and others a decode may keep, such as ``<|endoftext|>``); text after one is not content.
    """
    if fmt.prompt_mode != "prompt":
        return None
    end = _end_pattern([*([fmt.eot_token] if fmt.eot_token else []), *end_tokens])
    calls: dict[str, Any] = {
        "open_pattern": _CALLS_OPEN,
        "content": "json",
        "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{args}"}},
        "transform_each": True,
    }
    content: dict[str, Any] = {"content": "text"}
    if end is not None:
        calls["close_pattern"] = end
        content["close_pattern"] = end
    template: dict[str, Any] = {
        "version": 1,
        "defaults": {"role": "assistant"},
        "fields": {
            REASONING_FIELD: {"open": THINK_OPEN, "close": THINK_CLOSE, "content": "text"},
            "tool_calls": calls,
            "content": content,
        },
    }
    if start_anchor:
        template["start_anchor"] = start_anchor
    else:
        template["start_anchor_pattern"] = r"\Z"
    return template


def generation_prompt(tokenizer: Any) -> str | None:
    """What the tokenizer's chat template appends for ``add_generation_prompt=True`` (such as
    ``<|im_start|>assistant\\n``), or None when it has no chat template or appends nothing that
    can be found as a plain suffix."""
    if not getattr(tokenizer, "chat_template", None):
        return None
    messages = [{"role": "user", "content": "Hello."}]
    try:
        bare = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=False)
        opened = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception:  # a template that needs more (tools, a system turn): fall back to no anchor
        return None
    if not isinstance(bare, str) or not isinstance(opened, str) or not opened.startswith(bare):
        return None
    return opened[len(bare) :] or None


def end_tokens_of(tokenizer: Any, fmt: PromptFormat) -> list[str]:
    """The texts that end a message of a model trained in layout `fmt`: the recorded end-of-turn
    token, then every special token of the tokenizer (eos, ``<|im_end|>``, ``<|endoftext|>``, the
    start of a next turn...) except think tags; a prompt-mode turn never holds one, and a raw
    decode that keeps them must not read them as content."""
    special = getattr(tokenizer, "all_special_tokens", None) or []
    tokens = [fmt.eot_token, getattr(tokenizer, "eos_token", None), *special]
    return list(
        dict.fromkeys(t for t in tokens if isinstance(t, str) and t and t not in (THINK_OPEN, THINK_CLOSE))
    )


def attach_response_template(tokenizer: Any, fmt: PromptFormat) -> dict[str, Any] | None:
    """Set ``tokenizer.response_template`` for layout `fmt`, so that ``save_pretrained`` writes it
    into ``tokenizer_config.json``: the anchor is the chat template's generation prompt
    (`generation_prompt`), the end tokens `end_tokens_of`. Native mode leaves the tokenizer's own
    template untouched. Returns the template set, or None."""
    template = response_template_for(
        fmt, start_anchor=generation_prompt(tokenizer), end_tokens=end_tokens_of(tokenizer, fmt)
    )
    if template is not None:
        tokenizer.response_template = template
    return template
