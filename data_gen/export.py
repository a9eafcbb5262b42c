"""Dialogues in the Hugging Face conversational format, checked against the chat template that
will render them.

    python -m data_gen export DIALOGUES.jsonl --format hf|hf-prompt --out DIR [--tokenizer PATH]
        [--tool-style json|compact] [--target-reasoning keep|drop] [--system-prompt-file FILE] [--force]

A run folder gets:

* ``hf_conversational.jsonl``: one ``{"messages": [...], "tools": [...]}`` record per dialogue;
* ``hf_dataset/`` (``datasets.save_to_disk``): the same ``messages`` and ``tools`` as lists (each
  message and tool a JSON value, `datasets.Json`), plus ``id``, ``seed_tool``, ``gold_args`` and
  the full ``record``; TRL's `SFTTrainer` takes it as it is;
* ``prompt_format.json``: the `PromptFormat` the records were rendered in.

``hf`` is native mode: the tools go to the template's ``tools=`` and a call is a ``tool_calls``
entry. Many templates (SmolLM2's among them) render neither, so a call turn would become an empty
assistant message. With ``--tokenizer`` every record is rendered through that tokenizer's chat
template first, and the export is refused, with the reason and the first dialogue concerned, when
the template drops tool calls, tools or assistant text; ``--force`` writes it anyway with a warning.
``hf-prompt`` (the paper's text format) survives any template.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from data_gen.errors import InputError
from data_gen.format import PromptFormat, to_hf_conversational
from data_gen.schema import Dialogue, dump_record, write_jsonl

HF_JSONL = "hf_conversational.jsonl"
HF_DATASET = "hf_dataset"


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False)


def _without(messages: list[dict[str, Any]], i: int, key: str) -> list[dict[str, Any]]:
    return [*messages[:i], {k: v for k, v in messages[i].items() if k != key}, *messages[i + 1 :]]


def template_losses(tokenizer: Any, record: dict[str, Any]) -> list[str]:
    """What `tokenizer`'s chat template leaves out of one exported record, each as a short phrase
    (empty when nothing is lost). A part is lost when the text rendered without it is the same:
    the tools, a message's ``tool_calls`` or ``reasoning_content``; assistant text is lost when it
    is not in the rendered text."""
    messages, tools = record["messages"], record["tools"]
    full = _render(tokenizer, messages, tools)
    losses: list[str] = []
    if tools and _render(tokenizer, messages, None) == full:
        losses.append("ignores tools= (the tool specs are not in the rendered text)")
    calls_checked = thought_checked = False
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        if message.get("tool_calls") and not calls_checked:
            calls_checked = True
            if _render(tokenizer, _without(messages, i, "tool_calls"), tools) == full:
                losses.append("drops tool_calls (a call turn renders as an empty assistant message)")
        if message.get("reasoning_content") and not thought_checked:
            thought_checked = True
            if _render(tokenizer, _without(messages, i, "reasoning_content"), tools) == full:
                losses.append("drops reasoning_content (the thoughts would not be trained)")
        content = (message.get("content") or "").strip()
        if content and content not in full:
            losses.append(f"changes assistant text ({content[:40]!r} is not in the rendered text)")
    return list(dict.fromkeys(losses))


def check_template(
    tokenizer: Any, dialogues: Sequence[Dialogue], records: Sequence[dict[str, Any]]
) -> list[str]:
    """`template_losses` over every record: one line per kind of loss, naming the first dialogue
    that shows it and how many do."""
    first: dict[str, str] = {}
    counts: dict[str, int] = {}
    for dialogue, record in zip(dialogues, records, strict=True):
        for loss in template_losses(tokenizer, record):
            kind = loss.split(" (", 1)[0]
            first.setdefault(kind, f"{loss}, first in dialogue {dialogue.id!r}")
            counts[kind] = counts.get(kind, 0) + 1
    return [f"{first[k]}; {counts[k]} of {len(records)} dialogues" for k in first]


def hf_dataset(dialogues: Sequence[Dialogue], records: Sequence[dict[str, Any]]):
    """A `datasets.Dataset` of the records: ``messages`` and ``tools`` as lists of JSON values (each
    message keeps exactly its own keys; tool schemas of any shape fit), ``gold_args`` a JSON value,
    ``id``, ``seed_tool`` and the full dialogue ``record`` as strings."""
    import datasets

    features = datasets.Features(
        {
            "id": datasets.Value("string"),
            "seed_tool": datasets.Value("string"),
            "gold_args": datasets.Json(),
            "messages": datasets.List(datasets.Json()),
            "tools": datasets.List(datasets.Json()),
            "record": datasets.Value("string"),
        }
    )
    rows = [
        {
            "id": d.id,
            "seed_tool": d.seed_tool,
            "gold_args": d.gold_args,
            "messages": r["messages"],
            "tools": r["tools"],
            "record": dump_record(d),
        }
        for d, r in zip(dialogues, records, strict=True)
    ]
    if not rows:
        return datasets.Dataset.from_dict({k: [] for k in features}, features=features)
    return datasets.Dataset.from_list(rows, features=features)


def write_hf_export(dialogues: Sequence[Dialogue], out: str | Path, fmt: PromptFormat) -> dict[str, Any]:
    """Write ``hf_conversational.jsonl``, ``hf_dataset/`` and ``prompt_format.json`` into `out`;
    returns ``{"dialogues", "out", "prompt_format"}``. No template check (see `export_dialogues`)."""
    records = [to_hf_conversational(d, fmt) for d in dialogues]
    return _write(dialogues, records, Path(out), fmt)


def _write(
    dialogues: Sequence[Dialogue], records: Sequence[dict[str, Any]], out: Path, fmt: PromptFormat
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / HF_JSONL, records)
    hf_dataset(dialogues, records).save_to_disk(str(out / HF_DATASET))
    fmt.save(out)
    return {"dialogues": len(records), "out": str(out), "prompt_format": fmt.as_dict()}


def export_dialogues(
    dialogues: Sequence[Dialogue],
    out: str | Path,
    fmt: PromptFormat,
    *,
    tokenizer: Any | None = None,
    force: bool = False,
) -> tuple[dict[str, Any], list[str]]:
    """Render every dialogue in `fmt`, check the records against `tokenizer`'s chat template when
    one is given, and write the export. Returns the summary and the warnings. A template that loses
    part of the records is an `InputError` with the reason, unless `force` (then a warning)."""
    records = [to_hf_conversational(d, fmt) for d in dialogues]
    warnings: list[str] = []
    if tokenizer is not None and records:
        if not getattr(tokenizer, "chat_template", None):
            raise InputError("the tokenizer has no chat template to check the export against")
        losses = check_template(tokenizer, dialogues, records)
        hint = "; --format hf-prompt keeps every call in the text" if fmt.prompt_mode == "native" else ""
        if losses and not force:
            raise InputError(f"the chat template {losses[0]}{hint} (or pass --force to export anyway)")
        warnings += [f"the chat template {loss}" for loss in losses]
    return _write(dialogues, records, Path(out), fmt), warnings


def summary_line(summary: dict[str, Any]) -> str:
    fmt = summary["prompt_format"]
    return (
        f"{summary['dialogues']} dialogues -> {summary['out']} ({HF_JSONL}, {HF_DATASET}/; "
        f"{json.dumps({k: fmt[k] for k in ('prompt_mode', 'tool_style', 'target_reasoning')})})"
    )
