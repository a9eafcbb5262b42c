"""BFCL (Berkeley Function Calling Leaderboard): importer, AST checker and parity runner.

The data ships in the PyPI wheel ``bfcl-eval`` (Apache-2.0), installed without its dependencies
(``pip install --no-deps bfcl-eval==2026.3.23``); it is read from the installed package at run
time (`bfcl_data_dir`), or from any folder laid out the same way. Its files named ``.json`` are
JSON Lines.

Importer (`load_bfcl`): every single-turn and multi-turn category, mapped to our `Dialogue`
----------------------------------------------------------------------------------------------
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
  dropped from the prompt's candidates by `prompt_examples`), the ``[]`` turn that needs one gets
  the refusal `MISS_FUNC_REPLY` labelled reject/response_fail, and the held-out turn (empty in
  BFCL's question) gets BFCL's user message `MISSED_FUNCTION_PROMPT` with the functions back in
  the list, as BFCL's inference loop does.

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
`function` list through `data_gen.catalogue.tool_from_record`, so BFCL types are normalised
(``dict`` -> object, ``float`` -> number, ``tuple`` -> array, ``any`` -> untyped). Function names
are kept as they are, dots included (``triangle_properties.get``): BFCL maps ``.`` to ``_`` only
for APIs that reject dots, which a prompt-mode model is not. System messages of the question go to
``provenance.bfcl["system"]`` and are appended to our system prompt when the model is queried.

AST checker (`check_calls`): BFCL's rules on our schema
--------------------------------------------------------
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

Runner (`run_bfcl`, ``python -m eval bfcl --model PATH``)
----------------------------------------------------------
Prompt mode by default: our system prompt listing the entry's functions (plus the entry's own
system message), the question as user turns, one reply parsed by our parser. Per category the
accuracy is the share of entries that pass; ``overall.accuracy`` is the unweighted mean of the
category accuracies (BFCL's own overall is a weighted mix of more categories: compare runs of this
runner with each other, e.g. a tuned model with its base, not with the leaderboard).

The multi-turn categories are scored off-policy, turn by turn, with gold history: BFCL's own
checker executes the calls on stateful Python backends, which we do not run, so this is an
approximation: a ``[]`` turn passes when the model does not call (BFCL's rule for those turns,
exactly); a call turn passes when the model calls and its first call's name is among the turn's
gold call names (a function still held back fails as ``multi_turn:held_out_function``); an entry
passes when all its turns pass. Not comparable with leaderboard multi-turn numbers.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data_gen.catalogue import tool_from_record
from data_gen.errors import InputError
from data_gen.schema import Dialogue, Tool, ToolCall, Turn
from eval.peers import (
    ImportReport,
    ImportResult,
    make_dialogue,
    need,
    parse_call_string,
    read_answers,
    read_json_lines,
)

__all__ = [
    "ALL_CATEGORIES",
    "CATEGORIES",
    "MISSED_FUNCTION_PROMPT",
    "MISS_FUNC_REPLY",
    "MULTI_TURN",
    "SINGLE_TURN",
    "DOCUMENTED_COUNTS",
    "MISS_PARAM_REPLY",
    "AstVerdict",
    "PromptExample",
    "bfcl_data_dir",
    "bfcl_metrics",
    "bfcl_type",
    "category_of",
    "check_call",
    "check_calls",
    "compare_bfcl",
    "format_bfcl",
    "gold_args",
    "load_bfcl",
    "language_of",
    "load_bfcl_categories",
    "prompt_doc",
    "prompt_examples",
    "run_bfcl",
    "score_reply",
    "standardize_string",
    "write_bfcl_run",
]

CATEGORIES = ("multiple", "live_multiple", "irrelevance", "live_irrelevance", "multi_turn_miss_param")
"""The BFCL categories of the parity check (DiaFORGE Appendix C.6): the default set."""

SINGLE_TURN = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
"""BFCL's single-turn categories (``SINGLE_TURN_CATEGORY`` of bfcl-eval: non-live, then live)."""

MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
"""BFCL's multi-turn categories (``multi_turn_composite`` is unreleased there too)."""

ALL_CATEGORIES = SINGLE_TURN + MULTI_TURN
"""Every category `load_bfcl` and ``python -m eval bfcl --categories`` accept."""

DOCUMENTED_COUNTS = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
}
"""Entries per category in ``bfcl-eval==2026.3.23`` (checked against the wheel in the tests)."""

IRRELEVANCE = ("irrelevance", "live_irrelevance")
RELEVANCE = ("live_relevance",)
NO_ANSWER_FILE = IRRELEVANCE + RELEVANCE

MISS_PARAM_REPLY = "I need one more detail before I can do that. Could you give it to me?"
"""The assistant text of a ``[]`` turn of multi_turn_miss_param in our dialogues (BFCL has none)."""

MISS_FUNC_REPLY = "None of the functions I have can do that yet."
"""The assistant text of the ``[]`` turn of multi_turn_miss_func: the function it needs is held
out of the list until the next turn (BFCL has no reply text)."""

MISSED_FUNCTION_PROMPT = "I have updated some more functions you can choose from. What about now?"
"""BFCL's user message on the turn where held-out functions come back
(``DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC``); the functions themselves reach our prompt
through the tool list."""


def language_of(category: str) -> str:
    """``java``, ``javascript`` or ``python``: the language BFCL checks a category's calls in."""
    if category.endswith("javascript"):
        return "javascript"
    if category.endswith("java"):
        return "java"
    return "python"


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


# --------------------------------------------------------------------------------------------
# Locating the data
# --------------------------------------------------------------------------------------------


def bfcl_data_dir(path: str | Path | None = None) -> Path:
    """The BFCL data folder: `path` when given, else ``bfcl_eval/data`` of the installed wheel."""
    if path is not None:
        p = Path(path)
        if not p.is_dir():
            raise InputError("BFCL data folder not found", path=p)
        return p
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            "bfcl-eval is not installed: run `pip install --no-deps bfcl-eval==2026.3.23` "
            "(its data is read from the wheel), or pass a BFCL data folder"
        )
    p = Path(next(iter(spec.submodule_search_locations))) / "data"
    if not p.is_dir():
        raise InputError("the installed bfcl-eval has no data folder", path=p)
    return p


def _category_file(folder: Path, category: str) -> Path:
    pattern = re.compile(rf"BFCL_v(\d+)_{re.escape(category)}\.json")
    found = sorted(
        (int(m.group(1)), p) for p in folder.glob("BFCL_v*.json") if (m := pattern.fullmatch(p.name))
    )
    if not found:
        raise InputError(f"no BFCL_v*_{category}.json file", path=folder)
    return found[-1][1]


def category_of(path: str | Path) -> str | None:
    """The category named by a BFCL file name (``BFCL_v4_live_multiple.json`` -> live_multiple)."""
    m = re.fullmatch(r"BFCL_v\d+_(.+)\.json", Path(path).name)
    return m.group(1) if m else None


# --------------------------------------------------------------------------------------------
# Importer
# --------------------------------------------------------------------------------------------


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
        file = _category_file(folder, category)
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
    answer_line, ground_truth = _answer_of(answers, entry_id, answer_path, file, lineno)
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
            missing_fn = category == "multi_turn_miss_func" and bool(withheld)
            turns.append(
                Turn(
                    role="assistant",
                    content=MISS_FUNC_REPLY if missing_fn else MISS_PARAM_REPLY,
                    act="reject" if missing_fn else "seek_info",
                    action="response_fail" if missing_fn else "request",
                    metadata={**meta, "bfcl_expect": "no_call"},
                )
            )
            continue
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


# --------------------------------------------------------------------------------------------
# AST checker
# --------------------------------------------------------------------------------------------

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


def _converter(language: str):  # noqa: ANN202 - (value, type[, nested]) -> value
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


# --------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------


@dataclass
class PromptExample:
    """One model query: the dialogue prefix shown to the model and what it is scored against."""

    entry: Dialogue
    category: str
    prompt: Dialogue
    turn: int | None = None
    """Index of the gold assistant turn (multi-turn and single-turn call categories)."""


def _category(d: Dialogue) -> str:
    return (d.provenance.model_extra or {}).get("bfcl", {}).get("category", "")


def prompt_examples(d: Dialogue) -> list[PromptExample]:
    """The queries of one imported entry: one for single-turn categories (the turns before the
    gold assistant turn), one per BFCL turn for multi-turn ones (gold history before it)."""
    category = _category(d)
    if category in NO_ANSWER_FILE:
        return [PromptExample(d, category, d)]
    out = []
    for i, t in enumerate(d.turns):
        if t.role != "assistant" or not ("acceptable" in t.metadata or "bfcl_turn" in t.metadata):
            continue
        update: dict[str, Any] = {"turns": d.turns[:i]}
        withheld = set(t.metadata.get("withheld") or ())
        if withheld:  # miss_func: a held-out function is not offered before its turn
            update["candidate_tools"] = [x for x in d.candidate_tools if x.name not in withheld]
        out.append(PromptExample(d, category, d.model_copy(update=update), i))
    return out


def score_reply(example: PromptExample, parsed: Any) -> AstVerdict:
    """The verdict on one reply (`data_gen.format.ParsedMessage`) to one example."""
    kind = parsed.kind
    if example.category in IRRELEVANCE:
        if kind == "tool_calls":
            return _fail("irrelevance_error:called", "made a call on an irrelevant question")
        return _OK
    if example.category in RELEVANCE:  # any well-formed, non-empty call passes; its content is not checked
        if kind == "tool_calls" and parsed.tool_calls:
            return _OK
        return _fail("relevance_error:no_call", "no call on a question a function can serve")
    gold = example.entry.turns[example.turn]
    if gold.metadata.get("bfcl_expect") == "no_call":
        if kind == "tool_calls":
            return _fail("multi_turn:premature_call", "called on a turn whose required argument is missing")
        return _OK
    if kind != "tool_calls":
        return _fail(
            "malformed" if kind == "malformed" else "no_call",
            "no call" if kind == "reply" else "malformed output",
        )
    if example.category in MULTI_TURN:
        withheld = set(gold.metadata.get("withheld") or ())
        if parsed.tool_calls[0].name in withheld:
            return _fail(
                "multi_turn:held_out_function", f"called {parsed.tool_calls[0].name!r} before it was offered"
            )
        names = {c.name for c in gold.tool_calls or []}
        if parsed.tool_calls[0].name not in names:
            return _fail(
                "multi_turn:wrong_func_name",
                f"first call {parsed.tool_calls[0].name!r} is not among {sorted(names)}",
            )
        return _OK
    return check_calls(
        example.entry.candidate_tools, parsed.tool_calls, gold.metadata["acceptable"], example.category
    )


def _entry_system(d: Dialogue) -> str:
    return "\n\n".join((d.provenance.model_extra or {}).get("bfcl", {}).get("system", []))


def _attach_entry_system(model: Any) -> None:
    """Make `model.messages` append an entry's own system message to our system prompt."""
    base = getattr(model, "messages", None)
    if base is None or getattr(model, "_bfcl_entry_system", False):
        return

    def messages(d: Dialogue) -> list[dict[str, Any]]:
        msgs = base(d)
        extra = _entry_system(d)
        if extra and msgs and msgs[0].get("role") == "system":
            msgs = [{**msgs[0], "content": f"{msgs[0]['content']}\n\n{extra}"}, *msgs[1:]]
        return msgs

    model.messages = messages
    model._bfcl_entry_system = True


async def run_bfcl(
    model: Any,
    entries: Mapping[str, Sequence[Dialogue]],
    *,
    chunk: int = 64,
    progress: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Query `model` (anything with ``async respond(dialogues) -> [Reply]`` and a ``label``) on
    every entry of every category and score it. Returns (metrics, per-query records)."""
    from tqdm.auto import tqdm

    _attach_entry_system(model)
    examples = [ex for ds in entries.values() for d in ds for ex in prompt_examples(d)]
    records: list[dict[str, Any]] = []
    bar = tqdm(total=len(examples), desc="bfcl", unit="query", disable=not progress)
    for start in range(0, len(examples), chunk):
        batch = examples[start : start + chunk]
        replies = await model.respond([ex.prompt for ex in batch])
        for ex, reply in zip(batch, replies, strict=True):
            p = reply.parsed
            verdict = score_reply(ex, p)
            records.append(
                {
                    "id": ex.entry.id,
                    "category": ex.category,
                    "turn": ex.turn,
                    "kind": p.kind,
                    "raw": reply.raw,
                    "tool_calls": [{"name": c.name, "args": c.args} for c in p.tool_calls] or None,
                    "valid": verdict.valid,
                    "error_type": verdict.error_type or None,
                    "error": verdict.error or None,
                }
            )
        bar.update(len(batch))
    bar.close()
    return bfcl_metrics(records, label=getattr(model, "label", "")), records


def bfcl_metrics(records: Sequence[Mapping[str, Any]], *, label: str = "") -> dict[str, Any]:
    """Per-category and overall accuracy from per-query records (see `run_bfcl`)."""
    cats: dict[str, dict[str, Any]] = {}
    by_cat: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        by_cat.setdefault(r["category"], []).append(r)
    for cat in [c for c in ALL_CATEGORIES if c in by_cat] + sorted(set(by_cat) - set(ALL_CATEGORIES)):
        rs = by_cat[cat]
        entries: dict[str, bool] = {}
        for r in rs:
            entries[r["id"]] = entries.get(r["id"], True) and bool(r["valid"])
        n = len(entries)
        m: dict[str, Any] = {
            "accuracy": round(sum(entries.values()) / n, 6) if n else 0.0,
            "correct": sum(entries.values()),
            "n": n,
            "queries": len(rs),
            "tool_calls": sum(1 for r in rs if r["kind"] == "tool_calls"),
            "no_call": sum(1 for r in rs if r["kind"] == "reply"),
            "malformed": sum(1 for r in rs if r["kind"] == "malformed"),
            "errors": dict(Counter(r["error_type"] for r in rs if not r["valid"]).most_common()),
        }
        if cat in MULTI_TURN:
            m["turn_accuracy"] = round(sum(1 for r in rs if r["valid"]) / len(rs), 6) if rs else 0.0
        cats[cat] = m
    total = sum(m["n"] for m in cats.values())
    return {
        "model": label,
        "categories": cats,
        "overall": {
            "accuracy": round(sum(m["accuracy"] for m in cats.values()) / len(cats), 6) if cats else 0.0,
            "micro_accuracy": round(sum(m["correct"] for m in cats.values()) / total, 6) if total else 0.0,
            "n": total,
        },
    }


def compare_bfcl(
    base: Mapping[str, Any], tuned: Mapping[str, Any], *, tolerance: float = 0.02
) -> dict[str, Any]:
    """Per-category deltas tuned - base and the categories that regressed by more than `tolerance`."""
    rows = {}
    for cat in tuned["categories"]:
        if cat in base["categories"]:
            b, t = base["categories"][cat]["accuracy"], tuned["categories"][cat]["accuracy"]
            rows[cat] = {"base": b, "tuned": t, "delta": round(t - b, 6)}
    regressions = [c for c, r in rows.items() if r["delta"] < -tolerance]
    return {"categories": rows, "regressions": regressions, "tolerance": tolerance}


def format_bfcl(metrics: Mapping[str, Any], comparison: Mapping[str, Any] | None = None) -> str:
    """A markdown table of per-category accuracy (with deltas against a baseline when given)."""
    cmp_rows = (comparison or {}).get("categories", {})
    head = "| category | n | accuracy | no call | malformed |" + (" base | delta |" if cmp_rows else "")
    sep = "|---|---:|---:|---:|---:|" + ("---:|---:|" if cmp_rows else "")
    lines = [f"BFCL parity check: {metrics.get('model', '')}", "", head, sep]
    for cat, m in metrics["categories"].items():
        row = f"| {cat} | {m['n']} | {m['accuracy']:.4f} | {m['no_call']} | {m['malformed']} |"
        if cmp_rows:
            c = cmp_rows.get(cat)
            row += f" {c['base']:.4f} | {c['delta']:+.4f} |" if c else " - | - |"
        lines.append(row)
    o = metrics["overall"]
    lines.append(
        f"| overall (mean of categories) | {o['n']} | {o['accuracy']:.4f} | | |"
        + (" | |" if cmp_rows else "")
    )
    if comparison is not None:
        regs = comparison["regressions"]
        lines.append("")
        lines.append(
            f"regressions beyond {comparison['tolerance']:.2f}: {', '.join(regs)}" if regs else
            f"no category regressed by more than {comparison['tolerance']:.2f}"
        )  # fmt: skip
    return "\n".join(lines)


def write_bfcl_run(
    out: str | Path,
    metrics: Mapping[str, Any],
    records: Sequence[Mapping[str, Any]],
    *,
    comparison: Mapping[str, Any] | None = None,
) -> Path:
    """``bfcl_metrics.json``, ``bfcl_transcripts.jsonl`` (one record per query) and
    ``bfcl_report.md`` in the run folder `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    payload = dict(metrics)
    if comparison is not None:
        payload["comparison"] = comparison
    (out / "bfcl_metrics.json").write_text(
        json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    with (out / "bfcl_transcripts.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    (out / "bfcl_report.md").write_text(format_bfcl(metrics, comparison) + "\n", encoding="utf-8")
    return out
