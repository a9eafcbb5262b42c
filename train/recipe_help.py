"""The help of `train/sft.py` and `diaforge.train.launch` (`--help`, `--help-all`): the recipe keys of
`diaforge.train.recipe_fields.DiaforgeArguments` with their defaults, choices and help, and the defaults
set for TRL's keys. Printing it imports neither torch nor TRL (except `--help-all`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from diaforge.train.config import PAPER_DEFAULTS, device_defaults, recipe_dataclasses
from diaforge.train.recipe_fields import DiaforgeArguments

HELP_FLAGS = ("-h", "--help")
#: Lists every key, TRL's included (imports TRL: about 10 s).
HELP_ALL_FLAG = "--help-all"

_USAGE = """\
usage: train/sft.py RECIPE.yaml [--key value ...]
       diaforge train [accelerate launch options] RECIPE.yaml [--key value ...]
       python -m diaforge.train.launch [accelerate launch options] train/sft.py RECIPE.yaml [--key value ...]
       accelerate launch [options] train/sft.py RECIPE.yaml [--key value ...]

LoRA / QLoRA supervised fine-tuning on turn-sliced DiaFORGE dialogues. A recipe is a flat YAML
mapping of the keys below, TRL's SFTConfig keys and TRL's ModelConfig keys (see recipes/); every
key can be overridden on the command line (--learning_rate 2e-4). A mistake stops the run with
one line naming the recipe and the key, and exit code 2.
"""


def _type_name(annotation: Any) -> str:
    """A field's type as written (`list[str]`), without its `| None`: the annotation is a string
    until TRL's parser resolves it in place into a type."""
    import re

    if isinstance(annotation, type):
        return annotation.__name__
    text = str(annotation).replace("typing.", "")
    text = re.sub(r"^Optional\[(.*)\]$", r"\1", text)
    return text.replace(" | None", "").replace("NoneType | ", "")


def _help_entry(f: dataclasses.Field) -> str:
    """One key of `DiaforgeArguments`: the option, its type, default and choices, then its help."""
    import textwrap

    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    line = f"  --{f.name} {_type_name(f.type)}  (default: {default!r}"
    if f.metadata.get("choices"):
        line += f"; one of {', '.join(f.metadata['choices'])}"
    body = textwrap.fill(
        f.metadata.get("help", ""), width=100, initial_indent=" " * 6, subsequent_indent=" " * 6
    )
    return f"{line})\n{body}"


def recipe_help() -> str:
    """The help of `train/sft.py`: usage, our keys with their help, defaults and choices, and the
    defaults we set for TRL's keys. Imports neither torch nor TRL, so it prints at once."""

    def _pairs(values: dict[str, Any]) -> str:
        return ", ".join(f"{k}: {v}" for k, v in values.items())

    gpu = {k: v for k, v in device_defaults(True).items() if k not in PAPER_DEFAULTS}
    cpu = {k: v for k, v in device_defaults(False).items() if k not in PAPER_DEFAULTS}
    parts = [
        _USAGE,
        "DiaFORGE keys (train/recipe_fields.py, DiaforgeArguments):",
        *(_help_entry(f) for f in dataclasses.fields(DiaforgeArguments) if f.init),
        "",
        "Defaults set for TRL's keys (the paper's LoRA recipe, Appendix B; recipes state them too):",
        "  " + _pairs(PAPER_DEFAULTS),
        f"  on a CUDA GPU: {_pairs(gpu)}",
        f"  on a CPU: {_pairs(cpu)}",
        "",
        "Every other key of TRL's SFTConfig and ModelConfig (output_dir, max_length, packing,",
        f"model_name_or_path, load_in_4bit, ...) is accepted too: {HELP_ALL_FLAG} lists them all with",
        "their help (it imports TRL, about 10 s).",
    ]
    return "\n".join(parts) + "\n"


def recipe_help_all() -> str:
    """Every recipe key, TRL's included, as TRL's own parser lists them."""
    from trl import TrlParser

    parser = TrlParser(
        recipe_dataclasses(), prog="train/sft.py", usage="train/sft.py RECIPE.yaml [--key value ...]"
    )
    return parser.format_help()


def help_requested(argv: Sequence[str]) -> str | None:
    """The help to print for a `train/sft.py` command line, or None when it asks for none."""
    if HELP_ALL_FLAG in argv:
        return recipe_help_all()
    if any(flag in argv for flag in HELP_FLAGS):
        return recipe_help()
    return None
