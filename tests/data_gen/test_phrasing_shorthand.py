"""Shorthand a hurried description writes (slashed verbs, trade abbreviations, symbols for words,
the articles a terse sentence drops before an adjective), and a warning said before the action."""

from __future__ import annotations

import random

import pytest

from diaforge.data_gen.agents.options import distinguishing_clause, gold_choice
from diaforge.data_gen.phrasing import intent_of
from diaforge.data_gen.phrasing.options import subject_of, trim_phrase
from diaforge.data_gen.phrasing.render import action, fallback_option, names_param, option_phrases, param_noun
from diaforge.data_gen.phrasing.shorthand import plain_description, shorthand_left
from diaforge.schema import Tool


def _tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # slashed verbs opening a clause are said with "or"
        ("Amend/update an open order.", "Amend or update an open order."),
        (
            "Ship it today. Hold/release a parcel at the depot.",
            "Ship it today. Hold or release a parcel at the depot.",
        ),
        ("Book/schedule a new slot.", "Book or schedule a new slot."),
        ("Changes lines: add/remove items.", "Changes lines: add or remove items."),
        # other slashed words read as written: nouns, and verbs inside a clause
        ("Issues a lockout/tagout permit.", "Issues a lockout/tagout permit."),
        ("Books a table on a date/time.", "Books a table on a date/time."),
        ("Ships orders to a store/warehouse.", "Ships orders to a store/warehouse."),
        # words that can both be nouns open a noun phrase, not a verb phrase
        ("Truck/route ETA for an order.", "Truck/route ETA for an order."),
        # names in capitals and paths are no alternatives
        (
            "Reads PICKED/LOADED orders from example.com/orders/open.",
            "Reads PICKED/LOADED orders from example.com/orders/open.",
        ),
        # trade abbreviations written out, with their case
        ("Chg the cust acct w/in 2 hrs.", "Change the customer account within 2 hours."),
        ("Reset a user's pw; mgr notified.", "Reset a user's password; manager notified."),
        # symbols for words
        (
            "Checks 1 SKU @ 1 DC: qty & price, stop #, +/- 30 mins, ~15 mins.",
            (
                "Checks 1 SKU at 1 DC: quantity and price, stop number, plus or minus 30 minutes, about 15 minutes."
            ),
        ),
    ],
)
def test_shorthand_is_written_out(description: str, expected: str) -> None:
    assert plain_description(description) == expected


def test_an_abbreviation_of_two_meanings_is_never_guessed_and_is_found_left() -> None:
    # "req" is a request or a requirement, "pt" a patient or a point, "avail" availability or available
    for word in ("req", "pt", "avail"):
        assert word in plain_description(f"Sends the {word} to the desk.").split()
        assert shorthand_left(f"look up the {word} of a unit") == word
    assert shorthand_left("look up the stock/avail check") == "stock/avail"
    assert shorthand_left("look up the stock check") == ""
    # so the renderer says the tool's plain fallback instead
    assert "req" not in action(_tool("request_credit_memo", "Req credit memo for damaged items."))


def test_a_word_written_without_its_vowels_is_shorthand_left() -> None:
    # whatever the domain: no dictionary lists "cnfrm" or "bkng"; units, file types and acronyms are said
    assert shorthand_left("look up the cnfrm kennel") == "cnfrm"
    assert shorthand_left("look up the Bkng for a kennel") == "Bkng"
    for sound in (
        "get the weight in lbs",
        "list open PRs",
        "upload a pdf of the berth plan",
        "get the NDC of a drug",
    ):
        assert shorthand_left(sound) == ""
    # a description in such shorthand is said by the name's topic, in the description's case
    tool = _tool("get_vx", "Rtrn Vx rcrd by tag#: dose, lot, due dt.")
    assert action(tool) == "use the option about Vxs"
    finder = _tool("find_vx_by_owner", "Fnd Vx by owner last name + DOB when tag# unk.")
    assert action(finder) == "use the option about Vxs"
    # offered together, the two are told apart by what the name says after its preposition
    assert fallback_option(finder, tools=[tool, finder]) == "the option about Vxs by owner"
    assert fallback_option(tool, tools=[tool, finder]) == "the option about Vxs"


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("Create new invoice for a client.", "create a new invoice"),
        ("Create new PO for a client.", "create a new PO"),
        ("Cancel whole booking, with all its rooms.", "cancel the whole booking"),
        ("Get latest meter reading for a site.", "get the latest meter reading"),
        # a mass noun, a plural or any other adjective keeps its bare form
        ("Schedule preventive maintenance on a machine.", "schedule preventive maintenance"),
        ("Archive old invoices of a client.", "archive old invoices"),
    ],
)
def test_a_terse_object_gets_the_article_its_adjective_takes(description: str, expected: str) -> None:
    assert action(_tool("x_y", description)).startswith(expected)


def test_slashed_verbs_let_near_duplicates_be_told_apart() -> None:
    amend = _tool("amend_po", "Amend/update an open PO: add/remove lines, move the delivery date.")
    cancel = _tool("cancel_po", "Cancel/void whole PO (draft or submitted).")
    offered = option_phrases([amend, cancel])[1]
    assert offered == {"amend_po": "amend or update an open PO", "cancel_po": "cancel or void the whole PO"}


@pytest.mark.parametrize(
    ("key", "description", "said"),
    [
        ("qty", "No. of units.", "quantity"),
        ("appt_ref", "Appt ref # from the booking.", "appointment reference"),
        ("cust_po_ref", "Cust's own PO #.", "customer PO reference"),
    ],
)
def test_an_abbreviated_argument_name_is_said_in_full_and_still_heard(
    key: str, description: str, said: str
) -> None:
    spec = {"type": "string", "description": description}
    assert param_noun(key, spec) == said
    # the user-proxy hears the argument by the spoken name and by the key
    assert names_param(f"What is the {said}?", key, spec) and names_param(f"the {key}", key, spec)


def test_a_slashed_head_gives_its_first_word_as_the_topic() -> None:
    back = _tool("return_laptop", "Log a laptop return/collection: books a courier.")
    ship = _tool("assign_laptop", "Assign a laptop from stock to a user.")
    assert subject_of(back, [back, ship]) == "about returns"


def test_a_short_capitalised_name_keeps_its_case_in_the_topic() -> None:
    renew = _tool("renew_rx", "Renew a repeat Rx for a patient.")
    issue = _tool("new_rx", "Issue a new one-off Rx to a patient.")
    assert subject_of(renew, [renew, issue]) == "about Rxs"  # never "rxes"


@pytest.mark.parametrize(
    ("name", "description", "expected"),
    [
        # a warning or side effect said first, then what the tool does: the action that says the name
        (
            "add_dns_record",
            "Takes up to an hour to show everywhere. Adds one DNS record to a zone.",
            "add one DNS record",
        ),
        (
            "renew_domain",
            "Charges the card on file at once. Renews one domain by a year.",
            "renew one domain",
        ),
        # a first sentence that acts keeps its place when the second only reads or names nothing
        (
            "post_inventory_adjustment",
            "Corrects book stock after a count. Adjustments above 5 % need approval.",
            "correct book stock",
        ),
        ("book_court", "Reserves a court for an hour. Members pay nothing.", "reserve a court"),
    ],
)
def test_a_warning_said_first_yields_to_the_action_that_says_the_name(
    name: str, description: str, expected: str
) -> None:
    assert action(_tool(name, description)).startswith(expected)


def test_up_to_a_number_is_a_bound_on_the_object_not_a_particle() -> None:
    bulk = _tool("renew_domains_bulk", "Renews up to 50 domains on the account in one order.")
    intent = intent_of(bulk)
    assert (intent.verb, intent.obj, intent.head) == ("renew", "up to 50 domains", "domains")
    # a particle that is one stays with its verb
    assert intent_of(_tool("pick_up_parcel", "Picks up a parcel from a locker.")).verb == "pick up"


def test_a_cut_keeps_the_preposition_that_ends_a_clause_and_drops_a_clause_it_would_leave_open() -> None:
    words = [
        "release",
        "one",
        "docked",
        "bike",
        "at",
        "the",
        "station",
        "the",
        "rider",
        "is",
        "standing",
        "at",
        "and",
        "lock",
        "it",
    ]
    assert (
        " ".join(trim_phrase(words, 11)) == "release one docked bike at the station the rider is standing at"
    )
    assert " ".join(trim_phrase(words, 9)) == "release one docked bike at the station"  # never "the rider is"
    # the user names the option with the whole clause, never "the rider is standing, please"
    unlock = _tool("unlock_bike", "Will release one docked bike at the station the rider is standing at.")
    hold = _tool("reserve_bike", "Will hold one bike at a station for the rider for 15 minutes.")
    clause = "release one docked bike at the station the rider is standing at"
    assert distinguishing_clause(unlock, [unlock, hold]) == clause
    for seed in range(8):
        assert gold_choice(unlock, [unlock, hold], random.Random(seed)).endswith(clause)


def test_a_terse_tail_gets_the_article_before_same_or_new() -> None:
    move = _tool("move_appt", "Move/reschedule an existing appt to another slot w/ same clinician.")
    offered = option_phrases([move, _tool("cancel_appt", "Cancel one appt.")])[1]["move_appt"]
    assert offered.endswith("to another slot with the same clinician"), offered
    # and so does the user's own word for it
    cancel = _tool("cancel_appt", "Cancel one appt; the slot goes back to the pool.")
    clause = distinguishing_clause(move, [move, cancel])
    assert clause.endswith("to another slot with the same clinician"), clause
    for seed in range(8):
        assert gold_choice(move, [move, cancel], random.Random(seed)).endswith(clause)
    # a time word after "next" stays bare
    assert (
        "for next week"
        in option_phrases(
            [
                _tool("plan_shifts", "Plans the shifts of a team for next week."),
                _tool("swap_shift", "Swaps two shifts."),
            ]
        )[1]["plan_shifts"]
    )


def test_an_abbreviation_in_capitals_is_a_name_and_a_name_keeps_its_own_shorthand() -> None:
    assert plain_description("Opens an HR case for an employee; 2 hrs max.") == (
        "Opens an HR case for an employee; 2 hours max."
    )
    assert plain_description("Sends the STD form.") == "Sends the STD form."
    # an argument named hr_partner is a human-resources partner, never "hour partner"
    assert (
        param_noun("hr_partner", {"type": "string", "description": "HR partner of the team."}) == "HR partner"
    )
