"""Preference pairs as TRL conversational preference rows: ``prompt``, ``chosen``, ``rejected``.

A *pair record* (one line of ``pairs.jsonl``, written by ``diaforge data pairs``) holds the
dialogue up to and including the turn that decides something (``dialogue``: its last turn is the
chosen assistant turn), the ``rejected`` assistant turn that decides otherwise, and the ``kind`` of
mistake the rejected turn makes. It keeps turns, not text, so that a trainer renders it in the
prompt format of the model it starts from (the SFT run's ``prompt_format.json``).

`preference_row` renders one record in a `PromptFormat`: ``prompt`` is the system message and the
dialogue before the turn, exactly as `prompt_completion_rows` builds an SFT row's prompt; ``chosen``
and ``rejected`` are one assistant message each, rendered by the same `PromptFormat.target_message`.
The two continuations therefore share their prompt and differ only where the turns differ. Native
mode adds ``tools`` (the candidate tools' OpenAI specs), which TRL's `DPOTrainer` passes to the
chat template.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from diaforge.format.prompt_format import PromptFormat
from diaforge.schema import Dialogue, Turn

PAIR_KINDS = (
    "premature_call",
    "near_duplicate",
    "unsupported_value",
    "needless_question",
    "missed_refusal",
    "wrong_refusal",
)
"""The kinds of rejected alternative (``diaforge.data_gen.pairs`` builds them and documents each)."""

PAIR_RECORD_KEYS = ("id", "dialogue_id", "turn_index", "kind", "variant", "dialogue", "rejected")
"""The keys of a pair record, in order."""

PREFERENCE_KEYS = ("id", "dialogue_id", "turn_index", "kind", "variant", "prompt", "chosen", "rejected")
"""The keys of every preference row, in order; native rows add ``tools``."""


def pair_record(
    dialogue: Dialogue, turn_index: int, rejected: Turn, *, kind: str, variant: str
) -> dict[str, Any]:
    """The record of a rejected alternative to ``dialogue.turns[turn_index]`` (an assistant turn).
    Its id is ``"{dialogue id}/{turn index}/{kind}/{variant}"``."""
    if not 0 <= turn_index < len(dialogue.turns) or dialogue.turns[turn_index].role != "assistant":
        raise ValueError(f"turn {turn_index} of {dialogue.id!r} is not an assistant turn")
    upto = dialogue.model_copy(update={"turns": dialogue.turns[: turn_index + 1]})
    return {
        "id": f"{dialogue.id}/{turn_index}/{kind}/{variant}",
        "dialogue_id": dialogue.id,
        "turn_index": turn_index,
        "kind": kind,
        "variant": variant,
        "dialogue": upto.model_dump(mode="json"),
        "rejected": rejected.model_dump(mode="json"),
    }


def record_turns(record: dict[str, Any]) -> tuple[Dialogue, Turn, Turn]:
    """The dialogue (up to the chosen turn), the chosen turn and the rejected turn of a record.
    Raises ValueError naming the field that is wrong."""
    missing = [k for k in PAIR_RECORD_KEYS if k not in record]
    if missing:
        raise ValueError(f"a pair record needs {missing[0]!r}")
    dialogue = Dialogue.model_validate(record["dialogue"])
    rejected = Turn.model_validate(record["rejected"])
    if not dialogue.turns or dialogue.turns[-1].role != "assistant":
        raise ValueError("dialogue: its last turn must be the chosen assistant turn")
    if rejected.role != "assistant":
        raise ValueError("rejected: must be an assistant turn")
    return dialogue, dialogue.turns[-1], rejected


def preference_row(record: dict[str, Any], fmt: PromptFormat) -> dict[str, Any]:
    """One TRL conversational preference row (`PREFERENCE_KEYS`, plus ``tools`` in native mode)."""
    dialogue, chosen, rejected = record_turns(record)
    row: dict[str, Any] = {k: record[k] for k in ("id", "dialogue_id", "turn_index", "kind", "variant")}
    row["prompt"] = fmt.messages(dialogue, upto=len(dialogue.turns) - 1)
    row["chosen"] = [fmt.target_message(chosen)]
    row["rejected"] = [fmt.target_message(rejected)]
    tools = fmt.tools(dialogue)
    if tools is not None:
        row["tools"] = tools
    return row


def preference_rows(records: Iterable[dict[str, Any]], fmt: PromptFormat) -> Iterator[dict[str, Any]]:
    """`preference_row` of every record, in order."""
    for record in records:
        yield preference_row(record, fmt)


def load_pair_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``pairs.jsonl``; a bad line is an `InputError` naming the file, the line
    and the field."""
    import json

    from diaforge.errors import InputError

    p = Path(path)
    if not p.is_file():
        raise InputError("no such file (the pairs.jsonl written by `diaforge data pairs`)", path=p)
    records = []
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if not isinstance(record, dict):
                    raise ValueError("a pair record must be a JSON object")
                record_turns(record)
            except (json.JSONDecodeError, ValueError) as exc:
                first = str(exc).strip().splitlines()[0]
                raise InputError(first, path=p, record=n) from None
            records.append(record)
    return records
