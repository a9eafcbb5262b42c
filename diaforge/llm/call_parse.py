"""The call list of a reply parsed as it is written: the resumable form of `CallGrammar.state`.

Constrained decoding (`diaforge.llm.constrain`) asks, for each of up to thousands of candidate tokens,
whether the call written so far followed by the token's text can still become a valid call list.
`CallGrammar.state` answers by parsing the whole text again from its ``[``. Here a parse is a value:
`begin(grammar)` is the state before any text, `CallParse.feed(text)` the state after `text` (None
where `state` says ``invalid``) and `CallParse.complete` says whether a whole call list has been
written. Feeding never changes the state fed, so every candidate is tried from the same state, each
for the cost of its own characters.

The contract is exact agreement with the recursive parser, which is the specification: for every
grammar ``g`` and text ``t``, ``begin(g).feed(t)`` is None iff ``g.state(t) == "invalid"`` and is
`complete` iff ``g.state(t) == "complete"``; and ``s.feed(a).feed(b)`` is the state ``s.feed(a + b)``.

How: a pushdown automaton reading one character at a time. The state is a stack of frames (the call
list, a call, its arguments, the value being written, the containers around it), each an immutable
tuple whose `step` says what one character does to it: replace it, push a child, pop it (the
character consumed, or handed to the frame below: a number or an enum value ends at the first
character that cannot continue it), or make the text invalid. The stack is a linked list of pairs,
so a state shares everything below its top with the state it was fed from.

Where the recursive parser looks further than one character, the frames reproduce what it decides:

- An enum value is the longest option the text starts with. Options are the JSON of values, and a
  JSON value that is a proper prefix of another is a number followed by a digit, ``.``, ``e``,
  ``E``, ``+`` or ``-``: no character that may follow a value. So reading on while some option
  continues, and ending the value where none does, picks the same option once the value has ended.
- A number is read with the automaton of `_NUMBER_PREFIX`; where it stops short of `_NUMBER` (``1.``,
  ``1e``, ``-``) the text is invalid, as the recursive parser finds by matching `_NUMBER` and then
  meeting a character no value may end with. ``\\d`` in those patterns is any Unicode decimal digit.
- A tool name or a key can only be one of the candidates, so each character narrows them. Right
  after the ``:`` of ``"name"`` a grammar with no tools at all is invalid (the recursive parser asks
  which names start with the empty text as soon as it tries to read the name).

Three checks are not settled character by character, because what they reject a longer text may
pass again; the recursive parser applies them only to the value where the text ends, and so does
`feed`, to the frame on top when its text ends, without letting them end the parse of a longer
text (the frames' `viable`; `_CHECKED_WHERE_TEXT_ENDS`):

- An enum value still being written, of options ``1`` and ``1.5``: the recursive parser takes ``1``
  from ``1.`` (the longest option written whole) and fails on the ``.``, while ``1.5`` is valid.
- A grounded string is compared after NFKC, whose result for a prefix is not a prefix of the result
  for the whole: ``cafe`` may be no word said while ``café`` written as ``e`` and a combining accent
  is one.
- A grounded number still being written must be the beginning of a numeral said, while a finished
  one is compared by value: ``7`` is no beginning of a said ``007``, yet ``7`` equals it.

Finished values are checked as the recursive parser checks them, when they close, and what can
never be undone (a character no value allows, a key the schema lacks) ends the parse at once.

A grounded string is folded (`_fold`) incrementally: the text is cut before each character where
NFKC cannot join it with what precedes (`_boundary`), each settled piece is folded on its own and
the occurrences of the folded value in what was said are narrowed as pieces settle, so a character
costs the fold of the few characters since the last cut, not of the whole value.

Size exception: one pushdown automaton whose frames (a call, its arguments, each kind of value,
strings grounded or not) share private helpers and the prepared grammar; split across modules they
would have to export them, and the parity tests read the machine as one piece.
"""

from __future__ import annotations

import json
import re
import unicodedata
import weakref
from functools import cache, lru_cache
from typing import Any, NamedTuple

from diaforge.llm.constrain import _WS, CallGrammar, Grounding, _fold, _wordy

__all__ = ["CallParse", "begin"]

_NUMBER_START = "-0123456789"
_UNICODE_DIGIT = re.compile(r"\d")
"""A decimal digit as ``\\d`` matches it in `_NUMBER`: any Unicode decimal digit, not only ASCII."""


class _Pop:
    """The frame on top is finished; `again` when the character was not its own (it goes to the
    frame below)."""

    __slots__ = ("again",)

    def __init__(self, again: bool) -> None:
        self.again = again

    def __repr__(self) -> str:
        return "_POP_AGAIN" if self.again else "_POP"


_POP = _Pop(False)
_POP_AGAIN = _Pop(True)


class _Push(NamedTuple):
    """The frame on top becomes `resume` and `child` (which has consumed the character) is pushed."""

    resume: Any
    child: Any


# --------------------------------------------------------------------------------------------
# The grammar, prepared once per parse
# --------------------------------------------------------------------------------------------


class _Grammar:
    """A `CallGrammar` with what the frames need of it: the tool names, and each tool's schema
    prepared (`_Tool`) when its arguments are first reached (as the recursive parser reads a schema
    only when a call names its tool)."""

    __slots__ = ("_prepared", "ground", "names", "tools")

    def __init__(self, grammar: CallGrammar) -> None:
        self.tools = grammar.tools
        self.names = tuple(grammar.tools)
        self.ground = grammar.grounding
        self._prepared: dict[str, _Tool] = {}

    def tool(self, name: str) -> _Tool:
        """The prepared schema of the tool called `name`."""
        tool = self._prepared.get(name)
        if tool is None:
            tool = self._prepared[name] = _Tool(self.tools[name], self.ground)
        return tool


class _Tool:
    """One tool's parameters as `CallGrammar._args` reads them: the properties (in order), the
    required ones, and each property's value kind, made when the property is first written."""

    __slots__ = ("_ground", "_kinds", "keys", "keyset", "props", "required")

    def __init__(self, schema: dict[str, Any], ground: Grounding | None) -> None:
        self.props: dict[str, Any] = schema.get("properties") or {}
        self.keys = tuple(self.props)
        self.keyset = frozenset(self.props)
        self.required = frozenset(schema.get("required") or [])
        self._ground = ground
        self._kinds: dict[str, _Kind] = {}

    def kind(self, key: str) -> _Kind:
        """The kind of value property `key` takes."""
        kind = self._kinds.get(key)
        if kind is None:
            kind = self._kinds[key] = _kind(self.props[key], self._ground)
        return kind


class _Kind:
    """What a value of one schema may be; `open` starts reading one at its first (non-space)
    character, returning the frame that has read it, or None when no such value starts so."""

    __slots__ = ()

    def open(self, c: str) -> Any:
        raise NotImplementedError


def _kind(spec: dict[str, Any], ground: Grounding | None) -> _Kind:
    """The kind of value `spec` describes, decided as `constrain._value` decides it."""
    if spec.get("enum"):
        return _EnumKind(tuple(json.dumps(v, ensure_ascii=False) for v in spec["enum"]))
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        return _StringKind(ground)
    if kind in ("number", "integer"):
        return _NumberKind(kind == "integer", ground)
    if kind == "boolean":
        return _BOOLEAN
    if kind == "array":
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        return _ArrayKind(_kind(items, ground))
    if kind == "object":
        return _OBJECT
    return _ANY


class _EnumKind(_Kind):
    """One of the options, written exactly as their JSON."""

    __slots__ = ("options",)

    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = options

    def open(self, c: str) -> Any:
        return _Enum(self.options, 0).step(c)


class _StringKind(_Kind):
    """A string; held to what was said when there is a grounding."""

    __slots__ = ("ground",)

    def __init__(self, ground: Grounding | None) -> None:
        self.ground = ground

    def open(self, c: str) -> Any:
        if c != '"':
            return None
        if self.ground is None:
            return _STRING[_TEXT]
        return _GroundedString(self.ground, 0, "", (), "")


class _NumberKind(_Kind):
    """A number (an integer: no fraction, no exponent); held to the numerals said when there is a
    grounding."""

    __slots__ = ("ground", "integer")

    def __init__(self, integer: bool, ground: Grounding | None) -> None:
        self.integer = integer
        self.ground = ground

    def open(self, c: str) -> Any:
        if c not in _NUMBER_START:
            return None
        if self.ground is None:
            return _NUMBER[self.integer][_N_START].step(c)
        said = self.ground.whole_numerals if self.integer else self.ground.numerals
        return _GroundedNumber(self.ground, self.integer, _N_START, "", said, not said).step(c)


class _BooleanKind(_Kind):
    """``true`` or ``false``."""

    __slots__ = ()

    def open(self, c: str) -> Any:
        if c == "t":
            return _Literal("true", 1)
        if c == "f":
            return _Literal("false", 1)
        return None


class _ArrayKind(_Kind):
    """An array whose items are of one kind."""

    __slots__ = ("items",)

    def __init__(self, items: _Kind) -> None:
        self.items = items

    def open(self, c: str) -> Any:
        return _Array(self.items, _A_OPEN) if c == "[" else None


class _ObjectKind(_Kind):
    """Any JSON object."""

    __slots__ = ()

    def open(self, c: str) -> Any:
        return _OBJECT_FRAME[_O_OPEN] if c == "{" else None


class _AnyKind(_Kind):
    """Any JSON value (`constrain._any`): a schema the grammar cannot check, and what an object
    holds."""

    __slots__ = ()

    def open(self, c: str) -> Any:
        if c == '"':
            return _STRING[_TEXT]
        if c == "{":
            return _OBJECT_FRAME[_O_OPEN]
        if c == "[":
            return _Array(self, _A_OPEN)
        if c in _NUMBER_START:
            return _NUMBER[False][_N_START].step(c)
        word = _LITERALS.get(c)
        return None if word is None else _Literal(word, 1)


_BOOLEAN = _BooleanKind()
_OBJECT = _ObjectKind()
_ANY = _AnyKind()
_LITERALS = {"t": "true", "f": "false", "n": "null"}


# --------------------------------------------------------------------------------------------
# The call list, a call and its arguments
# --------------------------------------------------------------------------------------------

_L_BEFORE, _L_ITEM, _L_AFTER, _L_CLOSED = range(4)


class _List(NamedTuple):
    """The call list: before its ``[``, expecting a call (after ``[`` or ``,``; an empty list is
    not one), after a call, closed (then only whitespace)."""

    grammar: _Grammar
    phase: int

    def step(self, c: str) -> Any:
        if c in _WS:
            return self
        phase = self.phase
        if phase == _L_BEFORE:
            return _List(self.grammar, _L_ITEM) if c == "[" else None
        if phase == _L_ITEM:
            return _Push(_List(self.grammar, _L_AFTER), _Call(self.grammar, 0)) if c == "{" else None
        if phase == _L_AFTER:
            if c == ",":
                return _List(self.grammar, _L_ITEM)
            return _List(self.grammar, _L_CLOSED) if c == "]" else None
        return None


_SKIP, _NAME, _ARGS = 0, 1, 2
_CALL = (_SKIP, '"name"', _SKIP, ":", _SKIP, _NAME, _SKIP, ",", _SKIP, '"args"', _SKIP, ":", _SKIP, _ARGS, _SKIP, "}")  # fmt: skip
"""A call after its ``{``, as `CallGrammar._call` reads it: whitespace, literal text, the tool's name,
its arguments."""
_NAME_COLON = _CALL.index(_NAME) - 2
"""Where the ``:`` before the name is, after which a grammar without tools is invalid."""


class _Call(NamedTuple):
    """One call after its ``{``: at step `pc` of `_CALL`, `pos` characters into a literal (for the
    name: whether its opening quote is read), the name so far and the tool names it may still
    become."""

    grammar: _Grammar
    pc: int
    pos: int = 0
    name: str = ""
    alive: tuple[str, ...] = ()

    def step(self, c: str) -> Any:
        pc = self.pc
        op = _CALL[pc]
        if op == _SKIP:
            if c in _WS:
                return self
            pc += 1
            op = _CALL[pc]
        if type(op) is str:
            pos = self.pos
            if c != op[pos]:
                return None
            pos += 1
            if pos < len(op):
                return _Call(self.grammar, pc, pos, self.name)
            if pc == _NAME_COLON and not self.grammar.names:
                return None
            pc += 1
            return _POP if pc == len(_CALL) else _Call(self.grammar, pc, 0, self.name)
        if op == _NAME:
            return self._name(c, pc)
        if c != "{":
            return None
        return _Push(_Call(self.grammar, pc + 1, 0, self.name), _Args(self.grammar.tool(self.name), _K_OPEN))

    def _name(self, c: str, pc: int) -> Any:
        """The tool's name: a string without escapes that stays the beginning of a tool name."""
        if not self.pos:
            if c != '"':
                return None
            return _Call(self.grammar, pc, 1, "", self.grammar.names)
        if c == '"':
            return _Call(self.grammar, pc + 1, 0, self.name) if self.name in self.grammar.tools else None
        if c == "\\" or ord(c) < 0x20:
            return None
        k = len(self.name)
        alive = tuple(n for n in self.alive if len(n) > k and n[k] == c)
        return _Call(self.grammar, pc, 1, self.name + c, alive) if alive else None

    def run(self, chars: str) -> _Call | None:
        """What stepping each of `chars` gives inside the name, for characters a name may hold."""
        alive = tuple(n for n in self.alive if n.startswith(chars, len(self.name)))
        return _Call(self.grammar, self.pc, 1, self.name + chars, alive) if alive else None


_K_OPEN, _K_KEY_START, _K_KEY, _K_AFTER_KEY, _K_VALUE, _K_AFTER_VALUE = range(6)


class _Args(NamedTuple):
    """A call's arguments after their ``{``: keys of the tool's properties, each at most once, every
    required one before the ``}``; `key` is the key being written (then the one whose value comes),
    `alive` the properties it may still become."""

    tool: _Tool
    phase: int
    seen: frozenset[str] = frozenset()
    key: str = ""
    alive: tuple[str, ...] = ()

    def step(self, c: str) -> Any:
        phase = self.phase
        if phase == _K_KEY:
            return self._key(c)
        if c in _WS:
            return self
        if phase == _K_VALUE:
            child = self.tool.kind(self.key).open(c)
            return None if child is None else _Push(_Args(self.tool, _K_AFTER_VALUE, self.seen), child)
        if phase == _K_AFTER_VALUE:
            if c == "}":
                return _POP if self.tool.required <= self.seen else None
            if c == "," and not self.seen >= self.tool.keyset:
                return _Args(self.tool, _K_KEY_START, self.seen)
            return None
        if phase == _K_AFTER_KEY:
            return _Args(self.tool, _K_VALUE, self.seen, self.key) if c == ":" else None
        if phase == _K_OPEN and c == "}":
            return None if self.tool.required else _POP
        if c != '"':
            return None
        alive = tuple(k for k in self.tool.keys if k not in self.seen)
        return _Args(self.tool, _K_KEY, self.seen, "", alive) if alive else None

    def _key(self, c: str) -> Any:
        """A key: a string without escapes that stays the beginning of a property not yet given."""
        if c == '"':
            if self.key not in self.alive:
                return None
            return _Args(self.tool, _K_AFTER_KEY, self.seen | {self.key}, self.key)
        if c == "\\" or ord(c) < 0x20:
            return None
        k = len(self.key)
        alive = tuple(p for p in self.alive if len(p) > k and p[k] == c)
        return _Args(self.tool, _K_KEY, self.seen, self.key + c, alive) if alive else None

    def run(self, chars: str) -> _Args | None:
        """What stepping each of `chars` gives inside a key, for characters a key may hold."""
        alive = tuple(p for p in self.alive if p.startswith(chars, len(self.key)))
        return _Args(self.tool, _K_KEY, self.seen, self.key + chars, alive) if alive else None


# --------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------

_TEXT, _ESCAPE = 0, 1
"""`_String` states: in the text, after a backslash; 2 + k: after ``\\u`` and k hex digits."""


class _String(NamedTuple):
    """A JSON string after its opening quote, its value not kept (a string not held to what was
    said, or a key of an object of any kind): JSON escapes, no control characters."""

    state: int

    def step(self, c: str) -> Any:
        state = self.state
        if state == _TEXT:
            if c == '"':
                return _POP
            if c == "\\":
                return _STRING[_ESCAPE]
            return None if ord(c) < 0x20 else self
        if state == _ESCAPE:
            if c == "u":
                return _STRING[2]
            return _STRING[_TEXT] if c in '"\\/bfnrt' else None
        if c not in "0123456789abcdefABCDEF":
            return None
        return _STRING[_TEXT] if state == 5 else _STRING[state + 1]


_STRING = tuple(_String(state) for state in range(6))
_IN_TEXT = _STRING[_TEXT]
_PLAIN = re.compile(r'[^"\\\x00-\x1f]+')
"""A run of characters that leave a string as it is (`_String` in its text)."""
_PLAIN_ASCII = re.compile(r"[ !#-\[\]-\x7f]+")
"""A run of printable ASCII characters other than ``"`` and ``\\`` (`_GroundedString.run`)."""

_N_START, _N_MINUS, _N_ZERO, _N_INT, _N_DOT, _N_FRACTION, _N_E, _N_E_SIGN, _N_EXPONENT = range(9)
_N_DONE = frozenset((_N_ZERO, _N_INT, _N_FRACTION, _N_EXPONENT))
"""The states of `_NUMBER_PREFIX`'s automaton where the text read is a whole `_NUMBER`."""


def _digit(c: str) -> bool:
    """Whether `c` is a digit to ``\\d`` (ASCII at once; the rest by the pattern itself)."""
    return "0" <= c <= "9" or (c > "\x7f" and _UNICODE_DIGIT.match(c) is not None)


def _number_next(state: int, c: str) -> int:
    """The state after `c` of the automaton that reads `_NUMBER_PREFIX`; -1 where `c` cannot
    continue the number (its first digit is ASCII, ``0|[1-9]``; later ones any ``\\d``)."""
    if state in (_N_START, _N_MINUS):
        if c == "0":
            return _N_ZERO
        if "1" <= c <= "9":
            return _N_INT
        return _N_MINUS if c == "-" and state == _N_START else -1
    if state in (_N_INT, _N_FRACTION):
        if _digit(c):
            return state
        if c == "." and state == _N_INT:
            return _N_DOT
        return _N_E if c in "eE" else -1
    if state == _N_ZERO:
        if c == ".":
            return _N_DOT
        return _N_E if c in "eE" else -1
    if state == _N_DOT:
        return _N_FRACTION if _digit(c) else -1
    if state == _N_E and c in "+-":
        return _N_E_SIGN
    return _N_EXPONENT if _digit(c) else -1


class _Number(NamedTuple):
    """A number not held to what was said, at `state` of the `_NUMBER_PREFIX` automaton; it ends
    at the first character that cannot continue it."""

    integer: bool
    state: int

    def step(self, c: str) -> Any:
        state = _number_next(self.state, c)
        if state < 0:
            return _POP_AGAIN if self.state in _N_DONE else None
        if self.integer and c in ".eE":
            return None
        return _NUMBER[self.integer][state]


_NUMBER = {integer: tuple(_Number(integer, state) for state in range(9)) for integer in (False, True)}


class _GroundedNumber(NamedTuple):
    """A number held to the numerals said: `text` so far and the numerals it is still the
    beginning of, or a zero-padded form of (`Grounding.number` with ``complete=False``); `free`
    when nothing of its kind was said."""

    ground: Grounding
    integer: bool
    state: int
    text: str
    said: tuple[str, ...]
    free: bool

    def step(self, c: str) -> Any:
        state = _number_next(self.state, c)
        if state < 0:
            if self.state not in _N_DONE or not self.ground.number(self.text, True, self.integer):
                return None
            return _POP_AGAIN
        if self.integer and c in ".eE":
            return None
        text = self.text + c
        said = self.said if self.free else tuple(n for n in self.said if _still_said(n, len(text), c))
        return _GroundedNumber(self.ground, self.integer, state, text, said, self.free)

    def viable(self) -> bool:
        """Whether the number as written so far can become one said (checked where a text ends)."""
        return self.free or bool(self.said)


def _still_said(numeral: str, k: int, c: str) -> bool:
    """Whether a number whose first k - 1 characters were the beginning of `numeral`, or `numeral`
    then zeros that keep its value (`_zero_tail`), still is once its k-th character is `c`."""
    if k <= len(numeral):
        return numeral[k - 1] == c
    if "." in numeral:
        return c == "0"
    return c == ("." if k == len(numeral) + 1 else "0")


class _Literal(NamedTuple):
    """``true``, ``false`` or ``null``, `pos` characters read."""

    word: str
    pos: int

    def step(self, c: str) -> Any:
        if c != self.word[self.pos]:
            return None
        pos = self.pos + 1
        return _POP if pos == len(self.word) else _Literal(self.word, pos)


class _Enum(NamedTuple):
    """An enum value, `k` characters read: the options it is still the beginning of, and `passed`
    when a shorter option was read whole on the way. The value ends where no option continues it,
    if it is one of them then: the longest option the text starts with, as the recursive parser
    picks (module docstring)."""

    alive: tuple[str, ...]
    k: int
    passed: bool = False

    def step(self, c: str) -> Any:
        k = self.k
        alive = tuple(o for o in self.alive if len(o) > k and o[k] == c)
        whole = any(len(o) == k for o in self.alive)
        if alive:
            return _Enum(alive, k + 1, self.passed or whole)
        return _POP_AGAIN if whole else None

    def viable(self) -> bool:
        """Whether the recursive parser, the text ending here, would not already have taken a
        shorter option (``1`` of ``1`` and ``1.5`` where ``1.`` was written) and failed on what
        follows it; the text may still go on to the longer one (checked where a text ends)."""
        return not self.passed or any(len(o) == self.k for o in self.alive)


_A_OPEN, _A_AFTER, _A_ITEM = range(3)


class _Array(NamedTuple):
    """An array after its ``[``: items of one kind, separated by commas."""

    items: _Kind
    phase: int

    def step(self, c: str) -> Any:
        if c in _WS:
            return self
        if self.phase == _A_AFTER:
            if c == ",":
                return _Array(self.items, _A_ITEM)
            return _POP if c == "]" else None
        if self.phase == _A_OPEN and c == "]":
            return _POP
        child = self.items.open(c)
        return None if child is None else _Push(_Array(self.items, _A_AFTER), child)


_O_OPEN, _O_AFTER_KEY, _O_VALUE, _O_AFTER_VALUE, _O_KEY = range(5)


class _Object(NamedTuple):
    """An object of any keys and values after its ``{``."""

    phase: int

    def step(self, c: str) -> Any:
        if c in _WS:
            return self
        phase = self.phase
        if phase in (_O_OPEN, _O_KEY):
            if c == "}" and phase == _O_OPEN:
                return _POP
            return _Push(_OBJECT_FRAME[_O_AFTER_KEY], _STRING[_TEXT]) if c == '"' else None
        if phase == _O_AFTER_KEY:
            return _OBJECT_FRAME[_O_VALUE] if c == ":" else None
        if phase == _O_VALUE:
            child = _ANY.open(c)
            return None if child is None else _Push(_OBJECT_FRAME[_O_AFTER_VALUE], child)
        if c == ",":
            return _OBJECT_FRAME[_O_KEY]
        return _POP if c == "}" else None


_OBJECT_FRAME = tuple(_Object(phase) for phase in range(5))


# --------------------------------------------------------------------------------------------
# Grounded strings
# --------------------------------------------------------------------------------------------


@cache
def _composes_backward() -> frozenset[str]:
    """Every character that can compose with the character before it under NFC/NFKC: the second
    of each two-character canonical decomposition, and the Hangul vowel and final jamo (composed
    algorithmically). A superset is safe: it only cuts the text less often. Found once (a scan of
    the code points, a fraction of a second), when a grounded string first holds a non-ASCII
    character."""
    second = set()
    for cp in range(0x110000):
        decomposition = unicodedata.decomposition(chr(cp))
        if decomposition and decomposition[0] != "<":
            parts = decomposition.split()
            if len(parts) == 2:
                second.add(chr(int(parts[1], 16)))
    second.update(chr(cp) for cp in range(0x1160, 0x1200))
    return frozenset(second)


@lru_cache(maxsize=65536)
def _boundary(c: str) -> bool:
    """Whether NFKC of a text may be taken in two pieces cut just before `c`: the first character
    of its decomposition is a starter (canonical combining class 0, so nothing is reordered across
    it and nothing after it composes with what is before) that never composes with a character
    before it. Every ASCII character is one (`_GroundedString.step` does not ask)."""
    first = unicodedata.normalize("NFKD", c)[0]
    return unicodedata.combining(first) == 0 and first not in _composes_backward()


def _word_starts(hay: str, needle: str) -> tuple[int, ...]:
    """Where `needle` occurs in `hay` starting at a word boundary, as `Grounding.string` asks."""
    free = not _wordy(needle[0])
    out = []
    at = hay.find(needle)
    while at >= 0:
        if free or at == 0 or not _wordy(hay[at - 1]):
            out.append(at)
        at = hay.find(needle, at + 1)
    return tuple(out)


class _GroundedString(NamedTuple):
    """A string held to what was said, after its opening quote (no escapes, `Grounding.string`).

    The value so far is a settled part, folded (`_fold`): its length `n` and last character `last`,
    and `at`, where it occurs in what was said at a word start; then `tail`, the characters since
    the last cut (`_boundary`), not yet folded. While nothing is settled (`n == 0`), `tail` is the
    whole value."""

    ground: Grounding
    n: int
    last: str
    at: tuple[int, ...]
    tail: str

    def step(self, c: str) -> Any:
        if c == '"':
            return _POP if self._matches(complete=True) else None
        if c == "\\" or ord(c) < 0x20:
            return None
        if self.tail and (c < "\x80" or _boundary(c)):
            settled = self._settle()
            if settled is None:
                return None
            if settled is not self:
                return _GroundedString(self.ground, settled.n, settled.last, settled.at, c)
        return _GroundedString(self.ground, self.n, self.last, self.at, self.tail + c)

    def run(self, chars: str) -> _GroundedString | None:
        """What stepping each of `chars` gives, for printable ASCII characters other than ``"`` and
        ``\\`` (each one a cut, `_boundary`): all but the last settle with `tail` as one piece (folding
        text cut before a boundary piece by piece or at once is the same), the last is the tail."""
        piece = self.tail + chars[:-1]
        if not piece:
            return _GroundedString(self.ground, self.n, self.last, self.at, chars)
        settled = _GroundedString(self.ground, self.n, self.last, self.at, piece)._settle()
        if settled is None:
            return None
        return _GroundedString(self.ground, settled.n, settled.last, settled.at, settled.tail + chars[-1])

    def _folded_tail(self) -> str:
        """The fold of `tail` as it continues the settled part (a space after a space is one run)."""
        folded = _fold(self.tail)
        if self.last == " " and folded[:1] == " ":
            return folded[1:]
        return folded

    def _settle(self) -> _GroundedString | None:
        """`tail` folded into the settled part: None when the value can no longer occur where it
        must (nothing it becomes can be grounded), `self` when there is nothing to settle yet."""
        hay = self.ground.said
        folded = self._folded_tail()
        if self.n == 0:
            if not folded:
                return self
            at = _word_starts(hay, folded)
        else:
            if not folded:
                return _GroundedString(self.ground, self.n, self.last, self.at, "")
            at = tuple(a for a in self.at if hay.startswith(folded, a + self.n))
        if not at:
            return None
        return _GroundedString(self.ground, self.n + len(folded), folded[-1], at, "")

    def _matches(self, complete: bool) -> bool:
        """`Grounding.string` of the value so far (all of it when `complete`)."""
        if self.n == 0:
            return self.ground.string(self.tail, complete)
        hay = self.ground.said
        folded = self._folded_tail()
        last = folded[-1] if folded else self.last
        for a in self.at:
            start = a + self.n
            if hay.startswith(folded, start):
                end = start + len(folded)
                if not complete or end == len(hay) or not _wordy(hay[end]) or not _wordy(last):
                    return True
        return False

    def viable(self) -> bool:
        """Whether the value so far can still be grounded (checked where a text ends)."""
        return self._matches(complete=False)


_CHECKED_WHERE_TEXT_ENDS = (_Enum, _GroundedNumber, _GroundedString)
"""The frames with a check the recursive parser applies only to the value where the text ends
(`viable`), which a longer text may pass again (module docstring)."""


# --------------------------------------------------------------------------------------------
# The parse state
# --------------------------------------------------------------------------------------------


class CallParse:
    """The parse of a call list after some text (`begin`, then `feed`). Immutable: feeding returns
    a new state and leaves this one as it was, so many continuations can be tried from it."""

    __slots__ = ("_below", "_top", "steps")

    def __init__(self, top: Any, below: Any, steps: int) -> None:
        self._top = top
        self._below = below
        self.steps = steps
        """How many character steps the `feed` that made this state took: one a character (a run of
        ordinary characters in a string goes at once but counts one each), two for a character that
        ends a number or an enum value and goes on to what holds it. The work done, which tests
        count to see that a feed never reads again what came before it."""

    @property
    def complete(self) -> bool:
        """Whether the text is a whole call list followed by nothing but whitespace."""
        return type(self._top) is _List and self._top.phase == _L_CLOSED

    def feed(self, text: str) -> CallParse | None:
        """The state after `text`, or None when the text so far is invalid (`CallGrammar.state`)."""
        top, below = self._top, self._below
        steps = 0
        i, end = 0, len(text)
        while i < end:
            # Runs of ordinary characters inside a string go at once (each still counts a step).
            if top is _IN_TEXT:
                run = _PLAIN.match(text, i)
                if run is not None:
                    steps += run.end() - i
                    i = run.end()
                    continue
            elif (
                type(top) is _GroundedString
                or (type(top) is _Args and top.phase == _K_KEY)
                or (type(top) is _Call and top.pos and _CALL[top.pc] == _NAME)
            ):
                run = (_PLAIN_ASCII if type(top) is _GroundedString else _PLAIN).match(text, i)
                if run is not None:
                    top = top.run(run.group())
                    if top is None:
                        return None
                    steps += run.end() - i
                    i = run.end()
                    continue
            c = text[i]
            i += 1
            while True:
                steps += 1
                r = top.step(c)
                if r is None:
                    return None
                if type(r) is _Pop:
                    top, below = below
                    if r.again:
                        continue
                elif type(r) is _Push:
                    below = (r.resume, below)
                    top = r.child
                else:
                    top = r
                break
        if type(top) in _CHECKED_WHERE_TEXT_ENDS and not top.viable():
            return None
        return CallParse(top, below, steps)

    def _frames(self) -> list[tuple[type, Any]]:
        """The stack from the top down, each frame with its type (tuples of one shape compare
        equal whatever their type)."""
        frames = [(type(self._top), self._top)]
        below = self._below
        while below is not None:
            frame, below = below
            frames.append((type(frame), frame))
        return frames

    def __eq__(self, other: object) -> bool:
        """The same parse: the same frames, so every later feed gives the same answer."""
        if not isinstance(other, CallParse):
            return NotImplemented
        return self._frames() == other._frames()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CallParse({self._frames()[0][1]!r}, depth={len(self._frames())}, complete={self.complete})"


_PREPARED: dict[int, tuple[weakref.ref[CallGrammar], _Grammar]] = {}
"""Each live `CallGrammar` prepared (by its id, while it lives): parses begun from one grammar share
its prepared schemas, and are the same parse after the same text."""


def _prepared(grammar: CallGrammar) -> _Grammar:
    """`grammar` prepared, once while it lives (`_PREPARED`)."""
    key = id(grammar)
    entry = _PREPARED.get(key)
    if entry is not None and entry[0]() is grammar:
        return entry[1]
    prepared = _Grammar(grammar)

    def forget(ref: weakref.ref[CallGrammar]) -> None:
        if _PREPARED.get(key, (None,))[0] is ref:
            del _PREPARED[key]

    _PREPARED[key] = (weakref.ref(grammar, forget), prepared)
    return prepared


def begin(grammar: CallGrammar) -> CallParse:
    """The parse of the call lists `grammar` allows, before any text (the text starts where the
    reply's call list does, at its ``[``; whitespace before it is allowed)."""
    return CallParse(_List(_prepared(grammar), _L_BEFORE), None, 0)
