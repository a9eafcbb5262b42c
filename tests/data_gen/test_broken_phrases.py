"""Natural English on any catalogue: the parse the phrasing renders from
(`diaforge.data_gen.phrasing.grammar`), each kind of broken phrase the validator rejects
(`diaforge.data_gen.phrasing.broken`), the one rendering path with its plain fallback
(`diaforge.data_gen.phrasing.render`), and generation on three public catalogues with validators off."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

import pytest

from diaforge.data_gen.agents import COMPLETION, DialogueState, ScriptedTeacher, ScriptedUser
from diaforge.data_gen.agents.options import gold_choice, narrow
from diaforge.data_gen.catalogue import load_catalogue
from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig
from diaforge.data_gen.phrasing import intent_of
from diaforge.data_gen.phrasing.broken import KINDS, broken_phrases
from diaforge.data_gen.phrasing.checks import determiner_before_verb
from diaforge.data_gen.phrasing.grammar import continues_compound, np_end, opens_with_verb, tokens
from diaforge.data_gen.phrasing.render import (
    action,
    fallback_option,
    option_phrases,
    param_item,
    param_noun,
    sound,
)
from diaforge.data_gen.run_stats import corpus_stats, reject_reason
from diaforge.data_gen.validators import naturalness_validator, phrase_findings
from diaforge.schema import Dialogue, Persona, Tool, Turn, load_dialogues

ROOT = Path(__file__).resolve().parents[2]
CATALOGUES = ROOT / "tests" / "fixtures" / "catalogues"


def tool(name: str, description: str, props: dict | None = None, required: list | None = None) -> Tool:
    params = {"type": "object", "properties": props or {}, "required": required or []}
    return Tool(name=name, description=description, parameters=params)


# The issue's two lines of business, written as their catalogues write them.
PROCUREMENT = [
    tool("list_open_requisitions", "List open purchase requisitions raised by a cost centre."),
    tool("list_past_audits", "List past audits performed on a supplier."),
    tool("get_supplier_status", "Get the current status of a supplier."),
    tool(
        "list_payment_runs",
        "List payment runs of a company code.",
        {"company_code": {"type": "string"}, "within_days": {"type": "integer"}},
        ["company_code", "within_days"],
    ),
]
CLAIMS = [
    tool("cancel_shipment", "Cancels a shipment before pickup and notifies the carrier."),
    tool("get_claim_state", "Returns the current state, owner and due date of a claim."),
    tool("create_claim", "Creates a claim and records the first notice of loss."),
    tool(
        "report_safety_incident",
        "Reports a safety incident such as a spill or a near miss.",
        {"site_id": {"type": "string"}, "incident_date": {"type": "string", "format": "date"}},
        ["site_id", "incident_date"],
    ),
]


@pytest.mark.parametrize(
    ("description", "name", "verb"),
    [
        ("List open purchase requisitions raised by a cost centre", ["list", "open", "requisitions"], True),
        ("Retrieves for a payslip by a unique payslip id", ["get", "payslip"], True),
        ("Book concert tickets for a specific artist", ["concert", "book", "ticket"], True),
        ("Search for local events happening in a place", ["find", "local", "event"], True),
        ("Records the payment of an invoice", ["record", "payment"], True),
        ("Order details of a cart", ["get", "order", "details"], False),
        ("Open incidents assigned to you", ["list", "my", "open", "cases"], False),
        ("Contracts that expire soon", ["list", "contracts", "expiring"], False),
        ("Estimated CO2 emissions of a trip", ["get", "carbon", "footprint"], False),
        ("Balance of a general ledger account", ["gl", "balance"], False),
    ],
)
def test_the_parse_tells_an_opening_verb_from_a_noun(description, name, verb) -> None:
    assert opens_with_verb(tokens(description), name) is verb


def test_a_noun_phrase_ends_after_its_head_never_inside_a_compound() -> None:
    toks = tokens("the current state, owner and due date of a claim, with its history")
    assert toks[: np_end(toks, 0)] == tokens("the current state, owner and due date of a claim")
    toks = tokens("by a unique employee id")
    assert toks[1 : np_end(toks, 1)] == ["a", "unique", "employee", "id"]
    assert continues_compound("employee", "id") and continues_compound("to-do", "list")
    assert not continues_compound("IDs", "corresponding") and not continues_compound("item", "includes")
    assert not continues_compound("case", "given")


# One message per kind, as the generator used to write it, and the kinds `broken_phrases` finds.
BROKEN = [
    (
        "verb_read_as_noun",
        "Should I look up the list open purchase requisitions raised or get the current status of a supplier?",
        PROCUREMENT,
    ),
    ("preposition_as_noun", "Sure. What is the within days?", PROCUREMENT),
    (
        "verb_agreement",
        "Do you want me to cancel a shipment before pickup and notifies the carrier, or create a claim?",
        CLAIMS,
    ),
    ("cut_phrase", "To report a safety incident such, I need the site ID and the incident date.", CLAIMS),
    (
        "cut_phrase",
        "Should I add an item to a shopping or to an existing to-do?",
        [
            tool("add_item", "Add an item to a shopping list."),
            tool("add_todo_item", "Add an item to an existing to-do list."),
        ],
    ),
    ("lost_object", "Should I get the current state or create a claim?", CLAIMS),
    (
        "run_on",
        "Should I reserve a meeting room for a team rooms hold ten people?",
        [tool("reserve_room", "Reserve a meeting room for a team. Rooms hold ten people.")],
    ),
    (
        "tool_talk",
        "Should I add an alarm clock API that takes two parameters token and time?",
        [tool("AddAlarm", "Add an alarm clock API that takes two parameters - 'token' and 'time'.")],
    ),
    ("verb_read_as_noun", "Should I look up the QC a returned crate?", []),
    ("mass_noun_article", "Hi there! Could you help me update an information?", []),
    ("preposition_as_noun", "Should I look up the we'll cancel your berth for you?", []),
    ("tool_talk", "I have to cancel an api. Can you do that?", []),
    ("tool_talk", "It's the one about this function flips an image.", []),
    (
        "lowercased_name",
        "Should I retrieve the current standings of the german bundesliga football league?",
        [
            tool(
                "get_league_standings",
                "Retrieve the current standings of the German Bundesliga football league.",
            ),
        ],
    ),
]


@pytest.mark.parametrize(
    ("kind", "text", "tools"), BROKEN, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(BROKEN)]
)
def test_each_kind_of_broken_phrase_is_found(kind, text, tools) -> None:
    assert [k for k, _ in broken_phrases(text, tools)] == [kind]


@pytest.mark.parametrize(
    ("text", "tools"),
    [
        ("Should I list open purchase requisitions raised by a cost centre or past audits?", PROCUREMENT),
        ("Sure. What are the company code and the number of days?", PROCUREMENT),
        ("Do you want me to cancel a shipment before pickup and notify the carrier?", CLAIMS),
        ("To report a safety incident, I need the site ID and the incident date (YYYY-MM-DD).", CLAIMS),
        ("Should I get the current state, owner and due date of a claim, or create a claim?", CLAIMS),
        ("I need to add a per diem claim for an outside counsel invoice.", []),
        ("Hi! I need to sort out something in travel and expense.", []),
        ('The summary should be "such as the one before". Thanks!', CLAIMS),
        ("What is it for?", []),
        ("Should I ship the SKU in a crate, or the kit?", []),
    ],
)
def test_a_sound_message_has_no_finding(text, tools) -> None:
    assert broken_phrases(text, tools) == []


def test_the_issue_shapes_render_from_the_parse() -> None:
    by = {t.name: t for t in PROCUREMENT + CLAIMS}
    assert intent_of(by["list_open_requisitions"]).phrase == "list open purchase requisitions"
    assert intent_of(by["get_claim_state"]).phrase == "get the current state, owner and due date of a claim"
    assert intent_of(by["report_safety_incident"]).phrase == "report a safety incident"
    assert action(by["cancel_shipment"], tools=CLAIMS) == "cancel a shipment"
    verb, offered = option_phrases(CLAIMS[:3])
    assert verb is None
    assert offered == {
        "cancel_shipment": "cancel a shipment before pickup and notify the carrier",
        "get_claim_state": "get the current state, owner and due date of a claim",
        "create_claim": "create a claim and record the first notice of loss",
    }
    # a phrase that reads a tool's name out falls back to the plain wording
    assert offered_or_fallback(PROCUREMENT[1], PROCUREMENT) == "use the option that lists past audits"
    assert fallback_option(by["list_payment_runs"]) == "the option that lists payment runs of a company code"


def offered_or_fallback(option: Tool, tools: list[Tool]) -> str:
    return option_phrases(tools[:3])[1][option.name]


@pytest.mark.parametrize(
    ("key", "noun"),
    [
        ("within_days", "number of days"),
        ("from_currency", "source currency"),
        ("to_currency", "target currency"),
        ("from_date", "start date"),
        ("until", "until-value"),
        ("per_page", "number per page"),
        ("on_off_command", "on/off command"),
        ("a", "a-value"),
        ("after_id", "value for after ID"),
        ("cost_center_id", "cost center ID"),
        ("is_urgent", "urgent flag"),
    ],
)
def test_an_argument_is_named_as_a_person_names_it(key, noun) -> None:
    assert param_noun(key) == noun
    assert sound(f"What is the {noun}?")


def test_a_flag_named_by_a_verb_is_asked_with_whether() -> None:
    t = tool("x", "Get a case.", {"include_dissent": {"type": "boolean"}, "within_days": {"type": "integer"}})
    assert param_item(t, "include_dissent") == "the choice on whether to include dissent"
    assert param_item(t, "within_days", "a number") == "the number of days (a number)"


def _state(gold: Tool, candidates: list[Tool], turns: list[Turn], args: dict | None = None) -> DialogueState:
    persona = Persona(id="p", description="A buyer.", role="buyer", tone="friendly")
    return DialogueState(
        gold=gold, candidates=candidates, persona=persona, goal="g", gold_args=args or {}, turns=list(turns)
    )


def test_the_teacher_and_the_user_say_the_argument_and_read_it_back() -> None:
    gold = PROCUREMENT[3]
    args = {"company_code": "CC-1000", "within_days": 30}
    opening = Turn(role="user", content="I need to list payment runs.")
    state = _state(gold, [gold], [opening], args)
    state.phase = COMPLETION
    ask = ScriptedTeacher().complete(state, random.Random(0))
    assert "the number of days" in ask.content and not broken_phrases(ask.content, PROCUREMENT), ask.content
    answer = ScriptedUser().answer_values(
        _state(gold, [gold], [opening, ask], args), ask.content, random.Random(1)
    )
    assert "number of days" in answer and not broken_phrases(answer, PROCUREMENT), answer
    state = _state(gold, [gold], [opening, ask, Turn(role="user", content=answer)], args)
    state.phase = COMPLETION
    nxt = ScriptedTeacher().complete(state, random.Random(2))
    said = {**(nxt.tool_calls[0].args if nxt.tool_calls else {})}
    assert said.get("within_days") == 30 or "number of days" not in answer


def _dialogue(content: str, tools: list[Tool]) -> Dialogue:
    gold = tools[0]
    persona = Persona(id="p", description="A buyer.", role="buyer", tone="friendly")
    return Dialogue(
        id="d",
        seed_tool=gold.name,
        candidate_tools=tools,
        persona=persona,
        goal="g",
        gold_args={},
        turns=[
            Turn(role="user", content="Hi! I need to sort out something."),
            Turn(
                role="assistant",
                thought="t",
                content=content,
                phase="tool_selection",
                act="seek_info",
                action="clarify",
            ),
            Turn(role="user", content="The first one, please."),
            Turn(
                role="assistant",
                thought="t",
                tool_calls=[{"name": gold.name, "args": {}}],
                phase="argument_completion",
                act="function_calling",
                action="call",
            ),
        ],
    )


@pytest.mark.parametrize(
    ("kind", "text", "tools"), BROKEN, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(BROKEN)]
)
def test_the_validator_rejects_each_kind_and_stats_count_it(kind, text, tools) -> None:
    tools = tools or CLAIMS
    d = _dialogue(text, tools)
    verdict = naturalness_validator(d)
    # the earlier check sees a description's verb after a determiner first
    first = "determiner_before_verb" if determiner_before_verb(text, tools) else kind
    assert not verdict.passed and verdict.reason.startswith(f"{first}: turn 1:"), verdict.reason
    assert reject_reason({"stage": "naturalness", "reason": verdict.reason}) == f"naturalness:{first}"
    assert kind in phrase_findings(d)
    stats = corpus_stats([d], [], num_seeds=1)
    assert stats["broken_phrases"]["any"] == 1 and stats["broken_phrases"][kind] == 1
    assert stats["naturalness"]["share_broken_phrases"] == 1.0
    assert set(KINDS) <= set(stats["broken_phrases"])


def test_a_sound_dialogue_passes() -> None:
    d = _dialogue(
        "Should I cancel a shipment before pickup and notify the carrier, or create a claim?", CLAIMS
    )
    assert naturalness_validator(d).passed
    assert corpus_stats([d], [], num_seeds=1)["broken_phrases"]["any"] == 0


def _apibank(tmp_path: Path) -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    from measure_description_styles import apibank_tools

    path = tmp_path / "apibank.json"
    path.write_text(json.dumps(apibank_tools(CATALOGUES / "apibank" / "all_apis.csv")), encoding="utf-8")
    return path


def test_the_api_bank_loader_reads_every_documented_row(tmp_path) -> None:
    tools = load_catalogue(_apibank(tmp_path)).tools
    assert len(tools) == 100  # 101 rows, one ("ImageCaption") holds only "."
    by = {t.name: t for t in tools}
    assert by["GetUserToken"].required == ["username", "password"]
    assert by["GetToday"].required == []  # its input_parameters is {None}
    assert by["QueryHistoryToday"].description.startswith("QueryHistoryToday API takes one parameter")


@pytest.mark.slow(reason="generates dialogues on a public catalogue (10 to 30 s each)")
@pytest.mark.parametrize(
    "catalogue",
    ["taubench/tools.json", "xero_payroll_au/xero-payroll-au.yaml", "apibank"],
)
def test_generation_on_a_public_catalogue_reads_naturally(tmp_path, catalogue) -> None:
    """Validators off, one dialogue per tool: at most 2 % hold a broken phrase (the measurement
    script holds ten per tool to 1 %)."""
    path = _apibank(tmp_path) if catalogue == "apibank" else CATALOGUES / catalogue
    n = len(load_catalogue(path).tools)
    cfg = GenerationConfig(
        catalogue=str(path),
        out=str(tmp_path / "run"),
        num_dialogues=n,
        seed=3,
        validators=False,
        encoder="tfidf",
        progress=False,
        plots=False,
        export=False,
    )
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(tmp_path / "run" / "dialogues.jsonl")
    assert len(dialogues) >= n * 0.8
    broken = [(d.seed_tool, phrase_findings(d)) for d in dialogues if phrase_findings(d)]
    assert len(broken) <= 0.02 * len(dialogues), broken[:5]


def test_a_choice_told_apart_by_an_of_phrase_is_the_options_noun_phrase() -> None:
    """tau-bench's four `get_*_details` tools differ only by their of-phrase: the user names the
    option ("the details of a user") and never says "the one about of a user"."""
    tools = {t.name: t for t in load_catalogue(CATALOGUES / "taubench" / "tools.json").tools}
    names = ("get_user_details", "get_product_details", "get_order_details", "get_reservation_details")
    options = [tools[n] for n in names]
    said = {gold_choice(tools["get_user_details"], options, random.Random(seed)) for seed in range(30)}
    assert said == {"the details of a user"}


def test_an_answer_is_read_by_its_content_words_not_a_function_word_of_a_name() -> None:
    """'with' in `approve_report_with_exception` says nothing about an answer that says "complies
    with the travel policy": the answer points at the other option alone."""
    exception = tool(
        "approve_report_with_exception",
        "Approves one expense report even though it breaks the travel policy.",
    )
    plain = tool("approve_report", "Approves one expense report that complies with the travel policy.")
    answer = "That would be one expense report that complies with the travel policy."
    assert [t.name for t in narrow([exception, plain], answer)] == ["approve_report"]
    assert [t.name for t in narrow([exception, plain], "The one with the exception.")] == [
        "approve_report_with_exception"
    ]


def test_a_need_outside_the_candidates_is_read_against_its_own_description() -> None:
    """In a retrieval miss the needed tool is no candidate; "a lost corporate card" ends a phrase
    in its own description, so a candidate's "corporate card transaction" does not make it a cut
    phrase and the user says the need instead of the plain fallback."""
    lost = tool("report_card_lost", "Blocks a lost corporate card and orders a replacement.")
    dispute = tool(
        "dispute_card_transaction", "Disputes a corporate card transaction that was charged wrongly."
    )
    assert not sound("block a lost corporate card", [dispute])  # read against the candidate alone
    assert action(lost, frozenset(), [dispute]) == "block a lost corporate card"


def test_an_adjective_after_its_noun_stays_in_the_option() -> None:
    """ "Post a supplier invoice to accounts payable": the option keeps "payable" (an adjective in
    -able after its noun ends a phrase), while "a certain" still does not end one."""
    block = tool("block_supplier_invoice", "Block a supplier invoice for payment.")
    post = tool("post_supplier_invoice", "Post a supplier invoice to accounts payable.")
    _, offered = option_phrases([block, post])
    assert offered["post_supplier_invoice"] == "post a supplier invoice to accounts payable"
    assert np_end(tokens("accounts payable."), 0) == 2
    assert np_end(tokens("accounts payable and more"), 0) == 1
    assert not sound("a certain")


def test_a_clause_that_opens_with_a_noun_is_not_said_as_a_verb() -> None:
    """BFCL's four value calculators: what sets `calculate_future_value` apart is "time period";
    "time" is no verb there, so the user never says "the option to time period"."""
    options = [
        tool("calculate_present_value", "Calculate the present value of a future cash flows stream."),
        tool(
            "financials.calculate_future_value",
            "Calculate the future value of an investment based on a constant interest rate.",
        ),
        tool(
            "calculate_future_value",
            "Calculates the future value of an investment based on the present value, interest rate, "
            "and time period.",
        ),
        tool(
            "finance.calculate_future_value",
            "Calculate the future value of an investment given an initial investment, annual rate of "
            "return, and a time frame.",
        ),
    ]
    said = {gold_choice(options[2], options, random.Random(seed)) for seed in range(30)}
    assert said == {  # the list is said whole, never cut to its first item
        "the future value of an investment based on the present value, interest rate, and time period",
        "the one about time period",
    }


def test_a_clause_that_is_a_sentence_is_not_said_after_about() -> None:
    """tau-bench's return tool differs from its exchange tool by a sentence ("the order status will
    be changed to return requested"): the user names it by what it does, never "the one about the
    order status will be changed ..."."""
    tools = {t.name: t for t in load_catalogue(CATALOGUES / "taubench" / "tools.json").tools}
    options = [tools["exchange_delivered_order_items"], tools["return_delivered_order_items"]]
    said = {gold_choice(options[1], options, random.Random(seed)) for seed in range(30)}
    assert said == {"the option to return some items of a delivered order"}


def test_a_sentence_clause_is_said_as_the_question_offered_it() -> None:
    """Two demand forecasts told apart by "straight from the statistical model": the user echoes
    the offered option, which the teacher reads as that option alone."""
    tools = {t.name: t for t in load_catalogue(ROOT / "data_gen" / "assets" / "catalogue_train.json").tools}
    options = [tools["get_demand_forecast_statistical"], tools["get_demand_forecast_consensus"]]
    said = {gold_choice(options[0], options, random.Random(seed)) for seed in range(30)}
    assert said == {"the option to look up the weekly demand forecast straight from the statistical model"}
    assert narrow(options, said.pop()) == [options[0]]


def test_the_user_answers_an_argument_asked_by_the_teachers_name_for_it() -> None:
    # the teacher says "the sail-by date (YYYY-MM-DD)" for `sail_by`; the user must hear it asked
    gold = tool(
        "book_crossing",
        "Books a crossing.",
        {"sail_by": {"type": "string", "format": "date"}, "deck": {"type": "string"}},
        ["sail_by", "deck"],
    )
    args = {"sail_by": "2026-05-02", "deck": "upper"}
    opening = Turn(role="user", content="I need to book a crossing.")
    state = _state(gold, [gold], [opening], args)
    state.phase = COMPLETION
    ask = ScriptedTeacher().complete(state, random.Random(0))
    assert "sail-by date" in ask.content, ask.content
    for seed in range(5):
        answer = ScriptedUser().answer_values(
            _state(gold, [gold], [opening, ask], args), ask.content, random.Random(seed)
        )
        assert "2026-05-02" in answer and "upper" in answer, answer
