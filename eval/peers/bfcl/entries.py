"""What the single-turn and multi-turn BFCL entries are made of, read and checked.

`question_messages` checks an entry's ``question`` (a list of turns, each a list of
``{role, content}`` messages); `acceptable_answers` checks a single-turn answer
(``[{function: {param: [acceptable values]}}]``) and `gold_calls` / `gold_args` make it the calls
a model could make (each argument's first acceptable value; an argument whose only value is ""
left out; an object's options collapsed the same way, key by key). `prompt_doc` is a function
document as BFCL shows it (the language note, and Java / JavaScript parameters as strings),
`entry_tools` the entry's functions as our `Tool`s that way. `bfcl_dialogue` makes the `Dialogue`
of an entry (its provenance under ``bfcl``), and `answer_of` finds an entry's answer by id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import make_dialogue, need
from diaforge.eval.peers.bfcl.categories import language_of
from diaforge.eval.peers.bfcl.checker import bfcl_type
from diaforge.schema import Dialogue, Tool, ToolCall, Turn
from diaforge.tool_records import tool_from_record

__all__ = [
    "acceptable_answers",
    "answer_of",
    "bfcl_dialogue",
    "entry_tools",
    "gold_args",
    "gold_calls",
    "prompt_doc",
    "question_messages",
]

_ROLES = ("system", "user", "assistant")


def question_messages(question: Any, path: Path, lineno: int, where: str) -> list[list[dict[str, str]]]:
    """The entry's ``question`` checked: a non-empty list of turns, each a list of messages with
    a role (system, user or assistant) and a string content."""
    need(
        isinstance(question, list) and bool(question),
        f"{where}: 'question' must be a non-empty list of turns",
        path,
        lineno,
    )
    turns = []
    for k, turn in enumerate(question):
        need(isinstance(turn, list), f"{where}: question turn {k} must be a list of messages", path, lineno)
        for j, msg in enumerate(turn):
            ok = isinstance(msg, dict) and msg.get("role") in _ROLES and isinstance(msg.get("content"), str)
            need(
                ok,
                f"{where}: question turn {k} message {j} needs a role (system/user/assistant) and a string content",
                path,
                lineno,
            )
        turns.append(turn)
    return turns


def acceptable_answers(
    ground_truth: Any, path: Path, lineno: int, where: str
) -> list[dict[str, dict[str, list]]]:
    """A single-turn answer checked: a non-empty list of ``{function: {param: [acceptable
    values]}}``."""
    ok = isinstance(ground_truth, list) and bool(ground_truth)
    need(ok, f"{where}: 'ground_truth' must be a non-empty list of calls", path, lineno)
    for k, call in enumerate(ground_truth):
        ok = isinstance(call, dict) and len(call) == 1 and isinstance(next(iter(call.values())), dict)
        need(
            ok,
            f"{where}: ground_truth[{k}] must be {{function: {{param: [acceptable values]}}}}",
            path,
            lineno,
        )
        for param, values in next(iter(call.values())).items():
            need(
                isinstance(values, list),
                f"{where}: ground_truth[{k}] parameter {param!r} must list its acceptable values",
                path,
                lineno,
            )
    return ground_truth


def _collapse(option: Any) -> Any:
    """A dict answer option ``{key: [acceptable values]}`` as one value (first non-"" each)."""
    if not isinstance(option, dict) or not all(isinstance(v, list) for v in option.values()):
        return option
    return {k: next(x for x in v if x != "") for k, v in option.items() if any(x != "" for x in v)}


def gold_calls(ground_truth: list[dict[str, Any]], tools: list[Tool]) -> tuple[list[ToolCall], list[str]]:
    """The gold calls of a BFCL-style answer (`[{function: {param: [acceptable values]}}]`), each
    with its first acceptable values, and the names among them that are not in `tools`."""
    by_name = {t.name: t for t in tools}
    calls = [
        ToolCall(name=next(iter(c)), args=gold_args(next(iter(c.values())), by_name.get(next(iter(c)))))
        for c in ground_truth
    ]
    return calls, [c.name for c in calls if c.name not in by_name]


def gold_args(answer: Mapping[str, list], tool: Tool | None = None) -> dict[str, Any]:
    """The first acceptable value of each argument; arguments whose only value is "" are omitted.

    For a parameter documented as an object (or an array of objects), BFCL's acceptable options
    are dicts whose values are themselves lists of acceptable values; they are collapsed the same
    way (first acceptable value per key), so the gold call is a call a model could make."""
    props = tool.properties if tool is not None else {}
    out = {}
    for param, values in answer.items():
        given = [v for v in values if v != ""]
        if not given:
            continue
        value, kind = given[0], bfcl_type(props.get(param))
        if kind == "dict":
            value = _collapse(value)
        elif (
            kind in ("array", "tuple")
            and bfcl_type(props.get(param, {}).get("items")) == "dict"
            and isinstance(value, list)
        ):
            value = [_collapse(v) for v in value]
        out[param] = value
    return out


_LANGUAGE_NOTE = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_LANGUAGE_NAME = {"java": "Java", "javascript": "JavaScript"}


def prompt_doc(doc: Mapping[str, Any], category: str) -> dict[str, Any]:
    """A function document as BFCL shows it to the model (its ``include_language_specific_hint``
    step, in bfcl_eval/utils.py), a copy: the description gets a note naming the language
    (Python 3, Java 8 SDK or JavaScript); for Java and JavaScript every parameter becomes a
    ``string`` whose description says what it stands for ("This is Java HashMap type parameter in
    string representation.", or "any type of Java object" for ``any``), with the element type of
    an array and the entry schema of a JavaScript dict moved into the description."""
    lang = language_of(category)
    out = json.loads(json.dumps(doc))
    out["description"] = str(out.get("description", "")) + _LANGUAGE_NOTE[lang]
    if lang == "python":
        return out
    name = _LANGUAGE_NAME[lang]
    for spec in (out.get("parameters") or {}).get("properties", {}).values():
        kind = spec.get("type")
        desc = str(spec.get("description", ""))
        if kind == "any":
            desc += f" This parameter can be of any type of {name} object in string representation."
        else:
            desc += f" This is {name} {kind} type parameter in string representation."
        if kind in (("ArrayList", "Array") if lang == "java" else ("array",)):
            item = (spec.pop("items", None) or {}).get("type")
            desc += f" The list elements are of type {item}; they are not in string representation."
        if lang == "javascript" and kind == "dict" and "properties" in spec:
            desc += (
                " The dictionary entries have the following schema; they are not in string "
                f"representation. {json.dumps(spec.pop('properties'))}"
            )
        spec["description"] = desc
        spec["type"] = "string"
    return out


def entry_tools(
    functions: Any,
    path: Path,
    lineno: int,
    where: str,
    *,
    allow_empty: bool = False,
    category: str | None = None,
) -> list[Tool]:
    """The entry's ``function`` documents as our tools; with `category`, as BFCL shows them
    (`prompt_doc`), the original parameter types kept for the checker outside Python."""
    ok = (
        isinstance(functions, list)
        and (allow_empty or bool(functions))
        and all(isinstance(f, dict) for f in functions)
    )
    what = "a list" if allow_empty else "a non-empty list"
    need(ok, f"{where}: 'function' must be {what} of function documents", path, lineno)
    if category is None:
        return [tool_from_record(f, path=path, record=lineno) for f in functions]
    tools = []
    for f in functions:
        tool = tool_from_record(prompt_doc(f, category), path=path, record=lineno)
        if language_of(category) != "python":  # the checker converts values by the original types
            tool.metadata["bfcl_parameters"] = f.get("parameters") or {}
        tools.append(tool)
    return tools


def bfcl_dialogue(
    *,
    entry_id: str,
    category: str,
    tools: list[Tool],
    turns: list[Turn],
    seed: str | None,
    args: dict[str, Any],
    extra: dict[str, Any],
    path: Path,
    lineno: int,
) -> Dialogue:
    """The `Dialogue` of one entry, its category and `extra` recorded under ``provenance.bfcl``."""
    return make_dialogue(
        "bfcl", {"category": category, **extra}, path=path, record=lineno, entry_id=entry_id,
        seed_tool=seed, candidate_tools=tools, gold_args=args, turns=turns,
    )  # fmt: skip


def answer_of(
    answers: dict[str, tuple[int, Any]], entry_id: str, answer_path: Path, file: Path, lineno: int
) -> Any:
    """(line, ground truth) of an entry's answer; `InputError` when the answer file has none."""
    if entry_id not in answers:
        raise InputError(f"{entry_id}: no answer for this id in {answer_path}", path=file, record=lineno)
    answer_line, record = answers[entry_id]
    return answer_line, record["ground_truth"]
