"""The one vocabulary of the toolkit: Tool, ToolCall, Turn, Persona, Dialogue, and their files.

A dialogue record (one JSON object per line of `dialogues.jsonl`) looks like::

    {"id": "...", "schema_version": "1.0", "seed_tool": "approve_internal_training_request",
     "candidate_tools": [{"name": ..., "description": ..., "parameters": {...}}, ...],
     "persona": {...}, "goal": "...", "gold_args": {"request_id": "TR-20931"},
     "turns": [{"role": "user", "content": "...", "thought": null, "tool_calls": null, ...},
               {"role": "assistant", "content": "...", "thought": "...", "tool_calls": null,
                "phase": "tool_selection", "act": "seek_info", "action": "clarify"}, ...],
     "provenance": {"backend": "scripted", "verdicts": [...], ...}}

Tool parameters are a JSON Schema object (`type: object`, `properties`, `required`) whose types
are normalised to the JSON Schema names (`diaforge.json_schema`). A dialogue file is read with
`load_dialogues` and written with `save_dialogues`, through the JSON Lines reader and writer of
`diaforge.jsonl` (a bad line is one error naming the file, the line and the field).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from diaforge.json_schema import normalise_parameters
from diaforge.jsonl import first_error, read_jsonl, write_jsonl

SCHEMA_VERSION = "1.0"


class Tool(BaseModel):
    """A callable tool: a name, what it does, and a JSON Schema object for its arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Unique tool identifier, as the model must emit it.")
    description: str = Field(default="", description="What the tool does, as shown to the model.")
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}, "required": []},
        description="JSON Schema object: `properties` (each with `type`, `description`, optional "
        "`enum`/`format`) and a `required` list.",
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict,
        description="Free-form facts that are not shown to the model (line_of_business, family, split, source).",
    )

    @field_validator("name")
    @classmethod
    def _name_is_clean(cls, v: str) -> str:
        if v != v.strip() or not v.strip():
            raise ValueError("tool name must be non-empty with no leading or trailing whitespace")
        return v

    @field_validator("parameters", mode="before")
    @classmethod
    def _normalise(cls, v: Any) -> dict[str, Any]:
        return normalise_parameters(v)

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        return self.parameters.get("properties", {})

    @property
    def required(self) -> list[str]:
        return list(self.parameters.get("required", []))

    def param_base_type(self, key: str) -> str:
        """Normalised base type used by the near-duplicate score (string, integer, number, date, ...).

        Strings with a `date` or `date-time` format count as `date`; untyped parameters as `any`.
        """
        spec = self.properties.get(key, {})
        kind = spec.get("type", "any")
        if isinstance(kind, list):
            kind = next((t for t in kind if t != "null"), "null")
        if kind == "string" and spec.get("format") in ("date", "date-time"):
            return "date"
        return kind

    def spec(self) -> dict[str, Any]:
        """The tool as shown to a model: name, description, parameters (no metadata)."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def openai_spec(self) -> dict[str, Any]:
        """OpenAI function-calling `tools=` entry."""
        return {"type": "function", "function": self.spec()}


class ToolCall(BaseModel):
    """One call: the tool's name and its arguments (accepts `arguments` as an alias of `args`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1, pattern=r"\S", description="The tool called; not blank.")
    args: dict[str, Any] = Field(default_factory=dict, validation_alias=AliasChoices("args", "arguments"))


Role = Literal["user", "assistant"]
Phase = Literal["tool_selection", "argument_completion"]
# CONFETTI's coarse dialogue acts and ToolDial's fine system actions.
DialogueAct = Literal["seek_info", "inform", "reject", "function_calling", "other"]
SystemAction = Literal[
    "clarify", "request", "suggest", "call", "response", "response_fail", "system_bye", "retriever_call"
]
# The coarse act each fine action implies: a labelled turn must agree with it.
ACT_OF_ACTION: dict[str, str] = {
    "clarify": "seek_info",
    "request": "seek_info",
    "suggest": "seek_info",
    "call": "function_calling",
    "retriever_call": "function_calling",
    "response": "inform",
    "response_fail": "reject",
    "system_bye": "other",
}
CALL_ACTIONS: tuple[str, ...] = ("call", "retriever_call")
"""The fine actions of a turn that calls tools (a turn with tool calls has one of them)."""


class Turn(BaseModel):
    """One message. User turns carry only `content`; assistant turns add a private `thought` and
    optional `tool_calls`, the phase they belong to and their dialogue-act labels."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    content: str = ""
    thought: str | None = None
    tool_calls: list[ToolCall] | None = None
    phase: Phase | None = None
    act: DialogueAct | None = None
    action: SystemAction | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tool_calls")
    @classmethod
    def _empty_is_none(cls, v: list[ToolCall] | None) -> list[ToolCall] | None:
        return v or None

    @model_validator(mode="after")
    def _user_turns_are_plain(self) -> Turn:
        if self.role == "user" and (self.thought is not None or self.tool_calls):
            raise ValueError("a user turn cannot carry a thought or tool calls")
        return self


class Persona(BaseModel):
    """A corporate user: who they are and how they talk. `description` alone is enough
    (PersonaHub-style); the structured fields make what the scripted agents say richer."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    description: str = Field(min_length=1)
    role: str | None = None
    department: str | None = None
    line_of_business: str | None = None
    seniority: str | None = None
    tone: str | None = None
    jargon: list[str] = Field(default_factory=list)

    def text(self) -> str:
        """The text a retriever embeds for this persona."""
        parts = [self.description]
        if self.role:
            parts.append(self.role)
        if self.department:
            parts.append(self.department)
        if self.jargon:
            parts.append(", ".join(self.jargon))
        return ". ".join(parts)


class Verdict(BaseModel):
    """One validator's decision on a dialogue."""

    model_config = ConfigDict(extra="forbid")

    validator: str
    passed: bool
    reason: str = ""


class Provenance(BaseModel):
    """Where a dialogue came from: backend and models per role, seed, attempt, verdicts, cost."""

    model_config = ConfigDict(extra="allow")

    backend: str = "unknown"
    models: dict[str, str] = Field(default_factory=dict)
    seed: int | None = None
    attempt: int = 1
    verdicts: list[Verdict] = Field(default_factory=list)
    usage: dict[str, float] = Field(default_factory=dict)
    source: str | None = None
    created_at: str | None = None


HISTORY_ONLY = "history_only"
"""The ``metadata`` key of an assistant turn that is history only: the model wrote it (a rollout's
visited state, `diaforge.data_gen.rollouts`), so training shows it in the prompt of later turns and
never takes it as a target (`Dialogue.trained_turns`)."""
WITHHELD_TOOL = "withheld_tool"
"""The `provenance` key of a retrieval miss: the spec of the tool the user needs, which is not
among the candidates (`Dialogue.withheld_tool`)."""


class Dialogue(BaseModel):
    """A seed tool, the candidates shown to the assistant, the persona and goal, the gold
    arguments, and the turns. `seed_tool=None` marks a case where no tool should be called; a
    retrieval miss also keeps the tool the user needs in `provenance.withheld_tool`
    (with `gold_args` its values), which the user-proxy pursues and no candidate is."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    schema_version: str = SCHEMA_VERSION
    seed_tool: str | None
    candidate_tools: list[Tool]
    persona: Persona
    goal: str = ""
    gold_args: dict[str, Any] = Field(default_factory=dict)
    turns: list[Turn] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)

    @model_validator(mode="after")
    def _gold_among_candidates(self) -> Dialogue:
        names = [t.name for t in self.candidate_tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"candidate_tools has duplicate names: {', '.join(dupes)}")
        if self.seed_tool is not None and self.seed_tool not in names:
            raise ValueError(f"seed_tool {self.seed_tool!r} is not among candidate_tools")
        raw = (self.provenance.model_extra or {}).get(WITHHELD_TOOL)
        if raw is not None:
            if self.seed_tool is not None:
                raise ValueError(
                    "a record with provenance.withheld_tool has no gold tool: seed_tool must be null"
                )
            try:
                withheld = Tool.model_validate(raw)
            except ValidationError as exc:
                field, msg = first_error(exc)
                raise ValueError(f"provenance.withheld_tool{'.' + field if field else ''}: {msg}") from None
            if withheld.name in names:
                raise ValueError(f"provenance.withheld_tool {withheld.name!r} is among candidate_tools")
        return self

    @property
    def gold_tool(self) -> Tool | None:
        return next((t for t in self.candidate_tools if t.name == self.seed_tool), None)

    @property
    def withheld_tool(self) -> Tool | None:
        """The tool a retrieval miss kept out of the candidates (what the user needs); None for
        every other record."""
        raw = (self.provenance.model_extra or {}).get(WITHHELD_TOOL)
        return Tool.model_validate(raw) if raw is not None else None

    def assistant_turns(self) -> list[int]:
        """Indices of the assistant turns, in order."""
        return [i for i, t in enumerate(self.turns) if t.role == "assistant"]

    def trained_turns(self) -> list[int]:
        """Indices of the assistant turns training takes as targets: every one but those marked
        history only (``metadata[HISTORY_ONLY]``), in order."""
        return [i for i in self.assistant_turns() if not self.turns[i].metadata.get(HISTORY_ONLY)]


def load_dialogues(path: str | Path, **kwargs: Any) -> list[Dialogue]:
    """The dialogues of a JSONL file (`diaforge.jsonl.read_jsonl`: an empty file is an error)."""
    return read_jsonl(path, Dialogue, **kwargs)


def save_dialogues(path: str | Path, dialogues: Iterable[Dialogue]) -> int:
    """Write dialogues to a JSONL file atomically; returns how many were written."""
    return write_jsonl(path, dialogues)
