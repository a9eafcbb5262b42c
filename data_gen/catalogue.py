"""Load a tool catalogue from the formats people already have, and save it in ours.

Supported inputs, detected from the content (pass `format=` to force one): ``openapi`` (OpenAPI 3,
JSON or YAML), ``paper`` (the DiaFORGE paper's maps), ``toolkit`` (ours, as `save_catalogue`
writes it) and ``openai`` (OpenAI function specs and BFCL's function docs, as a list,
``{"tools": [...]}`` or JSON Lines). Each is one entry of
`diaforge.data_gen.catalogue_formats.CATALOGUE_FORMATS`, which describes them and the order they
are asked in; the first that accepts the parsed file reads it.

Every tool ends up as a `Tool` whose ``parameters`` is a JSON Schema object with normalised
types (``dict``->``object``, ``float``->``number``, ``tuple``->``array``, ...). One record is read
by `diaforge.tool_records`; the formats find the records in a parsed file; this module reads and
parses the file, collects the records into a `Catalogue` (strict, or skipping invalid ones) and
saves a catalogue.

Bad input raises `InputError`, one line that names the file, the record and the field. Records
are named by line number in JSON Lines (``line 3``), by position in a JSON list or map counting
from 1 (``record 3``, plus the tool name once known) and by operation in OpenAPI
(``record GET /orders/{order_id}``). With ``strict=False`` invalid records are skipped and
listed in `LoadReport.skipped`; valid ones are never dropped.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import logging
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from diaforge.data_gen.catalogue_formats import (
    CATALOGUE_FORMATS,
    DUPLICATE_KEY,
    CatalogueFormat,
    Document,
    detect_format,
    duplicate_key,
    format_named,
    written_as_yaml,
)
from diaforge.errors import InputError
from diaforge.hygiene import MAX_DEPTH, check_regular_file, json_problem, load_yaml
from diaforge.schema import Tool
from diaforge.tool_records import FieldError, RecordEntry, one_line, with_name

__all__ = [
    "FORMATS",
    "Catalogue",
    "LoadReport",
    "load_catalogue",
    "save_catalogue",
]

logger = logging.getLogger(__name__)

#: The names of the catalogue formats, in the order detection asks them (`CATALOGUE_FORMATS`).
FORMATS = tuple(f.name for f in CATALOGUE_FORMATS)

#: Largest catalogue file read (checked before a byte is read): about 40,000 tools of the bundled
#: size, and far more than `MAX_TOOLS`; a 60 MB file is refused at once.
MAX_CATALOGUE_BYTES = 32 * 1024 * 1024
#: Most tools analysed or generated from at once. Near-duplicate analysis compares every pair of
#: tools, so its time grows with their square (its memory only with the tools: about 0.4 GB and a
#: minute at this limit; `diaforge.data_gen.catalogue_analysis`).
MAX_TOOLS = 5_000

_YAML_SUFFIXES = {".yaml", ".yml"}
_JSONL_SUFFIXES = {".jsonl", ".ndjson"}

# --------------------------------------------------------------------------------------------
# Public results
# --------------------------------------------------------------------------------------------


@dataclass
class LoadReport:
    """What `load_catalogue` read: the file, the detected format and what was kept or skipped."""

    path: str
    format: str
    """One of `FORMATS`: the one named by ``format=``, else the records' own (see `_collect`)."""
    records: int
    """Records seen (JSON Lines lines, list entries, map entries or OpenAPI operations)."""
    loaded: int
    """Tools loaded."""
    skipped: list[str] = field(default_factory=list)
    """One line per skipped record, naming the record, the field and the problem (non-strict only)."""

    def summary(self) -> str:
        """E.g. ``loaded 412 tools from cat.json (openai format); skipped 2 invalid records``."""
        text = f"loaded {_plural(self.loaded, 'tool')} from {self.path} ({self.format} format)"
        if self.skipped:
            text += f"; skipped {_plural(len(self.skipped), 'invalid record')}"
        return text


@dataclass
class Catalogue:
    """The tools of one catalogue, in file order, with the report of how they were loaded."""

    tools: list[Tool]
    report: LoadReport | None = None
    by_name: dict[str, Tool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        if self.report is None:
            self.report = LoadReport(
                path="<memory>", format="toolkit", records=len(self.tools), loaded=len(self.tools)
            )
        self.by_name = {}
        for tool in self.tools:
            if tool.name in self.by_name:
                raise ValueError(f"duplicate tool name {tool.name!r} in catalogue")
            self.by_name[tool.name] = tool

    def __len__(self) -> int:
        return len(self.tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self.tools)

    def __contains__(self, item: object) -> bool:
        name = item.name if isinstance(item, Tool) else item
        return name in self.by_name

    def names(self) -> list[str]:
        """Tool names, in file order."""
        return [t.name for t in self.tools]

    def get(self, name: str) -> Tool:
        """The tool called `name`; `KeyError` naming the catalogue and the closest names if absent."""
        try:
            return self.by_name[name]
        except KeyError:
            close = difflib.get_close_matches(str(name), list(self.by_name), n=3)
            hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
            source = self.report.path if self.report else "<memory>"
            raise KeyError(
                f"no tool named {name!r} in catalogue {source} ({_plural(len(self), 'tool')}){hint}"
            ) from None

    def split(self, split: str) -> Catalogue:
        """The tools whose ``metadata["split"]`` equals `split` (e.g. ``train``, ``test``).

        Raises `InputError` listing the splits present when no tool belongs to `split`.
        """
        tools = [t for t in self.tools if t.metadata.get("split") == split]
        if not tools:
            present = sorted({str(t.metadata["split"]) for t in self.tools if "split" in t.metadata})
            have = f"splits present: {', '.join(present)}" if present else "no tool has a metadata 'split'"
            raise InputError(
                f"no tools in split {split!r} ({have})",
                path=self.report.path if self.report else None,
            )
        return Catalogue(tools=tools, report=self.report)


# --------------------------------------------------------------------------------------------
# The collector: records to a catalogue, strict or skipping
# --------------------------------------------------------------------------------------------


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _where(record: int | str) -> str:
    """How `InputError` renders a record position, for messages that point at another record."""
    return f"line {record}" if isinstance(record, int) else f"record {record!r}"


def _collect(
    entries: Iterable[RecordEntry],
    *,
    path: str,
    fmt: str | None,
    strict: bool,
    reader: str,
) -> Catalogue:
    """Build every entry into a `Catalogue`. `fmt`: the format ``format=`` named, reported as is;
    without one, the report names the records' own format when they agree, ``paper`` when any
    record is paper-style, and otherwise `reader` (the format that read the file)."""
    tools: list[Tool] = []
    first_at: dict[str, int | str] = {}
    skipped: list[str] = []
    first_problem: str | None = None
    kinds: set[str] = set()
    records = 0
    for entry in entries:
        records += 1
        try:
            tool, name_field, kind = entry.build()
            if tool.name in first_at:
                raise FieldError(
                    name_field,
                    f"duplicate tool name {tool.name!r} (first at {_where(first_at[tool.name])})",
                    name=tool.name,
                )
        except FieldError as exc:
            record = with_name(entry.position, exc.name)
            message = one_line(exc.message)
            if strict:
                n = len(tools)
                message += f" ({_plural(n, 'valid tool')} read before this record; fix or remove this record)"
                raise InputError(message, path=path, record=record, field=exc.field) from None
            skipped.append(str(InputError(message, path=path, record=record, field=exc.field)))
            if first_problem is None:
                first_problem = str(InputError(message, record=record, field=exc.field))
            continue
        first_at[tool.name] = entry.position
        kinds.add(kind)
        tools.append(tool)
    if not records:
        raise InputError("no tools found: the catalogue holds no records", path=path)
    if not tools:
        raise InputError(
            f"no tools found: all {_plural(records, 'record')} are invalid (first: {first_problem})",
            path=path,
        )
    if fmt is None:
        fmt = "paper" if "paper" in kinds else next(iter(kinds)) if len(kinds) == 1 else reader
    report = LoadReport(path=path, format=fmt, records=records, loaded=len(tools), skipped=skipped)
    if skipped:
        logger.warning("%s", report.summary())
    return Catalogue(tools=tools, report=report)


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


def _read_text(p: Path) -> str:
    if not p.exists():
        raise InputError("no tools found: the file does not exist", path=p)
    if p.is_dir():
        raise InputError("no tools found: this is a directory, expected a catalogue file", path=p)
    check_regular_file(p, what="catalogue", max_bytes=MAX_CATALOGUE_BYTES)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", path=p) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", path=p) from None
    if not text.strip():
        raise InputError("no tools found: the file is empty", path=p)
    return text


def _json_error(exc: json.JSONDecodeError, text: str, path: str) -> InputError:
    hint = "; the file ends early (truncated?)" if exc.pos >= len(text.rstrip()) else ""
    return InputError(f"invalid JSON: {exc.msg} at column {exc.colno}{hint}", path=path, record=exc.lineno)


def _parse_json(text: str, path: str | None = None) -> tuple[Any, list[tuple[str, Any]] | None]:
    """The decoded document and, when it is an object, its top-level (key, value) pairs in order,
    duplicates included (a `{tool_name: spec}` map must not lose a tool silently)."""
    last: list[Any] = [None]
    duplicates: list[tuple[str, Any]] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        last[0] = pairs
        key = duplicate_key(pairs)
        if key is not None:
            duplicates.append((key, pairs))
        return dict(pairs)

    try:
        doc = json.loads(text, object_pairs_hook=hook)
    except RecursionError:
        raise InputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels", path=path) from None
    # A tool named twice in a {tool_name: spec} map is reported by the collector, by record.
    nested = [key for key, pairs in duplicates if pairs is not last[0] or not isinstance(doc, dict)]
    if nested:
        raise InputError(DUPLICATE_KEY.format(nested[0]), path=path, field=nested[0])
    problem = json_problem(doc)
    if problem is not None:
        raise InputError(f"invalid JSON: {problem[1]}", path=path, field=problem[0])
    return doc, (last[0] if isinstance(doc, dict) else None)


def _parse_yaml(text: str, path: str) -> Any:
    try:
        doc = load_yaml(text, path=path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        msg = one_line(f"{context}, {problem}" if context else problem)
        if mark is not None:
            raise InputError(
                f"invalid YAML: {msg} at column {mark.column + 1}", path=path, record=mark.line + 1
            ) from None
        raise InputError(f"invalid YAML: {msg}", path=path) from None
    if doc is None:
        raise InputError("no tools found: the YAML document is empty", path=path)
    return _plain(doc, path)


def _plain(node: Any, path: str, depth: int = 0) -> Any:
    """YAML values as JSON values: string keys, dates as ISO strings."""
    if depth > 200:
        raise InputError("invalid YAML: the document nests too deeply (a recursive anchor?)", path=path)
    if isinstance(node, dict):
        return {str(k): _plain(v, path, depth + 1) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v, path, depth + 1) for v in node]
    if isinstance(node, (_dt.date, _dt.datetime)):
        return node.isoformat()
    return node


def _read_document(text: str, p: Path, src: str, forced: CatalogueFormat | None) -> Document:
    """The parsed file: ``.jsonl``/``.ndjson`` as JSON Lines, ``.yaml``/``.yml`` as YAML, anything
    else as JSON, or, when it is not JSON, as YAML (text some format recognises as its YAML) or as
    JSON Lines (several lines, the first one an object). JSON Lines only where the forced format,
    if any, may be written so."""
    lines_ok = forced is None or forced.json_lines
    suffix = p.suffix.lower()
    if suffix in _JSONL_SUFFIXES and lines_ok:
        return Document(src, lines=text)
    if suffix in _YAML_SUFFIXES:
        return Document(src, value=_parse_yaml(text, src))
    try:
        value, pairs = _parse_json(text, src)
    except json.JSONDecodeError as exc:
        if written_as_yaml(text):
            return Document(src, value=_parse_yaml(text, src))
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) > 1 and lines_ok and _parses_as_object(lines[0]):
            return Document(src, lines=text)
        raise _json_error(exc, text, src) from None
    return Document(src, value=value, pairs=pairs)


def load_catalogue(path: str | Path, *, strict: bool = True, format: str | None = None) -> Catalogue:
    """Load the tools of one catalogue file (see the module docstring for the formats).

    Args:
        path: a ``.json``, ``.jsonl`` or ``.yaml``/``.yml`` file.
        strict: the default; raise `InputError` at the first invalid record, saying how many
            valid tools came before it. With ``strict=False``, skip invalid records (and later
            duplicates of a name), list them in ``report.skipped`` and keep every valid tool.
        format: one of `FORMATS` to skip detection; ``None`` detects it from the content.
    """
    p = Path(path)
    src = str(path)
    forced = None if format is None else format_named(format, src)
    doc = _read_document(_read_text(p), p, src, forced)
    reader = forced or detect_format(doc)
    return _collect(
        reader.read(doc, forced is not None), path=src, fmt=format, strict=strict, reader=reader.name
    )


def check_catalogue_size(catalogue: Catalogue) -> None:
    """`InputError` before any similarity is computed when the catalogue holds more than
    `MAX_TOOLS` tools, naming the limit, what grows past it and the way around it."""
    n = len(catalogue)
    if n <= MAX_TOOLS:
        return
    times = (n * (n - 1)) / (MAX_TOOLS * (MAX_TOOLS - 1))
    raise InputError(
        f"holds {n:,} tools, over the limit of {MAX_TOOLS:,}: the near-duplicate analysis compares every pair "
        f"of tools, {times:,.0f} times as many pairs here as at the limit; split it, e.g. by line of business, "
        f"into catalogues of at most {MAX_TOOLS:,} tools",
        path=catalogue.report.path if catalogue.report else None,
    )


def _parses_as_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False


def save_catalogue(tools: Iterable[Tool] | Catalogue, path: str | Path) -> None:
    """Write tools as a JSON list of ``{"name", "description", "parameters", "metadata"}`` (the
    ``toolkit`` format), atomically (temporary file, then rename)."""
    items = [
        {"name": t.name, "description": t.description, "parameters": t.parameters, "metadata": t.metadata}
        for t in tools
    ]
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        json.dump(items, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, p)
