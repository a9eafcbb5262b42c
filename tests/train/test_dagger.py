"""DAgger-style SFT (`diaforge.train.dagger`): the states' history turns are never targets, the mix
reaches the recipe's share of samples, and the recipe keys are checked."""

from __future__ import annotations

import pytest
from _repo import ROOT

from diaforge.schema import HISTORY_ONLY, Dialogue, load_dialogues
from diaforge.train.dagger import mix_dagger, trained_samples
from diaforge.train.recipe_fields import DiaforgeArguments, RecipeError
from diaforge.train.slicing import TurnSlicer

FIXTURE = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"


@pytest.fixture(scope="module")
def corpus() -> list[Dialogue]:
    return load_dialogues(FIXTURE)


def _states(corpus: list[Dialogue], n: int) -> list[Dialogue]:
    """States as a rollout run writes them: history marked history only, one target at the end."""
    out = []
    for d in corpus:
        for i in d.assistant_turns():
            history = [
                t.model_copy(update={"metadata": {HISTORY_ONLY: True}}) if t.role == "assistant" else t
                for t in d.turns[:i]
            ]
            out.append(d.model_copy(update={"id": f"{d.id}/{i}", "turns": [*history, d.turns[i]]}))
    return (out * (n // len(out) + 1))[:n]


def test_a_history_only_turn_is_never_a_target(corpus: list[Dialogue]) -> None:
    from diaforge.train.modeling import build_tiny_tokenizer
    from diaforge.train.slicing import dialogue_texts

    tokenizer = build_tiny_tokenizer(dialogue_texts(corpus))
    state = _states(corpus[:1], 3)[-1]
    assert len(state.assistant_turns()) == 3 and state.trained_turns() == [len(state.turns) - 1]
    samples = TurnSlicer(tokenizer).slice_dialogue(state)
    assert len(samples) == 1
    whole = TurnSlicer(tokenizer).slice_dialogue(corpus[0])
    assert (
        samples[0]["input_ids"] == whole[-1]["input_ids"]
    )  # the same prompt and target as the original's last turn


def test_the_mix_reaches_the_share(corpus: list[Dialogue]) -> None:
    original = trained_samples(corpus)
    states = _states(corpus, 200)
    mixed, info = mix_dagger(corpus, states, 0.5, seed=1)
    assert info["original_dialogues"] == len(corpus) and info["dagger_states"] == original
    assert info["share_reached"] == 0.5 and len(mixed) == len(corpus) + original
    few = states[:4]
    mixed, info = mix_dagger(corpus, few, 0.5, seed=1)
    assert (
        info["dagger_states"] == 4
        and info["original_samples"] >= 4
        and info["original_dialogues"] < len(corpus)
    )
    assert mix_dagger(corpus, states, 1.0)[0] == states
    assert mix_dagger(corpus, states, 0.0)[0] == corpus
    assert mix_dagger(corpus, states, 0.25, seed=3) == mix_dagger(corpus, states, 0.25, seed=3)


def test_the_recipe_keys_are_checked() -> None:
    args = DiaforgeArguments(dataset_path="a.jsonl", dagger_dataset_path="s.jsonl", dagger_share="0.3")
    assert args.dagger_dataset_path == ["s.jsonl"] and args.dagger_share == 0.3
    with pytest.raises(RecipeError, match="dagger_share must be a number in"):
        DiaforgeArguments(dataset_path="a.jsonl", dagger_share=1.5)


@pytest.mark.slow(reason="trains the tiny recipe in a subprocess")
def test_the_tiny_recipe_trains_on_the_mix(corpus: list[Dialogue], tmp_path) -> None:
    import json
    import subprocess
    import sys

    from _repo import clean_env

    from diaforge.jsonl import write_jsonl

    states = tmp_path / "states.jsonl"
    write_jsonl(states, _states(corpus, 12))
    out = tmp_path / "run"
    command = [
        sys.executable, "-m", "diaforge.train.launch", "--config_file", "accelerate_configs/cpu.yaml",
        "--num_cpu_threads_per_process", "1", "train/sft.py", "recipes/tiny/sft.yaml", "--output_dir", str(out),
        "--dagger_dataset_path", str(states), "--dagger_share", "0.5", "--max_steps", "2", "--save_strategy", "no",
    ]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, env=clean_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "DAgger mix" in proc.stdout + proc.stderr
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())
    assert str(states) in json.dumps(fingerprint)
