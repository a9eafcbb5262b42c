"""OpenAPI 3 documents as tools: one `Tool` per operation (`tools_from_openapi`), and the entries
`diaforge.data_gen.catalogue.load_catalogue` reads from an ``openapi`` catalogue file (`openapi_entries`).

A tool's name is the operation's ``operationId``, or one derived from the method and the route
(``get /orders/{order_id}/items`` -> ``get_orders_by_order_id_items``). Its arguments are the
path/query/header/cookie parameters (path-level ones overridden by operation-level ones with the
same name and location; path parameters are always required) and the properties of a JSON request
body (an array, scalar or free-form body is one ``body`` argument). Local ``$ref``s are resolved,
a recursive schema stopping at its second occurrence. ``metadata`` keeps the method, the route, the
tags and where each argument goes (``bindings``). A bad operation is an `InputError` naming the
operation (``record GET /orders/{order_id}``) and the field.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.json_schema import local_ref_target
from diaforge.schema import Tool
from diaforge.tool_records import (
    FieldError,
    RecordEntry,
    RecordLabel,
    check_property,
    make_tool,
    one_line,
    unknown_key,
    with_name,
)

__all__ = ["openapi_entries", "tools_from_openapi"]

_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
_PARAM_LOCATIONS = ("path", "query", "header", "cookie")


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
            raise FieldError(fld, f"$ref must be a string, got {type(ref).__name__}")
        if not ref.startswith("#"):
            raise FieldError(fld, f"only local $refs ('#/...') are supported, got {ref!r}")
        node = local_ref_target(self.doc, ref)
        if node is None:
            raise FieldError(fld, f"unresolved $ref {ref!r}")
        return node

    def deref(self, node: Any, fld: str, stack: tuple[str, ...] = ()) -> Any:
        """Follow `$ref`s at the top of `node` only (parameters, request bodies)."""
        while isinstance(node, dict) and "$ref" in node:
            ref = node["$ref"]
            if ref in stack:
                raise FieldError(f"{fld}.$ref", f"$ref cycle through {ref!r}")
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


@dataclass
class _Arguments:
    """The arguments of one operation as they are gathered: their JSON Schema properties, which
    are required, and where each one goes in the HTTP request (``metadata["bindings"]``)."""

    name: str
    """The tool's name, for error messages."""
    properties: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    bindings: dict[str, dict[str, str]] = field(default_factory=dict)

    def add(self, key: str, spec: Any, fld: str, *, where: str, source: str, required: bool) -> None:
        """Add argument `key` (request field `source` in `where`), checking `spec` at `fld`."""
        check_property(spec, fld, name=self.name)
        self.properties[key] = spec
        self.bindings[key] = {"in": where, "name": source}
        if required:
            self.required.append(key)


# The fixed fields of an OpenAPI 3 Operation and Parameter object ("x-" extensions are allowed too):
# a typo such as "paramters" would otherwise drop the operation's arguments silently.
_OPERATION_KEYS = frozenset(
    {
        "tags",
        "summary",
        "description",
        "externalDocs",
        "operationId",
        "parameters",
        "requestBody",
        "responses",
        "callbacks",
        "deprecated",
        "security",
        "servers",
    }
)
_PARAMETER_KEYS = frozenset(
    {
        "name",
        "in",
        "description",
        "required",
        "deprecated",
        "allowEmptyValue",
        "style",
        "explode",
        "allowReserved",
        "schema",
        "example",
        "examples",
        "content",
        "$ref",
    }
)


def _merged_parameters(
    resolver: _Resolver, route: str, item: dict[str, Any], op: dict[str, Any], name: str
) -> dict[tuple[str, str], tuple[dict[str, Any], str]]:
    """{(name, in): (parameter, field)}: path-level parameters first, overridden by operation-level
    ones with the same (name, in)."""
    merged: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
    for source, fld_prefix in (
        (item.get("parameters"), f"paths.{route}.parameters"),
        (op.get("parameters"), "parameters"),
    ):
        if source is None:
            continue
        if not isinstance(source, list):
            raise FieldError(fld_prefix, f"parameters must be a list, got {type(source).__name__}", name=name)
        for i, raw in enumerate(source):
            fld = f"{fld_prefix}[{i}]"
            param = resolver.deref(raw, fld)
            if not isinstance(param, dict):
                raise FieldError(fld, f"a parameter must be an object, got {type(param).__name__}", name=name)
            pname, loc = param.get("name"), param.get("in")
            if not isinstance(pname, str) or not pname:
                raise FieldError(f"{fld}.name", "parameter has no name", name=name)
            if loc not in _PARAM_LOCATIONS:
                raise FieldError(
                    f"{fld}.in", f"'in' must be one of {', '.join(_PARAM_LOCATIONS)}, got {loc!r}", name=name
                )
            unknown_key(param, _PARAMETER_KEYS, f"{fld}.", name=name)
            merged[(pname, loc)] = (param, fld)
    return merged


def _parameter_schema(
    resolver: _Resolver, param: dict[str, Any], fld: str, name: str
) -> tuple[dict[str, Any], str]:
    """A parameter's resolved schema (from ``schema`` or its first ``content`` entry) and its field."""
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
        raise FieldError(schema_fld, f"schema must be an object, got {type(schema).__name__}", name=name)
    return schema, schema_fld


def _add_parameters(
    args: _Arguments, resolver: _Resolver, merged: dict[tuple[str, str], tuple[dict[str, Any], str]]
) -> None:
    """One argument per parameter; a name taken twice (in two locations) is prefixed by its location."""
    for (pname, loc), (param, fld) in merged.items():
        schema, schema_fld = _parameter_schema(resolver, param, fld, args.name)
        spec = dict(schema)
        if isinstance(param.get("description"), str) and param["description"].strip():
            spec["description"] = param["description"].strip()
        key = pname if pname not in args.properties else f"{loc}_{pname}"
        required = param.get("required") is True or loc == "path"
        args.add(key, spec, schema_fld, where=loc, source=pname, required=required)


def _body_schema(
    resolver: _Resolver, op: dict[str, Any], name: str
) -> tuple[dict[str, Any], str, bool] | None:
    """The resolved JSON schema of the request body, its field and whether the body is required;
    None without a request body or without a JSON media type."""
    raw_body = op.get("requestBody")
    if raw_body is None:
        return None
    body = resolver.deref(raw_body, "requestBody")
    if not isinstance(body, dict):
        raise FieldError(
            "requestBody", f"requestBody must be an object, got {type(body).__name__}", name=name
        )
    content = body.get("content") or {}
    if not isinstance(content, dict):
        raise FieldError("requestBody.content", "content must be an object", name=name)
    media = _json_media(content)
    if media is None:
        return None
    body_fld = f"requestBody.content.{media}.schema"
    media_obj = content[media]
    schema = resolver.resolve(media_obj.get("schema", {}) if isinstance(media_obj, dict) else {}, body_fld)
    if not isinstance(schema, dict):
        raise FieldError(body_fld, f"schema must be an object, got {type(schema).__name__}", name=name)
    return schema, body_fld, body.get("required") is True


def _add_body(args: _Arguments, resolver: _Resolver, op: dict[str, Any]) -> None:
    """One argument per property of a JSON object body (a name already taken gets ``body_``
    prefixed); an array, scalar or free-form body is one ``body`` argument."""
    found = _body_schema(resolver, op, args.name)
    if found is None:
        return
    schema, body_fld, body_required = found
    parts = _object_parts(schema)
    if parts is None or not parts[0]:
        parts = ({"body": schema}, ["body"])
        prop_fld = {"body": body_fld}
    else:
        prop_fld = {k: f"{body_fld}.properties.{k}" for k in parts[0]}
    body_props, body_req = parts
    unknown = [r for r in body_req if r not in body_props]
    if body_required and unknown:
        raise FieldError(
            f"{body_fld}.required", f"required names unknown properties: {', '.join(unknown)}", name=args.name
        )
    for pname, spec in body_props.items():
        key = pname
        while key in args.properties:
            key = f"body_{key}"
        required = body_required and pname in body_req
        args.add(key, spec, prop_fld[pname], where="body", source=pname, required=required)


def _operation_metadata(
    op: dict[str, Any], method: str, route: str, bindings: dict[str, dict[str, str]]
) -> dict[str, Any]:
    """Where the tool came from: method, route, tags, argument bindings, operationId, deprecation."""
    tags = op.get("tags") or []
    metadata: dict[str, Any] = {
        "source": "openapi",
        "method": method.upper(),
        "path": route,
        "tags": [str(t) for t in tags] if isinstance(tags, list) else [str(tags)],
        "bindings": bindings,
    }
    if op.get("operationId"):
        metadata["operation_id"] = op["operationId"]
    if op.get("deprecated") is True:
        metadata["deprecated"] = True
    return metadata


def _openapi_operation(
    resolver: _Resolver, route: str, item: dict[str, Any], method: str, op: Any
) -> tuple[Tool, str | None, str]:
    """One operation as a tool, with the field its name came from and the record's format."""
    if not isinstance(op, dict):
        raise FieldError(None, f"operation must be an object, got {type(op).__name__}")
    unknown_key(
        op,
        _OPERATION_KEYS,
        "",
        name=op.get("operationId") if isinstance(op.get("operationId"), str) else None,
    )
    op_id = op.get("operationId")
    if op_id is not None and (not isinstance(op_id, str) or not op_id.strip()):
        raise FieldError("operationId", f"operationId must be a non-empty string, got {op_id!r}")
    name = op_id or _derived_name(method, route)
    args = _Arguments(name)
    _add_parameters(args, resolver, _merged_parameters(resolver, route, item, op, name))
    _add_body(args, resolver, op)
    description = _join_text(op.get("summary"), op.get("description")) or _join_text(
        item.get("summary"), item.get("description")
    )
    tool = make_tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": args.properties,
            "required": list(dict.fromkeys(args.required)),
        },
        metadata=_operation_metadata(op, method, route, args.bindings),
        fields={"name": "operationId", "description": "description", "parameters": "parameters"},
    )
    return tool, "operationId", "openapi"


def openapi_entries(doc: Any, path: str | None) -> Iterator[RecordEntry]:
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
        except FieldError as exc:
            raise InputError(exc.message, path=path, field=exc.field) from None
        if not isinstance(item, dict):
            raise InputError(
                f"a path item must be an object, got {type(item).__name__}", path=path, field=f"paths.{route}"
            )
        for method in _HTTP_METHODS:
            if method in item:
                op = item[method]

                def build(route=route, item=item, method=method, op=op) -> tuple[Tool, str | None, str]:
                    return _openapi_operation(resolver, route, item, method, op)

                yield RecordEntry(position=RecordLabel(f"{method.upper()} {route}"), build=build)


def tools_from_openapi(doc: dict[str, Any], *, path: str | Path | None = None) -> list[Tool]:
    """One `Tool` per operation of an OpenAPI 3 document (already parsed). Raises `InputError`
    on the first bad operation, and when there are no operations."""
    src = None if path is None else str(path)
    tools: list[Tool] = []
    seen: dict[str, str] = {}
    for entry in openapi_entries(doc, src):
        try:
            tool = entry.build()[0]
            if tool.name in seen:
                raise FieldError(
                    "operationId",
                    f"duplicate tool name {tool.name!r} (first at record {seen[tool.name]})",
                    name=tool.name,
                )
        except FieldError as exc:
            raise InputError(
                one_line(exc.message), path=src, record=with_name(entry.position, exc.name), field=exc.field
            ) from None
        seen[tool.name] = str(entry.position)
        tools.append(tool)
    if not tools:
        raise InputError("no tools found: the OpenAPI document has no operations under 'paths'", path=src)
    return tools
