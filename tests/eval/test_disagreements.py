"""`diaforge.eval.disagreements.classify`: each kind forced once, with the teacher's turns of a
fixture dialogue as the reference, and two agreements that must stay agreements."""

from __future__ import annotations

import pytest
from _repo import ROOT

from diaforge.eval.disagreements import DISAGREEMENT_KINDS, classify, teacher_move
from diaforge.eval.policies import REFUSAL_REPLY, REFUSAL_THOUGHT
from diaforge.schema import Dialogue, ToolCall, Turn, load_dialogues

FIXTURE = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"


@pytest.fixture(scope="module")
def logs() -> Dialogue:
    """fx-002: get_transport_action_logs(nodeId, transportRequestId) among four transport tools."""
    return next(d for d in load_dialogues(FIXTURE) if d.id == "fx-002")


def _said(d: Dialogue, upto: int) -> str:
    return "\n".join(t.content for t in d.turns[:upto] if t.role == "user")


def _call(name: str, **args: object) -> Turn:
    return Turn(role="assistant", thought="I call it.", tool_calls=[ToolCall(name=name, args=args)])


def _reply(text: str) -> Turn:
    return Turn(role="assistant", thought="I answer.", content=text)


GOLD = "get_transport_action_logs"
RIGHT = {"nodeId": 437292, "transportRequestId": 957841}

# (kind, the model's turn, its kind, the teacher's turn index in fx-002 or "refusal", extra words said)
CASES = [
    ("premature_call", _call(GOLD, **RIGHT), "tool_calls", 1, ""),
    ("near_duplicate", _call("get_transport_request_status", **RIGHT), "tool_calls", 5, ""),
    ("wrong_tool", _call("list_transport_nodes", **RIGHT), "tool_calls", 5, ""),
    ("invented_value", _call(GOLD, nodeId=111, transportRequestId=957841), "tool_calls", 5, ""),
    ("wrong_key", _call(GOLD, nodeId=437292), "tool_calls", 5, ""),
    ("wrong_key", _call(GOLD, nodeId=957841, transportRequestId=437292), "tool_calls", 5, ""),
    ("wrong_value", _call(GOLD, nodeId=1234, transportRequestId=957841), "tool_calls", 5, "Or node 1234."),
    ("repeated_question", _reply("Could you give me the node ID again?"), "reply", 5, ""),
    ("needless_question", _reply("Is it the logs you want, or the status?"), "reply", 5, ""),
    ("needless_question", _reply("Which of my tools do you mean?"), "reply", 3, ""),
    (
        "value_before_tool",
        _reply("Could you give me the node ID and the transport request ID?"),
        "reply",
        1,
        "",
    ),
    ("missed_refusal", _reply("Which of these do you need?"), "reply", "refusal", ""),
    ("needless_refusal", _reply("I'm sorry, none of the tools I have can do that."), "reply", 1, ""),
    ("malformed", _reply("<think>half"), "malformed", 1, ""),
    ("truncated", _reply("Could you give me"), "truncated", 1, ""),
    ("other", _reply("Okay."), "reply", 1, ""),
]


@pytest.mark.parametrize(
    ("kind", "model", "model_kind", "at", "more"), CASES, ids=[f"{c[0]}-{n}" for n, c in enumerate(CASES)]
)
def test_each_kind_is_named(
    logs: Dialogue, kind: str, model: Turn, model_kind: str, at: int | str, more: str
) -> None:
    if at == "refusal":
        teacher, upto = Turn(role="assistant", thought=REFUSAL_THOUGHT, content=REFUSAL_REPLY), 1
    else:
        teacher, upto = logs.turns[at], at
    near = {"get_transport_request_status"}
    said = "\n".join(filter(None, [_said(logs, upto), more]))
    verdict = classify(
        model, model_kind, teacher, candidates=logs.candidate_tools, gold=logs.gold_tool, said=said, near=near
    )
    assert verdict.kind == kind, verdict
    assert kind in DISAGREEMENT_KINDS


def test_every_kind_is_forced_by_a_case() -> None:
    assert {c[0] for c in CASES} == set(DISAGREEMENT_KINDS)


def test_the_same_move_agrees(logs: Dialogue) -> None:
    call = classify(
        _call(GOLD, nodeId="437292", transportRequestId=957841),
        "tool_calls",
        logs.turns[5],
        candidates=logs.candidate_tools,
        gold=logs.gold_tool,
        said=_said(logs, 5),
    )
    assert call.kind is None and call.model_move == call.teacher_move == "call"
    ask = classify(
        _reply("Do you need a transport's status, or the log of what was done?"),
        "reply",
        logs.turns[1],
        candidates=logs.candidate_tools,
        gold=logs.gold_tool,
        said=_said(logs, 1),
    )
    assert ask.kind is None and ask.teacher_move == "ask_tool"


def test_the_teachers_move_is_read_by_its_phase(logs: Dialogue) -> None:
    moves = [teacher_move(t, logs.candidate_tools) for t in logs.turns if t.role == "assistant"]
    assert moves == ["ask_tool", "ask_value", "call"]
