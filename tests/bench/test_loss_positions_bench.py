"""bench/loss_positions.py (the `loss_positions` part of `make bench`) on a tiny random Llama: it
times both variants on every round's row through the prefix-shared trainer and finds their losses
equal."""

from __future__ import annotations

from pathlib import Path

import torch
from _repo import FIXTURES

from diaforge.schema import load_dialogues
from diaforge.train.modeling import build_tiny_model
from diaforge.train.slicing import dialogue_texts

FIXTURE = FIXTURES / "dialogues_small.jsonl"


def test_both_variants_timed_on_every_round(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from diaforge.bench.loss_positions import bench_loss_positions

    dialogues = load_dialogues(FIXTURE)
    path = build_tiny_model(tmp_path / "tiny", texts=dialogue_texts(dialogues), seed=0)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = bench_loss_positions(dialogues, path, AutoTokenizer.from_pretrained(path), rounds=2)
    finally:
        torch.set_num_threads(before)
    assert out["rounds"] == 2 and len(out["ratios"]) == 2 and out["value"] > 0
    assert all(len(out["seconds"][v]) == 2 for v in ("all", "trained"))
    assert out["refused"] is None and out["max_rel_loss_diff"] < 1e-5
    assert 0 < out["trained_fraction"] < 0.6 and out["setup"].startswith("tiny fp32, LoRA r=16")
