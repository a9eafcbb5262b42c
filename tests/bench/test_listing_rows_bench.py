"""bench/listing_rows.py (the `listing_rows` part of `make bench`) on a tiny random Llama over
sibling dialogues: every layout is timed on the same dialogues, shared-listing rows hold fewer
tokens per dialogue, and each sample's loss is the same in every layout."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

from diaforge.bench.inputs import CATALOGUE, demo_slicing
from diaforge.schema import load_dialogues
from diaforge.train.modeling import build_tiny_model
from diaforge.train.slicing import dialogue_texts


@pytest.mark.slow(reason="generates, then times forward passes")
def test_layouts_timed_on_the_same_dialogues(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from diaforge.bench.listing_rows import bench_listing_rows
    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig

    cfg = GenerationConfig(
        catalogue=str(CATALOGUE),
        out=str(tmp_path / "corpus"),
        num_dialogues=12,
        seed=4,
        dialogues_per_listing=6,
        reasoning="lookup",
        encoder="tfidf",
        progress=False,
        plots=False,
        export=False,
    )
    asyncio.run(generate(cfg))
    dialogues = load_dialogues(tmp_path / "corpus" / "dialogues.jsonl")
    path = build_tiny_model(tmp_path / "tiny", texts=dialogue_texts(dialogues), seed=0)
    settings = {**demo_slicing(), "max_length": 4096}
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = bench_listing_rows(dialogues, path, AutoTokenizer.from_pretrained(path), 3, settings)
    finally:
        torch.set_num_threads(before)
    layouts = out["layouts"]
    assert out["timed_dialogues"] == 3 and out["families"] == 1
    assert set(layouts) == {"today", "shared_listing", "shared_listing_2x"}
    # Today: one row per dialogue (none passes max_length); shared: the three in one row.
    assert layouts["today"]["steps"] == 3 and layouts["shared_listing"]["steps"] == 1
    assert layouts["shared_listing"]["row_tokens"] < layouts["today"]["row_tokens"]
    assert out["tokens_per_dialogue_ratio"] == round(
        layouts["shared_listing"]["row_tokens"] / layouts["today"]["row_tokens"], 4
    )
    assert out["value"] > 0 and out["corpus_tokens_per_dialogue_ratio"] < 1
    assert out["max_abs_sample_loss_diff"] < 1e-5  # lr 0: the same weights, the same sample losses
    assert out["corpus"]["max_length=4096"]["today"]["rows"] == len(dialogues)
