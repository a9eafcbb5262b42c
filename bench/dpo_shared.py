"""The `dpo_shared` part of bench/run.py: a DPO step of SmolLM2-135M on CPU with TRL's own rows
(prompt + chosen and prompt + rejected, the prompt read twice) over the same step with
shared-prompt rows (``shared_prompt: true``, train/dpo_shared.py: the prompt once, two branches).

    python -m diaforge.bench.run --only dpo_shared [--dpo-rounds 3]

The pairs are those of tests/fixtures/pairs_small.jsonl (41 pairs of the six fixture dialogues,
every kind but the missed refusal) rendered in the demo recipe's prompt format with SmolLM2's
tokenizer. Tokens per pair are counted on all of them, as each collator lays them out (no padding
at batch size 1). The step is the demo DPO recipe's (recipes/smollm2-135m/dpo.yaml): full
fine-tuning in fp32, batch 1, the reference's log-probs precomputed; one step is the trainer's
`compute_loss`, `loss.backward()` and an AdamW step at learning rate 0 (so both trainers keep the
same weights and their losses can be compared). After one warm-up step of each on a first pair,
`rounds` pairs are timed, the order of the two trainers alternating from pair to pair so that a
change of load on a shared machine hits both alike; the value is the median of the per-pair
ratios of step times, TRL's over shared.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from diaforge.bench.inputs import ROOT

PAIRS = ROOT / "tests" / "fixtures" / "pairs_small.jsonl"
VARIANTS = ("trl", "shared")


def _rows(tokenizer) -> list[dict[str, Any]]:
    """The fixture's pairs as TRL's conversational preference rows in the demo's prompt format."""
    from diaforge.bench.inputs import demo_slicing
    from diaforge.format import PromptFormat, load_pair_records, preference_rows

    settings = demo_slicing()
    fmt = PromptFormat(**{k: settings[k] for k in PromptFormat.CHOICES})
    keys = ("prompt", "chosen", "rejected", "tools")
    return [{k: r[k] for k in keys if k in r} for r in preference_rows(load_pair_records(PAIRS), fmt)]


def _trainer(variant: str, model_path: Path, tokenizer, rows, work: Path):
    """TRL's `DPOTrainer` or the shared-prompt one on `rows`, as the demo DPO recipe trains."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM
    from trl import DPOConfig, DPOTrainer

    from diaforge.train.dpo_shared import shared_prompt_trainer_class

    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    args = DPOConfig(
        output_dir=str(work / variant),
        use_cpu=True,
        bf16=False,
        report_to="none",
        per_device_train_batch_size=1,
        max_length=2048,
        beta=0.1,
        precompute_ref_log_probs=True,
        gradient_checkpointing=False,
        disable_tqdm=True,
    )
    cls = shared_prompt_trainer_class() if variant == "shared" else DPOTrainer
    trainer = cls(
        model=model, args=args, train_dataset=datasets.Dataset.from_list(rows), processing_class=tokenizer
    )
    trainer.model.train()
    return trainer


def bench_dpo_shared(model_path: Path, tokenizer, rounds: int) -> dict[str, Any]:
    """Tokens per pair and step time, TRL's rows over shared-prompt rows (module docstring)."""
    import datasets
    import torch

    rows = _rows(tokenizer)
    # Pairs spread over the fixture's dialogues (the first one warms up).
    picks = [round(i * (len(rows) - 1) / rounds) for i in range(rounds + 1)]
    timed = [rows[i] for i in picks]
    with tempfile.TemporaryDirectory(prefix="diaforge-dpo-shared-") as tmp:
        trainers = {v: _trainer(v, model_path, tokenizer, timed, Path(tmp)) for v in VARIANTS}
        examples = list(trainers["trl"].train_dataset)
        shared_examples = list(trainers["shared"].train_dataset)
        every = trainers["trl"]._prepare_dataset(
            datasets.Dataset.from_list(rows), tokenizer, trainers["trl"].args, "pairs"
        )
        tokens = {
            "trl": [int(trainers["trl"].data_collator([e])["attention_mask"].sum()) for e in every],
            "shared": [len(r["input_ids"]) for r in trainers["shared"].data_collator.rows(list(every))],
        }
    optimizers = {
        v: torch.optim.AdamW([p for p in t.model.parameters() if p.requires_grad], lr=0.0)
        for v, t in trainers.items()
    }
    ref_diff = max(
        abs(a[k] - b[k]) / abs(a[k])
        for a, b in zip(examples, shared_examples, strict=True)
        for k in ("ref_chosen_logps", "ref_rejected_logps")
    )

    def step(variant: str, i: int) -> tuple[float, float]:
        trainer = trainers[variant]
        source = examples if variant == "trl" else shared_examples
        batch = trainer.data_collator([source[i]])
        start = time.perf_counter()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
        optimizers[variant].step()
        optimizers[variant].zero_grad(set_to_none=True)
        return time.perf_counter() - start, loss.item()

    for variant in VARIANTS:
        step(variant, 0)
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    ratios, loss_diffs = [], []
    for i in range(1, len(timed)):
        order = VARIANTS if i % 2 else VARIANTS[::-1]
        got = {v: step(v, i) for v in order}
        for v in VARIANTS:
            seconds[v].append(round(got[v][0], 3))
        ratios.append(got["trl"][0] / got["shared"][0])
        loss_diffs.append(abs(got["trl"][1] - got["shared"][1]))
    per_pair = {v: sum(t) / len(t) for v, t in tokens.items()}
    prompt_tokens = [len(e["prompt_ids"]) for e in every]
    completion_tokens = [(len(e["chosen_ids"]) + len(e["rejected_ids"])) / 2 for e in every]
    return {
        "value": round(statistics.median(ratios), 3),
        "pairs": len(rows),
        "tokens_per_pair": {v: round(n, 2) for v, n in per_pair.items()},
        "token_ratio_shared_vs_trl": round(per_pair["shared"] / per_pair["trl"], 4),
        "mean_prompt_tokens": round(statistics.mean(prompt_tokens), 2),
        "mean_completion_tokens": round(statistics.mean(completion_tokens), 2),
        "rounds": len(ratios),
        "ratios": [round(r, 3) for r in ratios],
        "seconds": seconds,
        "timed_pair_tokens": {v: [tokens[v][i] for i in picks[1:]] for v in VARIANTS},
        "max_abs_loss_diff": max(loss_diffs),
        "max_rel_ref_logps_diff": ref_diff,
        "setup": (
            f"{Path(model_path).name} fp32, full fine-tuning, sdpa, DPO sigmoid beta 0.1, reference "
            "log-probs precomputed, batch 1; a step is compute_loss + backward + AdamW step (lr 0); pairs "
            f"of {PAIRS.relative_to(ROOT)} in the demo recipe's prompt format; torch threads "
            f"{torch.get_num_threads()}"
        ),
    }
