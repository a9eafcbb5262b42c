"""CONFETTI on its released answer lines (verbatim, CC-BY-4.0; see the fixture README): bare and
dotted calls, ``class=`` arguments, acceptable-value lists, and calling lines grouped into chains."""

from __future__ import annotations

import pytest
from _repo import FIXTURES

from diaforge.eval.peers import parse_call_string, parse_call_strings
from diaforge.eval.peers.confetti import chain_lengths, load_confetti
from diaforge.eval.peers.turn_level import call_examples, score_call, turn_level_metrics

FIXTURE = FIXTURES / "peers" / "confetti_release"
DIALOG = "1258d81c-750a-45f2-b250-77c33a5fbafa"


def test_calling_lines_group_into_chains() -> None:
    result = load_confetti(FIXTURE)
    c = result.report.counts
    assert c["calling_examples"] == 5 and c["calling_dialogs"] == 1
    # the dialog-act answers of this dialog call 3, 1 and 1 functions in its three agent turns
    assert c["calling_turns"] == 3 and c["chain_lengths"] == {"1": 2, "3": 1}
    assert c["ungrouped_dialogs"] == 0 and c["act_calls"] == 6
    assert chain_lengths(FIXTURE / "possible_answer" / "BFCL_v2_dialogacts.json")[DIALOG] == [
        (3, ["Insurance_get_user", "Insurance_get_policy", "Insurance_get_available_coverage"]),
        (1, ["RAG_query"]),
        (1, ["DoctorsAppointment_search_doctors"]),
    ]
    by_id = {d.id: d for d in result.dialogues}
    assert not {"conversationsclean_277", "conversationsclean_278"} & set(by_id)
    chain = by_id["conversationsclean_276"]
    gold = chain.turns[-1]
    assert [t.role for t in chain.turns] == ["user", "assistant"]
    assert [c.name for c in gold.tool_calls] == [
        "Insurance_get_user",
        "Insurance_get_policy",
        "Insurance_get_available_coverage",
    ]
    assert gold.tool_calls[1].args == {"policy_id": "HI85491373998"}
    assert gold.metadata["chain_ids"] == [
        "conversationsclean_276",
        "conversationsclean_277",
        "conversationsclean_278",
    ]
    assert len(gold.metadata["acceptable"]) == 3


def test_chain_score_by_length_with_an_oracle() -> None:
    dialogues = [d for d in load_confetti(FIXTURE / "BFCL_v2_conversationsclean.json").dialogues]
    examples = call_examples(dialogues)
    # one query per call of the three gold turns (3 + 1 + 1), none from the history turns
    assert sorted(e.chain_length for e in examples) == [1, 1, 3, 3, 3]
    records = []
    for e in examples:
        scores = score_call(e.gold, e.gold, e.acceptable or {})  # the oracle answers the gold call
        records.append({"id": e.dialogue.id, "turn": e.turn, "index": e.index, "chain_length": e.chain_length,
                        "gold": {"name": e.gold.name, "args": e.gold.args}, "kind": "tool_calls",
                        "scores": scores, "gold_acts": e.gold_acts, "pred_act": "function_calling"})  # fmt: skip
    m = turn_level_metrics(records)
    assert m["chain_by_length"] == {"1": {"chain": 1.0, "turns": 2}, "3": {"chain": 1.0, "turns": 1}}


def test_dialog_act_answers_recognise_bare_calls_and_keyword_arguments() -> None:
    by_id = {d.id: d for d in load_confetti(FIXTURE / "BFCL_v2_dialogacts.json").dialogues}
    first = by_id["dialogacts_8"].turns[-1]
    assert [c.name for c in first.tool_calls] == [
        "Insurance_get_user",
        "Insurance_get_policy",
        "Insurance_get_available_coverage",
    ]
    assert "Insurance." not in first.content and first.content.startswith("Hi there.")
    assert first.metadata["acceptable"][1] == {"Insurance_get_policy": {"policy_id": ["HI85491373998"]}}
    flight = by_id["dialogacts_433"].turns[-1]
    assert flight.tool_calls[0].name == "BookFlight_book_flight"
    assert flight.tool_calls[0].args == {
        "itinerary_number": "LAX45",
        "departure_date": "2026-08-09",
        "class": "Economy",
    }
    assert by_id["dialogacts_433"].seed_tool == "BookFlight_book_flight"
    ask = by_id["dialogacts_67"].turns[-1]
    assert ask.tool_calls is None and ask.act == "seek_info"


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        (
            "Telecom.CancelService(account_id=['309182761'])",
            "Telecom.CancelService",
            {"account_id": ["309182761"]},
        ),
        ("f(class=['Economy'], from='class=1')", "f", {"class": ["Economy"], "from": "class=1"}),
        ("[g(lambda=1)]", "g", {"lambda": 1}),
        ("Insurance.get_user()", "Insurance.get_user", {}),
    ],
)
def test_call_strings(text: str, name: str, args: dict) -> None:
    call = parse_call_strings(text)[0]
    assert (call.name, call.args) == (name, args)
    if not text.startswith("["):
        assert parse_call_string(text).args == args
