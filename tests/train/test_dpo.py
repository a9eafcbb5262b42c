"""The DPO stage (train/dpo.py) on the tiny model, launched as a user launches it: from the tiny SFT
run's adapter (one process, resumed, and two processes under DDP) and from a merged full SFT model.

What is checked besides a run that ends well:

* the first step's loss is ln 2 = 0.693147: the policy starts as the SFT model and the reference
  log-probabilities (computed once, before training) are the SFT model's, so every pair's reward
  margin is 0 and -log sigmoid(0) = ln 2. A reference that were the bare base model (the SFT adapter
  off) would give another value;
* the pairs trained are those of the fixture, per kind, as ``data pairs`` wrote them;
* the model is saved with the SFT run's prompt_format.json, without TRL's frozen ``ref`` adapter,
  and its weights moved away from the SFT adapter's.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import ROOT, clean_env

FIXTURE_KINDS = {
    "premature_call": 7,
    "near_duplicate": 10,
    "unsupported_value": 6,
    "needless_question": 12,
    "wrong_refusal": 6,
}
"""Pairs per kind of tests/fixtures/pairs_small.jsonl (the 6 fixture dialogues have no retrieval
miss, so no missed refusal)."""


def _env() -> dict[str, str]:
    env = clean_env(PYTHONPATH=str(ROOT), WANDB_MODE="offline")
    return {k: v for k, v in env.items() if not k.startswith("ACCELERATE_")}


def _run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def _launch(*extra: str, config: str = "accelerate_configs/cpu.yaml") -> subprocess.CompletedProcess:
    return _run("-m", "diaforge.train.launch", "--config_file", config, *extra)


def _first_loss(output_dir: Path) -> float:
    state = json.loads((output_dir / "trainer_state.json").read_text())
    return next(h["loss"] for h in state["log_history"] if "loss" in h)


def _adapter(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def sft(tmp_path_factory) -> Path:
    """The tiny SFT run (4 steps): an adapter, its tokenizer and prompt_format.json."""
    out = tmp_path_factory.mktemp("dpo") / "sft"
    proc = _launch(
        "train/sft.py",
        "recipes/tiny/sft.yaml",
        "--output_dir",
        str(out),
        "--max_steps",
        "4",
        "--save_strategy",
        "no",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def dpo(sft) -> tuple[Path, subprocess.CompletedProcess]:
    """The DPO recipe given where the script goes (`diaforge train RECIPE.yaml`): 6 steps."""
    out = sft.parent / "dpo"
    proc = _launch("recipes/tiny/dpo.yaml", "--model_name_or_path", str(sft), "--output_dir", str(out))
    return out, proc


def test_dpo_trains_from_the_sft_adapter(sft, dpo):
    out, proc = dpo
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"trained {out}: global step 6")
    assert "continuing the SFT adapter" in proc.stderr
    assert "Computing reference log probs" in proc.stderr
    assert _first_loss(out) == pytest.approx(math.log(2), abs=1e-4)
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["stage"] == "dpo" and summary["pairs_by_kind"] == FIXTURE_KINDS
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())
    assert fingerprint["pairs"] == sum(FIXTURE_KINDS.values()) == 41
    assert fingerprint["sft_checkpoint"] == str(sft.resolve())
    assert (out / "prompt_format.json").read_text() == (sft / "prompt_format.json").read_text()
    assert (out / "checkpoint-6" / "prompt_format.json").is_file()
    assert not (out / "ref").exists()
    import yaml

    recipe = yaml.safe_load((out / "recipe_resolved.yaml").read_text())
    assert recipe["precompute_ref_log_probs"] is True and recipe["beta"] == 0.1
    before, after = _adapter(sft), _adapter(out)
    assert before.keys() == after.keys()
    moved = max(float((after[k] - before[k]).abs().max()) for k in before)
    assert moved > 1e-4  # six steps at lr 1e-3 moved the SFT adapter


def test_dpo_resumes_from_its_last_checkpoint(sft, dpo):
    out, first = dpo
    assert first.returncode == 0
    proc = _launch(
        "train/dpo.py",
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(sft),
        "--output_dir",
        str(out),
        "--max_steps",
        "8",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resuming from checkpoint {out / 'checkpoint-6'}" in proc.stderr
    assert proc.stdout.startswith(f"trained {out}: global step 8")


def test_dpo_with_two_processes(sft):
    out = sft.parent / "dpo-ddp"
    proc = _launch(
        "--num_processes",
        "2",
        "--mixed_precision",
        "no",
        "train/dpo.py",
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(sft),
        "--output_dir",
        str(out),
        "--max_steps",
        "3",
        "--per_device_train_batch_size",
        "1",
        config="accelerate_configs/cpu_ddp.yaml",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("trained ") == 1  # rank 0 alone prints the result line
    assert proc.stdout.startswith(f"trained {out}: global step 3")
    assert _first_loss(out) == pytest.approx(math.log(2), abs=1e-4)
    assert (out / "adapter_model.safetensors").is_file()


def test_dpo_from_a_full_sft_model_with_new_lora(sft):
    merged = sft.parent / "sft-merged"
    proc = _run("-m", "diaforge.train.merge", "--adapter", str(sft), "--output", str(merged))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = sft.parent / "dpo-full"
    proc = _launch(
        "train/dpo.py",
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(merged),
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "continuing the SFT adapter" not in proc.stderr
    assert _first_loss(out) == pytest.approx(math.log(2), abs=1e-4)
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["r"] == 16 and Path(config["base_model_name_or_path"]).resolve() == merged.resolve()
    assert (out / "prompt_format.json").read_text() == (sft / "prompt_format.json").read_text()


def test_a_folder_that_is_no_sft_run_is_one_line(tmp_path):
    (tmp_path / "model").mkdir()
    proc = _launch(
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(tmp_path / "model"),
        "--output_dir",
        str(tmp_path / "o"),
    )
    assert proc.returncode == 2
    assert (
        proc.stderr.strip().splitlines()[-1].startswith("error: recipes/tiny/dpo.yaml: model_name_or_path:")
    )
    assert "no prompt_format.json" in proc.stderr


def test_the_launcher_picks_the_script_by_the_recipe():
    import argparse

    from diaforge.train.config import is_dpo_recipe
    from diaforge.train.launch import DPO_SCRIPT, SFT_SCRIPT, find_script

    assert is_dpo_recipe(ROOT / "recipes/tiny/dpo.yaml") and not is_dpo_recipe(ROOT / "recipes/tiny/sft.yaml")
    for recipe, script in (("recipes/tiny/dpo.yaml", DPO_SCRIPT), ("recipes/tiny/sft.yaml", SFT_SCRIPT)):
        args = argparse.Namespace(
            module=False, training_script=str(ROOT / recipe), training_script_args=["--x", "1"]
        )
        find_script(args)
        assert args.training_script == str(script)
        assert args.training_script_args == [str(ROOT / recipe), "--x", "1"]


def test_dpo_merges_the_sft_adapter_for_full_training(sft):
    out = sft.parent / "dpo-merged-full"
    proc = _launch(
        "train/dpo.py",
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(sft),
        "--output_dir",
        str(out),
        "--max_steps",
        "2",
        "--use_peft",
        "false",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "merging the SFT adapter" in proc.stderr
    assert _first_loss(out) == pytest.approx(math.log(2), abs=1e-4)
    assert (out / "model.safetensors").is_file() and not (out / "adapter_config.json").exists()
    assert (out / "prompt_format.json").read_text() == (sft / "prompt_format.json").read_text()


@pytest.mark.filterwarnings("ignore")
def test_dpo_logs_to_wandb_offline_into_the_output_folder(sft, tmp_path):
    out = sft.parent / "dpo-wandb"
    home = tmp_path / "home"  # no ~/.netrc, no API key: offline
    home.mkdir()
    env = {k: v for k, v in _env().items() if k != "WANDB_MODE"} | {"HOME": str(home)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "diaforge.train.launch",
            "--config_file",
            "accelerate_configs/cpu.yaml",
            "train/dpo.py",
        ]
        + ["recipes/tiny/dpo.yaml", "--model_name_or_path", str(sft), "--output_dir", str(out)]
        + ["--max_steps", "2", "--save_strategy", "no", "--report_to", "wandb"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "wandb runs offline" in proc.stderr
    assert list(out.rglob("offline-run-*"))
    assert proc.stdout.splitlines() == [proc.stdout.strip()]  # the result line alone on stdout
    assert proc.stdout.startswith(f"trained {out}: global step 2")


def test_dpo_with_shared_prompt_rows_follows_trls_run(sft, dpo):
    """`shared_prompt: true` (train/dpo_shared.py) trains the same six steps as TRL's own rows:
    the same losses step by step, with each pair's prompt read once."""
    out = sft.parent / "dpo-shared"
    proc = _launch(
        "train/dpo.py",
        "recipes/tiny/dpo.yaml",
        "--model_name_or_path",
        str(sft),
        "--output_dir",
        str(out),
        "--save_strategy",
        "no",
        "--shared_prompt",
        "true",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "shared-prompt rows" in proc.stderr
    assert proc.stdout.startswith(f"trained {out}: global step 6")

    def history(folder: Path) -> list[dict]:
        state = json.loads((folder / "trainer_state.json").read_text())
        return [h for h in state["log_history"] if "loss" in h]

    # The first six steps of TRL's run (a resume test may have trained the same folder further).
    trl_rows, shared = [h for h in history(dpo[0]) if h["step"] <= 6], history(out)
    assert len(shared) == len(trl_rows) == 6
    assert shared[0]["loss"] == pytest.approx(math.log(2), abs=1e-4)
    for mine, theirs in zip(shared, trl_rows, strict=True):
        assert mine["loss"] == pytest.approx(theirs["loss"], abs=1e-4)
        assert mine["rewards/margins"] == pytest.approx(theirs["rewards/margins"], abs=1e-4)
        assert mine["num_tokens"] < theirs["num_tokens"]  # the prompts read once
