"""Preference training (DPO) after SFT, on the pairs of ``diaforge data pairs``, with TRL's `DPOTrainer`.

    python -m diaforge.train.launch [--config_file accelerate_configs/X.yaml] train/dpo.py RECIPE.yaml [--key value ...]
    diaforge train [accelerate launch options] RECIPE.yaml      (a recipe with pairs_path runs this script)
    accelerate launch [options] train/dpo.py RECIPE.yaml

Steps (`run`, one call each): parse the recipe (train/dpo_config.py), prepare the output folder
(resume or start afresh, W&B offline without a key: as train/sft.py), read the SFT run's
``prompt_format.json`` and tokenizer, render the pairs in that format (TRL's conversational
preference rows: `diaforge.format.preference`), load the SFT model, build the trainer, train, save.

Where the policy and the reference come from (``model_name_or_path``, the SFT run folder):

* a **LoRA adapter** with ``use_peft: true`` (the default): the base model with the SFT adapter,
  trainable. TRL keeps a frozen copy of it as the ``ref`` adapter, so the reference is the SFT
  model (not the bare base); the copy is dropped before the adapter is saved.
* a LoRA adapter with ``use_peft: false``: the adapter is merged into the base and the merged model
  is trained in full (not with an 8-bit or 4-bit base).
* a **full model** with ``use_peft: true``: a new LoRA adapter (the recipe's ``lora_*``) on it; the
  reference is the model with the adapter off. With ``use_peft: false``: full training.

``precompute_ref_log_probs`` (true by default in this stage) computes the reference's
log-probabilities of every chosen and rejected continuation once, before the first step; in full
training no reference copy is kept. With ``shared_prompt: true`` the trainer is
`diaforge.train.dpo_shared.shared_prompt_trainer_class`: each pair is one row, its prompt read once. The DPO model is saved with the SFT run's ``prompt_format.json``,
so ``eval run`` prompts it as the SFT model was prompted. Mistakes stop the run with one line and
exit code 2, as in train/sft.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.console import emit, results_only_on_stdout
from diaforge.errors import InputError, command_main
from diaforge.format import PromptFormat, attach_response_template, load_pair_records, preference_rows
from diaforge.hygiene import sha256_file
from diaforge.train.config import resolved_recipe, split_recipe_argv
from diaforge.train.dpo_config import (
    check_dpo_recipe,
    dpo_device_defaults,
    parse_dpo_recipe,
    sft_checkpoint,
)
from diaforge.train.modeling import ModelPathError, load_model, load_tokenizer
from diaforge.train.sft import prepare_output_dir, result_line, setup_logging, train
from diaforge.train.tracking import closing_wandb_run, log_model_artifact, run_callback, write_run_files

if TYPE_CHECKING:  # annotations only: `--help` must answer before torch, TRL or datasets load
    from datasets import Dataset
    from peft import PeftConfig, PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, TrainingArguments
    from trl import DPOConfig, DPOTrainer, ModelConfig

    from diaforge.train.dpo_config import DpoArguments

logger = logging.getLogger("diaforge.dpo")

ROW_COLUMNS = ("prompt", "chosen", "rejected", "tools")
"""The columns the trainer gets (ids and kinds stay in the pair files)."""
ROWS_FOLDER = "dpo_rows"
"""The output folder's copy of the rendered rows as a `datasets` folder (`file_backed`)."""


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Train on a DPO recipe (``RECIPE.yaml [--key value ...]``); returns the run summary."""
    args, training_args, model_args, on_gpu = parse(argv)
    main_process = setup_logging(training_args)
    output_dir, resume_from = prepare_output_dir(args, training_args, main_process)
    folder, base = sft_checkpoint(model_args.model_name_or_path, where="model_name_or_path")
    fmt = PromptFormat.load(folder)
    tokenizer = load_tokenizer(
        str(folder),
        trust_remote_code=training_args.trust_remote_code,
        chat_template_path=getattr(training_args, "chat_template_path", None),
    )
    attach_response_template(tokenizer, fmt)  # saved with the tokenizer: stock engines parse the model
    train_rows, eval_rows, counts = load_rows(args, fmt)
    fingerprint = record_run(
        args, training_args, model_args, folder, base, fmt, train_rows, counts, resume_from
    )
    model, peft_config = load_policy(folder, base, model_args, training_args, on_gpu=on_gpu)
    trainer = build_trainer(
        training_args,
        model,
        peft_config,
        tokenizer,
        train_rows,
        eval_rows,
        fmt,
        fingerprint,
        shared_prompt=args.shared_prompt,
    )
    train(trainer, resume_from)
    return save(trainer, tokenizer, output_dir, fmt, counts, main_process)


def parse(argv: list[str] | None) -> tuple[DpoArguments, DPOConfig, ModelConfig, bool]:
    """The recipe's three dataclasses, checked, and whether training runs on a CUDA GPU."""
    import torch

    on_gpu = torch.cuda.is_available()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, training_args, model_args, _ = parse_dpo_recipe(argv, device_defaults=dpo_device_defaults(on_gpu))
    check_dpo_recipe(args, training_args, model_args, where=split_recipe_argv(argv)[0] or "command line")
    on_gpu = on_gpu and not training_args.use_cpu
    if not on_gpu and (training_args.bf16 or training_args.fp16):
        training_args.bf16 = training_args.fp16 = False
    return args, training_args, model_args, on_gpu


def load_rows(args: DpoArguments, fmt: PromptFormat) -> tuple[list[dict], list[dict], dict[str, int]]:
    """The training and evaluation rows rendered in `fmt`, and the training pairs per kind."""

    def read(paths: list[str] | None, limit: int | None) -> list[dict[str, Any]]:
        records = [r for p in paths or [] for r in load_pair_records(p)]
        if args.pair_kinds:
            records = [r for r in records if r["kind"] in args.pair_kinds]
        return records[:limit] if limit else records

    records = read(args.pairs_path, args.max_pairs)
    if not records:
        raise InputError("no pairs to train on (check pair_kinds and max_pairs)", path=args.pairs_path[0])
    eval_records = read(args.eval_pairs_path, None)
    counts = dict(Counter(r["kind"] for r in records))

    def rows(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{k: row[k] for k in ROW_COLUMNS if k in row} for row in preference_rows(recs, fmt)]

    logger.info("training pairs: %d (%s)", len(records), ", ".join(f"{k} {n}" for k, n in counts.items()))
    return rows(records), rows(eval_records), counts


def record_run(
    args: DpoArguments,
    training_args: DPOConfig,
    model_args: ModelConfig,
    folder: Path,
    base: str | None,
    fmt: PromptFormat,
    rows: list[dict[str, Any]],
    counts: dict[str, int],
    resume_from: str | None,
) -> dict[str, Any]:
    """The data fingerprint (pair files, rows, SFT checkpoint); the main process writes it with the
    resolved recipe and the SFT run's prompt_format.json."""
    body = {
        "stage": "dpo",
        "pairs_files": [{"path": str(p), "sha256": sha256_file(p)} for p in args.pairs_path],
        "pairs": len(rows),
        "pairs_by_kind": counts,
        "rows_sha256": hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest(),
        "sft_checkpoint": str(folder.resolve()),
        "sft_base": base,
        "system_prompt_sha256": fmt.system_prompt_sha256,
    }
    canonical = json.dumps(
        {k: v for k, v in body.items() if k != "sft_checkpoint"}, sort_keys=True, default=str
    )
    fingerprint = {"fingerprint": hashlib.sha256(canonical.encode()).hexdigest(), **body}
    if training_args.process_index == 0:
        recipe = resolved_recipe(args, training_args, model_args)
        write_run_files(
            Path(training_args.output_dir), fingerprint, recipe, str(folder.resolve()), resume_from, fmt
        )
    return fingerprint


def load_policy(
    folder: Path, base: str | None, model_args: ModelConfig, training_args: DPOConfig, *, on_gpu: bool
) -> tuple[PreTrainedModel | PeftModel, PeftConfig | None]:
    """The model to train and the `peft_config` to give the trainer (module docstring)."""
    from trl import get_peft_config

    if base is None:
        model = load_model(str(folder), model_args, training_args, on_gpu=on_gpu)
        return model, (get_peft_config(model_args) if model_args.use_peft else None)
    from peft import PeftModel

    model = load_model(base, model_args, training_args, on_gpu=on_gpu)
    if model_args.use_peft:
        logger.info(
            "continuing the SFT adapter %s (its LoRA settings; the recipe's lora_* are unused)", folder
        )
        return PeftModel.from_pretrained(model, str(folder), is_trainable=True), None
    if model_args.load_in_8bit or model_args.load_in_4bit:
        raise ModelPathError(
            "use_peft: false merges the SFT adapter into its base: load the base unquantised"
        )
    logger.info("merging the SFT adapter %s into its base for full training", folder)
    merged = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    merged.requires_grad_(True)  # loading an adapter froze the base's weights
    return merged, None


def build_trainer(
    training_args: DPOConfig,
    model: PreTrainedModel | PeftModel,
    peft_config: PeftConfig | None,
    tokenizer: PreTrainedTokenizerBase,
    train_rows: list[dict[str, Any]],
    eval_rows: list[dict[str, Any]],
    fmt: PromptFormat,
    fingerprint: dict[str, Any],
    *,
    shared_prompt: bool = False,
) -> DPOTrainer:
    """TRL's `DPOTrainer` on the rows (with `shared_prompt`, its subclass that reads each pair as
    one row: train/dpo_shared.py), with the callback that writes prompt_format.json into every
    checkpoint and records the run in W&B."""
    from trl import DPOTrainer

    from diaforge.train.dpo_shared import shared_prompt_trainer_class

    wandb_config = {
        "stage": "dpo",
        **{
            k: getattr(fmt, k) for k in ("prompt_mode", "tool_style", "history_reasoning", "target_reasoning")
        },
        "system_prompt_sha256": fmt.system_prompt_sha256,
        "sft_checkpoint": fingerprint["sft_checkpoint"],
        "data_fingerprint": fingerprint["fingerprint"],
        "diaforge/data": {"pairs": fingerprint["pairs"], **fingerprint["pairs_by_kind"]},
        "shared_prompt": shared_prompt,
    }
    callback = run_callback(Path(training_args.output_dir), fmt, wandb_config)
    folder = Path(training_args.output_dir) / ROWS_FOLDER
    trainer_class = shared_prompt_trainer_class() if shared_prompt else DPOTrainer
    if shared_prompt:
        logger.info("shared-prompt rows: each pair's prompt read once, chosen and rejected as two branches")
    return trainer_class(
        model=model,
        args=training_args,
        train_dataset=file_backed(train_rows, folder / "train", training_args),
        eval_dataset=file_backed(eval_rows, folder / "eval", training_args) if eval_rows else None,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[callback],
    )


def file_backed(rows: list[dict[str, Any]], folder: Path, training_args: TrainingArguments) -> Dataset:
    """The rows as a dataset saved in `folder` (by the first process of each machine) and read back
    by every process. TRL caches the precomputed reference log-probs beside the dataset's files
    and every process reads rank 0's cache: an in-memory dataset would put it in a temporary folder
    of each process's own, where the others cannot find it."""
    import datasets

    with training_args.main_process_first(desc="the pairs dataset"):
        if training_args.local_process_index == 0:
            datasets.Dataset.from_list(rows).save_to_disk(str(folder))
        return datasets.load_from_disk(str(folder))


def save(
    trainer: DPOTrainer,
    tokenizer: PreTrainedTokenizerBase,
    output_dir: Path,
    fmt: PromptFormat,
    counts: dict[str, int],
    main_process: bool,
) -> dict[str, Any]:
    """Save the adapter (without TRL's ``ref`` copy) or the model, the tokenizer and the SFT run's
    prompt_format.json; returns (and writes, as train_summary.json) what was trained on."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if "ref" in (getattr(model, "peft_config", None) or {}):
        model.delete_adapter("ref")
    config = getattr(model, "config", None)
    if config is not None:
        config.use_cache = True
    trainer.save_model(str(output_dir))
    ended = next((h for h in reversed(trainer.state.log_history) if "train_loss" in h), {})
    summary = {
        "stage": "dpo",
        "output_dir": str(output_dir),
        "global_step": trainer.state.global_step,
        "train_loss": ended.get("train_loss"),
        "train_runtime": ended.get("train_runtime"),
        "pairs_by_kind": counts,
    }
    if main_process:
        tokenizer.save_pretrained(str(output_dir))
        fmt.save(output_dir)
        (output_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        log_model_artifact(output_dir, trainer.state.global_step)
        logger.info("saved to %s (global step %d)", output_dir, trainer.state.global_step)
    return summary


@command_main
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if any(flag in argv for flag in ("-h", "--help")):
        print(
            __doc__.strip()
            + "\n\nRecipe keys: train/dpo_config.py (DpoArguments), TRL's DPOConfig and ModelConfig."
        )
        return 0
    with results_only_on_stdout(), closing_wandb_run():
        summary = run(argv)
    if os.environ.get("RANK", "0") == "0":
        emit(result_line(summary))
    return 0


if __name__ == "__main__":
    from diaforge.console import run_main

    run_main(main)
