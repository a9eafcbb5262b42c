"""Running out of GPU memory during training is one line naming the knob to turn (from the memory
planner, train/plan.py) and exit code 3, not a traceback."""

from __future__ import annotations

import pytest
from _repo import ROOT

from diaforge.train.plan import is_out_of_memory, out_of_memory_line

LLAMA_3B = str(ROOT / "recipes" / "llama-3.2-3b" / "sft.yaml")
TINY = str(ROOT / "recipes" / "tiny" / "sft.yaml")


def test_a_run_that_does_not_fit_names_checkpointing_first():
    """bf16, 8 rows of 4,096 tokens, no checkpointing: 222 GiB by the planner; checkpointing alone
    brings it to 57 GiB, which fits an 80 GB card."""
    argv = [LLAMA_3B, "--load_in_8bit", "false", "--gradient_checkpointing", "false"]
    line = out_of_memory_line([*argv, "--per_device_train_batch_size", "8"], gpu_memory=79.6, env={})
    assert line.startswith("error: CUDA out of memory: the planner puts this run at 222.2 GiB per GPU")
    assert "turn gradient_checkpointing: true (57.0 GiB, fits)" in line and "\n" not in line


def test_rows_per_step_and_zero3_come_after_checkpointing_on_a_small_card():
    argv = [LLAMA_3B, "--load_in_8bit", "false", "--per_device_train_batch_size", "8"]
    line = out_of_memory_line(argv, gpu_memory=16, env={})
    turns = line.split("; turn ", 1)[1].split("; then ")
    assert turns[0].startswith("use_liger_kernel: true")  # checkpointing is on already
    assert turns[1].startswith("per_device_train_batch_size: 1, gradient_accumulation_steps up")
    assert turns[-1].endswith("fits)")


def test_sharding_and_gpus_come_from_the_launcher():
    argv = [str(ROOT / "recipes" / "llama-3.3-70b" / "sft_zero3.yaml")]
    env = {"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3", "WORLD_SIZE": "8"}
    line = out_of_memory_line(argv, gpu_memory=24, env=env)
    assert "the planner puts this run at 32.2 GiB per GPU" in line
    assert "16 GPUs (2 node(s) of 8), ZeRO-3" in line


def test_a_run_the_planner_thought_fits_still_gets_a_knob():
    line = out_of_memory_line([LLAMA_3B], gpu_memory=79.6, env={})
    assert "within this 80 GiB GPU" in line and "; turn use_liger_kernel: true" in line


def test_an_unknown_model_gets_the_generic_order():
    line = out_of_memory_line([LLAMA_3B, "--model_name_or_path", "someone/unknown-model"], 79.6, {})
    assert line.startswith("error: CUDA out of memory: turn gradient_checkpointing: true, then")


def test_which_errors_are_out_of_memory():
    import torch

    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert is_out_of_memory(RuntimeError("CUDA error: out of memory"))
    assert not is_out_of_memory(RuntimeError("expected scalar type Float"))
    assert not is_out_of_memory(ValueError("out of memory"))


@pytest.mark.parametrize("debug", [False, True])
def test_training_that_runs_out_of_memory_exits_3_with_one_line(tmp_path, monkeypatch, capsys, debug):
    """The whole script up to the trainer's `train`, which raises torch's OutOfMemoryError."""
    import torch
    import transformers

    from diaforge.train import sft

    def out_of_memory(self, *args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.96 GiB")

    monkeypatch.setattr(transformers.Trainer, "train", out_of_memory)
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    argv = [TINY, "--output_dir", str(tmp_path / "run"), "--max_dialogues", "2", "--report_to", "none"]
    if debug:  # the traceback on request, as for the other errors
        monkeypatch.setenv("DIAFORGE_DEBUG", "1")
        with pytest.raises(torch.OutOfMemoryError):
            sft.main(argv)
        return
    assert sft.main(argv) == 3
    err = capsys.readouterr().err.strip().splitlines()
    line = err[-1]
    assert line.startswith("error: CUDA out of memory: the planner puts this run at ")
    assert "turn gradient_checkpointing: true" in line  # the tiny recipe trains without it
    assert not any("Traceback" in e for e in err)


def test_other_runtime_errors_keep_their_traceback(tmp_path, monkeypatch):
    import transformers

    from diaforge.train import sft

    def broken(self, *args, **kwargs):
        raise RuntimeError("expected scalar type Float but found BFloat16")

    monkeypatch.setattr(transformers.Trainer, "train", broken)
    with pytest.raises(RuntimeError, match="expected scalar type"):
        sft.main([TINY, "--output_dir", str(tmp_path / "run"), "--max_dialogues", "2", "--report_to", "none"])
