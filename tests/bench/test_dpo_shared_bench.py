"""bench/dpo_shared.py (the `dpo_shared` part of `make bench`) on a tiny random Llama: it times
both trainers on every round's pair, counts each pair's prompt once in the shared rows, and finds
the losses and the precomputed reference log-probs of the two equal."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from _repo import FIXTURES

from diaforge.schema import load_dialogues
from diaforge.train.modeling import build_tiny_model
from diaforge.train.slicing import dialogue_texts


def test_both_trainers_timed_on_every_round(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from diaforge.bench.dpo_shared import bench_dpo_shared

    texts = dialogue_texts(load_dialogues(FIXTURES / "dialogues_small.jsonl"))
    path = build_tiny_model(tmp_path / "tiny", texts=texts, seed=0)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = bench_dpo_shared(path, AutoTokenizer.from_pretrained(path), rounds=2)
    finally:
        torch.set_num_threads(before)
    assert out["rounds"] == 2 and len(out["ratios"]) == 2 and out["value"] > 0
    assert all(len(out["seconds"][v]) == 2 for v in ("trl", "shared"))
    assert out["pairs"] == 41
    # TRL reads prompt + chosen and prompt + rejected; a shared row the prompt once, plus its last
    # token again for the second branch.
    tokens = out["tokens_per_pair"]
    assert tokens["trl"] == pytest.approx(
        2 * out["mean_prompt_tokens"] + 2 * out["mean_completion_tokens"], abs=0.03
    )
    assert tokens["shared"] == pytest.approx(tokens["trl"] - out["mean_prompt_tokens"] + 1, abs=0.03)
    assert out["max_abs_loss_diff"] < 1e-5 and out["max_rel_ref_logps_diff"] < 1e-5
    assert out["setup"].startswith("tiny fp32, full fine-tuning")
