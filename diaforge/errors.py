"""Errors a person can act on, and how a command ends on one.

`UserError` is every error a command reports as a single line and an exit status, with no
traceback: `InputError` (a file, a record in it, a field of that record), and the stages' own
kinds (a recipe, a model path, a backend's configuration, ...) derive from it. `command_main`
wraps a command's `main`: it prints the line as ``error: LINE`` on stderr and returns the
error's `exit_code` (2 for a mistake in what was given).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec

P = ParamSpec("P")

#: The exit status of a refused input (argparse's own for a bad command line).
EXIT_USAGE = 2
#: The exit status after Ctrl-C (128 + SIGINT), as a shell reports it.
EXIT_INTERRUPTED = 130


class UserError(Exception):
    """A failure the person running a command can act on from one line: `str(err)` is that line.

    `exit_code` is 2 for a mistake in what was given (a file, a key, a flag); a kind whose input
    was fine but whose step failed (a pipeline stage, a backend that gave up) sets 1."""

    exit_code: int = EXIT_USAGE


class InputError(UserError):
    """A problem with user-supplied input (a file, a record in it, a field of that record).

    `str(err)` is a single line, ``FILE, line N, field 'KEY': MESSAGE`` with the parts that are
    known; `command_main` prints it and exits with code 2.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        record: str | int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.record = record
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(self.path)
        if self.record is not None:
            where.append(f"line {self.record}" if isinstance(self.record, int) else f"record {self.record!r}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


def command_main(main: Callable[P, int]) -> Callable[P, int]:
    """A command's `main` that ends on a `UserError` as one line: ``error: LINE`` on stderr (from
    the first process only, when several ranks of one launch hit the same mistake) and the
    error's `exit_code`; Ctrl-C is ``interrupted`` and 130. With ``DIAFORGE_DEBUG`` set the error
    is raised instead, traceback and all."""

    @functools.wraps(main)
    def run(*args: P.args, **kwargs: P.kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except UserError as exc:
            if os.environ.get("DIAFORGE_DEBUG"):
                raise
            if os.environ.get("RANK", "0") == "0":
                print(f"error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED

    return run


def shown_value(value: Any) -> str:
    """A refused config value as the YAML spelled it (`true`, `null`), or its kind for a mapping or
    a list, for the "got ..." end of an error line."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return type(value).__name__ if isinstance(value, dict | list) else repr(value)
