"""A user's need said again, and options cut to length, on shapes written for these tests (a
pottery studio no catalogue describes): the clause that sets a tool apart joins the need as one
sentence or not at all, and a cut never leaves a relative clause or a verb's infinitive open."""

from __future__ import annotations

import random

import pytest

from diaforge.data_gen.agents.options import _need_with_clause, restated_need
from diaforge.data_gen.phrasing.options import trim_phrase
from diaforge.data_gen.phrasing.render import action, option_phrases
from diaforge.schema import Tool


def _tool(name: str, description: str) -> Tool:
    return Tool(
        name=name, description=description, parameters={"type": "object", "properties": {}, "required": []}
    )


@pytest.mark.parametrize(
    ("act", "clause", "said"),
    [
        # the clause goes on from the action's last words: said once
        (
            "look up the kiln batches",
            "kiln batches most often held back by glaze defects",
            "I need to look up the kiln batches most often held back by glaze defects",
        ),
        (
            "look up the glazes",
            "glaze that cracked in the last firing",
            "I need to look up the glazes that cracked in the last firing",
        ),
        # a preposition, a relative or "to" before a verb attaches to the object
        ("book a kiln slot", "for a glaze firing", "I need to book a kiln slot for a glaze firing"),
        ("book a kiln slot", "to fire a glaze batch", "I need to book a kiln slot to fire a glaze batch"),
        ("order a clay body", "that fires at cone six", "I need to order a clay body that fires at cone six"),
        # the clause opens with the action
        (
            "fire a vase",
            "fire a vase twice for a crackle glaze",
            "I need to fire a vase twice for a crackle glaze",
        ),
    ],
)
def test_a_clause_joins_the_need_as_one_sentence(act: str, clause: str, said: str) -> None:
    assert _need_with_clause(act, clause) == said


@pytest.mark.parametrize(
    "clause",
    [
        "to the studio manager",  # "to" before a noun: "book a kiln slot to the studio manager"
        "the potter gets a reminder",  # a clause with its own subject
        "If the kiln is free",  # a sentence of its own
        "kiln slot",  # all of it said already
    ],
)
def test_a_clause_that_does_not_join_is_left_out(clause: str) -> None:
    assert _need_with_clause("book a kiln slot", clause) is None


def test_a_restated_need_never_joins_a_clause_with_a_comma() -> None:
    held = _tool("list_held_batches", "Kiln batches most often held back by glaze defects in the last month.")
    fired = _tool("list_fired_batches", "Kiln batches fired this week.")
    vase = _tool("fire_vase", "Fires one vase.")
    said = {restated_need(held, [held, fired, vase], random.Random(seed)) for seed in range(12)}
    assert said and all(", " not in s for s in said), said
    assert any("held back" in s for s in said), said  # the clause is used where it joins


@pytest.mark.parametrize("limit", range(9, 15))
def test_a_cut_never_leaves_a_relative_clause_without_its_verb(limit: int) -> None:
    text = "the kiln batches held back by a glaze defect that the studio has to inspect"
    assert " ".join(trim_phrase(text.split(" "), limit)) == "the kiln batches held back by a glaze defect"


@pytest.mark.parametrize("limit", range(8, 12))
def test_a_cut_never_ends_on_a_time_word_and_its_pronoun(limit: int) -> None:
    text = "ask the studio to fire one commissioned vase before it is collected"
    assert " ".join(trim_phrase(text.split(" "), limit)) == "ask the studio to fire one commissioned vase"


@pytest.mark.parametrize(
    ("name", "description", "said"),
    [
        # "Check if ..." / "Verify whether ...": the clause is the object, never "look up the check"
        (
            "kiln_availability",
            "Check if a kiln is free on a given evening.",
            "check whether a kiln is free on a given evening",
        ),
        (
            "glaze_food_safe",
            "Verify whether a glaze passes the lead test.",
            "verify whether a glaze passes the lead test",
        ),
        # a gerund in the name is no verb of its own: the name says "convert", so "Convert" is the verb
        ("mixing_calc.convert", "Convert glaze recipes from grams to percentages.", "convert glaze recipes"),
        # the words after the opening are the name's object: the opening is another verb for the name's
        (
            "request_kiln_technicians",
            "Contact kiln technicians about a cracked element.",
            "contact kiln technicians about a cracked element",
        ),
        # "Enables a user group": "enables" takes its "to" before it is a lead-in ("Enables users to ...")
        (
            "studio_groups_enable",
            "Enables a user group within the studio booking system.",
            "enable a user group",
        ),
        ("export_kiln_log", "Enables users to export a kiln log.", "export a kiln log"),
        # a verb of putting keeps its complement: "set a kiln load" says nothing
        (
            "close_kiln_load",
            "Sets a kiln load to fired with a firing log; the studio is told.",
            "set a kiln load to fired",
        ),
        ("flag_cracked_pot", "Marks a pot as cracked so it is not sold.", "mark a pot as cracked"),
        # ... and not where they only start it: "Glaze details" is a noun phrase for `get_glaze_details`
        ("get_glaze_details", "Glaze details of a test tile.", "look up the glaze details of a test tile"),
    ],
)
def test_an_imperative_a_lexicon_also_calls_a_noun_stays_a_verb(
    name: str, description: str, said: str
) -> None:
    assert action(_tool(name, description)) == said


@pytest.mark.parametrize("limit", range(12, 15))
def test_a_cut_never_leaves_a_clause_whose_subject_is_a_pronoun_open(limit: int) -> None:
    text = "log a kiln load with notes about the glaze and the shelf it was fired on"
    assert (
        " ".join(trim_phrase(text.split(" "), limit))
        == "log a kiln load with notes about the glaze and the shelf"
    )
    # whole, or short only of the preposition that ends it, the clause stays
    assert " ".join(trim_phrase(text.split(" "), 15)) == " ".join(trim_phrase(text.split(" "), 16)) == text
    # a pronoun that is a verb's object opens no clause
    turned = "sort the shards and turn them into a mosaic for the studio entrance"
    assert trim_phrase(turned.split(" "), 10)[-2:] == ["a", "mosaic"]


def test_an_initialism_ends_no_sentence_and_keeps_its_stops() -> None:
    """ "U.K." is one word: the option goes on past it ("... in U.K. studios"), never "in U.K,"."""
    kilns = _tool(
        "list_kilns_uk", "Lists the wood-fired kilns open to visitors in U.K. studios. Updated weekly."
    )
    wheels = _tool("list_wheels", "Lists the potter's wheels for hire in one studio.")
    offered = option_phrases([kilns, wheels])[1]["list_kilns_uk"]
    assert offered.endswith("in U.K. studios"), offered


class _Recording:
    """A stand-in judge that keeps the candidates the rendering path offers it and picks the
    first: it shows what is weighed, not how well a model weighs it."""

    def __init__(self) -> None:
        self.offered: list[str] = []

    def flags(self, kind: str, phrase: str, fallback: str) -> bool:
        return False

    def rank(self, kind: str, candidates, fallback: str) -> str:
        self.offered += list(candidates)
        return candidates[0] if candidates else fallback


def test_the_judge_weighs_the_rule_reading_whole_and_never_a_verb_the_name_calls_a_thing() -> None:
    from diaforge.data_gen.phrasing.judging import judging_with

    judge = _Recording()
    with judging_with(judge):
        action(_tool("clay.reviews.find", "Find reviews for a specific glaze."))
    # the rule's verb reading runs to the clause's end, as the noun reading beside it does
    assert "find reviews for a specific glaze" in judge.offered, judge.offered
    judge = _Recording()
    with judging_with(judge):
        action(_tool("list_my_open_firings", "Open firings assigned to you as the kiln lead, newest first."))
    # `list_my_open_firings`: "open" is a word of the name's object, so "open firings ..." is no verb
    assert judge.offered and not any(c.startswith("open ") for c in judge.offered), judge.offered


def test_a_tool_named_by_a_word_no_lexicon_knows_is_offered_by_what_its_description_names() -> None:
    """API-Bank's `Wiki` ("Wikipedia search API that takes one parameter - 'keyword'") and
    `Summarization`: "the option about Wikipedia searches", never "the other option", which tells the user
    nothing."""
    from _repo import ROOT

    from diaforge.data_gen.phrasing.render import fallback_option
    from scripts.measure_description_styles import apibank_tools

    docs = {d["name"]: d for d in apibank_tools(ROOT / "tests/fixtures/catalogues/apibank/all_apis.csv")}
    wiki = Tool(**docs["Wiki"])
    summarise = Tool(**docs["Summarization"])
    assert fallback_option(wiki) == "the option about Wikipedia searches"
    assert fallback_option(summarise) == "the option about text summarizations"


def test_a_clause_with_a_plural_verb_speaks_of_the_ones_never_the_one() -> None:
    from diaforge.data_gen.agents.options import gold_choice

    waiting = _tool("list_glazes_awaiting_my_test", "Glazes from your studio that wait for your test firing.")
    drafts = _tool("list_my_draft_glazes", "Glazes you started but have not fired.")
    submit = _tool("submit_glaze", "Submits a draft glaze to the studio lead.")
    said = {gold_choice(waiting, [waiting, drafts, submit], random.Random(seed)) for seed in range(16)}
    assert not any(s.startswith("the one ") and "that wait" in s for s in said), said
    assert any(s.startswith("the ones ") for s in said), said


def test_a_restated_need_is_never_about_a_verb_and_its_object() -> None:
    """A tool whose description opens with a verb the parse does not know ("Texts the potter a
    link ...") restates its need plainly, never "What I need is about texts the potter a link"."""
    sms = _tool("notify_kiln_status_sms", "Texts the potter a link where they can follow the firing.")
    others = [
        _tool("get_kiln_status", "The live status of a firing."),
        _tool("log_kiln_fault", "Logs a kiln fault."),
    ]
    said = {restated_need(sms, [sms, *others], random.Random(seed)) for seed in range(8)}
    assert not any("about texts" in s for s in said), said


def test_a_name_of_capitalised_words_after_a_preposition_keeps_its_capitals() -> None:
    tides = _tool("get_tide_table", "Get the tide tables of Port Elizabeth for a given week.")
    assert action(tides) == "get the tide tables of Port Elizabeth"
    wheel = _tool("reserve_wheel", "Reserve a pottery wheel in Clayworks Hall for a member.")
    kiln = _tool("reserve_kiln", "Reserve a kiln in the back room for a member.")
    assert option_phrases([wheel, kiln])[1]["reserve_wheel"] == "a pottery wheel in Clayworks Hall"


def test_capitalised_words_after_an_article_are_a_term_and_read_in_lower_case() -> None:
    assert action(_tool("create_glaze_log", "Creates a Glaze Firing Log.")) == "create a glaze firing log"


@pytest.mark.parametrize(
    ("description", "said"),
    [
        # one-word items share the head the last one names: never "look up the glaze"
        (
            "Glaze, slip and clay spend by studio with average prices.",
            "look up the glaze, slip and clay spend",
        ),
        ("Glaze, slip or clay orders by studio.", "look up the glaze, slip or clay orders"),
        # a coordinated noun phrase keeps the head both halves share: never "the current studio membership"
        (
            "The current studio membership and guest access policy.",
            "look up the current studio membership and guest access policy",
        ),
    ],
)
def test_a_list_that_shares_its_head_is_said_whole(description: str, said: str) -> None:
    assert action(_tool("studio_report", description)) == said


def test_a_look_up_said_with_another_look_up_verb_opens_with_that_verb() -> None:
    # `get_kilns`, "Find kiln ...": "find" is the same look-up as the name's "get", never "look up the find kiln"
    assert action(
        _tool("studio.get_kilns", "Find kiln from the studio floor plan with an optional size limit")
    ).startswith("find kiln")
    # the name's own noun is still read as one: "Check list" for `get_check_list` is a thing
    assert action(_tool("get_check_list", "Check list of a kiln firing, step by step.")).startswith(
        "look up the"
    )


def test_after_a_lead_in_ending_in_to_the_first_word_is_a_verb_even_before_a_bare_compound() -> None:
    said = action(
        _tool("Glaze_Bypass", "This tool is used to bypass glaze inspection in order to fire the kiln early.")
    )
    assert said.startswith("bypass glaze inspection"), said


def test_a_verb_before_an_adjective_and_a_verb_with_its_particle_are_read_as_verbs() -> None:
    from diaforge.data_gen.phrasing.readings import readings

    # a noun takes no adjective after it: "Clear" is the order
    assert "clear old or fired glaze tests from the log" in readings(
        _tool("clean_glaze_tests", "Clear old or fired glaze tests from the log.")
    )
    # "Hand back" is a verb and its particle, never a noun compound to look up
    handed = readings(
        _tool("return_kiln_key", "Hand back the kiln key of one member, and the date it was lent.")
    )
    assert not any(r.startswith("look up the hand back") for r in handed), handed


def test_a_tail_that_opens_a_list_keeps_the_list_whole() -> None:
    by_name = _tool("find_member_by_name_zip", "Find member id by first name, last name, and zip code.")
    by_mail = _tool("find_member_by_email", "Find member id by email.")
    said = option_phrases([by_name, by_mail])[1]["find_member_by_name_zip"]
    assert said.endswith("by first name, last name, and zip code"), said


@pytest.mark.parametrize("limit", [12, 13, 14])
def test_a_cut_never_leaves_a_bare_head_without_its_of(limit: int) -> None:
    said = (
        "price a glaze batch for a given studio based on number of kilns, glazes and firing hours in one week"
    )
    out = " ".join(trim_phrase(said.split(" "), limit))
    assert out == "price a glaze batch for a given studio", out


@pytest.mark.parametrize("limit", [13, 14, 15])
def test_a_list_a_few_words_from_its_end_is_said_whole(limit: int) -> None:
    said = "price a glaze batch for a given studio based on number of kilns, glazes and firing hours"
    assert " ".join(trim_phrase(said.split(" "), limit)) == said


def test_a_choice_that_names_an_argument_is_answered_with_a_pick_not_a_value() -> None:
    """ "Do you want me to modify a kiln booking or a password?" names the argument `booking`; the
    user whose tool modifies the booking picks it, never "Go with BK-1 as the booking."."""
    from diaforge.data_gen.agents.state import DialogueState
    from diaforge.data_gen.agents.user import ScriptedUser
    from diaforge.schema import Persona, Turn

    def with_params(name: str, description: str, params: list[str]) -> Tool:
        props = {p: {"type": "string", "description": f"The {p}."} for p in params}
        return Tool(
            name=name,
            description=description,
            parameters={"type": "object", "properties": props, "required": params},
        )

    booking = with_params("ModifyKilnBooking", "Modify a kiln booking.", ["booking", "password", "token"])
    password = with_params("ModifyPassword", "Modify a password.", ["username", "password", "token"])
    persona = Persona(id="p", description="A potter.", role="potter", tone="friendly")
    for question in (
        "Before I go ahead, which is it: modify a kiln booking or a password?",
        "There are a few ways to do that. Do you want me to modify a kiln booking or a password?",
    ):
        turns = [
            Turn(role="user", content="I need to modify something."),
            Turn(role="assistant", content=question),
        ]
        state = DialogueState(
            gold=booking,
            candidates=[booking, password],
            persona=persona,
            goal="g",
            gold_args={"booking": "BK-1", "password": "Glaze42", "token": "ab12"},
            turns=turns,
        )
        said = ScriptedUser().say(state, random.Random(0))
        assert "BK-1" not in said and "booking" in said.lower(), said


def test_a_clause_is_never_cut_from_the_particles_of_its_verb() -> None:
    shared = _tool(
        "rotate_kiln_controller_password",
        "Rotates the password of a shared kiln controller account that a firing schedule or batch job signs in with.",
    )
    member = _tool("reset_member_password", "Resets the password of a studio member's own account.")
    said = option_phrases([shared, member])[1]["rotate_kiln_controller_password"]
    assert not said.endswith(("signs", "signs in")), said
    clause = "a kiln account that a batch job signs in with"
    assert " ".join(trim_phrase(clause.split(" "), 8)) == clause


@pytest.mark.parametrize(
    ("description", "said"),
    [
        # a count of things before a colon says nothing: the first step is the action
        (
            "Does two things: (a) fires a test tile for a glaze, (b) returns its firing number.",
            "fire a test tile",
        ),
        # the .NET register's "Represents a request to ..." is a lead-in
        ("Represents a request to book a kiln slot for a member.", "book a kiln slot"),
    ],
)
def test_a_lead_in_that_counts_or_represents_is_dropped(description: str, said: str) -> None:
    assert action(_tool("studio_op", description)).startswith(said)


def test_a_second_verb_before_a_gerund_is_in_its_base_form() -> None:
    from diaforge.data_gen.phrasing.readings import readings

    said = readings(
        _tool("end_membership", "Schedules a member's leaving date and stops billing after that month.")
    )
    assert any("and stop billing" in r for r in said) and not any("and stops billing" in r for r in said), (
        said
    )


def test_a_demonstrative_whose_thing_was_never_said_becomes_an_article() -> None:
    glossary = _tool("get_term_meaning", "Retrieves the meaning of that term for a learner.")
    kiln = _tool("get_kiln_log", "Retrieves the firings of one kiln.")
    said = option_phrases([glossary, kiln])[1]["get_term_meaning"]
    assert said == "the meaning of a term for a learner", said


def test_a_subject_that_takes_no_plural_is_said_in_the_singular() -> None:
    from diaforge.data_gen.phrasing import subject_of

    probe = _tool("Glaze_Probe", "Perform testing for glaze faults by firing a test tile.")
    detect = _tool("kiln_vent.detect", "Detect the presence of a vent fault on the specified kiln.")
    assert subject_of(probe, [probe], frozenset()) == "about testing"
    assert subject_of(detect, [detect], frozenset()) == "about presence"


def test_an_or_that_shares_a_head_known_only_as_a_verb_keeps_it() -> None:
    said = action(_tool("propose_glaze_change", "Proposes a shape or bill-of-glazes change for a kiln."))
    assert said == "propose a shape or bill-of-glazes change", said


def test_options_that_share_a_prepositional_start_keep_it() -> None:
    contract = _tool(
        "release_from_contract", "Calls off a quantity from an existing price or volume contract."
    )
    agreement = _tool("release_from_agreement", "Calls off a quantity from an existing delivery agreement.")
    verb, said = option_phrases([contract, agreement])
    assert verb == "call off" and said["release_from_contract"].startswith("a quantity from"), said
