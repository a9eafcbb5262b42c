"""DICE-Bench importer on hand-written round files and tool graph of its documented format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_gen.corpus import analyze_corpus, dialogue_dice_counts
from data_gen.errors import InputError
from data_gen.schema import load_dialogues
from eval.cli import main as eval_main
from eval.peers.dicebench import load_dice_graph, load_dice_tools, load_dicebench

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "dicebench"


def test_round_files_load_with_counts() -> None:
    result = load_dicebench(FIXTURE, tools=FIXTURE / "tool_docs.json", graph=FIXTURE / "tool_graph.json")
    c = result.report.counts
    assert result.report.loaded == c["instances"] == 3
    assert c["by_round"] == {"1": 2, "2": 1} and c["by_agents"] == {"2": 2, "3": 1}
    assert c["by_category"]["Persuassion_Deliberation_and_Negotiation"] == 2  # upstream spelling kept
    assert c["gold_calls"] == 4 and c["user_utterances"] == 14
    assert c["graph"] == {"nodes": 3, "edges": 2, "duplicate_links": 1, "self_loops": 0}


def test_each_round_n_instance_has_n_gold_calls_and_speaker_tagged_turns() -> None:
    dialogues = {d.id: d for d in load_dicebench(FIXTURE, tools=FIXTURE / "tool_graph.json").dialogues}
    d = dialogues["dice-round_2-0"]
    calls = [t for t in d.turns if t.tool_calls]
    assert len(calls) == d.provenance.model_extra["dicebench"]["round_num"] == 2
    assert [t.metadata["round"] for t in calls] == [1, 2]
    assert calls[0].metadata["tool_result"] == "Bangkok Garden serves Thai food in Boston."
    assert (d.seed_tool, d.gold_args["party_size"]) == ("book_restaurant", 2)
    first_user = d.turns[0]
    assert first_user.content.startswith("agent_a: ") and first_user.metadata["speaker"] == "agent_a"
    assert d.candidate_tools[1].required == ["restaurant_name", "date", "time", "location", "party_size"]
    # round-r utterances count against the calls of rounds r..N (DICE-Bench's public code)
    counts, total = dialogue_dice_counts(d)
    assert total == (1 + 2) + (1 + 5) and len(counts) == 6
    assert analyze_corpus(list(dialogues.values()))["dice"]["mean"] > 0


def test_tools_are_inferred_without_a_tool_file_and_unknown_functions_are_skipped(tmp_path: Path) -> None:
    inferred = load_dicebench(FIXTURE / "round_2.json").dialogues[0]
    book = next(t for t in inferred.candidate_tools if t.name == "book_restaurant")
    assert book.properties["party_size"]["type"] == "integer" and book.metadata["documented"] is False
    docs = json.loads((FIXTURE / "tool_docs.json").read_text())
    docs["functions"] = [f for f in docs["functions"] if f["function"] != "get_weather"]
    partial = tmp_path / "tool_docs.json"
    partial.write_text(json.dumps(docs))
    result = load_dicebench(FIXTURE / "round_1.json", tools=partial)
    assert result.report.loaded == 1
    assert result.report.skipped == {"function not in the tool file: get_weather": 1}
    assert len(load_dice_tools(FIXTURE / "tool_docs.json")) == 3
    assert load_dice_graph(FIXTURE / "tool_graph.json")["edges"][0] == ["find_restaurants", "book_restaurant"]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d[0]["metadata"]["params_ret_val"].pop(), "one gold call per round"),
        (lambda d: d[0]["messages"].append({"Round 3": []}), "must hold 2 rounds"),
        (lambda d: d[0]["messages"].reverse(), "Round 1"),
        (lambda d: d[0]["messages"][0]["Round 1"][0].pop("speaker"), "speaker"),
        (lambda d: d[0].pop("metadata"), "metadata"),
    ],
)
def test_a_malformed_instance_is_rejected_with_one_line(tmp_path: Path, edit, needle: str) -> None:  # noqa: ANN001
    data = json.loads((FIXTURE / "round_2.json").read_text())
    edit(data)
    path = tmp_path / "round_2.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        load_dicebench(path)
    msg = str(err.value)
    assert (
        len(msg.splitlines()) == 1
        and "round_2.json" in msg
        and "record 'instance 0'" in msg
        and needle in msg
    )


def test_import_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dice.jsonl"
    args = [
        "import",
        "dicebench",
        str(FIXTURE),
        "--tools",
        str(FIXTURE / "tool_docs.json"),
        "--out",
        str(out),
    ]
    assert eval_main(args) == 0
    assert len(load_dialogues(out)) == 3
    assert "dicebench: loaded 3" in capsys.readouterr().err
    assert eval_main(["import", "dicebench", str(tmp_path / "nope.json"), "--out", str(out)]) == 2
