"""JSON Lines in and out for any pydantic record: validated reading, strict and safe writing.

Reading (`iter_jsonl`, `read_jsonl`, `validate_record`): one record per non-blank line, each
validated against its model; a bad line is one `InputError` naming the file, the line and the
field (`first_error`: the first of pydantic's errors, its location joined with dots).

Writing: `dump_record` makes one line of strict JSON, or raises `UnsavableRecord` (a NaN, an
infinity, a lone surrogate, nesting past `diaforge.hygiene.MAX_DEPTH`) and writes nothing;
`write_jsonl` replaces a file atomically (a temporary file, fsync, rename); `JsonlAppender`
appends one fsynced line per record, so a crash leaves at most one truncated last line, which
`iter_jsonl(tolerate_truncated_tail=True)` skips and the next appender cuts off.
`diaforge.schema.load_dialogues` and `save_dialogues` are these for dialogue files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from diaforge.errors import InputError
from diaforge.hygiene import MAX_DEPTH, json_problem, load_json, read_text_file

M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError) -> tuple[str | None, str]:
    """(field, message) of the first error pydantic reports: the field's location joined with dots
    (None for the whole record), the message without pydantic's "Value error, " prefix."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or None
    msg = err.get("msg", "invalid value")
    msg = msg.removeprefix("Value error, ")
    return loc, msg


def validate_record(
    obj: Any, model: type[M], *, path: str | Path | None = None, record: int | str | None = None
) -> M:
    """Validate one decoded JSON object, raising `InputError` that names file, record and field."""
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, record=record)
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        field, msg = first_error(exc)
        raise InputError(msg, path=path, record=record, field=field) from None


def iter_jsonl(
    path: str | Path,
    model: type[M],
    *,
    tolerate_truncated_tail: bool = False,
) -> Iterator[M]:
    """Yield validated records from a JSON Lines file, one per non-blank line.

    A bad line raises `InputError` naming the file, the line number and the field. With
    `tolerate_truncated_tail`, a last line without its newline that does not parse (a write cut
    short by a crash) is skipped instead: resume logic relies on this.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", path=p)
    if p.is_dir():
        raise InputError("is a directory, expected a JSONL file", path=p)
    lines = read_text_file(p, what="JSONL file").split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = load_json(line, path=p, record=lineno)
        except json.JSONDecodeError as exc:
            if tolerate_truncated_tail and lineno == len(lines) and not line.endswith("\n"):
                return
            raise InputError(
                f"invalid JSON ({exc.msg} at column {exc.colno})", path=p, record=lineno
            ) from None
        yield validate_record(obj, model, path=p, record=lineno)


def read_jsonl(path: str | Path, model: type[M], *, allow_empty: bool = False, **kwargs: Any) -> list[M]:
    """All records of a JSON Lines file; an empty file is an error unless `allow_empty`."""
    records = list(iter_jsonl(path, model, **kwargs))
    if not records and not allow_empty:
        raise InputError("file holds no records", path=path)
    return records


class UnsavableRecord(ValueError):
    """A record holds a value strict JSON cannot hold (inf, NaN, a lone surrogate, nesting past
    `diaforge.hygiene.MAX_DEPTH`). `field` names where; nothing was written."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"field {field!r}: {reason}")


def dump_record(record: BaseModel | dict[str, Any]) -> str:
    """One record as a single JSON line (no trailing newline). Raises `UnsavableRecord` instead
    of writing `Infinity`, or `null` for inf (what pydantic's JSON mode does), or crashing on a
    lone surrogate."""
    raw = record.model_dump() if isinstance(record, BaseModel) else record
    problem = json_problem(raw, max_depth=MAX_DEPTH + 16)
    if problem is not None:
        raise UnsavableRecord(*problem)
    obj = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def write_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> int:
    """Write records atomically (temporary file, then rename); returns the count written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(dump_record(rec) + "\n")
                n += 1
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        # Nothing half-written: the old file (if any) stays as it was.
        tmp.unlink(missing_ok=True)
        raise
    return n


class JsonlAppender:
    """Append records durably, one whole line per `write` call (flush + fsync), so a crash can
    leave at most one truncated last line, which `iter_jsonl(tolerate_truncated_tail=True)` skips.

    If the file ends in a truncated line when opened, that fragment is cut off first.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _drop_truncated_tail(self.path)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        """Append one record; an `UnsavableRecord` writes nothing."""
        self._fh.write(dump_record(record) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_truncated_tail(path: Path) -> None:
    """Cut a last line that a crash left unfinished; a complete last record that only lacks its
    newline (a file edited by hand, another tool's writer) is kept and given its newline."""
    if not path.exists() or path.stat().st_size == 0:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    cut = data.rfind(b"\n") + 1  # 0 when the only line is truncated
    try:
        json.loads(data[cut:].decode("utf-8"))
        complete = True
    except (ValueError, RecursionError):
        complete = False
    with path.open("r+b") as fh:
        if complete:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(cut)
