"""Dialogue-act labels on a freshly generated corpus, and `python -m diaforge.data_gen analyze-corpus`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import ROOT
from _slow import slow_fixture

from diaforge.data_gen.cli import main as data_gen_main
from diaforge.data_gen.corpus import ACTIONS, ACTS, analyze_corpus, format_corpus_report, label_violations
from diaforge.data_gen.engine import generate
from diaforge.data_gen.gen_config import GenerationConfig
from diaforge.data_gen.validators import format_validator
from diaforge.eval.metrics import ngd, ttr
from diaforge.schema import ACT_OF_ACTION, Dialogue, Persona, Tool, ToolCall, Turn, load_dialogues


@pytest.fixture(scope="module")
@slow_fixture("reads MiniLM from disk")
def corpus_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    cfg = GenerationConfig(
        catalogue=str(ROOT / "data_gen" / "assets" / "catalogue_train.json"),
        num_dialogues=200,
        progress=False,
        plots=False,
        export=False,
        out=str(out),
    )
    asyncio.run(generate(cfg))
    return out / "dialogues.jsonl"


@pytest.fixture(scope="module")
def corpus(corpus_path: Path) -> list[Dialogue]:
    return load_dialogues(corpus_path)


def test_every_assistant_turn_of_a_fresh_corpus_carries_both_labels(corpus: list[Dialogue]) -> None:
    assert len(corpus) >= 150
    assistant = [t for d in corpus for t in d.turns if t.role == "assistant"]
    assert assistant
    for t in assistant:
        assert t.act in ACTS and t.action in ACTIONS
        assert ACT_OF_ACTION[t.action] == t.act
        if t.tool_calls:
            assert (t.act, t.action) == ("function_calling", "call")
        if t.action in ("clarify", "request"):
            assert not t.tool_calls
    assert [v for d in corpus for v in label_violations(d)] == []
    assert all(format_validator(d).passed for d in corpus)


def test_analyze_corpus_reports_every_number(corpus: list[Dialogue]) -> None:
    stats = analyze_corpus(corpus)
    assert stats["dialogues"] == len(corpus)
    turns = stats["turns"]
    assert turns["total"] == turns["user"] + turns["assistant"] == sum(len(d.turns) for d in corpus)
    assert sum(turns["histogram"].values()) == len(corpus)
    assert turns["tool_calls"] == len(corpus)  # one final call per accepted dialogue
    assert sum(stats["acts"].values()) == sum(stats["actions"].values()) == turns["assistant"]
    assert "unlabelled" not in stats["acts"] and "unlabelled" not in stats["actions"]
    assert {"clarify", "request", "call"} <= set(stats["actions"])
    assert stats["labels"]["fully_labelled"] == turns["assistant"]
    assert stats["labels"]["violations"] == 0
    dice = stats["dice"]
    assert dice["n"] == len(corpus) and dice["counter"] == "value-matcher"
    assert 0.0 < dice["mean"] <= dice["max"] and dice["min"] >= 0.0
    for who in ("assistant", "user"):
        div = stats["diversity"][who]
        for key in ("TTR", "NGD2", "NGD3", "NGD4"):
            assert 0.0 < div[key] <= 1.0
    text = format_corpus_report(stats)
    for word in ("DICE-Score", "TTR", "NGD3", "acts:", "actions:", "violations: 0", "turn histogram"):
        assert word in text


def test_diversity_uses_the_evaluation_definitions(corpus: list[Dialogue]) -> None:
    replies = [t.content for d in corpus for t in d.turns if t.role == "assistant" and not t.tool_calls]
    div = analyze_corpus(corpus)["diversity"]["assistant"]
    assert div["TTR"] == pytest.approx(ttr(replies), abs=1e-6)
    for n in (2, 3, 4):
        assert div[f"NGD{n}"] == pytest.approx(ngd(replies, n), abs=1e-6)


def test_analyze_corpus_cli_json_and_text(corpus_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert data_gen_main(["analyze-corpus", str(corpus_path), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    for key in ("dialogues", "turns", "acts", "actions", "act_action", "labels", "dice", "diversity"):
        assert key in stats
    assert data_gen_main(["analyze-corpus", str(corpus_path)]) == 0
    assert "DICE-Score (value-matcher)" in capsys.readouterr().out


def test_analyze_corpus_cli_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert data_gen_main(["analyze-corpus", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "missing.jsonl" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    assert data_gen_main(["analyze-corpus", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.jsonl" in err and "line 1" in err
    good = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
    assert data_gen_main(["analyze-corpus", str(good), "--counter", "nonsense"]) == 2
    assert "--counter" in capsys.readouterr().err


def _labelled(turns: list[Turn]) -> Dialogue:
    tool = Tool(name="open_ticket")
    return Dialogue(
        id="bad",
        seed_tool="open_ticket",
        candidate_tools=[tool],
        persona=Persona(id="p", description="p"),
        turns=turns,
    )


def test_label_violations_are_found() -> None:
    user = Turn(role="user", content="hi")
    call = [ToolCall(name="open_ticket")]
    cases = {
        "no act and action": Turn(role="assistant", content="Which one?", thought="t"),
        "implies act": Turn(
            role="assistant", content="Which one?", thought="t", act="inform", action="clarify"
        ),
        "has tool calls": Turn(
            role="assistant", thought="t", tool_calls=call, act="seek_info", action="clarify"
        ),
        "has no tool call": Turn(
            role="assistant", content="done", thought="t", act="function_calling", action="call"
        ),
    }
    for needle, turn in cases.items():
        problems = label_violations(_labelled([user, turn]))
        assert problems and any(needle in p for p in problems), (needle, problems)
    ok = Turn(role="assistant", thought="t", tool_calls=call, act="function_calling", action="call")
    assert label_violations(_labelled([user, ok])) == []
