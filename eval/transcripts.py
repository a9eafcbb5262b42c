"""The transcript record: what one evaluated dialogue looked like, in one mode, for one model.

`transcripts.jsonl` holds one `Transcript` per line, per benchmark dialogue and mode
(``static`` or ``dynamic``). It keeps everything the metrics of Appendix C.1 need, so that
``python -m diaforge.eval score transcripts.jsonl`` recomputes every number with no model:

* the reference: `seed_tool` (the gold tool, None for a case where no tool should be called) and
  `gold_args` (the gold map of required arguments);
* the context of the case: `candidate_tools` (names shown to the model), `required_params` (how
  many required arguments the gold tool has) and `has_near_duplicate` (a candidate scores >= 0.70
  with the gold tool on the composite similarity of Appendix A.4), used by the breakdowns;
* the turns, user and assistant alternating as they happened. An assistant turn records how the
  model's output was classified (`kind`: ``reply``, ``tool_calls`` or ``malformed``, see
  `diaforge.format.parse_assistant`, or ``truncated`` when the token budget cut it off before its
  end, see `eval.models.Reply.kind`), its raw text, its private thought, its public reply and its
  calls, and why it was malformed or truncated;
* `convrel`: the rubric grades (1-3) of the assistant turns when a judge was run, else None;
* how the run ended (`ended`: ``tool_call``, ``t_max``, ``reference_end``, ``truncated`` (a
  cut-off reply ends the dialogue: what the model meant to say is unknown), ``error``, or, on the
  no-tool split only, ``refusal``) and the error message when it ended in ``error``;
* the split it belongs to (`split`: ``positive``, the benchmark itself, or ``no_tool``, its
  retrieval misses, `diaforge.eval.no_tool`) and, for a retrieval miss, the name of the tool the user
  needed, which no candidate is (`withheld_tool`);
* which trial of the dialogue it is (`repeat`): ``eval run --repeats k`` plays each dialogue of
  the dynamic mode k times, the user-proxy's wording drawn from another seed each time
  (`diaforge.eval.passk`). Repeat 0 is the run without ``--repeats`` and the one every metric but pass^k
  is computed on (`first_trials`); a line with no `repeat` (written before it existed) is repeat 0.
  A transcript is identified by (`id`, `mode`, `split`, `repeat`).

A typical line::

    {"id": "heldout-0007", "mode": "dynamic", "model": "smollm2-135m+lora", "seed_tool": "open_ticket",
     "gold_args": {"queue": "IT"}, "candidate_tools": ["open_ticket", "open_case"], "required_params": 1,
     "has_near_duplicate": true,
     "turns": [{"role": "user", "content": "I need a ticket", ...},
               {"role": "assistant", "kind": "reply", "content": "Which queue?", "thought": "...", ...},
               {"role": "user", "content": "IT please", ...},
               {"role": "assistant", "kind": "tool_calls", "content": "",
                "tool_calls": [{"name": "open_ticket", "args": {"queue": "IT"}}], ...}],
     "convrel": null, "ended": "tool_call", "error": null}
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from diaforge.errors import InputError
from diaforge.format import render_calls
from diaforge.jsonl import read_jsonl, write_jsonl
from diaforge.schema import ToolCall

__all__ = [
    "ENDINGS",
    "MODES",
    "POSITIVE_ENDINGS",
    "SPLITS",
    "TURN_KINDS",
    "InputError",
    "Transcript",
    "TranscriptTurn",
    "first_trials",
    "read_transcripts",
    "write_transcripts",
]

MODES = ("static", "dynamic")
POSITIVE_ENDINGS = ("tool_call", "t_max", "reference_end", "truncated", "error")
"""How a dialogue of the positive split can end (the keys of ``metrics.json`` -> ``ended``)."""
ENDINGS = (*POSITIVE_ENDINGS, "refusal")
"""Every ending: the no-tool split also ends at the model's first refusal (`diaforge.eval.no_tool`)."""
SPLITS = ("positive", "no_tool")
TURN_KINDS = ("reply", "tool_calls", "malformed", "truncated")

Mode = Literal["static", "dynamic"]
Ending = Literal["tool_call", "t_max", "reference_end", "truncated", "error", "refusal"]
Split = Literal["positive", "no_tool"]
TurnKind = Literal["reply", "tool_calls", "malformed", "truncated"]


class TranscriptTurn(BaseModel):
    """One message of an evaluated dialogue.

    User turns carry only `content`. Assistant turns carry the classification of the model's
    output (`kind`), the public reply in `content` ("" for call turns and malformed turns), the raw
    output in `raw`, the private `thought`, the `tool_calls` of a call turn and the `reason` of a
    malformed or truncated turn. A ``truncated`` turn is an output cut off by the token budget: it
    carries no calls (whatever its prefix held) and is not malformed.
    """

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str = ""
    raw: str | None = None
    kind: TurnKind | None = None
    thought: str | None = None
    tool_calls: list[ToolCall] | None = None
    reason: str | None = None

    @field_validator("tool_calls")
    @classmethod
    def _empty_is_none(cls, v: list[ToolCall] | None) -> list[ToolCall] | None:
        return v or None

    @model_validator(mode="after")
    def _consistent(self) -> TranscriptTurn:
        if self.role == "user":
            if self.kind is not None or self.tool_calls or self.thought is not None or self.reason:
                raise ValueError("a user turn carries only content (no kind, thought, tool_calls or reason)")
            return self
        if self.kind is None:
            raise ValueError("an assistant turn needs a kind: reply, tool_calls, malformed or truncated")
        if self.kind == "tool_calls" and not self.tool_calls:
            raise ValueError("an assistant turn of kind 'tool_calls' needs at least one call")
        if self.kind != "tool_calls" and self.tool_calls:
            raise ValueError(f"an assistant turn of kind {self.kind!r} cannot carry tool_calls")
        return self

    def visible_text(self) -> str:
        """What the other side of the conversation saw: the reply, the call list as JSON, or the
        raw output of a malformed or truncated turn (thoughts are private and never included)."""
        if self.role == "user" or self.kind == "reply":
            return self.content
        if self.kind == "tool_calls" and self.tool_calls:
            return render_calls(self.tool_calls)
        return self.raw if self.raw is not None else self.content


class Transcript(BaseModel):
    """One benchmark dialogue as played by one model in one mode (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    mode: Mode
    model: str = ""
    seed_tool: str | None
    gold_args: dict[str, Any] = Field(default_factory=dict)
    candidate_tools: list[str] = Field(default_factory=list)
    required_params: int = Field(default=0, ge=0)
    has_near_duplicate: bool = False
    turns: list[TranscriptTurn] = Field(default_factory=list)
    convrel: list[int] | None = None
    ended: Ending
    error: str | None = None
    split: Split = "positive"
    withheld_tool: str | None = None
    repeat: int = Field(default=0, ge=0)

    @field_validator("convrel")
    @classmethod
    def _grades_in_range(cls, v: list[int] | None) -> list[int] | None:
        if v is not None:
            bad = [g for g in v if g not in (1, 2, 3)]
            if bad:
                raise ValueError(f"convrel grades must be 1, 2 or 3, got {bad[0]!r}")
        return v

    @model_validator(mode="after")
    def _split_fits(self) -> Transcript:
        if self.split == "no_tool" and self.seed_tool is not None:
            raise ValueError("a transcript of the no-tool split has no gold tool: seed_tool must be null")
        if self.ended == "refusal" and self.split != "no_tool":
            raise ValueError("only a dialogue of the no-tool split ends at a refusal")
        return self

    @model_validator(mode="after")
    def _grades_fit_turns(self) -> Transcript:
        if self.convrel is not None and len(self.convrel) > len(self.assistant_turns()):
            raise ValueError(
                f"convrel has {len(self.convrel)} grades but the transcript has "
                f"{len(self.assistant_turns())} assistant turns"
            )
        return self

    def assistant_turns(self) -> list[TranscriptTurn]:
        return [t for t in self.turns if t.role == "assistant"]

    def render(self) -> str:
        """The dialogue as plain text, one message per paragraph (for W&B tables and reports)."""
        lines = []
        for turn in self.turns:
            if turn.role == "user":
                lines.append(f"USER: {turn.content}")
            elif turn.kind == "tool_calls":
                lines.append(f"ASSISTANT [call]: {turn.visible_text()}")
            elif turn.kind == "malformed":
                lines.append(f"ASSISTANT [malformed: {turn.reason or 'unknown'}]: {turn.visible_text()}")
            elif turn.kind == "truncated":
                lines.append(f"ASSISTANT [truncated]: {turn.visible_text()}")
            else:
                lines.append(f"ASSISTANT: {turn.content}")
        if self.error:
            lines.append(f"[error: {self.error}]")
        return "\n\n".join(lines)


def first_trials(transcripts: Iterable[Transcript]) -> list[Transcript]:
    """The transcripts of repeat 0 (the run without ``--repeats``), in their order: what every
    metric of a run is computed on, so that a run with repeats stays comparable with one without
    (pass^k, `diaforge.eval.passk`, reads every repeat)."""
    return [t for t in transcripts if t.repeat == 0]


def read_transcripts(path: str | Path, *, allow_empty: bool = False) -> list[Transcript]:
    """All transcripts of a JSONL file. A bad line raises `InputError` naming the file, the line
    and the field; an empty file is an error unless `allow_empty`."""
    return read_jsonl(path, Transcript, allow_empty=allow_empty)


def write_transcripts(path: str | Path, transcripts: Iterable[Transcript]) -> int:
    """Write transcripts atomically, one per line; returns the count written."""
    return write_jsonl(path, transcripts)
