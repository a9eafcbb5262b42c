"""When2Call (Ross, Mahabaleshwarkar and Suhara, NAACL 2025; github.com/NVIDIA/When2Call): its
test records into our schema. Its official metrics over the two prediction files its scripts write
are `diaforge.eval.peers.when2call_scores`.

A test record (``data/test/when2call_test_mcq.jsonl``, 3,652 records; its 300-record subset
``when2call_test_llm_judge.jsonl`` for the LLM-as-a-judge evaluation), one JSON object a line::

    {"uuid", "source": "BFCL v2 Live Multiple", "source_id", "question",
     "orig_question"?, "correct_answer": "tool_call" | "request_for_info" | "cannot_answer" | "direct",
     "answers": {"direct": str, "tool_call": "<JSON call {name, arguments}>",
                 "request_for_info": str, "cannot_answer": str},
     "target_tool": "<JSON tool>" | null, "tools": ["<JSON tool>", ...],
     "orig_tools"?: [...], "held_out_param"?: str}

Every item is one decision: the tools shown, one user question, and the correct behaviour among
the four; ``answers`` holds one reply of each behaviour (the multiple-choice options, in that key
order). `load_when2call` makes each item a two-turn `Dialogue`: the question, then the reference
reply of the correct behaviour; ``tool_call``: one call (``answers.tool_call``; `seed_tool` its
tool, `gold_args` its arguments); ``request_for_info``: the question asking for
``held_out_param`` (action ``request``; `seed_tool` the ``target_tool``); ``cannot_answer``: the
refusal (action ``response_fail``, no gold tool); ``direct``: the answer (action ``response``, no
gold tool). The uuid, source, behaviour, all four answers and ``held_out_param`` stay in
``provenance.when2call``; ``orig_tools`` and ``orig_question`` are not used by When2Call's
evaluation and are dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.eval.peers import ImportReport, ImportResult, make_dialogue, read_json_lines
from diaforge.schema import ACT_OF_ACTION, Dialogue, Tool, ToolCall, Turn

__all__ = [
    "CATEGORIES",
    "TEST_FILES",
    "MalformedRecord",
    "When2CallItem",
    "load_when2call",
    "parse_item",
    "read_when2call",
]

CATEGORIES: tuple[str, ...] = ("direct", "tool_call", "request_for_info", "cannot_answer")
"""The four behaviours, in the key order of a record's ``answers`` (the choice order)."""
TEST_FILES: tuple[str, ...] = ("when2call_test_mcq.jsonl", "when2call_test_llm_judge.jsonl")
"""The test files a folder is searched for, in order (the judge file is a subset of the MCQ file)."""
_ACTION_OF = {
    "tool_call": "call",
    "request_for_info": "request",
    "cannot_answer": "response_fail",
    "direct": "response",
}


class MalformedRecord(Exception):
    """A record (or a prediction line) that is not as When2Call writes it; the readers raise it as
    an `InputError` naming the file and the line."""


@dataclass(frozen=True)
class When2CallItem:
    """One When2Call test record, validated.

    `tools` are the tool specs shown (decoded from their JSON strings); `target_tool` the tool a
    ``tool_call`` or ``request_for_info`` item is about; `answers` the four replies by behaviour,
    in the record's key order; `held_out_param` the parameter removed from a
    ``request_for_info`` question; `line` its line in the file."""

    uuid: str
    source: str
    source_id: str
    question: str
    correct_answer: str
    answers: dict[str, str]
    tools: list[dict[str, Any]]
    target_tool: dict[str, Any] | None = None
    held_out_param: str | None = None
    line: int = 0

    @property
    def no_tools(self) -> bool:
        return not self.tools


def _json_object(value: Any, what: str) -> dict[str, Any]:
    """A tool or call given as a JSON string (the test files) or already decoded (the judge log)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise MalformedRecord(f"{what} is not JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        raise MalformedRecord(f"{what} must be a JSON object with a 'name'")
    return value


def parse_item(obj: Any, line: int = 0) -> When2CallItem:
    """One test record (a decoded JSON object) as a `When2CallItem`; `MalformedRecord` names what
    is wrong with it."""
    if not isinstance(obj, dict):
        raise MalformedRecord("a record must be a JSON object")
    for key in ("uuid", "question", "correct_answer"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            raise MalformedRecord(f"'{key}' must be a non-empty string")
    gold = obj["correct_answer"]
    if gold not in CATEGORIES:
        raise MalformedRecord(f"correct_answer {gold!r} is not one of {', '.join(CATEGORIES)}")
    answers = obj.get("answers")
    if not isinstance(answers, dict) or set(answers) != set(CATEGORIES):
        raise MalformedRecord(f"'answers' must hold exactly {', '.join(CATEGORIES)}")
    if not all(isinstance(v, str) for v in answers.values()):
        raise MalformedRecord("every answer must be a string")
    tools = obj.get("tools")
    if not isinstance(tools, list):
        raise MalformedRecord("'tools' must be a list")
    target = obj.get("target_tool")
    held_out = obj.get("held_out_param")
    if held_out is not None and not isinstance(held_out, str):
        raise MalformedRecord("'held_out_param' must be a string")
    return When2CallItem(
        uuid=obj["uuid"],
        source=str(obj.get("source") or ""),
        source_id=str(obj.get("source_id") or ""),
        question=obj["question"],
        correct_answer=gold,
        answers=dict(answers),
        tools=[_json_object(t, f"tools[{k}]") for k, t in enumerate(tools)],
        target_tool=None if target is None else _json_object(target, "target_tool"),
        held_out_param=held_out,
        line=line,
    )


def _test_file(src: str | Path) -> Path:
    p = Path(src)
    if p.is_dir():
        for sub in (p, p / "data" / "test", p / "test"):
            for name in TEST_FILES:
                if (sub / name).is_file():
                    return sub / name
        raise InputError(f"no {' or '.join(TEST_FILES)} in this folder", path=p)
    return p


def read_when2call(src: str | Path) -> list[When2CallItem]:
    """The items of a When2Call test file (or of a folder holding one, the MCQ file first). A
    malformed record or a repeated uuid raises `InputError` naming the file and the line."""
    path = _test_file(src)
    items: list[When2CallItem] = []
    seen: set[str] = set()
    for lineno, obj in read_json_lines(path):
        try:
            item = parse_item(obj, lineno)
        except MalformedRecord as exc:
            raise InputError(str(exc), path=path, record=lineno) from None
        if item.uuid in seen:
            raise InputError(f"uuid {item.uuid!r} appears twice", path=path, record=lineno)
        seen.add(item.uuid)
        items.append(item)
    if not items:
        raise InputError("no records", path=path)
    return items


def _tool(spec: dict[str, Any]) -> Tool:
    return Tool(
        name=spec["name"],
        description=str(spec.get("description") or ""),
        parameters=spec.get("parameters"),
        metadata={"source": "when2call"},
    )


def _reference_turn(item: When2CallItem) -> tuple[Turn, str | None, dict[str, Any]]:
    """(the reference assistant turn, the gold tool, the gold arguments) of an item."""
    action = _ACTION_OF[item.correct_answer]
    if item.correct_answer == "tool_call":
        call = _json_object(item.answers["tool_call"], "answers.tool_call")
        args = call.get("arguments", {})
        if not isinstance(args, dict):
            raise MalformedRecord("answers.tool_call.arguments must be an object")
        turn = Turn(
            role="assistant",
            tool_calls=[ToolCall(name=call["name"], args=args)],
            act=ACT_OF_ACTION[action],
            action=action,
        )
        return turn, call["name"], dict(args)
    turn = Turn(
        role="assistant",
        content=item.answers[item.correct_answer],
        act=ACT_OF_ACTION[action],
        action=action,
    )
    seed = (
        item.target_tool["name"] if item.correct_answer == "request_for_info" and item.target_tool else None
    )
    return turn, seed, {}


def _dialogue(item: When2CallItem, path: Path) -> Dialogue:
    try:
        tools = [_tool(spec) for spec in item.tools]
        turn, seed, gold_args = _reference_turn(item)
    except (ValidationError, MalformedRecord) as exc:
        msg = str(exc.errors()[0].get("msg")) if isinstance(exc, ValidationError) else str(exc)
        where = f"{item.uuid}: tool " if isinstance(exc, ValidationError) else f"{item.uuid}: "
        raise InputError(where + msg.removeprefix("Value error, "), path=path, record=item.line) from None
    extra = {
        "uuid": item.uuid,
        "source": item.source,
        "source_id": item.source_id,
        "correct_answer": item.correct_answer,
        "answers": item.answers,
        "held_out_param": item.held_out_param,
        "file": path.name,
    }
    return make_dialogue(
        "when2call",
        extra,
        path=path,
        record=item.line,
        entry_id=f"when2call-{item.uuid}",
        seed_tool=seed,
        candidate_tools=tools,
        gold_args=gold_args,
        turns=[Turn(role="user", content=item.question), turn],
    )


def load_when2call(src: str | Path) -> ImportResult:
    """Import a When2Call test file (or a folder holding one) as our dialogues, with counts: items
    per behaviour and per source, tools shown (0, 1, 2+), no-tool cannot_answer items."""
    path = _test_file(src)
    items = read_when2call(path)
    dialogues = [_dialogue(item, path) for item in items]
    shown = Counter("0" if len(i.tools) == 0 else "1" if len(i.tools) == 1 else "2+" for i in items)
    report = ImportReport(source="when2call", path=str(path), loaded=len(dialogues))
    report.counts = {
        "items": len(items),
        "behaviours": {c: n for c in CATEGORIES if (n := sum(i.correct_answer == c for i in items))},
        "sources": dict(sorted(Counter(i.source for i in items).items())),
        "tools_shown": {k: shown[k] for k in ("0", "1", "2+")},
        "no_tool_cannot_answer": sum(i.correct_answer == "cannot_answer" and i.no_tools for i in items),
        "held_out_params": sum(i.held_out_param is not None for i in items),
    }
    return ImportResult(dialogues, report)
