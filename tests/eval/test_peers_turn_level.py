"""Turn-level function calling with gold history: call scores, chain score, dialog-act accuracy."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers.confetti import load_confetti
from diaforge.eval.peers.turn_level import (
    call_examples,
    run_turn_level,
    score_call,
    soft_string_score,
    write_turn_level_run,
)
from diaforge.format import parse_assistant, render_assistant, render_calls
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn

FIXTURE = FIXTURES / "peers" / "confetti"


class ScriptedModel:
    """Stands for `diaforge.eval.models.ModelUnderTest`: answers ``answer(prefix)``."""

    label = "scripted"

    def __init__(self, answer) -> None:
        self.answer = answer

    async def respond(self, dialogues: list[Dialogue]) -> list[Reply]:
        return [Reply(parse_assistant(t), t) for t in map(self.answer, dialogues)]


GOLD = ToolCall(name="search_flights", args={"city": "Naples", "passengers": 2})
ACCEPT = {"city": ["Naples"], "passengers": [2], "cabin": ["", "economy"]}


@pytest.mark.parametrize(
    ("pred", "expected"),
    [
        (ToolCall(name="search_flights", args={"city": "naples", "passengers": 2}), (1, 1, 1, 1)),
        (
            ToolCall(name="search_flights", args={"city": "Naples", "passengers": "2", "cabin": "Economy"}),
            (1, 1, 1, 1),
        ),
        (ToolCall(name="book_flights", args={"city": "Naples", "passengers": 2}), (0, 0, 0, 0)),
        (ToolCall(name="search_flights", args={"city": "Naples"}), (1, 0, 0, 0)),
        (
            ToolCall(name="search_flights", args={"city": "Naples", "passengers": 2, "seat": "12A"}),
            (1, 0, 0, 0),
        ),
        (ToolCall(name="search_flights", args={"city": "Naples", "passengers": 3}), (1, 1, 0, 0)),
        (ToolCall(name="search_flights", args={"city": "Rome", "passengers": 2}), (1, 1, 0, 0)),
        (None, (0, 0, 0, 0)),
    ],
)
def test_score_call(pred: ToolCall | None, expected: tuple[int, int, int, int]) -> None:
    s = score_call(pred, GOLD, ACCEPT)
    assert (s["name"], s["params"], s["strict"], s["soft"]) == expected


def test_soft_string_match_is_strictly_between_zero_and_one_for_a_partial_value() -> None:
    s = score_call(
        ToolCall(name="search_flights", args={"city": "Naples, Italy", "passengers": 2}), GOLD, ACCEPT
    )
    assert s["strict"] == 0.0 and 0.0 < s["soft"] < 1.0
    assert s["soft"] == pytest.approx(2 / 3, abs=1e-6)
    assert soft_string_score("Naples", "Naples") == 1.0 and soft_string_score("Rome", "Naples") == 0.0
    plugged = score_call(
        ToolCall(name="search_flights", args={"city": "Napoli", "passengers": 2}),
        GOLD,
        ACCEPT,
        string_scorer=lambda a, b: 0.9,
    )
    assert plugged["soft"] == 0.9


def _oracle(dialogues: list[Dialogue]):
    by_id = {d.id: d for d in dialogues}

    def answer(prefix: Dialogue) -> str:
        full = by_id[prefix.id]
        n = len(prefix.turns)
        last = prefix.turns[-1]
        gold = full.turns[n - 1] if n - 1 < len(full.turns) else None
        if (
            last.role == "assistant"
            and last.tool_calls
            and gold is not None
            and gold.tool_calls
            and last != gold
        ):
            return render_calls(gold.tool_calls[len(last.tool_calls) :][:1])  # next call of a chain
        return render_assistant(full.turns[n])

    return answer


def test_oracle_scores_one_and_always_reply_scores_zero_on_confetti() -> None:
    dialogues = load_confetti(FIXTURE).dialogues
    metrics, records = asyncio.run(
        run_turn_level(ScriptedModel(_oracle(dialogues)), dialogues, progress=False)
    )
    assert metrics["call_examples"] >= 3
    assert metrics["AST_soft"] == metrics["AST_strict"] == metrics["name"] == metrics["chain"] == 1.0
    assert metrics["DA_accuracy"] == 1.0 and metrics["DA_examples"] > 3
    chatty = ScriptedModel(lambda d: "Could you tell me more?")
    metrics, _ = asyncio.run(run_turn_level(chatty, dialogues, progress=False))
    assert metrics["AST_soft"] == 0.0 and metrics["no_call"] == 1.0 and metrics["chain"] == 0.0
    assert metrics["DA_confusion"]["function_calling"] == {
        "seek_info": metrics["DA_confusion"]["function_calling"]["seek_info"]
    }


def _chain_dialogue() -> Dialogue:
    tools = [
        Tool(name="cd", parameters={"type": "object", "properties": {"folder": {"type": "string"}}}),
        Tool(name="ls"),
    ]
    calls = [
        ToolCall(name="cd", args={"folder": "docs"}),
        ToolCall(name="ls"),
        ToolCall(name="cd", args={"folder": ".."}),
    ]
    return Dialogue(
        id="chain",
        seed_tool="cd",
        candidate_tools=tools,
        persona=Persona(id="p", description="p"),
        turns=[
            Turn(role="user", content="list docs then go back"),
            Turn(role="assistant", tool_calls=calls, act="function_calling", action="call"),
        ],
    )


def test_chain_score_is_the_product_of_teacher_forced_factors() -> None:
    d = _chain_dialogue()
    examples = call_examples([d])
    assert [e.index for e in examples] == [0, 1, 2] and all(e.chain_length == 3 for e in examples)
    assert examples[2].prompt.turns[-1].tool_calls == d.turns[1].tool_calls[:2]
    metrics, _ = asyncio.run(run_turn_level(ScriptedModel(_oracle([d])), [d], progress=False))
    assert metrics["chain"] == 1.0 and metrics["chain_by_length"] == {"3": {"chain": 1.0, "turns": 1}}
    first_only = ScriptedModel(lambda p: render_calls([ToolCall(name="cd", args={"folder": "docs"})]))
    metrics, _ = asyncio.run(run_turn_level(first_only, [d], progress=False))
    assert metrics["AST_strict"] == pytest.approx(1 / 3, abs=1e-6)  # only the first factor is right
    assert metrics["chain"] == 0.0 and metrics["chain_strict"] == 0.0


def test_records_are_rescored_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _chain_dialogue()
    metrics, records = asyncio.run(run_turn_level(ScriptedModel(_oracle([d])), [d], progress=False))
    out = write_turn_level_run(tmp_path / "run", metrics, records)
    assert eval_main(["turn-level", "--records", str(out / "turn_level_records.jsonl")]) == 0
    assert "chain 1.000" in capsys.readouterr().out
    assert eval_main(["turn-level"]) == 2
