"""The regex sampler: a string that fully matches a JSON Schema `pattern`.

Real API schemas use a small regex subset (anchors, classes, the ``\\d \\w \\s`` shorthands,
bounded and unbounded repeats, groups and alternation); `sample_pattern` draws a member of such a
pattern's language by walking Python's own parse of it. Anything else (lookarounds,
backreferences, negated classes, word boundaries, ...) raises `UnsupportedPattern`, so the
generator falls back to other producers instead of returning a wrong value.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

try:  # Python >= 3.11
    from re import _constants as _sre_c
    from re import _parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_p  # type: ignore[no-redef]


class UnsupportedPattern(ValueError):
    """The pattern uses a construct the sampler does not generate (lookarounds, backreferences,
    negated classes, word boundaries, ...) or is not a valid regular expression."""


_MAX_SAMPLE_LEN = 10_000
_CATEGORY_CHARS = {
    _sre_c.CATEGORY_DIGIT: string.digits,
    _sre_c.CATEGORY_WORD: string.ascii_letters + string.digits + "_",
    _sre_c.CATEGORY_SPACE: " ",
}
_ANY_CHARS = string.ascii_letters + string.digits


def sample_pattern(pattern: str, rng: random.Random, *, max_extra: int = 3) -> str:
    """A string `s` with ``re.fullmatch(pattern, s)``.

    Supports anchors ``^ $ \\A \\Z``, literals and escaped literals, character classes with
    ranges and the ``\\d \\w \\s`` shorthands, ``.``, the quantifiers ``? * + {n} {n,m} {n,}``
    (greedy or lazy), groups ``( )`` / ``(?: )`` / ``(?P<n> )`` and alternation. Unbounded
    repeats add at most `max_extra` copies beyond their minimum; wide bounded ranges are capped
    at 8 extra copies. Anything else raises `UnsupportedPattern` (a `ValueError`).
    """
    if not isinstance(pattern, str):
        raise UnsupportedPattern(f"pattern must be a string, got {type(pattern).__name__}")
    try:
        compiled = re.compile(pattern)
        tree = _sre_p.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise UnsupportedPattern(f"invalid pattern {pattern!r}: {exc}") from None
    # The sample is in the pattern's language by construction (class members, repeat counts
    # within bounds, one branch of each alternation, anchors only where they hold). The
    # `fullmatch` below is a safety net, skipped for nested repeats such as `((a|a*)*){3}`,
    # on which Python's backtracking engine can take exponential time even for a match.
    verify = not _has_nested_repeat(tree)
    for _ in range(20):
        out: list[str] = []
        ends: list[int] = []
        try:
            _emit(tree, rng, out, max_extra, ends)
        except _MisplacedAnchor:
            continue
        if any(e != len(out) for e in ends):  # something was emitted after a `$`
            continue
        text = "".join(out)
        if not verify or compiled.fullmatch(text):
            return text
    raise UnsupportedPattern(f"could not sample a string that fully matches {pattern!r}")


class _MisplacedAnchor(Exception):
    pass


def _has_nested_repeat(tree: Any, inside: bool = False) -> bool:
    for op, av in tree:
        if op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT):
            repeats = av[1] > 1
            if repeats and inside:
                return True
            if _has_nested_repeat(av[2], inside or repeats):
                return True
        elif op == _sre_c.SUBPATTERN:
            if _has_nested_repeat(av[-1], inside):
                return True
        elif op == _sre_c.BRANCH and any(_has_nested_repeat(b, inside) for b in av[1]):
            return True
    return False


def _emit(tree: Any, rng: random.Random, out: list[str], max_extra: int, ends: list[int]) -> None:
    for op, av in tree:
        if op == _sre_c.LITERAL:
            out.append(chr(av))
        elif op == _sre_c.ANY:
            out.append(rng.choice(_ANY_CHARS))
        elif op == _sre_c.IN:
            out.append(_pick_from_class(av, rng))
        elif op in (_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT):
            lo, hi, sub = av
            if hi == _sre_c.MAXREPEAT:
                n = lo + rng.randint(0, max_extra)
            else:
                n = rng.randint(lo, min(hi, lo + max(max_extra, 8)))
            for _ in range(n):
                _emit(sub, rng, out, max_extra, ends)
                if len(out) > _MAX_SAMPLE_LEN:
                    raise UnsupportedPattern("pattern generates strings that are too long")
        elif op == _sre_c.SUBPATTERN:
            _emit(av[-1], rng, out, max_extra, ends)
        elif op == _sre_c.BRANCH:
            _emit(rng.choice(av[1]), rng, out, max_extra, ends)
        elif op == _sre_c.AT and av in (_sre_c.AT_BEGINNING, _sre_c.AT_BEGINNING_STRING):
            if out:
                raise _MisplacedAnchor
        elif op == _sre_c.AT and av in (_sre_c.AT_END, _sre_c.AT_END_STRING):
            ends.append(len(out))
        elif op == _sre_c.AT:
            raise UnsupportedPattern(f"unsupported anchor {av} (word boundaries are not supported)")
        else:
            raise UnsupportedPattern(f"unsupported regex construct {str(op).lower()}")
        if len(out) > _MAX_SAMPLE_LEN:
            raise UnsupportedPattern("pattern generates strings that are too long")


def _pick_from_class(items: Any, rng: random.Random) -> str:
    intervals: list[tuple[int, int]] = []
    for op, av in items:
        if op == _sre_c.LITERAL:
            intervals.append((av, av))
        elif op == _sre_c.RANGE:
            intervals.append((av[0], av[1]))
        elif op == _sre_c.CATEGORY and av in _CATEGORY_CHARS:
            intervals.extend((ord(c), ord(c)) for c in _CATEGORY_CHARS[av])
        elif op == _sre_c.NEGATE:
            raise UnsupportedPattern("negated character classes are not supported")
        else:
            raise UnsupportedPattern(f"unsupported item in a character class: {str(op).lower()} {av}")
    # Prefer printable ASCII where the class allows it; fall back to the class as written.
    clipped = [(max(a, 0x20), min(b, 0x7E)) for a, b in intervals if max(a, 0x20) <= min(b, 0x7E)]
    pool = clipped or intervals
    if not pool:
        raise UnsupportedPattern("empty character class")
    k = rng.randrange(sum(b - a + 1 for a, b in pool))
    for a, b in pool:
        if k <= b - a:
            return chr(a + k)
        k -= b - a + 1
    raise AssertionError("unreachable")  # pragma: no cover
