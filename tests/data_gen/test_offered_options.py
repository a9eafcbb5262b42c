"""How a question's options are read (data_gen.agents.offered_options): an option whose own
words hold an "or" is one option, not two."""

from __future__ import annotations

from data_gen.agents import offered_options
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
