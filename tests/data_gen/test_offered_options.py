"""How a question's options are read (diaforge.data_gen.agents.offered_options): an option whose own
words hold an "or" is one option, not two."""

from __future__ import annotations

from diaforge.data_gen.agents import offered_options, options_in_thought
from diaforge.schema import Tool


def _tool(name: str, description: str) -> Tool:
    return Tool(
        name=name, description=description, parameters={"type": "object", "properties": {}, "required": []}
    )


TRADEMARK = _tool(
    "request_trademark_clearance_search",
    "Ask IP counsel to check whether a proposed brand name is free to use.",
)
COMPETITION = _tool(
    "request_competition_law_review",
    "Ask antitrust counsel whether a deal or cooperation needs merger filing or raises competition concerns.",
)
HOTLINE = _tool(
    "submit_ethics_hotline_report", "Report a concern to the ethics hotline, anonymously if you wish."
)
COUNSEL = [TRADEMARK, COMPETITION, HOTLINE]
TWO_COUNSELS = (
    "Should I ask IP counsel to check whether a proposed brand name is free to use or antitrust counsel "
    "whether a deal or cooperation needs merger filing or raises competition concerns?"
)


def test_the_pieces_of_one_option_cut_at_its_or_offer_no_third_tool() -> None:
    # Cut at every "or": (1) "...brand name is free to use" -> trademark; (2) "antitrust counsel
    # whether a deal", (3) "cooperation needs merger filing", (4) "raises competition concerns"
    # all match the competition review best. Once (4) offers it, (2)-(3) are pieces of that
    # option: the hotline, their runner-up through "concern", is not offered.
    got = offered_options(TWO_COUNSELS, COUNSEL)
    assert {t.name for t in got} == {TRADEMARK.name, COMPETITION.name}


def test_two_options_are_still_read_as_two() -> None:
    got = offered_options(
        "Do you want to report a concern to the ethics hotline or ask IP counsel about a brand name?", COUNSEL
    )
    assert {t.name for t in got} == {HOTLINE.name, TRADEMARK.name}


def test_the_options_a_thought_lists_in_either_style() -> None:
    summary = (
        "Candidates that match the request: request_trademark_clearance_search, "
        "request_competition_law_review, submit_ethics_hotline_report. They differ in what they do "
        "(request_competition_law_review: a deal; submit_ethics_hotline_report: a concern). I cannot "
        "tell which one the user means, so I ask about the difference without naming tools."
    )
    # The list of matches names all three; the options are the two named beside a description.
    assert options_in_thought(summary, COUNSEL) == [COMPETITION, HOTLINE]
    lookup = (
        "Candidates that match the request: request_trademark_clearance_search, submit_ethics_hotline_report. "
        "What each does: a brand name (request_trademark_clearance_search); a concern "
        "(submit_ethics_hotline_report). I ask which one the user means, without naming tools."
    )
    assert options_in_thought(lookup, COUNSEL) == [TRADEMARK, HOTLINE]
    assert options_in_thought(None, COUNSEL) is None
    assert options_in_thought("I ask which one the user means.", COUNSEL) is None


GIFT_SUMMARY = _tool(
    "get_gift_register_summary", "Gifts and hospitality logged in your organisation this year."
)
GIFT_IN = _tool("log_gift_received", "Logs a gift or hospitality you received in the gifts register.")
GIFT_OUT = _tool("log_gift_given", "Logs a gift or hospitality you gave to a business partner.")
GIFTS = [GIFT_SUMMARY, GIFT_IN, GIFT_OUT]
GIFT_QUESTION = (
    "Should I log a gift or hospitality you received or a gift or hospitality you gave to a business partner?"
)


class _Leaning:
    """A sentence encoder that reads `piece` as the tool described by `description` and everything
    else as equally close to every tool (one-hot vectors): only the piece's own reading can offer
    that tool."""

    def __init__(self, piece: str, description: str) -> None:
        self.texts = (piece, description)

    def encode(self, texts: list[str]):
        import numpy as np

        out = np.full((len(texts), 2), [0.0, 1.0])
        for i, t in enumerate(texts):
            if t in self.texts:
                out[i] = [1.0, 0.0]
        return out


def test_a_one_word_piece_that_repeats_an_earlier_word_offers_nothing() -> None:
    # Cut at every "or": "Should I log a gift", "hospitality you received", "a gift", "hospitality
    # you gave to a business partner". "a gift" only repeats "gift": it is a piece of the second
    # option, however close an encoder finds it to the summary.
    got = offered_options(GIFT_QUESTION, GIFTS, _Leaning("a gift", GIFT_SUMMARY.description))
    assert {t.name for t in got} == {GIFT_IN.name, GIFT_OUT.name}


HOTELS = [
    _tool("get_preferred_hotel_list", "Hotels with a negotiated rate in a city and their rate caps."),
    _tool("get_per_diem_rate", "Looks up the per diem allowance for a foreign city."),
    _tool("book_hotel_long_stay", "Books a hotel room in a city as a long stay of two weeks or more."),
]


def test_a_word_only_one_tool_has_offers_it_only_from_a_segment_that_offered_nothing() -> None:
    # "look" is the per diem tool's alone, but it sits in the option that offers the hotel list.
    question = (
        "Should I look up the hotels with a negotiated rate in a city, or book a hotel room as a long stay?"
    )
    got = offered_options(question, HOTELS)
    assert {t.name for t in got} == {"get_preferred_hotel_list", "book_hotel_long_stay"}
    # In a segment of its own it still offers the tool ("... or one you gave away").
    got = offered_options("Should I book a hotel room as a long stay, or the allowance?", HOTELS)
    assert {t.name for t in got} == {"book_hotel_long_stay", "get_per_diem_rate"}


SIGNING = _tool("get_signing_authority_matrix", "Who may sign what, by contract type and value.")
DETAILS = _tool("get_contract_details", "Parties, term, value, renewal terms and owner of a contract.")
ORPHANS = _tool("list_contracts_without_owner", "Active contracts whose business owner has left the company.")


def test_a_lone_word_two_tools_share_equally_offers_neither() -> None:
    # "value" is an item of the list inside the first option; the signing matrix and the contract
    # details both have it, so no encoder's reading of the one word makes it an offer.
    question = (
        "Should I look up the parties, term, value, renewal terms and owner of a contract, "
        "or the active contracts whose business owner has left the company?"
    )
    got = offered_options(question, [SIGNING, DETAILS, ORPHANS], _Leaning("value", SIGNING.description))
    assert {t.name for t in got} == {DETAILS.name, ORPHANS.name}


def test_an_option_without_a_verb_of_its_own_has_the_verb_the_question_said_once() -> None:
    """ "Do you want me to create a glaze recipe, a kiln log, or a firing schedule?": "a kiln log"
    is "create a kiln log", not the kiln log a reading or an update tool acts on too."""
    tools = [
        Tool(name="create_glaze_recipe", description="Creates a glaze recipe."),
        Tool(name="create_kiln_log", description="Creates a kiln log."),
        Tool(name="create_firing_schedule", description="Creates a firing schedule."),
        Tool(name="update_kiln_log", description="Updates a kiln log."),
        Tool(name="get_kiln_log", description="Retrieves a kiln log."),
    ]
    question = "There are a few ways to do that. Do you want me to create a glaze recipe, a kiln log, or a firing schedule?"
    got = {t.name for t in offered_options(question, tools)}
    assert got == {"create_glaze_recipe", "create_kiln_log", "create_firing_schedule"}
    # an encoder that reads the bare "a kiln log" as the update does not take it there
    leaning = _Leaning("a kiln log", "Updates a kiln log.")
    assert {t.name for t in offered_options(question, tools, leaning)} == got


def test_a_pick_whose_phrase_joins_a_second_verb_says_both_verbs_in_the_base_form() -> None:
    import random

    from diaforge.data_gen.agents.options import gold_choice

    hull = Tool(
        name="scan_hull", description="Analyzes hull plating using sonar and returns corrosion readings."
    )
    deck = Tool(name="scan_deck", description="Analyzes a given deck plan using a structural model.")
    said = {gold_choice(hull, [hull, deck], random.Random(seed)) for seed in range(12)}
    assert not any(" returns " in s for s in said), said
    assert any("return corrosion readings" in s for s in said), said
