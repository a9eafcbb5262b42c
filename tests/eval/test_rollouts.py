"""`diaforge.eval.rollouts.play_rollouts` with a scripted stand-in for the model's replies, and what
`diaforge.data_gen.rollouts` makes of its paths: which move a path follows, the DAgger states with
the teacher's move, the validators on them, the on-policy pairs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from _repo import ROOT

from diaforge.data_gen.agents import ScriptedTeacher, ScriptedUser
from diaforge.data_gen.rollouts import (
    ROLLOUT_KEY,
    check_no_heldout,
    dagger_states,
    on_policy_pairs,
    rollout_stats,
    training_tools,
    validate_state,
)
from diaforge.errors import InputError
from diaforge.eval.models import ModelUnderTest, Reply
from diaforge.eval.policies import ReferencePolicy
from diaforge.eval.rollouts import Rollout, RolloutLoop, play_rollouts
from diaforge.format import PromptFormat, parse_assistant, preference_row, render_assistant
from diaforge.schema import HISTORY_ONLY, Dialogue, Tool, ToolCall, Turn, load_dialogues

FIXTURE = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"


class Scripted:
    """Stands in for `ModelUnderTest`: each reply is `write(dialogue so far)`, parsed as a model's."""

    label = "scripted-model"
    is_policy = False

    def __init__(self, write: Callable[[Dialogue], str]) -> None:
        self.write = write

    async def respond(self, dialogues: list[Dialogue]) -> list[Reply]:
        return [Reply(parse_assistant(text), text) for text in map(self.write, dialogues)]


def _play(write: Callable[[Dialogue], str], seeds: list[Dialogue], t_max: int = 6) -> list[Rollout]:
    teacher = ReferencePolicy(seed=0)
    teacher.teacher = ScriptedTeacher(wording="train", reasoning="lookup")
    loop = RolloutLoop(t_max=t_max, seed=0, progress=False)
    model: ModelUnderTest = Scripted(write)  # type: ignore[assignment]
    return asyncio.run(play_rollouts(model, seeds, ScriptedUser(wording="train"), teacher, loop))


@pytest.fixture(scope="module")
def seeds() -> list[Dialogue]:
    return [d.model_copy(update={"turns": []}) for d in load_dialogues(FIXTURE)[:3]]


def _premature(d: Dialogue) -> str:
    gold = d.gold_tool
    return render_assistant(
        Turn(
            role="assistant",
            thought="I call it now.",
            tool_calls=[ToolCall(name=gold.name, args=dict.fromkeys(gold.required, "X-1"))],
        )
    )


def test_a_call_the_teacher_would_not_make_continues_on_the_teachers_move(seeds: list[Dialogue]) -> None:
    rollouts = _play(_premature, seeds)
    for r in rollouts:
        comparisons = [t.metadata[ROLLOUT_KEY] for t in r.dialogue.turns if t.role == "assistant"]
        assert comparisons[0]["kind"] == "premature_call"
        assert comparisons[0]["followed"] == "teacher"
        assert comparisons[0]["model"]["tool_calls"][0]["name"] == r.dialogue.seed_tool
        # The path goes on after the model's call: the teacher's questions, then its call ends it.
        assert len(comparisons) > 1 and r.ended == "teacher_call"
        last = r.dialogue.turns[-1]
        assert last.tool_calls and last.tool_calls[0].args == r.dialogue.gold_args
        assert comparisons[-1]["kind"] == "invented_value"  # both call; the model's values were never said


def test_a_question_continues_on_the_models_move(seeds: list[Dialogue]) -> None:
    ask = render_assistant(
        Turn(role="assistant", thought="I ask.", content="Could you tell me more about it?")
    )
    [r] = _play(lambda d: ask, seeds[:1], t_max=3)
    turns = [t for t in r.dialogue.turns if t.role == "assistant"]
    assert [t.metadata[ROLLOUT_KEY]["followed"] for t in turns] == ["model"] * 3
    assert all(t.content == "Could you tell me more about it?" for t in turns)
    assert r.ended == "t_max"


def test_states_end_with_the_teachers_move_and_mark_the_history(seeds: list[Dialogue]) -> None:
    [r] = _play(_premature, seeds[:1])
    path = r.dialogue
    states = dagger_states(path)
    assert len(states) == len(path.assistant_turns())
    for state in states:
        i = state.provenance.model_extra[ROLLOUT_KEY]["turn_index"]
        teacher = Turn.model_validate(path.turns[i].metadata[ROLLOUT_KEY]["teacher"])
        assert state.turns[-1] == teacher
        assert state.trained_turns() == [len(state.turns) - 1]
        assert all(t.metadata.get(HISTORY_ONLY) for t in state.turns[:-1] if t.role == "assistant")
        assert [t.content for t in state.turns[:-1]] == [t.content for t in path.turns[:i]]
    assert [v.validator for v in validate_state(states[-1])] == [
        "format",
        "naturalness",
        "toolcall",
        "toolargs",
    ]
    assert all(v.passed for v in validate_state(states[-1]))
    # The stand-in calls at every turn: every state is a disagreement.
    assert len(dagger_states(path, only_disagreements=True)) == len(states)


def test_on_policy_pairs_reject_the_models_own_move(seeds: list[Dialogue]) -> None:
    [r] = _play(_premature, seeds[:1])
    pairs = on_policy_pairs(r.dialogue)
    kinds = [p["kind"] for p in pairs]
    assert kinds == ["premature_call"] * (len(kinds) - 1) + ["invented_value"] and len(kinds) >= 2
    for p in pairs:
        assert p["variant"] == "on_policy"
        row = preference_row(p, PromptFormat())
        assert row["chosen"] != row["rejected"]
        assert "X-1" in row["rejected"][0]["content"] and "X-1" not in row["chosen"][0]["content"]
    malformed = _play(lambda d: "<think>unfinished", seeds[:1], t_max=2)[0]
    assert on_policy_pairs(malformed.dialogue) == []  # malformed text is no turn to prefer against


def test_stats_count_every_kind(seeds: list[Dialogue]) -> None:
    rollouts = _play(_premature, seeds)
    paths = [r.dialogue for r in rollouts]
    stats = rollout_stats(
        paths, [], [p for d in paths for p in on_policy_pairs(d)], kinds=("premature_call", "wrong_tool")
    )
    turns = sum(len(d.assistant_turns()) for d in paths)
    assert stats["by_kind"]["premature_call"] == turns - 3 and stats["by_kind"]["wrong_tool"] == 0
    assert stats["by_kind"]["invented_value"] == 3  # the last turn of each: both call
    assert list(stats["by_kind"])[:2] == ["premature_call", "wrong_tool"]
    assert stats["disagreements"] == turns and stats["agreements"] == 0
    assert stats["pairs"] == turns and stats["followed"] == {"teacher": turns}
    assert stats["ended"] == {"teacher_call": 3} and stats["seconds_per_dialogue"] is not None


def _tool(name: str, split: str | None) -> Tool:
    meta = {"split": split} if split else {}
    return Tool(
        name=name, description=f"Does {name}.", parameters={"type": "object", "properties": {}}, metadata=meta
    )


def test_held_out_tools_never_enter_rollouts(seeds: list[Dialogue]) -> None:
    tools = [_tool("a", "train"), _tool("b", "heldout"), _tool("c", "train")]
    kept, left = training_tools(tools, {"c"}, path="cat.json")
    assert [t.name for t in kept] == ["a"] and left == 2
    with pytest.raises(InputError, match="no tool of split 'train'"):
        training_tools([_tool("b", "heldout")], set(), path="cat.json")
    held = {seeds[0].candidate_tools[0].name}
    with pytest.raises(InputError, match="shows held-out tool"):
        check_no_heldout(seeds, held, path="out")


def test_a_retrieval_miss_the_model_does_not_refuse(seeds: list[Dialogue]) -> None:
    d = seeds[0]
    need = d.gold_tool
    miss = d.model_copy(
        update={
            "id": "miss",
            "seed_tool": None,
            "candidate_tools": [c for c in d.candidate_tools if c.name != need.name],
            "provenance": d.provenance.model_copy(update={"withheld_tool": need.model_dump(mode="json")}),
        }
    )
    assert miss.withheld_tool is not None and miss.gold_tool is None
    ask = render_assistant(Turn(role="assistant", thought="I ask.", content="Which of these do you need?"))
    [r] = _play(lambda d: ask, [miss], t_max=6)
    kinds = [t.metadata[ROLLOUT_KEY]["kind"] for t in r.dialogue.turns if t.role == "assistant"]
    assert "missed_refusal" in kinds
    refusals = [
        s
        for s in dagger_states(r.dialogue)
        if s.provenance.model_extra[ROLLOUT_KEY]["kind"] == "missed_refusal"
    ]
    assert [v.validator for v in validate_state(refusals[0])][-1] == "no_tool"


@pytest.mark.slow(reason="trains the tiny SFT and DPO recipes in subprocesses")
def test_the_dpo_stage_trains_on_on_policy_pairs(seeds: list[Dialogue], tmp_path) -> None:
    import subprocess
    import sys

    from _repo import clean_env

    from diaforge.jsonl import write_jsonl

    pairs = tmp_path / "pairs.jsonl"
    write_jsonl(pairs, [p for r in _play(_premature, seeds) for p in on_policy_pairs(r.dialogue)])
    env = {k: v for k, v in clean_env(PYTHONPATH=str(ROOT)).items() if not k.startswith("ACCELERATE_")}

    def launch(*args: str) -> str:
        command = [
            sys.executable,
            "-m",
            "diaforge.train.launch",
            "--config_file",
            "accelerate_configs/cpu.yaml",
            *args,
        ]
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        return proc.stdout + proc.stderr

    sft, dpo = tmp_path / "sft", tmp_path / "dpo"
    launch(
        "train/sft.py",
        "recipes/tiny/sft.yaml",
        "--output_dir",
        str(sft),
        "--max_steps",
        "2",
        "--save_strategy",
        "no",
    )
    launch("recipes/tiny/dpo.yaml", "--model_name_or_path", str(sft), "--output_dir", str(dpo),
           "--pairs_path", str(pairs), "--max_steps", "2", "--save_strategy", "no")  # fmt: skip
    assert (dpo / "prompt_format.json").is_file()
