"""DICE-Score (DICE-Bench, Eq. 1) on cases computed by hand, and the item counters.

Hand computations (α = e², ln(1 + e²) = ln 8.389056 = 2.126928, ln(1 + 2e²) = ln 15.778112 =
2.758624, ln(1 + 4e²) = ln 30.556224 = 3.419568):

* S = (1, 1, 1, 1), T = 4: 4 · sqrt(16) / (4 · 2.126928) = 16 / 8.507712 = 1.880647
* S = (4), T = 4: 1 · sqrt(4) / 3.419568 = 0.584869
* S = (0, 2, 0, 1), T = 3: 2 · sqrt(12) / (2.758624 + 2.126928) = 6.928203 / 4.885552 = 1.418100
* S = (1, 1, 1, 2), T = 3: min(4, 3) · sqrt(12) / (3 · 2.126928 + 2.758624) = 10.392305 / 9.139408 = 1.137087
* α = 1, S = (1, 1), T = 2: 2 · 2 / (2 ln 2) = 2.885390
* S = (1, 1), T = 2: 4 / 4.253856 = 0.940323; S = (1, 1, 0): 2 · sqrt(6) / 4.253856 = 1.151656
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

import pytest

import diaforge.eval.metrics as metrics
from diaforge import dice
from diaforge.dice import (
    DiceItem,
    LLMItemCounter,
    count_items,
    dialogue_dice,
    dialogue_dice_counts,
    dice_items,
    dice_score,
    item_mentioned,
)
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn


@pytest.mark.parametrize(
    ("counts", "num_items", "expected"),
    [
        ([1, 1, 1, 1], 4, 1.880647),
        ([4], 4, 0.584869),
        ([0, 2, 0, 1], 3, 1.418100),
        ([1, 1, 1, 2], 3, 1.137087),
        ([1, 1], 2, 0.940323),
        ([1, 1, 0], 2, 1.151656),
    ],
)
def test_dice_score_matches_hand_computation(counts: list[int], num_items: int, expected: float) -> None:
    assert dice_score(counts, num_items) == pytest.approx(expected, abs=1e-4)


def test_dice_score_alpha_is_a_parameter() -> None:
    assert dice_score([1, 1], 2, alpha=1.0) == pytest.approx(2 / math.log(2), abs=1e-6)
    assert dice_score([1, 1], 2, alpha=1.0) == pytest.approx(2.885390, abs=1e-4)


@pytest.mark.parametrize(
    ("counts", "num_items"),
    [([0, 0, 0], 3), ([0], 1), ([], 3), ([1, 2], 0), ([], 0)],
)
def test_dice_score_is_zero_where_undefined(counts: list[int], num_items: int) -> None:
    assert dice_score(counts, num_items) == 0.0


def test_zero_count_utterances_raise_the_score_and_repetition_lowers_it() -> None:
    assert dice_score([1, 1, 0], 2) > dice_score([1, 1], 2)
    assert dice_score([2, 2], 2) < dice_score([1, 1], 2)


@pytest.mark.parametrize(
    ("counts", "num_items", "alpha"),
    [([-1, 1], 2, math.e**2), ([1], -1, math.e**2), ([1], 1, 0.0), ([1], 1, -2.0)],
)
def test_dice_score_rejects_bad_input(counts: list[int], num_items: int, alpha: float) -> None:
    with pytest.raises(ValueError):
        dice_score(counts, num_items, alpha)


def test_eval_metrics_reexports_the_dice_api() -> None:
    assert metrics.dice_score is dice.dice_score
    assert metrics.count_items is dice.count_items
    assert metrics.LLMItemCounter is dice.LLMItemCounter
    assert "dice_score" in metrics.__all__


# --------------------------------------------------------------------------------------------
# Deterministic item counting
# --------------------------------------------------------------------------------------------


def test_dice_items_is_the_name_plus_one_item_per_argument() -> None:
    items = dice_items(
        [ToolCall(name="book_hotel", args={"city": "Vienna", "country": "Austria", "date": "07-27"})]
    )
    assert len(items) == 4  # DICE-Bench: book_hotel(Vienna, Austria, 07-27) -> T = 4
    assert items[0].is_function and items[1].param == "city"


def test_function_name_is_mentioned_when_all_its_words_are() -> None:
    item = DiceItem("approve_internal_training_request")
    assert item_mentioned("Please approve the internal training requests.", item)
    assert not item_mentioned("Please approve the training request.", item)
    assert item_mentioned("I want to getInvoiceStatus now", DiceItem("get_invoice_status"))


@pytest.mark.parametrize(
    ("utterance", "value", "expected"),
    [
        ("Set the material ID to MAT-228581 please", "MAT-228581", True),
        ("Set the material ID to mat-228581 please", "MAT-228581", True),
        ("Set it to MAT-2285810", "MAT-228581", False),
        ("we are in   San  Francisco", "San Francisco", True),
        ("the quantity is 9", 9.0, True),
        ("the quantity is 19", 9, False),
        ("about 12.5 hours", 12.5, True),
        ("a budget of 1,000 euros", 1000, True),
        ("a budget of 1000 euros", 1000, True),
        ("nothing said", None, False),
        ("", "", False),
        ("tags red and blue", ["red", "blue"], True),
        ("tags red only", ["red", "blue"], False),
    ],
)
def test_argument_values_are_matched_by_their_rendering(
    utterance: str, value: object, expected: bool
) -> None:
    assert item_mentioned(utterance, DiceItem("f", "p", value)) is expected


def test_a_flag_is_mentioned_by_naming_it() -> None:
    assert item_mentioned("mark it urgent", DiceItem("f", "is_urgent", True))
    assert item_mentioned("it is not urgent", DiceItem("f", "is_urgent", False))
    assert not item_mentioned("whenever you like", DiceItem("f", "is_urgent", True))


def test_count_items_counts_each_item_once_per_utterance() -> None:
    items = dice_items([("find_restaurants", {"cuisine": "Thai", "location": "Boston"})])
    assert count_items("Thai in Boston, Thai again, find restaurants", items) == 3
    assert count_items("nothing relevant", items) == 0


def _dialogue(users: list[str], calls: list[tuple[int, ToolCall]] | None = None, **kw: object) -> Dialogue:
    tool = Tool(
        name="find_restaurants",
        parameters={
            "type": "object",
            "properties": {"cuisine": {"type": "string"}, "location": {"type": "string"}},
        },
    )
    turns: list[Turn] = []
    for u in users:
        turns.append(Turn(role="user", content=u))
        turns.append(Turn(role="assistant", content="ok?", thought="t", act="seek_info", action="request"))
    for pos, call in calls or []:
        turns.insert(
            pos, Turn(role="assistant", thought="t", tool_calls=[call], act="function_calling", action="call")
        )
    return Dialogue(
        id="d",
        seed_tool="find_restaurants",
        candidate_tools=[tool],
        persona=Persona(id="p", description="p"),
        gold_args=kw.get("gold_args", {"cuisine": "Thai", "location": "Boston"}),
        turns=turns,
    )


def test_dialogue_dice_uses_the_gold_call_when_there_is_no_call_turn() -> None:
    d = _dialogue(["I want Thai food", "somewhere in Boston", "thanks"])
    counts, total = dialogue_dice_counts(d)
    assert (counts, total) == ([1, 1, 0], 3)
    assert dialogue_dice(d) == pytest.approx(dice_score([1, 1, 0], 3))


def test_an_utterance_is_matched_only_against_later_calls() -> None:
    first = ToolCall(name="find_restaurants", args={"cuisine": "Thai", "location": "Boston"})
    second = ToolCall(name="find_restaurants", args={"cuisine": "Thai", "location": "Paris"})
    # user0, asst, [call1 at 2], user1, asst, user2, asst, [call2 at the end]
    d = _dialogue(["Thai in Boston", "now Paris, also Thai", "bye"], [(2, first)])
    d.turns.append(
        Turn(role="assistant", thought="t", tool_calls=[second], act="function_calling", action="call")
    )
    counts, total = dialogue_dice_counts(d)
    assert total == 6
    assert counts == [3, 2, 0]  # the first utterance counts against both calls; the second only the later one


def test_dialogue_without_gold_has_dice_zero() -> None:
    d = _dialogue(["hello"]).model_copy(update={"seed_tool": None, "gold_args": {}})
    assert dialogue_dice_counts(d) == ([0], 0)
    assert dialogue_dice(d) == 0.0


# --------------------------------------------------------------------------------------------
# LLM counter
# --------------------------------------------------------------------------------------------


@dataclass
class _Result:
    text: str


class _Backend:
    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls: list[list[dict]] = []

    async def chat(self, messages, *, temperature, max_tokens, seed):
        self.calls.append(messages)
        return _Result(self.answers.pop(0))


def test_llm_counter_parses_clamps_and_falls_back() -> None:
    items = dice_items([("find_restaurants", {"cuisine": "Thai", "location": "Boston"})])
    backend = _Backend(["2", "<think>maybe 9</think> 7", "no idea"])
    counter = LLMItemCounter(backend)
    assert asyncio.run(counter.count("Thai in Boston", items)) == 2
    assert asyncio.run(counter.count("x", items)) == 3  # clamped to the number of items
    assert asyncio.run(counter.count("x", items)) is None
    assert "Only respond with an integer" in backend.calls[0][-1]["content"]
    assert asyncio.run(counter.count("x", [])) == 0


def test_llm_counter_dialogue_counts_fall_back_to_the_value_matcher() -> None:
    d = _dialogue(["I want Thai food", "somewhere in Boston"])
    counter = LLMItemCounter(_Backend(["1", "garbage"]))
    counts = asyncio.run(counter.corpus_counts([d]))
    assert counts == {"d": ([1, 1], 3)}
    assert counter.fallbacks == 1
