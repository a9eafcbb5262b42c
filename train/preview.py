"""Show what training will see: turn-sliced samples with the trained span marked.

    diaforge preview RECIPE.yaml [--num N] [--dialogue ID] [--prompt-chars N] [--color|--no-color]
                     [--key value ...]
    python -m diaforge.train.preview RECIPE.yaml ...

Reads the recipe exactly as `train/sft.py` does (overrides such as ``--history_reasoning keep``
included), slices the dialogues with the model's tokenizer and prints N samples: the prompt as
plain text, the trained tokens between ``>>>`` and ``<<<`` (or in colour on a terminal), and the
token counts. The statistics of the whole dataset come last. Nothing is trained or downloaded;
a tiny:// model is built into the recipe's output folder as it would be for training.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from diaforge.cliargs import DefaultsHelpFormatter
from diaforge.errors import UserError, command_main
from diaforge.schema import load_dialogues
from diaforge.train.config import RecipeError, device_defaults, parse_recipe
from diaforge.train.modeling import is_tiny, load_tokenizer, resolve_model_path
from diaforge.train.slicing import IGNORE_INDEX, SliceConfig, TurnSlicer, dialogue_texts

START, END = ">>>", "<<<"
COLOR_START, COLOR_END = "\033[1;32m", "\033[0m"


def format_sample(
    sample: dict[str, Any], tokenizer: Any, *, color: bool = False, prompt_chars: int = 0
) -> str:
    """One sample as text: header with token counts, the prompt (its last `prompt_chars`
    characters when that is positive), then the trained span marked."""
    ids, labels = sample["input_ids"], sample["labels"]
    n = sample["num_prompt_tokens"]
    prompt = tokenizer.decode(ids[:n])
    if 0 < prompt_chars < len(prompt):
        prompt = f"[... {len(prompt) - prompt_chars} characters ...]" + prompt[-prompt_chars:]
    target = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != IGNORE_INDEX])
    start, end = (COLOR_START, COLOR_END) if color else (START, END)
    header = (
        f"=== dialogue {sample['dialogue_id']} turn {sample['turn_index']}: {len(ids)} tokens = "
        f"{n} prompt + {sample['num_target_tokens']} trained"
    )
    if sample.get("history_start"):
        header += f" (history from turn {sample['history_start']})"
    return f"{header} ===\n{prompt}{start}{target}{end}\n"


@command_main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m diaforge.train.preview",
        description="Print turn-sliced samples with the trained span marked.",
        epilog="Any other --key value is a recipe override, as for train/sft.py.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("recipe", help="recipe YAML")
    parser.add_argument("--num", type=int, default=3, help="samples to print (default 3)")
    parser.add_argument("--dialogue", default=None, help="only samples of this dialogue id")
    parser.add_argument(
        "--prompt-chars",
        type=int,
        default=0,
        help="show only the last N characters of each prompt (default 0: all of it)",
    )
    parser.add_argument(
        "--color",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="colour the trained span (default: when stdout is a terminal)",
    )
    opts, overrides = parser.parse_known_args(argv)
    color = sys.stdout.isatty() if opts.color is None else opts.color
    import torch

    defaults = device_defaults(torch.cuda.is_available())
    args, training_args, model_args, _ = parse_recipe([opts.recipe, *overrides], device_defaults=defaults)
    if not args.dataset_path:
        raise RecipeError("dataset_path is not set")
    dialogues = [d for path in args.dataset_path for d in load_dialogues(path)]
    if args.max_dialogues:
        dialogues = dialogues[: args.max_dialogues]
    model_path = resolve_model_path(
        model_args.model_name_or_path,
        output_dir=training_args.output_dir,
        texts=dialogue_texts(dialogues) if is_tiny(model_args.model_name_or_path) else (),
        seed=training_args.seed,
        revision=model_args.model_revision,
    )
    tokenizer = load_tokenizer(
        model_path,
        revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
        chat_template_path=training_args.chat_template_path,
    )
    slicer = TurnSlicer(tokenizer, SliceConfig.from_args(args, max_length=training_args.max_length))
    samples, stats = slicer.slice_all(dialogues, progress=None)
    shown = [s for s in samples if opts.dialogue is None or s["dialogue_id"] == opts.dialogue]
    if opts.dialogue is not None and not shown:
        raise UserError(f"no samples of dialogue {opts.dialogue!r}")
    for sample in shown[: max(opts.num, 0)]:
        print(format_sample(sample, tokenizer, color=color, prompt_chars=opts.prompt_chars))
    print(f"tokenizer: {model_path}; slicing: {args.slicing_config()}, max_length={training_args.max_length}")
    print(stats.summary())
    return 0


if __name__ == "__main__":
    from diaforge.console import run_main

    run_main(main)
