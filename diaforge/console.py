"""The console conventions every command shares: results on stdout, progress on stderr, quiet
broken pipes.

Libraries print to stdout on their own: transformers, for one, announces
"[INFO] Running in WANDB offline mode" when it is imported with `WANDB_MODE=offline`. A command
whose stdout is meant to be piped (`--json`) must not carry such lines, so the command-line
entry points run inside `results_only_on_stdout()`, which sends whatever else is printed to
stderr, and print their results with `emit()`.

Every `python -m ...` entry point (data_gen, eval, diaforge.train.launch, diaforge.train.preview, diaforge.bench.run,
diaforge) ends through `run_main(main)`: when the reader of its output goes away early
(`python -m diaforge.eval score ... | head`), it stops without a traceback and exits with 141, the status a
shell reports for a command killed by SIGPIPE (what `yes | head` gives), so a pipeline under
`set -o pipefail` still sees that the command did not finish.

Long steps show a tqdm bar on stderr through `progress()`, as the generator and the evaluation
loops do (`--quiet` turns them off there). `enabled=None` means "on a terminal only", for library
code that has no `--quiet` of its own; `stage_bar()` counts the named steps of a long command.
The bars libraries draw on their own (transformers' "Loading weights", datasets' "Saving the
dataset", huggingface_hub's downloads) are turned off by `quiet_library_bars()` (what `--quiet`
calls) and, around a step that has a bar of ours, by `library_bars_off()`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TextIO

#: Exit status after a broken pipe: 128 + SIGPIPE (13), as a shell reports a command killed by it.
EXIT_BROKEN_PIPE = 141
#: Seconds before an item bar appears: a step quicker than this prints nothing.
PROGRESS_DELAY = 2.0

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


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """Exit with `main()`'s status; if the reader of stdout has gone (`| head`), exit quietly
    with `EXIT_BROKEN_PIPE` instead of printing a traceback."""
    try:
        try:
            code = main()
        finally:
            # Buffered output (argparse's --help before its SystemExit, say) may be what meets
            # the closed pipe: flush here, where the error is caught, not at interpreter exit.
            sys.stdout.flush()
    except BrokenPipeError:
        # The interpreter flushes stdout again at exit: point it at /dev/null so that flush
        # cannot fail with a second "Exception ignored ... BrokenPipeError".
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(EXIT_BROKEN_PIPE)
    sys.exit(code)


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str,
    unit: str = "it",
    enabled: bool | None = True,
    delay: float = PROGRESS_DELAY,
) -> Any:
    """A tqdm bar on stderr over `iterable` (or a manual one of `total` steps). `enabled=None`:
    only when stderr is a terminal. It appears after `delay` seconds, so quick steps stay silent."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        disable=not enabled if enabled is not None else None,
        delay=delay,
        dynamic_ncols=True,
    )


@contextlib.contextmanager
def stage_bar(steps: int, *, desc: str, enabled: bool | None = None) -> Iterator[Callable[[str], None]]:
    """A bar over the `steps` steps of one long command, shown at once; yields `enter(name)`, which
    marks the step before done and shows `name` as the one running. A step of work that has no
    count of its own (loading a model, embedding a catalogue) still says what it is doing and how
    long it has taken. `enabled=None`: only when stderr is a terminal."""
    bar = progress(total=steps, desc=desc, unit="step", enabled=enabled, delay=0)
    entered = 0

    def enter(name: str) -> None:
        nonlocal entered
        if entered:
            bar.update()
        entered += 1
        bar.set_postfix_str(name)

    with bar:
        yield enter
        if entered:
            bar.update(steps - bar.n)
            bar.set_postfix_str("done")


def quiet_library_bars() -> None:
    """Turn off, for the rest of the process, the progress bars that transformers, datasets and
    huggingface_hub draw by themselves: before they are imported (through the environment, which
    child processes inherit) and after."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] = "1"
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


@contextlib.contextmanager
def library_bars_off() -> Iterator[None]:
    """While active, transformers draws no bar of its own ("Loading weights"): for a step that
    shows one bar of ours instead. Imports transformers."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
