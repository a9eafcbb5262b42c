"""Dialogues as TRL conversational prompt-completion rows: one row per assistant turn.

A row's ``prompt`` is the system message and the dialogue up to the turn, exactly as the model sees
it at inference (earlier thoughts left out unless ``history_reasoning`` is 'keep'); its
``completion`` is that one assistant turn as the model is trained to write it. TRL's `SFTTrainer`
recognises the ``prompt``/``completion`` columns and, at its default config
(``completion_only_loss=None``), puts the loss on the completion tokens alone: no system, user or
earlier assistant token is trained, and each turn is trained once, on the history it follows. This
is the turn slicing that ``train/sft.py`` does (DiaFORGE §3.2), in TRL's own data format.

Native mode (``hf``) adds a ``tools`` column (the OpenAI specs of the candidate tools), which TRL
passes to the chat template's ``tools=``; in prompt mode (``hf-prompt``) the tools are in the
system prompt and the rows have no ``tools``, so a template never shows them twice or adds tool
boilerplate for an empty list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from diaforge.format.options import check_choice
from diaforge.format.prompt import read_system_prompt_file, reference_prompt_template
from diaforge.format.prompt_format import PromptFormat
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue

EXPORT_FORMATS = ("hf", "hf-prompt")
"""``hf``: native messages (``tools`` and ``tool_calls``, thoughts as ``reasoning_content``) for
chat templates that render tools; ``hf-prompt``: the paper's text format (the tools in the system
prompt, a call as its JSON list in ``content``), which every chat template renders."""

ROW_KEYS = ("id", "dialogue_id", "turn_index", "final", "seed_tool", "gold_args", "prompt", "completion")
"""The keys of every row, in order; native rows add ``tools``."""


def export_format(name: str, *, system_prompt_file: str | Path | None = None, **options: Any) -> PromptFormat:
    """The `PromptFormat` of an export format (`EXPORT_FORMATS`); `options` set the others
    (tool_style, history_reasoning, target_reasoning, system_prompt), and `system_prompt_file`
    (the commands' ``--system-prompt-file``) reads the system prompt from a file. Without a custom
    system prompt the reference prompt's template (`reference_prompt_template`) is set, which
    renders the same text: ``prompt_format.json`` then records the prompt and its hash, not ``null``."""
    check_choice("format", name, EXPORT_FORMATS)
    if system_prompt_file:
        options = {**options, "system_prompt": read_system_prompt_file(system_prompt_file)}
    mode = "native" if name == "hf" else "prompt"
    if options.get("system_prompt") is None:
        options = {**options, "system_prompt": reference_prompt_template(mode)}
    return PromptFormat(prompt_mode=mode, **options)


def prompt_completion_rows(dialogue: Dialogue, fmt: PromptFormat | None = None) -> list[dict[str, Any]]:
    """One row per assistant turn of `dialogue` (`ROW_KEYS`, plus ``tools`` in native mode).

    ``id`` is ``"{dialogue id}/{turn index}"``; ``final`` marks the dialogue's last assistant
    turn (its call, in a dialogue that ends in one). `fmt` defaults to ``export_format("hf")``.
    """
    fmt = fmt or export_format("hf")
    tools = fmt.tools(dialogue)
    turns = dialogue.assistant_turns()
    rows = []
    for i in turns:
        row: dict[str, Any] = {
            "id": f"{dialogue.id}/{i}",
            "dialogue_id": dialogue.id,
            "turn_index": i,
            "final": i == turns[-1],
            "seed_tool": dialogue.seed_tool,
            "gold_args": dialogue.gold_args,
            "prompt": fmt.messages(dialogue, upto=i),
            "completion": [fmt.target_message(dialogue.turns[i])],
        }
        if tools is not None:
            row["tools"] = tools
        rows.append(row)
    return rows


def iter_rows(dialogues: Iterable[Dialogue], fmt: PromptFormat | None = None) -> Iterator[dict[str, Any]]:
    """`prompt_completion_rows` of every dialogue, in order."""
    for dialogue in dialogues:
        yield from prompt_completion_rows(dialogue, fmt)


def export_rows_jsonl(
    dialogues: Iterable[Dialogue], path: str | Path, fmt: PromptFormat | None = None
) -> int:
    """Write the rows of `dialogues` as JSONL (atomically); returns the number of rows."""
    return write_jsonl(path, iter_rows(dialogues, fmt))
