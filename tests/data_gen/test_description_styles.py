"""Natural English from any description style (issue 29): imperative ("Cancel an order"), third
person ("Cancels an order"), noun phrase ("Order cancellation for ..."), "Use this to ...",
"Returns ..." / "Retrieves ..." summaries and empty descriptions; the naturalness validator
rejects what a style used to leave behind ("the cancel an order", "look up the order" for a
re-order, CAPA in an online shop)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from diaforge.data_gen.agents import DialogueState, ScriptedTeacher, ScriptedUser
from diaforge.data_gen.catalogue import load_catalogue
from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig
from diaforge.data_gen.phrasing import (
    contradicting_verbs,
    determiner_before_verb,
    foreign_trade_words,
    intent_of,
    vague_request,
)
from diaforge.data_gen.run_stats import reject_reason
from diaforge.data_gen.validators import naturalness_shares, naturalness_validator
from diaforge.schema import Persona, Tool, Turn, load_dialogues

ROOT = Path(__file__).resolve().parents[2]
ORDERS_PATH = ROOT / "tests" / "data_gen" / "fixtures" / "description_styles" / "imperative_orders.json"
ORDERS = load_catalogue(ORDERS_PATH).tools
BY_NAME = {t.name: t for t in ORDERS}


def tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize(
    ("style", "name", "description", "phrase"),
    [
        ("imperative", "cancel_order", "Cancel an order that has not shipped yet.", "cancel an order"),
        ("third person", "cancel_order", "Cancels an order that has not shipped yet.", "cancel an order"),
        (
            "noun phrase",
            "cancel_order",
            "Order cancellation for orders that have not shipped.",
            "cancel an order",
        ),
        (
            "noun phrase, of",
            "cancel_order",
            "Cancellation of an order that has not shipped.",
            "cancel an order",
        ),
        (
            "use this to",
            "cancel_order",
            "Use this to cancel an order that has not shipped yet.",
            "cancel an order",
        ),
        (
            "use this when",
            "cancel_order",
            "Use this tool when the user wants to cancel an order.",
            "cancel an order",
        ),
        (
            "this tool",
            "cancel_order",
            "This tool cancels an order that has not shipped yet.",
            "cancel an order",
        ),
        (
            "returns",
            "get_shipping_status",
            "Returns the shipping status of an order.",
            "get the shipping status of an order",
        ),
        (
            "retrieves",
            "get_shipping_status",
            "Retrieves the shipping status of an order.",
            "retrieve the shipping status of an order",
        ),
        ("empty", "get_shipping_status", "", "get the shipping status"),
        ("empty", "cancel_order", "", "cancel an order"),
        (
            "imperative, relative clause",
            "list_orders",
            "List the orders a customer placed in a date range.",
            "list the orders",
        ),
        (
            "imperative, two verbs",
            "add_contact",
            "Add or replace the emergency contact on a record.",
            "add or replace the emergency contact",
        ),
        (
            "imperative, preposition",
            "library.search_book",
            "Search for a book in a given library.",
            "search for a book",
        ),
        (
            "imperative, participle",
            "get_event",
            "Retrieve detailed information about an event.",
            "retrieve detailed information about an event",
        ),
    ],
)
def test_intent_of_each_description_style(style, name, description, phrase) -> None:
    assert intent_of(tool(name, description)).phrase == phrase, style


@pytest.mark.parametrize(
    ("name", "description"),
    [
        ("list_my_open_cases", "Open cases assigned to you, newest first."),  # an adjective, not "open"
        ("get_commission_statement", "Commission statement of one rep for a quarter."),  # the name says get
        ("list_upcoming_work_anniversaries", "Work anniversaries in your organisation."),
    ],
)
def test_a_noun_phrase_that_opens_with_a_verb_form_stays_a_look_up(name, description) -> None:
    assert intent_of(tool(name, description), frozenset({"get", "list"})).verb == "look up"


def test_the_issue_phrases_are_caught_and_a_relative_clause_is_not() -> None:
    broken = [
        "Should I look up the cancel an order that has not shipped yet or the get the shipping status of an order?",
        "Got it. To look up the change the delivery address of an order, I need the order ID.",
        "Definitely the list the orders a customer placed in a date range.",
        "The cancel an order that has not shipped yet, please.",
    ]
    for text in broken:
        assert determiner_before_verb(text, ORDERS), text
    for text in (
        "Look up the order the customer placed last week.",
        "Please update the list.",
        "I need to cancel it.",
    ):
        assert not determiner_before_verb(text, ORDERS), text


def test_an_opening_verb_that_contradicts_the_gold_tool() -> None:
    assert contradicting_verbs("Please help me look up the order.", BY_NAME["reorder"], ORDERS) == ["look up"]
    assert contradicting_verbs("I have to look up the order.", BY_NAME["cancel_order"], ORDERS)
    assert contradicting_verbs("Could you help me cancel an order?", BY_NAME["get_shipping_status"], ORDERS)
    for gold, text in [
        ("cancel_order", "I need to cancel an order."),
        ("get_shipping_status", "I need to look up the order."),
        ("reorder", "Hi! I need to sort out something about orders."),
    ]:
        assert not contradicting_verbs(text, BY_NAME[gold], ORDERS), text


def test_trade_words_of_another_line_of_business() -> None:
    gold = BY_NAME["cancel_order"]
    assert foreign_trade_words("This is for the CAPA process.", gold, ORDERS) == ["CAPA"]
    assert foreign_trade_words("This is for the CMDB process.", gold, ORDERS) == ["CMDB"]
    assert not foreign_trade_words("This is for the order process.", gold, ORDERS)
    hr = gold.model_copy(update={"metadata": {"line_of_business": "Human Resources"}})
    assert not foreign_trade_words("It's part of our headcount work.", hr, [hr])


def _state(gold: Tool, turns: list[Turn], persona: Persona | None = None) -> DialogueState:
    persona = persona or Persona(
        id="p",
        description="A reliability engineer.",
        role="reliability engineer",
        department="Maintenance",
        line_of_business="manufacturing",
        tone="chatty",
        jargon=["CAPA", "OEE"],
    )
    return DialogueState(gold=gold, candidates=ORDERS, persona=persona, goal="g", gold_args={}, turns=turns)


def test_the_teacher_offers_actions_and_the_user_answers_in_kind() -> None:
    gold = BY_NAME["reorder"]
    opening = Turn(role="user", content="I need to sort out something about orders.")
    turn = ScriptedTeacher().select_or_ask(_state(gold, [opening]), random.Random(0))
    assert turn.content and not determiner_before_verb(turn.content, ORDERS), turn.content
    assert "look up" not in turn.content
    asked = Turn(role="assistant", thought="t", content=turn.content, phase="tool_selection", act="seek_info")
    for seed in range(6):
        answer = ScriptedUser().say(_state(gold, [opening, asked]), random.Random(seed))
        assert not determiner_before_verb(answer, ORDERS), answer
        assert "place a new order" in answer, answer


def test_an_opening_uses_no_jargon_or_role_of_another_trade() -> None:
    """A manufacturing persona on an order catalogue without a line of business: no CAPA, no
    "I'm the reliability engineer in Maintenance"; its shop talk comes from the catalogue."""
    user = ScriptedUser()
    for gold in ORDERS:
        for seed in range(12):
            text = user.opening(_state(gold, []), random.Random(seed))
            assert "CAPA" not in text and "OEE" not in text and "Maintenance" not in text, text
            assert not contradicting_verbs(text, gold, ORDERS), text
            assert not determiner_before_verb(text, ORDERS), text
    assert not vague_request(BY_NAME["reorder"], ORDERS).startswith("look up")


def test_generation_on_the_imperative_order_catalogue_reads_naturally(tmp_path) -> None:
    """Validators off, so nothing is hidden by rejection: at most 2 % of dialogues hold a
    determiner before a verb phrase and at most 5 % open with a verb that contradicts the gold
    tool; no opening talks another trade's jargon."""
    cfg = GenerationConfig(
        catalogue=str(ORDERS_PATH),
        out=str(tmp_path / "run"),
        num_dialogues=28,
        seed=3,
        validators=False,
        encoder="tfidf",
        progress=False,
        plots=False,
        export=False,
    )
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(tmp_path / "run" / "dialogues.jsonl")
    assert len(dialogues) >= 10
    shares = naturalness_shares(dialogues)
    assert shares["share_determiner_before_verb"] <= 0.02
    assert shares["share_openings_contradicting_verb"] <= 0.05
    for d in dialogues:
        verdict = naturalness_validator(d)
        assert verdict.passed or not verdict.reason.startswith(
            ("determiner_before_verb", "contradicting_intent", "foreign_jargon")
        ), verdict.reason


def _dialogue():
    gold = BY_NAME["reorder"]
    persona = Persona(id="p", description="A shop assistant.", role="shop assistant", tone="friendly")
    from diaforge.schema import Dialogue

    return Dialogue(
        id="d",
        seed_tool=gold.name,
        candidate_tools=ORDERS,
        persona=persona,
        goal="g",
        gold_args={"order_id": "ORD-131855"},
        turns=[
            Turn(role="user", content="Hi! I need to place an order."),
            Turn(
                role="assistant",
                thought="t",
                content="Should I place a new order with the same items or cancel an order that has not shipped yet?",
                phase="tool_selection",
                act="seek_info",
                action="clarify",
            ),
            Turn(
                role="user",
                content="Place a new order with the same items, please. The order ID is ORD-131855.",
            ),
            Turn(
                role="assistant",
                thought="t",
                tool_calls=[{"name": gold.name, "args": {"order_id": "ORD-131855"}}],
                phase="argument_completion",
                act="function_calling",
                action="call",
            ),
        ],
    )


def test_the_naturalness_validator_names_each_new_kind() -> None:
    d = _dialogue()
    assert naturalness_validator(d).passed, naturalness_validator(d).reason
    cases = {
        "determiner_before_verb": (1, "Should I look up the cancel an order or the place a new order?"),
        "contradicting_intent": (0, "Please help me look up the order."),
        "foreign_jargon": (0, "Hi! I need to place an order. This is for the CAPA process."),
    }
    for kind, (i, content) in cases.items():
        turns = list(d.turns)
        turns[i] = turns[i].model_copy(update={"content": content})
        verdict = naturalness_validator(d.model_copy(update={"turns": turns}))
        assert not verdict.passed and verdict.reason.startswith(kind), (kind, verdict.reason)
        # stats.json counts it by kind
        assert reject_reason({"stage": "naturalness", "reason": verdict.reason}) == f"naturalness:{kind}"


# Reference dialogues of the held-out benchmark (built before the broken-phrase checks) that hold a
# broken phrase, each read by hand: "look up the starts enhanced third-party due diligence", "... or
# correct inaccurate?", "the madrid protocol", "on behalf of a legal.", "through the corporate, or
# ...", "look up the applies for a corporate credit card", "check the flights of a trip against the
# travel policy and returns each violation", "block a lost corporate card and orders a replacement",
# "linked to an approved or ...", "approved amount, payment date and.", "look up the parties, or
# ...". The benchmark is rebuilt (`scripts/build_assets.py`) outside this change; a rebuilt one
# holds none of them.
BENCHMARK_BROKEN = {
    "diabench_heldout_v1.jsonl": {
        "000007-register_frequent_flyer_number": "verb_agreement",
        "000008-get_carbon_footprint_for_trip": "verb_agreement",
        "000011-start_third_party_due_diligence_enhanced": "verb_read_as_noun",
        "000016-process_data_subject_access_request": "cut_phrase",
        "000019-list_travelers_in_country_now": "verb_agreement",
        "000022-process_data_subject_erasure_request": "cut_phrase",
        "000025-check_travel_policy_compliance_hotel": "verb_agreement",
        "000033-get_preferred_hotel_list": "verb_agreement",
        "000038-create_expense_report_trip": "cut_phrase",
        "000040-check_travel_policy_compliance_flight": "verb_agreement",
        "000046-get_my_travel_profile": "verb_agreement",
        "000048-start_third_party_due_diligence_standard": "verb_read_as_noun",
        "000049-request_travel_insurance_certificate": "verb_agreement",
        "000055-file_trademark_application_national": "lowercased_name",
        "000063-get_signing_authority_matrix": "cut_phrase",
        # the two options offered again, twice, after the user chose one
        "000066-approve_expense_report": "repeated_question",
        "000069-get_reimbursement_status": "cut_phrase",
        "000087-file_trademark_application_madrid": "lowercased_name",
        "000093-process_data_subject_rectification_request": "cut_phrase",
        "000094-list_contracts_expiring_soon": "lost_object",
        "000095-book_flight_international": "verb_agreement",
        "000100-get_travel_risk_alerts": "verb_agreement",
        "000105-request_power_of_attorney": "cut_phrase",
        "000106-get_contract_details": "lost_object",
        "000109-request_visa_invitation_letter": "verb_read_as_noun",
        "000124-book_flight_domestic": "cut_phrase",
        "000127-book_flight_multi_city": "cut_phrase",
        "000128-create_expense_report_non_trip": "cut_phrase",
    },
    "diabench_heldout_v1_no_tool.jsonl": {
        "000009-miss-get_reimbursement_status": "cut_phrase",
        "000014-miss-report_corporate_card_lost": "verb_agreement",
        "000015-miss-book_rail_ticket_cross_border": "cut_phrase",
        "000016-miss-attest_policy_acknowledgement": "verb_agreement",
        "000018-miss-list_unused_airline_credits": "verb_agreement",
    },
}


@pytest.mark.parametrize("name", sorted(BENCHMARK_BROKEN))
def test_the_bundled_benchmark_passes_the_checks_but_its_broken_phrases(name) -> None:
    """The third-person bundled catalogue is untouched by the earlier checks: every reference
    dialogue of the held-out benchmark passes them; the broken-phrase checks reject
    exactly the dialogues read by hand above, each for its kind."""
    for d in load_dialogues(ROOT / "eval" / "benchmarks" / name):
        verdict = naturalness_validator(d)
        kind = BENCHMARK_BROKEN[name].get(d.id)
        if kind is None:
            assert verdict.passed, (d.id, verdict.reason)
        else:
            assert verdict.reason.startswith(f"{kind}:"), (d.id, verdict.reason)
