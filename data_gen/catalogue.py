"""Load a tool catalogue from the formats people already have, and save it in ours.

Supported inputs, detected from the content (pass `format=` to force one):

* ``openai``: OpenAI function specs, as a JSON list, a ``{"tools": [...]}`` object or JSON Lines.
  Each record is ``{"type": "function", "function": {"name", "description", "parameters"}}`` or
  the bare ``{"name", "description", "parameters"}``. This also reads BFCL's function docs
  (``"type": "dict"`` parameters, ``"float"`` types).
* ``toolkit``: our own format, written by `save_catalogue`: bare records plus ``metadata``.
* ``paper``: the DiaFORGE paper's maps, where a tool's ``parameters`` (or ``params``) is a flat
  ``{param: {"type", "description", "required": true|false}}`` map, either per record or as a
  whole file ``{tool_name: {"description", "parameters"/"params"}}``.
* ``openapi``: an OpenAPI 3 document (JSON, or YAML for ``.yaml``/``.yml``): one tool per
  operation, arguments from its path/query/header/cookie parameters and JSON request body.

Every tool ends up as a `Tool` whose ``parameters`` is a JSON Schema object with normalised
types (``dict``->``object``, ``float``->``number``, ``tuple``->``array``, ...).

Bad input raises `InputError`, one line that names the file, the record and the field. Records
are named by line number in JSON Lines (``line 3``), by position in a JSON list or map counting
from 1 (``record 3``, plus the tool name once known) and by operation in OpenAPI
(``record GET /orders/{order_id}``). With ``strict=False`` invalid records are skipped and
listed in `LoadReport.skipped`; valid ones are never dropped.
"""

from __future__ import annotations

import copy
import datetime as _dt
import difflib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from data_gen.errors import InputError
from data_gen.hygiene import MAX_DEPTH, json_problem, load_yaml
from data_gen.schema import Tool, normalise_type

__all__ = [
    "FORMATS",
    "Catalogue",
    "LoadReport",
    "load_catalogue",
    "save_catalogue",
    "tool_from_record",
    "tools_from_openapi",
]

logger = logging.getLogger(__name__)

FORMATS = ("openai", "paper", "openapi", "toolkit")

_YAML_SUFFIXES = {".yaml", ".yml"}
_JSONL_SUFFIXES = {".jsonl", ".ndjson"}
_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_PARAM_LOCATIONS = ("path", "query", "header", "cookie")
# Keywords that may sit at the top of a JSON Schema object; a map made only of these is a
# schema, not a paper-style `{param: spec}` map.
_SCHEMA_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "$defs",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$ref",
    "items",
}
# Annotations that may sit next to them.
_SCHEMA_ANNOTATIONS = {
    "description",
    "title",
    "$schema",
    "$id",
    "$comment",
    "examples",
    "default",
    "const",
    "enum",
    "nullable",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "dependentRequired",
    "unevaluatedProperties",
}


# --------------------------------------------------------------------------------------------
# Public results
# --------------------------------------------------------------------------------------------


@dataclass
class LoadReport:
    """What `load_catalogue` read: the file, the detected format and what was kept or skipped."""

    path: str
    format: str
    """One of `FORMATS`."""
    records: int
    """Records seen (JSON Lines lines, list entries, map entries or OpenAPI operations)."""
    loaded: int
    """Tools loaded."""
    skipped: list[str] = field(default_factory=list)
    """One line per skipped record, naming the record, the field and the problem (non-strict only)."""

    def summary(self) -> str:
        """E.g. ``loaded 412 tools from cat.json (openai format); skipped 2 invalid records``."""
        text = f"loaded {_plural(self.loaded, 'tool')} from {self.path} ({self.format} format)"
        if self.skipped:
            text += f"; skipped {_plural(len(self.skipped), 'invalid record')}"
        return text


@dataclass
class Catalogue:
    """The tools of one catalogue, in file order, with the report of how they were loaded."""

    tools: list[Tool]
    report: LoadReport | None = None
    by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        if self.report is None:
            self.report = LoadReport(
                path="<memory>", format="toolkit", records=len(self.tools), loaded=len(self.tools)
            )
        self.by_name = {}
        for tool in self.tools:
            if tool.name in self.by_name:
                raise ValueError(f"duplicate tool name {tool.name!r} in catalogue")
            self.by_name[tool.name] = tool

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __contains__(self, item: object) -> bool:
        name = item.name if isinstance(item, Tool) else item
        return name in self.by_name

    def names(self) -> list[str]:
        """Tool names, in file order."""
        return [t.name for t in self.tools]

    def get(self, name: str) -> Tool:
        """The tool called `name`; `KeyError` naming the catalogue and the closest names if absent."""
        try:
            return self.by_name[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self.by_name), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            source = self.report.path if self.report else "<memory>"
            raise KeyError(
                f"no tool named {name!r} in catalogue {source} ({_plural(len(self), 'tool')}){hint}"
            ) from None

    def split(self, split: str) -> Catalogue:
        """The tools whose ``metadata["split"]`` equals `split` (e.g. ``train``, ``test``).

        Raises `InputError` listing the splits present when no tool belongs to `split`.
        """
        tools = [t for t in self.tools if t.metadata.get("split") == split]
        if not tools:
            present = sorted({str(t.metadata["split"]) for t in self.tools if "split" in t.metadata})
            have = f"splits present: {', '.join(present)}" if present else "no tool has a metadata 'split'"
            raise InputError(
                f"no tools in split {split!r} ({have})",
                path=self.report.path if self.report else None,
            )
        return Catalogue(tools=tools, report=self.report)


# --------------------------------------------------------------------------------------------
# Internals: errors with a field, record labels, the collector
# --------------------------------------------------------------------------------------------


class _FieldError(Exception):
    """A problem inside one record; the collector adds the file and the record."""

    def __init__(self, field: str | None, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.name = name


class _Label(str):
    """A record label rendered without quotes by `InputError` (``record 3``, not ``record '3'``)."""

    def __repr__(self) -> str:
        return str(self)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _where(record: int | str) -> str:
    """How `InputError` renders a record position, for messages that point at another record."""
    return f"line {record}" if isinstance(record, int) else f"record {record!r}"


def _with_name(position: int | str | None, name: str | None) -> int | str | None:
    """Add the tool name to a position label once it is known (line numbers stay numbers)."""
    if name is None or isinstance(position, int):
        return position
    if position is None:
        return _Label(repr(name))
    return _Label(f"{position} ({name!r})")


@dataclass
class _Entry:
    position: int | str
    """Line number (int) or a `_Label` such as ``3`` or ``GET /orders``."""
    build: Callable[[], tuple[Tool, str | None, str]]
    """Returns (tool, the field its name came from, the record's format)."""


def _collect(
    entries: Iterable[_Entry],
    *,
    path: str,
    fmt: str | None,
    strict: bool,
    empty: str = "the catalogue holds no records",
) -> Catalogue:
    tools: list[Tool] = []
    first_at: dict[str, int | str] = {}
    skipped: list[str] = []
    first_problem: str | None = None
    kinds: set[str] = set()
    records = 0
    for entry in entries:
        records += 1
        try:
            tool, name_field, kind = entry.build()
            if tool.name in first_at:
                raise _FieldError(
                    name_field,
                    f"duplicate tool name {tool.name!r} (first at {_where(first_at[tool.name])})",
                    name=tool.name,
                )
        except _FieldError as exc:
            record = _with_name(entry.position, exc.name)
            message = _one_line(exc.message)
            if strict:
                n = len(tools)
                message += (
                    f" ({_plural(n, 'valid tool')} read before this record; "
                    "fix it or pass strict=False to skip invalid records)"
                )
                raise InputError(message, path=path, record=record, field=exc.field) from None
            skipped.append(str(InputError(message, path=path, record=record, field=exc.field)))
            if first_problem is None:
                first_problem = str(InputError(message, record=record, field=exc.field))
            continue
        first_at[tool.name] = entry.position
        kinds.add(kind)
        tools.append(tool)
    if not records:
        raise InputError(f"no tools found: {empty}", path=path)
    if not tools:
        raise InputError(
            f"no tools found: all {_plural(records, 'record')} are invalid (first: {first_problem})",
            path=path,
        )
    if fmt is None:
        fmt = "paper" if "paper" in kinds else "toolkit" if kinds == {"toolkit"} else "openai"
    report = LoadReport(path=path, format=fmt, records=records, loaded=len(tools), skipped=skipped)
    if skipped:
        logger.warning("%s", report.summary())
    return Catalogue(tools=tools, report=report)


def _make_tool(
    *,
    name: Any,
    description: Any,
    parameters: dict[str, Any],
    metadata: Any,
    fields: dict[str, str],
) -> Tool:
    """Build a `Tool`, turning every validation problem into a `_FieldError` naming the field.

    `fields` maps the `Tool` field names (name, description, parameters) to where they came from
    in the record (e.g. ``function.name``), for the error message.
    """
    if not isinstance(name, str):
        raise _FieldError(fields["name"], f"tool name must be a string, got {type(name).__name__} {name!r}")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise _FieldError(
            fields["description"],
            f"description must be a string, got {type(description).__name__}",
            name=name,
        )
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _FieldError("metadata", f"metadata must be an object, got {type(metadata).__name__}", name=name)
    try:
        return Tool(name=name, description=description, parameters=parameters, metadata=metadata)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ())]
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        where = loc[0] if loc else None
        fld = fields.get(where, where) if where else None
        raise _FieldError(fld, msg, name=name if where != "name" else None) from None


# --------------------------------------------------------------------------------------------
# Parameter schemas: checks that name the exact field
# --------------------------------------------------------------------------------------------


def _check_property(spec: Any, fld: str, *, name: str | None) -> None:
    """The checks `normalise_property` makes, raising `_FieldError` with the field's full path."""
    if not isinstance(spec, dict):
        raise _FieldError(fld, f"a parameter schema must be an object, got {type(spec).__name__}", name=name)
    raw = spec.get("type")
    for t in raw if isinstance(raw, list) else [raw]:
        try:
            normalise_type(t)
        except ValueError as exc:
            raise _FieldError(f"{fld}.type", str(exc), name=name) from None
    if "enum" in spec and not isinstance(spec["enum"], list):
        raise _FieldError(f"{fld}.enum", "enum must be a list", name=name)
    if isinstance(spec.get("items"), dict):
        _check_property(spec["items"], f"{fld}.items", name=name)
    if isinstance(spec.get("properties"), dict):
        for key, sub in spec["properties"].items():
            _check_property(sub, f"{fld}.properties.{key}", name=name)


def _check_schema(params: Any, fld: str, *, name: str | None) -> dict[str, Any]:
    """Check a JSON Schema `parameters` object the way `normalise_parameters` will, field by field."""
    if params is None:
        return {"type": "object", "properties": {}, "required": []}
    if not isinstance(params, dict):
        raise _FieldError(fld, f"parameters must be an object, got {type(params).__name__}", name=name)
    kind = params.get("type", "object")
    if kind not in ("object", "dict"):
        raise _FieldError(f"{fld}.type", f"parameters.type must be 'object', got {kind!r}", name=name)
    if "type" not in params and "properties" not in params:
        stray = [k for k in params if k not in _SCHEMA_KEYWORDS | _SCHEMA_ANNOTATIONS]
        if stray:
            raise _FieldError(
                f"{fld}.{stray[0]}",
                f"unexpected key {stray[0]!r}: parameters must be a JSON Schema object "
                "(type, properties, required) or a {param: {type, description, required}} map",
                name=name,
            )
    props = params.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise _FieldError(
            f"{fld}.properties", f"properties must be an object, got {type(props).__name__}", name=name
        )
    for key, spec in props.items():
        _check_property(spec, f"{fld}.properties.{key}", name=name)
    required = params.get("required")
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise _FieldError(f"{fld}.required", "required must be a list of parameter names", name=name)
    unknown = [r for r in required if r not in props]
    if unknown:
        raise _FieldError(
            f"{fld}.required", f"required names unknown parameters: {', '.join(unknown)}", name=name
        )
    flagged = {k: v["required"] for k, v in props.items() if isinstance(v.get("required"), bool)}
    if not flagged:
        return params
    # Hand-written specs often flag `"required": true` on the property itself (Swagger 2 style),
    # which JSON Schema ignores: move the flags into the `required` list.
    return {
        **params,
        "properties": {
            k: {a: b for a, b in v.items() if not (k in flagged and a == "required")}
            for k, v in props.items()
        },
        "required": list(dict.fromkeys([*required, *(k for k, on in flagged.items() if on)])),
    }


def _looks_like_paper_map(params: Any) -> bool:
    """True for the paper's flat ``{param: {"type", "description", "required"}}`` maps."""
    if not isinstance(params, dict) or not params or "properties" in params:
        return False
    if not all(isinstance(v, dict) for v in params.values()):
        return False
    flagged = any(isinstance(v.get("required"), bool) for v in params.values())
    return flagged or not set(params) <= _SCHEMA_KEYWORDS


def _paper_to_schema(params: Any, fld: str, *, name: str | None) -> dict[str, Any]:
    """Convert a paper-style flat map into a JSON Schema object (required = the flagged keys)."""
    if params is None:
        return {"type": "object", "properties": {}, "required": []}
    if not isinstance(params, dict):
        raise _FieldError(
            fld, f"parameters must be a {{param: spec}} object, got {type(params).__name__}", name=name
        )
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in params.items():
        if not isinstance(spec, dict):
            raise _FieldError(
                f"{fld}.{key}",
                f"a parameter must be an object with type, description and required, got {type(spec).__name__}",
                name=name,
            )
        flag = spec.get("required", False)
        if isinstance(flag, list) and isinstance(spec.get("properties"), dict):
            flag = None  # an object parameter's own JSON Schema `required` list: keep it
        elif not isinstance(flag, bool):
            raise _FieldError(
                f"{fld}.{key}.required", f"required must be true or false, got {flag!r}", name=name
            )
        _check_property(spec, f"{fld}.{key}", name=name)
        properties[key] = spec if flag is None else {k: v for k, v in spec.items() if k != "required"}
        if flag:
            required.append(key)
    return {"type": "object", "properties": properties, "required": required}


# --------------------------------------------------------------------------------------------
# One record (OpenAI / BFCL / toolkit / paper)
# --------------------------------------------------------------------------------------------


def _build_record(obj: Any, mode: str | None) -> tuple[Tool, str | None, str]:
    """`mode`: None (detect), "paper" (flat maps) or "schema" (JSON Schema parameters)."""
    if not isinstance(obj, dict):
        raise _FieldError(None, f"expected a JSON object for a tool, got {type(obj).__name__}")
    body, prefix, wrapped = obj, "", False
    if "function" in obj:
        kind = obj.get("type", "function")
        if kind != "function":
            raise _FieldError("type", f"tool type must be 'function', got {kind!r}")
        body, prefix, wrapped = obj["function"], "function.", True
        if not isinstance(body, dict):
            raise _FieldError("function", f"function must be an object, got {type(body).__name__}")
    if "name" not in body:
        raise _FieldError(f"{prefix}name", "tool has no name")
    name = body["name"]
    if not isinstance(name, str):
        raise _FieldError(f"{prefix}name", f"tool name must be a string, got {type(name).__name__} {name!r}")
    if "parameters" in body and "params" in body:
        raise _FieldError(f"{prefix}params", "record has both 'parameters' and 'params'; keep one", name=name)
    key = "params" if "params" in body else "parameters"
    raw = body.get(key)
    fld = f"{prefix}{key}"
    paper = mode == "paper" or (
        mode is None
        and (
            _looks_like_paper_map(raw)
            or (key == "params" and isinstance(raw, dict) and "properties" not in raw)
        )
    )
    if paper:
        params = _paper_to_schema(raw, fld, name=name)
    else:
        if mode == "schema" and _looks_like_paper_map(raw):
            raise _FieldError(
                fld,
                "parameters looks like a paper-style {param: {type, description, required}} map, "
                "not a JSON Schema object; pass format='paper' or leave format unset",
                name=name,
            )
        params = _check_schema(raw, fld, name=name)
    metadata = obj.get("metadata", body.get("metadata"))
    tool = _make_tool(
        name=name,
        description=body.get("description"),
        parameters=params,
        metadata=metadata,
        fields={"name": f"{prefix}name", "description": f"{prefix}description", "parameters": fld},
    )
    if paper:
        kind = "paper"
    elif not wrapped and "metadata" in obj:
        kind = "toolkit"
    else:
        kind = "openai"
    return tool, f"{prefix}name", kind


def tool_from_record(
    obj: dict[str, Any], *, path: str | Path | None = None, record: int | str | None = None
) -> Tool:
    """One tool from one record in any supported shape (OpenAI wrapped or bare, BFCL, toolkit,
    paper map). Raises `InputError` naming `path`, `record` and the field."""
    try:
        return _build_record(obj, None)[0]
    except _FieldError as exc:
        raise InputError(
            _one_line(exc.message), path=path, record=_with_name(record, exc.name), field=exc.field
        ) from None


# --------------------------------------------------------------------------------------------
# OpenAPI 3
# --------------------------------------------------------------------------------------------


class _Resolver:
    """Resolves local `$ref`s (``#/components/...``) recursively, with a cycle guard."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        # Fully resolved targets that did not depend on the reference stack (no recursion stub
        # inside), so that schemas shared many times are expanded once.
        self._done: dict[str, Any] = {}
        self._stubs = 0

    def lookup(self, ref: Any, fld: str) -> Any:
        if not isinstance(ref, str):
            raise _FieldError(fld, f"$ref must be a string, got {type(ref).__name__}")
        if not ref.startswith("#"):
            raise _FieldError(fld, f"only local $refs ('#/...') are supported, got {ref!r}")
        node: Any = self.doc
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise _FieldError(fld, f"unresolved $ref {ref!r}")
        return node

    def deref(self, node: Any, fld: str, stack: tuple[str, ...] = ()) -> Any:
        """Follow `$ref`s at the top of `node` only (parameters, request bodies)."""
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in stack:
                raise _FieldError(f"{fld}.$ref", f"$ref cycle through {ref!r}")
            stack = (*stack, ref)
            target = self.lookup(ref, f"{fld}.$ref")
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if isinstance(target, dict) else target
        return node

    def resolve(self, node: Any, fld: str, stack: tuple[str, ...] = ()) -> Any:
        """A copy of `node` with every `$ref` replaced by its target; a recursive schema stops at
        its second occurrence as an object whose description names the reference."""
        if isinstance(node, list):
            return [self.resolve(v, f"{fld}[{i}]", stack) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            siblings = {k: self.resolve(v, f"{fld}.{k}", stack) for k, v in node.items() if k != "$ref"}
            if ref in stack:
                target = self.lookup(ref, f"{fld}.$ref")
                kind = target.get("type") if isinstance(target, dict) else None
                stub: dict[str, Any] = {"description": f"(recursive: same schema as {ref})"}
                if isinstance(kind, str):
                    stub["type"] = kind
                self._stubs += 1
                return {**stub, **siblings}
            if isinstance(ref, str) and ref in self._done:
                target = copy.deepcopy(self._done[ref])
            else:
                stubs = self._stubs
                target = self.resolve(self.lookup(ref, f"{fld}.$ref"), fld, (*stack, ref))
                if self._stubs == stubs:
                    self._done[ref] = copy.deepcopy(target)
            return {**target, **siblings} if isinstance(target, dict) else target
        return {k: self.resolve(v, f"{fld}.{k}", stack) for k, v in node.items()}


def _snake(text: str) -> str:
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def _derived_name(method: str, route: str) -> str:
    """``get /orders/{order_id}/items`` -> ``get_orders_by_order_id_items``."""
    parts = [method.lower()]
    for segment in route.split("/"):
        if not segment:
            continue
        match = re.fullmatch(r"\{(.+)\}", segment)
        parts.append(f"by_{_snake(match.group(1))}" if match else _snake(segment))
    return "_".join(p for p in parts if p)


def _join_text(*texts: Any) -> str:
    parts = [t.strip() for t in texts if isinstance(t, str) and t.strip()]
    if len(parts) == 2 and parts[1].startswith(parts[0].rstrip(".")):
        parts = parts[1:]
    if len(parts) == 2:
        first = parts[0] if parts[0][-1] in ".!?:" else parts[0] + "."
        return f"{first} {parts[1]}"
    return parts[0] if parts else ""


def _object_parts(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str]] | None:
    """(properties, required) of an object schema, merging `allOf` members; None if not an object."""
    props: dict[str, Any] = {}
    required: list[str] = []
    found = False
    members = schema.get("allOf")
    for member in members if isinstance(members, list) else []:
        if isinstance(member, dict):
            sub = _object_parts(member)
            if sub is not None:
                found = True
                props.update(sub[0])
                required.extend(sub[1])
    if isinstance(schema.get("properties"), dict):
        found = True
        props.update(schema["properties"])
    if schema.get("type") == "object":
        found = True
    if isinstance(schema.get("required"), list):
        required.extend(r for r in schema["required"] if isinstance(r, str))
    return (props, list(dict.fromkeys(required))) if found else None


def _json_media(content: dict[str, Any]) -> str | None:
    if "application/json" in content:
        return "application/json"
    return next((k for k in content if re.fullmatch(r"application/([\w.-]+\+)?json(;.*)?", str(k))), None)


def _openapi_operation(
    doc: dict[str, Any],
    resolver: _Resolver,
    route: str,
    item: dict[str, Any],
    method: str,
    op: Any,
) -> tuple[Tool, str | None, str]:
    if not isinstance(op, dict):
        raise _FieldError(None, f"operation must be an object, got {type(op).__name__}")
    op_id = op.get("operationId")
    if op_id is not None and (not isinstance(op_id, str) or not op_id.strip()):
        raise _FieldError("operationId", f"operationId must be a non-empty string, got {op_id!r}")
    name = op_id or _derived_name(method, route)

    # Parameters: path-level first, overridden by operation-level ones with the same (name, in).
    merged: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
    for source, fld_prefix in (
        (item.get("parameters"), f"paths.{route}.parameters"),
        (op.get("parameters"), "parameters"),
    ):
        if source is None:
            continue
        if not isinstance(source, list):
            raise _FieldError(
                fld_prefix, f"parameters must be a list, got {type(source).__name__}", name=name
            )
        for i, raw in enumerate(source):
            fld = f"{fld_prefix}[{i}]"
            param = resolver.deref(raw, fld)
            if not isinstance(param, dict):
                raise _FieldError(
                    fld, f"a parameter must be an object, got {type(param).__name__}", name=name
                )
            pname, loc = param.get("name"), param.get("in")
            if not isinstance(pname, str) or not pname:
                raise _FieldError(f"{fld}.name", "parameter has no name", name=name)
            if loc not in _PARAM_LOCATIONS:
                raise _FieldError(
                    f"{fld}.in", f"'in' must be one of {', '.join(_PARAM_LOCATIONS)}, got {loc!r}", name=name
                )
            merged[(pname, loc)] = (param, fld)

    properties: dict[str, Any] = {}
    required: list[str] = []
    bindings: dict[str, dict[str, str]] = {}
    for (pname, loc), (param, fld) in merged.items():
        if "schema" in param:
            schema, schema_fld = resolver.resolve(param["schema"], f"{fld}.schema"), f"{fld}.schema"
        elif isinstance(param.get("content"), dict) and param["content"]:
            media, media_obj = next(iter(param["content"].items()))
            schema_fld = f"{fld}.content.{media}.schema"
            schema = resolver.resolve(
                media_obj.get("schema", {}) if isinstance(media_obj, dict) else {}, schema_fld
            )
        else:
            schema, schema_fld = {}, fld
        if not isinstance(schema, dict):
            raise _FieldError(schema_fld, f"schema must be an object, got {type(schema).__name__}", name=name)
        spec = dict(schema)
        if isinstance(param.get("description"), str) and param["description"].strip():
            spec["description"] = param["description"].strip()
        key = pname if pname not in properties else f"{loc}_{pname}"
        _check_property(spec, schema_fld, name=name)
        properties[key] = spec
        bindings[key] = {"in": loc, "name": pname}
        if param.get("required") is True or loc == "path":
            required.append(key)

    raw_body = op.get("requestBody")
    if raw_body is not None:
        body = resolver.deref(raw_body, "requestBody")
        if not isinstance(body, dict):
            raise _FieldError(
                "requestBody", f"requestBody must be an object, got {type(body).__name__}", name=name
            )
        content = body.get("content") or {}
        if not isinstance(content, dict):
            raise _FieldError("requestBody.content", "content must be an object", name=name)
        media = _json_media(content)
        if media is not None:
            body_fld = f"requestBody.content.{media}.schema"
            media_obj = content[media]
            schema = resolver.resolve(
                media_obj.get("schema", {}) if isinstance(media_obj, dict) else {}, body_fld
            )
            if not isinstance(schema, dict):
                raise _FieldError(
                    body_fld, f"schema must be an object, got {type(schema).__name__}", name=name
                )
            body_required = body.get("required") is True
            parts = _object_parts(schema)
            if parts is None or not parts[0]:  # an array, scalar or free-form body is one argument
                parts = ({"body": schema}, ["body"])
                prop_fld = {"body": body_fld}
            else:
                prop_fld = {k: f"{body_fld}.properties.{k}" for k in parts[0]}
            body_props, body_req = parts
            unknown = [r for r in body_req if r not in body_props]
            if body_required and unknown:
                raise _FieldError(
                    f"{body_fld}.required",
                    f"required names unknown properties: {', '.join(unknown)}",
                    name=name,
                )
            for pname, spec in body_props.items():
                key = pname
                while key in properties:
                    key = f"body_{key}"
                _check_property(spec, prop_fld[pname], name=name)
                properties[key] = spec
                bindings[key] = {"in": "body", "name": pname}
                if body_required and pname in body_req:
                    required.append(key)

    tags = op.get("tags") or []
    metadata: dict[str, Any] = {
        "source": "openapi",
        "method": method.upper(),
        "path": route,
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
        "bindings": bindings,
    }
    if op_id:
        metadata["operation_id"] = op_id
    if op.get("deprecated") is True:
        metadata["deprecated"] = True
    description = _join_text(op.get("summary"), op.get("description")) or _join_text(
        item.get("summary"), item.get("description")
    )
    tool = _make_tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": properties, "required": list(dict.fromkeys(required))},
        metadata=metadata,
        fields={"name": "operationId", "description": "description", "parameters": "parameters"},
    )
    return tool, "operationId", "openapi"


def _openapi_entries(doc: Any, path: str | None) -> Iterator[_Entry]:
    if not isinstance(doc, dict):
        raise InputError(f"an OpenAPI document must be an object, got {type(doc).__name__}", path=path)
    if "swagger" in doc and "openapi" not in doc:
        raise InputError(
            "Swagger 2.0 documents are not supported; convert to OpenAPI 3 first", path=path, field="swagger"
        )
    version = doc.get("openapi")
    if version is not None and not str(version).startswith("3"):
        raise InputError(f"only OpenAPI 3 is supported, got version {version!r}", path=path, field="openapi")
    paths = doc.get("paths")
    if paths is None:
        raise InputError("no tools found: the OpenAPI document has no 'paths'", path=path, field="paths")
    if not isinstance(paths, dict):
        raise InputError(f"paths must be an object, got {type(paths).__name__}", path=path, field="paths")
    resolver = _Resolver(doc)
    for route, raw_item in paths.items():
        route = str(route)
        try:
            item = resolver.deref(raw_item, f"paths.{route}")
        except _FieldError as exc:
            raise InputError(exc.message, path=path, field=exc.field) from None
        if not isinstance(item, dict):
            raise InputError(
                f"a path item must be an object, got {type(item).__name__}", path=path, field=f"paths.{route}"
            )
        for method in _HTTP_METHODS:
            if method in item:
                op = item[method]

                def build(route=route, item=item, method=method, op=op) -> tuple[Tool, str | None, str]:
                    return _openapi_operation(doc, resolver, route, item, method, op)

                yield _Entry(position=_Label(f"{method.upper()} {route}"), build=build)


def tools_from_openapi(doc: dict[str, Any], *, path: str | Path | None = None) -> list[Tool]:
    """One `Tool` per operation of an OpenAPI 3 document (already parsed). Raises `InputError`
    on the first bad operation, and when there are no operations."""
    src = None if path is None else str(path)
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    for entry in _openapi_entries(doc, src):
        try:
            tool = entry.build()[0]
            if tool.name in seen:
                raise _FieldError(
                    "operationId",
                    f"duplicate tool name {tool.name!r} (first at record {seen[tool.name]})",
                    name=tool.name,
                )
        except _FieldError as exc:
            raise InputError(
                _one_line(exc.message), path=src, record=_with_name(entry.position, exc.name), field=exc.field
            ) from None
        seen[tool.name] = str(entry.position)
        tools.append(tool)
    if not tools:
        raise InputError("no tools found: the OpenAPI document has no operations under 'paths'", path=src)
    return tools


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def _read_text(p: Path) -> str:
    if not p.exists():
        raise InputError("no tools found: the file does not exist", path=p)
    if p.is_dir():
        raise InputError("no tools found: this is a directory, expected a catalogue file", path=p)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=p) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=p) from None
    if not text.strip():
        raise InputError("no tools found: the file is empty", path=p)
    return text


def _json_error(exc: json.JSONDecodeError, text: str, path: str) -> InputError:
    hint = "; the file ends early (truncated?)" if exc.pos >= len(text.rstrip()) else ""
    return InputError(f"invalid JSON: {exc.msg} at column {exc.colno}{hint}", path=path, record=exc.lineno)


def _parse_json(text: str, path: str | None = None) -> tuple[Any, list[tuple[str, Any]] | None]:
    """The decoded document and, when it is an object, its top-level (key, value) pairs in order,
    duplicates included (a `{tool_name: spec}` map must not lose a tool silently)."""
    last: list[Any] = [None]

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        last[0] = pairs
        return dict(pairs)

    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except RecursionError:
        raise InputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels", path=path) from None
    problem = json_problem(doc)
    if problem is not None:
        raise InputError(f"invalid JSON: {problem[1]}", path=path, field=problem[0])
    return doc, (last[0] if isinstance(doc, dict) else None)


def _parse_yaml(text: str, path: str) -> Any:
    try:
        doc = load_yaml(text, path=path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        msg = _one_line(f"{context}, {problem}" if context else problem)
        if mark is not None:
            raise InputError(
                f"invalid YAML: {msg} at column {mark.column + 1}", path=path, record=mark.line + 1
            ) from None
        raise InputError(f"invalid YAML: {msg}", path=path) from None
    if doc is None:
        raise InputError("no tools found: the YAML document is empty", path=path)
    return _plain(doc, path)


def _plain(node: Any, path: str, depth: int = 0) -> Any:
    """YAML values as JSON values: string keys, dates as ISO strings."""
    if depth > 200:
        raise InputError("invalid YAML: the document nests too deeply (a recursive anchor?)", path=path)
    if isinstance(node, dict):
        return {str(k): _plain(v, path, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v, path, depth + 1) for v in node]
    if isinstance(node, (_dt.date, _dt.datetime)):
        return node.isoformat()
    return node


def _jsonl_entries(text: str, mode: str | None) -> Iterator[_Entry]:
    # Split on newlines only: JSON strings may hold U+2028 and friends, which `splitlines` splits on.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue

        def build(line: str = line) -> tuple[Tool, str | None, str]:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise _FieldError(None, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            except RecursionError:
                raise _FieldError(None, f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from None
            problem = json_problem(obj)
            if problem is not None:
                raise _FieldError(problem[0], problem[1])
            return _build_record(obj, mode)

        yield _Entry(position=lineno, build=build)


def _list_entries(records: list[Any], mode: str | None) -> Iterator[_Entry]:
    for i, obj in enumerate(records, start=1):
        yield _Entry(position=_Label(str(i)), build=lambda obj=obj: _build_record(obj, mode))


def _map_entries(pairs: list[tuple[str, Any]], mode: str | None) -> Iterator[_Entry]:
    """A `{tool_name: {"description", "parameters"/"params"}}` file."""
    for i, (name, spec) in enumerate(pairs, start=1):

        def build(name: str = name, spec: Any = spec) -> tuple[Tool, str | None, str]:
            if not isinstance(spec, dict):
                raise _FieldError(None, f"a tool must be an object, got {type(spec).__name__}", name=name)
            if "name" in spec and spec["name"] != name:
                raise _FieldError("name", f"name {spec['name']!r} differs from its key {name!r}", name=name)
            try:
                tool = _build_record({**spec, "name": name}, mode)[0]
            except _FieldError as exc:
                exc.name = name
                raise
            return tool, None, "paper"

        yield _Entry(position=_Label(str(i)), build=build)


def _is_single_record(doc: dict[str, Any]) -> bool:
    return "function" in doc or isinstance(doc.get("name"), str)


def load_catalogue(path: str | Path, *, strict: bool = True, format: str | None = None) -> Catalogue:
    """Load the tools of one catalogue file (see the module docstring for the formats).

    Args:
        path: a ``.json``, ``.jsonl`` or ``.yaml``/``.yml`` file.
        strict: the default; raise `InputError` at the first invalid record, saying how many
            valid tools came before it. With ``strict=False``, skip invalid records (and later
            duplicates of a name), list them in ``report.skipped`` and keep every valid tool.
        format: one of `FORMATS` to skip detection; ``None`` detects it from the content.
    """
    p = Path(path)
    src = str(path)
    if format is not None and format not in FORMATS:
        raise InputError(
            f"unknown catalogue format {format!r} (expected one of {', '.join(FORMATS)})", path=src
        )
    text = _read_text(p)
    suffix = p.suffix.lower()
    mode = {"paper": "paper", "openai": "schema", "toolkit": "schema"}.get(format or "")

    if suffix in _JSONL_SUFFIXES and format != "openapi":
        return _collect(_jsonl_entries(text, mode), path=src, fmt=format, strict=strict)

    pairs: list[tuple[str, Any]] | None = None
    if suffix in _YAML_SUFFIXES:
        doc = _parse_yaml(text, src)
    else:
        try:
            doc, pairs = _parse_json(text, src)
        except json.JSONDecodeError as exc:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if re.search(r"^(openapi|swagger)\s*:", text, re.MULTILINE):
                doc = _parse_yaml(text, src)
            elif len(lines) > 1 and format != "openapi" and _parses_as_object(lines[0]):
                return _collect(_jsonl_entries(text, mode), path=src, fmt=format, strict=strict)
            else:
                raise _json_error(exc, text, src) from None

    if format == "openapi" or (
        format is None and isinstance(doc, dict) and ("openapi" in doc or "swagger" in doc)
    ):
        return _collect(
            _openapi_entries(doc, src),
            path=src,
            fmt="openapi",
            strict=strict,
            empty="the OpenAPI document has no operations under 'paths'",
        )

    if isinstance(doc, dict) and isinstance(doc.get("tools", doc.get("functions")), list):
        doc = doc.get("tools", doc.get("functions"))
    if isinstance(doc, list):
        if not doc:
            raise InputError("no tools found: the list of tools is empty", path=src)
        return _collect(_list_entries(doc, mode), path=src, fmt=format, strict=strict)
    if isinstance(doc, dict):
        if not doc:
            raise InputError("no tools found: the document is an empty object", path=src)
        if _is_single_record(doc):
            return _collect(_list_entries([doc], mode), path=src, fmt=format, strict=strict)
        if format in ("openai", "toolkit"):
            raise InputError(
                f"expected a list of tool records or {{'tools': [...]}} for format {format!r}, "
                "got a {tool_name: spec} map; pass format='paper' or leave format unset",
                path=src,
            )
        if all(isinstance(v, dict) for v in doc.values()):
            if pairs is None:
                pairs = list(doc.items())
            return _collect(_map_entries(pairs, mode), path=src, fmt=format or "paper", strict=strict)
    raise InputError(
        "unrecognised catalogue: expected a list of tools, {'tools': [...]}, JSON Lines, "
        f"a {{tool_name: spec}} map or an OpenAPI 3 document, got {type(doc).__name__}",
        path=src,
    )


def _parses_as_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def save_catalogue(tools: Iterable[Tool] | Catalogue, path: str | Path) -> None:
    """Write tools as a JSON list of ``{"name", "description", "parameters", "metadata"}`` (the
    ``toolkit`` format), atomically (temporary file, then rename)."""
    items = [
        {"name": t.name, "description": t.description, "parameters": t.parameters, "metadata": t.metadata}
        for t in tools
    ]
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(items, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)
