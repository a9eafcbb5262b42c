"""Does a value (an argument map) conform to its JSON Schema? Checked with `jsonschema`.

`check_value` and `check_arguments` hand the schema to a `jsonschema` validator of the schema's
own draft (``$schema``; Draft 2020-12 when it names none), so every keyword is honoured:
``anyOf``/``oneOf``/``allOf``/``not``, local ``$ref``s, ``if``/``then``/``else``, ``const``,
``pattern``, ``format``, bounds, lengths, items and properties. Three things sit on top:

* **Catalogue spellings.** Types are canonicalised first (``float`` -> ``number``, ``dict`` ->
  ``object``; an unknown spelling constrains nothing), the draft-4 flag ``exclusiveMinimum: true``
  becomes the bound it qualifies, and a keyword whose value is malformed (``"required": true``
  inside a property, ``"minLength": "3"``) is left out, as a hand-written catalogue means it.
* **Stricter JSON types.** An ``integer`` is an int and not a bool (``3.0`` is not one), a
  ``number`` is finite, and ``multipleOf`` tolerates float rounding (``0.3`` is a multiple of
  ``0.1``), so that what the generator draws is what the checker accepts.
* **Formats.** `jsonschema`'s `FormatChecker` checks ``date``, ``uuid``, ``ipv4`` and ``ipv6``
  without extra packages; ``date-time``, ``time``, ``email`` (which `jsonschema` only checks for an
  ``@``), ``uri`` and ``url`` use this package's checks (`diaforge.data_gen.values.formats`), registered on
  the same checker. Other formats are annotations.

Each problem comes back as one short line a person can act on, naming its place in the value:
``amount: 12 is below minimum 50``, ``items[1]: expected string, got integer 2``,
``"x" matches none of the anyOf options: option 1: expected integer, ...``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import math
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema import FormatChecker
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from diaforge.data_gen.values import formats
from diaforge.json_schema import normalise_type
from diaforge.schema import Tool

# Keywords whose value is a map of schemas, a list of schemas or one schema.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_ONE = (
    "items",
    "additionalItems",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_LEGACY_DRAFTS = (jsonschema.Draft3Validator, jsonschema.Draft4Validator)
# A value failing one of these at some place gets that reason alone there (in this order).
_FIRST_REASONS = ("type", "const", "enum")


# -- small JSON helpers shared with the generator and the extractor ------------------------------


def show(value: Any, limit: int = 60) -> str:
    """`value` as JSON, cut to `limit` characters, for a reason."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_type_of(value: Any) -> str:
    """The JSON type name of a Python value (``integer`` for an int, ``boolean`` for a bool)."""
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_num(x: Any) -> bool:
    """An int or float that is not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def declared_types(spec: dict[str, Any]) -> list[str] | None:
    """The JSON types a spec allows, canonicalised (``float`` -> ``number``); None when it does not
    say or spells a type that constrains nothing (``any``) or is unknown."""
    raw = spec.get("type")
    if raw is None:
        return None
    types = []
    for t in raw if isinstance(raw, list) else [raw]:
        try:
            canonical = normalise_type(t)[0] if isinstance(t, str) else None
        except ValueError:
            canonical = None
        if canonical is None:
            return None
        types.append(canonical)
    return types


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``1 != true``, lists and tuples alike."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if is_num(a) and is_num(b):
        return a == b
    return type(a) is type(b) and a == b


# -- the validator: draft, types, formats, multipleOf ------------------------------------------


def _is_integer(_checker: Any, value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(_checker: Any, value: Any) -> bool:
    return is_num(value) and (isinstance(value, int) or math.isfinite(value))


def _is_array(_checker: Any, value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _multiple_of(validator: Validator, step: Any, value: Any, _schema: Any) -> Iterable[ValidationError]:
    """``multipleOf`` within float rounding (``0.3`` is a multiple of ``0.1``)."""
    if not validator.is_type(value, "number") or not is_num(step) or step <= 0:
        return
    q = value / step
    if abs(q - round(q)) > 1e-9 * max(1.0, abs(q)):
        yield ValidationError(f"{value!r} is not a multiple of {step!r}")


def _on_strings(check: Callable[[str], bool]) -> Callable[[Any], bool]:
    return lambda value: not isinstance(value, str) or check(value)


# Ours where jsonschema has no check without extra packages, or only a loose one (email).
_OWN_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": formats.valid_datetime,
    "time": formats.valid_time,
    "email": formats.valid_email,
    "uri": formats.valid_uri,
    "url": formats.valid_uri,
}
# Used where a draft's jsonschema checker lacks them (draft 4 has no date or uuid).
_FALLBACK_FORMATS: dict[str, Callable[[str], bool]] = {
    "date": formats.valid_date,
    "uuid": lambda s: bool(formats.UUID_RE.fullmatch(s)),
    "ipv4": lambda s: _parses(ipaddress.IPv4Address, s),
    "ipv6": lambda s: _parses(ipaddress.IPv6Address, s),
}


def _parses(kind: Callable[[str], Any], s: str) -> bool:
    try:
        kind(s)
    except ValueError:
        return False
    return True


@functools.cache
def _format_checker(draft: type[Validator]) -> FormatChecker:
    """The draft's own checks for the formats in `formats.CHECKED`, ours for the rest."""
    checker = FormatChecker(formats=())
    native = draft.FORMAT_CHECKER.checkers
    for name in sorted(formats.CHECKED):
        if name in native and name not in _OWN_FORMATS:
            checker.checkers[name] = native[name]
        else:
            own = _OWN_FORMATS.get(name) or _FALLBACK_FORMATS[name]
            checker.checks(name)(_on_strings(own))
    return checker


@functools.cache
def _validator_class(draft: type[Validator]) -> type[Validator]:
    """`draft` with the stricter JSON types and the tolerant ``multipleOf``."""
    types = draft.TYPE_CHECKER.redefine_many(
        {"integer": _is_integer, "number": _is_number, "array": _is_array}
    )
    keywords = {"multipleOf": _multiple_of} if "multipleOf" in draft.VALIDATORS else {}
    return jsonschema.validators.extend(draft, validators=keywords, type_checker=types)


# -- catalogue spellings -------------------------------------------------------------------------


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_schema(v: Any) -> bool:
    return isinstance(v, (dict, bool))


def _is_schema_list(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(_is_schema(x) for x in v)


# What each keyword's value must be for the checker to use it; a malformed keyword is left out.
_WELL_FORMED: dict[str, Callable[[Any], bool]] = {
    **dict.fromkeys(
        ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"), _is_count
    ),
    **dict.fromkeys(("minContains", "maxContains"), _is_count),
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), is_num),
    "multipleOf": lambda v: is_num(v) and v > 0,
    **dict.fromkeys(("pattern", "format", "$ref", "$schema"), lambda v: isinstance(v, str)),
    "uniqueItems": lambda v: isinstance(v, bool),
    "required": lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v),
    "enum": lambda v: isinstance(v, list),
    "dependentRequired": lambda v: isinstance(v, dict) and all(isinstance(x, list) for x in v.values()),
    **dict.fromkeys(("allOf", "anyOf", "oneOf", "prefixItems"), _is_schema_list),
    **dict.fromkeys(_SCHEMA_ONE, _is_schema),
    **dict.fromkeys(_SCHEMA_MAPS, lambda v: isinstance(v, dict)),
}
# Draft 3/4 spell exclusive bounds as flags; drafts before 2019-09 also take a list of item schemas.
_LEGACY_WELL_FORMED = {
    **_WELL_FORMED,
    **dict.fromkeys(("exclusiveMinimum", "exclusiveMaximum"), lambda v: isinstance(v, bool)),
}
_LIST_ITEMS_DRAFTS = (*_LEGACY_DRAFTS, jsonschema.Draft6Validator, jsonschema.Draft7Validator)


def _normalise(node: Any, draft: type[Validator]) -> None:
    """In place, through every subschema: canonical types, boolean exclusive bounds rewritten to
    the bound they qualify (drafts after 4), and malformed keywords and map entries left out."""
    if not isinstance(node, dict):
        return
    legacy = issubclass(draft, _LEGACY_DRAFTS)
    if "type" in node:
        types = declared_types(node)
        if types is None:
            node.pop("type")
        else:
            node["type"] = types if isinstance(node["type"], list) else types[0]
    if not legacy:
        for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if node.get(flag) is True and is_num(node.get(bound)):
                node[flag] = node.pop(bound)
    well_formed = _LEGACY_WELL_FORMED if legacy else _WELL_FORMED
    list_items = issubclass(draft, _LIST_ITEMS_DRAFTS) and isinstance(node.get("items"), list)
    for key in [k for k in node if k in well_formed and not well_formed[k](node[k])]:
        if not (key == "items" and list_items and all(_is_schema(x) for x in node[key])):
            del node[key]
    for key in _SCHEMA_MAPS:
        if key in node:
            node[key] = {k: v for k, v in node[key].items() if _is_schema(v)}
            for sub in node[key].values():
                _normalise(sub, draft)
    for key in _SCHEMA_LISTS:
        for sub in node.get(key) if isinstance(node.get(key), list) else ():
            _normalise(sub, draft)
    for key in _SCHEMA_ONE:
        _normalise(node.get(key), draft)


@dataclass(frozen=True)
class _Compiled:
    schema: dict[str, Any]
    validator: Validator
    has_ref: bool  # a `$ref` somewhere: checked in the context of the caller's root schema


@functools.lru_cache(maxsize=4096)
def _compile_key(key: str) -> _Compiled:
    schema = json.loads(key)
    if not isinstance(schema.get("$schema", ""), str):
        del schema["$schema"]
    with warnings.catch_warnings():  # an unknown $schema: the default draft, quietly
        warnings.simplefilter("ignore")
        draft = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    _normalise(schema, draft)
    cls = _validator_class(draft)
    return _Compiled(schema, cls(schema, format_checker=_format_checker(draft)), '"$ref"' in key)


def _compiled(spec: dict[str, Any]) -> _Compiled:
    """The (cached) normalised schema and its validator."""
    return _compile_key(json.dumps(spec, default=repr))


# -- reasons ------------------------------------------------------------------------------------


def _join(path: str, steps: Iterable[Any]) -> str:
    for step in steps:
        path = f"{path}[{step}]" if isinstance(step, int) else (f"{path}.{step}" if path else str(step))
    return path


def _at(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def _reasons(error: ValidationError, validator: Validator, path: str) -> list[tuple[str, str]]:
    """``(place, reason)`` for one jsonschema error; `path` is the place of the checked value."""
    where = _join(path, error.path)
    kw, want, value, schema = error.validator, error.validator_value, error.instance, error.schema
    if kw == "required" and isinstance(value, dict):
        return [(_join(where, [k]), "missing required property") for k in want if k not in value]
    if kw == "additionalProperties" and isinstance(value, dict):
        return [(_join(where, [k]), "unknown property") for k in _extra_keys(value, schema)]
    if kw in ("anyOf", "oneOf", "not"):
        return [(where, _composition_reason(error, validator))]
    return [(where, _keyword_reason(kw, want, value, schema, error.message))]


def _extra_keys(value: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    props = schema.get("properties") or {}
    patterns = list(schema.get("patternProperties") or {})
    return [k for k in value if k not in props and not any(re.search(p, k) for p in patterns)]


def _keyword_reason(kw: str, want: Any, value: Any, schema: dict[str, Any], fallback: str) -> str:
    shown = show(value)
    if kw == "type":
        return f"expected {' or '.join(want if isinstance(want, list) else [want])}, got {json_type_of(value)} {shown}"
    if kw == "minimum" and schema.get("exclusiveMinimum") is True:  # draft 4
        kw = "exclusiveMinimum"
    if kw == "maximum" and schema.get("exclusiveMaximum") is True:
        kw = "exclusiveMaximum"
    n = len(value) if isinstance(value, (list, tuple)) else 0
    reasons: dict[str, Callable[[], str]] = {
        "const": lambda: f"{shown} is not {show(want)}",
        "enum": lambda: f"{shown} is not one of {', '.join(show(m) for m in want)}",
        "pattern": lambda: f"{shown} does not match pattern {want}",
        "format": lambda: f"{shown} is not a valid {formats.LABELS.get(want, want)}",
        "minLength": lambda: f"{shown} is shorter than minLength {want}",
        "maxLength": lambda: f"{shown} is longer than maxLength {want}",
        "minimum": lambda: f"{shown} is below minimum {show(want)}",
        "maximum": lambda: f"{shown} is above maximum {show(want)}",
        "exclusiveMinimum": lambda: (
            f"{shown} must be greater than {show(_bound(want, schema, 'minimum'))} (exclusiveMinimum)"
        ),
        "exclusiveMaximum": lambda: (
            f"{shown} must be less than {show(_bound(want, schema, 'maximum'))} (exclusiveMaximum)"
        ),
        "multipleOf": lambda: f"{shown} is not a multiple of {show(want)}",
        "minItems": lambda: f"has {n} items, fewer than minItems {want}",
        "maxItems": lambda: f"has {n} items, more than maxItems {want}",
        "uniqueItems": lambda: f"item {show(_first_repeat(value))} is repeated but uniqueItems is set",
    }
    return reasons[kw]() if kw in reasons else fallback


def _bound(want: Any, schema: dict[str, Any], bound: str) -> Any:
    return schema.get(bound) if want is True else want


def _first_repeat(items: Any) -> Any:
    for i, item in enumerate(items):
        if any(json_equal(item, other) for other in items[:i]):
            return item
    return None


def _composition_reason(error: ValidationError, validator: Validator) -> str:
    """anyOf/oneOf: the first reason of each option; not: the schema the value must not match."""
    shown, kw, options = show(error.instance), error.validator, error.validator_value
    if kw == "not":
        return f"{shown} must not match {show(options)} (not)"
    if kw == "oneOf" and not error.context:
        matched = [
            str(i + 1) for i, s in enumerate(options) if validator.evolve(schema=s).is_valid(error.instance)
        ]
        return f"{shown} matches oneOf options {' and '.join(matched)}; it must match exactly one"
    first: dict[int, str] = {}
    for sub in error.context or ():
        branch = sub.relative_schema_path[0]
        reasons = _reasons(sub, validator, "")
        if branch not in first and reasons:
            first[branch] = _at(*reasons[0])
    said = "; ".join(f"option {i + 1}: {first[i]}" for i in sorted(first))
    return f"{shown} matches none of the {kw} options: {said}"


def _problems(validator: Validator, value: Any, path: str) -> list[str]:
    """Every way `value` fails the validator's schema, one line each; where a value has the wrong
    type, const or enum member, that alone is said about it."""
    try:
        errors = list(validator.iter_errors(value))
    except re.error as exc:
        return [_at(path, f"the schema's pattern {exc.pattern!r} is not a valid regular expression")]
    except Unresolvable as exc:
        return [
            _at(path, f"the schema's $ref {getattr(exc, 'ref', '')!r} cannot be resolved (only local refs)")
        ]
    found: list[tuple[str, str, str]] = []  # (place, keyword, reason)
    for error in errors:
        found += [(place, error.validator, reason) for place, reason in _reasons(error, validator, path)]
    first: dict[str, tuple[str, str]] = {}
    for place, kw, reason in found:
        if kw in _FIRST_REASONS and (
            place not in first or _FIRST_REASONS.index(kw) < _FIRST_REASONS.index(first[place][0])
        ):
            first[place] = (kw, reason)
    out = [_at(p, r) for p, kw, r in found if p not in first or first[p] == (kw, r)]
    return list(dict.fromkeys(out))


def check_value(value: Any, spec: dict[str, Any], *, root: dict[str, Any] | None = None) -> str | None:
    """None when `value` conforms to the property schema `spec`, else its first problem as one
    short line (``12 is below minimum 50``; nested ones name their place: ``items[1]: ...``,
    ``address.city: ...``). A `spec` that is not a map constrains nothing. A local ``$ref`` in
    `spec` resolves against `root` (the tool's parameters), or against `spec` itself."""
    if not isinstance(spec, dict):
        return None
    compiled = _compiled(spec)
    validator = compiled.validator
    if compiled.has_ref and isinstance(root, dict) and root is not spec:
        validator = _compiled(root).validator.evolve(schema=compiled.schema)
    problems = _problems(validator, value, "")
    return problems[0] if problems else None


def check_arguments(tool: Tool, args: dict[str, Any]) -> list[str]:
    """Every problem of an argument map for `tool`: missing required keys, unknown keys and
    non-conforming values, each as one line (``amount: 12 is below minimum 50``). Each value is
    checked against its property with the tool's whole parameter schema in reach, so a
    ``$ref`` to ``#/$defs/...`` resolves."""
    if not isinstance(args, dict):
        return [f"arguments must be an object, got {json_type_of(args)}"]
    props = tool.properties
    problems = [f"{key}: missing required argument" for key in tool.required if key not in args]
    problems += [
        f"{key}: unknown argument (not a parameter of {tool.name})" for key in args if key not in props
    ]
    root = _compiled(tool.parameters)
    normalised = root.schema.get("properties") if isinstance(root.schema.get("properties"), dict) else {}
    for key, value in args.items():
        if key in props and isinstance(props[key], dict):
            sub = normalised.get(key, {})
            problems += _problems(root.validator.evolve(schema=sub), value, key)
    return problems
