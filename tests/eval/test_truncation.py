"""Truncation is its own outcome: a reply cut off by the token budget is recorded as `truncated`,
counted apart from malformed output and never read as a call; the backends say when they cut a
reply; the default budget comes from the benchmark."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
from diaforge.eval.budget import AUTO_MIN_MARGIN, FALLBACK_MAX_NEW_TOKENS, auto_max_new_tokens
from diaforge.eval.cli import main as eval_main
from diaforge.eval.cli_options import max_new_tokens_arg
from diaforge.eval.metrics import METRIC_KEYS, compute_metrics, score_dialogue
from diaforge.eval.models import Reply, load_tokenizer, reply_to_turn
from diaforge.eval.report import score_transcripts, write_run
from diaforge.eval.runner import DynamicConfig, run_dynamic, run_static
from diaforge.eval.transcripts import Transcript, TranscriptTurn
from diaforge.format import parse_assistant, render_assistant
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue, Persona, Tool, Turn, load_dialogues
from diaforge.train.modeling import build_tiny_model

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"

CUT_CALL = '<think>\nThe user wants a ticket, so I call open_ticket.\n</think>\n[{"name": "open_ticket", "ar'
CUT_THOUGHT = "<think>\nThe user wants a ticket; the candidates are open_ticket and"
WHOLE_CALL = '<think>\nCall it.\n</think>\n[{"name": "open_ticket", "args": {"queue": "IT"}}]'


def _truncated(text: str) -> Reply:
    return Reply(parse_assistant(text), text, truncated=True)


# --------------------------------------------------------------------------------------------
# The outcome of one reply
# --------------------------------------------------------------------------------------------


def test_a_cut_reply_is_truncated_whatever_its_prefix_parses_as() -> None:
    # A cut call list would parse as malformed, a cut thought too, a cut sentence as a reply:
    # all three are truncated, not the model's malformed output nor a reply the user could read.
    for text in (CUT_CALL, CUT_THOUGHT, "<think>\nAsk.\n</think>\nCould you tell me the"):
        reply = _truncated(text)
        assert reply.kind == "truncated"
        turn = reply_to_turn(reply)
        assert not turn.tool_calls and turn.metadata.get("truncated") and "malformed" not in turn.metadata
    assert _truncated(CUT_CALL).parsed.kind == "malformed"
    # A complete call list lost only its end-of-turn token: it stays a call.
    assert _truncated(WHOLE_CALL).kind == "tool_calls"
    # Not cut: the parser's kind.
    assert Reply(parse_assistant(CUT_CALL), CUT_CALL).kind == "malformed"


def _record(kind: str, **kw: object) -> dict:
    return {"role": "assistant", "kind": kind, "content": "", "raw": "x", **kw}


def _transcript(turns: list[dict], *, ended: str = "truncated") -> Transcript:
    return Transcript.model_validate(
        {
            "id": "t",
            "mode": "dynamic",
            "seed_tool": "open_ticket",
            "gold_args": {"queue": "IT"},
            "candidate_tools": ["open_ticket", "open_case"],
            "required_params": 1,
            "turns": turns,
            "ended": ended,
        }
    )


USER = {"role": "user", "content": "I need a ticket for IT."}
CALL = {
    "role": "assistant",
    "kind": "tool_calls",
    "tool_calls": [{"name": "open_ticket", "args": {"queue": "IT"}}],
}
WRONG_CALL = {"role": "assistant", "kind": "tool_calls", "tool_calls": [{"name": "open_case", "args": {}}]}


def test_truncated_is_counted_apart_from_malformed_and_never_as_a_call() -> None:
    cut = _transcript([USER, _record("truncated", reason="cut")])
    bad = _transcript([USER, _record("malformed", reason="bad json")], ended="t_max")
    right = _transcript([USER, CALL], ended="tool_call")
    # A truncated turn earlier in the dialogue does not make its outcome truncated.
    recovered = _transcript([USER, _record("truncated"), USER, WRONG_CALL], ended="tool_call")
    s = score_dialogue(cut)
    assert (s.acc, s.ftr, s.tar, s.truncated, s.malformed_turns) == (0, 0, 1, 1, 0)
    assert score_dialogue(recovered).truncated == 0 and score_dialogue(recovered).ftr == 1
    m = compute_metrics([cut, bad, right, recovered])
    assert tuple(m) == METRIC_KEYS and "truncated" in METRIC_KEYS
    assert m["truncated"] == 0.25  # one dialogue of four ended on a cut reply
    assert m["malformed"] == pytest.approx(1 / 5)  # the malformed turn only, of five assistant turns
    assert m["malformed_dialogues"] == 0.25 and m["TAR_malformed"] == 0.25
    assert m["Acc"] == 0.25 and m["FTR"] == 0.25
    assert m["TAR"] == 0.5  # TAR keeps its definition: no call at all, truncated or not
    # Old transcripts without the key score 0.
    assert compute_metrics([bad, right])["truncated"] == 0.0


def test_truncated_turns_validate_render_and_rescore(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot carry tool_calls"):
        TranscriptTurn(role="assistant", kind="truncated", tool_calls=[{"name": "a", "args": {}}])
    turn = TranscriptTurn(role="assistant", kind="truncated", raw=CUT_CALL, reason="cut")
    assert turn.visible_text() == CUT_CALL
    cut = _transcript([USER, _record("truncated", raw=CUT_CALL, reason="cut")])
    assert "ASSISTANT [truncated]" in cut.render()
    stored = write_run(tmp_path / "run", [cut, _transcript([USER, CALL], ended="tool_call")], model_label="m")
    assert stored["dynamic"]["truncated"] == 0.5
    assert stored["ended"]["dynamic"]["truncated"] == 1
    assert score_transcripts(tmp_path / "run")["dynamic"] == stored["dynamic"]
    report = (tmp_path / "run" / "report.md").read_text()
    # 1 of 2 dialogues, with its Wilson interval: centre 0.5, half 1.96/(1 + 1.96²/2) * sqrt(1/8 + 1.96²/16) = 0.405
    assert "50.0% [9.5%, 90.5%] (1/2) of dialogues ended on a reply cut off by the token budget" in report


# --------------------------------------------------------------------------------------------
# The loops end a dialogue at a truncated reply
# --------------------------------------------------------------------------------------------

PERSONA = Persona(id="p", description="An analyst.")
TICKET = Tool(
    name="open_ticket",
    description="Open an IT support ticket.",
    parameters={"type": "object", "properties": {"queue": {"type": "string"}}, "required": ["queue"]},
)
CASE = Tool(
    name="open_case", description="Open a legal case.", parameters={"type": "object", "properties": {}}
)


def _bench() -> list[Dialogue]:
    turns = [
        Turn(role="user", content="I need a ticket."),
        Turn(role="assistant", content="Which queue?"),
        Turn(role="user", content="The queue is IT."),
        Turn(role="assistant", tool_calls=[{"name": "open_ticket", "args": {"queue": "IT"}}]),
    ]
    return [
        Dialogue(
            id=f"d{i}",
            seed_tool="open_ticket",
            candidate_tools=[TICKET, CASE],
            persona=PERSONA,
            goal="Open an IT ticket.",
            gold_args={"queue": "IT"},
            turns=turns,
        )
        for i in range(2)
    ]


class _CutsFirstDialogue:
    """A stand-in model: its reply to d0 is cut off; to d1 it asks, then calls."""

    label = "fake"

    async def respond(self, dialogues: list[Dialogue]) -> list[Reply]:
        out = []
        for d in dialogues:
            if d.id == "d0":
                out.append(_truncated(CUT_CALL))
            elif sum(t.role == "user" for t in d.turns) == 1:
                text = "<think>\nAsk.\n</think>\nWhich queue do you need?"
                out.append(Reply(parse_assistant(text), text))
            else:
                out.append(Reply(parse_assistant(WHOLE_CALL), WHOLE_CALL))
        return out


def test_static_and_dynamic_loops_end_at_a_truncated_reply() -> None:
    bench = _bench()
    near_dup = {d.id: False for d in bench}
    static = asyncio.run(run_static(_CutsFirstDialogue(), bench, near_dup, progress=False))
    user = VotingUser(ScriptedUser(), ScriptedVoter(), n=1, m=1)
    dynamic = asyncio.run(
        run_dynamic(_CutsFirstDialogue(), bench, near_dup, user, DynamicConfig(t_max=4), progress=False)
    )
    for records in (static, dynamic):
        by_id = {t.id: t for t in records}
        cut = by_id["d0"]
        assert cut.ended == "truncated"
        assert [t.kind for t in cut.assistant_turns()] == ["truncated"]  # no answer to half a sentence
        assert cut.assistant_turns()[0].raw == CUT_CALL and cut.assistant_turns()[0].reason
        assert by_id["d1"].ended == "tool_call"
        m = compute_metrics(list(by_id.values()))
        assert (m["truncated"], m["malformed"], m["Acc"]) == (0.5, 0.0, 0.5)


# --------------------------------------------------------------------------------------------
# Backends say when they cut a reply
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [t.content for d in load_dialogues(BENCH)[:4] for t in d.turns if t.content]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts, seed=0)


def test_hf_backend_reports_length_when_the_budget_cuts_a_reply(tiny_model: Path) -> None:
    from diaforge.llm.base import GenerationRequest
    from diaforge.llm.hf_backend import HFBackend

    backend = HFBackend(tiny_model, max_new_tokens=8, default_temperature=0.0)
    results = backend.generate_batch(
        [
            GenerationRequest([{"role": "user", "content": "hello"}], max_tokens=4),
            GenerationRequest([{"role": "user", "content": "open a ticket"}], max_tokens=4),
        ]
    )
    for r in results:
        assert r.finish_reason in ("stop", "length")
        if r.finish_reason == "length":
            assert r.usage.completion_tokens == 4  # the whole budget, no end-of-turn token in it
        if r.usage.completion_tokens < 4:
            assert r.finish_reason == "stop"


def test_openai_backend_passes_the_servers_finish_reason_on() -> None:
    from openai.types.chat import ChatCompletion

    from diaforge.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    for reason in ("length", "stop"):
        response = ChatCompletion.model_validate(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": reason,
                        "message": {"role": "assistant", "content": "Which"},
                    }
                ],
            }
        )
        assert backend._to_result(response, 0).finish_reason == reason


# --------------------------------------------------------------------------------------------
# The default budget comes from the benchmark
# --------------------------------------------------------------------------------------------


def test_auto_budget_is_the_longest_reference_turn_plus_a_margin() -> None:
    def words(text: str) -> int:
        return len(text.split())

    bench = _bench()
    longest = max(words(render_assistant(t)) for d in bench for t in d.turns if t.role == "assistant")
    budget = auto_max_new_tokens(bench, words, "words")
    assert budget.longest_reference_turn == longest
    assert budget.max_new_tokens == longest + AUTO_MIN_MARGIN  # a short turn: the minimum margin
    long_turn = Turn(role="assistant", thought="step " * 400, content="Which queue?")
    long_bench = [bench[0].model_copy(update={"turns": [bench[0].turns[0], long_turn]})]
    big = auto_max_new_tokens(long_bench, words, "words")
    # "<think>", the 400-word thought, "</think>", "Which queue?": the thought counts, the model writes it.
    assert big.longest_reference_turn == 404
    assert big.max_new_tokens == 404 + math.ceil(0.25 * 404)
    empty = auto_max_new_tokens([bench[0].model_copy(update={"turns": []})], words, "words")
    assert empty.max_new_tokens == FALLBACK_MAX_NEW_TOKENS and empty.counted_with == "fallback"


def test_max_new_tokens_argument() -> None:
    assert max_new_tokens_arg("auto") == "auto" and max_new_tokens_arg("AUTO") == "auto"
    assert max_new_tokens_arg("160") == 160
    for bad in ("0", "-3", "lots"):
        with pytest.raises(argparse.ArgumentTypeError):
            max_new_tokens_arg(bad)


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_eval_run_records_the_auto_budget_and_truncation(tiny_model: Path, tmp_path: Path, capsys) -> None:
    bench_path = tmp_path / "bench.jsonl"
    bench = load_dialogues(BENCH)[:3]
    write_jsonl(bench_path, bench)
    common = ["run", "--model", str(tiny_model), "--bench", str(bench_path), "--modes", "static", "--quiet"]
    assert eval_main([*common, "--limit", "1", "--out", str(tmp_path / "auto")]) == 0
    stored = json.loads((tmp_path / "auto" / "metrics.json").read_text())
    tok = load_tokenizer(tiny_model)
    expected = auto_max_new_tokens(
        bench, lambda t: len(tok(t, add_special_tokens=False)["input_ids"]) + 1, "tokenizer"
    )
    assert stored["max_new_tokens"] == expected.max_new_tokens
    assert stored["budget"] == expected.as_dict() and stored["budget"]["source"] == "auto"
    assert f"max_new_tokens {expected.max_new_tokens} (auto" in capsys.readouterr().err
    # A budget of 2 tokens cuts the tiny random model's replies: they end the dialogues as truncated.
    assert eval_main([*common, "--max-new-tokens", "2", "--out", str(tmp_path / "cut")]) == 0
    stored = json.loads((tmp_path / "cut" / "metrics.json").read_text())
    assert stored["budget"]["source"] == "explicit" and stored["max_new_tokens"] == 2
    transcripts = [json.loads(x) for x in (tmp_path / "cut" / "transcripts.jsonl").read_text().splitlines()]
    ended_cut = [t for t in transcripts if t["ended"] == "truncated"]
    assert ended_cut, "a 2-token budget should cut at least one reply"
    assert stored["static"]["truncated"] == pytest.approx(len(ended_cut) / len(transcripts))
    for t in ended_cut:
        assert t["turns"][-1]["kind"] == "truncated"
    assert score_transcripts(tmp_path / "cut")["static"] == stored["static"]
