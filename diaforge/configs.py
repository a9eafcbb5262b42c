"""User config files and their errors, for every stage: a YAML file read as a mapping
(`read_yaml_mapping`) and pydantic's refusal of one of its values turned into one line
(`config_error`).

`read_yaml_mapping(path)` is the file's top-level mapping (an empty file: ``{}``). Every failure is
an `InputError` whose line starts with the file: missing, unreadable, not UTF-8, too large
(`diaforge.hygiene.read_text_file`); a syntax error (``FILE:LINE: invalid YAML: PROBLEM``); an
alias bomb, a duplicate key or a non-finite number (`diaforge.hygiene.load_yaml`); a document
that is not a mapping; and a boolean spelled the YAML 1.1 way (``yes``, ``no``, ``on``, ``off``,
which PyYAML reads as true or false: ``validators: no`` would silently be false).

`config_error(exc, path, raw, keys=...)` is the first problem of a `pydantic.ValidationError` as
``FILE, field 'KEY': must be EXPECTED, got VALUE``: the dotted key as the file spells it, what the
field takes (one table, `EXPECTED`) and the value shown as YAML writes it. An unknown key comes
first, named with the nearest known one (or its new name, for a renamed key); a check that spans
fields raises `FieldProblem` to blame the key it names. A key that names a file or folder to write
takes `check_output_path`, which refuses an empty or blank one, as the flags' `output_path` does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.errors import InputError, UserError, shown_value

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "EXPECTED",
    "MAX_CONFIG_BYTES",
    "FieldProblem",
    "Keys",
    "check_choice",
    "check_output_path",
    "config_error",
    "loose_boolean",
    "read_yaml_mapping",
    "unknown_key_error",
]

#: The largest config file read (a recipe, a generation or evaluation config): 1 MiB.
MAX_CONFIG_BYTES = 1 << 20

#: What a field of each pydantic type takes, as ``must be ...`` says it.
EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "dataclass_type": "a mapping",
}
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")


class FieldProblem(UserError, ValueError):
    """A value refused by a check that spans fields, raised inside a pydantic validator;
    `field` is the dotted key to blame (`config_error` names it instead of the validated one)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Keys:
    """The keys one mapping of a config may hold, as its errors name them."""

    known: Sequence[str]
    """Every key the mapping takes, for the nearest-key hint."""
    word: str = "key"
    """What an unknown one is called: ``unknown {word} 'x'``."""
    renamed: Mapping[str, str] = field(default_factory=dict)
    """Former names still met in old files: former name -> the key it became (the hint)."""
    otherwise: str = ""
    """The end of the line when no known key is near (e.g. where the keys are listed)."""


def check_output_path(value: Any) -> Any:
    """`value` unless it is an empty or blank text, which names no file or folder to write
    (`diaforge.hygiene.output_path_problem`): a ValueError then, for a pydantic validator of a key
    that names an output (`config_error` puts the file and the key before it)."""
    from diaforge.hygiene import output_path_problem

    problem = output_path_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def check_choice(name: str, value: Any, allowed: Sequence[str]) -> Any:
    """`value` when it is one of `allowed`; a ValueError naming the key and the choices otherwise
    (for a pydantic validator: `config_error` puts the file and the key before it)."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


# --------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------


def read_yaml_mapping(path: str | Path, *, what: str = "config file") -> dict[str, Any]:
    """The YAML file at `path` as a mapping (an empty file is an empty mapping). `what` names the
    file in the errors that say what it should have been (``recipe file not found``)."""
    import yaml

    from diaforge.hygiene import load_yaml, read_text_file

    text = read_text_file(path, what=what, max_bytes=MAX_CONFIG_BYTES)
    try:
        raw = load_yaml(text, path=path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML: {problem}", path=where) from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        kind = "a list" if isinstance(raw, list) else "a single value"
        raise InputError(f"must be a mapping of keys to values, not {kind}", path=path)
    loose = loose_boolean(text)
    if loose is not None:
        key, spelling = loose
        raise InputError(
            f'ambiguous value {spelling}: write true or false (or "{spelling}" for a string)',
            path=path,
            field=key,
        )
    return raw


def loose_boolean(text: str) -> tuple[str, str] | None:
    """The first boolean of a YAML text spelled the YAML 1.1 way (`yes`, `no`, `on`, `off`), which
    PyYAML reads as true or false, as (dotted key, spelling); None when every boolean is `true`
    or `false`."""
    import yaml

    bool_tag = "tag:yaml.org,2002:bool"
    stack: list[tuple[str, Any]] = [("", yaml.compose(text, Loader=yaml.SafeLoader))]
    seen: set[int] = set()
    while stack:
        where, node = stack.pop()
        if id(node) in seen:  # an alias: its node was walked already
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag == bool_tag and node.value.lower() not in ("true", "false"):
                return where, node.value
        elif isinstance(node, yaml.MappingNode):
            stack += [(f"{where}.{k.value}".lstrip("."), v) for k, v in reversed(node.value)]
        elif isinstance(node, yaml.SequenceNode):
            stack += [(where, v) for v in reversed(node.value)]
    return None


# --------------------------------------------------------------------------------------------
# pydantic's refusal as one line
# --------------------------------------------------------------------------------------------


def config_error(
    exc: ValidationError,
    path: str | Path | None,
    raw: Mapping[str, Any],
    *,
    keys: Keys | Callable[[str], Keys],
    notes: Mapping[str, str] | None = None,
    shapes: Mapping[str, str] | None = None,
) -> InputError:
    """The first problem pydantic found in `raw` (what was validated), as one `InputError` line
    naming `path` and the key.

    `keys`: the keys of the config's mappings (or, given the dotted key of a nested mapping, ""
    for the top, the `Keys` of that mapping). `notes`: what to do when a key's value is over its
    upper bound, by key. `shapes`: the one message for any wrong value under a key whose value
    has a structure of its own (e.g. a table of prices), by top-level key."""
    errors = exc.errors(include_url=False)
    err = next((e for e in errors if e["type"] in _UNKNOWN), errors[0])
    loc = [str(part) for part in err["loc"]]
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    problem = ctx.get("error")
    if isinstance(problem, FieldProblem):
        return InputError(str(problem), path=path, field=problem.field)
    if kind in _UNKNOWN:
        parent = ".".join(loc[:-1])
        names = keys(parent) if callable(keys) else keys
        return unknown_key_error(loc[-1], names, path=path, field=parent or None)
    key = _dotted_key(err["loc"], raw)
    if shapes and key and key.split(".")[0] in shapes:
        top = key.split(".")[0]
        return InputError(shapes[top], path=path, field=top)
    if problem is not None:
        return InputError(str(problem), path=path, field=key)
    message = f"{_expectation(kind, ctx, err['msg'])}, got {shown_value(value)}"
    if kind == "less_than_equal" and notes and key in notes:
        message += f"; {notes[key]}"
    return InputError(message, path=path, field=key)


def unknown_key_error(
    key: str, keys: Keys, *, path: str | Path | None = None, field: str | None = None
) -> InputError:
    """``unknown key 'x'; did you mean 'y'?``: the nearest known key, or the key a former name
    became, or `keys.otherwise` when none is near."""
    near = [keys.renamed[key]] if key in keys.renamed else difflib.get_close_matches(key, keys.known, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else keys.otherwise
    return InputError(f"unknown {keys.word} {key!r}{hint}", path=path, field=field)


def _dotted_key(loc: Sequence[Any], raw: Any) -> str | None:
    """The key of `loc` as the file spells it: the parts that name keys of `raw`, down to the
    first that does not (an item of a list, a member of a union type) or to the end."""
    parts: list[str] = []
    node = raw
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            break
        parts.append(str(part))
        node = node[part]
    return ".".join(parts) or (str(loc[0]) if loc else None)


def _expectation(kind: str, ctx: dict[str, Any], fallback: str) -> str:
    """What the field takes, for ``must be ...``."""
    if kind in EXPECTED:
        return f"must be {EXPECTED[kind]}"
    if kind == "finite_number":
        return "must be a finite number"
    if kind == "greater_than_equal":
        return "must be 0 or more" if ctx["ge"] == 0 else f"must be at least {ctx['ge']}"
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']:,}"
    if kind == "greater_than":
        return f"must be more than {ctx['gt']:g}"
    return f"{fallback[:1].lower()}{fallback[1:]}"
