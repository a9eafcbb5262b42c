"""The reference policies (diaforge.eval.policies): which tool each one picks, that the reference takes its
argument values only from what the user said, that their turns read like a model's, and that
`eval run --backend reference|name-overlap|random` runs them with no model."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import ModelSpec, ModelUnderTest
from diaforge.eval.policies import POLICIES, NameOverlapPolicy, RandomPolicy, ReferencePolicy, make_policy
from diaforge.format import parse_assistant
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue, Persona, Tool, Turn, load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"

PERSONA = Persona(id="p1", description="A project manager in IT operations.")


def _tool(name: str, description: str, required: dict[str, dict] | None = None) -> Tool:
    props = required or {}
    return Tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": props, "required": list(props)},
    )


TRANSFER_INTERNAL = _tool(
    "create_stock_transfer_internal",
    "Move stock between two plants of the same company.",
    {"material_id": {"type": "string", "description": "Material number."}},
)
TRANSFER_EXTERNAL = _tool(
    "create_stock_transfer_external",
    "Move stock to a plant of another company.",
    {"material_id": {"type": "string", "description": "Material number."}},
)
OPEN_TICKET = _tool(
    "open_ticket",
    "Open an IT support ticket.",
    {
        "queue": {"type": "string", "description": "Support queue."},
        "priority": {"type": "string", "enum": ["low", "high"], "description": "Urgency."},
    },
)
BOOK_ROOM = _tool("book_meeting_room", "Reserve a meeting room.", {"room": {"type": "string"}})


def _dialogue(users: list[str], candidates: list[Tool], gold: str | None, *, did: str = "d1") -> Dialogue:
    turns: list[Turn] = []
    for i, text in enumerate(users):
        if i:
            turns.append(Turn(role="assistant", content="Could you tell me more?"))
        turns.append(Turn(role="user", content=text))
    return Dialogue(
        id=did,
        seed_tool=gold,
        candidate_tools=candidates,
        persona=PERSONA,
        goal="a goal the policies must not read",
        gold_args={"queue": "NOT-FROM-THE-USER"} if gold == "open_ticket" else {},
        turns=turns,
    )


def test_reference_calls_the_gold_tool_with_exactly_what_the_user_said() -> None:
    d = _dialogue(
        ["I need to raise something with support.", "The queue is Networking and the priority is high."],
        [BOOK_ROOM, OPEN_TICKET],
        "open_ticket",
    )
    turn = ReferencePolicy().turn(d)
    assert turn.tool_calls is not None and len(turn.tool_calls) == 1
    assert turn.tool_calls[0].name == "open_ticket"
    # The values come from the user turns, never from the gold map ("NOT-FROM-THE-USER").
    assert turn.tool_calls[0].args == {"queue": "Networking", "priority": "high"}


def test_reference_asks_for_missing_arguments_instead_of_guessing() -> None:
    d = _dialogue(["I need to raise something with support."], [BOOK_ROOM, OPEN_TICKET], "open_ticket")
    turn = ReferencePolicy().turn(d)
    assert not turn.tool_calls
    assert "queue" in turn.content and "priority" in turn.content
    # Only the still-missing argument is asked for once the user gave one.
    d2 = _dialogue(
        ["I need to raise something with support.", "The queue is Networking."],
        [BOOK_ROOM, OPEN_TICKET],
        "open_ticket",
    )
    turn2 = ReferencePolicy().turn(d2)
    assert not turn2.tool_calls and "priority" in turn2.content and "queue" not in turn2.content


def test_reference_asks_which_tool_while_two_are_open_then_completes_the_gold_tool() -> None:
    candidates = [TRANSFER_INTERNAL, TRANSFER_EXTERNAL, OPEN_TICKET]
    gold = "create_stock_transfer_external"
    # Both transfer tools fit "a stock transfer": the teacher asks, naming no tool, and calls nothing.
    first = ReferencePolicy().turn(_dialogue(["I need a stock transfer."], candidates, gold))
    assert not first.tool_calls and "?" in first.content and "create_stock" not in first.content
    assert first.phase == "tool_selection"
    # The answer leaves the external one: now told the gold tool, it asks for its value.
    d = _dialogue(["I need a stock transfer.", "To a plant of another company."], candidates, gold)
    second = ReferencePolicy().turn(d)
    assert not second.tool_calls and "material ID" in second.content
    # ... and calls once the user gave it.
    d = _dialogue(
        ["I need a stock transfer.", "To a plant of another company.", "The material ID is M-7."],
        candidates,
        gold,
    )
    assert [(c.name, c.args) for c in ReferencePolicy().turn(d).tool_calls] == [
        (gold, {"material_id": "M-7"})
    ]


TRANSFER_RETURN = _tool(
    "create_stock_transfer_return",
    "Move stock back to the vendor it came from.",
    {"material_id": {"type": "string", "description": "Material number."}},
)


def test_in_static_mode_the_reference_reads_answers_against_the_reference_questions() -> None:
    from diaforge.data_gen.agents import options_in_thought

    transfers = [TRANSFER_INTERNAL, TRANSFER_EXTERNAL, TRANSFER_RETURN, OPEN_TICKET]
    d = _dialogue(["I need to move some stock.", "None of those."], transfers, "create_stock_transfer_return")
    # The reference dialogue's question offered two of the three transfers; "none of those" leaves
    # the third and the ticket, so the policy asks about those two.
    asked = Turn(
        role="assistant",
        content="Should I move stock within the company or to another company?",
        thought="Candidates that match the request: a, b. They differ in what they do "
        "(create_stock_transfer_internal: within the company; create_stock_transfer_external: another company).",
        phase="tool_selection",
    )
    turn = parse_assistant(ReferencePolicy().respond(d, answered=[asked]))
    assert options_in_thought(turn.thought, transfers) == [TRANSFER_RETURN, OPEN_TICKET]
    # Read against a question that offered every open tool (no thought lists fewer), the same
    # answer leaves only the ticket: the selection counts as settled and the policy, told the gold
    # tool from then on, asks for its values instead of asking which tool.
    alone = parse_assistant(ReferencePolicy().respond(d))
    assert options_in_thought(alone.thought, transfers) is None and "material ID" in alone.content


def test_reference_refuses_when_no_tool_should_be_called() -> None:
    d = _dialogue(["What's the weather like?"], [BOOK_ROOM, OPEN_TICKET], None)
    turn = ReferencePolicy().turn(d)
    assert not turn.tool_calls and turn.content


def test_name_overlap_picks_the_candidate_whose_name_the_user_echoes() -> None:
    d = _dialogue(
        ["I have to create a stock transfer to an external company, material id is M-100."],
        [TRANSFER_INTERNAL, TRANSFER_EXTERNAL, OPEN_TICKET],
        "create_stock_transfer_external",
    )
    policy = NameOverlapPolicy()
    assert policy.choose(d).name == "create_stock_transfer_external"
    turn = policy.turn(d)
    assert [c.name for c in turn.tool_calls] == ["create_stock_transfer_external"]
    assert turn.tool_calls[0].args == {"material_id": "M-100"}


def test_name_overlap_breaks_ties_by_candidate_order_and_reads_every_user_turn() -> None:
    # "stock transfer" matches both transfer tools equally: the first in candidate order wins.
    d = _dialogue(["I need a stock transfer."], [TRANSFER_EXTERNAL, TRANSFER_INTERNAL], None)
    assert NameOverlapPolicy().choose(d).name == "create_stock_transfer_external"
    d = _dialogue(["I need a stock transfer."], [TRANSFER_INTERNAL, TRANSFER_EXTERNAL], None)
    assert NameOverlapPolicy().choose(d).name == "create_stock_transfer_internal"
    # A later user turn that names the distinguishing word moves the choice.
    d = _dialogue(
        ["I need a stock transfer.", "The external one."], [TRANSFER_INTERNAL, TRANSFER_EXTERNAL], None
    )
    assert NameOverlapPolicy().choose(d).name == "create_stock_transfer_external"
    # Nothing in common with any name: the first candidate.
    d = _dialogue(["Hello there."], [BOOK_ROOM, OPEN_TICKET], None)
    assert NameOverlapPolicy().choose(d).name == "book_meeting_room"


def test_random_is_seeded_by_the_dialogue_and_roughly_uniform() -> None:
    candidates = [TRANSFER_INTERNAL, TRANSFER_EXTERNAL, OPEN_TICKET, BOOK_ROOM]
    policy = RandomPolicy(seed=0)
    d = _dialogue(["I need a stock transfer."], candidates, None, did="same-id")
    first = policy.choose(d).name
    # Same dialogue id: same pick, at every turn and with a fresh policy of the same seed.
    longer = _dialogue(["I need a stock transfer.", "Anything else?"], candidates, None, did="same-id")
    assert RandomPolicy(seed=0).choose(longer).name == first
    picks = Counter(policy.choose(_dialogue(["x"], candidates, None, did=f"d{i}")).name for i in range(400))
    assert set(picks) == {c.name for c in candidates}
    assert all(60 <= n <= 140 for n in picks.values()), picks
    other_seed = [
        RandomPolicy(seed=1).choose(_dialogue(["x"], candidates, None, did=f"d{i}")).name for i in range(50)
    ]
    same_seed = [policy.choose(_dialogue(["x"], candidates, None, did=f"d{i}")).name for i in range(50)]
    assert other_seed != same_seed


@pytest.mark.parametrize("name", POLICIES)
def test_policy_text_is_deterministic_and_parses_like_a_model_turn(name: str) -> None:
    d = _dialogue(
        ["I need to raise something with support.", "The queue is Networking."],
        [BOOK_ROOM, OPEN_TICKET],
        "open_ticket",
    )
    text = make_policy(name, seed=3).respond(d)
    assert text == make_policy(name, seed=3).respond(d)
    assert text.startswith("<think>\n")
    parsed = parse_assistant(text)
    assert parsed.kind in ("reply", "tool_calls") and parsed.thought


def test_make_policy_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown reference policy"):
        make_policy("oracle")


def test_model_under_test_serves_a_policy_with_no_model() -> None:
    model = ModelUnderTest(ModelSpec(model="reference", backend="reference"))
    assert model.info["kind"] == "policy"
    d = _dialogue(
        ["I need to raise something with support.", "The queue is Networking and the priority is low."],
        [BOOK_ROOM, OPEN_TICKET],
        "open_ticket",
    )
    (reply,) = asyncio.run(model.respond([d]))
    assert reply.kind == "tool_calls" and not reply.truncated
    assert reply.parsed.tool_calls[0].args == {"queue": "Networking", "priority": "low"}


@pytest.fixture(scope="module")
def small_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    write_jsonl(path, load_dialogues(BENCH)[:6])
    return path


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_eval_run_with_policy_backends_needs_no_model(small_bench: Path, tmp_path: Path) -> None:
    runs = {}
    for name in POLICIES:
        out = tmp_path / name
        code = eval_main(
            ["run", "--backend", name, "--bench", str(small_bench), "--out", str(out), "--quiet"]
        )
        assert code == 0
        runs[name] = json.loads((out / "metrics.json").read_text())
        assert runs[name]["model"] == name and runs[name]["backend"] == name
        assert runs[name]["checkpoint"]["kind"] == "policy"
        assert runs[name]["max_new_tokens"] is None  # no budget applies to a policy
        for line in (out / "transcripts.jsonl").read_text().splitlines():
            t = json.loads(line)
            for turn in t["turns"]:
                if turn["role"] == "assistant":  # rendered in the assistant text format, thought first
                    assert turn["raw"].startswith("<think>") and turn["kind"] in ("reply", "tool_calls")
    # The ceiling is perfect on these dialogues, and is at least as good as the floors.
    assert runs["reference"]["dynamic"]["Acc"] == 1.0
    for name in ("name-overlap", "random"):
        assert runs[name]["dynamic"]["Acc"] <= runs["reference"]["dynamic"]["Acc"]


def test_eval_run_model_backends_still_need_a_model(small_bench: Path, tmp_path: Path, capsys) -> None:
    code = eval_main(["run", "--backend", "hf", "--bench", str(small_bench), "--out", str(tmp_path / "x")])
    assert code == 2
    assert "needs --model" in capsys.readouterr().err
