"""Tool records in every shape people write them, normalised to one `Tool`: the shared reader
behind catalogue files (`diaforge.data_gen.catalogue`), OpenAPI documents (`diaforge.data_gen.openapi`) and the peer
benchmark importers (`diaforge.eval.peers`).

`tool_from_record` takes one record: an OpenAI function spec (``{"type": "function", "function":
{...}}`` or the bare ``{"name", "description", "parameters"}``, which also covers BFCL's function
docs with ``"type": "dict"`` and ``"float"``), our own ``toolkit`` record (bare plus ``metadata``)
or a paper-style record whose ``parameters``/``params`` is a flat ``{param: {"type",
"description", "required": true|false}}`` map. Types are normalised (``dict``->``object``,
``float``->``number``, ...) and a Swagger-2-style ``"required": true`` on a property moves into the
``required`` list.

The readers of whole files build on the same pieces: `FieldError` (a problem inside one record,
naming the field), `RecordLabel` / `with_name` (how a record is named in a message), `RecordEntry`
(one record not yet built), `make_tool` and `check_property` (validation that names the field), and
`build_record` (one record, also reporting which field named the tool and the record's format).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.json_schema import normalise_type
from diaforge.schema import Tool

__all__ = [
    "FieldError",
    "RecordEntry",
    "RecordLabel",
    "build_record",
    "check_property",
    "make_tool",
    "one_line",
    "tool_from_record",
    "with_name",
]

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

# Keys a catalogue record may hold (`check_record_keys`); any key starting with "x-" (an
# extension, as in OpenAPI) is allowed too. A typo such as "paramters" would otherwise load the
# tool with no parameters at all.
RECORD_KEYS = frozenset({"type", "function", "metadata"})
FUNCTION_KEYS = frozenset(
    {"type", "name", "description", "parameters", "params", "metadata", "strict", "response", "returns"}
)
# The JSON Schema (and OpenAPI schema object) vocabulary of a parameter, plus the paper maps'
# `required: true|false`.
PROPERTY_KEYS = frozenset(
    {
        *_SCHEMA_KEYWORDS,
        *_SCHEMA_ANNOTATIONS,
        "format",
        "pattern",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "example",
        "readOnly",
        "writeOnly",
        "deprecated",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "dependencies",
        "contentMediaType",
        "contentEncoding",
        "discriminator",
        "xml",
        "externalDocs",
    }
)

# --------------------------------------------------------------------------------------------
# Errors with a field, record labels
# --------------------------------------------------------------------------------------------


class FieldError(Exception):
    """A problem inside one record; the collector adds the file and the record."""

    def __init__(self, field: str | None, message: str, *, name: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.name = name


class RecordLabel(str):
    """A record label rendered without quotes by `InputError` (``record 3``, not ``record '3'``)."""

    def __repr__(self) -> str:
        return str(self)


def one_line(text: str) -> str:
    """`text` with every run of whitespace (newlines included) as one space: messages are one line."""
    return " ".join(str(text).split())


def with_name(position: int | str | None, name: str | None) -> int | str | None:
    """Add the tool name to a position label once it is known (line numbers stay numbers)."""
    if name is None or isinstance(position, int):
        return position
    if position is None:
        return RecordLabel(repr(name))
    return RecordLabel(f"{position} ({name!r})")


@dataclass
class RecordEntry:
    """One record of a catalogue file, found but not yet built: building it may fail, and the
    collector decides whether that stops the load or skips the record."""

    position: int | str
    """Line number (int) or a `RecordLabel` such as ``3`` or ``GET /orders``."""
    build: Callable[[], tuple[Tool, str | None, str]]
    """Returns (tool, the field its name came from, the record's format)."""


def make_tool(
    *,
    name: Any,
    description: Any,
    parameters: dict[str, Any],
    metadata: Any,
    fields: dict[str, str],
) -> Tool:
    """Build a `Tool`, turning every validation problem into a `FieldError` naming the field.

    `fields` maps the `Tool` field names (name, description, parameters) to where they came from
    in the record (e.g. ``function.name``), for the error message.
    """
    if not isinstance(name, str):
        raise FieldError(fields["name"], f"tool name must be a string, got {type(name).__name__} {name!r}")
    if description is None:
        description = ""
    if not isinstance(description, str):
        raise FieldError(
            fields["description"],
            f"description must be a string, got {type(description).__name__}",
            name=name,
        )
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise FieldError("metadata", f"metadata must be an object, got {type(metadata).__name__}", name=name)
    try:
        return Tool(name=name, description=description, parameters=parameters, metadata=metadata)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [str(p) for p in err.get("loc", ())]
        msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        where = loc[0] if loc else None
        fld = fields.get(where, where) if where else None
        raise FieldError(fld, msg, name=name if where != "name" else None) from None


# --------------------------------------------------------------------------------------------
# Parameter schemas: checks that name the exact field
# --------------------------------------------------------------------------------------------


def check_property(spec: Any, fld: str, *, name: str | None) -> None:
    """The checks `normalise_property` makes, raising `FieldError` with the field's full path."""
    if not isinstance(spec, dict):
        raise FieldError(fld, f"a parameter schema must be an object, got {type(spec).__name__}", name=name)
    raw = spec.get("type")
    for t in raw if isinstance(raw, list) else [raw]:
        try:
            normalise_type(t)
        except ValueError as exc:
            raise FieldError(f"{fld}.type", str(exc), name=name) from None
    if "enum" in spec and not isinstance(spec["enum"], list):
        raise FieldError(f"{fld}.enum", "enum must be a list", name=name)
    if isinstance(spec.get("items"), dict):
        check_property(spec["items"], f"{fld}.items", name=name)
    if isinstance(spec.get("properties"), dict):
        for key, sub in spec["properties"].items():
            check_property(sub, f"{fld}.properties.{key}", name=name)


def _check_schema(params: Any, fld: str, *, name: str | None) -> dict[str, Any]:
    """Check a JSON Schema `parameters` object the way `normalise_parameters` will, field by field."""
    if params is None:
        return {"type": "object", "properties": {}, "required": []}
    if not isinstance(params, dict):
        raise FieldError(fld, f"parameters must be an object, got {type(params).__name__}", name=name)
    kind = params.get("type", "object")
    if kind not in ("object", "dict"):
        raise FieldError(f"{fld}.type", f"parameters.type must be 'object', got {kind!r}", name=name)
    if "type" not in params and "properties" not in params:
        stray = [k for k in params if k not in _SCHEMA_KEYWORDS | _SCHEMA_ANNOTATIONS]
        if stray:
            raise FieldError(
                f"{fld}.{stray[0]}",
                f"unexpected key {stray[0]!r}: parameters must be a JSON Schema object "
                "(type, properties, required) or a {param: {type, description, required}} map",
                name=name,
            )
    props = params.get("properties")
    if props is None:
        props = {}
    if not isinstance(props, dict):
        raise FieldError(
            f"{fld}.properties", f"properties must be an object, got {type(props).__name__}", name=name
        )
    for key, spec in props.items():
        check_property(spec, f"{fld}.properties.{key}", name=name)
    required = params.get("required")
    if required is None:
        required = []
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise FieldError(f"{fld}.required", "required must be a list of parameter names", name=name)
    unknown = [r for r in required if r not in props]
    if unknown:
        raise FieldError(
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
        raise FieldError(
            fld, f"parameters must be a {{param: spec}} object, got {type(params).__name__}", name=name
        )
    properties: dict[str, Any] = {}
    required: list[str] = []
    for key, spec in params.items():
        if not isinstance(spec, dict):
            raise FieldError(
                f"{fld}.{key}",
                f"a parameter must be an object with type, description and required, got {type(spec).__name__}",
                name=name,
            )
        flag = spec.get("required", False)
        if isinstance(flag, list) and isinstance(spec.get("properties"), dict):
            flag = None  # an object parameter's own JSON Schema `required` list: keep it
        elif not isinstance(flag, bool):
            raise FieldError(
                f"{fld}.{key}.required", f"required must be true or false, got {flag!r}", name=name
            )
        check_property(spec, f"{fld}.{key}", name=name)
        properties[key] = spec if flag is None else {k: v for k, v in spec.items() if k != "required"}
        if flag:
            required.append(key)
    return {"type": "object", "properties": properties, "required": required}


# --------------------------------------------------------------------------------------------
# One record (OpenAI / BFCL / toolkit / paper)
# --------------------------------------------------------------------------------------------


def unknown_key(obj: dict[str, Any], known: frozenset[str], fld: str, *, name: str | None) -> None:
    """`FieldError` for the first key of `obj` that is neither in `known` nor an "x-" extension,
    naming the nearest known key when one is close."""
    import difflib

    for key in obj:
        if isinstance(key, str) and (key in known or key.startswith("x-")):
            continue
        near = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else f" (known keys: {', '.join(sorted(known))})"
        raise FieldError(f"{fld}{key}", f"unknown key {key!r}{hint}", name=name)


def _check_schema_keys(schema: Any, fld: str, *, name: str | None) -> None:
    """Unknown keys anywhere in a JSON Schema parameter (iteratively: properties, items, and the
    schemas of anyOf/oneOf/allOf/not/additionalProperties)."""
    stack = [(schema, fld)]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict):
            continue
        unknown_key(node, PROPERTY_KEYS, f"{where}.", name=name)
        props = node.get("properties")
        if isinstance(props, dict):
            stack += [(sub, f"{where}.properties.{key}") for key, sub in props.items()]
        for key in ("items", "additionalProperties", "not", "if", "then", "else", "contains"):
            if isinstance(node.get(key), dict):
                stack.append((node[key], f"{where}.{key}"))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(node.get(key), list):
                stack += [(sub, f"{where}.{key}[{i}]") for i, sub in enumerate(node[key])]


def check_record_keys(obj: Any, *, paper: bool | None = None) -> None:
    """Refuse (`FieldError`) a key of a catalogue record that no reader knows: at the record,
    in its function, in its parameters and in every parameter's schema. `paper`: the parameters
    are a {param: spec} map (None: detect, as `build_record` does)."""
    if not isinstance(obj, dict):
        return
    name = obj.get("name") if isinstance(obj.get("name"), str) else None
    if "function" in obj:
        unknown_key(obj, RECORD_KEYS, "", name=name)
        body, prefix = obj["function"], "function."
        if not isinstance(body, dict):
            return
        name = body.get("name") if isinstance(body.get("name"), str) else name
    else:
        body, prefix = obj, ""
    unknown_key(body, FUNCTION_KEYS, prefix, name=name)
    key = "params" if "params" in body else "parameters"
    raw = body.get(key)
    if not isinstance(raw, dict):
        return
    if paper is None:
        paper = _looks_like_paper_map(raw) or (key == "params" and "properties" not in raw)
    if paper:
        for param, spec in raw.items():
            _check_schema_keys(spec, f"{prefix}{key}.{param}", name=name)
    else:
        _check_schema_keys(raw, f"{prefix}{key}", name=name)


def build_record(obj: Any, mode: str | None, *, strict_keys: bool = False) -> tuple[Tool, str | None, str]:
    """One record as (tool, the field its name came from, the record's format: ``paper``, ``toolkit``
    or ``openai``); `FieldError` naming the field when it is invalid. `mode`: None (detect), "paper"
    (flat maps) or "schema" (JSON Schema parameters). `strict_keys`: refuse unknown keys
    (`check_record_keys`), as catalogue files do; peer benchmarks' own records are read as they are."""
    if strict_keys:
        check_record_keys(obj, paper=True if mode == "paper" else None)
    if not isinstance(obj, dict):
        raise FieldError(None, f"expected a JSON object for a tool, got {type(obj).__name__}")
    body, prefix, wrapped = obj, "", False
    if "function" in obj:
        kind = obj.get("type", "function")
        if kind != "function":
            raise FieldError("type", f"tool type must be 'function', got {kind!r}")
        body, prefix, wrapped = obj["function"], "function.", True
        if not isinstance(body, dict):
            raise FieldError("function", f"function must be an object, got {type(body).__name__}")
    if "name" not in body:
        raise FieldError(f"{prefix}name", "tool has no name")
    name = body["name"]
    if not isinstance(name, str):
        raise FieldError(f"{prefix}name", f"tool name must be a string, got {type(name).__name__} {name!r}")
    if "parameters" in body and "params" in body:
        raise FieldError(f"{prefix}params", "record has both 'parameters' and 'params'; keep one", name=name)
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
            raise FieldError(
                fld,
                "parameters looks like a paper-style {param: {type, description, required}} map, "
                "not a JSON Schema object; pass format='paper' or leave format unset",
                name=name,
            )
        params = _check_schema(raw, fld, name=name)
    metadata = obj.get("metadata", body.get("metadata"))
    tool = make_tool(
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
        return build_record(obj, None)[0]
    except FieldError as exc:
        raise InputError(
            one_line(exc.message), path=path, record=with_name(record, exc.name), field=exc.field
        ) from None
