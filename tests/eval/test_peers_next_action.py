"""Next-action prediction: metric definitions on a hand-made 10-turn case, the reply and label
readers, and the runner with scripted models."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers.next_action import (
    DIALOGTOOL_ACTIONS,
    DIALOGTOOL_TOOL_ACTIONS,
    MALFORMED,
    UNPARSED,
    build_examples,
    classify_reply,
    parse_action_label,
    run_next_action,
    score_next_action,
    write_next_action_run,
)
from diaforge.format import parse_assistant, render_assistant, render_calls
from diaforge.schema import Dialogue, Tool, ToolCall, load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


class ScriptedModel:
    """Stands for `diaforge.eval.models.ModelUnderTest`: answers ``answer(prefix, messages)``."""

    label = "scripted"

    def __init__(self, answer) -> None:
        self.answer = answer

    def messages(self, d: Dialogue) -> list[dict]:
        return [
            {"role": "system", "content": "tools"},
            *({"role": t.role, "content": t.content} for t in d.turns),
        ]

    async def respond(
        self, dialogues: list[Dialogue], messages: list[list[dict]] | None = None
    ) -> list[Reply]:
        out = []
        for i, d in enumerate(dialogues):
            text = self.answer(d, messages[i] if messages is not None else self.messages(d))
            out.append(Reply(parse_assistant(text), text))
        return out


# Ten turns whose metrics are computed by hand in the test below.
GOLD = ["call", "call", "call", "request", "clarify", "response", "response", "request", "call", "system_bye"]
PRED = [
    "call",
    "request",
    "call",
    "request",
    "call",
    "response",
    "response_fail",
    MALFORMED,
    "call",
    "system_bye",
]
GOLD_TOOLS = [["a"], ["a"], ["b"], [], [], [], [], [], ["c"], []]
PRED_TOOLS = [["a"], [], ["x"], [], ["a"], [], [], [], ["c", "d"], []]


def test_metrics_follow_their_definitions_on_a_hand_made_case() -> None:
    m = score_next_action(GOLD, PRED, gold_tools=GOLD_TOOLS, pred_tools=PRED_TOOLS)
    assert m["n"] == 10
    assert m["accuracy"] == 0.6  # turns 0, 2, 3, 5, 8, 9
    assert m["T"] == 0.1  # turn 1: a call was needed, the model asked instead
    assert m["NoT"] == 0.3  # turns 4 (called), 6 (failed), 7 (malformed)
    assert m["T"] + m["NoT"] == pytest.approx(1 - m["accuracy"])  # DialogTool Table 4's identity
    assert m["Rec"] == pytest.approx(
        2 / 3, abs=1e-6
    )  # turns 0, 2, 8 called when they should; 2 picked the gold tool
    assert m["API"] == 0.1
    assert m["Unn"] == 0.25  # 4 calls, 1 unneeded (turn 4)
    assert m["call_precision"] == 0.75 and m["call_recall"] == 0.75
    assert m["premature_call"] == pytest.approx(1 / 6, abs=1e-6)
    per = m["per_action"]
    assert (per["call"]["precision"], per["call"]["recall"], per["call"]["f1"]) == (0.75, 0.75, 0.75)
    assert per["request"]["f1"] == 0.5 and per["clarify"]["f1"] == 0.0
    assert per["response"]["precision"] == 1.0 and per["response"]["f1"] == pytest.approx(2 / 3, abs=1e-6)
    assert per["system_bye"]["f1"] == 1.0 and per["response_fail"]["support"] == 0
    assert m["macro_f1"] == pytest.approx((0.75 + 0.5 + 0 + 2 / 3 + 1) / 5, abs=1e-6)
    assert m["confusion"]["call"] == {"call": 3, "request": 1}
    assert m["confusion"]["request"] == {"request": 1, MALFORMED: 1}


def test_rec_is_none_without_tool_names_and_dialogtool_labels_work() -> None:
    assert score_next_action(GOLD, PRED)["Rec"] is None
    gold = ["request", "confirm", "inform", "goodbye"]
    pred = ["request", "inform", "inform", "offer_intent"]
    m = score_next_action(
        gold, pred, labels=DIALOGTOOL_ACTIONS, tool_labels=DIALOGTOOL_TOOL_ACTIONS, call_labels=()
    )
    assert (m["accuracy"], m["T"], m["NoT"]) == (0.5, 0.25, 0.25)
    with pytest.raises(ValueError):
        score_next_action(["call"], [])


TOOLS = [
    Tool(
        name="open_it_ticket",
        description="Open a ticket with IT.",
        parameters={
            "type": "object",
            "properties": {"queue_name": {"type": "string"}},
            "required": ["queue_name"],
        },
    ),
    Tool(
        name="open_hr_case",
        description="Open a case with HR.",
        parameters={
            "type": "object",
            "properties": {"employee_id": {"type": "string"}},
            "required": ["employee_id"],
        },
    ),
]


@pytest.mark.parametrize(
    ("text", "focus", "expected"),
    [
        ("Do you want to open it ticket or open hr case?", None, "clarify"),
        ("Which queue name should I use?", TOOLS[0], "request"),
        ("What is the employee ID?", None, "request"),
        ("Shall I use open hr case for this?", TOOLS[0], "suggest"),
        ("Could you say more about what you need?", None, "clarify"),
        ("Sorry, I cannot do that with the tools I have.", None, "response_fail"),
        ("Goodbye, have a nice day.", None, "system_bye"),
        ("Your ticket is open.", None, "response"),
    ],
)
def test_classify_reply(text: str, focus: Tool | None, expected: str) -> None:
    assert classify_reply(text, TOOLS, focus) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("request", "request"),
        ("Action: Request", "request"),
        ("I think response fail.", "response_fail"),
        ("RESPONSE", "response"),
        ("retriever-call", "retriever_call"),
        ("<think>call</think> clarify", "clarify"),
        ("no idea", UNPARSED),
    ],
)
def test_parse_action_label(answer: str, expected: str) -> None:
    assert parse_action_label(answer) == expected


@pytest.fixture(scope="module")
def bench() -> list[Dialogue]:
    return load_dialogues(BENCH)[:12]


def _oracle(bench: list[Dialogue]):
    by_id = {d.id: d for d in bench}

    def answer(prefix: Dialogue, messages: list[dict]) -> str:
        return render_assistant(by_id[prefix.id].turns[len(prefix.turns)])

    return answer


def test_runner_reads_actions_off_replies(bench: list[Dialogue]) -> None:
    examples = build_examples(bench)
    assert examples and all(e.gold in ("clarify", "request", "call") for e in examples)
    metrics, records = asyncio.run(run_next_action(ScriptedModel(_oracle(bench)), bench, progress=False))
    assert metrics["accuracy"] == 1.0 and metrics["Rec"] == 1.0 and metrics["n"] == len(examples)
    eager = ScriptedModel(lambda d, m: render_calls([ToolCall(name=d.candidate_tools[0].name)]))
    metrics, _ = asyncio.run(run_next_action(eager, bench, progress=False))
    calls = sum(1 for e in examples if e.gold == "call")
    assert metrics["T"] == 0.0 and metrics["call_recall"] == 1.0
    assert metrics["Unn"] == pytest.approx(1 - calls / len(examples), abs=1e-6)
    assert metrics["NoT"] == pytest.approx(1 - calls / len(examples), abs=1e-6)


def test_label_mode_asks_for_an_action_name(bench: list[Dialogue]) -> None:
    by_key = {(e.dialogue.id, e.turn): e.gold for e in build_examples(bench)}
    seen: list[list[dict]] = []

    def answer(prefix: Dialogue, messages: list[dict]) -> str:
        seen.append(messages)
        return f"Action: {by_key[(prefix.id, len(prefix.turns))]}"

    model = ScriptedModel(answer)
    metrics, records = asyncio.run(run_next_action(model, bench, method="label", progress=False))
    assert metrics["accuracy"] == 1.0 and metrics["method"] == "label" and metrics["Rec"] is None
    assert "retriever_call" in seen[0][0]["content"] and "Next action:" in seen[0][-1]["content"]
    assert "messages" not in vars(model)  # the label prompt is passed to respond, the model is not patched


def test_predictions_are_rescored_from_the_cli(
    bench: list[Dialogue], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    metrics, records = asyncio.run(run_next_action(ScriptedModel(_oracle(bench)), bench, progress=False))
    out = write_next_action_run(tmp_path / "run", metrics, records)
    assert (
        eval_main(["next-action", "--predictions", str(out / "next_action_predictions.jsonl"), "--json"]) == 0
    )
    text = capsys.readouterr().out
    assert "accuracy 1.000" in text
    assert json.loads(text[text.index("{") :])["accuracy"] == 1.0
    assert eval_main(["next-action"]) == 2
