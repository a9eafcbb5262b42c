"""Errors a person can act on: every bad input names the file, the record and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class InputError(Exception):
    """A problem with user-supplied input (a file, a record in it, a field of that record).

    `str(err)` is a single line meant to be printed as is by a command-line entry point, which
    then exits with code 2 (see `data_gen.cli.main`).
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


def shown_value(value: Any) -> str:
    """A refused config value as the YAML spelled it (`true`, `null`), or its kind for a mapping or
    a list, for the "got ..." end of an error line."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return type(value).__name__ if isinstance(value, dict | list) else repr(value)
