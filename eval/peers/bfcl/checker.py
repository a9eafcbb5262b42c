"""BFCL's AST checker (`check_calls`) on our schema.

A model's calls are checked against the acceptable-value lists like
``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` does for Python (re-implemented here; the
parity test runs both on the same outputs). Per call, in this order, the first failure decides:

1. the name equals the gold function's (``simple_function_checker:wrong_func_name``);
2. every required parameter is present (``:missing_required``);
3. for each given argument, in order: it is documented and has an acceptable-value list
   (``:unexpected_param``); its type matches the documented BFCL type (``string`` str, ``integer``
   int, ``float`` float, an int being accepted and converted, ``boolean`` bool, ``array``/``tuple``
   list with each item of the ``items`` type for at least one list-valued acceptable answer,
   ``dict`` dict, ``any`` str; Python's ``type(x) == T``, so True is not an integer) or else the
   type of the first non-"" acceptable value, in which case the value is a *variable* and compared
   as is (``type_error:simple``, ``type_error:nested``); its value is acceptable: strings after
   `standardize_string` (drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``"``) against the
   acceptable strings (``value_error:string``); lists elementwise with their strings
   standardised (``value_error:list/tuple``); dicts key by key, each value (standardised if a
   string) among that key's acceptable values, every missing key optional (``value_error:dict_*``);
   lists of dicts index by index; anything else by Python equality (``value_error:others``);
4. every acceptable-value list not given holds "" (``:missing_optional``).

Java and JavaScript (``simple_java``, ``simple_javascript``): every value must be a string of
source text (``type_error:java`` / ``type_error:js`` otherwise); it is converted by the
parameter's original type with bfcl-eval's own converters (``eval_checker/ast_eval/
type_convertor``; importing them needs only the wheel) to the Python type of BFCL's Java/JS type
tables, and then checked as above.

Per category: ``parallel*`` categories match calls to answers in any order (greedy, in answer
order, as BFCL does; ``parallel_function_checker_no_order:*``); ``*multiple*`` categories need as
many calls as answers and check the first (``multiple_function_checker:wrong_count``); others need
exactly one call. Irrelevance entries pass when the model makes no call; live_relevance entries
when it makes any call. Our parser's malformed
outputs are kept apart from replies (``malformed`` vs ``no_call``): both fail a category that needs
a call and both pass irrelevance, as a BFCL decode failure does, but the report counts them
separately (BFCL issue #443).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers.bfcl.categories import language_of
from diaforge.schema import Tool, ToolCall

__all__ = ["AstVerdict", "bfcl_type", "check_call", "check_calls", "standardize_string"]

_PY_TYPE = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_BFCL_OF_JSON = {
    "string": "string",
    "integer": "integer",
    "number": "float",
    "boolean": "boolean",
    "array": "array",
    "object": "dict",
    "null": "any",
}
_STRIP = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class AstVerdict:
    """A checker's decision: valid, else the error type (BFCL's taxonomy) and a message."""

    valid: bool
    error_type: str = ""
    error: str = ""


_OK = AstVerdict(True)


def _fail(kind: str, msg: str) -> AstVerdict:
    return AstVerdict(False, kind, msg)


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``"``."""
    return _STRIP.sub("", text).lower().replace("'", '"')


def bfcl_type(spec: Mapping[str, Any] | None) -> str:
    """The BFCL type name of a (normalised) JSON Schema property: number -> float, object -> dict,
    untyped -> any; a union takes its first non-null member."""
    kind = (spec or {}).get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        return "any"
    return _BFCL_OF_JSON.get(kind, str(kind))


def _first_answer_type(acceptable: Sequence[Any]) -> type | None:
    return next((type(a) for a in acceptable if a != ""), None)


def _type_check(
    value: Any, expected: type, nested: type | None, acceptable: Sequence[Any]
) -> tuple[bool, bool]:
    """(type ok, value is a variable). See step 3 of the module docstring."""
    answer_type = _first_answer_type(acceptable)
    variable = answer_type is not None and answer_type is not expected
    if type(value) is expected:
        if nested is None:
            return True, variable
        for option in acceptable:
            if type(option) is not list:  # BFCL lets a non-list option ("" for optional) pass
                return True, variable
            if all(_type_check(item, nested, None, option)[0] for item in value):
                return True, variable
        return False, variable
    if answer_type is not None and type(value) is answer_type:
        return True, True
    return False, variable


def _std(x: Any) -> Any:
    return standardize_string(x) if type(x) is str else x


def _as_items(option: Any) -> list[Any] | None:
    """An acceptable list-option as BFCL iterates it (a string by its characters)."""
    if isinstance(option, (list, str)):
        return [_std(x) for x in option]
    return None


def _dict_ok(value: dict, acceptable: Sequence[Any]) -> bool:
    for option in acceptable:
        if option == "":
            continue
        if not isinstance(option, dict):
            continue
        good = True
        for key, v in value.items():
            if key not in option:
                good = False
                break
            allowed = _as_items(option[key])
            if allowed is None or _std(v) not in allowed:
                good = False
                break
        if good and all(key in value or "" in vals for key, vals in option.items()):
            return True
    return False


def _list_of_dicts_ok(value: list, acceptable: Sequence[Any]) -> bool:
    for option in acceptable:
        if not isinstance(option, (list, str)) or len(option) != len(value):
            continue
        if all(isinstance(v, dict) and _dict_ok(v, [o]) for v, o in zip(value, option, strict=True)):
            return True
    return False


_JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "float": float, "double": float, "long": int,
    "boolean": bool, "char": str, "Array": list, "ArrayList": list, "Set": set, "HashMap": dict,
    "Hashtable": dict, "Queue": list, "Stack": list, "String": str, "any": str,
}  # fmt: skip
_JS_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool, "dict": dict,
    "array": list, "any": str,
}  # fmt: skip
_NESTED = {"java": ("Array", "ArrayList"), "javascript": ("array",)}


def _converter(language: str) -> Callable[..., Any]:
    """bfcl-eval's own string-to-value converter for Java or JavaScript (its
    ``type_convertor`` modules; they import nothing heavy)."""
    try:
        if language == "java":
            from bfcl_eval.eval_checker.ast_eval.type_convertor.java_type_converter import (
                java_type_converter as convert,
            )
        else:
            from bfcl_eval.eval_checker.ast_eval.type_convertor.js_type_converter import (
                js_type_converter as convert,
            )
    except ImportError:
        raise InputError(
            f"checking {language} calls needs bfcl-eval's type converters: "
            "`pip install --no-deps bfcl-eval==2026.3.23`"
        ) from None
    return convert


def _source_value(
    tool: Tool, param: str, value: Any, language: str
) -> tuple[Any, type | None, type | None, str]:
    """A Java/JavaScript argument as BFCL checks it: the model writes every value as source text,
    which is converted by the parameter's original type (`tool.metadata["bfcl_parameters"]`).
    Returns (value, expected Python type, element type, type name); expected is None when the
    value is not a string (BFCL's ``type_error:java`` / ``type_error:js``)."""
    spec = (tool.metadata.get("bfcl_parameters") or {}).get("properties", {}).get(param, {})
    kind = spec.get("type", "any")
    table = _JAVA_TYPES if language == "java" else _JS_TYPES
    if kind not in table:
        return value, _PY_TYPE.get("any"), None, kind
    if type(value) is not str:
        return value, None, None, kind
    convert = _converter(language)
    if kind in _NESTED[language]:
        item = (spec.get("items") or {}).get("type")
        return convert(value, kind, item), table[kind], table.get(item), kind
    return convert(value, kind), table[kind], None, kind


def check_call(
    tool: Tool,
    name: str,
    args: Mapping[str, Any],
    answer: Mapping[str, Sequence[Any]],
    language: str = "python",
) -> AstVerdict:
    """One call against one gold answer ``{param: [acceptable values]}`` of `tool` (steps 1-4).
    For ``java`` and ``javascript`` every value must be a string of source text, converted by the
    parameter's original BFCL type with bfcl-eval's converters before the same checks."""
    kind = "simple_function_checker"
    if name != tool.name:
        return _fail(f"{kind}:wrong_func_name", f"function name {tool.name!r} not found in model output")
    props = tool.properties
    for param in tool.required:
        if param not in args:
            return _fail(f"{kind}:missing_required", f"missing required parameter {param!r}")
    for param, value in args.items():
        if param not in props or param not in answer:
            return _fail(f"{kind}:unexpected_param", f"unexpected parameter {param!r}")
        acceptable = answer[param]
        if language != "python":
            value, expected, nested, type_name = _source_value(tool, param, value, language)
            if expected is None:
                short = "java" if language == "java" else "js"
                return _fail(
                    f"type_error:{short}",
                    f"incorrect type for parameter {param!r}: expected a string, got {type(value).__name__}",
                )
        else:
            type_name = bfcl_type(props[param])
            expected = _PY_TYPE.get(type_name)
            if expected is None:
                return _fail(
                    "type_error:unknown", f"parameter {param!r} has an unsupported type {type_name!r}"
                )
            nested = None
            if type_name in ("array", "tuple") and isinstance(props[param].get("items"), dict):
                nested = _PY_TYPE.get(bfcl_type(props[param]["items"]))
            if type_name == "float" and type(value) is int:
                value = float(value)
        ok, variable = _type_check(value, expected, nested, acceptable)
        if not ok:
            nested_failed = type(value) is expected and nested is not None
            return _fail(
                "type_error:nested" if nested_failed else "type_error:simple",
                f"incorrect type for parameter {param!r}: expected {type_name}, got {type(value).__name__}",
            )
        if not variable:
            if expected is dict:
                if not _dict_ok(value, acceptable):
                    return _fail(
                        "value_error:dict_value", f"invalid value for parameter {param!r}: {value!r}"
                    )
                continue
            if expected is list and nested is dict:
                if not _list_of_dicts_ok(value, acceptable):
                    return _fail("value_error:list_dict", f"invalid value for parameter {param!r}: {value!r}")
                continue
            if expected is str:
                if standardize_string(value) not in [
                    standardize_string(a) for a in acceptable if type(a) is str
                ]:
                    return _fail("value_error:string", f"invalid value for parameter {param!r}: {value!r}")
                continue
            if expected is list:
                options = [o for o in (_as_items(a) for a in acceptable) if o is not None]
                if [_std(v) for v in value] not in options:
                    return _fail(
                        "value_error:list/tuple", f"invalid value for parameter {param!r}: {value!r}"
                    )
                continue
        if value not in acceptable:
            return _fail("value_error:others", f"invalid value for parameter {param!r}: {value!r}")
    for param, acceptable in answer.items():
        if param not in args and "" not in acceptable:
            return _fail(f"{kind}:missing_optional", f"optional parameter {param!r} not provided")
    return _OK


def _pairs(
    calls: Iterable[ToolCall | tuple[str, Mapping[str, Any]] | Mapping[str, Any]],
) -> list[tuple[str, Mapping]]:
    out = []
    for c in calls:
        if isinstance(c, ToolCall):
            out.append((c.name, c.args))
        elif isinstance(c, tuple):
            out.append((c[0], c[1]))
        else:  # BFCL's own shape: {name: {param: value}}
            ((name, args),) = c.items()
            out.append((name, args))
    return out


def check_calls(
    tools: Sequence[Tool],
    calls: Iterable[ToolCall | tuple[str, Mapping[str, Any]] | Mapping[str, Any]],
    answers: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]],
    category: str,
) -> AstVerdict:
    """A model's calls against the gold answers of an entry of `category` (module docstring)."""
    pairs = _pairs(calls)
    by_name = {t.name: t for t in tools}
    language = language_of(category)

    def tool_of(answer: Mapping) -> Tool | None:
        return by_name.get(next(iter(answer)))

    if "parallel" in category:
        if len(pairs) != len(answers):
            return _fail("parallel_function_checker_no_order:wrong_count", "wrong number of functions")
        used: set[int] = set()
        for answer in answers:
            tool = tool_of(answer)
            if tool is None:
                return _fail("checker:unknown_function", f"no documentation for {next(iter(answer))!r}")
            hit = next(
                (
                    i
                    for i, (n, a) in enumerate(pairs)
                    if i not in used and check_call(tool, n, a, next(iter(answer.values())), language).valid
                ),
                None,
            )
            if hit is None:
                return _fail(
                    "parallel_function_checker_no_order:cannot_find_match", f"no call matches {tool.name!r}"
                )
            used.add(hit)
        return _OK
    if "multiple" in category:
        if len(pairs) != len(answers):
            return _fail("multiple_function_checker:wrong_count", "wrong number of functions")
        tool = tool_of(answers[0])
    else:
        if len(pairs) != 1:
            return _fail("simple_function_checker:wrong_count", "wrong number of functions")
        tool = tools[0] if tools else None
    if tool is None:
        return _fail("checker:unknown_function", f"no documentation for {next(iter(answers[0]))!r}")
    name, args = pairs[0]
    return check_call(tool, name, args, next(iter(answers[0].values())), language)
