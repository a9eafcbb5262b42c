"""Dialogues as TRL prompt-completion rows, checked against the chat template and the token budget
that will train them.

    python -m diaforge.data_gen export DIALOGUES.jsonl --format hf|hf-prompt --out DIR [--tokenizer PATH]
        [--tool-style json|compact] [--history-reasoning strip|keep] [--target-reasoning keep|drop]
        [--system-prompt-file FILE] [--force]

A run folder gets:

* ``hf_conversational.jsonl``: one row per assistant turn (`diaforge.format.trl_rows`): ``prompt``
  (the system message and the dialogue up to the turn), ``completion`` (the turn), ``tools`` in
  native mode, and ``id``, ``dialogue_id``, ``turn_index``, ``final``, ``seed_tool``, ``gold_args``;
* ``hf_dataset/`` (``datasets.save_to_disk``): the same rows, each message and tool a JSON value
  (`datasets.Json`). TRL's `SFTTrainer` takes it as it is and, at its default config, trains the
  completion tokens alone;
* ``prompt_format.json``: the `PromptFormat` the rows were rendered in, the system prompt's text
  and hash included;
* with ``--tokenizer``, ``token_lengths.json``: the tokens of every row as TRL counts them, their
  distribution, the ``max_length`` that keeps every row whole (so every final call is trained),
  and what TRL's default ``max_length`` of 1,024 would cut.

With ``--tokenizer`` every row is also rendered through that tokenizer's chat template first, and
the export is refused, with the reason and the first row concerned, when the template drops tool
calls, tools or assistant text, or renders the prompt differently once the completion follows
(TRL would then train on a context the model never sees); ``--force`` writes it anyway with a
warning. Without it, `unchecked_note` says what could not be checked. ``hf`` is native mode: many
templates (SmolLM2's among them) render neither tools nor calls; ``hf-prompt`` (the paper's text
format) survives any template.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.format import PromptFormat, iter_rows
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue

HF_JSONL = "hf_conversational.jsonl"
HF_DATASET = "hf_dataset"
LENGTHS_FILE = "token_lengths.json"
TRL_DEFAULT_MAX_LENGTH = 1024
"""`trl.SFTConfig.max_length`'s default in TRL 1.x (a test holds it to the installed TRL)."""


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False)


def _token_ids(tokenizer: Any, messages: list[dict[str, Any]], tools: Any, **kwargs: Any) -> list[int]:
    """The tokens of `messages` exactly as TRL's `SFTTrainer` makes them (`trl.data_utils._tokenize`:
    ``apply_chat_template(..., tools=row["tools"], tokenize=True, return_dict=True)``)."""
    out = tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=True, **kwargs)
    return list(out["input_ids"])


def _without(messages: list[dict[str, Any]], i: int, key: str) -> list[dict[str, Any]]:
    return [*messages[:i], {k: v for k, v in messages[i].items() if k != key}, *messages[i + 1 :]]


def template_losses(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[str]:
    """What `tokenizer`'s chat template leaves out of `messages`, each as a short phrase (empty when
    nothing is lost). A part is lost when the text rendered without it is the same: the tools, a
    message's ``tool_calls`` or ``reasoning_content``; assistant text is lost when it is not in the
    rendered text."""
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
                losses.append("drops reasoning_content (the thoughts are neither shown nor trained)")
        content = (message.get("content") or "").strip()
        if content and content not in full:
            losses.append(f"changes assistant text ({content[:40]!r} is not in the rendered text)")
    return list(dict.fromkeys(losses))


def row_check(tokenizer: Any, row: dict[str, Any]) -> tuple[list[str], int]:
    """The template losses of one row (`template_losses` of prompt + completion, and whether the
    prompt's tokens are a prefix of the row's, as TRL needs to put the loss on the completion
    alone) and the row's length in tokens as TRL counts it."""
    tools = row.get("tools")
    messages = [*row["prompt"], *row["completion"]]
    losses = template_losses(tokenizer, messages, tools)
    prompt_ids = _token_ids(tokenizer, row["prompt"], tools, add_generation_prompt=True)
    full_ids = _token_ids(tokenizer, messages, tools)
    common = next((i for i, (a, b) in enumerate(zip(prompt_ids, full_ids, strict=False)) if a != b), None)
    common = min(len(prompt_ids), len(full_ids)) if common is None else common
    if common < len(prompt_ids):
        losses.append(
            "renders the prompt differently once the completion follows (TRL would train on a context the "
            "model never sees)"
        )
    elif len(full_ids) == common:
        losses.append("renders the completion to no tokens")
    return losses, len(full_ids)


@dataclass
class TokenLengths:
    """The length in tokens of every exported row, as TRL's `SFTTrainer` tokenizes it."""

    tokenizer: str
    ids: list[str]
    lengths: list[int]
    finals: list[bool]

    @property
    def recommended_max_length(self) -> int:
        """The smallest ``max_length`` that keeps every row whole: no completion is cut, so every
        final call is trained with its end-of-turn token."""
        return max(self.lengths, default=0)

    def cut_at(self, max_length: int) -> tuple[int, int]:
        """(rows, final rows) longer than `max_length`: TRL keeps their start and cuts the end."""
        over = [n > max_length for n in self.lengths]
        return sum(over), sum(o and f for o, f in zip(over, self.finals, strict=True))

    def as_dict(self) -> dict[str, Any]:
        ordered = sorted(self.lengths)

        def rank(q: float) -> int:
            return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else 0

        rows_cut, finals_cut = self.cut_at(TRL_DEFAULT_MAX_LENGTH)
        longest = max(range(len(self.lengths)), key=self.lengths.__getitem__) if self.lengths else None
        return {
            "tokenizer": self.tokenizer,
            "rows": len(self.lengths),
            "final_rows": sum(self.finals),
            "tokens_per_row": {
                "min": rank(0.0),
                "p50": rank(0.5),
                "p90": rank(0.9),
                "p99": rank(0.99),
                "max": self.recommended_max_length,
                "mean": round(sum(ordered) / len(ordered), 1) if ordered else 0.0,
            },
            "longest_row": None if longest is None else self.ids[longest],
            "recommended_max_length": self.recommended_max_length,
            "at_trl_default_max_length": {
                "max_length": TRL_DEFAULT_MAX_LENGTH,
                "rows_cut": rows_cut,
                "final_rows_cut": finals_cut,
            },
            "row_tokens": dict(zip(self.ids, self.lengths, strict=True)),
        }


def lengths_line(d: dict[str, Any]) -> str:
    """One line of `TokenLengths.as_dict`: the distribution, the recommended ``max_length`` and
    what TRL's default would cut."""
    t, cut = d["tokens_per_row"], d["at_trl_default_max_length"]
    return (
        f"tokens per row (p50/p90/p99/max): {t['p50']}/{t['p90']}/{t['p99']}/{t['max']}; "
        f"recommended SFTConfig max_length: {d['recommended_max_length']} (keeps every row whole); "
        f"TRL's default {cut['max_length']} would cut {cut['rows_cut']} of {d['rows']} rows, "
        f"{cut['final_rows_cut']} of {d['final_rows']} final calls"
    )


def check_rows(
    tokenizer: Any, rows: Sequence[dict[str, Any]], *, name: str = "", progress: bool | None = None
) -> tuple[list[str], TokenLengths]:
    """`row_check` over every row: one line per kind of loss, naming the first row that shows it
    and how many do, and the rows' `TokenLengths`. With `progress`, a bar on stderr."""
    from diaforge.console import progress as progress_bar

    first: dict[str, str] = {}
    counts: dict[str, int] = {}
    lengths: list[int] = []
    for row in progress_bar(rows, desc="checking the chat template", unit="row", enabled=progress):
        losses, n = row_check(tokenizer, row)
        lengths.append(n)
        for loss in losses:
            kind = loss.split(" (", 1)[0]
            first.setdefault(kind, f"{loss}, first in row {row['id']!r}")
            counts[kind] = counts.get(kind, 0) + 1
    found = [f"{first[k]}; {counts[k]} of {len(rows)} rows" for k in first]
    return found, TokenLengths(name, [r["id"] for r in rows], lengths, [r["final"] for r in rows])


def unchecked_note(fmt: PromptFormat) -> str:
    """What an export without ``--tokenizer`` could not check, as one line for stderr."""
    parts = []
    if fmt.prompt_mode == "native":
        parts.append("that a chat template renders these rows' tools and tool calls (SmolLM2's drops both)")
    parts.append(
        "that each prompt's tokens are a prefix of its row's (TRL needs it to train the completion alone)"
    )
    parts.append(
        f"the token lengths and the max_length that keeps every final call (TRL's default {TRL_DEFAULT_MAX_LENGTH} "
        "cuts longer rows)"
    )
    return "not checked without --tokenizer: " + "; ".join(parts) + "; pass --tokenizer MODEL_FOLDER to check"


def hf_dataset(rows: Sequence[dict[str, Any]], *, native: bool):
    """A `datasets.Dataset` of the rows: ``prompt``, ``completion`` (and ``tools`` when `native`)
    as lists of JSON values (each message keeps exactly its own keys; tool schemas of any shape
    fit), ``gold_args`` a JSON value, the ids and ``final`` as plain columns."""
    import datasets

    spec: dict[str, Any] = {
        "id": datasets.Value("string"),
        "dialogue_id": datasets.Value("string"),
        "turn_index": datasets.Value("int32"),
        "final": datasets.Value("bool"),
        "seed_tool": datasets.Value("string"),
        "gold_args": datasets.Json(),
        "prompt": datasets.List(datasets.Json()),
        "completion": datasets.List(datasets.Json()),
    }
    if native:
        spec["tools"] = datasets.List(datasets.Json())
    features = datasets.Features(spec)
    if not rows:
        return datasets.Dataset.from_dict({k: [] for k in features}, features=features)
    return datasets.Dataset.from_list(list(rows), features=features)


def _save_quietly(dataset: Any, path: Path) -> None:
    """`save_to_disk` without the library's own bar (it takes well under a second)."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        dataset.save_to_disk(str(path))
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def write_hf_export(dialogues: Sequence[Dialogue], out: str | Path, fmt: PromptFormat) -> dict[str, Any]:
    """Write ``hf_conversational.jsonl``, ``hf_dataset/`` and ``prompt_format.json`` into `out`;
    returns the summary (see `export_dialogues`). No template or length check."""
    return _write(dialogues, list(iter_rows(dialogues, fmt)), Path(out), fmt, None)


def _write(
    dialogues: Sequence[Dialogue],
    rows: Sequence[dict[str, Any]],
    out: Path,
    fmt: PromptFormat,
    lengths: TokenLengths | None,
) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / HF_JSONL, rows)
    _save_quietly(hf_dataset(rows, native=fmt.prompt_mode == "native"), out / HF_DATASET)
    fmt.save(out)
    summary: dict[str, Any] = {
        "dialogues": len(dialogues),
        "rows": len(rows),
        "out": str(out),
        "prompt_format": fmt.as_dict(),
    }
    if lengths is not None:
        summary["token_lengths"] = lengths.as_dict()
        path = out / LENGTHS_FILE
        path.write_text(json.dumps(summary["token_lengths"], indent=2) + "\n", encoding="utf-8")
    return summary


def export_dialogues(
    dialogues: Sequence[Dialogue],
    out: str | Path,
    fmt: PromptFormat,
    *,
    tokenizer: Any | None = None,
    tokenizer_name: str = "",
    force: bool = False,
    progress: bool | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Render every dialogue's rows in `fmt`, check them against `tokenizer`'s chat template and
    measure their tokens when one is given, and write the export. Returns the summary
    (``dialogues``, ``rows``, ``out``, ``prompt_format`` and, with a tokenizer, ``token_lengths``)
    and the warnings. A template that loses part of the rows is an `InputError` with the reason,
    unless `force` (then a warning)."""
    rows = list(iter_rows(dialogues, fmt))
    warnings: list[str] = []
    lengths = None
    if tokenizer is not None and rows:
        if not getattr(tokenizer, "chat_template", None):
            raise InputError("the tokenizer has no chat template to check the export against")
        losses, lengths = check_rows(tokenizer, rows, name=tokenizer_name, progress=progress)
        hint = "; --format hf-prompt keeps every call in the text" if fmt.prompt_mode == "native" else ""
        if losses and not force:
            raise InputError(f"the chat template {losses[0]}{hint} (or pass --force to export anyway)")
        warnings += [f"the chat template {loss}" for loss in losses]
    return _write(dialogues, rows, Path(out), fmt, lengths), warnings


def summary_line(summary: dict[str, Any]) -> str:
    fmt = summary["prompt_format"]
    options = {k: fmt[k] for k in ("prompt_mode", "tool_style", "history_reasoning", "target_reasoning")}
    line = (
        f"{summary['rows']} prompt-completion rows from {summary['dialogues']} dialogues -> {summary['out']} "
        f"({HF_JSONL}, {HF_DATASET}/; {json.dumps(options)})"
    )
    if "token_lengths" in summary:
        line += (
            f"; {LENGTHS_FILE}: recommended max_length {summary['token_lengths']['recommended_max_length']}"
        )
    return line
