"""CONFETTI importer on a hand-written fixture of its documented BFCL-v2 format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.peers.confetti import load_confetti
from diaforge.schema import load_dialogues

FIXTURE = FIXTURES / "peers" / "confetti"


def test_both_files_load_with_counts() -> None:
    result = load_confetti(FIXTURE)
    r = result.report
    assert r.loaded == len(result.dialogues) == 6 and not r.skipped
    assert r.counts["calling_examples"] == 3 and r.counts["calling_dialogs"] == 2
    assert r.counts["gold_functions"] == 3
    assert r.counts["act_examples"] == 3 and r.counts["act_dialogs"] == 2
    assert r.counts["acts"] == {"seek_info": 2, "inform": 1, "reject": 1}


def test_calling_examples_map_onto_our_schema() -> None:
    d = {d.id: d for d in load_confetti(FIXTURE / "BFCL_v2_conversationsclean.json").dialogues}
    first = d["conversationsclean_0"]
    gold = first.turns[-1]
    assert first.seed_tool == "BookFlight_search_flights"
    assert gold.tool_calls[0].args == {
        "departure_airport": "SAN",
        "arrival_airport": "DEN",
        "departure_date": "2024-04-24",
        "cabin": "business",
    }
    assert gold.metadata["acceptable"][0]["BookFlight_search_flights"]["cabin"] == ["business", ""]
    second = d["conversationsclean_1"]
    roles = [(t.role, bool(t.tool_calls)) for t in second.turns]
    assert roles == [
        ("user", False),
        ("assistant", True),
        ("assistant", False),
        ("user", False),
        ("assistant", True),
    ]
    assert second.turns[1].metadata["results"] == ['{"flights": [{"flight_id": "UA-118"}]}']
    assert second.turns[1].tool_calls[0].args["cabin"] == "business"
    assert second.gold_args == {"flight_id": "UA-118", "passengers": 2}
    third = d["conversationsclean_2"]
    assert third.provenance.model_extra["confetti"]["system"] == ["You are a travel assistant."]


def test_dialog_act_examples_keep_every_label() -> None:
    d = {d.id: d for d in load_confetti(FIXTURE / "BFCL_v2_dialogacts.json").dialogues}
    multi = d["dialogacts_1"].turns[-1]
    assert multi.metadata["acts"] == ["inform", "seek_info"]
    assert (multi.act, multi.action) == ("inform", "response")
    ask = d["dialogacts_0"].turns[-1]
    assert (ask.act, ask.action) == ("seek_info", None) and ask.content.startswith("Sure.")
    reject = d["dialogacts_2"].turns[-1]
    assert (reject.act, reject.action) == ("reject", "response_fail")
    assert all(x.seed_tool is None for x in d.values())


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "confetti"
    shutil.copytree(FIXTURE, dst)
    return dst


def _edit(path: Path, lineno: int, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    obj = json.loads(lines[lineno - 1])
    edit(obj)
    lines[lineno - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "answers", "edit", "needle"),
    [
        ("BFCL_v2_conversationsclean.json", False, lambda o: o.update(question=[]), "question"),
        (
            "BFCL_v2_conversationsclean.json",
            False,
            lambda o: o["question"][0].append({"role": "robot", "content": "x"}),
            "unknown role",
        ),
        (
            "BFCL_v2_conversationsclean.json",
            True,
            lambda o: o.update(ground_truth=[{"Nope": {"a": [1]}}]),
            "gold function",
        ),
        (
            "BFCL_v2_dialogacts.json",
            True,
            lambda o: o.update(ground_truth=["agent_dance"]),
            "unknown dialog act",
        ),
        (
            "BFCL_v2_dialogacts.json",
            False,
            lambda o: o["question"][0].insert(0, {"role": "tool", "content": "{}"}),
            "no assistant turn",
        ),
    ],
)
def test_a_malformed_record_is_rejected_with_one_line(
    tmp_path: Path, file: str, answers: bool, edit, needle: str
) -> None:
    root = _copy(tmp_path)
    target = root / "possible_answer" / file if answers else root / file
    _edit(target, 2, edit)
    with pytest.raises(InputError) as err:
        load_confetti(root)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert file in msg and "line 2" in msg and needle in msg


def test_missing_answer_and_bad_json_name_the_file(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    ans = root / "possible_answer" / "BFCL_v2_dialogacts.json"
    ans.write_text("\n".join(ans.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(InputError, match=r"dialogacts_2: no answer"):
        load_confetti(root)
    (root / "BFCL_v2_conversationsclean.json").write_text('{"id": "x", \n')
    with pytest.raises(InputError, match=r"BFCL_v2_conversationsclean.json, line 1: invalid JSON"):
        load_confetti(root)


def test_import_cli_writes_our_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "confetti.jsonl"
    assert eval_main(["import", "confetti", str(FIXTURE), "--out", str(out), "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert reports[0]["loaded"] == 6
    assert len(load_dialogues(out)) == 6
    assert eval_main(["import", "confetti", "--out", str(out)]) == 2
