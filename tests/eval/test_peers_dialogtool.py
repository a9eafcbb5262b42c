"""DialogTool importer (diaforge.eval.peers.dialogtool) on a fixture written to the format its paper describes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers.dialogtool import load_dialogtool, parse_api_request
from diaforge.eval.peers.next_action import build_examples, run_next_action
from diaforge.format import parse_assistant

FIXTURE = FIXTURES / "peers" / "dialogtool"


def test_import_reads_apps_actions_calls_and_roles() -> None:
    result = load_dialogtool(FIXTURE)
    d0, d1 = result.dialogues
    assert result.report.counts["apis"] == 3 and result.report.counts["calls"] == 3
    tools = {t.name: t for t in d0.candidate_tools}
    assert set(tools) == {"getcarsavailable", "reservecar", "getride"}
    avail = tools["getcarsavailable"]
    assert avail.required == ["city", "start_date", "pickup_time", "end_date"]
    assert avail.properties["car_type"]["type"] == "string" and "car_type" not in avail.required
    assert avail.properties["start_date"]["format"] == "date"
    assert tools["reservecar"].properties["add_insurance"]["type"] == "boolean"
    assert tools["reservecar"].metadata["is_transactional"] is True
    assert (
        avail.metadata["is_transactional"] is False
        and "price_per_day (int)" in avail.metadata["result_arguments"]
    )
    assert d0.seed_tool == "getcarsavailable" and d0.gold_args["start_date"] == "2019-03-05"
    system = [t for t in d0.turns if t.role == "assistant"]
    assert [t.metadata["dialogtool_action"] for t in system] == [
        "request",
        "inform_count",
        "confirm",
        "notify_success",
        "goodbye",
    ]
    assert [t.act for t in system] == [
        "seek_info",
        "function_calling",
        "seek_info",
        "function_calling",
        "other",
    ]
    assert system[3].tool_calls[0].args["add_insurance"] is True
    assert system[1].metadata["api_result"][0]["price_per_day"] == 33
    assert system[1].metadata["role_utterance"].startswith("Elementary")
    assert d0.provenance.model_dump()["dialogtool"]["role"]["mbti"] == "INTJ"
    assert d1.turns[3].action == "call" and d1.turns[3].tool_calls[0].args["number_of_seats"] == 2


def test_api_request_format() -> None:
    call = parse_api_request(
        "[getride(#destination='123 Main Street', #number_of_seats=2, #ride_type='Pool')]"
    )
    assert call.name == "getride" and call.args == {
        "destination": "123 Main Street",
        "number_of_seats": 2,
        "ride_type": "Pool",
    }
    assert parse_api_request("[Rents: reservecar(#car_type='SUV')]").name == "reservecar"  # flat setting


def test_next_action_scores_dialogtool_actions_of_an_import() -> None:
    dialogues = load_dialogtool(FIXTURE).dialogues
    examples = build_examples(dialogues, "dialogtool")
    assert [e.gold for e in examples][:3] == ["request", "inform_count", "confirm"] and len(examples) == 8

    class Oracle:
        async def respond(self, prefixes: list, messages: list | None = None) -> list[Reply]:
            assert messages is not None and len(messages) == len(prefixes)  # the label prompt
            out = []
            for p in prefixes:
                d = next(d for d in dialogues if d.id == p.id)
                gold = d.turns[len(p.turns)].metadata["dialogtool_action"]
                text = f"[{gold.title()}(because)]"
                out.append(Reply(parse_assistant(text), text))
            return out

    metrics, _ = asyncio.run(
        run_next_action(Oracle(), dialogues, method="label", labels="dialogtool", progress=False)
    )
    assert metrics["accuracy"] == 1.0 and metrics["n"] == 8 and metrics["T"] == metrics["NoT"] == 0.0


def test_import_cli_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "dt.jsonl"
    assert eval_main(["import", "dialogtool", str(FIXTURE), "--out", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2
    bad = json.loads((FIXTURE / "dialogues.json").read_text())
    bad[1]["turns"][1]["action"] = "Clarify"
    (tmp_path / "dialogues.json").write_text(json.dumps(bad))
    (tmp_path / "apps.json").write_text((FIXTURE / "apps.json").read_text())
    with pytest.raises(InputError, match="action 'Clarify' is not one of DialogTool's"):
        load_dialogtool(tmp_path)
    bad[1]["turns"][1]["action"] = "Confirm"
    bad[1]["turns"][3]["api_call"] = "[bookflight(#to='x')]"
    (tmp_path / "dialogues.json").write_text(json.dumps(bad))
    assert eval_main(["import", "dialogtool", str(tmp_path / "dialogues.json"), "--out", str(out)]) == 2
    assert "unknown API 'bookflight'" in capsys.readouterr().err
