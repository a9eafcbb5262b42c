"""Peer benchmarks and evaluation modes next to DiaFORGE's own.

* importers into our `Dialogue` schema, each validating its input, reporting counts and
  rejecting a malformed record with one line naming the file and the record
  (`diaforge.errors.InputError`): `bfcl` (from the installed `bfcl-eval` wheel), `confetti`,
  `tooldial`, `dicebench`;
* `bfcl`: BFCL's AST checker rules re-implemented on our schema, and the BFCL parity runner
  (``python -m diaforge.eval bfcl --model ...``);
* `next_action`: next-action prediction over the ToolDial / DialogTool system actions;
* `turn_level`: turn-level function calling with gold history (CONFETTI / BFCL style), the chain
  score and CONFETTI's dialog-act accuracy.
* `when2call`: When2Call's single-decision test records as dialogues; `when2call_scores`: its
  metrics (macro F1, acc-norm, tool hallucination rate) over its lm-eval samples logs and
  LLM-judge outputs.

This module holds what the importers share: `ImportReport` / `ImportResult`, the reading helpers
and the parser of Python-style call strings (``[f(a=1), g(b='x')]``) that BFCL's multi-turn
answers and CONFETTI's prompts use.
"""

from __future__ import annotations

import ast
import io
import json
import keyword
import re
import tokenize
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from diaforge.errors import InputError
from diaforge.jsonl import write_jsonl
from diaforge.schema import Dialogue, Persona, Provenance, Tool, ToolCall

__all__ = [
    "need",
    "ImportReport",
    "ImportResult",
    "InputError",
    "import_persona",
    "make_dialogue",
    "parse_call_string",
    "parse_call_strings",
    "read_json",
    "read_json_lines",
    "write_dialogues",
]


@dataclass
class ImportReport:
    """What an importer did: records loaded, records skipped (by reason), and format-specific
    counts (`counts`, e.g. dialogue acts, gold calls, turns)."""

    source: str
    path: str
    loaded: int = 0
    skipped: Counter = field(default_factory=Counter)
    counts: dict[str, Any] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "path": self.path,
            "loaded": self.loaded,
            "skipped": dict(self.skipped),
            "counts": self.counts,
        }

    def summary(self) -> str:
        """One line: ``bfcl multiple: loaded 200, skipped 0 (...)``."""
        skipped = sum(self.skipped.values())
        why = "; ".join(f"{r}: {n}" for r, n in self.skipped.most_common())
        return f"{self.source}: loaded {self.loaded}, skipped {skipped}" + (f" ({why})" if why else "")


@dataclass
class ImportResult:
    dialogues: list[Dialogue]
    report: ImportReport


def import_persona(source: str) -> Persona:
    """The placeholder persona of imported records (peer formats carry none, or one per speaker
    kept in the provenance)."""
    return Persona(id=f"{source}-user", description=f"A user of the {source} benchmark.")


def make_dialogue(
    source: str, extra: dict[str, Any], *, path: str | Path, record: int | str, entry_id: str, **fields: Any
) -> Dialogue:
    """A `Dialogue` of an imported record, `extra` kept as ``provenance.<source>``; a record our
    schema rejects (duplicate tool names, a gold tool that is not a candidate, ...) raises
    `InputError` naming the file, the record and the field."""
    fields.setdefault("persona", import_persona(source))
    provenance = Provenance(backend="import", source=source, **{source: extra})
    try:
        return Dialogue(id=entry_id, provenance=provenance, **fields)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err.get("loc", ())) or None
        msg = str(err.get("msg", "invalid record")).removeprefix("Value error, ")
        raise InputError(f"{entry_id}: {msg}", path=path, record=record, field=loc) from None


def need(cond: bool, message: str, path: str | Path, lineno: int) -> None:
    """Raise the importers' one-line `InputError` (file and record) unless `cond` holds."""
    if not cond:
        raise InputError(message, path=path, record=lineno)


def read_json(path: str | Path) -> Any:
    """A whole JSON document; `InputError` naming the file when it is missing or not JSON."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found" if not p.exists() else "not a file", path=p)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", path=p
        ) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", path=p) from None


def read_json_lines(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, object) for every non-blank line of a JSON Lines file (BFCL's ``.json``
    files are JSON Lines); `InputError` naming the file and the line on bad JSON."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found" if not p.exists() else "not a file", path=p)
    with p.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"invalid JSON ({exc.msg} at column {exc.colno})", path=p, record=lineno
                ) from None


def read_answers(path: str | Path) -> dict[str, tuple[int, dict[str, Any]]]:
    """BFCL-style answer file (JSON Lines of ``{"id", "ground_truth", ...}``): id -> (line number,
    record). `InputError` naming the file and line when a record has no string id or no answer."""
    out = {}
    for lineno, obj in read_json_lines(path):
        need(
            isinstance(obj, dict) and isinstance(obj.get("id"), str),
            "answer record needs a string 'id'",
            path,
            lineno,
        )
        need("ground_truth" in obj, f"{obj['id']}: answer record has no 'ground_truth'", path, lineno)
        out[obj["id"]] = (lineno, obj)
    return out


def write_dialogues(path: str | Path, dialogues: list[Dialogue]) -> int:
    """Write imported dialogues as our JSONL (atomically); returns the count."""
    return write_jsonl(path, dialogues)


# --------------------------------------------------------------------------------------------
# Python-style call strings
# --------------------------------------------------------------------------------------------


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    raise ValueError("the called object is not a (dotted) name")


def _call_node(node: ast.expr, tools: Mapping[str, Tool] | None) -> ToolCall:
    if not isinstance(node, ast.Call):
        raise ValueError(f"expected a call, got {type(node).__name__}")
    name = _dotted(node.func)
    args: dict[str, Any] = {}
    if node.args:
        tool = (tools or {}).get(name)
        if tool is None:
            raise ValueError(f"{name}: positional arguments need the tool's documentation")
        order = list(tool.properties)
        if len(node.args) > len(order):
            raise ValueError(
                f"{name}: {len(node.args)} positional arguments, the tool has {len(order)} parameters"
            )
        for key, value in zip(order, node.args, strict=False):
            args[key] = ast.literal_eval(value)
    for kw in node.keywords:
        if kw.arg is None:
            raise ValueError(f"{name}: **kwargs are not supported")
        kw.arg = kw.arg.removeprefix(_KW_PREFIX)
        if kw.arg in args:
            raise ValueError(f"{name}: argument {kw.arg!r} given twice")
        try:
            args[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            raise ValueError(f"{name}: argument {kw.arg!r} is not a literal value") from None
    return ToolCall(name=name, args=args)


_KW_PREFIX = "_kw_arg_"


def _escape_keyword_args(text: str) -> str:
    """``f(class=['Economy'])`` is not Python, but CONFETTI writes it: rename every argument named
    by a Python keyword (a keyword right after ``(`` or ``,`` and before ``=``) to a placeholder the
    parser accepts; string literals are left alone (the text is tokenised, not searched)."""
    if not any(keyword.iskeyword(w) for w in re.findall(r"[A-Za-z_]\w*(?=\s*=)", text)):
        return text
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text
    out = []
    for i, tok in enumerate(toks):
        if (
            tok.type == tokenize.NAME
            and keyword.iskeyword(tok.string)
            and i > 0
            and toks[i - 1].string in ("(", ",")
            and i + 1 < len(toks)
            and toks[i + 1].string == "="
        ):
            tok = tok._replace(string=_KW_PREFIX + tok.string)
        out.append(tok)
    return tokenize.untokenize(out)


def _parse_expr(text: str, what: str) -> ast.expr:
    try:
        return ast.parse(_escape_keyword_args(text.strip()), mode="eval").body
    except SyntaxError as exc:
        raise ValueError(f"not {what}: {exc.msg}") from None


def parse_call_string(text: str, tools: Mapping[str, Tool] | None = None) -> ToolCall:
    """One Python-style call (``cd(folder='document')``, ``sort('final_report.pdf')``) as a
    `ToolCall`; positional arguments take the tool's parameter names in documentation order.
    Values must be Python literals; an argument may be named by a Python keyword
    (``class=['Economy']``, as CONFETTI writes). Raises `ValueError` saying what is wrong. Never
    executes."""
    return _call_node(_parse_expr(text, "a call"), tools)


def parse_call_strings(text: str, tools: Mapping[str, Tool] | None = None) -> list[ToolCall]:
    """A bracketed list of calls (``[f(a=1), g(b='x')]``) or a single bare call, in order."""
    body = _parse_expr(text, "a call list")
    nodes = list(body.elts) if isinstance(body, (ast.List, ast.Tuple)) else [body]
    return [_call_node(n, tools) for n in nodes]
