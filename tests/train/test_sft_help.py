"""The training doors: `train/sft.py --help` and `python -m diaforge.train.launch --help` print the recipe's
keys at once (no torch, no TRL), and the slicing choice is one row-layout object."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest
from _repo import ROOT

from diaforge.train.launch import help_text
from diaforge.train.recipe_fields import DiaforgeArguments
from diaforge.train.recipe_help import help_requested, recipe_help
from diaforge.train.row_layout import PaddedLayout, PrefixSharedLayout, row_layout

HEAVY = "import sys; {call}; print(sorted(m for m in ('torch', 'trl', 'accelerate') if m in sys.modules), file=sys.stderr)"


def _python(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_recipe_help_lists_every_key_with_its_default_and_help() -> None:
    text = recipe_help()
    for f in dataclasses.fields(DiaforgeArguments):
        assert f"  --{f.name} " in text
    assert "--slicing str  (default: 'naive'; one of naive, prefix_shared)" in text
    assert "lora_r: 16" in text and "--help-all" in text


@pytest.mark.parametrize(
    "call",
    [
        "from diaforge.train.sft import main; main(['--help'])",
        "from diaforge.train.sft import main; main(['recipes/tiny/sft.yaml', '--learning_rate', '1e-4', '-h'])",
        "from diaforge.train.launch import main; main(['--help'])",
        "from diaforge.train.launch import main; main(['--num_processes', '2', 'train/sft.py', 'recipes/tiny/sft.yaml', '--help'])",
        "from diaforge.train.launch import main; main(['-m', 'diaforge.train.sft', '--help'])",
    ],
)
def test_help_prints_at_once_without_torch_or_trl(call: str) -> None:
    proc = _python(HEAVY.format(call=call))
    assert proc.returncode == 0, proc.stderr
    assert "--dataset_path list[str]" in proc.stdout
    assert proc.stderr.strip().splitlines()[-1] == "[]"  # neither torch, TRL nor accelerate imported


def test_help_is_asked_for_only_by_a_help_flag() -> None:
    assert help_requested(["recipes/tiny/sft.yaml", "--learning_rate", "1e-4"]) is None
    assert help_text(["--num_processes", "2", "train/sft.py", "recipes/tiny/sft.yaml"]) is None
    assert help_text(["--help"]).startswith("usage: diaforge train")
    assert "python -m diaforge.train.launch" in help_text(["--help"])
    assert help_text(["--num_processes", "2", "recipes/tiny/sft.yaml", "--help"]) is not None
    assert help_text(["--num_processes", "2", "recipes/tiny/sft.yaml"]) is None


def test_sft_script_help_from_the_command_line() -> None:
    """The real `python train/sft.py --help` (what `accelerate launch train/sft.py --help` runs)."""
    proc = subprocess.run(
        [sys.executable, "train/sft.py", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: train/sft.py RECIPE.yaml")


def test_the_slicing_choice_is_one_layout_object() -> None:
    assert isinstance(row_layout("naive"), PaddedLayout)
    assert isinstance(row_layout("prefix_shared"), PrefixSharedLayout)
    assert row_layout("naive").record() == {}

    class ModelArgs:
        attn_implementation = None

    args = ModelArgs()
    row_layout("prefix_shared").configure_model(args)
    assert args.attn_implementation == "sdpa"
    args.attn_implementation = "eager"
    row_layout("prefix_shared").configure_model(args)
    assert args.attn_implementation == "eager"
