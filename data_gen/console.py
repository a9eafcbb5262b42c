"""Keep a command's standard output for its result.

Libraries print to stdout on their own: transformers, for one, announces
"[INFO] Running in WANDB offline mode" when it is imported with `WANDB_MODE=offline`. A command
whose stdout is meant to be piped (`--json`) must not carry such lines, so the command-line
entry points run inside `results_only_on_stdout()`, which sends whatever else is printed to
stderr, and print their results with `emit()`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

_results: TextIO | None = None


def emit(text: str) -> None:
    """Print `text` as (part of) the command's result: on the real stdout, even while other
    printing is sent to stderr."""
    stream = _results if _results is not None else sys.stdout
    print(text, file=stream, flush=True)


@contextlib.contextmanager
def results_only_on_stdout() -> Iterator[None]:
    """While active, `print()` without a file goes to stderr and only `emit()` reaches stdout."""
    global _results
    previous = _results
    _results = sys.stdout if previous is None else previous
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        _results = previous
