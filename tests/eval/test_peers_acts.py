"""Dialog-act classifiers (diaforge.eval.peers.acts) on the labelled set of released CONFETTI agent turns."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from _repo import FIXTURES

from diaforge.eval.cli import main as eval_main
from diaforge.eval.models import Reply
from diaforge.eval.peers.acts import (
    LLMActClassifier,
    RuleActClassifier,
    classify_act,
    classify_act_set,
    parse_act,
    read_act_examples,
    score_acts,
)

ACTS = FIXTURES / "peers" / "confetti_acts"
DEV, HELDOUT = ACTS / "dev.json", ACTS / "heldout.json"


def _rules(path: Path) -> dict:
    examples = read_act_examples(path)
    return score_acts(examples, [classify_act(e.text) for e in examples])


def test_labelled_set_is_stratified_real_confetti_lines() -> None:
    dev, held = read_act_examples(DEV), read_act_examples(HELDOUT)
    assert len(dev) + len(held) == 201 and {e.id for e in dev}.isdisjoint({e.id for e in held})
    for half in (dev, held):
        strata = Counter(
            next(a for a in ("other", "reject", "seek_info", "inform") if a in e.gold) for e in half
        )
        assert (
            strata["other"] >= 12 and strata["reject"] == 16 and strata["seek_info"] == strata["inform"] == 36
        )
    assert all(e.id.startswith("dialogacts_") for e in dev + held)
    assert any(e.calls for e in held) and any(e.text == "" for e in dev + held)  # a real empty "other" turn


def test_rules_reach_the_bar_on_the_held_out_half() -> None:
    held, dev = _rules(HELDOUT), _rules(DEV)
    assert held["n"] == 100 and held["accuracy"] >= 0.75  # measured 0.880; the rules were tuned on dev only
    assert dev["accuracy"] >= held["accuracy"]
    assert set(held["confusion"]) == {"seek_info", "inform", "reject", "other"}


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("", "other"),
        ("You're welcome! Feel free to reach out if you need anything else. Have a great day!", "other"),
        ("I'm sorry, I am unable to delete past workouts. What would you like me to do?", "reject"),
        ("Could you please provide your last name and email?", "seek_info"),
        ("Here are the flights I found:\n- UA12: $300\n- DL4: $320\nWould you like to book one?", "inform"),
        ("Your appointment has been booked. Is there anything else I can help you with?", "inform"),
    ],
)
def test_rules_on_typical_replies(text: str, act: str) -> None:
    assert classify_act(text) == act


def test_parse_act_reads_our_and_confettis_spellings() -> None:
    assert parse_act("agent_seek_information") == "seek_info"
    assert parse_act("Act: inform_user.") == "inform"
    assert parse_act("<think>maybe other</think> reject") == "reject"
    assert parse_act("I think it is seek") == "seek_info"
    assert parse_act("no idea") is None


class _LabelBackend:
    """A chat backend that answers each message with the gold act of its text (or garbage)."""

    def __init__(self, gold: dict[str, str], garbage: int = 0) -> None:
        self.gold, self.garbage, self.calls = gold, garbage, 0

    async def chat(self, messages: list[dict], **kw: object) -> SimpleNamespace:
        self.calls += 1
        assert kw["temperature"] == 0.0
        text = messages[-1]["content"].split('"""\n', 1)[1].rsplit('\n"""', 1)[0]
        if self.garbage:
            self.garbage -= 1
            return SimpleNamespace(text="???")
        return SimpleNamespace(text=f"agent_{self.gold[text]}")


def test_llm_classifier_uses_the_backend_and_falls_back_to_the_rules() -> None:
    examples = read_act_examples(HELDOUT)
    gold = {e.text.strip(): e.gold[0] for e in examples}
    backend = _LabelBackend(gold, garbage=3)
    clf = LLMActClassifier(backend)
    metrics, records = asyncio.run(classify_act_set(HELDOUT, clf))
    assert clf.fallbacks == 3 and metrics["fallbacks"] == 3 and len(records) == 100
    assert metrics["accuracy"] >= 0.97 and backend.calls == sum(1 for e in examples if e.text.strip())


def _gold_responder(path: Path) -> Callable[[dict], str]:
    """The test server's responder: the gold act of each example, in the classifier's words."""
    gold = {e.text.strip(): e.gold[0] for e in read_act_examples(path)}
    names = {"seek_info": "agent_seek_information", "inform": "agent_inform_user", "reject": "reject_request"}

    def respond(request: dict) -> str:
        text = request["messages"][-1]["content"].split('"""\n', 1)[1].rsplit('\n"""', 1)[0]
        return names.get(gold[text], gold[text])

    return respond


def test_turn_level_acts_cli_with_the_llm_classifier_on_a_test_server(capsys: pytest.CaptureFixture) -> None:
    from diaforge.bench.fake_server import FaultyOpenAIServer

    with FaultyOpenAIServer(_gold_responder(HELDOUT)) as server:
        rc = eval_main(
            [
                "turn-level",
                "acts",
                "--data",
                str(HELDOUT),
                "--act-classifier",
                "llm",
                "--act-backend",
                "openai",
                "--act-model",
                "test-model",
                "--act-base-url",
                server.base_url,
                "--json",
            ]
        )
        assert server.stats.requests >= 90
    assert rc == 0
    out = capsys.readouterr().out
    assert "dialog acts (llm:openai:test-model): accuracy 1.000, n=100" in out
    assert json.loads(out[out.index("{") :])["fallbacks"] == 0


def test_turn_level_acts_cli_rules_and_its_errors(capsys: pytest.CaptureFixture) -> None:
    assert eval_main(["turn-level", "acts", "--data", str(HELDOUT)]) == 0
    assert "dialog acts (rules): accuracy 0.880, n=100" in capsys.readouterr().out
    assert eval_main(["turn-level", "acts"]) == 2
    assert "--data" in capsys.readouterr().err


def test_run_turn_level_takes_an_act_classifier() -> None:
    from diaforge.eval.peers.turn_level import _acts_of

    class Fixed:
        async def classify(self, texts: list[str]) -> list[str]:
            return ["reject"] * len(texts)

    def reply(raw: str) -> Reply:
        from diaforge.format import parse_assistant

        return Reply(raw=raw, parsed=parse_assistant(raw))

    replies = [reply("Sure, what date?"), reply("Here it is.")]
    assert asyncio.run(_acts_of(replies, None)) == ["seek_info", "inform"]
    assert asyncio.run(_acts_of(replies, Fixed())) == ["reject", "reject"]
    assert asyncio.run(RuleActClassifier().classify(["Bye! Have a great day!"])) == ["other"]


def test_turn_level_run_labels_replies_with_the_llm_classifier(tmp_path: Path) -> None:
    """The whole `turn-level --act-classifier llm` path: one test server is both the model under
    test (it always answers with a question) and the act labeller (it always says reject)."""
    from diaforge.bench.fake_server import FaultyOpenAIServer
    from diaforge.eval.peers import write_dialogues
    from diaforge.eval.peers.confetti import load_confetti

    bench = tmp_path / "confetti.jsonl"
    write_dialogues(
        bench,
        load_confetti(FIXTURES / "peers" / "confetti").dialogues,
    )

    def respond(request: dict) -> str:
        if request["messages"][0]["content"].startswith("You label the dialog act"):
            return "reject_request"
        return "Could you tell me which date you mean?"

    out = tmp_path / "run"
    with FaultyOpenAIServer(respond) as server:
        rc = eval_main(
            [
                "turn-level",
                "--model",
                "test-model",
                "--backend",
                "openai",
                "--base-url",
                server.base_url,
                "--bench",
                str(bench),
                "--out",
                str(out),
                "--quiet",
                "--act-classifier",
                "llm",
                "--act-backend",
                "openai",
                "--act-model",
                "test-model",
                "--act-base-url",
                server.base_url,
            ]
        )
    assert rc == 0
    metrics = json.loads((out / "turn_level_metrics.json").read_text())
    assert metrics["act_classifier"] == "llm" and metrics["DA_examples"] > 3
    assert {act for row in metrics["DA_confusion"].values() for act in row} == {"reject"}
