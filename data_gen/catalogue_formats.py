"""The catalogue formats `diaforge.data_gen.catalogue.load_catalogue` reads: one entry each in
`CATALOGUE_FORMATS`, asked in that order.

An entry is a `CatalogueFormat`: its name (what ``load_catalogue(format=...)`` takes and
``LoadReport.format`` reports, and what docs/catalogues.md lists, as a test checks), a short
summary, ``accepts(document)`` and ``read(document, forced)``, which yields the document's
records as `RecordEntry` objects, not yet built. The file is parsed first, into a `Document`
(a JSON or YAML value, or the text of a JSON Lines file); then the first entry that accepts it
reads it, or the one named by ``format=`` reads it without being asked. When no entry accepts a
document, the error lists the formats, in the order they were tried, each with its summary.

The formats, in the order they are asked, and what each accepts:

1. ``openapi``: an OpenAPI 3 document (JSON, or YAML: a ``.yaml``/``.yml`` file, or text that is
   not JSON and has an ``openapi:`` line), an object with a top-level ``openapi`` (or ``swagger``)
   key. One tool per operation, its arguments from the path/query/header/cookie parameters and the
   JSON request body (`diaforge.data_gen.openapi`; a Swagger 2 document is refused with a line that
   says so). First, as its top-level key says what the document is.
2. ``paper``: the DiaFORGE paper's ``{tool_name: {"description", "parameters"/"params"}}`` map, an
   object whose every value is an object and that is neither one record nor ``{"tools": [...]}``.
   Its parameters are flat ``{param: {"type", "description", "required": true|false}}`` maps, which
   records of the other formats may use as well.
3. ``toolkit``: ours, as `save_catalogue` writes it: a JSON list of bare records
   (``{"name", "description", "parameters", "metadata"}``) that all carry ``metadata``.
4. ``openai``: OpenAI function specs, ``{"type": "function", "function": {"name", "description",
   "parameters"}}`` or the bare ``{"name", "description", "parameters"}`` (BFCL's function docs
   too, with ``"type": "dict"`` and ``"float"``): any other non-empty list, ``{"tools": [...]}``
   (or ``"functions"``), one record, or a JSON Lines file. Last, as it takes any list of records.

Lists and JSON Lines may mix OpenAI, toolkit and paper records (`diaforge.tool_records.build_record`
tells them apart, record by record); the report names the records' own format when they agree,
``paper`` when any record is paper-style, and otherwise the format that read the file.

A new format is one entry here, placed before the first entry that would also accept its
documents, and usually a module of its own for the reader (as ``openapi`` is
`diaforge.data_gen.openapi`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from diaforge.data_gen.openapi import openapi_entries
from diaforge.errors import InputError
from diaforge.hygiene import MAX_DEPTH, json_problem
from diaforge.schema import Tool
from diaforge.tool_records import FieldError, RecordEntry, RecordLabel, build_record

__all__ = [
    "CATALOGUE_FORMATS",
    "DUPLICATE_KEY",
    "CatalogueFormat",
    "Document",
    "detect_format",
    "duplicate_key",
    "format_named",
    "written_as_yaml",
]

DUPLICATE_KEY = "duplicate key {!r} in one object: JSON readers keep only the last, so remove one"


@dataclass
class Document:
    """A catalogue file once parsed: what the formats' detectors and readers see."""

    path: str
    value: Any = None
    """The JSON or YAML value (None for a JSON Lines file)."""
    lines: str | None = None
    """The text of a JSON Lines file; each line is parsed as its record is built, so a bad line
    costs one record."""
    pairs: list[tuple[str, Any]] | None = None
    """A JSON object's top-level (key, value) pairs in order, a key given twice included (a tool
    named twice in a map is reported by record, not lost)."""


@dataclass(frozen=True)
class CatalogueFormat:
    """One catalogue format: how to recognise a document of it and how to read its records."""

    name: str
    """What ``load_catalogue(format=...)`` takes and ``LoadReport.format`` reports."""
    summary: str
    """A few words saying what a file of this format looks like (the error for a document no
    format accepts lists every format with its summary)."""
    accepts: Callable[[Document], bool]
    """Whether a parsed document is of this format (asked in `CATALOGUE_FORMATS` order)."""
    read: Callable[[Document, bool], Iterable[RecordEntry]]
    """The document's records, not yet built. The flag is True when ``format=`` named this format
    (the document was not checked with `accepts`; refuse what it cannot read with an `InputError`)."""
    json_lines: bool = False
    """Whether a JSON Lines file may hold this format, one record a line (``.jsonl``/``.ndjson``,
    or JSON text of several lines each an object)."""
    yaml_text: Callable[[str], bool] | None = None
    """For a file whose text is not JSON: whether it is this format written as YAML (a ``.yaml`` or
    ``.yml`` file is always read as YAML)."""


# --------------------------------------------------------------------------------------------
# Records: JSON Lines, a list, a {tool_name: spec} map
# --------------------------------------------------------------------------------------------


def duplicate_key(pairs: list[tuple[str, Any]]) -> str | None:
    """The first key that appears twice among an object's (key, value) pairs, or None."""
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _strict_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook` refusing a key set twice in one object (`FieldError` naming it)."""
    key = duplicate_key(pairs)
    if key is not None:
        raise FieldError(key, DUPLICATE_KEY.format(key))
    return dict(pairs)


def _jsonl_entries(text: str, mode: str | None) -> Iterator[RecordEntry]:
    # Split on newlines only: JSON strings may hold U+2028 and friends, which `splitlines` splits on.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue

        def build(line: str = line) -> tuple[Tool, str | None, str]:
            try:
                obj = json.loads(line, object_pairs_hook=_strict_object)
            except json.JSONDecodeError as exc:
                raise FieldError(None, f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            except RecursionError:
                raise FieldError(None, f"invalid JSON: nested deeper than {MAX_DEPTH} levels") from None
            problem = json_problem(obj)
            if problem is not None:
                raise FieldError(problem[0], problem[1])
            return build_record(obj, mode, strict_keys=True)

        yield RecordEntry(position=lineno, build=build)


def _list_entries(records: list[Any], mode: str | None) -> Iterator[RecordEntry]:
    for i, obj in enumerate(records, start=1):
        yield RecordEntry(
            position=RecordLabel(str(i)), build=lambda obj=obj: build_record(obj, mode, strict_keys=True)
        )


def _map_entries(pairs: list[tuple[str, Any]], mode: str | None) -> Iterator[RecordEntry]:
    """A `{tool_name: {"description", "parameters"/"params"}}` file."""
    for i, (name, spec) in enumerate(pairs, start=1):

        def build(name: str = name, spec: Any = spec) -> tuple[Tool, str | None, str]:
            if not isinstance(spec, dict):
                raise FieldError(None, f"a tool must be an object, got {type(spec).__name__}", name=name)
            if "name" in spec and spec["name"] != name:
                raise FieldError("name", f"name {spec['name']!r} differs from its key {name!r}", name=name)
            try:
                tool = build_record({**spec, "name": name}, mode, strict_keys=True)[0]
            except FieldError as exc:
                exc.name = name
                raise
            return tool, None, "paper"

        yield RecordEntry(position=RecordLabel(str(i)), build=build)


def _tools_list(value: Any) -> Any:
    """The list of a ``{"tools": [...]}`` (or ``"functions"``) object; any other value as it is."""
    if isinstance(value, dict) and isinstance(value.get("tools", value.get("functions")), list):
        return value.get("tools", value.get("functions"))
    return value


def _is_single_record(value: Any) -> bool:
    return isinstance(value, dict) and ("function" in value or isinstance(value.get("name"), str))


def _refuse_empty(doc: Document) -> None:
    """``no tools found`` for an empty list (``[]``, ``{"tools": []}``) or an empty object."""
    value = _tools_list(doc.value)
    if isinstance(value, list) and not value:
        raise InputError("no tools found: the list of tools is empty", path=doc.path)
    if isinstance(value, dict) and not value:
        raise InputError("no tools found: the document is an empty object", path=doc.path)


def _record_entries(doc: Document, mode: str | None) -> Iterator[RecordEntry] | None:
    """The records of a JSON Lines file, a list, ``{"tools": [...]}`` or one record; None when the
    document is none of these."""
    if doc.lines is not None:
        return _jsonl_entries(doc.lines, mode)
    _refuse_empty(doc)
    value = _tools_list(doc.value)
    if isinstance(value, list):
        return _list_entries(value, mode)
    if _is_single_record(value):
        return _list_entries([value], mode)
    return None


def _map_pairs(doc: Document) -> list[tuple[str, Any]]:
    return doc.pairs if doc.pairs is not None else list(doc.value.items())


# --------------------------------------------------------------------------------------------
# The formats: detectors and readers
# --------------------------------------------------------------------------------------------


def _is_openapi(doc: Document) -> bool:
    return (
        doc.lines is None
        and isinstance(doc.value, dict)
        and ("openapi" in doc.value or "swagger" in doc.value)
    )


_OPENAPI_YAML = re.compile(r"^(openapi|swagger)\s*:", re.MULTILINE)


def _starts_openapi_yaml(text: str) -> bool:
    """A line that opens with the ``openapi:`` (or ``swagger:``) key."""
    return _OPENAPI_YAML.search(text) is not None


def _read_openapi(doc: Document, forced: bool) -> Iterator[RecordEntry]:
    read = 0
    for entry in openapi_entries(doc.value, doc.path):
        read += 1
        yield entry
    if not read:
        raise InputError(
            "no tools found: the OpenAPI document has no operations under 'paths'", path=doc.path
        )


def _is_tool_map(doc: Document) -> bool:
    value = doc.value
    return (
        doc.lines is None
        and isinstance(value, dict)
        and bool(value)
        and not isinstance(_tools_list(value), list)
        and not _is_single_record(value)
        and all(isinstance(spec, dict) for spec in value.values())
    )


def _read_paper(doc: Document, forced: bool) -> Iterable[RecordEntry]:
    mode = "paper" if forced else None
    if _is_tool_map(doc):
        return _map_entries(_map_pairs(doc), mode)
    entries = _record_entries(doc, mode)
    if entries is None:
        raise _unreadable(doc, "paper")
    return entries


def _is_toolkit_list(doc: Document) -> bool:
    value = doc.value
    return (
        doc.lines is None
        and isinstance(value, list)
        and bool(value)
        and all(isinstance(r, dict) and "metadata" in r and "function" not in r for r in value)
    )


def _holds_records(doc: Document) -> bool:
    if doc.lines is not None:
        return True
    value = _tools_list(doc.value)
    return (isinstance(value, list) and bool(value)) or _is_single_record(value)


def _schema_records(doc: Document, forced: bool, name: str) -> Iterable[RecordEntry]:
    """Records whose parameters are JSON Schema objects (``mode="schema"`` when forced)."""
    entries = _record_entries(doc, "schema" if forced else None)
    if entries is not None:
        return entries
    if isinstance(doc.value, dict):
        raise InputError(
            f"expected a list of tool records or {{'tools': [...]}} for format {name!r}, "
            "got a {tool_name: spec} map; pass format='paper' or leave format unset",
            path=doc.path,
        )
    raise _unreadable(doc, name)


def _read_toolkit(doc: Document, forced: bool) -> Iterable[RecordEntry]:
    return _schema_records(doc, forced, "toolkit")


def _read_openai(doc: Document, forced: bool) -> Iterable[RecordEntry]:
    return _schema_records(doc, forced, "openai")


#: The formats, in the order they are asked (see the module docstring for why this order).
CATALOGUE_FORMATS: tuple[CatalogueFormat, ...] = (
    CatalogueFormat(
        name="openapi",
        summary="an OpenAPI 3 document, JSON or YAML, one tool per operation",
        accepts=_is_openapi,
        read=_read_openapi,
        yaml_text=_starts_openapi_yaml,
    ),
    CatalogueFormat(
        name="paper",
        summary="the paper's {tool_name: {description, parameters}} map",
        accepts=_is_tool_map,
        read=_read_paper,
        json_lines=True,
    ),
    CatalogueFormat(
        name="toolkit",
        summary="a JSON list of records with metadata, as save_catalogue writes",
        accepts=_is_toolkit_list,
        read=_read_toolkit,
        json_lines=True,
    ),
    CatalogueFormat(
        name="openai",
        summary="OpenAI function specs: a list, {'tools': [...]}, one spec, or JSON Lines",
        accepts=_holds_records,
        read=_read_openai,
        json_lines=True,
    ),
)


# --------------------------------------------------------------------------------------------
# Looking formats up
# --------------------------------------------------------------------------------------------


def _names() -> str:
    return ", ".join(f.name for f in CATALOGUE_FORMATS)


def format_named(name: str, path: str | None = None) -> CatalogueFormat:
    """The format called `name`; `InputError` listing the known ones when there is none."""
    for fmt in CATALOGUE_FORMATS:
        if fmt.name == name:
            return fmt
    raise InputError(f"unknown catalogue format {name!r} (expected one of {_names()})", path=path)


def written_as_yaml(text: str) -> bool:
    """Whether a text that is not JSON is some format's YAML (`CatalogueFormat.yaml_text`)."""
    return any(fmt.yaml_text is not None and fmt.yaml_text(text) for fmt in CATALOGUE_FORMATS)


def detect_format(doc: Document) -> CatalogueFormat:
    """The first format that accepts `doc`; an `InputError` naming what the document is and the
    formats tried, in order, when none does (``no tools found`` for an empty list or object)."""
    for fmt in CATALOGUE_FORMATS:
        if fmt.accepts(doc):
            return fmt
    _refuse_empty(doc)
    tried = "; ".join(f"{fmt.name} ({fmt.summary})" for fmt in CATALOGUE_FORMATS)
    raise InputError(
        f"unrecognised catalogue: no known format accepts {_what(doc.value)}; tried in order: {tried}",
        path=doc.path,
    )


def _unreadable(doc: Document, name: str) -> InputError:
    return InputError(
        f"unrecognised catalogue: format {name!r} does not read {_what(doc.value)} (known formats: {_names()})",
        path=doc.path,
    )


def _what(value: Any) -> str:
    """A parsed value in words, for the errors: ``a string``, ``an object whose 'x' is a number, ...``."""
    if isinstance(value, dict):
        for key, spec in value.items():
            if not isinstance(spec, dict):
                return f"an object whose {key!r} is {_kind(spec)}, not a tool"
        return "this object"
    return _kind(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
