"""The incremental call parser (diaforge/llm/call_parse.py) agrees exactly with the recursive one it
stands in for (`CallGrammar.state`, the specification), feeds in pieces as at once, and never re-reads
what it was fed before.

Parity is checked on every prefix of every call of the bundled corpora (the small fixture and the
held-out benchmark), with and without a grounding in the user's turns before the call; on seeded
random mutations of those prefixes; on hand-written cases, one or more for each subtlety of the
recursive parser (each with every prefix and every one-character continuation); and on seeded
random walks through a schema with every kind of value. A test prints how many texts it compared.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable

import pytest

from diaforge.format.rendering import render_calls
from diaforge.llm import call_parse
from diaforge.llm.call_parse import CallParse, begin
from diaforge.llm.constrain import CallGrammar, Grounding
from diaforge.schema import load_dialogues
from tests._repo import ROOT

CORPORA = [
    ROOT / "tests" / "fixtures" / "dialogues_small.jsonl",
    ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl",
]

SCHEMAS = {
    "get": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    "get_all": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": ["number", "null"]},
            "e": {"enum": [1, 12, 1.5, -3, "1", 'a"b', True, None, [1, 2], {"k": "v"}]},
            "f": {"type": "string", "enum": ["csv", "csvx", "xlsx"]},
            "ints": {"type": "array", "items": {"type": "integer"}},
            "strs": {"type": "array", "items": {"type": "string"}},
            "grid": {"type": "array", "items": {"type": "array", "items": {"enum": [0, 10]}}},
            "any": {},
            "obj": {"type": "object"},
            "flag": {"type": "boolean"},
            "arr": {"type": "array"},
            'q"k': {"type": "string"},
            "nul": {"type": "null"},
        },
        "required": ["n"],
    },
    "ping": {"type": "object", "properties": {}},
}
"""Every kind of value `constrain._value` tells apart, and names and keys that are prefixes of others."""

SAID = [
    "Café au lait at cafe\u0301 Noir, 007 agents, 1,000 rows, 3.50 each, -4 degrees",
    "Straße \ufb01le \uff21\uff22\uff23  \ud55c\uad6d \u1112\u1161\u11ab  \uff76\uff9e item_9 x.y",
    "the 12 and 1.5e3 or 0 or 10.",
]
"""What a user said: composed and decomposed accents, case folding that grows (ß), compatibility
forms (a ligature, full-width letters, half-width katakana whose voicing mark composes), Hangul as a
syllable and as jamo, numerals with digit groups, a fraction, a sign, leading zeros."""

PLAIN = CallGrammar(SCHEMAS)
GROUNDED = CallGrammar(SCHEMAS, Grounding.of(SAID))
NO_TOOLS = CallGrammar({})
NOTHING_SAID = CallGrammar(SCHEMAS, Grounding.of(["no numbers here", ""]))
GRAMMARS = {"plain": PLAIN, "grounded": GROUNDED, "no_tools": NO_TOOLS, "nothing_said": NOTHING_SAID}

ALPHABET = [
    *'{}[]",:. \\-+0123456789aeEtrufnlsxycvbkq_ACNoi',
    *"\n\t\r\x0b\x1f\x7f",
    *"é\u0301ß\ufb01\u1161\ud55c\u00a0\uff76\uff9e\u0663",
]
"""Characters to mutate and extend texts with: JSON's own, letters of the literals and the schema,
whitespace JSON allows and does not, control characters, and the Unicode of `SAID` (a combining
accent, a Hangul vowel jamo, an Arabic-Indic digit, which ``\\d`` matches)."""


def _state(parse: CallParse | None) -> str:
    return "invalid" if parse is None else "complete" if parse.complete else "open"


def _compare(grammar: CallGrammar, texts: Iterable[str]) -> int:
    """Asserts that the fresh incremental parse of each text says what `grammar.state` says;
    returns how many texts were compared."""
    count = 0
    wrong = []
    for text in texts:
        count += 1
        want, got = grammar.state(text), _state(begin(grammar).feed(text))
        if want != got:
            wrong.append((text, want, got))
    assert not wrong, wrong[:5]
    return count


def _prefixes(text: str) -> list[str]:
    return [text[:i] for i in range(len(text) + 1)]


def _mutate(text: str, rng: random.Random) -> str:
    """`text` with one to three characters inserted, deleted or replaced."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(text))
        op = rng.random()
        if op < 0.4:
            text = text[:at] + rng.choice(ALPHABET) + text[at:]
        elif op < 0.7:
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + rng.choice(ALPHABET) + text[at + 1 :]
    return text


# --------------------------------------------------------------------------------------------
# The bundled corpora
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_calls() -> list[tuple[dict, list[str], str]]:
    """Each call turn of the bundled corpora: the dialogue's tools, what the user said before it and
    the call list as written (`render_calls`)."""
    calls = []
    for path in CORPORA:
        for dialogue in load_dialogues(path):
            tools = {t.name: t.parameters for t in dialogue.candidate_tools}
            said: list[str] = []
            for turn in dialogue.turns:
                if turn.role == "user":
                    said.append(turn.content)
                elif turn.tool_calls:
                    calls.append((tools, list(said), render_calls(turn.tool_calls)))
    assert len(calls) > 100
    return calls


def _compare_prefixes(grammar: CallGrammar, text: str, fresh_every: int = 5) -> int:
    """Every prefix of `text` compared with `grammar.state`, as decoding reaches it (the state of the
    prefix one shorter fed one character, where that one is a state) and, for every `fresh_every`-th
    prefix and wherever the chain broke, as a fresh parse; returns how many prefixes were compared."""
    state: CallParse | None = begin(grammar)
    wrong = []
    for i in range(len(text) + 1):
        prefix = text[:i]
        if i:
            state = state.feed(text[i - 1]) if state is not None else begin(grammar).feed(prefix)
        want = grammar.state(prefix)
        if _state(state) != want:
            wrong.append((prefix, want, _state(state)))
        if i % fresh_every == 0 or state is None:
            fresh = begin(grammar).feed(prefix)
            if fresh != state:
                wrong.append((prefix, "fresh", _state(fresh)))
    assert not wrong, wrong[:5]
    return len(text) + 1


@pytest.mark.parametrize("grounded", [False, True], ids=["types", "grounded"])
def test_every_prefix_of_every_corpus_call_agrees(corpus_calls, grounded: bool) -> None:
    compared = 0
    for tools, said, text in corpus_calls:
        grammar = CallGrammar(tools, Grounding.of(said) if grounded else None)
        assert grammar.state(text) == "complete" or grounded  # a value the user never said
        compared += _compare_prefixes(grammar, text)
    print(f"{compared} prefixes of {len(corpus_calls)} calls compared")


@pytest.mark.parametrize("grounded", [False, True], ids=["types", "grounded"])
def test_mutated_prefixes_of_corpus_calls_agree(corpus_calls, grounded: bool) -> None:
    rng = random.Random(48 + grounded)
    compared = 0
    for tools, said, text in corpus_calls:
        grammar = CallGrammar(tools, Grounding.of(said) if grounded else None)
        texts = [_mutate(text[: rng.randint(0, len(text))], rng) for _ in range(60)]
        compared += _compare(grammar, texts)
    print(f"{compared} mutated prefixes compared")


# --------------------------------------------------------------------------------------------
# Each subtlety of the recursive parser, by hand
# --------------------------------------------------------------------------------------------


def _call(body: str, tool: str = "get_all") -> str:
    return f'[{{"name": "{tool}", "args": {{{body}'


EDGES = [
    # whitespace: JSON's four characters only, before the list, inside it, after it
    ("plain", ' \n\t\r[ {  "name"  :  "ping" ,"args":{ } } ]  \n', "complete"),
    ("plain", '\x0b[{"name": "ping", "args": {}}]', "invalid"),
    ("plain", '[{"name": "ping", "args": {}}]\x0b', "invalid"),
    ("plain", '[{"name": "ping", "args": {}}] x', "invalid"),
    ("plain", '[{"name": "ping", "args": {}}, {"name": "ping", "args": {}}]', "complete"),
    ("plain", "[ ]", "invalid"),  # a call list holds a call
    ("plain", '[{"name": "ping", "args": {}},]', "invalid"),
    ("plain", '[{"name": "ping", "args": {}}', "open"),
    ("plain", '[{"args": {}, "name": "ping"}]', "invalid"),  # the name comes first
    # tool names: a candidate, no escapes, one that is the beginning of another
    ("plain", '[{"name": "get', "open"),
    ("plain", '[{"name": "get", "args": {"a": "x"}}]', "complete"),
    ("plain", '[{"name": "get_', "open"),
    ("plain", '[{"name": "getx', "invalid"),
    ("plain", '[{"name": "ge\\u0074"', "invalid"),
    ("plain", '[{"name": "get\n', "invalid"),
    ("no_tools", '[{"name"', "open"),
    ("no_tools", '[{"name": ', "invalid"),  # no name can start: invalid before the quote
    # keys: properties only, each once, the required ones before the object closes
    ("plain", _call('"na'), "open"),
    ("plain", _call('"name": "x", "n'), "open"),
    ("plain", _call('"nx'), "invalid"),
    ("plain", _call('"n": 1, "n"'), "invalid"),
    ("plain", _call('"n": 1, "n'), "open"),  # "name" may still follow
    ("plain", _call('"n": 1, "name": "x", "n'), "open"),  # "nul" may still follow
    ("plain", _call('"n": 1, "name": "x", "na'), "invalid"),  # both given
    ("plain", _call('"q\\"k'), "invalid"),  # a key with a quote cannot be written
    ("plain", _call('"name": "x"}}]'), "invalid"),  # "n" is required
    ("plain", _call("}}]", tool="get"), "invalid"),
    ("plain", _call("}}]", tool="ping"), "complete"),
    ("plain", _call(' "', tool="ping"), "invalid"),  # no property to name
    ("plain", _call('"a": "x",', tool="get"), "invalid"),  # every property given: no comma
    ("plain", _call('"a": "x" ,', tool="get"), "invalid"),
    ("plain", _call('"a": "x"', tool="get"), "open"),
    # enums: the longest option the text starts with, written exactly as its JSON
    ("plain", _call('"n": 0, "e": 1'), "open"),
    ("plain", _call('"n": 0, "e": 1}}]'), "complete"),
    ("plain", _call('"n": 0, "e": 12}}]'), "complete"),
    ("plain", _call('"n": 0, "e": 13'), "invalid"),
    ("plain", _call('"n": 0, "e": 1.5}}]'), "complete"),
    ("plain", _call('"n": 0, "e": 1.'), "invalid"),  # 1 taken whole, then "." (1.5 may follow)
    ("plain", _call('"n": 0, "e": 1.5'), "open"),
    ("plain", _call('"n": 0, "e": 1.}'), "invalid"),
    ("plain", _call('"n": 0, "e": 1.0}}]'), "invalid"),
    ("plain", _call('"n": 0, "e": -3 }}]'), "complete"),
    ("plain", _call('"n": 0, "e": "1"}}]'), "complete"),
    ("plain", _call('"n": 0, "e": "a\\"b"}}]'), "complete"),
    ("plain", _call('"n": 0, "e": true}}]'), "complete"),
    ("plain", _call('"n": 0, "e": null}}]'), "complete"),
    ("plain", _call('"n": 0, "e": [1, 2]}}]'), "complete"),
    ("plain", _call('"n": 0, "e": [1,2]}}]'), "invalid"),
    ("plain", _call('"n": 0, "e": {"k": "v"}}}]'), "complete"),
    ("plain", _call('"n": 0, "f": "cs'), "open"),
    ("plain", _call('"n": 0, "f": "csv"}}]'), "complete"),
    ("plain", _call('"n": 0, "f": "csvx"}}]'), "complete"),
    ("plain", _call('"n": 0, "f": "csvy'), "invalid"),
    ("plain", _call('"n": 0, "f": "\\u0063sv"'), "invalid"),
    ("grounded", _call('"n": 0, "f": "xlsx"}}]'), "complete"),  # enums are not grounded
    # numbers: integers without fraction or exponent, JSON's syntax, any Unicode digit after the first
    ("plain", _call('"n": -'), "open"),
    ("plain", _call('"n": -x'), "invalid"),
    ("plain", _call('"n": 01'), "invalid"),
    ("plain", _call('"n": 0}}]'), "complete"),
    ("plain", _call('"n": 1.'), "invalid"),
    ("plain", _call('"n": 1e3'), "invalid"),
    ("plain", _call('"n": 1\u0663}}]'), "complete"),
    ("plain", _call('"n": \u0663'), "invalid"),
    ("plain", _call('"n": 1, "x": 1.'), "open"),
    ("plain", _call('"n": 1, "x": 1.}'), "invalid"),
    ("plain", _call('"n": 1, "x": 1e'), "open"),
    ("plain", _call('"n": 1, "x": 1e+'), "open"),
    ("plain", _call('"n": 1, "x": 1e+}'), "invalid"),
    ("plain", _call('"n": 1, "x": 1E-05}}]'), "complete"),
    ("plain", _call('"n": 1, "x": 0.0e0}}]'), "complete"),
    ("plain", _call('"n": 1, "x": .5'), "invalid"),
    ("plain", _call('"n": 1, "x": +1'), "invalid"),
    ("plain", _call('"n": 1, "x": null'), "invalid"),  # ["number", "null"] is read as a number
    ("plain", _call('"n": 1, "x": 1.5.'), "invalid"),
    ("plain", _call('"n": 1, "x": 1e5e'), "invalid"),
    # strings: JSON escapes (\u with four hex digits), no control characters
    ("plain", _call('"n": 1, "name": "a\\u00e9b \\" \\\\ \\/ \\b\\f\\n\\r\\t"}}]'), "complete"),
    ("plain", _call('"n": 1, "name": "\\u00'), "open"),
    ("plain", _call('"n": 1, "name": "\\u00g'), "invalid"),
    ("plain", _call('"n": 1, "name": "\\x'), "invalid"),
    ("plain", _call('"n": 1, "name": "\\'), "open"),
    ("plain", _call('"n": 1, "name": "tab\there"'), "invalid"),
    ("plain", _call('"n": 1, "name": "\x7f\u2028"}}]'), "complete"),
    ("plain", _call('"n": 1, "name": 5'), "invalid"),
    # arrays of typed items, objects and values of any kind, booleans
    ("plain", _call('"n": 1, "ints": []}}]'), "complete"),
    ("plain", _call('"n": 1, "ints": [ 1 , 2 ]}}]'), "complete"),
    ("plain", _call('"n": 1, "ints": [1, 2.5'), "invalid"),
    ("plain", _call('"n": 1, "ints": [1,]'), "invalid"),
    ("plain", _call('"n": 1, "strs": ["a", 1'), "invalid"),
    ("plain", _call('"n": 1, "grid": [[0, 10], [], [10]]}}]'), "complete"),
    ("plain", _call('"n": 1, "grid": [[1'), "open"),
    ("plain", _call('"n": 1, "grid": [[1]'), "invalid"),
    ("plain", _call('"n": 1, "grid": [[10 ,0]]}}]'), "complete"),
    ("plain", _call('"n": 1, "arr": [1, "x", {"a": [null, -0.5e1]}, true, []]}}]'), "complete"),
    ("plain", _call('"n": 1, "obj": {"a": {"b": [1, {"c": "d"}]}, "a": 2, "k\\n": ""}}}]'), "complete"),
    ("plain", _call('"n": 1, "obj": []'), "invalid"),
    ("plain", _call('"n": 1, "obj": {1: 2}'), "invalid"),
    ("plain", _call('"n": 1, "obj": {"a" 1'), "invalid"),
    ("plain", _call('"n": 1, "obj": {"a": 1,}'), "invalid"),
    ("plain", _call('"n": 1, "any": tru'), "open"),
    ("plain", _call('"n": 1, "any": trux'), "invalid"),
    ("plain", _call('"n": 1, "any": nul'), "open"),
    ("plain", _call('"n": 1, "any": "x", "nul": 5}}]'), "complete"),
    ("plain", _call('"n": 1, "flag": fals'), "open"),
    ("plain", _call('"n": 1, "flag": null'), "invalid"),
    ("plain", _call('"n": 1, "flag": true}}]'), "complete"),
    # grounded strings: said after folding, from a word start, to a word end once closed
    ("grounded", _call('"a": "Café', tool="get"), "open"),
    ("grounded", _call('"a": "CAFÉ AU  LAIT"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "cafe', tool="get"), "invalid"),  # said only with its accent...
    ("grounded", _call('"a": "cafe\u0301', tool="get"), "open"),  # ...which may come next
    ("grounded", _call('"a": "cafe\u0301 noir"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "afé', tool="get"), "invalid"),  # inside a word
    ("grounded", _call('"a": "Caf"', tool="get"), "invalid"),  # ends inside one
    ("grounded", _call('"a": ""', tool="get"), "invalid"),
    ("grounded", _call('"a": "', tool="get"), "open"),
    ("grounded", _call('"a": "caf\\u00e9', tool="get"), "invalid"),  # no escapes
    ("grounded", _call('"a": "STRASSE"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "ss', tool="get"), "invalid"),
    ("grounded", _call('"a": "file"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "abc"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "\ud55c\uad6d"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "\u1112\u1161', tool="get"), "invalid"),  # composes to a syllable not said
    ("grounded", _call('"a": "\ud55c"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "\u30ac"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "\uff76', tool="get"), "invalid"),  # said only voiced
    ("grounded", _call('"a": "\uff76\uff9e"}}]', tool="get"), "complete"),
    ("grounded", _call('"a": "item', tool="get"), "open"),
    ("grounded", _call('"a": "item"', tool="get"), "invalid"),  # "_" is a word character
    ("grounded", _call('"a": "x."}}]', tool="get"), "complete"),
    ("grounded", _call('"a": ".y"}}]', tool="get"), "complete"),  # starts with no word character
    ("grounded", _call('"n": 0, "strs": ["agents", "Lisbon'), "invalid"),  # array items too
    ("grounded", _call('"n": 0, "name": "noir ,'), "invalid"),
    ("grounded", _call('"n": 0, "name": "noir, 007'), "open"),
    # grounded numbers: numerals said, whole ones for an integer, by value once written
    ("grounded", _call('"n": 10'), "open"),
    ("grounded", _call('"n": 1000}}]'), "complete"),  # said as 1,000
    ("grounded", _call('"n": 7'), "invalid"),  # no numeral said begins with 7...
    ("grounded", _call('"n": 7}}]'), "complete"),  # ...but 7 is 007
    ("grounded", _call('"n": -0}}]'), "complete"),  # 0 was said
    ("grounded", _call('"n": 3'), "invalid"),  # 3.50 is no whole numeral
    ("grounded", _call('"n": 0, "x": 3.5'), "open"),
    ("grounded", _call('"n": 0, "x": 3.500'), "open"),
    ("grounded", _call('"n": 0, "x": 3.5}}]'), "complete"),
    ("grounded", _call('"n": 0, "x": 3.51'), "invalid"),
    ("grounded", _call('"n": 0, "x": 12.'), "open"),
    ("grounded", _call('"n": 0, "x": 12.0'), "open"),
    ("grounded", _call('"n": 0, "x": 12.00}}]'), "complete"),
    ("grounded", _call('"n": 0, "x": 12.01'), "invalid"),
    ("grounded", _call('"n": 0, "x": 1e1'), "invalid"),
    ("grounded", _call('"n": 0, "x": 1e1}}]'), "complete"),  # 10 was said
    ("grounded", _call('"n": 0, "x": -4.0}}]'), "complete"),
    ("grounded", _call('"n": 0, "x": -'), "open"),
    ("grounded", _call('"n": 0, "ints": [12, 1000, 5'), "invalid"),
    ("nothing_said", _call('"n": 123, "x": -9.5, "a": 1}}]'), "invalid"),
    ("nothing_said", _call('"n": 123, "x": -9.5}}]'), "complete"),  # no numeral said: numbers free
    ("nothing_said", _call('"n": 123, "name": "numbers"}}]'), "complete"),
]


@pytest.mark.parametrize(("grammar", "text", "state"), EDGES)
def test_each_subtlety_of_the_recursive_parser(grammar: str, text: str, state: str) -> None:
    """The case itself (its state as the recursive parser says, written down), then parity on every
    prefix of it and every one-character continuation."""
    g = GRAMMARS[grammar]
    assert g.state(text) == state
    assert _state(begin(g).feed(text)) == state
    _compare_prefixes(g, text, fresh_every=1)
    _compare(g, [text + c for c in ALPHABET])


def test_an_integer_is_free_where_only_fractions_were_said() -> None:
    grammar = CallGrammar(SCHEMAS, Grounding.of(["the deal value is 3715.5"]))
    text = _call('"n": 42}}]')
    assert grammar.state(text) == _state(begin(grammar).feed(text)) == "complete"
    _compare(grammar, _prefixes(_call('"n": 3715.5, "x": 3715.50}}]')))


def test_a_value_is_held_where_the_text_ends_not_on_the_way_to_a_longer_one() -> None:
    """Where a text ends, the recursive parser holds the value being written to checks a longer text
    may pass again; the incremental parse applies them there too, without ending the parse of a
    longer text: ``cafe`` is invalid and ``café`` (its accent a character of its own) is not; a
    ``7`` being written is not the beginning of a numeral said, while a written ``7`` equals the
    ``007`` said; the enum value ``1.`` is ``1`` and a stray ``.``, while ``1.5`` is an option."""
    state = begin(GROUNDED).feed(_call('"a": "caf', tool="get"))
    assert state is not None
    assert state.feed("e") is None
    assert _state(state.feed("e\u0301")) == "open"
    number = begin(GROUNDED).feed(_call('"n": '))
    assert number is not None and number.feed("7") is None and _state(number.feed("7}")) == "open"
    enum = begin(PLAIN).feed(_call('"n": 0, "e": 1'))
    assert enum is not None and enum.feed(".") is None
    assert _state(enum.feed(".5")) == "open" and _state(enum.feed(".5}}]")) == "complete"


# --------------------------------------------------------------------------------------------
# Random walks through every kind of value
# --------------------------------------------------------------------------------------------

SEEDS = [
    _call(
        '"n": 7, "name": "Café au lait", "x": 1.5e3, "e": 12, "f": "csvx", "ints": [1, 2], '
        '"strs": ["item_9", "\ud55c\uad6d"], "grid": [[0, 10], []], "any": {"a": [true, null, "\\u00e9"]}, '
        '"obj": {}, "flag": false, "arr": [1, "x"], "nul": null}}, {"name": "ping", "args": {}}]'
    ),
    _call('"a": "cafe\u0301 noir"}}]', tool="get"),
    _call('"e": [1, 2], "n": 0, "x": -4}}]'),
    _call('"n": 1000, "strs": ["straße", "\uff76\uff9e", "x.y"], "x": 3.500}}]'),
]


def _walk(grammar: CallGrammar, rng: random.Random) -> str:
    """A seed's prefix, mutated, then continued at random (mostly by characters that keep it viable)."""
    text = _mutate(SEEDS[rng.randrange(len(SEEDS))][: rng.randint(0, 200)], rng)
    for _ in range(rng.randint(0, 30)):
        c = rng.choice(ALPHABET)
        if grammar.viable(text + c) or rng.random() < 0.2:
            text += c
    return text


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_random_walks_agree(grammar: str) -> None:
    g = GRAMMARS[grammar]
    rng = random.Random(grammar)
    compared = 0
    for _ in range(40):
        compared += _compare_prefixes(g, _walk(g, rng), fresh_every=1)
    print(f"{grammar}: {compared} texts compared")


# --------------------------------------------------------------------------------------------
# Feeding in pieces, and from one state many times
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grammar", ["plain", "grounded"])
def test_feeding_in_pieces_is_feeding_at_once(corpus_calls, grammar: str) -> None:
    """``s.feed(a).feed(b)`` is ``s.feed(a + b)`` (the same parse, so the same answer to every later
    feed) wherever ``s.feed(a)`` is a state, at random split points of corpus calls and walks."""
    g = GRAMMARS[grammar]
    rng = random.Random(7)
    texts = [_walk(g, rng) for _ in range(60)] + list(SEEDS)
    checked = 0
    for text in texts:
        for _ in range(10):
            cuts = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(1, 4)))
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
            state: CallParse | None = begin(g)
            done = ""
            for piece in pieces:
                assert state is not None
                whole = begin(g).feed(done + piece)
                state = state.feed(piece)
                done += piece
                assert state == whole
                checked += 1
                if state is None:
                    break
    for tools, said, text in corpus_calls[::4]:
        grounded = CallGrammar(tools, Grounding.of(said))
        cut = rng.randint(0, len(text))
        head = begin(grounded).feed(text[:cut])
        assert head is not None and head.feed(text[cut:]) == begin(grounded).feed(text)
        checked += 1
    print(f"{checked} split feeds compared")


def test_feeding_leaves_the_state_as_it_was() -> None:
    """Many candidates are tried from one state: each gives what feeding it alone would, and the
    state is the same parse before and after."""
    text = _call('"n": 1000, "e": 1, "strs": ["stra')
    state = begin(GROUNDED).feed(text)
    assert state is not None
    before = begin(GROUNDED).feed(text)
    results = [(piece, state.feed(piece)) for piece in [*ALPHABET, "ße", 'sse"', 'ße", "x.', "]"] * 2]
    assert state == before
    for piece, result in results:
        assert result == begin(GROUNDED).feed(text + piece)
        assert _state(result) == GROUNDED.state(text + piece)


# --------------------------------------------------------------------------------------------
# Work: what was fed is not read again
# --------------------------------------------------------------------------------------------


def test_a_character_after_a_long_prefix_costs_a_step_or_two(corpus_calls) -> None:
    """`CallParse.steps` counts the character steps of one feed: one a character, two where a number
    or an enum value ends. After a prefix of more than 500 characters a one-character feed takes at
    most two, not a pass over the prefix; a whole text never more than twice its length."""
    items = ", ".join(json.dumps(f"item {i}") for i in range(60))
    text = _call(f'"n": 12, "strs": [{items}], "ints": [1, 22, 333], "e": 12')
    state = begin(PLAIN).feed(text)
    assert state is not None and len(text) > 500 and state.steps <= 2 * len(text)
    for piece in [" ", ",", "}", "5"]:
        fed = state.feed(piece)
        assert fed is None or fed.steps <= 2
    closing = state.feed("}")  # ends the enum value 12: two steps
    assert closing is not None and closing.steps == 2
    for tools, _, call in corpus_calls:
        whole = begin(CallGrammar(tools)).feed(call)
        assert whole is not None and whole.complete and whole.steps <= 2 * len(call)


def test_a_grounded_value_is_folded_once_not_again_for_each_character(monkeypatch) -> None:
    """Writing a 600-character value copied from what was said, each character folds only the few
    characters since the last cut (`_fold` counted), never the whole value, and never asks
    `Grounding.string`, which would fold it all."""
    words = " ".join(f"word{i} café" for i in range(60))
    grammar = CallGrammar(SCHEMAS, Grounding.of([f"Please use {words} thanks"]))
    folded: list[int] = []
    fold = call_parse._fold
    monkeypatch.setattr(call_parse, "_fold", lambda text: folded.append(len(text)) or fold(text))
    state = begin(grammar).feed(_call('"a": "', tool="get"))
    assert state is not None
    for c in words[:20]:
        state = state.feed(c)
        assert state is not None
    asked = []
    monkeypatch.setattr(Grounding, "string", lambda *a, **k: asked.append(a) or True)
    for c in words[20:]:
        folded.clear()
        state = state.feed(c)
        assert state is not None and state.steps == 1
        assert sum(folded) <= 4
    assert not asked
    closed = state.feed('"}}]')
    assert closed is not None and closed.complete and not asked
