"""LoRA / QLoRA supervised fine-tuning on turn-sliced DiaFORGE dialogues.

    python -m train.launch [--config_file accelerate_configs/X.yaml] train/sft.py RECIPE.yaml [--key value ...]

Steps, top to bottom: parse the recipe, prepare the output folder, load the dialogues, load the
tokenizer, slice the turns, load the model, build the trainer, train, save. A recipe is a flat YAML
mapping of `DiaforgeArguments` (train/config.py), TRL `SFTConfig` and `ModelConfig` keys; see
`recipes/`. Mistakes in the recipe, the data or the model path stop the run with one line and exit
code 2 (set DIAFORGE_DEBUG=1 for the traceback). `python -m train.launch` is `accelerate launch`
with the recipe checked before any process starts and this exit code passed through; plain
`accelerate launch` works too, but wraps any failure in a traceback of its own and exit code 1.
"""

from __future__ import annotations

import os
import sys

# `python train/sft.py` puts train/ first on sys.path: replace it by the repository root before
# anything is imported, so `train` and `data_gen` come from this checkout and no module of train/
# passes for a top-level one.
_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == _HERE:
    sys.path[0] = os.path.dirname(_HERE)

import json  # noqa: E402
import logging  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from data_gen.errors import InputError  # noqa: E402
from data_gen.schema import load_dialogues  # noqa: E402
from train.config import (  # noqa: E402
    RecipeError,
    check_recipe,
    device_defaults,
    parse_recipe,
    resolved_recipe,
    split_recipe_argv,
)
from train.modeling import (  # noqa: E402
    ModelPathError,
    is_tiny,
    load_model,
    load_tokenizer,
    resolve_model_path,
)
from train.slicing import (  # noqa: E402
    SliceConfig,
    SlicingError,
    TurnSlicer,
    check_training_dialogues,
    dialogue_texts,
    to_dataset,
)
from train.tracking import (  # noqa: E402
    configure_wandb,
    data_fingerprint,
    resume_checkpoint,
    run_callback,
    wandb_run_config,
    write_run_files,
)

logger = logging.getLogger("diaforge.sft")

# --------------------------------------------------------------------------------------------
# The script
# --------------------------------------------------------------------------------------------


def run(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    on_gpu = torch.cuda.is_available()

    # 1. Parse and check the recipe (YAML + command-line overrides) before the trainer is imported
    # and anything is read or written: a mistake stops the run with nothing touched.
    argv = list(sys.argv[1:] if argv is None else argv)
    args, training_args, model_args, _explicit = parse_recipe(argv, device_defaults=device_defaults(on_gpu))
    check_recipe(args, training_args, model_args, where=split_recipe_argv(argv)[0] or "command line")
    on_gpu = on_gpu and not training_args.use_cpu
    if not on_gpu and (training_args.bf16 or training_args.fp16):
        logger.info("no CUDA GPU: training in fp32 (bf16/fp16 turned off)")
        training_args.bf16 = training_args.fp16 = False
    prefix_shared = args.slicing == "prefix_shared"
    if prefix_shared and not model_args.attn_implementation:
        model_args.attn_implementation = "sdpa"  # its rows carry a 4D attention mask
    from transformers.utils import logging as hf_logging
    from trl import SFTTrainer, get_peft_config

    main_process = training_args.process_index == 0
    logging.basicConfig(
        format="[diaforge] %(message)s", level=logging.INFO if main_process else logging.WARNING, force=True
    )
    hf_logging.set_verbosity_warning()

    # 2. Output folder: resume from the last checkpoint, or start afresh.
    output_dir = Path(training_args.output_dir).expanduser().resolve()
    training_args.output_dir = str(output_dir)
    resume_from = resume_checkpoint(args, training_args, output_dir, main_process=main_process)
    if "wandb" in (training_args.report_to or []):
        configure_wandb(args, output_dir)

    # 3. Data: validated dialogues (a bad line is one InputError naming file, line and field).
    dialogues = [
        d for path in args.dataset_path for d in check_training_dialogues(load_dialogues(path), path)
    ]
    if args.max_dialogues:
        dialogues = dialogues[: args.max_dialogues]
    eval_dialogues = [
        d
        for path in args.eval_dataset_path or []
        for d in check_training_dialogues(load_dialogues(path), path)
    ]

    # 4. Tokenizer (a tiny:// model is built now, on the main process first).
    with training_args.main_process_first(desc="resolve the model"):
        model_path = resolve_model_path(
            model_args.model_name_or_path,
            output_dir=output_dir,
            texts=dialogue_texts(dialogues) if is_tiny(model_args.model_name_or_path) else (),
            seed=training_args.seed,
            revision=model_args.model_revision,
        )
    if Path(model_path).expanduser().is_dir():
        model_path = str(Path(model_path).expanduser().resolve())  # the adapter records where its base is
    tokenizer = load_tokenizer(
        model_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        chat_template_path=training_args.chat_template_path,
    )

    # 5. Turn slicing: pre-tokenized input_ids and labels (-100 outside the target turn); with
    # `slicing: prefix_shared`, each dialogue's samples laid out in one row (train/prefix_shared.py).
    slice_config = SliceConfig.from_args(args, max_length=training_args.max_length)
    slicer = TurnSlicer(tokenizer, slice_config)
    samples, stats = slicer.slice_all(dialogues)
    logger.info("training data: %s", stats.summary())
    eval_samples = []
    if eval_dialogues:
        eval_samples, eval_stats = slicer.slice_all(eval_dialogues)
        logger.info("evaluation data: %s", eval_stats.summary())
    if prefix_shared:
        # The same samples, each dialogue's in one row that holds their common prefixes once.
        from train.prefix_shared import build_prefix_shared

        rows, shared_stats = build_prefix_shared(
            samples, max_length=training_args.max_length, packing=training_args.packing
        )
        logger.info("training rows: %s", shared_stats.summary())
        train_dataset = to_dataset(rows)
        eval_dataset = None
        if eval_samples:
            eval_rows, _ = build_prefix_shared(
                eval_samples, max_length=training_args.max_length, packing=training_args.packing
            )
            eval_dataset = to_dataset(eval_rows)
    else:
        train_dataset = to_dataset(samples)
        eval_dataset = to_dataset(eval_samples) if eval_samples else None
    fingerprint = data_fingerprint(args, slice_config, tokenizer, samples)
    fingerprint["stats"] = stats.as_dict()
    if prefix_shared:
        fingerprint["prefix_shared"] = (
            shared_stats.as_dict()
        )  # how the samples are laid out, not what they are
    if main_process:  # prompt_format.json too: evaluation prompts the model exactly as it was trained
        write_run_files(
            output_dir,
            fingerprint,
            resolved_recipe(args, training_args, model_args),
            model_path,
            resume_from,
            slice_config.prompt_format,
        )

    # 6. Model: the base in bf16 on GPU (fp32 on CPU), or 8-bit / 4-bit through bitsandbytes.
    model = load_model(model_path, model_args, training_args, on_gpu=on_gpu)
    peft_config = get_peft_config(model_args)

    # 7. Trainer: the dataset is used as it is (no re-tokenization, no truncation); with packing,
    # TRL packs the pre-tokenized rows and keeps their labels. Prefix-shared rows are packed already
    # (or not) and batched by their own collator, which builds the 4D attention mask: TRL neither
    # packs them nor drops their extra columns.
    trainer_class, extra = SFTTrainer, {}
    if prefix_shared:
        from train.prefix_shared import PrefixSharedCollator, prefix_shared_trainer_class

        if training_args.bf16 or training_args.fp16:
            mask_dtype = torch.bfloat16 if training_args.bf16 else torch.float16
        else:
            mask_dtype = model.dtype
        extra["data_collator"] = PrefixSharedCollator(
            pad_token_id=tokenizer.pad_token_id,
            dtype=mask_dtype,
            pad_to_multiple_of=training_args.pad_to_multiple_of,
        )
        trainer_class = prefix_shared_trainer_class()
        training_args.packing = False
        training_args.padding_free = False
        training_args.remove_unused_columns = False
    if not training_args.packing:
        training_args.dataset_kwargs = {**(training_args.dataset_kwargs or {}), "skip_prepare_dataset": True}
    trainer = trainer_class(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
        callbacks=[
            run_callback(
                output_dir,
                slice_config.prompt_format,
                wandb_run_config(args, slice_config.prompt_format, fingerprint, stats.as_dict()),
            )
        ],
        **extra,
    )

    # 8. Train.
    if resume_from:
        logger.info("resuming from checkpoint %s", resume_from)
    result = trainer.train(resume_from_checkpoint=resume_from)
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()

    # 9. Save the adapter (or full model) and the tokenizer with its chat template.
    trainer.save_model(str(output_dir))
    if main_process:
        tokenizer.save_pretrained(str(output_dir))
        logger.info("saved to %s (global step %d)", output_dir, trainer.state.global_step)
    summary = {
        "output_dir": str(output_dir),
        "global_step": trainer.state.global_step,
        "stats": stats.as_dict(),
    }
    if prefix_shared:
        summary["prefix_shared"] = shared_stats.as_dict()
    if main_process:  # what was trained on, for reports (`python -m eval demo-curve`)
        (output_dir / "train_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    try:
        run(argv)
    except (RecipeError, InputError, ModelPathError, SlicingError) as exc:
        if os.environ.get("DIAFORGE_DEBUG"):
            raise
        if os.environ.get("RANK", "0") == "0":  # every rank hits the same mistake: one line, not N
            print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
