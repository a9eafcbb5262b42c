"""The action read where a description says it, on shapes written for these tests (a harbour and
its boats, which no catalogue describes): product copy's slogans and manner adverbs set aside, a
version note dropped, a light verb's noun of action and a means clause anchored by the tool's
name, the name's other reading offered, a list of short noun phrases said whole, a cut never
left on a verb's helper, and the "into" a verb of turning needs."""

from __future__ import annotations

from diaforge.data_gen.phrasing.anchors import anchored, shares_name
from diaforge.data_gen.phrasing.ends import ends_cleanly
from diaforge.data_gen.phrasing.options import base_after_conjunction
from diaforge.data_gen.phrasing.readings import readings
from diaforge.data_gen.phrasing.render import action, option_phrases
from diaforge.data_gen.phrasing.summary import summary
from diaforge.data_gen.values.rendering import plural_name
from diaforge.schema import Tool


def _tool(name: str, description: str) -> Tool:
    return Tool(
        name=name, description=description, parameters={"type": "object", "properties": {}, "required": []}
    )


def test_an_exclamation_before_the_action_is_a_slogan_not_the_action() -> None:
    tool = _tool("hire_kayak", "Paddle into adventure! Hires a two-seat kayak for a morning on the lake.")
    assert action(tool) == "hire a two-seat kayak"
    # a description that is only an exclamation keeps it: nothing else says what the tool does
    assert action(_tool("ring_bell", "Rings the harbour bell!")) == "ring the harbour bell"


def test_a_manner_adverb_before_the_verb_is_dropped_but_an_adjective_stays() -> None:
    assert action(_tool("archive_logbook", "Effortlessly archives a ship's logbook after a voyage.")) == (
        "archive a ship's logbook"
    )
    assert action(_tool("get_tide_table", "Weekly tide table for a harbour.")).startswith(
        "look up the weekly"
    )


def test_a_version_note_before_the_action_is_dropped_and_a_second_verb_before_why_is_a_verb() -> None:
    tool = _tool("reseal_hatch", "Since v2.1: Reopens or replaces a cargo hatch and logs why.")
    assert action(tool) == "reopen or replace a cargo hatch"
    said = base_after_conjunction(["reopen", "a", "hatch", "and", "logs", "why"])
    assert said[-2:] == ["log", "why"]


def test_a_light_verb_gives_way_to_the_noun_of_action_the_name_says() -> None:
    assert action(_tool("charter_vessel", "Initiates the charter of a fishing vessel for a day at sea.")) == (
        "charter a fishing vessel"
    )
    # the light verb is the name's own: it stays
    assert action(_tool("request_bill_of_health", "Requests a bill of health for a crew member.")) == (
        "request a bill of health"
    )


def test_a_means_clause_is_the_action_when_only_it_says_the_name() -> None:
    tool = _tool("extend_mooring", "Sail on worry-free by moving the end date of an existing mooring later.")
    assert action(tool).startswith("move the end date of an existing mooring")
    # the opening says the name: the means clause is how, not what
    assert action(_tool("verify_skipper", "Verifies a skipper by checking the licence number.")) == (
        "verify a skipper"
    )
    assert anchored("Verifies a skipper by checking the licence number", ["verify", "skipper"]).startswith(
        "Verifies"
    )
    assert shares_name(["adjusts"], ["adjustment"]) and not shares_name(["sail", "on"], ["extend", "mooring"])


def test_a_name_that_reads_two_ways_offers_the_other_reading() -> None:
    # `plan_inspection`: "inspect a plan" by the noun of action, "plan an inspection" by the verb
    assert "plan an inspection" in readings(_tool("plan_inspection", ""))


def test_a_list_of_short_noun_phrases_is_said_whole_and_a_cut_never_ends_on_a_helper() -> None:
    tool = _tool(
        "amend_vessel",
        "Sets the draught, hold volume or ballast weight on a vessel that has already been cleared.",
    )
    assert action(tool) == "set the draught, hold volume or ballast weight"
    other = _tool("inspect_hull", "Inspects the hull of a vessel in dry dock.")
    said = option_phrases([tool, other])[1]["amend_vessel"]
    assert said.split()[-1] not in ("been", "has", "already")
    assert not ends_cleanly(["book", "a", "berth", "for", "cargo", "that", "must", "arrive", "at"])
    assert ends_cleanly(["unload", "the", "cargo", "the", "crew", "was", "waiting", "for"])
    # a second predicate cut from its complement is open; a pair of participles is whole
    cut, pair = "log a hull survey on behalf of the owner and added", "list the crates opened and inspected"
    assert not ends_cleanly(cut.split(" "))
    assert ends_cleanly(pair.split(" "))


def test_a_verb_of_turning_keeps_what_it_turns_into() -> None:
    tool = _tool(
        "confirm_charter", "Turns a provisional booking into a confirmed group charter and sends the invoice."
    )
    assert action(tool) == "turn a provisional booking into a confirmed group charter"


def test_a_reading_that_shares_no_word_with_a_short_acting_name_gives_way_to_the_name() -> None:
    # a benefit read as the action, though no slogan mark sets it apart
    tool = _tool("suspend_mooring", "Keep your berth safe while you sail away for the winter.")
    assert action(tool) == "suspend a mooring"
    # a reading name (`get`) or a long name keeps the description's words
    said = action(_tool("get_berth", "Returns the length and depth of a slip."))
    assert said == "get the length and depth of a slip"


def test_the_sentence_whose_subject_is_the_tool_is_read_after_background() -> None:
    tool = _tool(
        "drain_slipway",
        "When a storm surge floods the lower yard, the slipway fills with silt. This endpoint drains a "
        "slipway and logs the depth of silt left.",
    )
    assert action(tool) == "drain a slipway"
    # an action said first keeps its place: a later sentence about the tool is a remark
    tool = _tool(
        "lock_gate", "Locks a harbour gate for the night. This endpoint needs a harbour master's key."
    )
    assert action(tool) == "lock a harbour gate"


def test_a_service_speaking_as_we_is_read_from_its_verb() -> None:
    assert action(_tool("haul_out_boat", "We'll haul out a boat onto the hard standing.")).startswith(
        "haul out a boat"
    )


def test_a_name_whose_unit_follows_a_preposition_agrees_with_its_head() -> None:
    assert not plural_name("hull length in metres")  # "the hull length in metres is 12"
    assert not plural_name("speed per knots")
    assert plural_name("spare ropes for a dinghy")


def test_a_phrase_never_ends_where_its_last_word_wants_more() -> None:
    # a second preposition without its object, a verb of finding out without what it finds out,
    # a possessive without its noun
    assert not ends_cleanly(["unload", "the", "cargo", "the", "crew", "was", "waiting", "for", "within"])
    assert not ends_cleanly(["run", "a", "draft", "survey", "to", "determine"])
    assert not ends_cleanly(["get", "the", "log", "of", "a", "pilot", "based", "on", "his"])


def test_an_option_keeps_a_noun_the_lexicon_only_knows_as_a_verb_and_never_halves_a_shared_head() -> None:
    logs = _tool(
        "harbour_gateLogs", "Retrieve a list of gate logs for a harbour, filtered by various parameters."
    )
    assert action(logs) == "retrieve a list of gate logs"
    tide = _tool(
        "tide_change",
        "Calculate the change in tide height for a berth of a given harbour under set low and high water marks.",
    )
    other = _tool("berth_fee", "Calculate the berth fee for a vessel of a given length.")
    said = option_phrases([tide, other])[1]["tide_change"]
    assert not said.endswith(("set low", "low")), said


def test_a_modifier_before_a_compound_and_a_name_in_title_case_stay_in_the_object() -> None:
    fee = _tool("berth_fee", "Fetch the current docking fee of a berth.")
    assert action(fee) == "fetch the current docking fee of a berth"
    vtm = _tool(
        "vtm_open", "Opens a Vessel Traffic Monitoring (VTM) link with the port using the pilot token."
    )
    assert action(vtm).startswith("open a vessel traffic monitoring link")
    assert not ends_cleanly(["get", "the", "tide", "table", "based", "on", "most"])
    assert not ends_cleanly(
        ["get", "the", "fee", "of", "a", "berth", "in", "a", "harbour", "office", "located"]
    )


def test_an_option_cut_never_leaves_an_infinitive_without_its_object() -> None:
    record = _tool(
        "log_hull_defect",
        "Creates a new record in the registry to track a defect identified in a hull survey of a vessel.",
    )
    other = _tool("get_berth", "Gets a berth by its number.")
    said = option_phrases([record, other])[1]["log_hull_defect"]
    assert not said.endswith(("to track", "identified in", " in")), said


def test_a_possessive_opening_takes_no_article_and_an_ampersand_acronym_keeps_its_case() -> None:
    tides = _tool("get_tides_yesterday", "Yesterday's tide table for a harbour.")
    assert action(tides) == "look up yesterday's tide table"
    plan = _tool("get_dredging_plan", "Gets the dredging plan as agreed in the R&D harbour board meeting.")
    other = _tool("get_dredging_draft", "Gets the dredging plan straight from the survey model.")
    said = option_phrases([plan, other])[1]["get_dredging_plan"]
    assert "R&D harbour board" in said, said


def test_a_sentence_with_the_tool_for_subject_is_read_first_after_its_setting() -> None:
    berth = _tool(
        "get_berth_booking",
        "Skippers calling the office usually quote the booking number from their email. Given that number, "
        "this endpoint returns the berth, the arrival date and the balance due.",
    )
    assert action(berth).startswith("get the berth")
    assert summary("You can use this to see what a berth would cost before you book.").startswith("See what")


def test_a_verb_in_the_middle_of_a_name_opens_it_and_a_verb_after_to_is_never_a_noun() -> None:
    assert action(_tool("harbour_get_tides", "")) == "get tides"
    finder = _tool(
        "find_booking_by_boat",
        "Sometimes the skipper has lost the booking number. In that case, this endpoint searches by boat name.",
    )
    assert "the search" not in action(finder)
    pronoun = _tool("book_mooring", "Need a mooring for the night? Book it here for a visiting boat.")
    assert "the book" not in action(pronoun)


def test_a_base_verb_after_to_and_a_participle_after_into_want_what_follows() -> None:
    assert not ends_cleanly(["generate", "crew", "lists", "with", "options", "to", "include"])
    assert not ends_cleanly(["convert", "a", "harbour", "notice", "into", "spoken"])
    # a participle after "to" or "as" completes its verb
    assert ends_cleanly(["set", "a", "berth", "to", "reserved"])
    assert ends_cleanly(["mark", "a", "berth", "as", "cleared"])


def test_a_second_verb_of_an_order_takes_the_base_form_before_a_bare_object() -> None:
    def said(phrase: str) -> list[str]:
        return base_after_conjunction(phrase.split(" "))

    assert said("scan a hull using sonar and returns depth readings")[-3:] == ["return", "depth", "readings"]
    assert said("close the berth of a vessel and releases reserved moorings")[-3] == "release"
    assert said("decode a hull number and returns relevant details")[-3] == "return"
    # a plural noun inside the object phrase stays: "a single labor or parts line"
    assert said("add a single labor or parts line")[-2] == "parts"
    assert "winches" in said("get the life of the cranes and winches used at a quay")
