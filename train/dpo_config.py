"""The DPO stage's recipe: our fields (`DpoArguments`) beside TRL's `DPOConfig` and `ModelConfig`.

A DPO recipe is a flat YAML mapping like an SFT recipe (train/config.py), parsed by the same
`parse_recipe` with this stage's three dataclasses, so a mistake is the same one line. What differs:

* ``model_name_or_path`` names the folder of an SFT run of ``train/sft.py``: a LoRA adapter (with
  ``adapter_config.json``) or a fully fine-tuned model. Its ``prompt_format.json`` is required:
  the pairs are rendered in the format the SFT model was trained in, and the DPO model is saved
  with the same file, so evaluation prompts it the same way.
* ``pairs_path`` names the ``pairs.jsonl`` file(s) written by ``diaforge data pairs`` (turns, not
  text: `diaforge.format.preference`).
* ``shared_prompt: true`` reads each pair as one row, the prompt once and the chosen and rejected
  continuations as two branches under a tree mask (train/dpo_shared.py): the same loss as TRL's
  two sequences per pair, with the prompt read once instead of twice. Default false.
* TRL's ``precompute_ref_log_probs`` defaults to true here (`DPO_DEFAULTS`): the reference model's
  log-probabilities of every pair are computed once, before the first step, and the reference is
  not kept beside the policy.

A recipe is told from an SFT recipe by its ``pairs_path`` key (`diaforge.train.config.is_dpo_recipe`),
which is how ``diaforge train RECIPE.yaml`` picks the script.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.train.config import (
    PAPER_DEFAULTS,
    RecipeError,
    parse_recipe,
    resolve_path,
    split_recipe_argv,
)

DPO_DEFAULTS: dict[str, Any] = {
    "precompute_ref_log_probs": True,  # the reference's log-probs once, before training
    "beta": 0.1,
    "learning_rate": 5e-6,
    "lr_scheduler_type": "cosine",
    "optim": "adamw_torch",
    "num_train_epochs": 1.0,
    "per_device_train_batch_size": 1,
    "logging_steps": 10,
}
"""TRL's keys whose default the DPO stage sets (a recipe states them too)."""


@dataclass
class DpoArguments:
    """Data, run management and W&B fields of a DPO recipe (TRL's `DPOConfig` and `ModelConfig`
    hold the rest)."""

    pairs_path: list[str] = field(
        default_factory=list,
        metadata={
            "help": "pairs.jsonl file(s) written by `diaforge data pairs` (one or a list). Required. Rendered "
            "in the prompt format of the SFT checkpoint (its prompt_format.json)."
        },
    )
    eval_pairs_path: list[str] | None = field(
        default=None,
        metadata={"help": "Optional held-out pairs.jsonl file(s), used when `eval_strategy` is not 'no'."},
    )
    max_pairs: int | None = field(
        default=None,
        metadata={
            "help": "Use only the first N pairs of the training files (quick runs). Default None: all."
        },
    )
    pair_kinds: list[str] | None = field(
        default=None,
        metadata={
            "help": "Train only on pairs of these kinds (diaforge.data_gen.pairs.KINDS, e.g. [premature_call, "
            "near_duplicate]). Default None: every kind in the files."
        },
    )
    shared_prompt: bool = field(
        default=False,
        metadata={
            "help": "Read each pair as one row: the prompt once, the chosen and the rejected continuation as "
            "two branches that each see the prompt and themselves (train/dpo_shared.py). Same loss as TRL's "
            "two sequences per pair, fewer tokens. Needs sdpa or eager attention. Default False."
        },
    )
    resume: bool = field(
        default=True,
        metadata={
            "help": "Default True: resume from the last checkpoint-* of `output_dir`. False: start afresh."
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Delete existing checkpoint-* folders of `output_dir` before training."},
    )
    wandb_project: str | None = field(default=None, metadata={"help": "W&B project (WANDB_PROJECT)."})
    wandb_entity: str | None = field(default=None, metadata={"help": "W&B entity (team or user)."})
    wandb_tags: list[str] | None = field(default=None, metadata={"help": "W&B run tags."})

    def __post_init__(self) -> None:
        for name in ("pairs_path", "eval_pairs_path", "pair_kinds"):
            if isinstance(getattr(self, name), str):
                setattr(self, name, [getattr(self, name)])
        if isinstance(self.wandb_tags, str):
            self.wandb_tags = [t.strip() for t in self.wandb_tags.split(",") if t.strip()]
        if self.max_pairs is not None and int(self.max_pairs) < 1:
            raise RecipeError(f"max_pairs must be a positive integer, got {self.max_pairs!r}")


def dpo_dataclasses() -> tuple[type, type, type]:
    from trl import DPOConfig, ModelConfig

    return (DpoArguments, DPOConfig, ModelConfig)


def dpo_device_defaults(on_gpu: bool) -> dict[str, Any]:
    """`DPO_DEFAULTS`, then the machine's: bf16 and gradient checkpointing on a GPU, fp32 on a CPU."""
    lora = {k: v for k, v in PAPER_DEFAULTS.items() if k.startswith(("lora_", "use_peft"))}
    if on_gpu:
        return {**lora, **DPO_DEFAULTS, "bf16": True, "dtype": "bfloat16", "gradient_checkpointing": True}
    return {
        **lora,
        **DPO_DEFAULTS,
        "bf16": False,
        "dtype": "float32",
        "gradient_checkpointing": False,
        "use_cpu": True,
    }


def parse_dpo_recipe(argv: Sequence[str], *, device_defaults: dict[str, Any] | None = None):
    """`(DpoArguments, DPOConfig, ModelConfig, explicit_keys)` of ``RECIPE.yaml [--key value ...]``;
    relative pair files are found as the SFT stage finds its dataset (`resolve_path`)."""
    args, training_args, model_args, explicit = parse_recipe(
        argv, device_defaults=device_defaults, classes=dpo_dataclasses()
    )
    recipe = split_recipe_argv(argv)[0]
    if recipe:
        folder = Path(recipe).parent
        args.pairs_path = [resolve_path(p, folder) for p in args.pairs_path]
        args.eval_pairs_path = [resolve_path(p, folder) for p in args.eval_pairs_path or []] or None
    return args, training_args, model_args, explicit


def sft_checkpoint(path: str | None, *, where: str) -> tuple[Path, str | None]:
    """The SFT run folder named by ``model_name_or_path`` and, when it holds a LoRA adapter, the
    base model the adapter belongs to (None for a full model). `RecipeError` with one line when the
    folder is missing, is no SFT run (no ``prompt_format.json``) or holds neither."""
    from diaforge.format import PROMPT_FORMAT_FILE

    folder = Path(str(path or "")).expanduser()
    if not path or not folder.is_dir():
        raise RecipeError(
            f"{where}: model_name_or_path: {path or '(not set)'}: no such folder; name the output_dir of an SFT "
            "run (train/sft.py)"
        )
    if not (folder / PROMPT_FORMAT_FILE).is_file():
        raise RecipeError(
            f"{where}: model_name_or_path: {path}: no {PROMPT_FORMAT_FILE}; the DPO stage starts from an SFT "
            "run of train/sft.py, which writes it"
        )
    if (folder / "config.json").is_file():
        return folder, None
    adapter = folder / "adapter_config.json"
    if not adapter.is_file():
        raise RecipeError(
            f"{where}: model_name_or_path: {path}: holds neither a model (config.json) nor a LoRA adapter "
            "(adapter_config.json)"
        )
    try:
        base = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        base = None
    if not base:
        raise RecipeError(f"{where}: {adapter}: no base_model_name_or_path")
    return folder, str(base)


def check_dpo_recipe(args: Any, training_args: Any, model_args: Any, *, where: str) -> None:
    """What a DPO run needs before it starts: pair files that exist, an SFT run folder to start
    from, kinds that exist and an output folder that can be written."""
    import os

    from diaforge.errors import InputError
    from diaforge.hygiene import check_output_dir

    if not args.pairs_path:
        raise RecipeError(f"{where}: pairs_path is not set (the pairs.jsonl of `diaforge data pairs`)")
    for key in ("pairs_path", "eval_pairs_path"):
        for path in getattr(args, key) or []:
            found = Path(path).expanduser()
            if found.is_dir():
                raise RecipeError(f"{where}: {key}: {path}: is a folder; name the pairs.jsonl in it")
            if not found.is_file():
                raise RecipeError(f"{where}: {key}: {path}: file not found")
    if args.pair_kinds:
        from diaforge.format import PAIR_KINDS

        for kind in args.pair_kinds:
            if kind not in PAIR_KINDS:
                raise RecipeError(
                    f"{where}: pair_kinds: unknown kind {kind!r} (one of {', '.join(PAIR_KINDS)})"
                )
    attn = str(getattr(model_args, "attn_implementation", None) or "")
    if args.shared_prompt and ("flash" in attn or "flex" in attn):
        raise RecipeError(
            f"{where}: shared_prompt: true needs attn_implementation sdpa or eager (its tree mask is a dense "
            f"4D mask), not {attn}"
        )
    sft_checkpoint(model_args.model_name_or_path, where=where)
    try:
        if os.environ.get("RANK", "0") == "0":
            check_output_dir(training_args.output_dir, field="output_dir")
    except InputError as exc:
        raise RecipeError(f"{where}: {exc}") from None
