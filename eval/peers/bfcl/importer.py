"""BFCL importer (`load_bfcl`): every single-turn and multi-turn category, mapped to our `Dialogue`.

`SINGLE_TURN` holds BFCL's 13 single-turn categories and `MULTI_TURN` its four multi-turn ones
(`DOCUMENTED_COUNTS`); `CATEGORIES`, the default of ``python -m eval bfcl``, is the five of the
DiaFORGE parity check. The table shows those five; the others map the same way:

* ``simple_python``, ``simple_java``, ``simple_javascript``, ``parallel``, ``parallel_multiple``,
  ``live_simple``, ``live_parallel``, ``live_parallel_multiple``: like ``multiple`` (one gold
  assistant turn with every gold call);
* ``live_relevance``: like ``irrelevance`` (no answer file; `seed_tool` None), with the opposite
  rule: any well-formed, non-empty call passes, whatever it calls (BFCL's relevance runner checks
  only that the output decodes to a call);
* ``multi_turn_base``, ``multi_turn_long_context``: like ``multi_turn_miss_param``;
* ``multi_turn_miss_func``: its ``missed_function`` (``{turn index: [names]}``) holds functions
  back: before that turn they are not offered (``metadata["withheld"]`` on the assistant turns,
  dropped from the prompt's candidates by `eval.peers.bfcl.runner.prompt_examples`), the ``[]``
  turn that needs one gets the refusal `MISS_FUNC_REPLY` labelled reject/response_fail, and the
  held-out turn (empty in BFCL's question) gets BFCL's user message `MISSED_FUNCTION_PROMPT` with
  the functions back in the list, as BFCL's inference loop does.

Tools are shown as BFCL shows them (`prompt_doc`, its language-specific hint): every description
ends with a note naming the language, and Java / JavaScript parameters become strings whose
description names their type ("This is Java HashMap type parameter in string representation."),
the original types kept in ``metadata["bfcl_parameters"]`` for the checker. The gold calls of
Java and JavaScript entries hold the answers' first acceptable values, not Java/JavaScript source
text, so rendered as calls they do not pass the checker.

=========================  =======  ==========================================================
category                   entries  our dialogue
=========================  =======  ==========================================================
multiple                   200      the question's messages, then one gold assistant turn with
live_multiple              1,053    the call (first acceptable value of each argument; an argument
                                    whose only acceptable value is "" is left out), labelled
                                    function_calling/call, its acceptable-value lists in
                                    ``metadata["acceptable"]``; `seed_tool` is the gold function
irrelevance                240      the question's messages only; `seed_tool` None (any valid call
live_irrelevance           884      is a failure)
multi_turn_miss_param      200      per BFCL turn: its user message(s), then a gold assistant turn:
                                    the turn's calls (call strings parsed, positional arguments
                                    named from the documentation) labelled function_calling/call,
                                    or, for a ``[]`` turn ("must not call": a required argument
                                    is missing), a question labelled seek_info/request whose text
                                    is the fixed `MISS_PARAM_REPLY` (BFCL gives no reply text) and
                                    ``metadata["bfcl_expect"] = "no_call"``; candidate tools are
                                    the docs of the involved classes minus the excluded functions
=========================  =======  ==========================================================

Counts asserted in the tests against the installed wheel: `DOCUMENTED_COUNTS` (the
multi_turn_miss_param answers hold 203 ``[]`` turns). Candidate tools come from each entry's
`function` list through `diaforge.tool_records.tool_from_record`, so BFCL types are normalised
(``dict`` -> object, ``float`` -> number, ``tuple`` -> array, ``any`` -> untyped). Function names
are kept as they are, dots included (``triangle_properties.get``): BFCL maps ``.`` to ``_`` only
for APIs that reject dots, which a prompt-mode model is not. System messages of the question go to
``provenance.bfcl["system"]`` and are appended to our system prompt when the model is queried.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.schema import Dialogue, Tool, ToolCall, Turn
from diaforge.tool_records import tool_from_record
from eval.peers import (
    ImportReport,
    ImportResult,
    make_dialogue,
    need,
    parse_call_string,
    read_answers,
    read_json_lines,
)
from eval.peers.bfcl.categories import (
    ALL_CATEGORIES,
    CATEGORIES,
    IRRELEVANCE,
    MULTI_TURN,
    NO_ANSWER_FILE,
    bfcl_data_dir,
    category_file,
    language_of,
)
from eval.peers.bfcl.checker import bfcl_type

__all__ = [
    "MISSED_FUNCTION_PROMPT",
    "MISS_FUNC_REPLY",
    "MISS_PARAM_REPLY",
    "MULTI_TURN_DOC_FILES",
    "gold_args",
    "gold_calls",
    "load_bfcl",
    "load_bfcl_categories",
    "prompt_doc",
]

MISS_PARAM_REPLY = "I need one more detail before I can do that. Could you give it to me?"
"""The assistant text of a ``[]`` turn of multi_turn_miss_param in our dialogues (BFCL has none)."""

MISS_FUNC_REPLY = "None of the functions I have can do that yet."
"""The assistant text of the ``[]`` turn of multi_turn_miss_func: the function it needs is held
out of the list until the next turn (BFCL has no reply text)."""

MISSED_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user message on the turn where held-out functions come back
(``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``); the functions themselves reach our prompt
through the tool list."""


MULTI_TURN_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
"""Multi-turn class -> its documentation file under ``multi_turn_func_doc/``."""

_ROLES = ("system", "user", "assistant")


def _messages(question: Any, path: Path, lineno: int, where: str) -> list[list[dict[str, str]]]:
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


def _acceptable(ground_truth: Any, path: Path, lineno: int, where: str) -> list[dict[str, dict[str, list]]]:
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


def _tools(
    functions: Any,
    path: Path,
    lineno: int,
    where: str,
    *,
    allow_empty: bool = False,
    category: str | None = None,
) -> list[Tool]:
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


def _turns_of(question: list[list[dict[str, str]]]) -> tuple[list[Turn], list[str]]:
    turns, system = [], []
    for turn in question:
        for msg in turn:
            if msg["role"] == "system":
                system.append(msg["content"])
            else:
                turns.append(Turn(role=msg["role"], content=msg["content"]))
    return turns, system


def _dialogue(
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
    return make_dialogue(
        "bfcl", {"category": category, **extra}, path=path, record=lineno, entry_id=entry_id,
        seed_tool=seed, candidate_tools=tools, gold_args=args, turns=turns,
    )  # fmt: skip


def _class_docs(folder: Path, cls: str, cache: dict[str, list[Tool]], path: Path, lineno: int) -> list[Tool]:
    if cls not in cache:
        doc = folder / "multi_turn_func_doc" / MULTI_TURN_DOC_FILES[cls]
        cache[cls] = [tool_from_record(obj, path=doc, record=n) for n, obj in read_json_lines(doc)]
    return cache[cls]


def load_bfcl(
    category: str,
    data_dir: str | Path | None = None,
    *,
    path: str | Path | None = None,
    limit: int | None = None,
) -> ImportResult:
    """Import one BFCL category (see the module docstring) from `data_dir` (the installed wheel's
    data by default) or from an explicit category file `path` (answers in ``possible_answer/``
    beside it). A malformed record raises `InputError` naming the file and the line."""
    if category not in ALL_CATEGORIES:
        raise InputError(f"unsupported BFCL category {category!r}; choose from {', '.join(ALL_CATEGORIES)}")
    if path is not None:
        file = Path(path)
        folder = file.parent
    else:
        folder = bfcl_data_dir(data_dir)
        file = category_file(folder, category)
    report = ImportReport(source=f"bfcl {category}", path=str(file))
    answers: dict[str, tuple[int, Any]] = {}
    answer_path = folder / "possible_answer" / file.name
    if category not in NO_ANSWER_FILE:
        answers = read_answers(answer_path)
    docs_cache: dict[str, list[Tool]] = {}
    dialogues: list[Dialogue] = []
    counts: Counter = Counter()
    for lineno, obj in read_json_lines(file):
        if limit is not None and len(dialogues) >= limit:
            break
        need(
            isinstance(obj, dict) and isinstance(obj.get("id"), str) and obj["id"],
            "record needs a string 'id'",
            file,
            lineno,
        )
        entry_id = obj["id"]
        question = _messages(obj.get("question"), file, lineno, entry_id)
        if category in MULTI_TURN:
            d = _multi_turn(
                obj, category, question, answers, folder, docs_cache, file, lineno, answer_path, counts
            )
        else:
            d = _single_turn(obj, category, question, answers, file, lineno, answer_path, counts)
        dialogues.append(d)
    report.loaded = len(dialogues)
    report.counts = {"entries": len(dialogues), **dict(counts)}
    return ImportResult(dialogues, report)


def _answer_of(
    answers: dict[str, tuple[int, Any]], entry_id: str, answer_path: Path, file: Path, lineno: int
) -> Any:
    if entry_id not in answers:
        raise InputError(f"{entry_id}: no answer for this id in {answer_path}", path=file, record=lineno)
    answer_line, record = answers[entry_id]
    return answer_line, record["ground_truth"]


def _single_turn(
    obj: dict[str, Any],
    category: str,
    question: list,
    answers: dict[str, tuple[int, Any]],
    file: Path,
    lineno: int,
    answer_path: Path,
    counts: Counter,
) -> Dialogue:
    entry_id = obj["id"]
    # Four live_irrelevance entries offer no function at all.
    tools = _tools(
        obj.get("function"), file, lineno, entry_id, allow_empty=category in IRRELEVANCE, category=category
    )
    turns, system = _turns_of(question)
    need(any(t.role == "user" for t in turns), f"{entry_id}: the question has no user message", file, lineno)
    counts["functions"] += len(tools)
    counts["system_messages"] += len(system)
    extra: dict[str, Any] = {"id": entry_id, "system": system}
    if category in NO_ANSWER_FILE:  # irrelevance: no call is right; relevance: any call is
        return _dialogue(
            entry_id=entry_id, category=category, tools=tools, turns=turns, seed=None, args={},
            extra=extra, path=file, lineno=lineno,
        )  # fmt: skip
    answer_line, ground_truth = _answer_of(answers, entry_id, answer_path, file, lineno)
    ground_truth = _acceptable(ground_truth, answer_path, answer_line, entry_id)
    calls, missing = gold_calls(ground_truth, tools)
    need(
        not missing,
        f"{entry_id}: gold function {missing[0] if missing else ''!r} is not among its functions",
        file,
        lineno,
    )
    counts["gold_calls"] += len(calls)
    gold = Turn(
        role="assistant",
        tool_calls=calls,
        act="function_calling",
        action="call",
        metadata={"acceptable": ground_truth},
    )
    return _dialogue(
        entry_id=entry_id, category=category, tools=tools, turns=[*turns, gold], seed=calls[0].name,
        args=dict(calls[0].args), extra=extra, path=file, lineno=lineno,
    )  # fmt: skip


def _multi_turn_tools(
    obj: dict[str, Any], folder: Path, cache: dict[str, list[Tool]], file: Path, lineno: int
) -> tuple[list[str], list, dict[str, Tool]]:
    """(involved classes, excluded functions, candidate tools by name) of a multi-turn entry."""
    entry_id = obj["id"]
    classes = obj.get("involved_classes")
    ok = isinstance(classes, list) and bool(classes) and all(isinstance(c, str) for c in classes)
    need(ok, f"{entry_id}: 'involved_classes' must be a non-empty list of class names", file, lineno)
    unknown = [c for c in classes if c not in MULTI_TURN_DOC_FILES]
    need(
        not unknown,
        f"{entry_id}: unknown class {unknown[0] if unknown else ''!r} in involved_classes",
        file,
        lineno,
    )
    excluded = obj.get("excluded_function") or []
    need(isinstance(excluded, list), f"{entry_id}: 'excluded_function' must be a list", file, lineno)
    tools: dict[str, Tool] = {}
    for cls in classes:
        for tool in _class_docs(folder, cls, cache, file, lineno):
            if tool.name not in excluded:
                tools.setdefault(tool.name, tool)
    return classes, excluded, tools


def _held_functions(
    obj: dict[str, Any], question: list, tools: Mapping[str, Tool], file: Path, lineno: int
) -> dict[int, list[str]]:
    """The entry's ``missed_function`` as {turn index: names held back until that turn}."""
    entry_id = obj["id"]
    missed = obj.get("missed_function") or {}
    ok = isinstance(missed, dict) and all(
        str(k).isdigit() and isinstance(v, list) and all(isinstance(n, str) for n in v)
        for k, v in missed.items()
    )
    need(ok, f"{entry_id}: 'missed_function' must map turn indices to function names", file, lineno)
    held = {int(k): list(v) for k, v in missed.items()}
    for k, names in held.items():
        need(
            0 <= k < len(question) and not question[k],
            f"{entry_id}: missed_function turn {k} must be an empty question turn",
            file,
            lineno,
        )
        unknown_fn = [n for n in names if n not in tools]
        need(not unknown_fn, f"{entry_id}: missed function {unknown_fn[:1]} is not documented", file, lineno)
    return held


def _multi_turn_truth(
    ground_truth: Any, question: list, entry_id: str, answer_path: Path, answer_line: int
) -> None:
    """Check a multi-turn answer: one list of call strings per question turn."""
    ok = isinstance(ground_truth, list) and all(
        isinstance(t, list) and all(isinstance(c, str) for c in t) for t in ground_truth
    )
    need(
        ok,
        f"{entry_id}: 'ground_truth' must be a list of turns, each a list of call strings",
        answer_path,
        answer_line,
    )
    need(
        len(ground_truth) == len(question),
        f"{entry_id}: {len(ground_truth)} ground-truth turns for {len(question)} question turns",
        answer_path,
        answer_line,
    )


def _turn_calls(
    gold_turn: list[str],
    tools: Mapping[str, Tool],
    entry_id: str,
    k: int,
    answer_path: Path,
    answer_line: int,
) -> list[ToolCall]:
    """The calls of gold turn `k`, parsed from BFCL's call strings."""
    calls = []
    for text in gold_turn:
        try:
            call = parse_call_string(text, tools)
        except ValueError as exc:
            raise InputError(
                f"{entry_id}: turn {k}: {text!r}: {exc}", path=answer_path, record=answer_line
            ) from None
        need(
            call.name in tools,
            f"{entry_id}: turn {k}: {call.name!r} is not among its functions",
            answer_path,
            answer_line,
        )
        calls.append(call)
    return calls


def _no_call_turn(category: str, withheld: list[str], meta: dict[str, Any]) -> Turn:
    """The assistant turn of a ``[]`` gold turn: a refusal while a function is held back
    (multi_turn_miss_func), else a question for the missing argument."""
    missing_fn = category == "multi_turn_miss_func" and bool(withheld)
    return Turn(
        role="assistant",
        content=MISS_FUNC_REPLY if missing_fn else MISS_PARAM_REPLY,
        act="reject" if missing_fn else "seek_info",
        action="response_fail" if missing_fn else "request",
        metadata={**meta, "bfcl_expect": "no_call"},
    )


def _multi_turn(
    obj: dict[str, Any],
    category: str,
    question: list,
    answers: dict[str, tuple[int, Any]],
    folder: Path,
    cache: dict[str, list[Tool]],
    file: Path,
    lineno: int,
    answer_path: Path,
    counts: Counter,
) -> Dialogue:
    entry_id = obj["id"]
    classes, excluded, tools = _multi_turn_tools(obj, folder, cache, file, lineno)
    held = _held_functions(obj, question, tools, file, lineno)
    answer_line, ground_truth = _answer_of(answers, entry_id, answer_path, file, lineno)
    _multi_turn_truth(ground_truth, question, entry_id, answer_path, answer_line)
    turns: list[Turn] = []
    first: ToolCall | None = None
    for k, (user_turn, gold_turn) in enumerate(zip(question, ground_truth, strict=True)):
        if k in held:
            turns.append(Turn(role="user", content=MISSED_FUNCTION_PROMPT, metadata={"bfcl_turn": k}))
        turns.extend(Turn(role="user", content=m["content"]) for m in user_turn if m["role"] != "system")
        withheld = sorted(n for j, names in held.items() if j > k for n in names)
        meta: dict[str, Any] = {"bfcl_turn": k, "ground_truth": gold_turn}
        if withheld:
            meta["withheld"] = withheld
        if not gold_turn:
            counts["no_call_turns"] += 1
            turns.append(_no_call_turn(category, withheld, meta))
            continue
        calls = _turn_calls(gold_turn, tools, entry_id, k, answer_path, answer_line)
        first = first or calls[0]
        counts["call_turns"] += 1
        counts["gold_calls"] += len(calls)
        turns.append(
            Turn(role="assistant", tool_calls=calls, act="function_calling", action="call", metadata=meta)
        )
    counts["turns"] += len(question)
    counts["missed_functions"] += sum(len(v) for v in held.values())
    extra = {
        "id": entry_id, "system": [], "involved_classes": classes, "excluded_function": excluded,
        "missed_function": {str(k): v for k, v in held.items()},
    }  # fmt: skip
    return _dialogue(
        entry_id=entry_id, category=category, tools=list(tools.values()), turns=turns,
        seed=first.name if first else None, args=dict(first.args) if first else {}, extra=extra,
        path=file, lineno=lineno,
    )  # fmt: skip


def load_bfcl_categories(
    categories: Iterable[str] = CATEGORIES, data_dir: str | Path | None = None, *, limit: int | None = None
) -> dict[str, ImportResult]:
    """`load_bfcl` for several categories."""
    return {c: load_bfcl(c, data_dir, limit=limit) for c in categories}
