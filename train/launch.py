"""`accelerate launch`, with the recipe checked before any process starts and the script's exit
code passed through.

    diaforge train [accelerate launch options] RECIPE.yaml [--key value ...]
    python -m diaforge.train.launch [accelerate launch options] [train/sft.py] RECIPE.yaml [--key value ...]

The training script is this package's own `sft.py`, found beside this module as `trl sft --config`
finds its own: a recipe where the script goes runs it, from any folder, and a `train/sft.py` that
is not in the working folder is this one. The bundled accelerate configs are found by name in the
installed `accelerate_configs` package (`--config_file cpu`).

Plain `accelerate launch` turns every failure of its script into a traceback of its own and exit
code 1 (`subprocess.CalledProcessError` from the single-process launcher, `ChildFailedError` from
torchrun's), whatever the script printed: the one located line of a bad recipe ends up under a
screenful of the launcher's frames. This module is the same launcher (accelerate's own parser, config
files and launch paths) with two changes:

1. When the script is `train/sft.py` (or `train/dpo.py`, the DPO stage: a recipe with `pairs_path`
   given where the script goes runs it), the recipe is parsed and checked here first (`parse_recipe`,
   `check_recipe`; `check_dpo_recipe`): a mistake is one line and exit code 2, and no process is started.
2. A script that fails anyway (a bad dialogue file, say) leaves its own exit code and its own line;
   the launcher adds nothing. Set DIAFORGE_DEBUG=1 for the tracebacks.

`python -m diaforge.train.launch --help` (and `... train/sft.py --help`) prints the recipe's keys at once,
without starting a process; `accelerate launch --help` lists the launcher's own options.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from diaforge.errors import UserError, command_main

#: The training script of this package: what `diaforge train RECIPE` runs, from any folder.
SFT_SCRIPT = Path(__file__).resolve().parent / "sft.py"
#: The DPO stage's script: what `diaforge train RECIPE` runs when the recipe has `pairs_path`.
DPO_SCRIPT = Path(__file__).resolve().parent / "dpo.py"
#: The package of the bundled accelerate configs, and its folder in the checkout (a path given as
#: `accelerate_configs/X.yaml` names a bundled one from any folder).
CONFIG_PACKAGE = "diaforge.accelerate_configs"
CONFIG_FOLDER = "accelerate_configs"
RECIPE_SUFFIXES = (".yaml", ".yml")


def is_sft_script(args: argparse.Namespace) -> bool:
    """Whether the launched script is this repository's `train/sft.py` (as a path or `-m diaforge.train.sft`);
    `args` are accelerate's launch arguments, as are those of the two functions below."""
    if args.module:
        return args.training_script == "diaforge.train.sft"
    return Path(args.training_script).resolve() == SFT_SCRIPT


def is_dpo_script(args: argparse.Namespace) -> bool:
    """Whether the launched script is this repository's `train/dpo.py` (as a path or `-m diaforge.train.dpo`)."""
    if args.module:
        return args.training_script == "diaforge.train.dpo"
    return Path(args.training_script).resolve() == DPO_SCRIPT


def find_script(args: argparse.Namespace) -> None:
    """The training script, wherever the command is typed: a recipe given where the script goes
    (`diaforge train RECIPE.yaml ...`, as `trl sft --config`) runs this package's `train/sft.py`
    on it (`train/dpo.py` when the recipe has `pairs_path`: train/config.py), and a
    `train/sft.py` or `train/dpo.py` that is not in the working folder is this package's."""
    from diaforge.train.config import is_dpo_recipe

    if args.module:
        return
    script = Path(args.training_script)
    if script.suffix.lower() in RECIPE_SUFFIXES:
        args.training_script_args = [args.training_script, *args.training_script_args]
        args.training_script = str(DPO_SCRIPT if is_dpo_recipe(script) else SFT_SCRIPT)
    elif not script.exists() and script.as_posix().endswith("train/sft.py"):
        args.training_script = str(SFT_SCRIPT)
    elif not script.exists() and script.as_posix().endswith("train/dpo.py"):
        args.training_script = str(DPO_SCRIPT)


def find_config_file(args: argparse.Namespace) -> None:
    """`--config_file`: as given when it exists; else the bundled one of that name, found in the
    installed `accelerate_configs` package (`accelerate_configs/cpu.yaml`, `cpu.yaml` or just
    `cpu`, from any folder); else one line naming the file and the bundled choices (`RecipeError`)."""
    from diaforge.packaged import PackagedFileError, packaged_path
    from diaforge.train.config import RecipeError

    given = getattr(args, "config_file", None)
    if not given or Path(given).expanduser().is_file():
        return
    try:
        bundled = packaged_path(CONFIG_PACKAGE)
    except PackagedFileError:
        bundled = None
    if bundled is not None:
        inside = Path(given)
        if inside.parts[:1] == (CONFIG_FOLDER,):
            inside = Path(*inside.parts[1:])
        for candidate in (bundled / inside, bundled / f"{inside}.yaml"):
            if candidate.is_file():
                args.config_file = str(candidate)
                return
    names = sorted(p.stem for p in bundled.glob("*.yaml")) if bundled is not None else []
    choices = f"; the bundled ones: {', '.join(names)}" if names else ""
    raise RecipeError(f"--config_file {given}: no such accelerate config file{choices}")


def precheck_dpo(script_args: Sequence[str]) -> None:
    """Parse and check a `train/dpo.py` command line as the script will; `RecipeError` if it is wrong."""
    import torch

    from diaforge.train.config import split_recipe_argv
    from diaforge.train.dpo_config import check_dpo_recipe, dpo_device_defaults, parse_dpo_recipe

    args, training_args, model_args, _ = parse_dpo_recipe(
        script_args, device_defaults=dpo_device_defaults(torch.cuda.is_available())
    )
    check_dpo_recipe(
        args, training_args, model_args, where=split_recipe_argv(script_args)[0] or "command line"
    )


def precheck(script_args: Sequence[str]) -> None:
    """Parse and check a `train/sft.py` command line as the script will; `RecipeError` if it is wrong."""
    import torch

    from diaforge.train.config import device_defaults, parse_recipe, split_recipe_argv
    from diaforge.train.recipe_checks import check_recipe

    args, training_args, model_args, _ = parse_recipe(
        script_args, device_defaults=device_defaults(torch.cuda.is_available())
    )
    check_recipe(args, training_args, model_args, where=split_recipe_argv(script_args)[0] or "command line")


LAUNCH_USAGE = """\
usage: diaforge train [accelerate launch options] RECIPE.yaml [--key value ...]
       python -m diaforge.train.launch [accelerate launch options] [train/sft.py] RECIPE.yaml [--key value ...]

`accelerate launch` with the recipe checked before any process starts and the script's exit code
passed through (a recipe mistake: one line, exit code 2). The launcher's own options
(--config_file accelerate_configs/X.yaml, --num_processes N, ...): `accelerate launch --help`.
What follows is the help of train/sft.py.

"""


def help_text(argv: Sequence[str]) -> str | None:
    """The help a command line asks for, found without importing accelerate: ours when it starts
    with -h/--help, train/sft.py's when a help flag follows the sft script; otherwise None."""
    from diaforge.train.recipe_help import HELP_FLAGS, help_requested, recipe_help

    argv = list(argv)
    if argv and argv[0] in HELP_FLAGS:
        return LAUNCH_USAGE + recipe_help()
    for i, arg in enumerate(argv):
        if arg == "diaforge.train.sft" or (arg.endswith(".py") and Path(arg).resolve() == SFT_SCRIPT):
            return help_requested(argv[i + 1 :])
        if arg.endswith("train/sft.py") or (
            arg.lower().endswith(RECIPE_SUFFIXES) and i == _first_positional(argv)
        ):
            return help_requested(argv[i:])
    return None


def _first_positional(argv: Sequence[str]) -> int | None:
    """Index of the first argument that is neither an option nor an option's value, as far as
    can be told without accelerate's parser (its options that are switches take no value)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-"):
            return i
        i += 1 if "=" in arg or arg in _SWITCHES else 2
    return None


#: accelerate launch options that take no value (the others take one).
_SWITCHES = {
    "--cpu",
    "--multi_gpu",
    "--tpu",
    "--use_deepspeed",
    "--use_fsdp",
    "-m",
    "--module",
    "--no_python",
    "--debug",
    "-q",
    "--quiet",
}


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    text = help_text(argv)
    if text is not None:
        print(text, end="")
        return 0
    from accelerate.commands.launch import launch_command, launch_command_parser

    from diaforge.console import results_only_on_stdout

    args = launch_command_parser().parse_args(argv)
    args.quiet = False  # with --quiet the single-process launcher exits 1 and the script's code is lost
    debug = bool(os.environ.get("DIAFORGE_DEBUG"))
    try:
        find_script(args)
        find_config_file(args)
        if is_sft_script(args):
            with results_only_on_stdout():  # TRL's import may print "[INFO] Running in WANDB offline mode"
                precheck(args.training_script_args)
        elif is_dpo_script(args):
            with results_only_on_stdout():
                precheck_dpo(args.training_script_args)
        launch_command(args)
    except UserError:  # command_main prints its line
        raise
    except subprocess.CalledProcessError as exc:  # the script has said what went wrong
        if debug:
            raise
        return exc.returncode if exc.returncode > 0 else 1
    except Exception as exc:
        from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

        if debug or not isinstance(exc, ChildFailedError):
            raise
        rank, failure = exc.get_first_failure()
        if failure.exitcode != 2:  # 2: the script printed its one located line already
            print(f"error: rank {rank} failed with exit code {failure.exitcode}", file=sys.stderr)
        return failure.exitcode if failure.exitcode > 0 else 1
    return 0


if __name__ == "__main__":
    from diaforge.console import run_main

    run_main(main)
