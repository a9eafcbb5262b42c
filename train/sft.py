"""LoRA / QLoRA supervised fine-tuning on turn-sliced DiaFORGE dialogues.

    python -m diaforge.train.launch [--config_file accelerate_configs/X.yaml] train/sft.py RECIPE.yaml [--key value ...]

Steps, top to bottom (`run`, one call each): parse the recipe, prepare the output folder, load the
dialogues, load the tokenizer, slice the turns, load the model, build the trainer, train, save. The
recipe's `slicing` is one row-layout object chosen once (train/row_layout.py), which supplies the
rows, the collator and the trainer class. A recipe is a flat YAML mapping of `DiaforgeArguments`
(train/recipe_fields.py), TRL `SFTConfig` and `ModelConfig` keys; see `recipes/` and `--help`. Mistakes in the recipe, the data or the model path stop the run with one line and exit
code 2 (set DIAFORGE_DEBUG=1 for the traceback); running out of GPU memory is one line naming
what to turn, from the memory planner (train/plan.py), and exit code 3. `python -m diaforge.train.launch` is `accelerate launch`
with the recipe checked before any process starts and this exit code passed through; plain
`accelerate launch` works too, but wraps any failure in a traceback of its own and exit code 1.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.console import emit, results_only_on_stdout
from diaforge.errors import command_main
from diaforge.format import attach_response_template
from diaforge.schema import load_dialogues
from diaforge.train.config import device_defaults, parse_recipe, resolved_recipe, split_recipe_argv
from diaforge.train.dagger import mix_dagger
from diaforge.train.modeling import (
    is_tiny,
    load_model,
    load_tokenizer,
    resolve_model_path,
)
from diaforge.train.recipe_checks import check_recipe
from diaforge.train.recipe_help import help_requested
from diaforge.train.row_layout import RowLayout, row_layout
from diaforge.train.slicing import (
    SliceConfig,
    TurnSlicer,
    check_training_dialogues,
    dialogue_texts,
)
from diaforge.train.tracking import (
    closing_wandb_run,
    configure_wandb,
    data_fingerprint,
    log_model_artifact,
    resume_checkpoint,
    run_callback,
    wandb_run_config,
    write_run_files,
)

if TYPE_CHECKING:  # annotations only: `--help` must answer before torch, TRL or datasets load
    from datasets import Dataset
    from transformers import PreTrainedModel, PreTrainedTokenizerBase, Trainer, TrainingArguments
    from trl import ModelConfig, SFTConfig, SFTTrainer

    from diaforge.schema import Dialogue
    from diaforge.train.dpo_config import DpoArguments
    from diaforge.train.recipe_fields import DiaforgeArguments
    from diaforge.train.slicing import SliceStats

logger = logging.getLogger("diaforge.sft")


@dataclass
class SlicedData:
    """The training data as the trainer takes it, and what it was made of."""

    slice_config: SliceConfig
    samples: list[dict[str, Any]]
    stats: SliceStats  # of the training samples
    train_dataset: Dataset
    eval_dataset: Dataset | None


# --------------------------------------------------------------------------------------------
# The script
# --------------------------------------------------------------------------------------------


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Train on a recipe (``RECIPE.yaml [--key value ...]``); returns the run summary."""
    args, training_args, model_args, on_gpu = parse(argv)
    layout = row_layout(args.slicing, args.loss_positions, args.focal_gamma, share_listing=args.share_listing)
    layout.configure_model(model_args)
    main_process = setup_logging(training_args)
    output_dir, resume_from = prepare_output_dir(args, training_args, main_process)
    dialogues, eval_dialogues = load_data(args, seed=training_args.seed)
    model_path, tokenizer = load_model_tokenizer(model_args, training_args, output_dir, dialogues)
    data = slice_data(args, training_args, tokenizer, layout, dialogues, eval_dialogues)
    # Saved with the tokenizer (run folder and every checkpoint): stock engines parse the model.
    attach_response_template(tokenizer, data.slice_config.prompt_format)
    fingerprint = record_run(
        args, training_args, model_args, data, layout, tokenizer, model_path, resume_from
    )
    model = load_model(model_path, model_args, training_args, on_gpu=on_gpu)
    trainer = build_trainer(args, training_args, model_args, model, tokenizer, data, layout, fingerprint)
    train(trainer, resume_from)
    return save(trainer, tokenizer, output_dir, data, layout, main_process)


# 1. Parse and check the recipe (YAML + command-line overrides) before the trainer is imported and
# anything is read or written: a mistake stops the run with nothing touched.
def parse(argv: list[str] | None) -> tuple[DiaforgeArguments, SFTConfig, ModelConfig, bool]:
    """The three argument dataclasses and whether training runs on a CUDA GPU."""
    import torch

    on_gpu = torch.cuda.is_available()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, training_args, model_args, _ = parse_recipe(argv, device_defaults=device_defaults(on_gpu))
    check_recipe(args, training_args, model_args, where=split_recipe_argv(argv)[0] or "command line")
    on_gpu = on_gpu and not training_args.use_cpu
    if not on_gpu and (training_args.bf16 or training_args.fp16):
        logger.info("no CUDA GPU: training in fp32 (bf16/fp16 turned off)")
        training_args.bf16 = training_args.fp16 = False
    return args, training_args, model_args, on_gpu


def setup_logging(training_args: TrainingArguments) -> bool:
    """Our lines on the main process, warnings only elsewhere; whether this is the main process."""
    from transformers.utils import logging as hf_logging

    main_process = training_args.process_index == 0
    logging.basicConfig(
        format="[diaforge] %(message)s", level=logging.INFO if main_process else logging.WARNING, force=True
    )
    hf_logging.set_verbosity_warning()
    return main_process


# 2. Output folder: resume from the last checkpoint, or start afresh.
def prepare_output_dir(
    args: DiaforgeArguments | DpoArguments, training_args: TrainingArguments, main_process: bool
) -> tuple[Path, str | None]:
    """The absolute output folder and the checkpoint to resume from (None: a fresh start)."""
    output_dir = Path(training_args.output_dir).expanduser().resolve()
    training_args.output_dir = str(output_dir)
    resume_from = resume_checkpoint(args, training_args, output_dir, main_process=main_process)
    if "wandb" in (training_args.report_to or []):
        configure_wandb(args, output_dir)
        # TrainingArguments.project (read by Trackio) lands in the W&B config: make it the W&B project.
        training_args.project = os.environ.get("WANDB_PROJECT", training_args.project)
    return output_dir, resume_from


# 3. Data: validated dialogues (a bad line is one InputError naming file, line and field).
def load_data(args: DiaforgeArguments, *, seed: int = 0) -> tuple[list[Dialogue], list[Dialogue]]:
    """The training dialogues (the first `max_dialogues`, then the DAgger states mixed in at
    `dagger_share`, drawn with `seed`: `diaforge.train.dagger`) and the evaluation dialogues."""
    dialogues = [
        d for path in args.dataset_path for d in check_training_dialogues(load_dialogues(path), path)
    ]
    if args.max_dialogues:
        dialogues = dialogues[: args.max_dialogues]
    if args.dagger_dataset_path:  # DAgger: the visited states with the teacher's moves, mixed in
        states = [
            d
            for path in args.dagger_dataset_path
            for d in check_training_dialogues(load_dialogues(path), path)
        ]
        dialogues, mix = mix_dagger(dialogues, states, args.dagger_share, seed=seed)
        logger.info("DAgger mix: %s", mix)
    eval_dialogues = [
        d
        for path in args.eval_dataset_path or []
        for d in check_training_dialogues(load_dialogues(path), path)
    ]
    return dialogues, eval_dialogues


# 4. Tokenizer (a tiny:// model is built now, on the main process first).
def load_model_tokenizer(
    model_args: ModelConfig, training_args: SFTConfig, output_dir: Path, dialogues: list[Dialogue]
) -> tuple[str, PreTrainedTokenizerBase]:
    """The resolved model path (absolute for a local folder: the adapter records where its base
    is) and its tokenizer."""
    with training_args.main_process_first(desc="resolve the model"):
        model_path = resolve_model_path(
            model_args.model_name_or_path,
            output_dir=output_dir,
            texts=dialogue_texts(dialogues) if is_tiny(model_args.model_name_or_path) else (),
            seed=training_args.seed,
            revision=model_args.model_revision,
        )
    if Path(model_path).expanduser().is_dir():
        model_path = str(Path(model_path).expanduser().resolve())
    tokenizer = load_tokenizer(
        model_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        chat_template_path=training_args.chat_template_path,
    )
    return model_path, tokenizer


# 5. Turn slicing: pre-tokenized input_ids and labels (-100 outside the target turn), laid out in
# rows by the recipe's `slicing` (train/row_layout.py).
def slice_data(
    args: DiaforgeArguments,
    training_args: SFTConfig,
    tokenizer: PreTrainedTokenizerBase,
    layout: RowLayout,
    dialogues: list[Dialogue],
    eval_dialogues: list[Dialogue],
) -> SlicedData:
    """Slice the dialogues' assistant turns and lay the samples out as the trainer's datasets."""
    slice_config = SliceConfig.from_args(args, max_length=training_args.max_length)
    slicer = TurnSlicer(tokenizer, slice_config)
    progress = training_args.process_index == 0 and not training_args.disable_tqdm
    samples, stats = slicer.slice_all(dialogues, progress=progress)
    logger.info("training data: %s", stats.summary())
    eval_samples = []
    if eval_dialogues:
        eval_samples, eval_stats = slicer.slice_all(eval_dialogues, progress=progress)
        logger.info("evaluation data: %s", eval_stats.summary())
    if args.share_listing:
        from diaforge.train.prefix_shared import tag_listings

        tag_listings(samples, dialogues)
        tag_listings(eval_samples, eval_dialogues or [])
    train_dataset, eval_dataset = layout.datasets(samples, eval_samples, training_args)
    return SlicedData(slice_config, samples, stats, train_dataset, eval_dataset)


def record_run(
    args: DiaforgeArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    data: SlicedData,
    layout: RowLayout,
    tokenizer: PreTrainedTokenizerBase,
    model_path: str,
    resume_from: str | None,
) -> dict[str, Any]:
    """The data fingerprint; the main process writes it with the resolved recipe and
    prompt_format.json (evaluation prompts the model exactly as it was trained)."""
    fingerprint = data_fingerprint(args, data.slice_config, tokenizer, data.samples)
    fingerprint["stats"] = data.stats.as_dict()
    fingerprint.update(layout.record())
    if training_args.process_index == 0:
        write_run_files(
            Path(training_args.output_dir),
            fingerprint,
            resolved_recipe(args, training_args, model_args),
            model_path,
            resume_from,
            data.slice_config.prompt_format,
        )
    return fingerprint


# 6. Model: the base in bf16 on GPU (fp32 on CPU), or 8-bit / 4-bit through bitsandbytes
# (train/modeling.py: load_model).


# 7. Trainer: the dataset is used as it is (no re-tokenization, no truncation); with packing, TRL
# packs the pre-tokenized rows and keeps their labels. The layout supplies the trainer class and
# its collator.
def build_trainer(
    args: DiaforgeArguments,
    training_args: SFTConfig,
    model_args: ModelConfig,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    data: SlicedData,
    layout: RowLayout,
    fingerprint: dict[str, Any],
) -> SFTTrainer:
    """The trainer, with the callback that records the run in W&B and in every checkpoint."""
    from trl import get_peft_config

    trainer_class, extra = layout.trainer(training_args, tokenizer, model)
    if not training_args.packing:
        training_args.dataset_kwargs = {**(training_args.dataset_kwargs or {}), "skip_prepare_dataset": True}
    prompt_format = data.slice_config.prompt_format
    callback = run_callback(
        Path(training_args.output_dir),
        prompt_format,
        wandb_run_config(args, prompt_format, fingerprint, data.stats.as_dict()),
    )
    return trainer_class(
        model=model,
        args=training_args,
        train_dataset=data.train_dataset,
        eval_dataset=data.eval_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=[callback],
        **extra,
    )


# 8. Train.
def train(trainer: Trainer, resume_from: str | None) -> None:
    """Train (resuming from `resume_from` when set) and save the metrics and trainer state."""
    if resume_from:
        logger.info("resuming from checkpoint %s", resume_from)
    result = trainer.train(resume_from_checkpoint=resume_from)
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()


# 9. Save the adapter (or full model) and the tokenizer with its chat template and the response
# template of the prompt format (diaforge/format/response_template.py); with W&B, log the folder
# as a model artifact.
def save(
    trainer: SFTTrainer,
    tokenizer: PreTrainedTokenizerBase,
    output_dir: Path,
    data: SlicedData,
    layout: RowLayout,
    main_process: bool,
) -> dict[str, Any]:
    """Save the model and tokenizer; returns (and writes, as train_summary.json, for reports such
    as `diaforge demo-curve`) what was trained on. The Trainer turns the KV cache off in the
    model's config for training (`TrainingArguments.use_cache`, default False); it is turned back on
    before saving, or a fully fine-tuned model would generate without a cache wherever its config
    is read (about three times slower in the demo's static evaluation)."""
    config = getattr(trainer.accelerator.unwrap_model(trainer.model), "config", None)
    if config is not None:
        config.use_cache = True
    trainer.save_model(str(output_dir))
    if main_process:
        tokenizer.save_pretrained(str(output_dir))
        logger.info("saved to %s (global step %d)", output_dir, trainer.state.global_step)
    ended = next((h for h in reversed(trainer.state.log_history) if "train_loss" in h), {})
    summary = {
        "output_dir": str(output_dir),
        "global_step": trainer.state.global_step,
        "train_loss": ended.get("train_loss"),
        "train_runtime": ended.get("train_runtime"),
        "stats": data.stats.as_dict(),
        **layout.record(),
    }
    if main_process:
        (output_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        log_model_artifact(output_dir, trainer.state.global_step)
    return summary


@command_main
def main(argv: list[str] | None = None) -> int:
    """Run `run` as a script: ``--help`` at once, one line and exit code 2 for a mistake, 3 for
    running out of GPU memory, the result line on stdout."""
    argv = list(sys.argv[1:] if argv is None else argv)
    text = help_requested(argv)
    if text is not None:  # before torch or TRL is imported: at once
        print(text, end="")
        return 0
    try:
        # Results alone on stdout: the trainer's loss logs and metrics, and the lines libraries
        # print on their own, go to stderr; the W&B run is finished before the process exits.
        with results_only_on_stdout(), closing_wandb_run():
            summary = run(argv)
    except RuntimeError as exc:  # torch.OutOfMemoryError is one: name the knob, not a traceback
        from diaforge.train.plan import is_out_of_memory, out_of_memory_line

        if os.environ.get("DIAFORGE_DEBUG") or not is_out_of_memory(exc):
            raise
        print(out_of_memory_line(argv), file=sys.stderr)
        return 3
    if os.environ.get("RANK", "0") == "0":
        emit(result_line(summary))
    return 0


def result_line(summary: dict[str, Any]) -> str:
    """The one line training prints on stdout: where the model is, its step, loss and time."""
    loss, runtime = summary.get("train_loss"), summary.get("train_runtime")
    return (
        f"trained {summary['output_dir']}: global step {summary['global_step']}"
        + (f", train loss {loss:.4f}" if isinstance(loss, (int, float)) else "")
        + (f", {runtime:.1f} s" if isinstance(runtime, (int, float)) else "")
    )


if __name__ == "__main__":
    from diaforge.console import run_main

    run_main(main)
