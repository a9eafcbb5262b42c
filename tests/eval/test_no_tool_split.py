"""The no-tool split (diaforge.eval.no_tool): parity of its metrics on hand-computed transcripts, the split
kept apart from the positive split in metrics.json, report.md, comparison.md and `eval run`, the
default split file, and the floors on it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.compare import compare_runs
from diaforge.eval.metrics import compute_metrics
from diaforge.eval.models import ModelSpec, ModelUnderTest
from diaforge.eval.no_tool import (
    NO_TOOL_KEYS,
    compute_no_tool,
    first_refusal,
    load_no_tool_split,
    no_tool_bench_for,
    split_summary,
    summarise_no_tool,
)
from diaforge.eval.peers.when2call_scores import tool_hallucination_rate
from diaforge.eval.policies import POLICIES
from diaforge.eval.report import summarise, write_run
from diaforge.eval.runner import DynamicConfig, run_dynamic, run_static
from diaforge.eval.transcripts import Transcript
from diaforge.jsonl import write_jsonl
from diaforge.schema import load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
SPLIT = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1_no_tool.jsonl"
CANDIDATES = ["open_case", "list_queues", "close_case"]


def U(text: str = "I need help") -> dict:
    return {"role": "user", "content": text}


def R(text: str) -> dict:
    return {"role": "assistant", "kind": "reply", "content": text, "raw": text}


def C(name: str = "open_case") -> dict:
    calls = [{"name": name, "args": {}}]
    return {"role": "assistant", "kind": "tool_calls", "raw": json.dumps(calls), "tool_calls": calls}


BAD = {"role": "assistant", "kind": "malformed", "raw": "[{", "reason": "invalid JSON"}


def T(
    tid: str, turns: list[dict], *, split: str = "no_tool", ended: str = "t_max", mode: str = "static"
) -> Transcript:
    return Transcript.model_validate(
        {
            "id": tid,
            "mode": mode,
            "seed_tool": None if split == "no_tool" else "open_ticket",
            "gold_args": {},
            "candidate_tools": CANDIDATES,
            "turns": turns,
            "ended": ended,
            "split": split,
            "withheld_tool": "open_ticket" if split == "no_tool" else None,
        }
    )


def split_transcripts(mode: str = "static") -> list[Transcript]:
    return [
        # d1: a question, then a plain refusal at the 2nd assistant turn: refused, r = 2.
        T(
            "d1",
            [U(), R("Which one do you mean?"), U(), R("Sorry, none of my tools can do that.")],
            ended="refusal",
            mode=mode,
        ),
        # d2: refuses at once (the metric takes it; the generator's validator would not): r = 1.
        T("d2", [U(), R("I can't help with that one.")], ended="refusal", mode=mode),
        # d3: calls a near neighbour: a wrong call.
        T("d3", [U(), C()], ended="tool_call", mode=mode),
        # d4: keeps asking until the turn cap: undecided.
        T("d4", [U(), R("Which one?"), U(), R("And which queue?")], mode=mode),
        # d5: says no, then calls anyway: a wrong call, not a refusal.
        T("d5", [U(), R("None of these fit, I think."), U(), C("close_case")], ended="tool_call", mode=mode),
        # d6: malformed output only: undecided.
        T("d6", [U(), BAD], mode=mode),
        # d7: a statement with no negation is not a refusal: undecided.
        T("d7", [U(), R("Sure, I will take care of it.")], mode=mode),
    ]


def positive_transcripts(mode: str = "static") -> list[Transcript]:
    return [
        T("p1", [U(), C("open_ticket")], split="positive", ended="tool_call", mode=mode),
        T("p2", [U(), R("I cannot do that.")], split="positive", mode=mode),  # a false refusal
        T("p3", [U(), R("Which queue?")], split="positive", mode=mode),
    ]


def test_is_refusal_reads_a_plain_negative_statement() -> None:
    assert is_refusal("I'm sorry, none of the tools I have can do that.")
    assert is_refusal("I can\u2019t help with that.") and is_refusal("That isn't something my tools do.")
    assert is_refusal("Unfortunately I'm unable to do that.")
    assert not is_refusal("Is it none of those?")  # a question
    assert not is_refusal("Sure, I will book it.")  # no negation
    assert not is_refusal("")


def test_no_tool_metrics_match_the_hand_computed_values() -> None:
    split = split_transcripts()
    assert [first_refusal(t) for t in split] == [2, 1, None, None, 1, None, None]
    m = compute_no_tool(split, positive_transcripts())
    assert tuple(m) == NO_TOOL_KEYS
    # N = 7; refused: d1 (r=2), d2 (r=1); calls: d3, d5; undecided: d4, d6, d7.
    assert (m["n"], m["refusals_n"], m["calls_n"]) == (7, 2, 2)
    assert m["refusal_acc"] == round(2 / 7, 6) == 0.285714
    assert m["wrong_call"] == round(2 / 7, 6) == m["tool_hallucination_rate"]
    assert m["undecided"] == round(3 / 7, 6) == 0.428571
    assert m["turns_to_refusal"] == (2 + 1) / 2
    # P = 3: p2 refused with no call; p3 asked, which is no refusal.
    assert (m["false_refusals_n"], m["positive_n"], m["false_refusal"]) == (1, 3, round(1 / 3, 6))


def test_when2call_tool_hallucination_rate_counts_items_not_calls() -> None:
    """When2Call's rate (its lm-eval task's additional_metrics.py): over the items where no tool
    fits, the share the model answers with a tool call, one count per item however many calls it
    holds. Five hand-written dialogues of the split hold 4 calls in 2 dialogues: 2/5, where a share
    of calls would read 4 of 4 (every call is unsupported when no tool fits)."""
    two_at_once = [{"name": "open_case", "args": {}}, {"name": "list_queues", "args": {}}]
    both = {
        "role": "assistant",
        "kind": "tool_calls",
        "raw": json.dumps(two_at_once),
        "tool_calls": two_at_once,
    }
    split = [
        # w1: asks, then two call turns: one item with a call.
        T("w1", [U(), R("Which one?"), U(), C(), U(), C("close_case")], ended="tool_call"),
        # w2: one turn with two calls: one item with a call.
        T("w2", [U(), both], ended="tool_call"),
        # w3: asks, then refuses: no call.
        T("w3", [U(), R("Which one?"), U(), R("None of my tools can do that.")], ended="refusal"),
        # w4: malformed output only: not a call (a parse failure is never read as one).
        T("w4", [U(), BAD]),
        # w5: still asking at the turn cap: no call.
        T("w5", [U(), R("Which queue?")]),
    ]
    m = compute_no_tool(split)
    assert (m["n"], m["calls_n"]) == (5, 2)
    assert m["tool_hallucination_rate"] == 0.4 == m["wrong_call"]
    assert sum(len(t.tool_calls or []) for d in split for t in d.turns) == 4
    # The one function both scorers call: When2Call's prediction files and the split.
    assert tool_hallucination_rate([True, True, False, False, False]) == 0.4
    assert tool_hallucination_rate([]) == 0.0  # no such item: 0, as additional_metrics.py gives
    # Its interval travels with the split's (Wilson on 2 of 5).
    intervals = summarise(positive_transcripts() + split)["intervals"]["no_tool"]["static"]
    assert (intervals["tool_hallucination_rate"]["k"], intervals["tool_hallucination_rate"]["n"]) == (2, 5)


def test_empty_sets_give_zero_shares_and_no_turn_count() -> None:
    m = compute_no_tool([T("d3", [U(), C()], ended="tool_call")])
    assert m["refusal_acc"] == 0.0 and m["wrong_call"] == 1.0 and m["turns_to_refusal"] is None
    assert m["false_refusal"] == 0.0 and m["positive_n"] == 0


def test_the_split_leaves_the_positive_metrics_as_they_were(tmp_path: Path) -> None:
    positive = positive_transcripts("static") + positive_transcripts("dynamic")
    split = split_transcripts("static") + split_transcripts("dynamic")
    alone, together = summarise(positive), summarise(positive + split)
    assert "no_tool" not in alone
    apart = {k: v for k, v in together["intervals"].items() if k != "no_tool"}
    assert {k: v for k, v in together.items() if k not in ("no_tool", "intervals")} == {
        k: v for k, v in alone.items() if k != "intervals"
    }
    assert apart == alone["intervals"] and "no_tool" not in alone["intervals"]
    # The split's shares with their Wilson intervals: dynamic refusal acc 2 of 7 is [0.08, 0.64].
    refusal = together["intervals"]["no_tool"]["dynamic"]["refusal_acc"]
    assert (refusal["k"], refusal["n"], round(refusal["lo"], 4), round(refusal["hi"], 4)) == (
        2,
        7,
        0.0822,
        0.6411,
    )
    assert together["static"] == compute_metrics(positive_transcripts("static"))
    assert together["no_tool"] == summarise_no_tool(split, positive)
    assert together["no_tool"]["dynamic"]["refusal_acc"] == 0.285714
    assert together["no_tool"]["ended"]["static"]["refusal"] == 2
    assert "refusal" not in together["ended"]["static"]  # the positive split's endings are as they were
    stored = write_run(tmp_path / "run", positive + split, model_label="m")
    assert stored["no_tool"] == together["no_tool"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## No-tool split (retrieval misses)" in report and "0.29 [0.08, 0.64] (2/7)" in report
    with pytest.raises(ValueError, match="positive split"):
        write_run(tmp_path / "only-split", split, model_label="m")


def test_a_transcript_of_the_split_has_no_gold_and_only_it_ends_at_a_refusal() -> None:
    with pytest.raises(ValueError, match="only a dialogue of the no-tool split"):
        T("x", [U(), R("No.")], split="positive", ended="refusal")
    bad = T("y", [U()]).model_dump() | {"seed_tool": "open_case"}
    with pytest.raises(ValueError, match="seed_tool must be null"):
        Transcript.model_validate(bad)


def test_compare_reports_the_split_apart(tmp_path: Path) -> None:
    positive = positive_transcripts("static") + positive_transcripts("dynamic")
    write_run(tmp_path / "with", positive + split_transcripts("static"), model_label="with-split")
    write_run(tmp_path / "without", positive, model_label="without-split")
    table = compare_runs([tmp_path / "with", tmp_path / "without"], out_dir=tmp_path / "cmp")
    assert "No-tool split" in table and "| without-split | – | – | – | – |" in table
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert (
        "## No-tool split (retrieval misses)" in md
        and "| with-split | 0.29 [0.08, 0.64] (2/7) | 0.29 [0.08, 0.64] (2/7) | 1.50 |" in md
    )
    runs = {"with-split": json.loads((tmp_path / "with" / "metrics.json").read_text())}
    row = split_summary(runs)["with-split"]["static"]
    assert row["positive_Acc"] == pytest.approx(1 / 3, abs=1e-6) and row["refusal_acc"] == 0.285714


def test_the_split_file_is_found_beside_its_benchmark(tmp_path: Path) -> None:
    assert no_tool_bench_for(BENCH) == SPLIT
    assert no_tool_bench_for(BENCH, "none") is None
    assert no_tool_bench_for(tmp_path / "other.jsonl") is None  # auto: nothing beside it
    with pytest.raises(InputError, match="no such file"):
        no_tool_bench_for(BENCH, str(tmp_path / "missing.jsonl"))
    with pytest.raises(InputError, match="not a retrieval miss"):
        load_no_tool_split(BENCH)


def test_the_default_split_is_made_of_held_out_retrieval_misses() -> None:
    split, bench = load_no_tool_split(SPLIT), load_dialogues(BENCH)
    assert 15 <= len(split) <= 25
    k1 = {len(d.candidate_tools) for d in bench}
    for d in split:
        need = d.withheld_tool
        assert d.seed_tool is None and need.metadata["split"] == "heldout"
        assert need.name not in {c.name for c in d.candidate_tools}
        assert {len(d.candidate_tools)} == k1  # as many candidates as the positive split shows
        assert all(c.metadata.get("split") == "heldout" for c in d.candidate_tools)
        last = d.turns[-1]
        assert is_refusal(last.content) and not any(t.tool_calls for t in d.turns)
        assert any("?" in t.content for t in d.turns if t.role == "assistant")  # it asked first
    # The auto token budget is read off the positive split only; the split's turns fit in it.
    longest = max(len((t.thought or "") + t.content) for d in bench for t in d.turns if t.role == "assistant")
    assert (
        max(len((t.thought or "") + t.content) for d in split for t in d.turns if t.role == "assistant")
        <= longest
    )


def _policy_split_metrics(name: str, dialogues: list) -> dict:
    model = ModelUnderTest(ModelSpec(model=name, backend=name))
    near = {d.id: False for d in dialogues}
    user = VotingUser(ScriptedUser(wording="heldout"), ScriptedVoter(), n=3, m=3)

    async def both() -> list[Transcript]:
        static = await run_static(model, dialogues, near, progress=False, split="no_tool")
        dynamic = await run_dynamic(
            model, dialogues, near, user, DynamicConfig(t_max=5), progress=False, split="no_tool"
        )
        return static + dynamic

    return summarise_no_tool(asyncio.run(both()), [])


@pytest.mark.parametrize("name", POLICIES)
def test_the_floors_on_the_split(name: str) -> None:
    dialogues = load_no_tool_split(SPLIT)[:8]
    m = _policy_split_metrics(name, dialogues)
    for mode in ("static", "dynamic"):
        if name == "reference":  # told there is no fitting tool: asks, then refuses, every time
            assert m[mode]["refusal_acc"] == 1.0 and m[mode]["wrong_call"] == 0.0
            assert m[mode]["turns_to_refusal"] >= 2.0  # never at the vague opening
            assert m["ended"][mode]["refusal"] == len(dialogues)
        else:  # they mean to call a candidate, and never refuse
            assert m[mode]["refusal_acc"] == 0.0 and m[mode]["turns_to_refusal"] is None


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_eval_run_evaluates_the_split_apart_and_keeps_the_positive_sample(tmp_path: Path, capsys) -> None:
    bench = tmp_path / "b.jsonl"
    write_jsonl(bench, load_dialogues(BENCH)[:5])
    write_jsonl(tmp_path / "b_no_tool.jsonl", load_dialogues(SPLIT)[:4])
    common = ["run", "--backend", "reference", "--bench", str(bench), "--limit", "3", "--quiet"]
    assert eval_main([*common, "--out", str(tmp_path / "with"), "--no-tool-limit", "2"]) == 0
    printed = capsys.readouterr().out
    assert "no-tool static   refusal acc 1.000" in printed and "no-tool dynamic" in printed
    assert eval_main([*common, "--out", str(tmp_path / "without"), "--no-tool-bench", "none"]) == 0
    with_split = json.loads((tmp_path / "with" / "metrics.json").read_text())
    without = json.loads((tmp_path / "without" / "metrics.json").read_text())
    assert with_split["no_tool"]["dynamic"]["n"] == 2 and "no_tool" not in without
    for key in ("static", "dynamic", "breakdowns", "ended", "anatomy"):
        assert with_split[key] == without[key]
    lines = (tmp_path / "with" / "transcripts.jsonl").read_text().splitlines()
    splits = [json.loads(line)["split"] for line in lines]
    assert splits == ["positive"] * 6 + ["no_tool"] * 4  # 3 dialogues x 2 modes, then 2 x 2
    # The split passed as --bench is refused in one line.
    code = eval_main(["run", "--backend", "reference", "--bench", str(SPLIT), "--out", str(tmp_path / "x")])
    assert code == 2 and "pass that file as --no-tool-bench" in capsys.readouterr().err
