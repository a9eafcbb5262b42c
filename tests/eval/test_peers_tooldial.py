"""ToolDial importer on a fixture in the exact record shape of ToolDial's generator (see the fixture README)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.data_gen.corpus import label_violations
from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.peers.tooldial import load_tooldial, tooldial_action
from diaforge.schema import load_dialogues

FIXTURE = FIXTURES / "peers" / "tooldial"
DOCS = FIXTURE / "after_coor_before_emb.json"
FORECAST = "Weather|forecast_lookup|/daily"
CITY = "Geo|city_finder|/city"


def test_dialogues_load_with_counts() -> None:
    result = load_tooldial(FIXTURE / "test.json", api_docs=DOCS)
    c = result.report.counts
    assert result.report.loaded == c["dialogues"] == 2
    assert c["user_turns"] == 6 and c["system_turns"] == 11
    assert c["actions"] == {
        "request": 2,
        "suggest": 1,
        "call": 2,
        "response": 1,
        "response_fail": 1,
        "system_bye": 1,
        "retriever_call": 3,
    }
    assert c["call_turns"] == 2 and c["dialogue_states"] == 11 and c["response_turns"] == 1
    assert c["retrieved_lists"] == 1 and c["chain_notes"] == 1
    assert c["unknown_user_actions"] == 0
    assert c["user_actions"]["fail_inform"] == 1
    assert load_tooldial(FIXTURE).report.loaded == 2  # a folder holding test.json


def test_string_states_and_chained_retrieval_are_read() -> None:
    d = load_tooldial(FIXTURE / "test.json", api_docs=DOCS).dialogues[0]
    assert d.seed_tool == FORECAST
    assert d.gold_args == {"city_id": "LIS-7", "date": "2024-05-03", "units": "metric"}
    assistant = [t for t in d.turns if t.role == "assistant"]
    assert [t.action for t in assistant] == [
        "retriever_call",
        "request",
        "retriever_call",
        "request",
        "call",
        "call",
        "response",
        "system_bye",
    ]
    assert [t.act for t in assistant[:4]] == [
        "function_calling",
        "seek_info",
        "function_calling",
        "seek_info",
    ]
    # the opening state is ToolDial's {"api_confirmed": "false", "api_status": "none"}
    assert assistant[0].metadata["dialogue_state"] == {"api_confirmed": "false", "api_status": "none"}
    assert assistant[0].tool_calls[0].name == "retriever"
    assert assistant[0].metadata["retriever_status"]["retrieved_api"][FORECAST] == 0.81
    # the chained retrieval lists the source API and the chain note; the note is not a tool
    assert assistant[2].metadata["retriever_status"]["retrieved_api"][0] == CITY
    assert assistant[1].metadata["dialogue_state"]["api_status"]["required_parameters"] == {
        "city_id": "",
        "date": "2024-05-03",
    }
    assert assistant[4].tool_calls[0].name == CITY
    assert assistant[4].tool_calls[0].args == {"name": "Lisbon", "country": "Portugal"}
    assert assistant[4].metadata["api_response"]["result"]["city_id"] == "LIS-7"
    assert label_violations(d) == []
    tools = {t.name: t for t in d.candidate_tools}
    assert set(tools) == {CITY, FORECAST, "Weather|alerts|/alerts"}
    assert tools[FORECAST].required == ["city_id", "date"]  # documented from the API file
    assert tools[FORECAST].properties["date"]["format"] == "date"
    assert tools[CITY].metadata["documented"] is False
    assert set(tools[CITY].properties) == {"name", "country"}
    failure = load_tooldial(FIXTURE / "test.json").dialogues[1]
    assert [t.action for t in failure.turns if t.role == "assistant"] == [
        "retriever_call",
        "suggest",
        "response_fail",
    ]
    assert failure.gold_args == {}


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("none", {"api_confirmed": "false", "api_status": "none"}),
        (
            "{'api_confirmed': 'false', 'api_status': 'none'}",
            {"api_confirmed": "false", "api_status": "none"},
        ),
        (
            '{"api_confirmed": "true", "api_status": {"api_name": "X", "required_parameters": {"a": "1"}}}',
            {"api_confirmed": "true", "api_status": {"api_name": "X", "required_parameters": {"a": "1"}}},
        ),
    ],
)
def test_a_state_written_as_a_string_is_parsed(tmp_path: Path, state: str, expected: dict) -> None:
    def edit(d: list) -> None:
        d[1]["dialogue"][2]["System"]["dialogue_state"] = state

    d = load_tooldial(_write(tmp_path, edit)).dialogues[1]
    assert d.turns[2].metadata["dialogue_state"] == expected


@pytest.mark.parametrize(
    "spelling", ["retrievercall", "Retriever call", "RETRIEVER_CALL", "retriever call action"]
)
def test_tooldial_spellings_of_actions(tmp_path: Path, spelling: str) -> None:
    assert tooldial_action(spelling) == "retriever_call"

    def edit(d: list) -> None:
        d[1]["dialogue"][1]["System"]["action"] = spelling
        d[1]["dialogue"][4]["System"]["action"] = "responsefail"

    d = load_tooldial(_write(tmp_path, edit)).dialogues[1]
    assert [t.action for t in d.turns if t.role == "assistant"] == [
        "retriever_call",
        "suggest",
        "response_fail",
    ]


def test_retrieved_api_as_pairs_or_a_bare_name(tmp_path: Path) -> None:
    def edit(d: list) -> None:
        d[1]["dialogue"][1]["System"]["retriever_status"]["retrieved_api"] = [
            ["Travel|car_rental|/cars", 0.57]
        ]
        d[1]["dialogue"][2]["System"]["retriever_status"]["retrieved_api"] = "Travel|trains|/search"

    d = load_tooldial(_write(tmp_path, edit)).dialogues[1]
    assert {t.name for t in d.candidate_tools} == {
        "Travel|car_rental|/cars",
        "Travel|hotel_rooms|/rooms",
        "Travel|trains|/search",
    }


def _write(tmp_path: Path, edit) -> Path:
    data = json.loads((FIXTURE / "test.json").read_text())
    edit(data)
    path = tmp_path / "test.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d[1]["dialogue"][1]["System"].update(action="dance"), "unknown system action"),
        (lambda d: d[1]["dialogue"].insert(0, {"Robot": {}}), "turn 0"),
        (lambda d: d[1].pop("target"), "target"),
        (lambda d: d[1]["dialogue"][0]["User"].pop("message"), "message"),
        (
            lambda d: d[0]["dialogue"][7]["System"]["dialogue_state"].update(api_confirmed="maybe"),
            "api_confirmed",
        ),
        (lambda d: d[0]["dialogue"][1]["System"].update(dialogue_state="later"), "dialogue_state"),
        (
            lambda d: d[0]["dialogue"][1]["System"]["retriever_status"].update(retrieved_api=3),
            "retrieved_api",
        ),
        (lambda d: d[0]["dialogue"][7]["System"]["dialogue_state"].update(api_status=["x"]), "api_status"),
    ],
)
def test_a_malformed_record_is_rejected_with_one_line(tmp_path: Path, edit, needle: str) -> None:
    path = _write(tmp_path, edit)
    with pytest.raises(InputError) as err:
        load_tooldial(path)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1 and "test.json" in msg and "record 'dialogue" in msg and needle in msg


def test_import_cli(tmp_path: Path) -> None:
    out = tmp_path / "tooldial.jsonl"
    assert (
        eval_main(
            ["import", "tooldial", str(FIXTURE / "test.json"), "--api-docs", str(DOCS), "--out", str(out)]
        )
        == 0
    )
    assert [d.seed_tool for d in load_dialogues(out)] == [FORECAST, "Travel|hotel_rooms|/rooms"]
