"""Clarification quality (diaforge.eval.clarification): hand-written transcripts over the three tools of
tests/eval/test_decisions.py, every option set, share and count worked out by hand from the
module docstring; the report section and its place in ``metrics.json``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diaforge.eval.clarification import (
    CLARIFICATION_KEYS,
    clarification_section,
    compute_clarification,
    decision_quality_section,
)
from diaforge.eval.compare import compare_runs
from diaforge.eval.decisions import replay
from diaforge.eval.report import write_run
from diaforge.eval.tool_specs import DialogueTools, ToolSpecs
from diaforge.eval.transcripts import Transcript
from tests.eval.test_decisions import (
    CANDIDATES,
    PASSWORD,
    VAGUE,
    WHICH,
    D,
    call,
    reply,
    transcript,
    user,
)

# P: asks which tool (offers the ticket and the laptop of the three open), the user picks the
# ticket; then asks about the laptop alone, which is ruled out and the ticket already settled;
# asks for the values, then for the queue again once given; calls.
P = transcript(
    "P",
    [
        user(VAGUE),
        reply(WHICH),
        user("The one for a broken printer."),
        reply("Do you want a new laptop?"),
        user("No, a ticket for the printer."),
        reply("What is the queue and the priority (one of low or high)?"),
        user("The queue is Networking and the priority is high."),
        reply("Just to confirm, what is the queue?"),
        user("Networking."),
        call("open_ticket", queue="Networking", priority="high"),
    ],
)
# Q: an open question (offers nothing) while all three are open; the answer settles the room.
Q = transcript(
    "Q",
    [
        user(VAGUE),
        reply("Could you tell me more?"),
        user("I need to reserve a meeting room."),
        reply("Which room?"),
        user("The room is Everest."),
        call("book_meeting_room", room="Everest"),
    ],
    gold="book_meeting_room",
)
# R: the opening settles the room.
R = transcript(
    "R",
    [
        user("I want to book a room."),
        reply("Which room?"),
        user("The room is Everest."),
        call("book_meeting_room", room="Everest"),
    ],
    gold="book_meeting_room",
)
# S: asks the gold tool's value at once and calls: the tool is never settled.
S = transcript(
    "S",
    [
        user(VAGUE),
        reply("What is the employee ID?"),
        user("The employee ID is E-7."),
        call("order_laptop", employee_id="E-7"),
    ],
    gold="order_laptop",
)

SPECS = ToolSpecs(
    {**{t: DialogueTools(CANDIDATES) for t in "PQRS"}, "D": DialogueTools(CANDIDATES, PASSWORD)}
)


def test_the_questions_of_p_point_by_point() -> None:
    points = replay(P, SPECS.dialogues["P"])
    assert [(p.move, p.open, p.offered, p.known_named) for p in points] == [
        (
            "ask_tool",
            ("open_ticket", "book_meeting_room", "order_laptop"),
            ("open_ticket", "order_laptop"),
            (),
        ),
        ("ask_tool", ("open_ticket",), ("order_laptop",), ()),  # a ruled-out tool, the tool settled
        ("ask_value", ("open_ticket",), (), ()),
        ("ask_value", ("open_ticket",), (), ("queue",)),  # the queue was given
        ("call", ("open_ticket",), (), ()),
    ]


def test_clarification_by_hand() -> None:
    c = compute_clarification([P, Q, R, S, D], SPECS)
    assert list(c) == list(CLARIFICATION_KEYS)
    assert c["n"] == 4  # the positive split only: D, a retrieval miss, is left out
    # Tool questions: P1 (Q = {ticket, laptop}, O = all 3), P2 (Q = {laptop}, O = {ticket}),
    # Q1 (Q = {}, O = all 3).
    assert (c["tool_questions_n"], c["gold_offered_n"], c["gold_offered"]) == (3, 1, round(1 / 3, 6))
    assert (c["open_n"], c["offered_n"], c["open_offered_n"], c["ruled_out_offered_n"]) == (7, 3, 2, 1)
    assert c["option_recall"] == round(2 / 7, 6) and c["option_precision"] == round(2 / 3, 6)
    # Value questions: P3, P4, Q2, R1, S1; P4 asks for the queue again, P2 which tool when one is open.
    assert (c["value_questions_n"], c["questions_n"]) == (5, 8)
    assert (c["asks_known_value_n"], c["asks_settled_tool_n"], c["redundant_n"]) == (1, 1, 2)
    assert c["redundant"] == 0.25
    # Settled on the gold tool at assistant turn 2 (P, Q) and 1 (R); S never.
    assert c["settled_n"] == 3 and c["turns_to_settle"] == round(5 / 3, 6)


def test_nothing_to_score_is_not_computed() -> None:
    c = compute_clarification([S], SPECS)
    assert c["tool_questions_n"] == 0 and c["option_recall"] is None and c["option_precision"] is None
    assert c["gold_offered"] is None and c["turns_to_settle"] is None
    assert c["redundant"] == 0.0  # one value question, not redundant


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_report_section_shows_each_share_with_its_counts(tmp_path: Path) -> None:
    metrics = write_run(tmp_path / "run", [P, Q, R, S], model_label="m", tools=SPECS)
    assert metrics["clarification"]["dynamic"]["open_offered_n"] == 2
    section = "\n".join(clarification_section(metrics))
    assert (  # each share with its Wilson interval and counts
        "| Dynamic | 3 | 0.33 [0.06, 0.79] (1/3) | 0.29 [0.08, 0.64] (2/7) | 0.67 [0.21, 0.94] (2/3) | 0.25 [0.07, 0.59] (2/8) | 3/4 | 1.67 |"
    ) in section
    report = (tmp_path / "run" / "report.md").read_text()
    assert (
        report.index("## The anatomy")
        < report.index("## Clarification quality")
        < report.index("## Malformed")
    )
    assert clarification_section({"clarification": None})[-1].startswith("Not computed")
    assert clarification_section({}) == []  # a metrics.json from before the section: nothing


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_compare_sets_the_runs_side_by_side(tmp_path: Path) -> None:
    write_run(tmp_path / "a", [P, Q, R, S], model_label="a", tools=SPECS)
    write_run(tmp_path / "b", [P], model_label="b")  # no tool specs: "–"
    compare_runs([tmp_path / "a", tmp_path / "b"], out_dir=tmp_path / "cmp", json_path=tmp_path / "r.json")
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    # a: 12 points, 8 agree (P: 3 of 5, Q: 3 of 3, R: 2 of 2, S: 0 of 2); 4 calls, S's unsettled
    assert (
        "| a | 0.67 [0.39, 0.86] (8/12) | 0.25 [0.05, 0.70] (1/4) | 0.29 [0.08, 0.64] (2/7) | 0.67 [0.21, 0.94] (2/3) |"
    ) in md
    assert "| b | – | – | – | – |" in md
    report = json.loads((tmp_path / "r.json").read_text())
    assert (
        report["a"]["clarification"]["dynamic"]["tool_questions_n"] == 3 and report["b"]["decisions"] is None
    )
    assert decision_quality_section([("b", report["b"])]) == []


def test_an_option_with_or_inside_names_no_ruled_out_tool() -> None:
    """The opening leaves the two counsels open (the hotline shares none of its words); the
    question offers both, one of them in words that hold two "or"s. By hand: O_1 = Q_1 = {trademark,
    competition}: recall 2/2, precision 2/2, no ruled-out tool named (the hotline, whose
    "concern" the last piece shares, was read as a third option before)."""
    from tests.data_gen.test_offered_options import COMPETITION, COUNSEL, TWO_COUNSELS

    t = Transcript(
        id="C",
        mode="dynamic",
        seed_tool=COMPETITION.name,
        candidate_tools=[c.name for c in COUNSEL],
        turns=[
            user("I need counsel to check something."),
            reply(TWO_COUNSELS),
            user("The one about merger filing."),
            call(COMPETITION.name),
        ],
        ended="tool_call",
    )
    specs = ToolSpecs({"C": DialogueTools(COUNSEL)})
    points = replay(t, specs.dialogues["C"])
    assert [(p.move, p.open, p.offered) for p in points] == [
        ("ask_tool", (COUNSEL[0].name, COMPETITION.name), (COUNSEL[0].name, COMPETITION.name)),
        ("call", (COMPETITION.name,), ()),
    ]
    c = compute_clarification([t], points=[points])
    assert (c["open_n"], c["offered_n"], c["open_offered_n"], c["ruled_out_offered_n"]) == (2, 2, 2, 0)
    assert c["option_recall"] == 1.0 and c["option_precision"] == 1.0 and c["gold_offered"] == 1.0
