"""BFCL's multi-turn entries as dialogues (`multi_turn_dialogue`): one gold assistant turn per turn.

The candidate tools are the documentation of the entry's ``involved_classes``
(`MULTI_TURN_DOC_FILES`, under ``multi_turn_func_doc/``) minus its ``excluded_function``. Each
BFCL turn gives its user message(s), then a gold assistant turn: the turn's call strings parsed
into calls (positional arguments named from the documentation), or, for a ``[]`` turn, the fixed
reply of our dialogues (BFCL has no reply text): the question `MISS_PARAM_REPLY` (a required
argument is missing), or, while a function of ``missed_function`` is held back
(multi_turn_miss_func), the refusal `MISS_FUNC_REPLY`. A held-back function comes back on its turn
with BFCL's user message `MISSED_FUNCTION_PROMPT`; until then the assistant turns name it in
``metadata["withheld"]``. The table of `diaforge.eval.peers.bfcl.importer` shows the whole mapping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.peers import need, parse_call_string, read_json_lines
from diaforge.eval.peers.bfcl.entries import answer_of, bfcl_dialogue
from diaforge.schema import Dialogue, Tool, ToolCall, Turn
from diaforge.tool_records import tool_from_record

__all__ = [
    "MISSED_FUNCTION_PROMPT",
    "MISS_FUNC_REPLY",
    "MISS_PARAM_REPLY",
    "MULTI_TURN_DOC_FILES",
    "multi_turn_dialogue",
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


def _class_docs(folder: Path, cls: str, cache: dict[str, list[Tool]], path: Path, lineno: int) -> list[Tool]:
    if cls not in cache:
        doc = folder / "multi_turn_func_doc" / MULTI_TURN_DOC_FILES[cls]
        cache[cls] = [tool_from_record(obj, path=doc, record=n) for n, obj in read_json_lines(doc)]
    return cache[cls]


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


def multi_turn_dialogue(
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
    answer_line, ground_truth = answer_of(answers, entry_id, answer_path, file, lineno)
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
    return bfcl_dialogue(
        entry_id=entry_id, category=category, tools=list(tools.values()), turns=turns,
        seed=first.name if first else None, args=dict(first.args) if first else {}, extra=extra,
        path=file, lineno=lineno,
    )  # fmt: skip
