"""ToolDial importer on a hand-written fixture of its documented dialogue format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_gen.corpus import label_violations
from data_gen.errors import InputError
from data_gen.schema import load_dialogues
from eval.cli import main as eval_main
from eval.peers.tooldial import load_tooldial

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "tooldial"
DOCS = FIXTURE / "after_coor_before_emb.json"
FORECAST = "Weather|forecast_lookup|/daily"


def test_dialogues_load_with_counts() -> None:
    result = load_tooldial(FIXTURE / "test.json", api_docs=DOCS)
    c = result.report.counts
    assert result.report.loaded == c["dialogues"] == 2
    assert c["user_turns"] == 6 and c["system_turns"] == 10
    assert c["actions"] == {
        "clarify": 1,
        "request": 1,
        "suggest": 1,
        "call": 2,
        "response": 1,
        "response_fail": 1,
        "system_bye": 1,
        "retriever_call": 2,
    }
    assert c["call_turns"] == 2 and c["dialogue_states"] == 6 and c["response_turns"] == 1
    assert c["unknown_user_actions"] == 0
    assert load_tooldial(FIXTURE).report.loaded == 2  # a folder holding test.json


def test_mapping_keeps_actions_states_and_calls() -> None:
    d = load_tooldial(FIXTURE / "test.json", api_docs=DOCS).dialogues[0]
    assert d.seed_tool == FORECAST
    assert d.gold_args == {"city_id": "LIS-7", "date": "2024-05-03", "units": "metric"}
    assistant = [t for t in d.turns if t.role == "assistant"]
    assert [t.action for t in assistant] == [
        "retriever_call",
        "clarify",
        "request",
        "call",
        "call",
        "response",
        "system_bye",
    ]
    assert [t.act for t in assistant] == [
        "function_calling",
        "seek_info",
        "seek_info",
        "function_calling",
        "function_calling",
        "inform",
        "other",
    ]
    assert assistant[0].tool_calls[0].name == "retriever"
    assert assistant[0].metadata["retriever_status"]["retrieved_api"][FORECAST] == 0.55
    assert assistant[2].metadata["dialogue_state"]["api_status"]["required_parameters"] == {
        "city_id": "",
        "date": "2024-05-03",
    }
    assert assistant[3].tool_calls[0].name == "Geo|city_finder|/city"
    assert label_violations(d) == []
    tools = {t.name: t for t in d.candidate_tools}
    assert tools[FORECAST].required == ["city_id", "date"]  # documented from the API file
    assert tools[FORECAST].properties["date"]["format"] == "date"
    assert tools["Geo|city_finder|/city"].metadata["documented"] is False
    failure = load_tooldial(FIXTURE / "test.json").dialogues[1]
    assert [t.action for t in failure.turns if t.role == "assistant"] == [
        "retriever_call",
        "suggest",
        "response_fail",
    ]
    assert failure.gold_args == {}


def _write(tmp_path: Path, edit) -> Path:  # noqa: ANN001
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
            lambda d: d[0]["dialogue"][6]["System"]["dialogue_state"].update(api_confirmed="maybe"),
            "api_confirmed",
        ),
    ],
)
def test_a_malformed_record_is_rejected_with_one_line(tmp_path: Path, edit, needle: str) -> None:  # noqa: ANN001
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
