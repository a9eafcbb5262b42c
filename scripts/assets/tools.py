"""Compose the tool catalogue: resolve each tool's parameters against the library, check every
tool and property, and give validated catalogue records grouped by line of business.

The checks are what make the catalogue usable by the typed value generator and the clarifying
dialogues: snake_case unique names, descriptions of one to three sentences with no unfilled
template field, and properties concrete enough to draw a valid value for (a pattern or enum on
every identifier, bounds on every number, a pattern/enum/format/length on every string). A failed
check is an `InputError` naming the source file and the tool.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.schema import Tool
from scripts.assets.sources import LineOfBusiness, ToolSpec, ref_key

NAME_RE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
TYPES = ("string", "integer", "number", "boolean", "array", "object")


def resolve(ref: str | dict[str, Any], library: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A reference's name and its schema: a copy of the library's, with the description (a string
    override) or any fields (a mapping override) replaced."""
    key = ref_key(ref)
    if key not in library:
        raise KeyError(key)
    spec = copy.deepcopy(library[key])
    override = None if isinstance(ref, str) else ref[key]
    if isinstance(override, str):
        spec["description"] = override
    elif isinstance(override, dict):
        spec.update(override)
    return key, spec


def property_problem(key: str, spec: dict[str, Any]) -> str | None:
    """Why a property is not concrete enough for a typed value generator, or None."""
    kind = spec.get("type")
    if not spec.get("description"):
        return "missing description"
    if kind not in TYPES:
        return f"missing or unexpected type {kind!r}"
    if key.endswith("_id") and not ("pattern" in spec or "enum" in spec):
        return "identifiers need a pattern or an enum"
    if kind in ("integer", "number") and not ("minimum" in spec and "maximum" in spec):
        return "numbers need a minimum and a maximum"
    if kind == "string" and not ({"pattern", "enum", "format"} & spec.keys() or "maxLength" in spec):
        return "strings need a pattern, enum, format or maxLength"
    if kind == "array":
        items = spec.get("items")
        if not isinstance(items, dict) or "type" not in items:
            return "arrays need typed items"
    if kind == "object" and not spec.get("properties"):
        return "objects need properties"
    return None


def _sentences(textline: str) -> int:
    return len(re.findall(r"[.!?](\s|$)", textline))


def _description_problem(description: str) -> str | None:
    if "{" in description or "}" in description:
        return "unfilled template field in description"
    if not 1 <= _sentences(description) <= 3:
        return f"description must be 1-3 sentences: {description!r}"
    return None


def _properties(spec: ToolSpec, library: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tool's properties by name, each resolved and checked."""
    props: dict[str, dict[str, Any]] = {}
    for ref in [*spec.required, *spec.optional]:
        try:
            key, schema = resolve(ref, library)
        except KeyError as exc:
            raise InputError(
                f"unknown parameter {exc.args[0]!r}; add it to parameters.json",
                path=spec.source,
                record=spec.name,
            ) from None
        if key in props:
            raise InputError(f"parameter {key} declared twice", path=spec.source, record=spec.name)
        problem = property_problem(key, schema)
        if problem:
            raise InputError(problem, path=spec.source, record=spec.name, field=key)
        props[key] = schema
    return props


def build_tools(
    specs: list[ToolSpec], library: dict[str, dict[str, Any]], lines: list[LineOfBusiness]
) -> list[dict[str, Any]]:
    """Every spec as a validated catalogue record, grouped by line of business (in the order of
    `lines`; within a line, the order of its source file)."""
    split_of = {line.name: line.split for line in lines}
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    family_split: dict[str, str] = {}
    for spec in specs:
        if not NAME_RE.match(spec.name):
            raise InputError("tool name is not snake_case", path=spec.source, record=spec.name)
        if spec.name in names:
            raise InputError("duplicate tool name", path=spec.source, record=spec.name)
        names.add(spec.name)
        problem = _description_problem(spec.description)
        if problem:
            raise InputError(problem, path=spec.source, record=spec.name, field="description")
        props = _properties(spec, library)
        split = split_of[spec.lob]
        if family_split.setdefault(spec.family, split) != split:
            raise InputError(f"family {spec.family} spans both splits", path=spec.source, record=spec.name)
        record = {
            "name": spec.name,
            "description": spec.description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": [ref_key(r) for r in spec.required],
            },
            "metadata": {"line_of_business": spec.lob, "family": spec.family, "split": split},
        }
        try:
            tools.append(Tool.model_validate(record).model_dump(mode="json"))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InputError(first["msg"], path=spec.source, record=spec.name, field=where) from None
    order = [line.name for line in lines]
    tools.sort(key=lambda t: order.index(t["metadata"]["line_of_business"]))
    return tools
