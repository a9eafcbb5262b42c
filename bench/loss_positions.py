"""The `loss_positions` part of bench/run.py: the training step of SmolLM2-135M on CPU with TRL's
loss over every position (`all`) over the loss at the trained positions only (`trained`,
train/loss_positions.py), through the prefix-shared trainer itself.

    python -m diaforge.bench.run --only loss_positions [--positions-rounds 3]

Each round takes the next prefix-shared row of the corpus (one dialogue, the demo recipe's
slicing) and times one optimizer step on it with each variant, the order alternating from round
to round so that a change of load on a shared machine hits both alike; the value is the median
over rounds of the ratio of step times (all / trained). The learning rate is zero, so both
variants see the same weights and their losses on a row are compared too.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("all", "trained")


def _trainer(model_path: Path, tokenizer, rows, work: Path):
    """A prefix-shared trainer with ``loss_positions: trained`` (switched per step) on SmolLM2 fp32
    with the demo recipe's LoRA (r=16, alpha 16, every linear layer, no dropout: same weights)."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig

    from diaforge.train.prefix_shared import PrefixSharedCollator, prefix_shared_trainer_class
    from diaforge.train.slicing import to_dataset

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    args = SFTConfig(
        output_dir=str(work),
        use_cpu=True,
        report_to="none",
        bf16=False,
        max_length=None,
        remove_unused_columns=False,
        dataset_kwargs={"skip_prepare_dataset": True},
    )
    collator = PrefixSharedCollator(tokenizer.pad_token_id, dtype=torch.float32)
    peft_config = LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear")
    trainer = prefix_shared_trainer_class("trained")(
        model=model,
        args=args,
        train_dataset=to_dataset(rows),
        processing_class=tokenizer,
        data_collator=collator,
        peft_config=peft_config,
    )
    trainer.model.train()
    return trainer, collator


def bench_loss_positions(dialogues, model_path: Path, tokenizer, rounds: int) -> dict[str, Any]:
    """Step time with `all` over `trained` on `rounds` rows (after one warm-up step of each)."""
    import torch

    from diaforge.bench.inputs import DEMO_RECIPE, ROOT, demo_slicing, slice_samples
    from diaforge.train.prefix_shared import build_prefix_shared
    from diaforge.train.slicing import IGNORE_INDEX

    settings = demo_slicing()
    samples, _ = slice_samples(tokenizer, dialogues[: rounds + 1], **settings)
    rows, _ = build_prefix_shared(samples, max_length=settings["max_length"])
    rows = rows[: rounds + 1]  # the first warms up
    with tempfile.TemporaryDirectory(prefix="diaforge-positions-") as tmp:
        trainer, collate = _trainer(model_path, tokenizer, rows, Path(tmp))
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=0.0)

    def step(row, variant: str) -> tuple[float, float]:
        trainer.loss_positions = variant
        batch = collate([row])
        start = time.perf_counter()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start, loss.item()

    for variant in VARIANTS:
        step(rows[0], variant)
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    ratios, loss_diffs = [], []
    for i, row in enumerate(rows[1:]):
        order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
        got = {v: step(row, v) for v in order}
        for v in VARIANTS:
            seconds[v].append(round(got[v][0], 3))
        ratios.append(got["all"][0] / got["trained"][0])
        loss_diffs.append(abs(got["all"][1] - got["trained"][1]) / got["all"][1])
    tokens = [len(r["input_ids"]) for r in rows[1:]]
    trained = [sum(1 for x in r["labels"][1:] if x != IGNORE_INDEX) for r in rows[1:]]
    return {
        "value": round(statistics.median(ratios), 3),
        "rounds": len(ratios),
        "ratios": [round(r, 3) for r in ratios],
        "seconds": seconds,
        "row_tokens": tokens,
        "trained_fraction": round(sum(trained) / sum(tokens), 3),
        "max_rel_loss_diff": max(loss_diffs),
        "refused": trainer._positions_refused,
        "setup": (
            f"{Path(model_path).name} fp32, LoRA r=16 alpha=16 all-linear, sdpa, the prefix-shared trainer's "
            "compute_loss + backward + AdamW step (lr 0), one dialogue's row per step, batch 1; slicing as "
            f"{DEMO_RECIPE.relative_to(ROOT)}; torch threads {torch.get_num_threads()}"
        ),
    }
