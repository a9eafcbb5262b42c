"""The memory planner (train/plan.py) against what an H100 measured (field notes, section 4;
bench/gpu_sft.py, Llama-3.2-3B shape, LoRA r16, bf16), and every planner line of the recipe registry
(recipes/registry.yaml) against the planner.

Token counts of the padded baselines are those of the bench's corpus: its default 200 scripted
dialogues sliced at 4,096 tokens with SmolLM2's tokenizer, shuffled with seed 0; among the timed
and warm-up steps the longest batch of 4 was padded to 2,742 tokens and the longest of 8 to 3,524
(computed from the bench's own `load_samples`). Prefix-shared rows are packed to 4,096."""

from __future__ import annotations

import pytest
from _repo import ROOT

from diaforge.errors import InputError
from diaforge.train.plan import USABLE, Setup, estimate, main, report
from diaforge.train.recipe_registry import CARDS, read_registry

REGISTRY = read_registry()
LLAMA_3B = REGISTRY.shape_of_model("meta-llama/Llama-3.2-3B-Instruct")
TOLERANCE = 0.15

# (what ran, the setup, peak GiB measured)
H100 = [
    ("padded batch 4, no checkpointing", Setup(LLAMA_3B, "bf16", tokens=4 * 2742, checkpointing=False), 71.7),
    (
        "prefix-shared 1 row, no checkpointing",
        Setup(LLAMA_3B, "bf16", tokens=4096, checkpointing=False),
        34.1,
    ),
    (
        "prefix-shared 2 rows, no checkpointing",
        Setup(LLAMA_3B, "bf16", tokens=8192, checkpointing=False),
        62.0,
    ),
    ("padded batch 8, checkpointing", Setup(LLAMA_3B, "bf16", tokens=8 * 3524), 45.6),
    ("prefix-shared 1 row, checkpointing", Setup(LLAMA_3B, "bf16", tokens=4096), 12.9),
    (
        "prefix-shared 4 rows, checkpointing, Liger",
        Setup(LLAMA_3B, "bf16", tokens=4 * 4096, fused_loss=True),
        12.6,
    ),
    # The Gemma-3-4B recipe (8-bit base, checkpointing, one 4,096-token sample).
    ("gemma-3-4b recipe", Setup(REGISTRY.shape_of_model("google/gemma-3-4b-it"), "8bit", tokens=4096), 20.5),
]


@pytest.mark.parametrize("name,setup,measured", H100, ids=[h[0] for h in H100])
def test_planner_matches_the_h100_within_15_percent(name, setup, measured):
    planned = estimate(setup).total
    assert abs(planned - measured) <= TOLERANCE * measured, (name, planned, measured)


def test_the_run_that_ran_out_of_memory_does_not_fit():
    """The bench's old defaults (batch 8 x 4,096, no checkpointing) ran out of memory on 80 GB."""
    plan = estimate(Setup(LLAMA_3B, "bf16", tokens=8 * 3524, checkpointing=False))
    assert not plan.fits(79.6) and plan.total > 79.6


def test_sharding_divides_what_it_shards():
    base = Setup(REGISTRY.shape_of_model("meta-llama/Llama-3.3-70B-Instruct"), "bf16", tokens=4096)
    one = estimate(base).parts
    zero3 = estimate(Setup(**{**base.__dict__, "gpus": 8, "sharding": "zero3"})).parts
    zero2 = estimate(Setup(**{**base.__dict__, "gpus": 8, "sharding": "zero2"})).parts
    assert zero2["weights"] == one["weights"] and zero2["lora_and_optimizer"] < one["lora_and_optimizer"]
    assert zero3["weights"] < one["weights"] / 6 and zero3["lora_and_optimizer"] < zero2["lora_and_optimizer"]
    assert zero3["activations"] == one["activations"]  # sharding leaves activations alone
    eight_bit = estimate(Setup(**{**base.__dict__, "quant": "8bit", "gpus": 8, "sharding": "zero3"})).parts
    assert eight_bit["weights"] > zero3["weights"] * 3  # quantised weights do not shard


PLANNED = [entry for entry in REGISTRY.recipes() if entry.planner is not None]


@pytest.mark.parametrize("entry", PLANNED, ids=lambda e: e.key)
def test_every_planner_line_of_the_registry_is_the_planners(entry):
    line = entry.planner
    card = CARDS[line.fits]
    r = report(str(REGISTRY.folder / entry.key), None, card)
    assert line.gpus == r["gpus"] and line.sharding == r["sharding"].split()[0]
    assert line.peak_gib == pytest.approx(r["total_gib"], abs=0.05)
    assert r["fits"], r
    assert r["accelerate_config"] == entry.accelerate_config
    if card > CARDS["H100"]:  # it names the bigger card only when an H100 is too small
        assert not report(str(REGISTRY.folder / entry.key), None, CARDS["H100"])["fits"]
    assert USABLE * card >= r["total_gib"]


def test_a_dpo_recipe_is_sized_by_its_backbones_base_model():
    r = report(str(ROOT / "recipes/gemma-3-4b/dpo.yaml"), None, 79.6)
    assert r["model"] == REGISTRY.backbones["gemma-3-4b"].base_model == "google/gemma-3-4b-it"


def test_a_recipe_outside_the_registry_names_its_accelerate_config_and_base_model(tmp_path):
    copy = tmp_path / "dpo.yaml"
    copy.write_text((ROOT / "recipes/llama-3.3-70b/dpo.yaml").read_text())
    with pytest.raises(
        InputError, match=r"dpo.yaml: no shape known for model 'outputs/llama-3.3-70b/sft'.*--base-model"
    ):
        report(str(copy), None, 79.6)
    r = report(str(copy), None, 79.6, base_model="meta-llama/Llama-3.3-70B-Instruct")
    assert r["accelerate_config"] is None and r["gpus"] == 1  # one process without a config
    assert r["total_gib"] == report(str(ROOT / "recipes/llama-3.3-70b/dpo.yaml"), None, 79.6)["total_gib"]
    zero3 = ROOT / "accelerate_configs/deepspeed_zero3.yaml"
    sft = tmp_path / "sft.yaml"
    sft.write_text((ROOT / "recipes/llama-3.3-70b/sft_zero3.yaml").read_text())
    r = report(str(sft), None, 79.6, accelerate_config=str(zero3))
    assert r["sharding"] == "zero3" and r["gpus"] == 8


def test_full_fine_tuning_is_not_planned():
    with pytest.raises(InputError, match=r"demo.yaml: the planner sizes LoRA and QLoRA runs"):
        report(str(ROOT / "recipes/smollm2-135m/demo.yaml"), None, 79.6)


def test_command_line_prints_the_parts_and_the_advice(capsys):
    assert main([str(ROOT / "recipes/llama-3.3-70b/sft.yaml")]) == 0
    out = capsys.readouterr().out
    for part in ("weights", "lora_and_optimizer", "activations", "logits_and_loss", "does NOT fit", "to fit"):
        assert part in out
    assert "load_in_4bit: true" in out or "use_liger_kernel" in out
    assert main([str(ROOT / "recipes/llama-3.3-70b/sft_zero3.yaml"), "--json"]) == 0
    assert '"sharding": "zero3"' in capsys.readouterr().out
