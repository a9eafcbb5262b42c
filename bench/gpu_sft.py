"""LoRA SFT throughput of a Llama-3.2-3B-shaped model on turn-sliced dialogues: the TRL-default
padded baseline against prefix-shared turn slicing with packing. Meant for a GPU; runs anywhere.

    python -m diaforge.bench.gpu_sft [--shape llama-3.2-3b] [--corpus DIALOGUES.jsonl | --dialogues 200]
                            [--attn flex|sdpa] [--steps 30] [--out bench/gpu_results.json]

The model is built from the shape's config with random weights (nothing is downloaded; random
weights cost the same FLOPs as trained ones). The data are the turn-sliced samples of a scripted
corpus (or `--corpus`), tokenised with SmolLM2's tokenizer (or `--tokenizer`): its ids all lie
inside Llama-3's vocabulary, and only sequence lengths matter here.

Two modes, each with a fresh optimizer, over the same samples (in a seeded random order):

- `baseline`: what TRL's `SFTTrainer` does by default with turn-sliced samples: `--batch-size`
  samples per step, padded to the longest, a 2D padding mask, SDPA.
- `prefix_shared`: the samples of each dialogue in one sequence (train/prefix_shared.py), packed
  into rows of `--max-length` tokens, `--rows` rows per step; the attention mask is the exact
  prefix-shared mask, given to flex attention as a `BlockMask` (`--attn flex`, the default on a
  GPU: fully masked blocks are skipped) or to SDPA as a dense float mask (`--attn sdpa`).

Reported per mode: steps, seconds, samples/s, naive-equivalent tokens/s (the tokens of the turn-sliced
samples a step covers, what the baseline would have to process without padding), processed
tokens/s (real tokens, padding excluded), MFU and peak memory. MFU counts 6 FLOPs per parameter of
the linear layers (the output head included, attention scores excluded) per processed token, over
the device's dense bf16 peak (`--peak-tflops` when the device is not known). The first `--warmup`
steps of each mode are not timed.

Defaults fit an 80 GB card by the memory planner (train/plan.py): TRL's own defaults, batch 8 and
gradient checkpointing, put the baseline at 57.0 GiB at worst (every sample padded to 4,096 tokens)
and one prefix-shared row at 12.7 GiB. Batch 8 without checkpointing (the old default) ran out of
memory on an H100; the planner puts it at 222 GiB. Each mode's planned peak is written with the
results, and a mode the planner expects not to fit the GPU is named before it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

# Llama-3.2-3B's architecture (its config.json); rope scaling is left out: it changes no FLOPs.
SHAPES: dict[str, dict[str, Any]] = {
    "llama-3.2-3b": {
        "vocab_size": 128256,
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "num_hidden_layers": 28,
        "num_attention_heads": 24,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "rope_theta": 500000.0,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
    },
    # For trying the script on a CPU (and for its test).
    "tiny": {
        "vocab_size": 1024,  # raised to the tokenizer's size
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": True,
    },
}

# Dense bf16 peak FLOP/s (no sparsity) by a substring of the device name.
PEAK_BF16 = {"H200": 989.4e12, "H100": 989.4e12, "A100": 312e12}


def log(msg: str) -> None:
    print(f"[gpu_sft] {msg}", file=sys.stderr, flush=True)


@dataclass
class Batch:
    """One optimizer step's inputs, with what it covers."""

    inputs: dict[str, Any]
    samples: int  # turn-sliced samples whose targets the step trains
    naive_tokens: int  # their tokens, as naive slicing would process them
    tokens: int  # real (non-padding) tokens the step processes


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def load_samples(args: argparse.Namespace, work: Path) -> tuple[list[dict[str, Any]], Any]:
    """Turn-sliced samples of the corpus (dialogues consecutive, turns in order) and the tokenizer."""
    from transformers import AutoTokenizer

    from diaforge.schema import load_dialogues
    from diaforge.train.slicing import SliceConfig, TurnSlicer

    if args.corpus:
        dialogues = load_dialogues(args.corpus)
    else:
        from diaforge.bench.inputs import generate_corpus

        dialogues = generate_corpus(work / "corpus", args.dialogues)
    if args.tokenizer:
        tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    else:
        from diaforge.bench.inputs import smollm2_path

        tokenizer = AutoTokenizer.from_pretrained(smollm2_path(Path(args.out).expanduser().resolve().parent))
    config = SliceConfig.of(max_length=args.max_length, history_reasoning=args.history_reasoning)
    samples, stats = TurnSlicer(tokenizer, config).slice_all(dialogues)
    log(f"{len(dialogues)} dialogues -> {stats.summary()}")
    return samples, tokenizer


def baseline_batches(samples: Sequence[dict[str, Any]], batch_size: int, pad_id: int) -> Iterator[Batch]:
    """Consecutive `batch_size` samples, right-padded to the longest, with a 2D mask."""
    import torch

    from diaforge.train.slicing import IGNORE_INDEX

    for start in range(0, len(samples), batch_size):
        chunk = samples[start : start + batch_size]
        length = max(len(s["input_ids"]) for s in chunk)
        ids = torch.full((len(chunk), length), pad_id, dtype=torch.long)
        labels = torch.full((len(chunk), length), IGNORE_INDEX, dtype=torch.long)
        mask = torch.zeros((len(chunk), length), dtype=torch.long)
        for i, s in enumerate(chunk):
            n = len(s["input_ids"])
            ids[i, :n] = torch.as_tensor(s["input_ids"])
            labels[i, :n] = torch.as_tensor(s["labels"])
            mask[i, :n] = 1
        tokens = int(mask.sum())
        inputs = {"input_ids": ids, "labels": labels, "attention_mask": mask}
        yield Batch(inputs, len(chunk), tokens, tokens)


def shared_batches(
    samples: Sequence[dict[str, Any]], rows_per_step: int, max_length: int, pad_id: int, dtype: Any, seed: int
) -> Iterator[Batch]:
    """Prefix-shared rows packed to `max_length`, in a seeded random order, `rows_per_step` per
    step, with the dense 4D mask."""
    from diaforge.train.prefix_shared import PrefixSharedCollator, build_prefix_shared

    rows, stats = build_prefix_shared(samples, max_length=max_length, packing=True)
    random.Random(seed).shuffle(rows)
    log(stats.summary())
    collate = PrefixSharedCollator(pad_id, dtype=dtype, pad_to_multiple_of=128)
    for start in range(0, len(rows), rows_per_step):
        chunk = rows[start : start + rows_per_step]
        covered = {i for row in chunk for i in row["sample_index"] if i >= 0}
        naive = sum(len(samples[i]["input_ids"]) for i in covered)
        tokens = sum(len(row["input_ids"]) for row in chunk)
        yield Batch(collate(chunk), len(covered), naive, tokens)


# --------------------------------------------------------------------------------------------
# Model and measurement
# --------------------------------------------------------------------------------------------


def build_model(shape: str, vocab_size: int, attn: str, dtype: Any, device: Any, *, checkpointing: bool):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    spec = {**SHAPES[shape], "vocab_size": max(SHAPES[shape]["vocab_size"], vocab_size)}
    config = LlamaConfig(**spec)
    config._attn_implementation = "flex_attention" if attn == "flex" else "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype)
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    lora = LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear")
    return get_peft_model(model, lora), linear


def measure(
    model, batches: Iterator[Batch], *, steps: int, warmup: int, attn: str, device: Any
) -> dict[str, Any]:
    """Train `warmup` untimed steps, then up to `steps` timed ones; throughput and peak memory."""
    import torch

    from diaforge.train.prefix_shared import block_mask_from_dense

    on_cuda = torch.device(device).type == "cuda"
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    model.train()

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize()

    done = {"steps": 0, "samples": 0, "naive_tokens": 0, "tokens": 0}
    losses: list[float] = []
    seconds = 0.0
    if on_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    for index, batch in enumerate(batches):
        if index >= warmup + steps:
            break
        inputs = {k: v.to(device) for k, v in batch.inputs.items()}
        sync()
        start = time.perf_counter()
        if attn == "flex" and inputs["attention_mask"].ndim == 4:
            # Timed: the trainer builds the BlockMask in every step too.
            inputs["attention_mask"] = block_mask_from_dense(inputs["attention_mask"])
        loss = model(**inputs).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        if index < warmup:
            continue
        seconds += time.perf_counter() - start
        losses.append(float(loss.detach()))
        done["steps"] += 1
        done["samples"] += batch.samples
        done["naive_tokens"] += batch.naive_tokens
        done["tokens"] += batch.tokens
    if not done["steps"]:
        raise SystemExit(
            "error: no timed steps: the corpus is too small for --warmup; lower it or add dialogues"
        )
    return {
        **done,
        "seconds": round(seconds, 3),
        "samples_per_s": round(done["samples"] / seconds, 3),
        "naive_tokens_per_s": round(done["naive_tokens"] / seconds, 1),
        "tokens_per_s": round(done["tokens"] / seconds, 1),
        "mean_loss": round(sum(losses) / len(losses), 4),
        "peak_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if on_cuda else None,
    }


def planned_peaks(args: argparse.Namespace) -> dict[str, float] | None:
    """The memory planner's peak (GiB, train/plan.py) of each mode at these settings: the baseline
    at its worst case (every sample of a batch padded to `--max-length`), prefix-shared at `--rows`
    full rows. None for a shape the planner does not know."""
    from diaforge.train.plan import Setup, estimate
    from diaforge.train.recipe_registry import read_registry

    if args.shape != "llama-3.2-3b":
        return None
    common = {
        "shape": read_registry().shape_of_model("meta-llama/Llama-3.2-3B-Instruct"),
        "checkpointing": args.gradient_checkpointing,
        "fused_loss": args.liger,
    }
    return {
        "baseline": estimate(Setup(tokens=args.batch_size * args.max_length, **common)).total,
        "prefix_shared": estimate(Setup(tokens=args.rows * args.max_length, **common)).total,
    }


def warn_if_too_big(planned: dict[str, float] | None, device: Any) -> dict[str, float] | None:
    """Say which mode the planner expects to run out of this GPU's memory, before it does;
    returns `planned`."""
    import torch

    from diaforge.train.plan import USABLE

    if not planned or torch.device(device).type != "cuda":
        return planned
    memory = torch.cuda.get_device_properties(device).total_memory / 2**30
    for mode, peak in planned.items():
        if peak > USABLE * memory:
            log(
                f"warning: the planner puts {mode} at {peak:.1f} GiB, more than {USABLE:.0%} of this"
                f" {memory:.0f} GiB GPU (python -m diaforge.train.plan; fewer --batch-size/--rows or"
                " --gradient-checkpointing)"
            )
    return planned


def apply_liger() -> None:
    try:
        from liger_kernel.transformers import apply_liger_kernel_to_llama
    except ImportError:
        raise SystemExit("error: --liger needs liger-kernel (pip install liger-kernel)") from None
    apply_liger_kernel_to_llama()


def device_name(device: Any) -> str:
    import torch

    if torch.device(device).type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{torch.device(device).type} ({platform.processor() or platform.machine()})"


def peak_flops(name: str, override_tflops: float | None) -> float | None:
    """Dense bf16 peak FLOP/s of the device called `name`: `override_tflops` when given, else from
    `PEAK_BF16`; None when unknown (then no MFU)."""
    if override_tflops:
        return override_tflops * 1e12
    return next((value for key, value in PEAK_BF16.items() if key in name), None)


# --------------------------------------------------------------------------------------------
# The script
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    from diaforge.format import HISTORY_REASONING

    p = argparse.ArgumentParser(prog="python -m diaforge.bench.gpu_sft", description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="llama-3.2-3b", help="model architecture")
    p.add_argument("--corpus", help="dialogues JSONL (default: generate --dialogues scripted ones)")
    p.add_argument("--dialogues", type=int, default=200, help="scripted dialogues to generate")
    p.add_argument("--tokenizer", help="tokenizer folder (default: SmolLM2's, materialised when missing)")
    p.add_argument("--max-length", type=int, default=4096, help="slicing max_length and packed row length")
    p.add_argument("--history-reasoning", choices=HISTORY_REASONING, default="strip")
    p.add_argument("--batch-size", type=int, default=8, help="baseline: samples per step")
    p.add_argument("--rows", type=int, default=1, help="prefix-shared: packed rows per step")
    p.add_argument("--steps", type=int, default=30, help="timed steps per mode")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps per mode")
    p.add_argument("--attn", choices=["flex", "sdpa"], help="prefix-shared attention (default: flex on CUDA)")
    p.add_argument(
        "--gradient-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="activation checkpointing (default on, as TRL's SFTConfig: batch 8 x 4,096 without it needs"
        " about 220 GiB by the planner)",
    )
    p.add_argument("--liger", action="store_true", help="Liger kernels (liger-kernel must be installed)")
    p.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak, for MFU")
    p.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--seed", type=int, default=0, help="sample order")
    p.add_argument("--out", default=str(ROOT / "bench" / "gpu_results.json"), help="results file")
    return p


def run(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    on_cuda = torch.device(device).type == "cuda"
    attn = args.attn or ("flex" if on_cuda else "sdpa")
    dtype = torch.bfloat16 if on_cuda else torch.float32
    if args.liger:
        apply_liger()
    planned = warn_if_too_big(planned_peaks(args), device)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="diaforge-gpu-bench-") as tmp:
        samples, tokenizer = load_samples(args, Path(tmp))
    # The baseline sees the samples shuffled, as TRL's sampler does; prefix-shared keeps each
    # dialogue's samples together and shuffles the packed rows.
    shuffled = list(samples)
    random.Random(args.seed).shuffle(shuffled)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model, linear_params = build_model(
        args.shape, len(tokenizer), attn, dtype, device, checkpointing=args.gradient_checkpointing
    )
    name = device_name(device)
    peak = peak_flops(name, args.peak_tflops)
    results: dict[str, Any] = {}
    modes = {
        "baseline": lambda: baseline_batches(shuffled, args.batch_size, pad_id),
        "prefix_shared": lambda: shared_batches(
            samples, args.rows, args.max_length, pad_id, dtype, args.seed
        ),
    }
    for name, batches in modes.items():
        log(f"{name} ...")
        out = measure(model, batches(), steps=args.steps, warmup=args.warmup, attn=attn, device=device)
        out["mfu"] = round(6 * linear_params * out["tokens_per_s"] / peak, 4) if peak else None
        results[name] = out
        log(f"{name}: {out['naive_tokens_per_s']} naive-equivalent tokens/s, MFU {out['mfu']}")
    base, ours = results["baseline"], results["prefix_shared"]
    import transformers

    output = {
        "speedup_naive_tokens_per_s": round(ours["naive_tokens_per_s"] / base["naive_tokens_per_s"], 3),
        "modes": results,
        "setup": {
            "shape": args.shape,
            "linear_parameters": linear_params,
            "dtype": str(dtype).removeprefix("torch."),
            "prefix_shared_attention": attn,
            "baseline_attention": "sdpa",
            "lora": "r=16 alpha=16 all-linear",
            "max_length": args.max_length,
            "history_reasoning": args.history_reasoning,
            "batch_size": args.batch_size,
            "rows_per_step": args.rows,
            "gradient_checkpointing": args.gradient_checkpointing,
            "liger": args.liger,
            "planned_peak_gib": planned,
            "samples": len(samples),
        },
        "run": {
            "command": "python -m diaforge.bench.gpu_sft "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "device": name,
            "peak_flops": peak,
            "seconds": round(time.perf_counter() - started, 1),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        },
    }
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    print(
        json.dumps({"speedup_naive_tokens_per_s": output["speedup_naive_tokens_per_s"], **results}, indent=2)
    )
    log(f"written to {path}")
    return output


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
