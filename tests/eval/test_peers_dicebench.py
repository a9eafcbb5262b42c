"""DICE-Bench on its released files: the sample round files, tool documents and graph, and the
predictions its own runner wrote (tests/fixtures/peers/dicebench/README.md)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.data_gen.corpus import analyze_corpus
from diaforge.dice import DiceBenchItemCounter, dialogue_dice_counts, item_mentioned
from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers import ImportResult
from diaforge.eval.peers.dicebench import load_dice_graph, load_dice_tools, load_dicebench
from diaforge.eval.peers.dicebench_em import (
    dice_exact_match,
    dice_prediction,
    dice_queries,
    read_dice_predictions,
    run_dicebench,
    score_dice_predictions,
)
from diaforge.format import ParsedMessage
from diaforge.schema import ToolCall, load_dialogues

FIXTURE = FIXTURES / "peers" / "dicebench"
PREDICTIONS = FIXTURE / "predictions" / "llama_3_2_3b_instruct"


@pytest.fixture(scope="module")
def dice() -> ImportResult:
    return load_dicebench(FIXTURE, tools=FIXTURE / "tool_docs.json", graph=FIXTURE / "tool_graph.json")


def _by_id(result):
    return {d.id: d for d in result.dialogues}


def test_released_round_files_load_with_counts(dice) -> None:
    c = dice.report.counts
    assert dice.report.loaded == c["instances"] == 12
    assert c["by_round"] == {"1": 3, "2": 3, "3": 3, "4": 3} and c["by_agents"] == {"2": 12}
    assert c["by_category"] == {"Persuassion_Deliberation_and_Negotiation": 12}  # upstream spelling
    assert c["gold_calls"] == 3 * (1 + 2 + 3 + 4) and c["user_utterances"] == 296
    assert c["graph"] == {"nodes": 124, "edges": 269, "duplicate_links": 1, "self_loops": 0}


def test_all_tools_mode_is_the_default_and_own_narrows_it(dice) -> None:
    docs = load_dice_tools(FIXTURE / "tool_docs.json")
    assert len(docs) == 124 and dice.report.counts["tool_set"] == "all"
    for d in dice.dialogues:
        assert [t.name for t in d.candidate_tools] == list(docs)  # every prompt lists all 124
    own = _by_id(load_dicebench(FIXTURE, tools=FIXTURE / "tool_docs.json", tool_set="own"))
    assert [t.name for t in own["dice-round_2-1"].candidate_tools] == [
        "rental_property_calculator",
        "take_note",
    ]
    # without a tool file "all" is every function the imported instances call
    inferred = load_dicebench(FIXTURE)
    names = {
        c["function"]
        for n in range(1, 5)
        for i in json.loads((FIXTURE / f"round_{n}.json").read_text())
        for c in i["metadata"]["params_ret_val"]
    }
    assert {t.name for t in inferred.dialogues[0].candidate_tools} == names
    assert inferred.report.counts["tool_set"] == "all (inferred from the calls)"
    with pytest.raises(InputError, match="tool set"):
        load_dicebench(FIXTURE, tool_set="some")


def test_each_round_n_instance_has_n_gold_calls_as_released(dice) -> None:
    d = _by_id(dice)["dice-round_2-1"]
    calls = [t for t in d.turns if t.tool_calls]
    assert [t.metadata["round"] for t in calls] == [1, 2]
    first = calls[0].tool_calls[0]
    assert first.name == "rental_property_calculator"
    assert first.args == {
        "address": "123 Maple Street, Springfield",
        "bathrooms": 2,
        "accommostrings": "4",  # garbled key and string type kept as released
        "bedrooms": 3,
        "currency": "USD",
    }
    assert (
        calls[0]
        .metadata["tool_result"]
        .startswith("The estimated monthly rent for the property at 123 Maple")
    )
    assert (
        d.turns[0].content.startswith("agent_b: I heard you're interested")
        and d.turns[0].metadata["speaker"] == "agent_b"
    )
    assert (d.seed_tool, d.gold_args) == ("take_note", dict(calls[1].tool_calls[0].args))
    doc = next(t for t in d.candidate_tools if t.name == "rental_property_calculator")
    assert doc.metadata["doc"]["function"] == "rental_property_calculator" and doc.required == list(
        doc.properties
    )


def test_number_words_count_as_mentions_of_numeric_values(dice) -> None:
    """The released round-2 instance 1 gives every number in words; DICE-Bench's LLM counter
    reads them as the values, and so must the value matcher."""
    d = _by_id(dice)["dice-round_2-1"]
    texts = {t.content.split(": ", 1)[1]: t for t in d.turns if t.role == "user"}
    from diaforge.dice import DiceItem

    three = "The property on Maple Street has three bedrooms. How many bathrooms do you think would be ideal for potential renters?"
    four = "It can comfortably accommodate four people. What currency should we use for estimating the rental value?"
    assert three in texts and four in texts
    assert item_mentioned(three, DiceItem("rental_property_calculator", "bedrooms", 3))
    assert item_mentioned(four, DiceItem("rental_property_calculator", "accommostrings", "4"))
    assert item_mentioned("Two bathrooms would be quite appealing", DiceItem("f", "bathrooms", 2))
    assert item_mentioned("we need 25 seats", DiceItem("f", "seats", "twenty-five"))
    assert not item_mentioned("someone said hi", DiceItem("f", "n", 1))
    counts, total = dialogue_dice_counts(d)
    assert total == (1 + 5) + (1 + 1)
    # utterances 2-4 of round 1 each name one value: bedrooms, bathrooms, accommodation
    assert counts[1:4] == [1, 1, 1]
    assert analyze_corpus(dice.dialogues)["dice"]["mean"] > 0


class _FakeBackend:
    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)
        self.seen: list[list[dict]] = []

    async def chat(self, messages, *, temperature, max_tokens, seed):
        self.seen.append(messages)
        assert temperature == 0.0 and max_tokens == 64
        return type("R", (), {"text": self.answers.pop(0)})()


def test_dicebench_counter_asks_its_own_question(dice) -> None:
    d = _by_id(dice)["dice-round_2-0"]
    pairs, total = DiceBenchItemCounter.queries(d)
    n_round1 = sum(1 for t in d.turns if t.role == "user" and t.metadata["round"] == 1)
    assert total == (1 + 1) + (1 + 2) and len(pairs) == 19
    # a round-1 utterance sees the documents of rounds 1..2, a round-2 one only round 2's
    assert [doc["function"] for doc in pairs[0][1]] == ["delete_todo_list", "share_by_social_network"]
    assert [doc["function"] for doc in pairs[n_round1][1]] == ["share_by_social_network"]
    assert pairs[0][0].startswith("I've been thinking about our to-do list")  # no speaker tag
    backend = _FakeBackend(["2", " 1 ", "two"] + ["0"] * 16)
    counter = DiceBenchItemCounter(backend)
    counts, _ = asyncio.run(counter.counts(d))
    assert counts[:3] == [2, 1, 0] and counter.unparsed == 1  # "two" is not an integer: 0, as there
    system, user = backend.seen[0]
    assert system == {"role": "system", "content": "You are a helpful assistant."}
    assert user["content"].startswith(
        "Below is documentation for one or more functions (description, parameters).\n"
    )
    assert f'User Utterance: "{pairs[0][0]}"' in user["content"]
    assert json.dumps(pairs[0][1], indent=2, ensure_ascii=False) in user["content"]


def test_released_predictions_score_by_round(dice) -> None:
    preds = read_dice_predictions(PREDICTIONS)
    assert len(preds) == 12 and len(preds[(4, 3)]) == 4
    m = score_dice_predictions(dice.dialogues, preds)
    # Llama-3.2-3B on the 30 sample queries: send_sms and redeem_coupon (round 1), the quoted
    # share_by_social_network content (round 2 of instance 0) and search_by_engine (round 1 of
    # round-3 instance 1) are exact; nothing else is
    assert m["queries"] == 30 and m["EM_query"] == pytest.approx(4 / 30, abs=1e-6)
    assert m["rounds"]["R1"]["EM_instance"] == pytest.approx(2 / 3, abs=1e-6)
    assert m["rounds"]["R2"]["EM_instance"] == pytest.approx((0 + 0.5 + 0) / 3, abs=1e-6)
    assert m["rounds"]["R2"]["by_round"] == {"1": 0.0, "2": pytest.approx(1 / 3, abs=1e-6)}
    assert m["rounds"]["R3"]["EM_instance"] == pytest.approx((1 / 3) / 3, abs=1e-6)
    assert m["rounds"]["R4"]["EM_instance"] == 0.0
    assert m["Avg(R)"] == pytest.approx((2 / 3 + 1 / 6 + 1 / 9 + 0) / 4, abs=1e-6)
    assert m["parties"] == {"P2": {"instances": 12, "EM_instance": m["Avg(P)"]}}
    assert m["invalid_json"] == 0.0 and m["missing"] == 0


@pytest.mark.parametrize(
    ("parsed", "gold", "ok"),
    [
        (
            {"function": ["f", "r"], "parameters": {"n": ["2", "r"]}},
            {"function": "f", "parameters": {"n": 2}},
            True,
        ),
        (
            {"function": ["f", "r"], "parameters": {"n": ["3", "r"]}},
            {"function": "f", "parameters": {"n": 2}},
            False,
        ),
        (
            {"function": ["g", "r"], "parameters": {"n": ["2", "r"]}},
            {"function": "f", "parameters": {"n": 2}},
            False,
        ),
        ({"function": ["f", "r"], "parameters": {}}, {"function": "f", "parameters": {"n": 2}}, False),
        (
            {"function": ["f", "r"], "parameters": {"n": ["2", ""], "m": ["x", ""]}},
            {"function": "f", "parameters": {"n": 2}},
            False,
        ),
        (
            {"function": ["f", "r"], "parameters": {"t": [" hello  World", ""]}},
            {"function": "f", "parameters": {"t": '"Hello world"'}},
            True,
        ),
        ({"function": ["none", "r"], "parameters": {}}, {"function": "none", "parameters": {}}, False),
        ({"function": "ERROR", "parameters": {}}, {"function": "f", "parameters": {}}, False),
        ({}, {"function": "f", "parameters": {}}, False),
        (
            {"function": ["check_calendar", "r"], "parameters": {}},
            {"function": "check_calendar", "parameters": {}},
            True,
        ),
    ],
)
def test_exact_match_rule(parsed: dict, gold: dict, ok: bool) -> None:
    assert dice_exact_match(*dice_prediction(parsed), gold) is ok


class _Oracle:
    """Answers every DICE-Bench query with the round's gold call (the prompt's seed tool)."""

    async def respond(self, dialogues):
        out = []
        for d in dialogues:
            assert all(not t.tool_calls for t in d.turns) and d.turns[-1].role == "user"
            call = ToolCall(name=d.seed_tool, args=dict(d.gold_args))
            out.append(
                Reply(
                    ParsedMessage(
                        kind="tool_calls", thought=None, content="", tool_calls=[call], reason=None, raw=""
                    ),
                    raw="",
                )
            )
        return out


def test_queries_follow_dicebench_and_an_oracle_scores_one(dice, tmp_path: Path) -> None:
    queries = dice_queries(dice.dialogues)
    assert len(queries) == 30
    q = next(q for q in queries if q.dialogue.id == "dice-round_2-0" and q.round == 2)
    said = [t for t in q.prompt.turns if t.role == "assistant"]
    assert [t.content for t in said] == [
        "The to-do list titled 'Spring Cleaning Tasks' has been successfully deleted."
    ]
    assert len(q.prompt.candidate_tools) == 124 and q.prompt.turns[-1].content.startswith("agent_")
    files = asyncio.run(run_dicebench(_Oracle(), dice.dialogues, progress=False))
    assert sorted(files) == [1, 2, 3, 4] and len(files[4][0]["round_results"]) == 4
    path = tmp_path / "oracle_round_2.json"
    path.write_text(json.dumps(files[2]))
    m = score_dice_predictions(dice.dialogues, read_dice_predictions(tmp_path))
    assert m["rounds"]["R2"]["EM_instance"] == 1.0 and m["missing"] == 9  # only round 2 given


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
def test_a_malformed_instance_is_rejected_with_one_line(tmp_path: Path, edit, needle: str) -> None:
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


def test_unknown_functions_are_skipped_and_the_graph_is_deduplicated(tmp_path: Path) -> None:
    docs = json.loads((FIXTURE / "tool_docs.json").read_text())
    docs["functions"] = [f for f in docs["functions"] if f["function"] != "send_sms"]
    partial = tmp_path / "tool_docs.json"
    partial.write_text(json.dumps(docs))
    result = load_dicebench(FIXTURE / "round_1.json", tools=partial)
    assert result.report.loaded == 2 and result.report.skipped == {
        "function not in the tool file: send_sms": 1
    }
    g = load_dice_graph(FIXTURE / "tool_graph.json")
    assert g["edges"][0] == ["find_restaurants", "book_restaurant"] and len(g["edges"]) == 269


def test_cli_import_run_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "dice.jsonl"
    assert (
        eval_main(
            [
                "import",
                "dicebench",
                str(FIXTURE),
                "--tools",
                str(FIXTURE / "tool_docs.json"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert len(load_dialogues(out)) == 12 and "dicebench: loaded 12" in capsys.readouterr().err
    tools = str(FIXTURE / "tool_docs.json")
    assert (
        eval_main(
            [
                "dicebench",
                "score",
                "--data",
                str(FIXTURE),
                "--tools",
                tools,
                "--pred",
                str(PREDICTIONS),
                "--json",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "R1 66.67 (n=3" in text and json.loads(text[text.index("{") :])["queries"] == 30
    run = tmp_path / "run"
    args = [
        "dicebench",
        "run",
        "--backend",
        "random",
        "--data",
        str(FIXTURE / "round_1.json"),
        "--tools",
        tools,
    ]
    assert eval_main([*args, "--out", str(run), "--quiet"]) == 0
    written = json.loads((run / "random_round_1.json").read_text())
    assert [e["diag_id"] for e in written] == [0, 1, 2] and written[0]["round_results"][0][
        "round_name"
    ] == "Round 1"
    assert json.loads((run / "dicebench_metrics.json").read_text())["queries"] == 3
    assert eval_main(["dicebench", "score", "--data", str(FIXTURE), "--tools", tools]) == 2
