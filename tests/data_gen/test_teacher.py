"""The scripted teacher's question about which tool: it offers every tool still open, and it
replays a history by what each earlier question offered, as that question's thought lists it."""

from __future__ import annotations

import random

from diaforge.data_gen.agents import SELECTION, DialogueState, ScriptedTeacher, options_in_thought
from diaforge.schema import Persona, Tool, Turn


def _tool(name: str, description: str) -> Tool:
    return Tool(
        name=name, description=description, parameters={"type": "object", "properties": {}, "required": []}
    )


FIVE = [
    _tool("book_flight", "Book a flight for a business trip."),
    _tool("book_rail_ticket", "Book a train ticket for a business trip."),
    _tool("book_hotel", "Book a hotel room for a business trip."),
    _tool("book_rental_car", "Book a rental car for a business trip."),
    _tool("book_taxi", "Book a taxi to the airport."),
]
VAGUE = "Hello, I need some help please."  # supports no candidate more than another: all five open


def _state(turns: list[Turn]) -> DialogueState:
    return DialogueState(
        gold=FIVE[4],
        candidates=FIVE,
        persona=Persona(id="p", description="someone"),
        goal="",
        gold_args={},
        turns=turns,
    )


def test_a_question_offers_all_five_open_tools_and_its_thought_lists_them() -> None:
    teacher = ScriptedTeacher()
    state = _state([Turn(role="user", content=VAGUE)])
    assert teacher.remaining(state) == FIVE
    turn = teacher.ask(state, FIVE, random.Random(0))
    assert options_in_thought(turn.thought, FIVE) == FIVE
    lookup = ScriptedTeacher(reasoning="lookup").ask(state, FIVE, random.Random(0))
    assert options_in_thought(lookup.thought, FIVE) == FIVE


def test_an_earlier_question_is_replayed_by_what_its_thought_lists() -> None:
    # A question written by a teacher that offered only the first two; "none of those" then leaves
    # the three it did not offer, not the one tool the whole pool would leave out.
    two = ScriptedTeacher().ask(_state([Turn(role="user", content=VAGUE)]), FIVE[:2], random.Random(1))
    assert options_in_thought(two.thought, FIVE) == FIVE[:2]
    history = [Turn(role="user", content=VAGUE), two, Turn(role="user", content="None of those.")]
    assert ScriptedTeacher().remaining(_state(history)) == FIVE[2:]
    # A question with no thought (another model's) counts as offering the whole pool.
    bare = Turn(role="assistant", content="Which one?", phase=SELECTION)
    history = [Turn(role="user", content=VAGUE), bare, Turn(role="user", content="The taxi to the airport.")]
    assert ScriptedTeacher().remaining(_state(history)) == [FIVE[4]]
