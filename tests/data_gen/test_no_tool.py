"""Retrieval misses in generation (diaforge.data_gen.no_tool, diaforge.data_gen.agents.refusal, the no_tool
validator): the configured share of seeds on the bundled catalogue and on a catalogue written
here, each ending in a plain refusal after the user ruled out every candidate, the rest of the
corpus unchanged, and validators that reject an early refusal and a call made when nothing fits."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.data_gen.agents import DialogueState, ScriptedTeacher
from diaforge.data_gen.agents.refusal import is_refusal, miss_progress, set_apart
from diaforge.data_gen.catalogue import load_catalogue
from diaforge.data_gen.cli import main as data_gen_main
from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig, load_config
from diaforge.data_gen.no_tool import miss_count, miss_seeds
from diaforge.data_gen.validators import no_tool_validator, run_rule_validators
from diaforge.errors import InputError
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn, load_dialogues
from diaforge.similarity import DistractorRetriever, get_encoder

TRAIN = ROOT / "data_gen" / "assets" / "catalogue_train.json"


def _tool(name: str, description: str, *params: str) -> dict:
    props = {p: {"type": "string", "description": f"The {p.replace('_', ' ')}."} for p in params}
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": props, "required": list(params)},
        "metadata": {"line_of_business": "customer service"},
    }


# A shop's order tools: two refunds that differ only in whether the order arrived, and their
# neighbours. Written for this test, so that the behaviour does not hang on the bundled catalogue.
SHOP = [
    _tool(
        "refund_order_delivered",
        "Refunds an order that was delivered to the customer; the money goes back to the card.",
        "order_id",
    ),
    _tool(
        "refund_order_lost",
        "Refunds an order that never arrived, once the carrier has confirmed the parcel lost.",
        "order_id",
    ),
    _tool("cancel_order", "Cancels an order that has not shipped yet.", "order_id"),
    _tool("track_order", "Shows where an order is in transit, with the carrier's last scan.", "order_id"),
    _tool(
        "exchange_order_item",
        "Exchanges one item of a delivered order for another size or colour.",
        "order_id",
        "item_sku",
    ),
    _tool("reorder_items", "Places a new order with the same items as an earlier order.", "order_id"),
    _tool(
        "update_order_address",
        "Changes the delivery address of an order before it ships.",
        "order_id",
        "new_address",
    ),
    _tool(
        "open_it_ticket", "Opens an IT support ticket for a broken laptop or a software problem.", "device"
    ),
]


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shop") / "shop.json"
    path.write_text(json.dumps(SHOP), encoding="utf-8")
    return path


def _run(catalogue: Path, out: Path, n: int, share: float, **kw) -> tuple[list[Dialogue], dict]:
    cfg = GenerationConfig(
        catalogue=str(catalogue),
        out=str(out),
        num_dialogues=n,
        no_tool_share=share,
        plots=False,
        export=False,
        progress=False,
        **kw,
    )
    summary = asyncio.run(generate(cfg))
    return load_dialogues(out / "dialogues.jsonl", allow_empty=True), summary.stats


def _check_miss(d: Dialogue, tools: list[Tool], k: int) -> None:
    """A miss as the issue asks for: no gold tool, the need's nearest k+1 neighbours as the
    candidates, no call, a question first, and a plain refusal last; every validator passed."""
    need = d.withheld_tool
    assert d.seed_tool is None and need is not None and d.id.endswith(f"-miss-{need.name}")
    nearest = DistractorRetriever(tools, get_encoder()).topk(need.name, k + 1)
    assert {c.name for c in d.candidate_tools} == {t.name for t in nearest}
    assert not any(t.tool_calls for t in d.turns)
    assert not any(t.action == "request" or t.phase == "argument_completion" for t in d.turns)
    assistant = [t for t in d.turns if t.role == "assistant"]
    assert "?" in assistant[0].content and is_refusal(assistant[-1].content)
    assert not any(is_refusal(t.content) for t in assistant[:-1])
    assert (assistant[-1].act, assistant[-1].action) == ("reject", "response_fail")
    assert [v.validator for v in d.provenance.verdicts] == [
        "format",
        "no_tool",
        "naturalness",
        "relevancy",
        "critique",
    ]
    assert all(v.passed for v in d.provenance.verdicts)
    assert all(v.passed for v in run_rule_validators(d))  # re-checked from the record


def test_the_share_picks_exactly_its_seeds_from_the_run_seed() -> None:
    assert miss_count(40, 0.1) == 4 and miss_count(5, 0.1) == 1 and miss_count(7, 0.0) == 0
    assert miss_count(3, 1.0) == 3
    seeds = miss_seeds(40, 0.25, seed=7)
    assert (
        len(seeds) == 10 and seeds == miss_seeds(40, 0.25, seed=7) and seeds != miss_seeds(40, 0.25, seed=8)
    )
    assert miss_seeds(40, 0.0, seed=7) == frozenset()


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_misses_on_a_catalogue_written_for_the_test(shop: Path, tmp_path: Path) -> None:
    dialogues, stats = _run(shop, tmp_path / "shop", 8, 0.5, k=3)
    misses = [d for d in dialogues if d.withheld_tool is not None]
    assert stats["no_tool"]["seeds"] == 4 and stats["no_tool"]["share"] == 0.5
    assert stats["no_tool"]["accepted"] == len(misses) >= 3
    assert stats["no_tool"]["accepted_share"] == pytest.approx(len(misses) / len(dialogues))
    tools = load_catalogue(shop).tools
    for d in misses:
        _check_miss(d, tools, k=3)
    # The refusal follows what the user said about their need, not the vague opening.
    for d in misses:
        answers = " ".join(t.content for t in d.turns[1:] if t.role == "user")
        assert answers and any(set_apart(d.withheld_tool, c, answers) for c in d.candidate_tools)
    # The other seeds are the dialogues a run without misses makes for them, byte for byte.
    plain, _ = _run(shop, tmp_path / "plain", 8, 0.0, k=3)
    by_id = {d.id: d for d in plain}
    for d in dialogues:
        if d.withheld_tool is None:
            assert d.model_dump() == by_id[d.id].model_dump()


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_misses_on_the_bundled_catalogue(tmp_path: Path) -> None:
    dialogues, stats = _run(TRAIN, tmp_path / "train", 12, 0.25, reasoning="lookup")
    misses = [d for d in dialogues if d.withheld_tool is not None]
    assert stats["no_tool"]["seeds"] == 3 and len(misses) == stats["no_tool"]["accepted"] >= 2
    tools = load_catalogue(TRAIN).tools
    for d in misses:
        _check_miss(d, tools, k=5)
        assert d.turns[-1].thought.startswith("Turned down by the user:")  # the lookup style
    assert sum(d.withheld_tool is None for d in dialogues) >= 8


def _miss(candidates: list[Tool], need: Tool, turns: list[Turn]) -> Dialogue:
    return Dialogue(
        id="000001-miss-refund_order_lost",
        seed_tool=None,
        candidate_tools=candidates,
        persona=Persona(id="p", description="A store clerk."),
        gold_args={"order_id": "ORD-48213"},
        turns=turns,
        provenance={"withheld_tool": need.model_dump(mode="json")},
    )


def _assistant(content: str = "", *, calls: list[ToolCall] | None = None, act: str | None = None) -> Turn:
    action = {"seek_info": "clarify", "reject": "response_fail", "function_calling": "call"}.get(act or "")
    return Turn(role="assistant", thought="t", content=content, tool_calls=calls, act=act, action=action)


def test_validators_reject_an_early_refusal_and_a_call_when_nothing_fits() -> None:
    tools = {t["name"]: Tool.model_validate(t) for t in SHOP}
    need = tools["refund_order_lost"]
    candidates = [
        tools[n] for n in ("refund_order_delivered", "cancel_order", "track_order", "reorder_items")
    ]
    opening = Turn(role="user", content="Hi, I need to refund an order.")
    question = _assistant(
        "Do you want me to refund an order that was delivered, cancel an order, track an order or place a new order?",
        act="seek_info",
    )
    answer = Turn(role="user", content="None of those, really. I need to refund an order that never arrived.")
    refusal = _assistant("I'm sorry, none of the tools I have can do that.", act="reject")
    good = _miss(candidates, need, [opening, question, answer, refusal])
    assert no_tool_validator(good).passed
    # A refusal to the vague opening: the user has ruled nothing out yet.
    early = no_tool_validator(_miss(candidates, need, [opening, refusal]))
    assert not early.passed and early.reason.startswith("early_refusal")
    # A near neighbour called when nothing fits.
    call = _assistant(
        calls=[ToolCall(name="refund_order_delivered", args={"order_id": "ORD-48213"})],
        act="function_calling",
    )
    called = no_tool_validator(_miss(candidates, need, [opening, question, answer, call]))
    assert not called.passed and called.reason.startswith("call_without_fit")
    assert (
        run_rule_validators(_miss(candidates, need, [opening, question, answer, call]))[-1].validator
        == "no_tool"
    )
    # Asking for the arguments of a tool it does not have, then refusing.
    ask = _assistant("Which order ID is it?", act="seek_info").model_copy(update={"action": "request"})
    reply = Turn(role="user", content="It is ORD-48213.")
    asked = no_tool_validator(_miss(candidates, need, [opening, question, answer, ask, reply, refusal]))
    assert not asked.passed and asked.reason.startswith("asked_arguments")
    # A dialogue that goes on after its refusal, and one that ends on a question.
    more = no_tool_validator(_miss(candidates, need, [opening, refusal, answer, refusal]))
    assert not more.passed and more.reason.startswith("no_refusal")
    open_end = no_tool_validator(_miss(candidates, need, [opening, question]))
    assert not open_end.passed and open_end.reason.startswith("no_refusal")


def test_the_teacher_asks_as_usual_then_refuses_once_the_user_ruled_everything_out() -> None:
    tools = {t["name"]: Tool.model_validate(t) for t in SHOP}
    candidates = [
        tools[n] for n in ("refund_order_delivered", "cancel_order", "exchange_order_item", "track_order")
    ]
    state = DialogueState(
        gold=tools["refund_order_lost"],
        candidates=candidates,
        persona=Persona(id="p", description="A store clerk."),
        goal="",
        gold_args={},
        turns=[Turn(role="user", content="Hi, I need to sort out an order.")],
        no_tool=True,
    )
    teacher = ScriptedTeacher()
    first = asyncio.run(teacher.act(state, random.Random(0))).turn
    usual = teacher.select_or_ask(state.__class__(**{**state.__dict__, "no_tool": False}), random.Random(0))
    assert first == usual and "?" in first.content and not first.tool_calls  # the usual question
    state.turns += [
        first,
        Turn(role="user", content="None of those. I need to refund an order that never arrived."),
    ]
    assert miss_progress(state, teacher.max_options).left == []
    last = asyncio.run(teacher.act(state, random.Random(1))).turn
    assert is_refusal(last.content) and not last.tool_calls and last.action == "response_fail"


def test_a_bad_share_is_one_line(tmp_path: Path, shop: Path, capsys) -> None:
    config = tmp_path / "gen.yaml"
    config.write_text("no_tool_share: 1.5\n", encoding="utf-8")
    with pytest.raises(InputError, match="no_tool_share"):
        load_config(config)
    with pytest.raises(SystemExit) as exit_:  # argparse refuses it before anything runs
        data_gen_main(
            ["generate", "--catalogue", str(shop), "--out", str(tmp_path / "x"), "--no-tool-share", "2"]
        )
    assert exit_.value.code == 2 and "must lie in [0, 1]" in capsys.readouterr().err
    small = tmp_path / "small.json"
    small.write_text(json.dumps(SHOP[:4]), encoding="utf-8")
    cfg = GenerationConfig(
        catalogue=str(small), out=str(tmp_path / "y"), k=3, num_dialogues=2, no_tool_share=0.5
    )
    with pytest.raises(InputError, match="at least k\\+2 = 5"):
        asyncio.run(generate(cfg))


def test_a_zero_share_leaves_the_fingerprint_as_it_was() -> None:
    base = GenerationConfig(catalogue="c.json", encoder="tfidf")
    assert "no_tool_share" not in base.fingerprint("sha")
    assert (
        GenerationConfig(catalogue="c.json", encoder="tfidf", no_tool_share=0.1).fingerprint("sha")[
            "no_tool_share"
        ]
        == 0.1
    )
