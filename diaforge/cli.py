"""`diaforge`: one door per stage, each the project's existing command line.

    diaforge data ...    = python -m data_gen ...      generate, check and analyse dialogue data
    diaforge train ...   = python -m train.launch ...  fine-tune on a recipe through accelerate
    diaforge eval ...    = python -m eval ...          evaluate a model, compare runs, peer benchmarks
    diaforge bench ...   = python -m bench.run ...     measure the benchmarks on this machine

A subcommand runs its module exactly as `python -m` does (`runpy`, with the rest of the command
line as its arguments), so options, help, output and exit codes are the module's own and the two
spellings never drift apart. It lives in its own package because `data_gen` may not import
`train` or `eval`; it imports none of them either, it runs them by name.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

#: subcommand -> (module run as `python -m`, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "data": ("data_gen", "generate, check and analyse dialogue data (python -m data_gen)"),
    "train": ("train.launch", "fine-tune on a recipe through accelerate (python -m train.launch)"),
    "eval": ("eval", "evaluate a model, compare runs, run peer benchmarks (python -m eval)"),
    "bench": ("bench.run", "measure the benchmarks on this machine (python -m bench.run)"),
}
EXIT_USAGE = 2


def usage() -> str:
    """`diaforge --help`: the subcommands, one line each."""
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: diaforge COMMAND [ARGS ...]",
        "",
        "Disambiguation-centric fine-tuning of tool-calling models: one command per stage.",
        "",
        "commands:",
        *(f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()),
        "",
        "`diaforge COMMAND --help` shows the command's own options.",
    ]
    return "\n".join(lines) + "\n"


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
        print(
            f"error: unknown command {command!r} (one of {', '.join(COMMANDS)}; see diaforge --help)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    module = COMMANDS[command][0]
    saved = sys.argv
    sys.argv = [f"diaforge {command}", *rest]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
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
