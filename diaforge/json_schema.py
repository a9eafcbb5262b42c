"""The JSON Schema of a tool's parameters, every type spelling normalised to its JSON Schema name.

Catalogues spell types as Python, BFCL or OpenAPI do; `normalise_type` maps a spelling (case and
surrounding spaces ignored) to the JSON Schema type and the ``format`` it implies:

========================  ==========  ==============
spelling                  type        format implied
========================  ==========  ==============
str, text                 string
int, long                 integer
float, double, decimal    number
bool                      boolean
dict, map                 object
list, tuple, set          array
none                      null
date                      string      date
datetime, date-time       string      date-time
any, "" (empty)           (none: the ``type`` key is dropped, no constraint)
========================  ==========  ==============

The seven JSON Schema names map to themselves; any other spelling is a `ValueError` naming it. A
list of types (a JSON Schema union) is normalised element by element. `normalise_parameters`
checks a tool's ``parameters`` object (``type: object``, a ``properties`` mapping, a ``required``
list naming only listed properties) and normalises every type in it, through ``items`` and nested
``properties``; `diaforge.schema.Tool` runs it on every tool it is given. `local_ref_target`
follows a local JSON pointer (``#/$defs/Money``) inside a document.
"""

from __future__ import annotations

from typing import Any

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
