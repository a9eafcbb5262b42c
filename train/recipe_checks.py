"""The checks of a parsed recipe that argparse and the dataclasses do not make.

`check_ranges` (run by `diaforge.train.config.parse_recipe` on every recipe) refuses out-of-range and
non-finite numbers of TRL's and transformers' keys, which they accept silently, and an empty or
blank `output_dir` (which would train into the working folder). `check_recipe`
(run by train/sft.py after parsing and by ``python -m diaforge.train.launch`` before any process starts)
makes the checks that need more than one key or a look at the disk: the dataset files exist, the
system prompt file reads, the output folder is writable, the model is not a LoRA adapter, and the
slicing options agree with each other and with the attention. Each mistake is one `RecipeError`
line that starts with `where` (the recipe file, or "command line").
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from diaforge.train.recipe_fields import RecipeError

#: Recipe keys that must be > 0, and those that must be >= 0 (TRL and transformers accept the
#: wrong ones silently: `num_train_epochs: -3` trains zero steps and saves an untrained adapter).
_POSITIVE = (
    "num_train_epochs",
    "learning_rate",
    "per_device_train_batch_size",
    "per_device_eval_batch_size",
    "gradient_accumulation_steps",
    "lora_r",
    "lora_alpha",
    "max_length",  # None (no limit) is allowed; -5 would slice every turn away after a model is built
    "save_steps",  # 0 would save at every step of transformers' modulo, or never
    "eval_steps",
)
_NON_NEGATIVE = (
    "warmup_ratio",
    "warmup_steps",
    "weight_decay",
    "lora_dropout",
    "max_grad_norm",
    "logging_steps",
)


def check_ranges(training_args: Any, model_args: Any, *, where: str) -> None:
    """Refuse out-of-range and non-finite numbers by key, and an empty or blank `output_dir`, one
    line each (`RecipeError`)."""
    import math

    from diaforge.hygiene import output_path_problem

    problem = output_path_problem(getattr(training_args, "output_dir", None))
    if problem is not None:
        raise RecipeError(f"{where}: output_dir {problem}")
    for obj in (training_args, model_args):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, None)
            if isinstance(value, float) and not math.isfinite(value):
                raise RecipeError(f"{where}: {f.name}: {value} is not a finite number")
    for obj in (training_args, model_args):
        for name in _POSITIVE:
            value = getattr(obj, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                raise RecipeError(f"{where}: {name} must be greater than 0, got {value}")
        for name in _NON_NEGATIVE:
            value = getattr(obj, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise RecipeError(f"{where}: {name} must be 0 or more, got {value}")
    max_steps = getattr(training_args, "max_steps", -1)
    if isinstance(max_steps, int) and max_steps == 0 or (isinstance(max_steps, int) and max_steps < -1):
        raise RecipeError(
            f"{where}: max_steps must be -1 (use num_train_epochs) or at least 1, got {max_steps}"
        )
    for name in ("lora_target_modules", "lora_modules_to_save"):
        value = getattr(model_args, name, None)
        if value is not None and not (
            isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            raise RecipeError(
                f"{where}: {name} must be a module name, a list of module names or 'all-linear', "
                f"got {value!r}"
            )
    ratio = getattr(training_args, "warmup_ratio", 0.0)
    if isinstance(ratio, float) and ratio > 1:
        raise RecipeError(f"{where}: warmup_ratio must lie in [0, 1], got {ratio}")


def check_recipe(diaforge_args: Any, training_args: Any, model_args: Any, *, where: str) -> None:
    """The checks that need more than one key or a look at the disk: dataset files that exist, no
    TRL loss masking on top of ours, and an attention that takes prefix-shared rows; `where` (the recipe file) starts the
    one-line `RecipeError`. `train/sft.py` runs them after parsing, `python -m diaforge.train.launch` before
    any process starts."""
    from diaforge.errors import InputError
    from diaforge.hygiene import check_output_dir

    if not diaforge_args.dataset_path:
        raise RecipeError(f"{where}: dataset_path is not set (the dialogue JSONL file(s) to train on)")
    for key in ("dataset_path", "eval_dataset_path", "dagger_dataset_path"):
        for path in getattr(diaforge_args, key) or []:
            found = Path(path).expanduser()
            if found.is_dir():
                raise RecipeError(
                    f"{where}: {key}: {path}: is a folder; name the dialogue JSONL file in it "
                    f"(e.g. {Path(path) / 'dialogues.jsonl'})"
                )
            if not found.exists():
                raise RecipeError(f"{where}: {key}: {path}: file not found")
            if not found.is_file():
                raise RecipeError(
                    f"{where}: {key}: {path}: is not a regular file (a device, pipe or socket); "
                    "name a dialogue JSONL file"
                )
    try:
        diaforge_args.prompt_format()  # reads system_prompt_file: a bad one stops the run here
    except InputError as exc:
        raise RecipeError(f"{where}: system_prompt_file: {exc}") from None
    try:
        if os.environ.get("RANK", "0") == "0":  # one process probes the folder, not every rank
            check_output_dir(training_args.output_dir, field="output_dir")
    except InputError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    _check_not_an_adapter(model_args.model_name_or_path, where=where)
    if training_args.assistant_only_loss:
        raise RecipeError(f"{where}: assistant_only_loss: turn slicing masks the loss itself; remove the key")
    if diaforge_args.share_listing and diaforge_args.slicing != "prefix_shared":
        raise RecipeError(
            f"{where}: share_listing needs slicing: prefix_shared (a naive row holds one sample)"
        )
    attn = model_args.attn_implementation
    if diaforge_args.slicing == "prefix_shared" and attn and attn not in ("sdpa", "eager", "flex_attention"):
        # Its rows carry a 4D attention mask: SDPA (or eager; flex gets a BlockMask) takes it,
        # flash attention cannot.
        raise RecipeError(
            f"{where}: slicing: prefix_shared needs attn_implementation sdpa, eager or flex_attention, "
            f"got {attn!r}"
        )


def _check_not_an_adapter(name: str | None, *, where: str) -> None:
    """A LoRA adapter folder given as the model to train: say which base it belongs to."""
    import json

    folder = Path(str(name or "")).expanduser()
    if not name or not folder.is_dir() or (folder / "config.json").exists():
        return
    adapter = folder / "adapter_config.json"
    if not adapter.is_file():
        return
    try:
        base = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        base = None
    to_base = f"set model_name_or_path to its base, {base}," if base else "set model_name_or_path to its base"
    raise RecipeError(
        f"{where}: model_name_or_path: {name} is a LoRA adapter, not a model; {to_base} or merge it "
        f"first (python -m diaforge.train.merge --adapter {name} --output MERGED) and train on MERGED"
    )
