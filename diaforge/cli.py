"""`diaforge`: one door per stage, each the project's existing command line.

    diaforge data ...        = python -m diaforge.data_gen ...       generate, check and analyse dialogue data
    diaforge data rollouts   = python -m diaforge.pipeline rollouts  a tuned model's rollouts, the teacher answering
    diaforge train ...       = python -m diaforge.train.launch ...   fine-tune on a recipe through accelerate
    diaforge preview ...     = python -m diaforge.train.preview ...  the samples training will see
    diaforge merge ...       = python -m diaforge.train.merge ...    merge a LoRA adapter into its base model
    diaforge eval ...        = python -m diaforge.eval ...           evaluate a model, compare runs, peer benchmarks
    diaforge serve ...       = python -m diaforge.eval.serve ...     an OpenAI-compatible server, decoded as eval decodes
    diaforge demo ...        = python -m diaforge.pipeline demo ...  data, training and evaluation on SmolLM2
    diaforge demo-curve ...  = python -m diaforge.pipeline demo-curve ...  dynamic Acc against corpus size
    diaforge bench ...       = python -m diaforge.bench.run ...      measure the benchmarks on this machine

A subcommand runs its module exactly as `python -m` does (`runpy`, with the rest of the command
line as its arguments), so options, help, output and exit codes are the module's own and the two
spellings never drift apart. This module belongs to the core package `diaforge`, below every
stage, and keeps the import contract (pyproject.toml): it imports no stage, it names their
modules and `runpy` imports them when the command runs. Every stage lives under the one import
name `diaforge`, so a user's own `eval.py` or `train/` in the working folder hides nothing.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from typing import NamedTuple

from diaforge.errors import EXIT_USAGE, UserError, command_main


class Command(NamedTuple):
    """What a subcommand runs: `python -m MODULE [*ARGS]` followed by the user's arguments."""

    module: str
    args: tuple[str, ...]
    help: str


COMMANDS: dict[str, Command] = {
    "data": Command(
        "diaforge.data_gen", (), "generate, check and analyse dialogue data (python -m diaforge.data_gen)"
    ),
    "train": Command(
        "diaforge.train.launch",
        (),
        "fine-tune on a recipe through accelerate (python -m diaforge.train.launch)",
    ),
    "preview": Command(
        "diaforge.train.preview",
        (),
        "print the samples a recipe trains on, trained span marked (python -m diaforge.train.preview)",
    ),
    "merge": Command(
        "diaforge.train.merge",
        (),
        "merge a LoRA adapter into its base model (python -m diaforge.train.merge)",
    ),
    "eval": Command(
        "diaforge.eval", (), "evaluate a model, compare runs, run peer benchmarks (python -m diaforge.eval)"
    ),
    "serve": Command(
        "diaforge.eval.serve",
        (),
        "serve a model behind an OpenAI-compatible API, decoded as eval decodes (python -m diaforge.eval.serve)",
    ),
    "demo": Command(
        "diaforge.pipeline",
        ("demo",),
        "the whole loop on SmolLM2: data, training, evaluation (python -m diaforge.pipeline demo)",
    ),
    "demo-curve": Command(
        "diaforge.pipeline",
        ("demo-curve",),
        "dynamic Acc against training corpus size (python -m diaforge.pipeline demo-curve)",
    ),
    "bench": Command(
        "diaforge.bench.run", (), "measure the benchmarks on this machine (python -m diaforge.bench.run)"
    ),
}


#: Two-word commands run by a module other than their first word's: ``data rollouts`` needs the
#: model under test (``eval``) and the generator's seeds and validators (``data_gen``), which only
#: the pipeline floor may import together (docs/architecture.md).
SUBCOMMANDS: dict[tuple[str, str], Command] = {
    ("data", "rollouts"): Command(
        "diaforge.pipeline",
        ("rollouts",),
        "rollouts of a tuned model with the teacher's answer (python -m diaforge.pipeline rollouts)",
    ),
}


def usage() -> str:
    """`diaforge --help`: the subcommands, one line each."""
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: diaforge COMMAND [ARGS ...]",
        "",
        "Disambiguation-centric fine-tuning of tool-calling models: one command per stage.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {command.help}" for name, command in COMMANDS.items()),
        "",
        "`diaforge COMMAND --help` shows the command's own options.",
    ]
    return "\n".join(lines) + "\n"


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    """Run `diaforge COMMAND ARGS...`; returns the command's exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(usage(), end="", file=sys.stderr)
        return EXIT_USAGE
    command, rest = argv[0], argv[1:]
    if command in ("-h", "--help", "help"):
        print(usage(), end="")
        return 0
    if command not in COMMANDS:
        raise UserError(f"unknown command {command!r} (one of {', '.join(COMMANDS)}; see diaforge --help)")
    target = COMMANDS[command]
    if rest and (command, rest[0]) in SUBCOMMANDS:
        target, rest = SUBCOMMANDS[command, rest[0]], rest[1:]
    saved = sys.argv
    sys.argv = [f"diaforge {command}", *target.args, *rest]
    try:
        runpy.run_module(target.module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return _status(exc.code)
    finally:
        sys.argv = saved
    return 0


def _status(code: object) -> int:
    """An exit status as `sys.exit` turns its argument into one (None: 0, a message: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def cli() -> None:
    """The console script: `main()` with the project's quiet ending on a broken pipe."""
    from diaforge.console import run_main

    run_main(main)
