"""BFCL beyond the parity five: every single-turn category (Java and JavaScript checked through
bfcl-eval's own value converters), live_relevance's "any call passes" rule, and multi-turn
miss_func's held-out functions, against the installed bfcl-eval wheel and its checker."""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import sys
import types

import pytest

from diaforge.eval.models import Reply
from diaforge.eval.peers import read_json_lines
from diaforge.eval.peers.bfcl.categories import (
    ALL_CATEGORIES,
    DOCUMENTED_COUNTS,
    SINGLE_TURN,
    bfcl_data_dir,
    language_of,
)
from diaforge.eval.peers.bfcl.checker import check_calls
from diaforge.eval.peers.bfcl.entries import gold_args
from diaforge.eval.peers.bfcl.importer import load_bfcl, load_bfcl_categories
from diaforge.eval.peers.bfcl.multi_turn import MISS_FUNC_REPLY, MISSED_FUNCTION_PROMPT
from diaforge.eval.peers.bfcl.runner import prompt_examples, run_bfcl
from diaforge.format import parse_assistant, render_calls
from diaforge.schema import Dialogue

pytest.importorskip("bfcl_eval", reason="install bfcl-eval==2026.3.23 with --no-deps")


@pytest.fixture(scope="module")
def bfcl() -> dict:
    return load_bfcl_categories(ALL_CATEGORIES)


def test_every_category_loads_with_its_documented_count(bfcl: dict) -> None:
    assert len(SINGLE_TURN) == 13 and set(bfcl) == set(DOCUMENTED_COUNTS)
    for cat, result in bfcl.items():
        assert result.report.loaded == DOCUMENTED_COUNTS[cat] and not result.report.skipped, cat
    assert bfcl["multi_turn_miss_func"].report.counts["missed_functions"] == 222
    assert all(d.seed_tool is None for d in bfcl["live_relevance"].dialogues)


def test_prompts_carry_bfcl_language_hints(bfcl: dict) -> None:
    py = bfcl["simple_python"].dialogues[0].candidate_tools[0]
    assert py.description.endswith(" Note that the provided function is in Python 3 syntax.")
    java = next(d for d in bfcl["simple_java"].dialogues if d.id == "simple_java_1").candidate_tools[0]
    assert java.description.endswith("Java 8 SDK syntax.")
    params = java.properties["params"]
    assert params["type"] == "string" and params["description"].endswith(
        "This is Java HashMap type parameter in string representation."
    )
    assert java.metadata["bfcl_parameters"]["properties"]["params"]["type"] == "HashMap"  # kept for checking
    js = bfcl["simple_javascript"].dialogues[0].candidate_tools[0]
    assert all(spec["type"] == "string" for spec in js.properties.values())


@pytest.fixture(scope="module")
def bfcl_checker():
    """bfcl-eval's `ast_checker` with a stand-in for its model-config module (see
    test_peers_bfcl.py), called with the category's language."""
    name = "bfcl_eval.constants.model_config"
    saved = sys.modules.get(name)
    stub = types.ModuleType(name)

    class _Config:
        underscore_to_dot = False

    class _Mapping(dict):
        def __missing__(self, key: str) -> _Config:
            return _Config()

    stub.MODEL_CONFIG_MAPPING = _Mapping()
    sys.modules[name] = stub
    try:
        module = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
        from bfcl_eval.constants.enums import Language
    finally:
        if saved is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = saved
    lang = {"python": Language.PYTHON, "java": Language.JAVA, "javascript": Language.JAVASCRIPT}
    return lambda funcs, out, gt, cat: module.ast_checker(funcs, out, gt, lang[language_of(cat)], cat, "m")[
        "valid"
    ]


def _source(value: object) -> str:
    """A value as Java/JavaScript source text, the way BFCL's prompts ask for it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float, str)):
        return str(value)
    return json.dumps(value)


def _outputs(cat: str, gt: list, tools: list, required: list[str]) -> list[list[dict]]:
    """Model outputs for one entry: the gold calls and ways of getting them wrong."""
    calls = []
    for answer in gt:
        name = next(iter(answer))
        tool = next(t for t in tools if t.name == name)
        args = gold_args(answer[name], tool)
        calls.append(
            {name: {k: _source(v) for k, v in args.items()} if language_of(cat) != "python" else args}
        )
    if len(calls) > 1:
        first = next(iter(calls[0]))
        return [calls, calls[::-1], calls[:-1], [{first: {}}, *calls[1:]]]
    ((name, args),) = calls[0].items()
    outs = [[{name: args}], [{name + "_v2": args}], [{name: {**args, "unexpected_param": "1"}}]]
    if required:
        outs.append([{name: {k: v for k, v in args.items() if k != required[0]}}])
    for key, value in args.items():
        if isinstance(value, str):
            alts = [value + "x", value.upper(), 7]
        elif isinstance(value, bool):
            alts = [not value, str(value).lower()]
        elif isinstance(value, (int, float)):
            alts = [value + 1, str(value)]
        else:
            alts = ["x"]
        outs.extend([{name: {**args, key: alt}}] for alt in alts)
    return outs


TAKE = {
    "simple_python": 120,
    "simple_java": 100,
    "simple_javascript": 50,
    "parallel": 60,
    "parallel_multiple": 60,
    "live_simple": 80,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
}


def test_verdicts_agree_with_bfcl_eval_checker_in_every_ast_category(bfcl: dict, bfcl_checker) -> None:
    data = bfcl_data_dir()
    seen: dict[str, list[int]] = {}
    disagreements = []
    for cat, take in TAKE.items():
        raw = {o["id"]: o for _, o in read_json_lines(data / f"BFCL_v4_{cat}.json")}
        answers = {
            o["id"]: o["ground_truth"]
            for _, o in read_json_lines(data / "possible_answer" / f"BFCL_v4_{cat}.json")
        }
        counts = seen.setdefault(cat, [0, 0, 0])
        for d in bfcl[cat].dialogues[:take]:
            gt = answers[d.id]
            doc = next(f for f in raw[d.id]["function"] if f["name"] == next(iter(gt[0])))
            for out in _outputs(cat, gt, d.candidate_tools, list(doc["parameters"].get("required") or [])):
                theirs = bfcl_checker(
                    copy.deepcopy(raw[d.id]["function"]), copy.deepcopy(out), copy.deepcopy(gt), cat
                )
                ours = check_calls(d.candidate_tools, out, gt, cat).valid
                counts[0] += 1
                counts[1] += theirs
                counts[2] += theirs == ours
                if theirs != ours:
                    disagreements.append((cat, d.id, out, theirs))
    for cat, (total, valid, agree) in seen.items():
        assert 0 < valid < total, cat  # a real mix of passing and failing outputs
        assert agree == total, f"{cat}: {agree}/{total}; first: {disagreements[:2]}"


class _Model:
    label = "scripted"

    def __init__(self, answer) -> None:
        self.answer = answer
        self.seen: list[Dialogue] = []

    def messages(self, d: Dialogue) -> list[dict]:
        return [{"role": "user", "content": t.content} for t in d.turns]

    async def respond(self, dialogues: list[Dialogue], messages: list | None = None) -> list[Reply]:
        self.seen.extend(dialogues)
        return [Reply(parse_assistant(t), t) for t in (self.answer(d) for d in dialogues)]


def test_live_relevance_passes_any_call_and_fails_a_reply(bfcl: dict) -> None:
    entries = {"live_relevance": bfcl["live_relevance"].dialogues}

    def any_call(d: Dialogue) -> str:
        from diaforge.schema import ToolCall

        return render_calls([ToolCall(name=d.candidate_tools[0].name, args={"made_up": 1})])

    m, _ = asyncio.run(run_bfcl(_Model(any_call), entries, progress=False))
    assert m["categories"]["live_relevance"]["accuracy"] == 1.0  # content is not checked
    m, _ = asyncio.run(run_bfcl(_Model(lambda d: "Sure, tell me more."), entries, progress=False))
    assert m["categories"]["live_relevance"]["accuracy"] == 0.0
    assert m["categories"]["live_relevance"]["errors"] == {"relevance_error:no_call": 16}


def test_miss_func_holds_functions_back_until_their_turn(bfcl: dict) -> None:
    d = next(d for d in bfcl["multi_turn_miss_func"].dialogues if d.id == "multi_turn_miss_func_0")
    assert d.provenance.model_extra["bfcl"]["missed_function"] == {"3": ["sort"]}
    refusal = next(t for t in d.turns if t.content == MISS_FUNC_REPLY)
    assert (refusal.act, refusal.action, refusal.metadata["bfcl_expect"]) == (
        "reject",
        "response_fail",
        "no_call",
    )
    i = next(i for i, t in enumerate(d.turns) if t.content == MISSED_FUNCTION_PROMPT)
    assert d.turns[i + 1].tool_calls[0].name == "sort"
    offered = {e.turn: {t.name for t in e.prompt.candidate_tools} for e in prompt_examples(d)}
    assert all(("sort" in names) == (turn > i) for turn, names in offered.items())

    # an oracle that answers each turn with its gold calls passes; one that calls sort early fails
    full = d

    def oracle(prefix: Dialogue) -> str:
        gold = full.turns[len(prefix.turns)]
        return render_calls(gold.tool_calls) if gold.tool_calls else gold.content

    m, _ = asyncio.run(run_bfcl(_Model(oracle), {"multi_turn_miss_func": [d]}, progress=False))
    assert m["categories"]["multi_turn_miss_func"]["accuracy"] == 1.0

    def eager(prefix: Dialogue) -> str:
        from diaforge.schema import ToolCall

        text = oracle(prefix)
        return (
            render_calls([ToolCall(name="sort", args={"file_name": "final_report.pdf"})])
            if text == MISS_FUNC_REPLY
            else text
        )

    m, records = asyncio.run(run_bfcl(_Model(eager), {"multi_turn_miss_func": [d]}, progress=False))
    assert m["categories"]["multi_turn_miss_func"]["accuracy"] == 0.0
    assert [r["error_type"] for r in records if not r["valid"]] == ["multi_turn:premature_call"]


def test_cli_accepts_single_turn_categories_and_groups(tmp_path) -> None:
    from diaforge.eval.cli import main as eval_main

    out = tmp_path / "py.jsonl"
    assert (
        eval_main(
            [
                "import",
                "bfcl",
                "--category",
                "simple_python,live_relevance",
                "--limit",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert len(out.read_text().splitlines()) == 4
    assert load_bfcl("simple_javascript", limit=1).dialogues[0].id == "simple_javascript_0"
