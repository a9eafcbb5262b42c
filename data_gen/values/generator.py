"""The typed value generator: realistic, schema-conforming values for tool parameters.

DiaFORGE §3.1 ("Slot Value Generator") draws concrete, persona-consistent values for the required
arguments of the seed tool so that the user-proxy never has to invent them. `ValueGenerator` is
the offline, rule-based version: the schema first (``const``, ``enum``, ``pattern``, ``format``,
bounds, lengths; ``$ref``/``allOf`` merged and one ``anyOf``/``oneOf`` option picked, see
`composed`), then the shape the parameter's description shows (`diaforge.data_gen.values.described`),
then the name-based rules (`diaforge.data_gen.values.names`), then a word token. Every value it returns
passes `check_value`.
"""

from __future__ import annotations

import copy
import math
import random
import re
import string
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

from diaforge.data_gen.values import formats
from diaforge.data_gen.values.checking import check_value, declared_types, is_num, json_equal
from diaforge.data_gen.values.described import (
    description_example,
    listed_examples,
    schema_example,
    shaped,
    spelled,
    spelled_format,
)
from diaforge.data_gen.values.names import DEFAULT_TODAY, Draws, number_hint
from diaforge.data_gen.values.patterns import UnsupportedPattern, sample_pattern
from diaforge.data_gen.values.vocabulary import ID_WORDS, singular
from diaforge.json_schema import local_ref_target
from diaforge.schema import Persona, Tool
from diaforge.text import param_tokens

_COMPOSITION = ("$ref", "allOf", "anyOf", "oneOf")
_MAX_REF_DEPTH = 8


def pick_type(spec: dict[str, Any]) -> str:
    """The JSON type to draw for `spec`: its first non-null declared type, else array/object when
    it has ``items``/``properties``, else string."""
    types = declared_types(spec)
    if types:
        non_null = [t for t in types if t != "null"]
        return non_null[0] if non_null else "null"
    if "items" in spec:
        return "array"
    if "properties" in spec:
        return "object"
    return "string"


def composed(
    spec: dict[str, Any], root: dict[str, Any], rng: random.Random, depth: int = 0
) -> dict[str, Any]:
    """The spec to draw from: a local ``$ref`` resolved against `root`, ``allOf`` merged and one
    ``anyOf``/``oneOf`` option picked (drawn from `rng` only then), the spec's own keywords
    winning. ``not`` is left to the check (a drawn value rarely matches it; the caller draws
    again). A spec without these keywords comes back as it is."""
    if not any(k in spec for k in _COMPOSITION) or depth > _MAX_REF_DEPTH:
        return spec
    parts: list[Any] = []
    if isinstance(spec.get("$ref"), str):
        parts.append(local_ref_target(root, spec["$ref"]))
    parts += spec.get("allOf") if isinstance(spec.get("allOf"), list) else []
    for key in ("anyOf", "oneOf"):
        options = (
            [s for s in spec.get(key) or [] if isinstance(s, dict)] if isinstance(spec.get(key), list) else []
        )
        if options:
            parts.append(rng.choice(options))
    out = {k: v for k, v in spec.items() if k not in _COMPOSITION}
    for part in parts:
        if isinstance(part, dict):
            out = _merged(composed(part, root, rng, depth + 1), out)
    return out


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, with ``properties`` joined and ``required`` united (an ``allOf`` of
    object schemas describes one object)."""
    out = {**base, **top}
    if isinstance(base.get("properties"), dict) and isinstance(top.get("properties"), dict):
        out["properties"] = {**base["properties"], **top["properties"]}
    if isinstance(base.get("required"), list) and isinstance(top.get("required"), list):
        out["required"] = list(dict.fromkeys([*base["required"], *top["required"]]))
    return out


class ValueGenerator:
    """Realistic, schema-conforming values for tool parameters (DiaFORGE §3.1, rule-based).

    Schema constraints come first (``const``, ``enum``, ``pattern``, ``format``, bounds, lengths),
    then parameter-name heuristics, then a word-based token. Every value is JSON-serialisable and
    checked with `check_value` before it is returned; a schema no value can satisfy raises
    `ValueError` naming the parameter. All randomness comes from `rng`, so a seeded generator
    (see `diaforge.rng.seeded_rng`) reproduces its values exactly.

    Args:
        rng: the source of randomness.
        today: the reference day for dates: past-looking names (``*_since``, ``invoice_date``,
            ``hire_date``) get a weekday up to 60 days before it, future-looking ones
            (``start_date``, ``due_date``, ``travel_date``) up to 120 days after.
    """

    MAX_TRIES = 30
    DESCRIBED_TRIES = 16

    def __init__(self, rng: random.Random, *, today: date = DEFAULT_TODAY) -> None:
        self.draws = Draws(rng, today)

    @property
    def rng(self) -> random.Random:
        """The source of randomness (shared with `draws`)."""
        return self.draws.rng

    @property
    def today(self) -> date:
        """The reference day for dates."""
        return self.draws.today

    @property
    def generic_draws(self) -> int:
        """Word tokens drawn ("cedar-42"): strings for which nothing in the parameter's name,
        description, type or examples called for a kind of value (`stats.json` -> `values`)."""
        return self.draws.word_tokens

    # -- public API --------------------------------------------------------------------------

    def value_for(
        self,
        name: str,
        spec: dict[str, Any] | None,
        *,
        persona: Persona | None = None,
        root: dict[str, Any] | None = None,
    ) -> Any:
        """One value for parameter `name` with property schema `spec`, conforming to it. `root`
        is the schema a local ``$ref`` in `spec` points into (the tool's parameters; `spec`
        itself when None)."""
        spec = spec if isinstance(spec, dict) else {}
        root = root if root is not None else spec
        problem = None
        for attempt in range(self.MAX_TRIES):
            value = self._draw(name, composed(spec, root, self.rng), persona, attempt, root)
            problem = check_value(value, spec, root=root)
            if problem is None:
                return value
        raise ValueError(f"cannot generate a value for {name!r} that conforms to its schema: {problem}")

    def gold_args(
        self, tool: Tool, persona: Persona | None = None, *, include_optional: bool = False
    ) -> dict[str, Any]:
        """Values for every required parameter of `tool` (every parameter with
        `include_optional`), in the tool's property order; the map passes `check_arguments`."""
        props = tool.properties
        wanted = set(tool.required) | (set(props) if include_optional else set())
        root = tool.parameters
        args = {k: self.value_for(k, props[k], persona=persona, root=root) for k in props if k in wanted}
        self._order_ranges(args, props, root)
        self._part_pairs(args, props, persona, root)
        return args

    # The two ends of a move ("from_currency" and "to_currency", "source_city" and "target_city").
    _PAIR_ENDS = (("from", "to"), ("source", "target"), ("origin", "destination"), ("src", "dst"))

    def _part_pairs(
        self,
        args: dict[str, Any],
        props: dict[str, dict[str, Any]],
        persona: Persona | None,
        root: dict[str, Any],
    ) -> None:
        """The two ends of a move differ: a ``to_currency`` drawn equal to its ``from_currency``
        (PLN to PLN) is drawn again, up to ten times."""
        for key in list(args):
            toks = param_tokens(key)
            for a, b in self._PAIR_ENDS:
                if a not in toks:
                    continue
                other = next((k for k in args if param_tokens(k) == [b if t == a else t for t in toks]), None)
                if other is None or other == key:
                    continue
                for _ in range(10):
                    if args[other] != args[key]:
                        break
                    args[other] = self.value_for(other, props[other], persona=persona, root=root)

    # -- dispatch ----------------------------------------------------------------------------

    def _draw(
        self, name: str, spec: dict[str, Any], persona: Persona | None, attempt: int, root: dict[str, Any]
    ) -> Any:
        """One candidate value (the caller checks it): const, an enum member that passes the rest
        of the schema, else by the spec's type."""
        if "const" in spec:
            return copy.deepcopy(spec["const"])
        enum = spec.get("enum")
        if isinstance(enum, list) and enum:
            rest = {k: v for k, v in spec.items() if k != "enum"}
            members = [m for m in enum if check_value(m, rest, root=root) is None] or enum
            return copy.deepcopy(self.rng.choice(members))
        kind = pick_type(spec)
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind in ("integer", "number"):
            return self._number(name, spec, integer=kind == "integer", attempt=attempt)
        if kind == "array":
            return self._array(name, spec, persona, root)
        if kind == "object":
            return self._object(spec, persona, root)
        return self._string(name, spec, persona, root)

    # -- numbers -----------------------------------------------------------------------------

    def _number(self, name: str, spec: dict[str, Any], *, integer: bool, attempt: int) -> int | float:
        """A number within the schema's bounds and step, in the usual range of its name where the
        two overlap (money rounded to tens or cents, percentages to one decimal)."""
        rng = self.rng
        tokens = set(param_tokens(name))
        lo, hi = _bounds(spec, integer)
        kind, (h_lo, h_hi) = number_hint(tokens, self.today)
        if kind == "plain" and _COUNTED.match(str(spec.get("description") or "")):
            kind, (h_lo, h_hi) = "count", (1, 10)  # "chords": "Number of chords in the progression."
        a, b = max(lo, h_lo), min(hi, h_hi)
        if a > b:  # the name's usual range lies outside the schema's: use the schema's
            a = lo if math.isfinite(lo) else hi - 100
            b = hi if math.isfinite(hi) else lo + max(100, abs(lo))
        step = spec.get("multipleOf")
        if is_num(step) and step > 0:
            k_lo, k_hi = math.ceil(a / step), math.floor(b / step)
            if k_lo <= k_hi:
                v = rng.randint(k_lo, k_hi) * step
                return int(round(v)) if integer else float(v)
        if integer:
            ia, ib = math.ceil(a), math.floor(b)
            if ia > ib:
                return ia
            if kind == "money" and ib - ia >= 100 and attempt < 5:
                v = rng.randint(ia, ib)
                return max(ia, min(ib, round(v, -1)))
            return rng.randint(ia, ib)
        if attempt >= self.MAX_TRIES - 3:  # last resorts: the middle of the range, unrounded
            return float((a + b) / 2)
        if kind == "money":
            base = rng.randint(math.ceil(a), max(math.ceil(a), math.floor(b)))
            cents = rng.choice((0, 0, 50, 99, rng.randint(1, 99)))
            return round(min(b, base + cents / 100), 2)
        if kind == "percent":
            return round(rng.uniform(a, b), 1)
        if kind == "count":
            return float(rng.randint(math.ceil(a), max(math.ceil(a), math.floor(b))))
        return round(rng.uniform(a, b), 2)

    # -- strings -----------------------------------------------------------------------------

    def _string(self, name: str, spec: dict[str, Any], persona: Persona | None, root: dict[str, Any]) -> str:
        """A string for `name`: the shape the description shows when it passes the whole schema
        as drawn, else the pattern, the format, the name heuristics and a word token in turn
        (each fitted to the length bounds), the first that conforms."""
        for attempt in range(self.DESCRIBED_TRIES):
            # A pattern may admit only some draws of the shape ("2025-H1" against
            # ^20[0-9]{2}-(H1|H2|FY)$): later tries keep some parts of the example as written.
            described = self._described(name, spec, persona, keep=0.5 if attempt else 0.0)
            if described is None:
                break
            if check_value(described, spec, root=root) is None:
                return described
        producers: list[Callable[[], str]] = []
        pattern = spec.get("pattern")
        if isinstance(pattern, str) and _OPEN_PATTERN.fullmatch(pattern):
            # "^[a-z0-9_-]{2,50}$" says which characters, not what: the name's value, when it passes
            producers.append(lambda: self.draws.by_name(name, spec, persona))
        if isinstance(pattern, str):
            producers.append(lambda: sample_pattern(pattern, self.rng))
        fmt = spec.get("format")
        if isinstance(fmt, str) and fmt in formats.CHECKED:
            producers.append(lambda: self.draws.formatted(fmt, name, persona))
        producers.append(lambda: self.draws.by_name(name, spec, persona))
        producers.append(self.draws.word_token)
        first: str | None = None
        for produce in producers:
            try:
                value = _fit_length(produce(), spec, self.rng)
            except UnsupportedPattern:
                continue
            if first is None:
                first = value
            if check_value(value, spec, root=root) is None:
                return value
        return first if first is not None else self.draws.word_token()

    # -- what the description shows ----------------------------------------------------------

    def _described(
        self, name: str, spec: dict[str, Any], persona: Persona | None, *, keep: float = 0.0
    ) -> str | None:
        """A value of the shape the parameter's description shows, or None when it shows none.

        A code-like example ("e.g. 'VH-20931'", "(e.g. FRA)", "such as PO-2024-0042") comes
        first: `shaped` draws a fresh value of its shape. Otherwise a spelled-out format
        ("YYYY-MM", "HH:MM", "ISO 4217 currency code", "E.164", "UUID", ...) is drawn by kind.
        Else, where the schema lists two or more examples that show no shape ("@", "www", "mail"), one
        of them as written. The caller keeps the value only when it passes the schema (enum, pattern, format and
        bounds are stronger than prose); `keep` is passed on to `shaped`.
        """
        description = str(spec.get("description") or "")
        shown = schema_example(spec)
        listed = listed_examples(spec)
        if not description and shown is None and not listed:
            return None
        tokens = param_tokens(name)
        identifier = bool(tokens) and (tokens[-1] in ID_WORDS or "sku" in tokens)
        example = description_example(description, identifier=identifier) or shown
        if example is not None and re.fullmatch(r"[a-z]+(?:_[a-z]+)+", example):
            # "e.g. `contractor_booked` or `completed`": a status word is said as written
            literals = re.findall(r"`([a-z]+(?:_[a-z]+)*)`", description) or [example]
            return self.rng.choice([w for w in literals if w not in tokens] or [example])
        kind = spelled_format(description)
        if kind == "mm-dd":  # "MM-DD format (e.g. '04-15')": a day of the year, never "09-68"
            return spelled(self.draws, kind, name, persona)
        if example is not None and re.match(r"https?://", example):
            return (
                self.draws.url()
            )  # "e.g. 'https://www.google.com'": a web address, never "https://zoe.ledger.zoe"
        if example is not None:
            value = shaped(self.draws, example, name, description, keep=keep)
            if value is not None:
                return value
        if kind is not None:
            return spelled(self.draws, kind, name, persona)
        # the schema's own examples are words, no shape ("@", "www", "mail"): one of them as written
        return self.rng.choice(listed) if listed else None

    # -- containers --------------------------------------------------------------------------

    def _array(
        self, name: str, spec: dict[str, Any], persona: Persona | None, root: dict[str, Any]
    ) -> list[Any]:
        """One to three distinct items (within minItems/maxItems), each drawn for the singular of
        the list's name; a string item without a description shows the list's."""
        rng = self.rng
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {"type": "string"}
        if "description" not in items and spec.get("description") and pick_type(items) == "string":
            # "Cost centers to split across, e.g. CC-4100": the list's example shows its items.
            items = {**items, "description": spec["description"]}
        lo = spec.get("minItems") if isinstance(spec.get("minItems"), int) else 0
        hi = spec.get("maxItems") if isinstance(spec.get("maxItems"), int) else None
        if hi == 0:
            return []
        lo_n = max(lo, 1)
        hi_n = min(hi if hi is not None else max(lo_n, 3), lo_n + 2)
        n = rng.randint(lo_n, max(lo_n, hi_n))
        item_name = singular(name)
        out: list[Any] = []
        for _ in range(n):
            for attempt in range(12):  # distinct items read more naturally, and satisfy uniqueItems
                # A persona pins some values (its department): later tries go without it.
                value = self.value_for(item_name, items, persona=persona if attempt < 3 else None, root=root)
                if not any(json_equal(value, v) for v in out):
                    break
            else:
                if len(out) >= lo:
                    break
            out.append(value)
        return out

    def _object(self, spec: dict[str, Any], persona: Persona | None, root: dict[str, Any]) -> dict[str, Any]:
        """The required properties of an object, each drawn by its own name and schema."""
        props = spec.get("properties") if isinstance(spec.get("properties"), dict) else {}
        required = [k for k in (spec.get("required") or []) if isinstance(k, str)]
        out = {
            k: self.value_for(k, props.get(k, {"type": "string"}), persona=persona, root=root)
            for k in required
        }
        self._order_ranges(out, props, root)  # a timesheet's EndDate after its StartDate
        return out

    # -- coherence across arguments ----------------------------------------------------------

    _RANGE_PAIRS = (
        ("start", "end"),
        ("from", "to"),
        ("check_in", "check_out"),
        ("departure", "return"),
        ("begin", "end"),
    )

    def _order_ranges(
        self, args: dict[str, Any], props: dict[str, dict[str, Any]], root: dict[str, Any]
    ) -> None:
        """An ``end_date`` (or ``EndDate``) generated before its ``start_date`` is moved 1-14 days
        after it: ISO dates and date-times, and WCF JSON dates ("/Date(1547164800000+0000)/")."""
        for key, start in list(args.items()):
            for a, b in self._RANGE_PAIRS:
                for x, y in ((a, b), (a.capitalize(), b.capitalize())):
                    other = key.replace(x, y)
                    if x not in key or other == key or other not in args:
                        continue
                    moved = self._after(start, args[other])
                    if moved is not None and check_value(moved, props.get(other, {}), root=root) is None:
                        args[other] = moved

    def _after(self, start: Any, end: Any) -> str | None:
        """`end` moved 1-14 days after `start` when it comes before it; None when it does not, or
        when the two are not dates of one format."""
        if not (isinstance(start, str) and isinstance(end, str)):
            return None
        days = self.rng.randint(1, 14)
        ws, we = _WCF.fullmatch(start), _WCF.fullmatch(end)
        if ws and we:
            if int(we.group(1)) >= int(ws.group(1)):
                return None
            return f"/Date({int(ws.group(1)) + days * 86_400_000}{ws.group(2) or ''})/"
        if end >= start:
            return None
        if formats.valid_date(start) and formats.valid_date(end):
            return (date.fromisoformat(start) + timedelta(days=days)).isoformat()
        if formats.valid_datetime(start) and formats.valid_datetime(end) and len(start) == len(end):
            return (datetime.fromisoformat(start) + timedelta(days=days)).isoformat()[: len(start)]
        return None


# A WCF JSON date, as `shaped` draws one: milliseconds since 1970 and an optional zone offset.
# A description that says its number counts things ("Number of chords in ...", "How many ..."):
# a few, never an arbitrary number.
_COUNTED = re.compile(
    r"\s*(?:the\s+)?(?:number|count)\s+of\s+(?!days|hours|minutes|seconds|years|months|weeks)|\s*how many\b",
    re.I,
)
# A pattern that is one character class and a length: it allows a kind of text, it shapes none.
_OPEN_PATTERN = re.compile(r"\^?\[[^\]]+\](?:[*+]|\{\d*,?\d*\})\$?")
_WCF = re.compile(r"/Date\((-?\d+)([+-]\d{4})?\)/")


def _bounds(spec: dict[str, Any], integer: bool) -> tuple[float, float]:
    """The inclusive range a number may take (open bounds tightened by a step)."""
    lo, hi = -math.inf, math.inf
    mn, mx = spec.get("minimum"), spec.get("maximum")
    ex_lo, ex_hi = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
    if ex_lo is True and is_num(mn):
        ex_lo, mn = mn, None
    if ex_hi is True and is_num(mx):
        ex_hi, mx = mx, None
    if is_num(mn):
        lo = max(lo, mn)
    if is_num(mx):
        hi = min(hi, mx)
    if is_num(ex_lo):
        lo = max(lo, math.floor(ex_lo) + 1 if integer else ex_lo + 0.01)
    if is_num(ex_hi):
        hi = min(hi, math.ceil(ex_hi) - 1 if integer else ex_hi - 0.01)
    return lo, hi


def _fit_length(value: str, spec: dict[str, Any], rng: random.Random) -> str:
    """Trim (at a word boundary where there is one) or pad with digits to the length bounds."""
    lo, hi = spec.get("minLength"), spec.get("maxLength")
    if isinstance(hi, int) and len(value) > hi:
        cut = value[:hi]
        if value[hi] != " " and " " in cut.strip():
            cut = cut.rsplit(" ", 1)[0]
        value = cut.rstrip(" .,;:-")
    if isinstance(lo, int) and len(value) < lo:
        value += "".join(rng.choice(string.digits) for _ in range(lo - len(value)))
    return value
