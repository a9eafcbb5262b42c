"""A corpus with retrieval misses trains as it is: every assistant turn of a miss is a sample, and
the refusal, the last one, is trained exactly (its thought, its reply, its end of turn)."""

from __future__ import annotations

from _repo import ROOT

from diaforge.format import render_assistant
from diaforge.schema import load_dialogues
from diaforge.train.slicing import IGNORE_INDEX, SliceConfig, TurnSlicer

SPLIT = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1_no_tool.jsonl"


def test_a_miss_slices_into_its_questions_and_its_refusal(tokenizer_for) -> None:
    misses = load_dialogues(SPLIT)[:3]
    tokenizer = tokenizer_for("tiny", "chatml")
    samples, _ = TurnSlicer(tokenizer, SliceConfig.of(prompt_mode="prompt")).slice_all(misses)
    assert [(s["dialogue_id"], s["turn_index"]) for s in samples] == [
        (d.id, i) for d in misses for i in d.assistant_turns()
    ]
    for d in misses:
        last = [s for s in samples if s["dialogue_id"] == d.id][-1]
        n = last["num_prompt_tokens"]
        assert last["labels"][:n] == [IGNORE_INDEX] * n and last["labels"][n:] == last["input_ids"][n:]
        target = tokenizer.decode(last["input_ids"][n:], skip_special_tokens=True)
        assert target.strip() == render_assistant(d.turns[-1]).strip()
        assert not d.turns[-1].tool_calls
