"""GPU memory planner for a training recipe: what one GPU holds at the peak of a LoRA/QLoRA step.

    python -m diaforge.train.plan RECIPE.yaml [--gpus N] [--gpu-memory GiB] [--json]

Per GPU, in GiB: the base weights at the recipe's precision and quantisation; the LoRA parameters with
their gradients and AdamW states; the activations of one micro-batch (the recipe's rows per step x
`max_length` tokens) with or without gradient checkpointing; the logits and the loss (and what a fused
loss, `use_liger_kernel: true`, saves); and what the sharding of the recipe's accelerate config (DDP,
ZeRO-2, ZeRO-3, FSDP) divides by the number of GPUs. When the total does not fit it names what to
turn, in order: checkpointing, the fused loss, rows per step, ZeRO-3 over the GPUs, 4-bit, more GPUs
or nodes.

The rules (bytes; h hidden size, i MLP width, kv key/value width, V vocabulary, L layers):

* Weights: bf16, 2 per parameter. 8-bit (bitsandbytes LLM.int8): 1 per parameter of the linear layers;
  4-bit NF4: 0.5 plus its scales. With either, `prepare_model_for_kbit_training` (train/modeling.py)
  upcasts every other parameter (embeddings, untied head, norms) to fp32: 4 each, and the hidden states
  that leave the fp32 embedding stay fp32. ZeRO-3 and FSDP divide bf16 weights by the GPUs and gather
  about two layers at a time; quantised weights do not shard.
* LoRA: r x (in + out) parameters per adapted linear, fp32, 16 per parameter (weight, gradient, two
  AdamW moments). ZeRO-2 shards gradients and moments (12 of the 16), ZeRO-3 and FSDP all 16.
* Activations per token: a layer keeps 2 x (10h + 4i + 3kv) + 24h bytes (bf16 inputs of its linears,
  rotary and attention outputs; RMSNorm works in fp32). Without checkpointing all L layers; with it the
  L layer inputs (2h, or 4h in fp32) plus one layer recomputed during its backward.
* Logits per token: V x (head bytes + 8): the head's output, its fp32 copy for the loss and the
  log-softmax with its gradient (10 for a bf16 head, 12 for an fp32 one). A fused linear-cross-entropy
  (Liger) computes them in chunks: about 8h.
* Tokens per micro-batch: rows per step x `max_length`. Prefix-shared packed rows are that full;
  for naive rows it is the worst case (a batch is padded to its longest sample). A DPO recipe
  (train/dpo.py, with `pairs_path`) runs each row twice in one forward, chosen and rejected, each up to
  `max_length`: twice the activations and logits; its base model is its backbone's, since
  `model_name_or_path` is the SFT run folder. With the reference's log-probabilities precomputed (the
  stage's default) no reference model is held. The planner sizes LoRA and QLoRA runs, not full
  fine-tuning.

Model shapes, a recipe's accelerate config and a DPO recipe's base model come from the recipe
registry (`recipes/registry.yaml`, read by `train/recipe_registry.py`); for a recipe outside
`recipes/`, `--accelerate-config` and `--base-model` name them.

The activation and logit coefficients were fitted to two H100 measurements (prefix-shared, 1 and 2 rows
of 4,096 tokens, no checkpointing; field notes, section 4) and checked against the others: padded
baselines, checkpointing with and without Liger, the Gemma-3-4B recipe and an out-of-memory run
(tests/train/test_plan.py). A plan fits when its peak is within `USABLE` of the card: the CUDA context,
the allocator's fragmentation and NCCL buffers take the rest.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from diaforge.errors import InputError, command_main
from diaforge.train.recipe_registry import Shape, read_registry

GIB = 2**30
USABLE = 0.9  # of the card's memory a plan may use
LORA_BYTES = 16  # fp32 weight + gradient + AdamW exp_avg + exp_avg_sq
SHARDED_STATE = {"none": 0, "zero2": 12, "zero3": 16, "fsdp": 16}


@dataclass
class Setup:
    """What one GPU runs: the model, its precision, one micro-batch and the sharding."""

    shape: Shape
    quant: str = "bf16"  # bf16 | 8bit | 4bit
    lora_r: int = 16
    lora_layers_only: bool = True  # adapters on the decoder's linears (not a vision tower)
    tokens: int = 4096  # per micro-batch on one GPU
    checkpointing: bool = True
    fused_loss: bool = False
    gpus: int = 1
    sharding: str = "none"  # none (DDP or one GPU) | zero2 | zero3 | fsdp
    offload: bool = False  # ZeRO-3 with weights and optimizer states in CPU memory
    sequences: int = 1  # per row in one forward: 2 for DPO (chosen and rejected, each up to max_length)


@dataclass
class Plan:
    """Peak memory of one GPU, by part, in GiB."""

    setup: dict[str, Any]
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return round(sum(self.parts.values()), 2)

    def fits(self, gpu_memory: float) -> bool:
        return self.total <= USABLE * gpu_memory


def estimate(setup: Setup) -> Plan:
    s = setup.shape
    h, i, kv = s.hidden, s.intermediate, s.kv_dim
    quantised = setup.quant in ("8bit", "4bit")
    shard = setup.sharding in ("zero3", "fsdp") and not quantised
    linear = s.linear_params() + s.extra_linear
    other = s.embedding_params()
    if quantised:
        per_linear = 1.0 if setup.quant == "8bit" else 0.5 + 0.5 / 64 * 4 / 8  # NF4 + double-quantised scales
        weights = linear * per_linear + other * 4
    else:
        weights = (linear + other) * 2
    if shard:
        layer = (weights - other * 2) / s.layers
        weights = 0.0 if setup.offload else weights / setup.gpus + 2 * layer
    lora = s.layers * sum(setup.lora_r * (a + b) for a, b in s.layer_linears())
    if s.decoder_linear is not None:  # scale to the pruned decoder
        lora = int(lora * s.decoder_linear / (s.layers * sum(a * b for a, b in s.layer_linears())))
    sharded = SHARDED_STATE[setup.sharding] if setup.gpus > 1 else 0
    lora_bytes = lora * (LORA_BYTES - sharded + sharded / setup.gpus)
    if setup.offload:
        lora_bytes = lora * 4 / setup.gpus
    per_layer = 2 * (10 * h + 4 * i + 3 * kv) + 24 * h
    residual = 4 * h if quantised else 2 * h
    per_token = s.layers * residual + per_layer if setup.checkpointing else s.layers * per_layer
    head_bytes = 4 if quantised else 2
    logits = 8 * h if setup.fused_loss else s.vocab * (head_bytes + 8)
    plan = Plan(setup={**asdict(setup), "shape": asdict(s)})
    plan.parts = {
        "weights": round(weights / GIB, 2),
        "lora_and_optimizer": round(lora_bytes / GIB, 2),
        "activations": round(setup.sequences * setup.tokens * per_token / GIB, 2),
        "logits_and_loss": round(setup.sequences * setup.tokens * logits / GIB, 2),
    }
    plan.setup["lora_params"] = lora
    plan.setup["fused_loss_saves_gib"] = round(setup.tokens * (s.vocab * (head_bytes + 8) - 8 * h) / GIB, 2)
    return plan


# --------------------------------------------------------------------------------------------
# Recipes
# --------------------------------------------------------------------------------------------

SHARDING_OF = {"MULTI_GPU": "none", "NO": "none", "FSDP": "fsdp"}


def setup_of(
    recipe: str | Path,
    gpus: int | None = None,
    *,
    accelerate_config: str | Path | None = None,
    base_model: str | None = None,
) -> tuple[Setup, dict[str, Any]]:
    """The Setup a recipe trains with: the model's shape, the recipe's accelerate config and a DPO
    recipe's base model from the recipe registry (`recipes/registry.yaml`) for a recipe of
    `recipes/`; `accelerate_config` and `base_model` name them for any recipe (a recipe outside
    `recipes/` without `accelerate_config` runs as one process)."""
    from diaforge.configs import read_yaml_mapping
    from diaforge.train.config import read_recipe

    data = read_recipe(recipe)
    if not data.get("use_peft"):
        raise InputError(
            "the planner sizes LoRA and QLoRA runs; this recipe trains every weight", path=recipe
        )
    registry = read_registry()
    entry = registry.entry_of(recipe)
    dpo = "pairs_path" in data  # train/dpo.py: model_name_or_path is the SFT run, not its base
    model = str(data.get("model_name_or_path", ""))
    if base_model:
        model = base_model
    elif dpo and entry is not None:
        model = registry.backbone_of(entry).base_model
    shape = registry.shape_of_model(model)
    if shape is None:
        hint = "; name a DPO recipe's base model with --base-model" if dpo else ""
        raise InputError(
            f"no shape known for model '{model}' (the recipe registry {registry.path} lists them{hint})",
            path=recipe,
        )
    config_name = None if accelerate_config is None else str(accelerate_config)
    if accelerate_config is None and entry is not None:
        config_name, accelerate_config = entry.accelerate_config, entry.accelerate_config_path()
    config = (
        {} if accelerate_config is None else read_yaml_mapping(accelerate_config, what="accelerate config")
    )
    kind = str(config.get("distributed_type", "NO"))
    ds = config.get("deepspeed_config") or {}
    sharding = f"zero{ds.get('zero_stage', 2)}" if kind == "DEEPSPEED" else SHARDING_OF.get(kind, "none")
    quant = "8bit" if data.get("load_in_8bit") else "4bit" if data.get("load_in_4bit") else "bf16"
    rows = int(data.get("per_device_train_batch_size", 1))
    setup = Setup(
        shape=shape,
        quant=quant,
        lora_r=int(data.get("lora_r", 16)),
        tokens=rows * int(data.get("max_length", 1024)),
        checkpointing=bool(data.get("gradient_checkpointing", False)),
        fused_loss=bool(data.get("use_liger_kernel", False)),
        gpus=gpus or int(config.get("num_processes", 1)),
        sharding=sharding,
        offload=ds.get("offload_param_device", "none") == "cpu",
        sequences=2 if dpo else 1,
    )
    return setup, {"model": model, "accelerate_config": config_name, "rows_per_step": rows}


def knobs(setup: Setup, gpu_memory: float) -> list[tuple[str, float, bool]]:
    """What to turn, first to last, each with the peak it gives (cumulative) and whether that fits;
    the list stops at the first that fits."""
    steps: list[tuple[str, dict[str, Any]]] = []
    if not setup.checkpointing:
        steps.append(("gradient_checkpointing: true", {"checkpointing": True}))
    if not setup.fused_loss:
        steps.append(("use_liger_kernel: true (fused loss; pip install liger-kernel)", {"fused_loss": True}))
    if setup.tokens > 4096:
        steps.append(
            (
                "per_device_train_batch_size: 1, gradient_accumulation_steps up",
                {"tokens": min(setup.tokens, 4096)},
            )
        )
    if setup.quant == "bf16" and setup.sharding not in ("zero3", "fsdp"):
        steps.append(("accelerate_configs/deepspeed_zero3.yaml (or fsdp2.yaml)", {"sharding": "zero3"}))
    if setup.quant != "4bit" and setup.sharding not in ("zero3", "fsdp"):
        steps.append(("load_in_4bit: true (QLoRA)", {"quant": "4bit"}))
    if setup.quant == "bf16":
        for gpus in (8, 16, 32):
            if gpus > setup.gpus:
                steps.append(
                    (
                        f"{gpus} GPUs ({math.ceil(gpus / 8)} node(s) of 8), ZeRO-3",
                        {"gpus": gpus, "sharding": "zero3"},
                    )
                )
    out, current = [], asdict(setup) | {"shape": setup.shape}
    for text, change in steps:
        current |= change
        plan = estimate(Setup(**current))
        out.append((text, plan.total, plan.fits(gpu_memory)))
        if out[-1][2]:
            break
    return out


def advice(setup: Setup, gpu_memory: float) -> list[str]:
    """`knobs` as lines: what to turn, first to last, each with the peak it gives."""
    return [
        f"{text}: {total:.1f} GiB{' (fits)' if fits else ''}"
        for text, total, fits in knobs(setup, gpu_memory)
    ]


def report(
    recipe: str,
    gpus: int | None,
    gpu_memory: float,
    *,
    accelerate_config: str | None = None,
    base_model: str | None = None,
) -> dict[str, Any]:
    setup, where = setup_of(recipe, gpus, accelerate_config=accelerate_config, base_model=base_model)
    plan = estimate(setup)
    return {
        "recipe": str(recipe),
        **where,
        "gpus": setup.gpus,
        "sharding": setup.sharding + (" + offload" if setup.offload else ""),
        "quantisation": setup.quant,
        "tokens_per_micro_batch": setup.tokens,
        "gradient_checkpointing": setup.checkpointing,
        "fused_loss": setup.fused_loss,
        "per_gpu_gib": plan.parts,
        "total_gib": plan.total,
        "fused_loss_saves_gib": plan.setup["fused_loss_saves_gib"],
        "without_checkpointing_gib": estimate(
            Setup(**(asdict(setup) | {"shape": setup.shape, "checkpointing": False}))
        ).total,
        "gpu_memory_gib": gpu_memory,
        "fits": plan.fits(gpu_memory),
        "advice": [] if plan.fits(gpu_memory) else advice(setup, gpu_memory),
    }


def format_report(r: dict[str, Any]) -> str:
    lines = [
        f"{r['recipe']}: {r['model']}, {r['quantisation']}, {r['gpus']} GPU(s), sharding {r['sharding']}"
        f" ({r['accelerate_config']})",
        f"micro-batch: {r['tokens_per_micro_batch']} tokens, checkpointing {r['gradient_checkpointing']},"
        f" fused loss {r['fused_loss']}",
        "per GPU (GiB):",
    ]
    lines += [f"  {name:<20} {value:8.2f}" for name, value in r["per_gpu_gib"].items()]
    lines.append(
        f"  {'total':<20} {r['total_gib']:8.2f}   (without checkpointing: {r['without_checkpointing_gib']:.1f})"
    )
    if not r["fused_loss"]:
        lines.append(f"  a fused loss (use_liger_kernel: true) would save {r['fused_loss_saves_gib']:.1f}")
    verdict = "fits" if r["fits"] else "does NOT fit"
    lines.append(f"{verdict} a {r['gpu_memory_gib']:g} GiB GPU (plans use up to {USABLE:.0%} of it)")
    if r["advice"]:
        lines.append("to fit, turn (cumulative):")
        lines += [f"  {line}" for line in r["advice"]]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Out of memory during training: the knob to turn (train/sft.py)
# --------------------------------------------------------------------------------------------

OOM_GENERIC = (
    "turn gradient_checkpointing: true, then per_device_train_batch_size: 1 (gradient_accumulation_steps "
    "up) or a lower max_length, then ZeRO-3 over more GPUs (python -m diaforge.train.plan RECIPE --gpus N shows "
    "the peak by part)"
)


def is_out_of_memory(exc: BaseException) -> bool:
    """A CUDA out-of-memory error: torch's own class, or a RuntimeError saying so (as some
    extensions raise it)."""
    try:
        import torch

        if isinstance(exc, torch.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def shape_of_model(name_or_path: str, output_dir: str | None = None) -> Shape | None:
    """The shape of a local folder's (or a tiny:// model's built) config.json, or of a model the
    recipe registry knows; None when neither."""
    folder = Path(name_or_path).expanduser()
    if name_or_path.startswith("tiny://") and output_dir:
        folder = Path(output_dir) / "tiny-base"
    try:
        return Shape.from_config(json.loads((folder / "config.json").read_text(encoding="utf-8")))
    except (OSError, KeyError, ValueError, TypeError):
        return read_registry().shape_of_model(name_or_path)


def run_values(argv: list[str]) -> dict[str, Any]:
    """The recipe keys of a `train/sft.py` command line (`RECIPE.yaml [--key value ...]`) over the
    GPU defaults, read as the planner needs them (no TRL parsing: nothing is checked twice)."""
    from diaforge.train.config import device_defaults, read_recipe_yaml, split_recipe_argv

    recipe, overrides = split_recipe_argv(argv)
    values = {**device_defaults(True), **(read_recipe_yaml(recipe) if recipe else {})}
    i = 0
    while i < len(overrides):
        key, eq, value = overrides[i].removeprefix("--").partition("=")
        if not eq:
            following = i + 1 < len(overrides) and not overrides[i + 1].startswith("--")
            value = overrides[i + 1] if following else "true"
            i += following
        values[key.replace("-", "_")] = yaml.safe_load(value)
        i += 1
    return values


def setup_of_run(values: dict[str, Any], env: dict[str, str]) -> Setup | None:
    """The Setup of a training run's recipe values (`run_values`); sharding and GPU count from the
    accelerate launcher's environment (ACCELERATE_USE_DEEPSPEED / _FSDP, WORLD_SIZE)."""
    shape = shape_of_model(str(values.get("model_name_or_path") or ""), values.get("output_dir"))
    if shape is None:
        return None
    sharding = "none"
    if env.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        stage = env.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "2")
        sharding = {"2": "zero2", "3": "zero3"}.get(stage, "none")
    elif env.get("ACCELERATE_USE_FSDP", "").lower() == "true":
        sharding = "fsdp"
    rows = int(values.get("per_device_train_batch_size") or 1)
    return Setup(
        shape=shape,
        quant="8bit" if values.get("load_in_8bit") else "4bit" if values.get("load_in_4bit") else "bf16",
        lora_r=int(values.get("lora_r") or 16),
        tokens=rows * int(values.get("max_length") or 1024),
        checkpointing=bool(values.get("gradient_checkpointing")),
        fused_loss=bool(values.get("use_liger_kernel")),
        gpus=int(env.get("WORLD_SIZE", "1") or 1),
        sharding=sharding,
    )


def device_memory_gib() -> float:
    """This process's GPU, in GiB (79.6, an H100, when none is visible)."""
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / GIB
    except Exception:  # pragma: no cover - best effort, inside an error handler
        pass
    return 79.6


def out_of_memory_line(
    argv: list[str], gpu_memory: float | None = None, env: dict[str, str] | None = None
) -> str:
    """One line for a training run (`train/sft.py` arguments) that ran out of GPU memory: the
    planner's peak for it and what to turn, in the planner's order, until it fits."""
    import os

    head = "error: CUDA out of memory"
    gpu_memory = device_memory_gib() if gpu_memory is None else gpu_memory
    try:
        setup = setup_of_run(run_values(argv), dict(os.environ) if env is None else env)
    except Exception:  # the run parsed before; anything odd here must not hide the OOM line
        setup = None
    if setup is None:
        return f"{head}: {OOM_GENERIC}"
    plan = estimate(setup)
    where = f"the planner puts this run at {plan.total:.1f} GiB per GPU"
    if plan.fits(gpu_memory):
        # The planner thought it fits: name the knobs that take a fifth off its peak.
        steps = knobs(setup, plan.total * 0.8 / USABLE)
        where += f", within this {gpu_memory:.0f} GiB GPU (other processes or fragmentation hold the rest)"
        turns = [f"{text} ({total:.1f} GiB)" for text, total, _ in steps]
    else:
        where += f", more than {USABLE:.0%} of this {gpu_memory:.0f} GiB GPU"
        turns = [
            f"{text} ({total:.1f} GiB{', fits' if fits else ''})"
            for text, total, fits in knobs(setup, gpu_memory)
        ]
    if not turns:
        return f"{head}: {where}; nothing left to turn in the recipe: a larger GPU or more of them"
    return f"{head}: {where}; turn " + "; then ".join(turns)


@command_main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m diaforge.train.plan", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "recipe", help="a recipe YAML (one of recipes/: its registry entry names the accelerate config)"
    )
    p.add_argument("--gpus", type=int, help="GPUs (default: num_processes of the accelerate config)")
    p.add_argument(
        "--accelerate-config",
        help="the accelerate config the recipe runs with (default: the recipe's in recipes/registry.yaml)",
    )
    p.add_argument(
        "--base-model",
        help="the base model to size (default: the recipe's; a DPO recipe's from the registry)",
    )
    p.add_argument(
        "--gpu-memory", type=float, default=79.6, help="GiB of one GPU (default 79.6: an H100 80 GB)"
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    r = report(
        args.recipe,
        args.gpus,
        args.gpu_memory,
        accelerate_config=args.accelerate_config,
        base_model=args.base_model,
    )
    print(json.dumps(r, indent=2) if args.json else format_report(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
