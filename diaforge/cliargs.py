"""Command-line argument checking shared by the entry points of data_gen, eval and train: every
bad flag is one line on stderr and exit code 2, never a usage dump or a traceback."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import NoReturn


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help in which every option shows its default: ``(default: X)`` is appended, ``(default:
    off)`` / ``(default: on)`` for a switch, unless the help text already speaks of its default or
    there is none to show (None: the help says what happens when the option is left out; an
    empty list; a required positional)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text.lower() or default is None or default is argparse.SUPPRESS:
            return text
        if isinstance(default, bool):
            return f"{text} (default: {'on' if default else 'off'})"
        if isinstance(default, (list, tuple)) and not default:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text
        return f"{text} (default: %(default)s)"


class OneLineArgumentParser(argparse.ArgumentParser):
    """`argparse` that reports a bad command line as one line (`error: PROG: MESSAGE (see
    --help)`), exit 2. Subparsers made from it are of the same class."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {' '.join(message.split())} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (`--limit 0` or `--limit -3` would silently mean something else)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def share(text: str) -> float:
    """A share: a finite number from 0 to 1 (`--no-tool-share 0.1`)."""
    value = finite_float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text!r}")
    return value


def int_between(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (`--concurrency 100000` is refused, not
    tried)."""

    def parse(text: str) -> int:
        value = _int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:,}, got {value:,}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    parse.__name__ = f"int_between_{low}_{high}"
    return parse
