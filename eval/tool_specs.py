"""The candidate tool specs a run used, kept beside its transcripts (``tools.json``).

A `Transcript` names its candidates (`candidate_tools`) but does not hold their schemas, and the
decision replay (`diaforge.eval.decisions`, `diaforge.eval.clarification`) needs them: which candidates a question
offers is read from their descriptions and parameters, and which values the user has given from
the gold tool's schema. So that ``python -m diaforge.eval score`` can still recompute those sections with
no model and no benchmark, `eval run` writes ``tools.json`` into the run folder::

    {"format": 1,
     "tools": {"open_ticket": {"name": "open_ticket", "description": "...", "parameters": {...}}, ...},
     "dialogues": {"heldout-0007": {"candidates": ["open_ticket", "open_case"], "withheld": null,
                                    "offers": [["open_ticket", "open_case"], null]},
                   "miss-0003":    {"candidates": ["open_case", ...], "withheld": "close_ticket"}}}

Each distinct spec is stored once, under its name (``name#2``, ``name#3``, ... for a second spec
that shares a name with another, so that two catalogues in one benchmark cannot mix); each
dialogue lists the keys of its candidates, in the order the model saw them, and of the tool its
user needed when no candidate fits (the no-tool split, `diaforge.eval.no_tool`). On the positive split,
``offers`` holds, for each assistant turn of the reference dialogue in order, the candidates it
offered when it asks which tool (read from its thought, `diaforge.data_gen.agents.options_in_thought`, or
from its words when the thought does not list them) and null for any other turn: the static
replay reads the reference user's answers against them (`diaforge.eval.decisions`). A file without the key
(written before it existed) leaves the replay to assume the first four open tools.

Where the run folder has no ``tools.json`` (a run made before it existed), ``eval score --bench
FILE`` rebuilds the specs from the benchmark (and its no-tool split beside it,
`diaforge.eval.no_tool.no_tool_bench_for`). With neither, the sections that need the specs are "not
computed" (None in ``metrics.json``), never estimated. `check_covers` makes a mismatch between
the transcripts and the specs an `InputError` that names the dialogue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.eval.transcripts import Transcript
from diaforge.schema import Dialogue, Tool

__all__ = [
    "TOOLS_FILE",
    "DialogueTools",
    "ToolSpecs",
    "check_covers",
    "read_tool_specs",
    "specs_from_dialogues",
    "write_tool_specs",
]

TOOLS_FILE = "tools.json"
"""The name of the specs file in a run folder."""

_FORMAT = 1


@dataclass(frozen=True)
class DialogueTools:
    """The tool specs of one dialogue."""

    candidates: list[Tool]
    """The candidate tools, in the order the model saw them."""
    withheld: Tool | None = None
    """A retrieval miss: the tool the user needs, which no candidate is; None otherwise."""
    offers: list[list[Tool] | None] | None = None
    """Per assistant turn of the reference dialogue, the candidates it offered when it asks which
    tool, else None; None as a whole when unknown (a retrieval miss, or an older ``tools.json``)."""


@dataclass
class ToolSpecs:
    """The tool specs of every dialogue of a run, by dialogue id; `source` says where they came
    from (``tools.json`` or the benchmark file), for reports."""

    dialogues: dict[str, DialogueTools] = field(default_factory=dict)
    source: str = ""

    def get(self, dialogue_id: str) -> DialogueTools | None:
        return self.dialogues.get(dialogue_id)


def reference_offers(dialogue: Dialogue) -> list[list[Tool] | None] | None:
    """What each assistant turn of a positive reference dialogue offered when it asks which tool
    (phase ``tool_selection``, no call): the options its thought lists, else those its words offer
    (`diaforge.data_gen.agents.offered_options`); None for its other turns. None for a retrieval miss."""
    from diaforge.data_gen.agents import SELECTION, offered_options, options_in_thought

    if dialogue.withheld_tool is not None:
        return None
    candidates = list(dialogue.candidate_tools)
    offers: list[list[Tool] | None] = []
    for t in dialogue.turns:
        if t.role != "assistant":
            continue
        if t.phase == SELECTION and not t.tool_calls:
            offers.append(options_in_thought(t.thought, candidates) or offered_options(t.content, candidates))
        else:
            offers.append(None)
    return offers


def specs_from_dialogues(dialogues: Iterable[Dialogue], source: str = "") -> ToolSpecs:
    """The specs of benchmark records: their candidates, for a retrieval miss the withheld tool
    (``provenance.withheld_tool``), else what each reference question offered (`reference_offers`)."""
    return ToolSpecs(
        {
            d.id: DialogueTools(list(d.candidate_tools), d.withheld_tool, reference_offers(d))
            for d in dialogues
        },
        source=source,
    )


def _spec(tool: Tool) -> dict[str, Any]:
    return tool.model_dump(mode="json")


def write_tool_specs(path: str | Path, specs: ToolSpecs) -> Path:
    """Write `specs` as ``tools.json`` (module docstring) to `path`; returns the path."""
    from diaforge.eval.run_files import write_atomic

    tools: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}  # the JSON of a spec -> its key

    def key_of(tool: Tool) -> str:
        spec = _spec(tool)
        text = json.dumps(spec, sort_keys=True, ensure_ascii=False)
        if text not in keys:
            key, n = tool.name, 1
            while key in tools:
                n += 1
                key = f"{tool.name}#{n}"
            tools[key] = spec
            keys[text] = key
        return keys[text]

    dialogues: dict[str, dict[str, Any]] = {}
    for did, d in specs.dialogues.items():
        entry: dict[str, Any] = {
            "candidates": [key_of(c) for c in d.candidates],
            "withheld": key_of(d.withheld) if d.withheld is not None else None,
        }
        if d.offers is not None:
            entry["offers"] = [None if o is None else [key_of(c) for c in o] for o in d.offers]
        dialogues[did] = entry
    out = Path(path)
    body = {"format": _FORMAT, "tools": tools, "dialogues": dialogues}
    write_atomic(out, json.dumps(body, indent=1, ensure_ascii=False) + "\n")
    return out


def read_tool_specs(path: str | Path) -> ToolSpecs:
    """The specs of a ``tools.json``; a malformed file is an `InputError` naming it and the field."""
    p = Path(path)
    try:
        body = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the tool specs ({exc})", path=p) from None
    if not isinstance(body, dict) or body.get("format") != _FORMAT:
        raise InputError(f"not a tool specs file of format {_FORMAT}", path=p, field="format")
    raw_tools, raw_dialogues = body.get("tools"), body.get("dialogues")
    if not isinstance(raw_tools, dict) or not isinstance(raw_dialogues, dict):
        raise InputError("needs the objects 'tools' and 'dialogues'", path=p)
    tools: dict[str, Tool] = {}
    for key, spec in raw_tools.items():
        try:
            tools[key] = Tool.model_validate(spec)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise InputError(first["msg"], path=p, field=f"tools.{key}") from None

    def tool(key: Any, did: str) -> Tool:
        if key not in tools:
            raise InputError(f"names no tool of 'tools': {key!r}", path=p, record=did)
        return tools[key]

    dialogues = {}
    for did, entry in raw_dialogues.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("candidates"), list):
            raise InputError("needs a 'candidates' list", path=p, record=did)
        withheld = entry.get("withheld")
        offers = entry.get("offers")
        if offers is not None and not (
            isinstance(offers, list) and all(o is None or isinstance(o, list) for o in offers)
        ):
            raise InputError("'offers' must be a list of lists of tool keys or nulls", path=p, record=did)
        dialogues[did] = DialogueTools(
            [tool(k, did) for k in entry["candidates"]],
            tool(withheld, did) if withheld is not None else None,
            None if offers is None else [None if o is None else [tool(k, did) for k in o] for o in offers],
        )
    return ToolSpecs(dialogues, source=str(p))


def check_covers(specs: ToolSpecs, transcripts: Sequence[Transcript]) -> None:
    """Every transcript has specs whose candidate names are its own (and, for a retrieval miss,
    whose withheld tool is its own); otherwise an `InputError` naming the specs' source and the
    dialogue (a ``--bench`` other than the run's, most likely)."""
    for t in transcripts:
        entry = specs.get(t.id)
        if entry is None:
            raise InputError("has no tool specs for this dialogue", path=specs.source or None, record=t.id)
        names = [c.name for c in entry.candidates]
        if names != list(t.candidate_tools):
            raise InputError(
                f"candidates {names} differ from the transcript's {list(t.candidate_tools)}",
                path=specs.source or None,
                record=t.id,
            )
        if t.withheld_tool is not None and (entry.withheld is None or entry.withheld.name != t.withheld_tool):
            raise InputError(
                f"has no spec of the withheld tool {t.withheld_tool!r}",
                path=specs.source or None,
                record=t.id,
            )
