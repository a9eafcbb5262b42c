"""The one vocabulary of the toolkit: Tool, ToolCall, Turn, Persona, Dialogue, and JSONL in/out.

A dialogue record (one JSON object per line of `dialogues.jsonl`) looks like::

    {"id": "...", "schema_version": "1.0", "seed_tool": "approve_internal_training_request",
     "candidate_tools": [{"name": ..., "description": ..., "parameters": {...}}, ...],
     "persona": {...}, "goal": "...", "gold_args": {"request_id": "TR-20931"},
     "turns": [{"role": "user", "content": "...", "thought": null, "tool_calls": null, ...},
               {"role": "assistant", "content": "...", "thought": "...", "tool_calls": null,
                "phase": "tool_selection", "act": "seek_info", "action": "clarify"}, ...],
     "provenance": {"backend": "scripted", "verdicts": [...], ...}}

Tool parameters are a JSON Schema object (`type: object`, `properties`, `required`) whose types
are normalised to the JSON Schema names (see `normalise_type`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from diaforge.errors import InputError
from diaforge.hygiene import MAX_DEPTH, json_problem, load_json, read_text_file

SCHEMA_VERSION = "1.0"

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")

# Python / BFCL / OpenAPI spellings of the JSON Schema types.
TYPE_ALIASES = {
    "str": "string",
    "text": "string",
    "int": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "bool": "boolean",
    "dict": "object",
    "map": "object",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "none": "null",
    # Types that are strings with a format in JSON Schema.
    "date": "string",
    "datetime": "string",
    "date-time": "string",
}
_FORMAT_OF_ALIAS = {"date": "date", "datetime": "date-time", "date-time": "date-time"}
# Types that mean "no constraint": the `type` key is dropped.
_UNTYPED = {"any", ""}


def local_ref_target(root: Any, ref: str) -> Any:
    """The node a local JSON pointer (``#/$defs/Money``, ``#/components/schemas/Pet``) names in
    `root`, with RFC 6901 escapes (``~1`` = "/", ``~0`` = "~"); None when `ref` is not local or
    names nothing."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def normalise_type(raw: Any) -> tuple[str | None, str | None]:
    """Map a type spelling to `(json_schema_type, implied_format)`.

    `dict`->`object`, `float`->`number`, `tuple`->`array`, `date`->(`string`, `date`), `any`->None.
    Raises `ValueError` naming the type when it is unknown.
    """
    if raw is None:
        return None, None
    if not isinstance(raw, str):
        raise ValueError(f"type must be a string, got {type(raw).__name__} {raw!r}")
    key = raw.strip().lower()
    if key in _UNTYPED:
        return None, None
    if key in JSON_TYPES:
        return key, None
    if key in TYPE_ALIASES:
        return TYPE_ALIASES[key], _FORMAT_OF_ALIAS.get(key)
    raise ValueError(f"unknown type {raw!r} (expected one of {', '.join(JSON_TYPES)} or a common alias)")


def normalise_property(name: str, spec: Any, *, where: str = "") -> dict[str, Any]:
    """Validate one property schema and normalise its types, recursively for arrays and objects."""
    path = f"{where}{name}"
    if not isinstance(spec, dict):
        raise ValueError(f"parameter {path!r} must be an object, got {type(spec).__name__}")
    out = dict(spec)
    raw_type = out.get("type")
    if isinstance(raw_type, list):  # JSON Schema union, e.g. ["string", "null"]
        out["type"] = [normalise_type(t)[0] or "null" for t in raw_type]
    else:
        try:
            json_type, implied_format = normalise_type(raw_type)
        except ValueError as exc:
            raise ValueError(f"parameter {path!r}: {exc}") from None
        if json_type is None:
            out.pop("type", None)
        else:
            out["type"] = json_type
        if implied_format and "format" not in out:
            out["format"] = implied_format
    if "description" in out and not isinstance(out["description"], str):
        out["description"] = str(out["description"])
    if "enum" in out and not isinstance(out["enum"], list):
        raise ValueError(f"parameter {path!r}: enum must be a list")
    if isinstance(out.get("items"), dict):
        out["items"] = normalise_property("[]", out["items"], where=f"{path}")
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            k: normalise_property(k, v, where=f"{path}.") for k, v in out["properties"].items()
        }
    return out


def normalise_parameters(params: Any) -> dict[str, Any]:
    """Validate a tool's `parameters` JSON Schema object and normalise every type in it."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"parameters must be an object, got {type(params).__name__}")
    kind = params.get("type", "object")
    if kind not in ("object", "dict"):
        raise ValueError(f"parameters.type must be 'object', got {kind!r}")
    props = params.get("properties", {})
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise ValueError(f"parameters.properties must be an object, got {type(props).__name__}")
    required = params.get("required", [])
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ValueError("parameters.required must be a list of parameter names")
    missing = [r for r in required if r not in props]
    if missing:
        raise ValueError(f"parameters.required names unknown parameters: {', '.join(missing)}")
    out = {k: v for k, v in params.items() if k not in ("type", "properties", "required")}
    return {
        "type": "object",
        "properties": {name: normalise_property(name, spec) for name, spec in props.items()},
        "required": list(dict.fromkeys(required)),
        **out,
    }


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
                field, msg = _first_error(exc)
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


# --------------------------------------------------------------------------------------------
# JSONL in/out
# --------------------------------------------------------------------------------------------

M = TypeVar("M", bound=BaseModel)


def _first_error(exc: ValidationError) -> tuple[str | None, str]:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or None
    msg = err.get("msg", "invalid value")
    msg = msg.removeprefix("Value error, ")
    return loc, msg


def validate_record(
    obj: Any, model: type[M], *, path: str | Path | None = None, record: int | str | None = None
) -> M:
    """Validate one decoded JSON object, raising `InputError` that names file, record and field."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, record=record)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        field, msg = _first_error(exc)
        raise InputError(msg, path=path, record=record, field=field) from None


def iter_jsonl(
    path: str | Path,
    model: type[M],
    *,
    tolerate_truncated_tail: bool = False,
) -> Iterator[M]:
    """Yield validated records from a JSON Lines file, one per non-blank line.

    A bad line raises `InputError` naming the file, the line number and the field. With
    `tolerate_truncated_tail`, a last line without its newline that does not parse (a write cut
    short by a crash) is skipped instead: resume logic relies on this.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", path=p)
    if p.is_dir():
        raise InputError("is a directory, expected a JSONL file", path=p)
    lines = read_text_file(p, what="JSONL file").split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = load_json(line, path=p, record=lineno)
        except json.JSONDecodeError as exc:
            if tolerate_truncated_tail and lineno == len(lines) and not line.endswith("\n"):
                return
            raise InputError(
                f"invalid JSON ({exc.msg} at column {exc.colno})", path=p, record=lineno
            ) from None
        yield validate_record(obj, model, path=p, record=lineno)


def read_jsonl(path: str | Path, model: type[M], *, allow_empty: bool = False, **kwargs: Any) -> list[M]:
    """All records of a JSON Lines file; an empty file is an error unless `allow_empty`."""
    records = list(iter_jsonl(path, model, **kwargs))
    if not records and not allow_empty:
        raise InputError("file holds no records", path=path)
    return records


class UnsavableRecord(ValueError):
    """A record holds a value strict JSON cannot hold (inf, NaN, a lone surrogate, nesting past
    `diaforge.hygiene.MAX_DEPTH`). `field` names where; nothing was written."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"field {field!r}: {reason}")


def dump_record(record: BaseModel | dict[str, Any]) -> str:
    """One record as a single JSON line (no trailing newline). Raises `UnsavableRecord` instead
    of writing `Infinity`, or `null` for inf (what pydantic's JSON mode does), or crashing on a
    lone surrogate."""
    raw = record.model_dump() if isinstance(record, BaseModel) else record
    problem = json_problem(raw, max_depth=MAX_DEPTH + 16)
    if problem is not None:
        raise UnsavableRecord(*problem)
    obj = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write records atomically (temporary file, then rename); returns the count written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(dump_record(rec) + "\n")
                n += 1
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        # Nothing half-written: the old file (if any) stays as it was.
        tmp.unlink(missing_ok=True)
        raise
    return n


class JsonlAppender:
    """Append records durably, one whole line per `write` call (flush + fsync), so a crash can
    leave at most one truncated last line, which `iter_jsonl(tolerate_truncated_tail=True)` skips.

    If the file ends in a truncated line when opened, that fragment is cut off first.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _drop_truncated_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        """Append one record; an `UnsavableRecord` writes nothing."""
        self._fh.write(dump_record(record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_truncated_tail(path: Path) -> None:
    """Cut a last line that a crash left unfinished; a complete last record that only lacks its
    newline (a file edited by hand, another tool's writer) is kept and given its newline."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1  # 0 when the only line is truncated
    try:
        json.loads(data[cut:].decode("utf-8"))
        complete = True
    except (ValueError, RecursionError):
        complete = False
    with path.open("r+b") as fh:
        if complete:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(cut)


def load_dialogues(path: str | Path, **kwargs: Any) -> list[Dialogue]:
    return read_jsonl(path, Dialogue, **kwargs)


def save_dialogues(path: str | Path, dialogues: Iterable[Dialogue]) -> int:
    return write_jsonl(path, dialogues)
