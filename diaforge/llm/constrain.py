"""Constrained decoding of tool calls, as strict function calling does it (OpenAI's `strict`,
vLLM's guided decoding): once a reply opens a call list, every token it writes keeps the text a
prefix of a valid call list (one call or more), where a call is ``{"name": N, "args": A}`` with N one of the
candidate tools and A an object whose keys are properties of N's JSON Schema (each at most once,
every required one before the object closes) and whose values have the property's type (enum
values exactly). After the list closes only the end of turn may follow.

With a `Grounding` (``eval run --ground-values on``) the values are also held to what was said:
a string value (not an enum) must occur in the user's turns of the conversation, compared
after NFKC, case folding and collapsing whitespace, starting at a word boundary there and, once
its closing quote is written, ending at one (the rule by which `diaforge.eval.anatomy` counts a value as
grounded); a number must be written as a numeral said there (commas in digit groups dropped).
Where nothing of a kind was said (no numeral at all) that kind stays free. This is copy-constrained
decoding: the model still chooses which words to copy, and a key whose value nobody said still gets
one (a premature call stays wrong), but a value can no longer be corrupted while it is copied
(``"Lisão"`` for "Lisbon") nor made up from nothing. A grounded string takes no escape (an open
``\\`` could lead only to characters nobody said) and an integer only a whole numeral, so every
viable prefix can be completed one character at a time and decoding never strands.

`CallGrammar.viable(text)` says whether `text` (the reply from its ``[`` on) can still be completed
into such a list; `diaforge.llm.call_rule.CallRule` turns that into a decoding rule (`diaforge.llm.rules`) whose mask
allows the tokens whose text keeps the call viable, so that the chain writes the highest-scoring
such token (greedy decoding restricted to the grammar). Text before the call list (the thought, or
a reply that is not a call) is never constrained, so a model that asks a question asks it as it
would.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN

_WS = " \t\n\r"
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_NUMBER_PREFIX = re.compile(r"-?(?:(?:0|[1-9]\d*)(?:\.\d*)?(?:(?<=\d)[eE][+-]?\d*)?)?")
_SAID_NUMERAL = re.compile(r"(?<![\w.:-])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w:-])")
"""A numeral on its own: not part of a word, an identifier ("ACC-77"), a date or a clock time."""


def _fold(text: str) -> str:
    """NFKC, case folding and every run of whitespace as one space (ends kept, so a value that
    is still being written keeps its trailing space)."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold())


def _zero_tail(text: str, numeral: str) -> bool:
    """Whether `text` is `numeral` followed by zeros that leave its value unchanged."""
    if not text.startswith(numeral):
        return False
    return re.fullmatch(r"0*" if "." in numeral else r"(?:\.0*)?", text[len(numeral) :]) is not None


def _wordy(c: str) -> bool:
    return c.isalnum() or c == "_"


@dataclass(frozen=True)
class Grounding:
    """What the user said in a conversation, which grounded values must copy
    (module docstring). Build it with `Grounding.of`."""

    said: str
    """The said texts, folded (`_fold`) and joined by newlines."""
    numerals: tuple[str, ...]
    """Every numeral said, as written without digit-group commas ("1,000" -> "1000")."""

    @classmethod
    def of(cls, texts: Sequence[str]) -> Grounding:
        raw = "\n".join(t for t in texts if t)
        numerals = dict.fromkeys(m.group(0).replace(",", "") for m in _SAID_NUMERAL.finditer(raw))
        return cls(_fold(raw), tuple(numerals))

    @cached_property
    def whole_numerals(self) -> tuple[str, ...]:
        """The numerals said that are whole numbers, which an integer value may copy (found once:
        `number` asks for every token scanned inside a number)."""
        return tuple(n for n in self.numerals if float(n).is_integer())

    def string(self, value: str, complete: bool) -> bool:
        """Whether a string value (all of it when `complete`, else its beginning) can be grounded."""
        needle = _fold(value)
        if not needle:
            return not complete
        hay = self.said
        at = hay.find(needle)
        while at >= 0:
            end = at + len(needle)
            starts = at == 0 or not _wordy(hay[at - 1]) or not _wordy(needle[0])
            ends = not complete or end == len(hay) or not _wordy(hay[end]) or not _wordy(needle[-1])
            if starts and ends:
                return True
            at = hay.find(needle, at + 1)
        return False

    def number(self, text: str, complete: bool, integer: bool = False) -> bool:
        """Whether a number written as `text` (all of it when `complete`) can be one said; for an
        `integer`, only the whole numerals said count (none: the number is free)."""
        numerals = self.whole_numerals if integer else self.numerals
        if not numerals:
            return True
        if not complete:  # "6." may still become 6.0, a numeral "6" said; "12.5" may become "12.50"
            return any(n.startswith(text) or _zero_tail(text, n) for n in numerals)
        value = float(text)
        return any(float(n) == value for n in numerals)


class _Incomplete(Exception):
    """The text ended where more was needed: a viable prefix."""


class _Invalid(Exception):
    """The text cannot be completed into a valid call list."""


@dataclass
class _Cursor:
    text: str
    i: int = 0

    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in _WS:
            self.i += 1

    def peek(self) -> str:
        if self.i >= len(self.text):
            raise _Incomplete
        return self.text[self.i]

    def expect(self, literal: str) -> None:
        rest = self.text[self.i : self.i + len(literal)]
        if not literal.startswith(rest):
            raise _Invalid
        if len(rest) < len(literal):
            raise _Incomplete
        self.i += len(literal)

    def string(self, escapes: bool = True) -> str:
        """A JSON string; returns its decoded value (raises _Incomplete with the value so far
        stored in `partial`). Without `escapes` (a tool name, a key, a grounded value) a backslash
        is invalid."""
        self.expect('"')
        out = []
        while True:
            if self.i >= len(self.text):
                self.partial = "".join(out)
                raise _Incomplete
            c = self.text[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                if not escapes:
                    raise _Invalid
                if self.i + 1 >= len(self.text):
                    self.partial = "".join(out)
                    raise _Incomplete
                esc = self.text[self.i + 1]
                if esc == "u":
                    digits = self.text[self.i + 2 : self.i + 6]
                    if not re.fullmatch(r"[0-9a-fA-F]*", digits):
                        raise _Invalid
                    if len(digits) < 4:
                        self.partial = "".join(out)
                        raise _Incomplete
                    out.append(chr(int(digits, 16)))
                    self.i += 6
                    continue
                if esc not in '"\\/bfnrt':
                    raise _Invalid
                out.append(json.loads(f'"\\{esc}"'))
                self.i += 2
                continue
            if c in "\n\r" or ord(c) < 0x20:
                raise _Invalid
            out.append(c)
            self.i += 1

    partial: str = field(default="")


def _number(cur: _Cursor, integer: bool, ground: Grounding | None = None) -> None:
    rest = cur.text[cur.i :]
    whole = _NUMBER_PREFIX.match(rest)
    if whole is not None and whole.end() == len(rest):  # the text ends inside the number
        if (integer and any(c in rest for c in ".eE")) or (
            ground is not None and not ground.number(rest, False, integer)
        ):
            raise _Invalid
        raise _Incomplete
    m = _NUMBER.match(rest)
    if m is None or (integer and any(c in m.group(0) for c in ".eE")):
        raise _Invalid
    if ground is not None and not ground.number(m.group(0), True, integer):
        raise _Invalid
    cur.i += m.end()


def _any(cur: _Cursor) -> None:
    """Any JSON value."""
    cur.ws()
    c = cur.peek()
    if c == '"':
        cur.string()
    elif c == "{":
        _container(cur, "{", "}", lambda: (cur.string(), cur.ws(), cur.expect(":"), _any(cur)))
    elif c == "[":
        _container(cur, "[", "]", lambda: _any(cur))
    elif c in "-0123456789":
        _number(cur, integer=False)
    else:
        for literal in ("true", "false", "null"):
            if literal.startswith(cur.text[cur.i : cur.i + len(literal)]):
                cur.expect(literal)
                return
        raise _Invalid


def _container(cur: _Cursor, open_: str, close: str, item: Any, *, allow_empty: bool = True) -> None:
    cur.expect(open_)
    cur.ws()
    if cur.peek() == close:
        if not allow_empty:
            raise _Invalid
        cur.i += 1
        return
    while True:
        cur.ws()
        item()
        cur.ws()
        c = cur.peek()
        cur.i += 1
        if c == close:
            return
        if c != ",":
            raise _Invalid


def _grounded_string(cur: _Cursor, ground: Grounding | None) -> None:
    """A JSON string, held to `ground` when there is one."""
    if ground is None:
        cur.string()
        return
    try:
        value = cur.string(escapes=False)
    except _Incomplete:
        if not ground.string(cur.partial, complete=False):
            raise _Invalid from None
        raise
    if not ground.string(value, complete=True):
        raise _Invalid


def _value(cur: _Cursor, spec: dict[str, Any], ground: Grounding | None = None) -> None:
    """A JSON value of the type `spec` describes (anything for a schema it cannot check); string
    and number values held to `ground` when it is given."""
    cur.ws()
    if spec.get("enum"):
        options = [json.dumps(v, ensure_ascii=False) for v in spec["enum"]]
        rest = cur.text[cur.i :]
        full = [o for o in options if rest.startswith(o)]
        if full:
            cur.i += len(max(full, key=len))
            return
        if any(o.startswith(rest) for o in options):
            raise _Incomplete
        raise _Invalid
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    c = cur.peek()
    if kind == "string":
        if c != '"':
            raise _Invalid
        _grounded_string(cur, ground)
    elif kind in ("number", "integer"):
        if c not in "-0123456789":
            raise _Invalid
        _number(cur, integer=kind == "integer", ground=ground)
    elif kind == "boolean":
        for literal in ("true", "false"):
            if literal.startswith(cur.text[cur.i : cur.i + len(literal)]):
                cur.expect(literal)
                return
        raise _Invalid
    elif kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        if c != "[":
            raise _Invalid
        _container(cur, "[", "]", lambda: _value(cur, items, ground))
    elif kind == "object":
        if c != "{":
            raise _Invalid
        _any(cur)
    else:
        _any(cur)


@dataclass(frozen=True)
class CallGrammar:
    """The call lists allowed for one set of candidate tools (module docstring)."""

    tools: dict[str, dict[str, Any]]
    """Tool name -> its JSON Schema of parameters (``properties``, ``required``)."""
    grounding: Grounding | None = None
    """What was said, when values must be copied from it (module docstring); None: types only."""

    @classmethod
    def from_specs(cls, specs: Sequence[dict[str, Any]], grounding: Grounding | None = None) -> CallGrammar:
        """From OpenAI-style specs (``{"name", "parameters"}``, or wrapped in ``"function"``)."""
        tools = {}
        for spec in specs:
            fn = spec.get("function", spec)
            tools[fn["name"]] = fn.get("parameters") or {}
        return cls(tools, grounding)

    def _args(self, cur: _Cursor, name: str) -> None:
        schema = self.tools[name]
        props = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        seen: set[str] = set()
        cur.expect("{")
        cur.ws()
        if cur.peek() == "}":
            if required:
                raise _Invalid
            cur.i += 1
            return
        while True:
            cur.ws()
            try:
                key = cur.string(escapes=False)
            except _Incomplete:
                if not any(k.startswith(cur.partial) for k in props if k not in seen):
                    raise _Invalid from None
                raise
            if key not in props or key in seen:
                raise _Invalid
            seen.add(key)
            cur.ws()
            cur.expect(":")
            _value(cur, props[key], self.grounding)
            cur.ws()
            c = cur.peek()
            cur.i += 1
            if c == "}":
                if not required <= seen:
                    raise _Invalid
                return
            if c != "," or seen >= set(props):
                raise _Invalid

    def _call(self, cur: _Cursor) -> None:
        cur.expect("{")
        cur.ws()
        cur.expect('"name"')
        cur.ws()
        cur.expect(":")
        cur.ws()
        try:
            name = cur.string(escapes=False)
        except _Incomplete:
            if not any(n.startswith(cur.partial) for n in self.tools):
                raise _Invalid from None
            raise
        if name not in self.tools:
            raise _Invalid
        cur.ws()
        cur.expect(",")
        cur.ws()
        cur.expect('"args"')
        cur.ws()
        cur.expect(":")
        cur.ws()
        self._args(cur, name)
        cur.ws()
        cur.expect("}")

    def viable(self, text: str) -> bool:
        """Whether `text` (starting at the call list's ``[``) is a call list or can still become
        one; trailing whitespace after the closing ``]`` is allowed, anything else is not."""
        return self.state(text) != "invalid"

    def state(self, text: str) -> str:
        """``complete`` (a whole call list, then at most whitespace), ``open`` (a viable prefix)
        or ``invalid``."""
        cur = _Cursor(text)
        try:
            cur.ws()
            _container(cur, "[", "]", lambda: self._call(cur), allow_empty=False)
            cur.ws()
        except _Incomplete:
            return "open"
        except _Invalid:
            return "invalid"
        return "complete" if cur.i == len(text) else "invalid"


def call_start(reply: str) -> int | None:
    """Where the call list of a reply begins (the index of its ``[``), when the reply (after its
    thought, if it has one) opens with one; None otherwise, or when the thought is still open."""
    body_at = 0
    if reply.lstrip().startswith(THINK_OPEN):
        close = reply.find(THINK_CLOSE)
        if close < 0:
            return None
        body_at = close + len(THINK_CLOSE)
    body = reply[body_at:]
    stripped = body.lstrip()
    if not stripped.startswith("["):
        return None
    return body_at + len(body) - len(stripped)


def body_is_not_a_call(reply: str) -> bool:
    """Whether the reply's body (after a closed thought, or the whole reply without one) has begun
    with something other than ``[`` (a reply still writing ``<think>`` has not begun its body)."""
    if THINK_OPEN.startswith(reply.lstrip()):
        return False
    if reply.lstrip().startswith(THINK_OPEN):
        close = reply.find(THINK_CLOSE)
        if close < 0:
            return False
        reply = reply[close + len(THINK_CLOSE) :]
    body = reply.lstrip()
    return bool(body) and not body.startswith("[")


def span_kind(reply: str) -> str:
    """What a reply is writing at its end: ``"thought"`` (inside an open thought), ``"call"``
    (inside its call list) or ``"text"`` (anything else)."""
    body = reply.lstrip()
    if body.startswith(THINK_OPEN) and THINK_CLOSE not in body:
        return "thought"
    return "call" if call_start(reply) is not None else "text"
