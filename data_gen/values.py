"""Slot values: the gold argument map of a dialogue, and how values travel through natural text.

DiaFORGE §3.1 ("Slot Value Generator") draws concrete, persona-consistent values for the required
arguments of the seed tool so that the user-proxy never has to invent them. This module is the
offline, rule-based version of that generator, plus the pieces the scripted agents share:

* `sample_pattern`: a string that fully matches a JSON Schema `pattern` (the regex subset real API
  schemas use); anything else raises `UnsupportedPattern`.
* `check_value` / `check_arguments`: does a value (an argument map) conform to its JSON Schema?
  Each problem comes back as one short line, e.g. ``amount: 12 is below minimum 50``.
* `ValueGenerator`: typed, realistic values by schema first (enum, pattern, format, bounds) and by
  parameter-name heuristics second (``*_id``, ``currency``, ``cost_center``, ``reason``, ...).
  Every value it returns passes `check_value`.
* `render_value` / `phrase_values` / `extract_value`: how a user says a value in a sentence and
  how the assistant reads it back. The contract, held by property tests: for every generated value
  ``v``, ``extract_value(phrase_with(render_value(v)), name, spec) == (True, v)`` for every
  template of `VALUE_PHRASES`, also when one sentence carries several parameters.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import json
import math
import random
import re
import string
import uuid
from collections.abc import Callable
from datetime import date, datetime, time, timedelta
from typing import Any

from data_gen.schema import Persona, Tool, normalise_type

try:  # Python >= 3.11
    from re import _constants as _sre_c
    from re import _parser as _sre_p
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef]
    import sre_parse as _sre_p  # type: ignore[no-redef]

__all__ = [
    "UnsupportedPattern",
    "VALUE_PHRASES",
    "ValueGenerator",
    "check_arguments",
    "check_value",
    "extract_value",
    "humanise_param",
    "phrase_values",
    "render_value",
    "sample_pattern",
    "_stable_rng",
]

DEFAULT_TODAY = date(2026, 1, 15)


def _stable_rng(*parts: Any) -> random.Random:
    """A `random.Random` seeded from a sha256 of `parts`, identical across runs and processes
    (unlike `hash()`), so a caller can derive one generator per (tool, seed, ...) tuple."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return random.Random(int(digest[:16], 16))


# =============================================================================================
# 1. Regex sampler
# =============================================================================================


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


# =============================================================================================
# 2. Schema conformance
# =============================================================================================

_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?")
_TIME_RE = re.compile(r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?")
_EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_URI_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+")


def _valid_date(s: str) -> bool:
    if not _DATE_RE.fullmatch(s):
        return False
    try:
        date.fromisoformat(s)
    except ValueError:
        return False
    return True


def _valid_datetime(s: str) -> bool:
    if not _DATETIME_RE.fullmatch(s):
        return False
    try:
        datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", s))
    except ValueError:
        return False
    return True


def _valid_time(s: str) -> bool:
    if not _TIME_RE.fullmatch(s):
        return False
    try:
        time.fromisoformat(re.sub(r"[Zz]$", "+00:00", s))
    except ValueError:
        return False
    return True


# format -> (checker, how to name it in a reason). Unknown formats are not checked.
_FORMATS: dict[str, tuple[Callable[[str], bool], str]] = {
    "date": (_valid_date, "date (YYYY-MM-DD)"),
    "date-time": (_valid_datetime, "ISO 8601 date-time"),
    "time": (_valid_time, "time (HH:MM[:SS])"),
    "email": (lambda s: bool(_EMAIL_RE.fullmatch(s)), "email address"),
    "uuid": (lambda s: bool(_UUID_RE.fullmatch(s)), "UUID"),
    "uri": (lambda s: bool(_URI_RE.fullmatch(s)), "URI"),
    "url": (lambda s: bool(_URI_RE.fullmatch(s)), "URL"),
}


def _show(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _json_type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _canonical_type(t: Any) -> str | None:
    if not isinstance(t, str):
        return None
    try:
        return normalise_type(t)[0]
    except ValueError:
        return None


def _is_json_type(value: Any, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "array":
        return isinstance(value, (list, tuple))
    if t == "object":
        return isinstance(value, dict)
    if t == "null":
        return value is None
    return True


def _declared_types(spec: dict[str, Any]) -> list[str] | None:
    """The JSON types a spec allows, canonicalised; None when it does not say."""
    raw = spec.get("type")
    if raw is None:
        return None
    raws = raw if isinstance(raw, list) else [raw]
    types = [_canonical_type(t) for t in raws]
    if any(t is None for t in types):  # an unconstraining or unknown spelling
        return None
    return [t for t in types if t is not None]


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _problems(value: Any, spec: Any, path: str) -> list[str]:
    """Every way `value` fails `spec`, each as ``path: reason`` (just ``reason`` at the root)."""
    if not isinstance(spec, dict):
        return []

    def at(msg: str) -> str:
        return f"{path}: {msg}" if path else msg

    types = _declared_types(spec)
    if types is not None and not any(_is_json_type(value, t) for t in types):
        return [at(f"expected {' or '.join(types)}, got {_json_type_of(value)} {_show(value)}")]
    if "const" in spec and not _json_equal(value, spec["const"]):
        return [at(f"{_show(value)} is not {_show(spec['const'])}")]
    enum = spec.get("enum")
    if isinstance(enum, list) and not any(_json_equal(value, m) for m in enum):
        return [at(f"{_show(value)} is not one of {', '.join(_show(m) for m in enum)}")]

    out: list[str] = []
    if isinstance(value, str):
        out += [at(m) for m in _string_problems(value, spec)]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out += [at(m) for m in _number_problems(value, spec)]
    elif isinstance(value, (list, tuple)):
        n = len(value)
        if isinstance(spec.get("minItems"), int) and n < spec["minItems"]:
            out.append(at(f"has {n} items, fewer than minItems {spec['minItems']}"))
        if isinstance(spec.get("maxItems"), int) and n > spec["maxItems"]:
            out.append(at(f"has {n} items, more than maxItems {spec['maxItems']}"))
        if spec.get("uniqueItems") is True:
            for i, item in enumerate(value):
                if any(_json_equal(item, other) for other in value[:i]):
                    out.append(at(f"item {_show(item)} is repeated but uniqueItems is set"))
                    break
        items = spec.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                out += _problems(item, items, f"{path}[{i}]")
    elif isinstance(value, dict):
        props = spec.get("properties") if isinstance(spec.get("properties"), dict) else {}
        for key in spec.get("required") or []:
            if key not in value:
                out.append(f"{_join_path(path, key)}: missing required property")
        for key, item in value.items():
            if key in props:
                out += _problems(item, props[key], _join_path(path, str(key)))
            elif spec.get("additionalProperties") is False:
                out.append(f"{_join_path(path, str(key))}: unknown property")
            elif isinstance(spec.get("additionalProperties"), dict):
                out += _problems(item, spec["additionalProperties"], _join_path(path, str(key)))
    return out


def _string_problems(value: str, spec: dict[str, Any]) -> list[str]:
    out = []
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        try:
            if re.search(pattern, value) is None:
                out.append(f"{_show(value)} does not match pattern {pattern}")
        except re.error:
            out.append(f"the schema's pattern {pattern!r} is not a valid regular expression")
    fmt = spec.get("format")
    if isinstance(fmt, str) and fmt in _FORMATS:
        ok, label = _FORMATS[fmt]
        if not ok(value):
            out.append(f"{_show(value)} is not a valid {label}")
    if isinstance(spec.get("minLength"), int) and len(value) < spec["minLength"]:
        out.append(f"{_show(value)} is shorter than minLength {spec['minLength']}")
    if isinstance(spec.get("maxLength"), int) and len(value) > spec["maxLength"]:
        out.append(f"{_show(value)} is longer than maxLength {spec['maxLength']}")
    return out


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _number_problems(value: float, spec: dict[str, Any]) -> list[str]:
    out = []
    shown = _show(value)
    lo, hi = spec.get("minimum"), spec.get("maximum")
    ex_lo, ex_hi = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
    if ex_lo is True and _is_num(lo):  # draft-4 spelling: a flag on `minimum`
        ex_lo, lo = lo, None
    if ex_hi is True and _is_num(hi):
        ex_hi, hi = hi, None
    if _is_num(lo) and value < lo:
        out.append(f"{shown} is below minimum {_show(lo)}")
    if _is_num(hi) and value > hi:
        out.append(f"{shown} is above maximum {_show(hi)}")
    if _is_num(ex_lo) and value <= ex_lo:
        out.append(f"{shown} must be greater than {_show(ex_lo)} (exclusiveMinimum)")
    if _is_num(ex_hi) and value >= ex_hi:
        out.append(f"{shown} must be less than {_show(ex_hi)} (exclusiveMaximum)")
    step = spec.get("multipleOf")
    if _is_num(step) and step > 0:
        q = value / step
        if abs(q - round(q)) > 1e-9 * max(1.0, abs(q)):
            out.append(f"{shown} is not a multiple of {_show(step)}")
    return out


def check_value(value: Any, spec: dict[str, Any]) -> str | None:
    """None when `value` conforms to the property schema `spec`, else a short reason.

    Checks the JSON type (an ``integer`` is an int and not a bool; a ``number`` is a finite int
    or float and not a bool), ``const``, ``enum``, ``pattern`` (``re.search``, as JSON Schema
    says), ``format`` (date, date-time, time, email, uuid, uri), ``minimum``/``maximum``/
    ``exclusiveMinimum``/``exclusiveMaximum``/``multipleOf``, ``minLength``/``maxLength``, arrays
    (``items``, ``minItems``, ``maxItems``, ``uniqueItems``) and objects (``properties``,
    ``required``, ``additionalProperties``), recursively. Nested reasons name their path
    (``items[1]: ...``, ``address.city: ...``).
    """
    problems = _problems(value, spec, "")
    return problems[0] if problems else None


def check_arguments(tool: Tool, args: dict[str, Any]) -> list[str]:
    """Every problem of an argument map for `tool`: missing required keys, unknown keys and
    non-conforming values, each as one line (``amount: 12 is below minimum 50``)."""
    if not isinstance(args, dict):
        return [f"arguments must be an object, got {_json_type_of(args)}"]
    props = tool.properties
    problems = [f"{key}: missing required argument" for key in tool.required if key not in args]
    problems += [
        f"{key}: unknown argument (not a parameter of {tool.name})" for key in args if key not in props
    ]
    for key, value in args.items():
        if key in props:
            problems += _problems(value, props[key], key)
    return problems


# =============================================================================================
# 3. Typed value generator
# =============================================================================================


def _words(text: str) -> list[str]:
    return text.split()


_FIRST_NAMES = _words(
    "Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kwame Lena Mateo Nadia Oliver Priya "
    "Quentin Rosa Sanjay Tomas Uma Victor Wen Yara Zoe Amara Lars Mei Noah Sofia Tariq Ingrid Diego "
    "Hannah Kenji Leila Marcus Olga Rafael Sunita"
)
_LAST_NAMES = _words(
    "Adams Bauer Chen Diallo Eriksen Fischer Garcia Haddad Ivanova Jensen Kowalski Lopez Moreau "
    "Nakamura Okafor Patel Quinn Rossi Schmidt Tanaka Usman Varga Wright Xu Yilmaz Zhang Novak Silva "
    "Murphy Kim Lindqvist Mendes Brennan Achebe Horvat Dubois Sato Kapoor Nielsen Romero"
)
_COMPANIES = (
    "Northwind Traders",
    "Contoso Group",
    "Fabrikam Supplies",
    "Globex Logistics",
    "Initech Services",
    "Tailspin Aviation",
    "Wingtip Travel",
    "Litware Systems",
    "Adatum Consulting",
    "Proseware Analytics",
    "Woodgrove Partners",
    "Lucerne Publishing",
    "Alpine Ski House",
    "Coho Vineyard",
    "Fourth Coffee",
    "Blue Yonder Freight",
)
_CURRENCIES = _words("USD EUR GBP JPY CHF CAD AUD SEK NOK DKK INR SGD BRL MXN ZAR PLN CNY HKD NZD")
_COUNTRY_CODES = _words("US GB DE FR NL ES IT SE NO DK IE CH AT BE PL PT IN JP SG AU CA BR MX ZA")
_COUNTRIES = _words(
    "Germany France Spain Portugal Ireland Netherlands Sweden Norway Denmark Poland Italy Austria "
    "Switzerland Belgium India Japan Singapore Australia Canada Brazil Mexico"
)
_CITIES = _words(
    "Berlin London Paris Madrid Lisbon Dublin Amsterdam Toronto Chicago Austin Singapore Sydney "
    "Tokyo Zurich Stockholm Warsaw Bangalore Munich Boston Denver Seattle Vienna Prague Oslo"
) + ["New York", "San Francisco", "Sao Paulo", "Mexico City"]
_OFFICES = ("HQ", "Building A", "Building C", "North Campus", "Riverside Office", "Floor 4")
_DEPARTMENTS = (
    "Finance",
    "Human Resources",
    "Procurement",
    "Marketing",
    "Sales",
    "Engineering",
    "Customer Support",
    "Legal",
    "Operations",
    "IT Services",
    "Facilities",
    "Supply Chain",
    "Treasury",
    "Internal Audit",
)
_PROJECTS = (
    "Atlas Migration",
    "Project Orion",
    "Helios Data Platform",
    "Phoenix CRM Rollout",
    "Nimbus Cloud Move",
    "Project Meridian",
    "Keystone ERP Upgrade",
    "Aurora Analytics",
    "Beacon Onboarding Revamp",
    "Project Cobalt",
)
_TEAMS = (
    "Platform Engineering",
    "Payroll Operations",
    "Field Sales East",
    "Data Science",
    "Vendor Management",
    "Service Desk",
    "Talent Acquisition",
    "Revenue Accounting",
)
_PRODUCTS = (
    "Latitude 7450 laptop",
    "ergonomic desk chair",
    "27-inch monitor",
    "noise-cancelling headset",
    "docking station",
    "standing desk",
    "wireless keyboard",
    "conference speakerphone",
    "A4 printer paper",
    "USB-C charger",
)
_COURSES = (
    "Advanced Excel for Analysts",
    "Cloud Architecture Fundamentals",
    "Negotiation Skills Workshop",
    "Project Management Essentials",
    "Data Privacy Awareness",
    "Leading Hybrid Teams",
    "Python for Finance",
    "Effective Presentations",
)
_JOB_TITLES = (
    "Financial Analyst",
    "Software Engineer",
    "Procurement Specialist",
    "HR Business Partner",
    "Account Manager",
    "Operations Lead",
    "Data Analyst",
    "Payroll Coordinator",
)
_TITLES = (
    "Quarterly budget review",
    "New hire onboarding checklist",
    "Vendor contract renewal",
    "Laptop refresh request",
    "Team offsite planning",
    "Access request for the finance share",
    "Monthly close follow-up",
    "Client workshop preparation",
)
_FREE_TEXT = (
    "quarterly onboarding refresher",
    "client workshop in the Berlin office",
    "replacement for a broken laptop",
    "annual compliance training deadline",
    "team offsite planning session",
    "vendor invoice is past due",
    "budget approved by the finance director",
    "covering for a colleague on leave",
    "migration of the reporting dashboards",
    "customer escalation needs a quick fix",
    "renewal of the expiring software licence",
    "new starter joining the support team",
    "travel to the regional sales kickoff",
    "equipment needed for the new project",
    "follow-up from the last audit review",
    "certification required for the cloud migration",
    "duplicate charge on the corporate card",
    "headcount change after the reorganisation",
    "speaking slot at a data conference",
    "quarter end reconciliation of open items",
    "security patch for the payroll system",
    "move to the new Lisbon office",
    "pilot run with the procurement team",
    "mentoring programme for junior analysts",
    "please process before month end",
    "agreed with my manager last week",
    "needed for the product launch",
    "replaces the cancelled booking",
)
_WORDS = _words(
    "harbor summit ledger beacon cobalt meridian orbit cedar falcon granite horizon juniper "
    "keystone lumen maple nova onyx pioneer quartz ridge sierra tundra vector willow zenith "
    "aspen delta ember fjord glacier"
)
_STREETS = ("Market Street", "Harbour Road", "Elm Avenue", "King Street", "Park Lane", "Mill Road")
_REGIONS = ("EMEA", "APAC", "AMER", "LATAM", "NA")
_TIMEZONES = ("Europe/Berlin", "Europe/London", "America/New_York", "America/Chicago", "Asia/Singapore")
_LANGUAGES = ("en", "de", "fr", "es", "ja", "pt", "it", "nl")
_LOCALES = ("en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "ja-JP")
_STATUSES = ("open", "pending", "approved", "rejected", "closed", "on_hold")
_PRIORITIES = ("low", "medium", "high", "critical")
_UNITS = ("EA", "kg", "hours", "box", "pack", "litre")
_FILE_EXTS = ("pdf", "xlsx", "docx", "csv", "pptx")

# The uppercase prefix of a generated identifier, by the words in front of `_id`.
_ID_PREFIXES = {
    k.replace("_", " "): v
    for k, v in (
        pair.split("=")
        for pair in _words(
            "employee=EMP request=REQ invoice=INV ticket=TKT order=ORD purchase_order=PO training_request=TR "
            "project=PRJ vendor=VND supplier=SUP customer=CUST client=CLI asset=AST contract=CTR case=CASE "
            "incident=INC change=CHG account=ACC user=USR report=RPT expense=EXP expense_report=ER "
            "booking=BKG reservation=RSV policy=POL claim=CLM shipment=SHP product=PRD item=ITM course=CRS "
            "candidate=CAN position=POS job=JOB requisition=REQ department=DEP team=TEAM budget=BUD "
            "approval=APR document=DOC meeting=MTG room=RM device=DEV license=LIC licence=LIC transaction=TXN "
            "payment=PAY quote=QTE opportunity=OPP lead=LEAD task=TSK warehouse=WH store=STR location=LOC "
            "manager=MGR trip=TRP leave=LV leave_request=LR timesheet=TS promo=PROMO discount=SAVE "
            "voucher=VCH"
        )
    )
}
_ID_WORDS = {"id", "ids", "number", "no", "num", "ref", "reference", "code", "key", "identifier"}
_PERSON_WORDS = frozenset(
    _words(
        "manager approver assignee owner requester requestor employee reviewer contact recipient attendee "
        "traveler traveller candidate delegate person sponsor supervisor participant guest member author "
        "submitter beneficiary payee host"
    )
)
_COMPANY_WORDS = frozenset(
    _words(
        "vendor supplier company customer client organisation organization org business partner merchant "
        "carrier employer"
    )
)
_FREE_TEXT_WORDS = frozenset(
    _words(
        "reason justification description comment comments note notes message purpose details explanation "
        "remarks remark feedback body text instructions objective rationale memo context"
    )
)
_TITLE_WORDS = {"title", "subject", "summary", "headline", "topic", "agenda"}
_MONEY_WORDS = frozenset(
    _words(
        "amount cost costs price budget salary total fee fees balance spend payment expense charge "
        "subtotal tax bonus compensation refund deposit value allowance credit debit wage"
    )
)
_QUANTITY_WORDS = frozenset(
    _words(
        "quantity qty count seats units headcount licenses licences nights days attendees participants "
        "copies guests people items tickets rooms weeks months installments instalments hours"
    )
)
_PERCENT_WORDS = frozenset(_words("percent percentage pct discount rate probability utilization utilisation"))
_PAST_DATE_WORDS = frozenset(
    _words(
        "since invoice invoiced hire hired joined joining created issued issue purchase purchased "
        "incurred expense transaction last occurred incident submitted received receipt posted paid "
        "signed opened completed completion previous past modified updated"
    )
)
_FUTURE_DATE_WORDS = frozenset(
    _words(
        "start starting due travel delivery deliver departure depart return end deadline expiry "
        "expiration expires scheduled schedule check arrival event meeting launch effective renewal until "
        "target follow appointment booking next planned go live termination leave trip valid"
    )
)
_ACRONYMS = {
    **{
        w: w.upper()
        for w in _words(
            "id url uri sku po iso vat api ip uuid sla kpi hr pto eta gl crm erp ssn iban bic mfa vpn sso utc "
            "dob pdf csv os sap sepa ifrs gaap vip sms"
        )
    },
    "ids": "IDs",
    "urls": "URLs",
    "skus": "SKUs",
}


def _name_tokens(name: str) -> list[str]:
    """``costCenterID`` / ``cost_center_id`` / ``cost-center id`` -> ``[cost, center, id]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[\s_\-./:]+", spaced.lower()) if t]


def humanise_param(name: str) -> str:
    """How a person names a parameter: ``cost_center_id`` -> ``cost center ID``,
    ``startDate`` -> ``start date``, ``is_urgent`` -> ``urgent flag``. Idempotent."""
    tokens = _name_tokens(name)
    if not tokens:
        return name
    if len(tokens) > 1 and tokens[0] in ("is", "has"):
        tokens = [*tokens[1:], "flag"]
    return " ".join(_ACRONYMS.get(t, t) for t in tokens)


def _toggle_plural(word: str) -> str:
    low = word.lower()
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + "y"
    if low.endswith("s") and not low.endswith("ss") and len(low) > 2:
        return word[:-1]
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def _singular(name: str) -> str:
    tokens = _name_tokens(name)
    if not tokens:
        return name
    last = tokens[-1]
    if last.endswith("s") and not last.endswith("ss"):
        tokens[-1] = _toggle_plural(last)
    return "_".join(tokens)


# -- what a parameter's description shows ------------------------------------------------------
#
# Catalogues often say more in prose than in the schema: "Employee id, e.g. EMP004217.",
# "Posting month as YYYY-MM.", "Phone number in E.164 format.". `_description_example` finds a
# written example and `_spelled_format` a spelled-out format; the generator then draws fresh
# values of that shape (see `ValueGenerator._described`).

# A marker that introduces an example, then the example: quoted ('...', "...", “...”, `...`) or
# a bare run up to whitespace, a comma, a semicolon or a bracket.
_EXAMPLE_MARKER = (
    r"(?:\be\.\s?g\b\.?|\beg\.|\bfor\s+(?:example|instance)\b|\bexamples?\b|\bex\.|"
    r"\bsuch\s+as\b|\blike\b)"
)
_EXAMPLE_RE = re.compile(
    _EXAMPLE_MARKER + r"\s*[:,]?\s*"
    r"(?:'([^'\s]+)'|\"([^\"\s]+)\"|“([^”\s]+)”|`([^`\s]+)`|([^\s,;()\[\]'\"“”`]+))",
    re.IGNORECASE,
)
# An identifier written anywhere in an identifier's description ("... the request (TR-12345)").
_LOOSE_ID_RE = re.compile(r"(?<![\w-])([A-Z]{1,6}[-_/]?\d{3,10})(?![\w-])")
_SEPARATED = re.compile(r"[A-Za-z0-9][-_/.:\\@#+][A-Za-z0-9]")


def _code_like(token: str, *, strict: bool = False) -> bool:
    """Whether `token` reads as a code whose shape is worth copying (``EMP004217``, ``FRA``,
    ``2025-03``, ``@jane_doe``) rather than a plain word (``printers``, ``Excel``). `strict`
    (for "like"/"such as", which also introduce prose) wants a digit or an inner separator."""
    if len(token) < 2:
        return False
    if re.search(r"\d", token) or _SEPARATED.search(token) or token[0] in "@#+\\":
        return True
    return not strict and len(re.findall(r"[A-Z]", token)) >= 2


def _description_example(description: str, *, identifier: bool = False) -> str | None:
    """The first code-like example the description writes after "e.g.", "for example",
    "such as", "like", ... (quoted or bare, trailing punctuation dropped); for an `identifier`,
    also a bare ``ABC-12345`` anywhere. None when there is none: free-text examples
    ("e.g. 'industry = retail AND country = FR'", "e.g. Koeln Hbf") give no shape."""
    for m in _EXAMPLE_RE.finditer(description or ""):
        quoted = next((g for g in m.groups()[:4] if g), None)
        token = quoted if quoted is not None else m.group(5).rstrip(".:!?")
        strict = quoted is None and m.group(0).lower().startswith(("like", "such"))
        if _code_like(token, strict=strict):
            return token
    if identifier:
        loose = _LOOSE_ID_RE.search(description or "")
        if loose:
            return loose.group(1)
    return None


# Spelled-out formats, most specific first: (regex on the description, kind).
_SPELLED_FORMATS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rx, re.IGNORECASE), kind)
    for rx, kind in (
        (r"\bYYYY-MM-DD[T ]hh:mm", "date-time"),
        (r"\bYYYY-MM-DD\b", "date"),
        (r"\bYYYYMMDD\b", "compact-date"),
        (r"\bDD/MM/YYYY\b", "dd/mm/yyyy"),
        (r"\bMM/DD/YYYY\b", "mm/dd/yyyy"),
        (r"\bYYYY-Q[n1-4]\b", "year-quarter"),
        (r"\bYYYY-MM\b", "year-month"),
        (r"\bhh:mm:ss\b", "time-hms"),
        (r"\bhh:mm\b", "time-hm"),
        (r"\bISO[\s-]?8601\b(?=.*\b(?:time\s?zone|offset|utc)\b)", "date-time-tz"),
        (r"\bISO[\s-]?8601\s+date\b(?![\s-]?time)", "date"),
        (r"\bISO[\s-]?8601\b", "date-time"),
        (r"\bISO[\s-]?4217\b|\bcurrency\s+code\b", "currency"),
        (r"\bISO[\s-]?3166(?:-1)?\s+alpha[\s-]?3\b|\bthree-letter\s+country\s+code\b", "country-alpha3"),
        (r"\bISO[\s-]?3166\b|\btwo-letter\s+country\s+code\b", "country-alpha2"),
        (r"\bISO[\s-]?639\b", "language"),
        (r"\bE\.?164\b", "e164"),
        (r"\b(?:UUID|GUID)\b", "uuid"),
    )
)


def _spelled_format(description: str) -> str | None:
    """The kind of the first spelled-out format the description names (``YYYY-MM-DD`` ->
    ``date``, ``ISO 4217 currency code`` -> ``currency``, ``E.164`` -> ``e164``, ...), or None."""
    for rx, kind in _SPELLED_FORMATS:
        if rx.search(description or ""):
            return kind
    return None


def _example_runs(example: str) -> list[str]:
    """``EVT-2025-HAM`` -> ``[EVT, -, 2025, -, HAM]``: runs of digits, capitals, small letters and
    everything else."""
    return re.findall(r"\d+|[A-Z]+|[a-z]+|[^A-Za-z0-9]+", example)


def _is_literal_run(runs: list[str], i: int) -> bool:
    """Whether run `i` of an example is kept as written: leading letters followed by more
    (``EMP`` in ``EMP004217``, ``PO`` in ``PO-2024-0042``, ``fs`` in ``\\\\fs01\\finance``) or a
    one-letter capital marker before digits (``Q`` in ``2025-Q2``)."""
    run = runs[i]
    nxt = runs[i + 1] if i + 1 < len(runs) else ""
    prev = runs[i - 1] if i else ""
    if run.isalpha() and i == 0 and nxt and not nxt.isalpha():
        return True
    if run.isalpha() and nxt.isdigit() and not any(r.isalnum() for r in runs[:i]):
        return True  # the first letters after leading symbols: "fs" in \\fs01\finance
    return run.isupper() and len(run) == 1 and nxt.isdigit() and not prev.isalnum()


_CURRENT_YEAR_RE = re.compile(r"(?:19|20)\d\d")
_AIRPORTS = _words(
    "FRA MUC BER HAM LHR LGW CDG AMS MAD BCN LIS DUB ZRH VIE CPH ARN OSL WAW JFK ORD SFO BOS SIN NRT"
)
_COUNTRY_CODES3 = _words(
    "USA GBR DEU FRA NLD ESP ITA SWE NOR DNK IRL CHE AUT BEL POL PRT IND JPN SGP AUS CAN BRA"
)
_VOCAB_BY_LEN: dict[int, tuple[str, ...]] = {}
for _w in sorted(
    {w.lower() for w in (*_WORDS, *_FIRST_NAMES, *_LAST_NAMES) if w.isalpha()}
    | set(_words("ops data team desk sales audit cloud north south east west spring autumn winter summer"))
):
    _VOCAB_BY_LEN[len(_w)] = (*_VOCAB_BY_LEN.get(len(_w), ()), _w)
_E164_COUNTRIES = ("1", "44", "49", "33", "34", "31", "46", "39", "41", "65", "61", "81")


class ValueGenerator:
    """Realistic, schema-conforming values for tool parameters (DiaFORGE §3.1, rule-based).

    Schema constraints come first (``const``, ``enum``, ``pattern``, ``format``, bounds, lengths),
    then parameter-name heuristics, then a word-based token. Every value is JSON-serialisable and
    checked with `check_value` before it is returned; a schema no value can satisfy raises
    `ValueError` naming the parameter. All randomness comes from `rng`, so a seeded generator
    (see `_stable_rng`) reproduces its values exactly.

    Args:
        rng: the source of randomness.
        today: the reference day for dates: past-looking names (``*_since``, ``invoice_date``,
            ``hire_date``) get a weekday up to 60 days before it, future-looking ones
            (``start_date``, ``due_date``, ``travel_date``) up to 120 days after.
    """

    MAX_TRIES = 30
    DESCRIBED_TRIES = 16

    def __init__(self, rng: random.Random, *, today: date = DEFAULT_TODAY) -> None:
        self.rng = rng
        self.today = today

    # -- public API --------------------------------------------------------------------------

    def value_for(self, name: str, spec: dict[str, Any] | None, *, persona: Persona | None = None) -> Any:
        """One value for parameter `name` with property schema `spec`, conforming to it."""
        spec = spec if isinstance(spec, dict) else {}
        problem = None
        for attempt in range(self.MAX_TRIES):
            value = self._draw(name, spec, persona, attempt)
            problem = check_value(value, spec)
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
        args = {k: self.value_for(k, props[k], persona=persona) for k in props if k in wanted}
        self._order_ranges(args, props)
        return args

    # -- dispatch ----------------------------------------------------------------------------

    def _draw(self, name: str, spec: dict[str, Any], persona: Persona | None, attempt: int) -> Any:
        if "const" in spec:
            return copy.deepcopy(spec["const"])
        enum = spec.get("enum")
        if isinstance(enum, list) and enum:
            rest = {k: v for k, v in spec.items() if k != "enum"}
            members = [m for m in enum if check_value(m, rest) is None] or enum
            return copy.deepcopy(self.rng.choice(members))
        kind = self._pick_type(spec)
        if kind == "null":
            return None
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind in ("integer", "number"):
            return self._number(name, spec, integer=kind == "integer", attempt=attempt)
        if kind == "array":
            return self._array(name, spec, persona)
        if kind == "object":
            return self._object(spec, persona)
        return self._string(name, spec, persona)

    @staticmethod
    def _pick_type(spec: dict[str, Any]) -> str:
        types = _declared_types(spec)
        if types:
            non_null = [t for t in types if t != "null"]
            return non_null[0] if non_null else "null"
        if "items" in spec:
            return "array"
        if "properties" in spec:
            return "object"
        return "string"

    # -- numbers -----------------------------------------------------------------------------

    def _number(self, name: str, spec: dict[str, Any], *, integer: bool, attempt: int) -> int | float:
        rng = self.rng
        tokens = set(_name_tokens(name))
        lo, hi = _bounds(spec, integer)
        kind, (h_lo, h_hi) = self._number_hint(tokens, self.today)
        a, b = max(lo, h_lo), min(hi, h_hi)
        if a > b:  # the name's usual range lies outside the schema's: use the schema's
            a = lo if math.isfinite(lo) else hi - 100
            b = hi if math.isfinite(hi) else lo + max(100, abs(lo))
        step = spec.get("multipleOf")
        if _is_num(step) and step > 0:
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

    @staticmethod
    def _number_hint(tokens: set[str], today: date) -> tuple[str, tuple[float, float]]:
        if tokens & {"hourly", "daily", "nightly"} and tokens & {"rate", "cost", "price"}:
            return "money", (25, 400)
        if tokens & _PERCENT_WORDS:
            return "percent", (0, 100)
        if tokens & _MONEY_WORDS:
            return "money", (50, 5000)
        if tokens & _ID_WORDS and not tokens & {"of"}:
            return "id", (10000, 999999)
        if "year" in tokens:
            return "year", (today.year - 1, today.year + 1)
        if "month" in tokens:
            return "count", (1, 12)
        if "day" in tokens:
            return "count", (1, 28)
        if "hour" in tokens:
            return "count", (8, 18)
        if tokens & {"minutes", "duration", "minute"}:
            return "count", (15, 240)
        if tokens & {"age"}:
            return "count", (22, 65)
        if tokens & {"priority", "level", "severity", "rating", "score", "tier", "grade", "stars"}:
            return "count", (1, 5)
        if tokens & {"limit", "size", "page", "top", "max", "results", "per"}:
            return "count", (10, 100)
        if tokens & _QUANTITY_WORDS or tokens & {"number", "num"}:
            return "count", (1, 10)
        return "plain", (1, 100)

    # -- strings -----------------------------------------------------------------------------

    def _string(self, name: str, spec: dict[str, Any], persona: Persona | None) -> str:
        """A string for `name`: the shape the description shows when it passes the whole schema
        as drawn, else the pattern, the format, the name heuristics and a word token in turn
        (each fitted to the length bounds), the first that conforms."""
        for attempt in range(self.DESCRIBED_TRIES):
            # A pattern may admit only some draws of the shape ("2025-H1" against
            # ^20[0-9]{2}-(H1|H2|FY)$): later tries keep some parts of the example as written.
            described = self._described(name, spec, persona, keep=0.5 if attempt else 0.0)
            if described is None:
                break
            if check_value(described, spec) is None:
                return described
        producers: list[Callable[[], str]] = []
        pattern = spec.get("pattern")
        if isinstance(pattern, str):
            producers.append(lambda: sample_pattern(pattern, self.rng))
        fmt = spec.get("format")
        if isinstance(fmt, str) and fmt in _FORMATS:
            producers.append(lambda: self._formatted(fmt, name, persona))
        producers.append(lambda: self._by_name(name, spec, persona))
        producers.append(self._word_token)
        first: str | None = None
        for produce in producers:
            try:
                value = _fit_length(produce(), spec, self.rng)
            except UnsupportedPattern:
                continue
            if first is None:
                first = value
            if check_value(value, spec) is None:
                return value
        return first if first is not None else self._word_token()

    # -- what the description shows ----------------------------------------------------------

    def _described(
        self, name: str, spec: dict[str, Any], persona: Persona | None, *, keep: float = 0.0
    ) -> str | None:
        """A value of the shape the parameter's description shows, or None when it shows none.

        A code-like example ("e.g. 'VH-20931'", "(e.g. FRA)", "such as PO-2024-0042") comes
        first: `_shaped` draws a fresh value of its shape. Otherwise a spelled-out format
        ("YYYY-MM", "HH:MM", "ISO 4217 currency code", "E.164", "UUID", ...) is drawn by kind.
        The caller keeps the value only when it passes the schema (enum, pattern, format and
        bounds are stronger than prose); `keep` is passed on to `_shaped`.
        """
        description = str(spec.get("description") or "")
        if not description:
            return None
        tokens = _name_tokens(name)
        identifier = bool(tokens) and (tokens[-1] in _ID_WORDS or "sku" in tokens)
        example = _description_example(description, identifier=identifier)
        if example is not None:
            value = self._shaped(example, name, description, keep=keep)
            if value is not None:
                return value
        kind = _spelled_format(description)
        return self._spelled(kind, name, persona) if kind is not None else None

    def _shaped(self, example: str, name: str, description: str, *, keep: float = 0.0) -> str | None:
        """A fresh value with the shape of `example`, never `example` itself (None when the
        example has nothing to vary, e.g. it is all literal prefix).

        Examples that are dates, date-times, months (``2025-03``), times, UUIDs or email
        addresses are drawn as such (a date by the parameter's name, a date-time with the
        example's precision and zone suffix). Anything else keeps its leading letters when more
        follows (``EMP`` in ``EMP004217``, ``PO`` in ``PO-2024-0042``), its separators, letter
        case, leading zeros and a one-letter marker before digits (``Q`` in ``2025-Q2``), and
        draws the rest: a year for ``19xx``/``20xx``, a date for a ``YYYYMMDD`` run, fresh digits
        (first significant one non-zero), capitals (a currency, country or airport code where
        the name or description says so) and small letters (a word of the same length where
        there is one) of the same length. With `keep`, each of those parts is kept as written
        with that probability (the value as a whole still differs from the example).
        """
        for _ in range(10):
            value = self._shape_once(example, name, description, keep)
            if value is None or value != example:
                return value
        return None

    def _shape_once(self, example: str, name: str, description: str, keep: float) -> str | None:
        rng = self.rng
        if _valid_date(example):
            return self._date(name).isoformat()
        if _valid_datetime(example):
            day = self._date(name)
            stamp = (
                f"{day.isoformat()}{example[10]}{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
            )
            clock = re.match(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(?:\.\d+)?)?", example)
            if clock is not None and clock.group(1):
                stamp += ":00"
            return stamp + example[clock.end() :] if clock is not None else stamp
        if re.fullmatch(r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])", example):
            return self._date(name).isoformat()[:7]
        if re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?", example):
            hm = f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
            return hm + ":00" if len(example) == 8 else hm
        if _UUID_RE.fullmatch(example):
            fresh = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            return fresh.upper() if example.isupper() else fresh
        if _EMAIL_RE.fullmatch(example):
            first, last = self._person()
            return f"{first.lower()}.{last.lower()}@{example.split('@', 1)[1]}"
        runs = _example_runs(example)
        context = set(_name_tokens(name)) | set(_name_tokens(description))
        out: list[str] = []
        for i, run in enumerate(runs):
            if not run.isalnum() or _is_literal_run(runs, i):
                out.append(run)  # separators, symbols, literal prefixes and markers
            elif keep and rng.random() < keep:
                out.append(run)
            elif run.isdigit():
                out.append(self._digits_like(run, name))
            elif run.isupper():
                out.append(self._capitals_like(run, example, context))
            elif run.islower():
                words = _VOCAB_BY_LEN.get(len(run), ())
                if words and rng.random() < 0.8:
                    out.append(rng.choice(words))
                else:
                    out.append("".join(rng.choice(string.ascii_lowercase) for _ in run))
            else:
                out.append(run)
        varies = any(r.isalnum() and not _is_literal_run(runs, i) for i, r in enumerate(runs))
        return "".join(out) if varies else None

    def _digits_like(self, run: str, name: str) -> str:
        rng = self.rng
        if len(run) == 4 and _CURRENT_YEAR_RE.fullmatch(run):
            return str(rng.randint(self.today.year - 1, self.today.year + 1))
        if len(run) == 8 and _CURRENT_YEAR_RE.fullmatch(run[:4]):
            with contextlib.suppress(ValueError):
                date(int(run[:4]), int(run[4:6]), int(run[6:]))
                return self._date(name).strftime("%Y%m%d")
        zeros = len(run) - len(run.lstrip("0"))
        if zeros == len(run):  # all zeros: only the last place varies
            return run[:-1] + str(rng.randint(1, 9))
        rest = "".join(rng.choice(string.digits) for _ in range(len(run) - zeros - 1))
        return "0" * zeros + str(rng.randint(1, 9)) + rest

    def _capitals_like(self, run: str, example: str, context: set[str]) -> str:
        rng = self.rng
        pool: tuple[str, ...] | list[str] = ()
        if run == example:  # the whole value is a code: a real one where the context says which
            if len(run) == 3 and context & {"currency", "4217"}:
                pool = _CURRENCIES
            elif len(run) == 3 and context & {"airport", "iata"}:
                pool = _AIRPORTS
            elif len(run) == 2 and context & {"country", "nationality", "3166"}:
                pool = _COUNTRY_CODES
            elif len(run) == 3 and context & {"country", "nationality", "3166"}:
                pool = _COUNTRY_CODES3
        choices = [c for c in pool if c != run]
        if choices:
            return rng.choice(choices)
        return "".join(rng.choice(string.ascii_uppercase) for _ in run)

    def _spelled(self, kind: str, name: str, persona: Persona | None) -> str:
        """A value of a spelled-out format kind (see `_SPELLED_FORMATS`)."""
        rng = self.rng
        day = self._date(name)
        hm = f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
        if kind == "date":
            return day.isoformat()
        if kind == "date-time":
            return f"{day.isoformat()}T{hm}:00"
        if kind == "date-time-tz":
            return f"{day.isoformat()}T{hm}:00{rng.choice(('Z', '+01:00', '+02:00', '-05:00', '+00:00'))}"
        if kind == "compact-date":
            return day.strftime("%Y%m%d")
        if kind == "dd/mm/yyyy":
            return day.strftime("%d/%m/%Y")
        if kind == "mm/dd/yyyy":
            return day.strftime("%m/%d/%Y")
        if kind == "year-month":
            return day.isoformat()[:7]
        if kind == "year-quarter":
            return f"{day.year}-Q{(day.month - 1) // 3 + 1}"
        if kind == "time-hms":
            return f"{hm}:00"
        if kind == "time-hm":
            return hm
        if kind == "currency":
            return rng.choice(_CURRENCIES)
        if kind == "country-alpha2":
            return rng.choice(_COUNTRY_CODES)
        if kind == "country-alpha3":
            return rng.choice(_COUNTRY_CODES3)
        if kind == "language":
            return rng.choice(_LANGUAGES)
        if kind == "e164":
            country = rng.choice(_E164_COUNTRIES)
            national = str(rng.randint(1, 9)) + "".join(rng.choice(string.digits) for _ in range(9))
            return f"+{country}{national}"
        if kind == "uuid":
            return self._formatted("uuid", name, persona)
        raise ValueError(f"unknown spelled-out format kind {kind!r}")

    def _formatted(self, fmt: str, name: str, persona: Persona | None) -> str:
        rng = self.rng
        if fmt == "date":
            return self._date(name).isoformat()
        if fmt == "date-time":
            day = self._date(name)
            minute = rng.choice((0, 15, 30, 45))
            return f"{day.isoformat()}T{rng.randint(8, 17):02d}:{minute:02d}:00"
        if fmt == "time":
            return f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}:00"
        if fmt == "email":
            return self._email(persona)
        if fmt == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if fmt in ("uri", "url"):
            return self._url()
        return self._word_token()

    def _date(self, name: str) -> date:
        rng = self.rng
        tokens = set(_name_tokens(name))
        if tokens & {"birth", "dob", "birthday"}:
            return self.today - timedelta(days=rng.randint(25 * 365, 60 * 365))
        if tokens & _PAST_DATE_WORDS:
            day = self.today - timedelta(days=rng.randint(1, 60))
            while day.weekday() >= 5:
                day -= timedelta(days=1)
            return day
        if tokens & _FUTURE_DATE_WORDS:
            day = self.today + timedelta(days=rng.randint(1, 120))
        else:
            day = self.today + timedelta(days=rng.randint(-30, 90))
        while day.weekday() >= 5:
            day += timedelta(days=1)
        return day

    def _person(self) -> tuple[str, str]:
        return self.rng.choice(_FIRST_NAMES), self.rng.choice(_LAST_NAMES)

    def _company(self, persona: Persona | None) -> str:
        if persona is not None:  # the persona always works at the same (fictitious) company
            digest = hashlib.sha256(persona.id.encode("utf-8")).digest()
            return _COMPANIES[digest[0] % len(_COMPANIES)]
        return self.rng.choice(_COMPANIES)

    def _email(self, persona: Persona | None) -> str:
        first, last = self._person()
        slug = re.sub(r"[^a-z0-9]", "", self._company(persona).split()[0].lower())
        return f"{first.lower()}.{last.lower()}@{slug}.example.com"

    def _url(self) -> str:
        return f"https://intranet.example.com/{self.rng.choice(_WORDS)}/{self.rng.randint(100, 99999)}"

    def _word_token(self) -> str:
        rng = self.rng
        first = rng.choice(_WORDS)
        shape = rng.random()
        if shape < 0.4:
            return first
        if shape < 0.7:
            return f"{first}-{rng.choice(_WORDS)}"
        return f"{first}-{rng.randint(10, 99)}"

    def _identifier(self, tokens: list[str], description: str) -> str:
        rng = self.rng
        example = _description_example(description, identifier=True)
        shaped = self._shaped(example, " ".join(tokens), description) if example else None
        if shaped is not None:  # the shape the description shows, e.g. "e.g. TR-12345"
            return shaped
        head = [t for t in tokens if t not in _ID_WORDS] or ["ref"]
        prefix = _ID_PREFIXES.get(" ".join(head[-2:])) or _ID_PREFIXES.get(head[-1])
        if prefix is None:
            prefix = "".join(t[0] for t in head[-3:]).upper() if len(head) > 1 else head[-1][:3].upper()
        width = rng.randint(4, 6)
        number = str(rng.randint(10 ** (width - 1), 10**width - 1))
        return f"{prefix}{rng.choice(('-', '', '-'))}{number}"

    def _by_name(self, name: str, spec: dict[str, Any], persona: Persona | None) -> str:
        rng = self.rng
        toks = _name_tokens(name)
        ts = set(toks)
        last = toks[-1] if toks else ""
        description = str(spec.get("description") or "")

        if ts & {"email", "mail", "emails"}:
            return self._email(persona)
        if ts & {"phone", "mobile", "telephone", "tel", "fax"}:
            return f"+1-555-01{rng.randint(0, 99):02d}"
        if "currency" in ts:
            return rng.choice(_CURRENCIES)
        if "country" in ts:
            return rng.choice(_COUNTRY_CODES if ts & _ID_WORDS or "iso" in ts else _COUNTRIES)
        if "cost" in ts and ts & {"center", "centre"}:
            return f"CC-{rng.randint(1000, 9999)}"
        if ts & {"zip", "postal", "postcode"}:
            return f"{rng.randint(10000, 99999)}"
        if ts & {"language", "lang"}:
            return rng.choice(_LANGUAGES)
        if "locale" in ts:
            return rng.choice(_LOCALES)
        if ts & {"timezone", "tz"} or ("time" in ts and "zone" in ts):
            return rng.choice(_TIMEZONES)
        if ts & {"url", "link", "website", "uri", "endpoint", "homepage"}:
            return self._url()
        if last in _ID_WORDS or ts & {"sku"}:
            return self._identifier(toks, description)
        if last in ("date", "day", "dob") or "birthday" in ts:
            return self._date(name).isoformat()
        if last in ("datetime", "timestamp", "at"):
            return self._formatted("date-time", name, persona)
        if last == "time":
            return f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
        if "name" in ts or ts & {"username", "login", "handle"}:
            return self._named_thing(ts, persona)
        if ts & _PERSON_WORDS:
            return " ".join(self._person())
        if ts & {"department", "dept", "division"}:
            if persona is not None and persona.department:
                return persona.department
            return rng.choice(_DEPARTMENTS)
        if ts & {"city", "destination", "origin"}:
            return rng.choice(_CITIES)
        if ts & {"location", "office", "site", "venue", "building"}:
            return rng.choice(_CITIES + list(_OFFICES))
        if "address" in ts:
            return f"{rng.randint(1, 400)} {rng.choice(_STREETS)}"
        if "region" in ts:
            return rng.choice(_REGIONS)
        if ts & _FREE_TEXT_WORDS:
            return rng.choice(_FREE_TEXT)
        if ts & _TITLE_WORDS:
            return rng.choice(_TITLES)
        if "project" in ts:
            return rng.choice(_PROJECTS)
        if ts & {"team", "group", "squad"}:
            return rng.choice(_TEAMS)
        if ts & {"product", "item", "equipment", "hardware", "device"}:
            return rng.choice(_PRODUCTS)
        if ts & {"course", "training", "program", "programme", "certification"}:
            return rng.choice(_COURSES)
        if ts & {"role", "position", "job"}:
            return rng.choice(_JOB_TITLES)
        if ts & _COMPANY_WORDS:
            return self._company(persona) if "employer" in ts else rng.choice(_COMPANIES)
        if ts & {"status", "state"}:
            return rng.choice(_STATUSES)
        if ts & {"priority", "severity", "urgency"}:
            return rng.choice(_PRIORITIES)
        if ts & {"unit", "uom"}:
            return rng.choice(_UNITS)
        if ts & {"version", "release"}:
            return f"{rng.randint(1, 5)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
        if ts & {"ip"}:
            return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if ts & {"file", "filename", "attachment", "document"}:
            return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{self.today.year}.{rng.choice(_FILE_EXTS)}"
        if ts & {"line", "business", "lob"} and persona is not None and persona.line_of_business:
            return persona.line_of_business
        return self._word_token()

    def _named_thing(self, ts: set[str], persona: Persona | None) -> str:
        rng = self.rng
        first, last = self._person()
        if ts & {"username", "login", "handle"} or ("user" in ts and "name" in ts):
            return f"{first[0].lower()}{last.lower()}{rng.choice(('', str(rng.randint(1, 99))))}"
        if "first" in ts or "given" in ts:
            return first
        if "last" in ts or "family" in ts or "surname" in ts:
            return last
        if ts & _COMPANY_WORDS:
            return self._company(persona) if "employer" in ts else rng.choice(_COMPANIES)
        if "project" in ts:
            return rng.choice(_PROJECTS)
        if ts & {"team", "group"}:
            return rng.choice(_TEAMS)
        if ts & {"file", "document", "attachment"}:
            return f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{self.today.year}.{rng.choice(_FILE_EXTS)}"
        if ts & {"product", "item"}:
            return rng.choice(_PRODUCTS)
        if ts & {"course", "training"}:
            return rng.choice(_COURSES)
        if ts & {"department", "dept"}:
            return (
                persona.department if persona is not None and persona.department else rng.choice(_DEPARTMENTS)
            )
        if ts & {"city"}:
            return rng.choice(_CITIES)
        if ts & {"event", "meeting"}:
            return rng.choice(_TITLES)
        return f"{first} {last}"

    # -- containers --------------------------------------------------------------------------

    def _array(self, name: str, spec: dict[str, Any], persona: Persona | None) -> list[Any]:
        rng = self.rng
        items = spec.get("items") if isinstance(spec.get("items"), dict) else {"type": "string"}
        if "description" not in items and spec.get("description") and self._pick_type(items) == "string":
            # "Cost centers to split across, e.g. CC-4100": the list's example shows its items.
            items = {**items, "description": spec["description"]}
        lo = spec.get("minItems") if isinstance(spec.get("minItems"), int) else 0
        hi = spec.get("maxItems") if isinstance(spec.get("maxItems"), int) else None
        if hi == 0:
            return []
        lo_n = max(lo, 1)
        hi_n = min(hi if hi is not None else max(lo_n, 3), lo_n + 2)
        n = rng.randint(lo_n, max(lo_n, hi_n))
        item_name = _singular(name)
        out: list[Any] = []
        for _ in range(n):
            for attempt in range(12):  # distinct items read more naturally, and satisfy uniqueItems
                # A persona pins some values (its department): later tries go without it.
                value = self.value_for(item_name, items, persona=persona if attempt < 3 else None)
                if not any(_json_equal(value, v) for v in out):
                    break
            else:
                if len(out) >= lo:
                    break
            out.append(value)
        return out

    def _object(self, spec: dict[str, Any], persona: Persona | None) -> dict[str, Any]:
        props = spec.get("properties") if isinstance(spec.get("properties"), dict) else {}
        required = [k for k in (spec.get("required") or []) if isinstance(k, str)]
        return {k: self.value_for(k, props.get(k, {"type": "string"}), persona=persona) for k in required}

    # -- coherence across arguments ----------------------------------------------------------

    _RANGE_PAIRS = (
        ("start", "end"),
        ("from", "to"),
        ("check_in", "check_out"),
        ("departure", "return"),
        ("begin", "end"),
    )

    def _order_ranges(self, args: dict[str, Any], props: dict[str, dict[str, Any]]) -> None:
        """An ``end_date`` generated before its ``start_date`` is moved 1-14 days after it."""
        for key, start in list(args.items()):
            for a, b in self._RANGE_PAIRS:
                other = key.replace(a, b)
                if a not in key or other == key or other not in args:
                    continue
                end = args[other]
                if not (isinstance(start, str) and isinstance(end, str) and end < start):
                    continue
                if _valid_date(start) and _valid_date(end):
                    moved = (date.fromisoformat(start) + timedelta(days=self.rng.randint(1, 14))).isoformat()
                elif _valid_datetime(start) and _valid_datetime(end) and len(start) == len(end):
                    shifted = datetime.fromisoformat(start) + timedelta(days=self.rng.randint(1, 14))
                    moved = shifted.isoformat()[: len(start)]
                else:
                    continue
                if check_value(moved, props.get(other, {})) is None:
                    args[other] = moved


def _bounds(spec: dict[str, Any], integer: bool) -> tuple[float, float]:
    """The inclusive range a number may take (open bounds tightened by a step)."""
    lo, hi = -math.inf, math.inf
    mn, mx = spec.get("minimum"), spec.get("maximum")
    ex_lo, ex_hi = spec.get("exclusiveMinimum"), spec.get("exclusiveMaximum")
    if ex_lo is True and _is_num(mn):
        ex_lo, mn = mn, None
    if ex_hi is True and _is_num(mx):
        ex_hi, mx = mx, None
    if _is_num(mn):
        lo = max(lo, mn)
    if _is_num(mx):
        hi = min(hi, mx)
    if _is_num(ex_lo):
        lo = max(lo, math.floor(ex_lo) + 1 if integer else ex_lo + 0.01)
    if _is_num(ex_hi):
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


# =============================================================================================
# 4. Values in natural text
# =============================================================================================

VALUE_PHRASES: list[str] = [
    "the {name} is {value}",
    "{name}: {value}",
    "use {value} for the {name}",
    "{value} as the {name}",
    "the {name} should be {value}",
    "set the {name} to {value}",
]
"""How a value is said, shared by the scripted user-proxy (which fills them) and the scripted
assistant (which reads them back with `extract_value`). ``{name}`` is `humanise_param` of the key,
``{value}`` is `render_value` of the value."""

# Templates where the value follows the name: the only ones used for open-ended values (lists,
# JSON), which also end their sentence so that their extent is unambiguous.
_FORWARD_PHRASES = [p for p in VALUE_PHRASES if p.index("{name}") < p.index("{value}")]
_OPENERS = ("", "", "", "Sure, ", "Okay, ", "Of course, ")
_VALUE_FIRST_LEADS = ("go with ", "please take ", "let's go with ")

# Strings equal to one of these are quoted so that they never read as part of the sentence.
_RESERVED = frozenset(
    _words(
        "the a an and or is are as for use to of set should be none null with go take please my our yes "
        "no true false"
    )
)
_LIST_STOP = _RESERVED - {"yes", "no", "true", "false", "none", "null"}


def _needs_quotes(s: str) -> bool:
    return (
        not s
        or bool(re.search(r"[\s,;]", s))
        or s[0] in "\"“'([{"
        or s[-1] in ".!?;:)"
        or s.lower() in _RESERVED
    )


def render_value(value: Any) -> str:
    """How a user says `value` in a sentence.

    Strings as they are, except strings a reader could not delimit (with spaces or commas, ending
    in punctuation, or equal to a connector word), which are wrapped in double quotes; integral
    floats without ``.0`` (other floats by their shortest round-trip repr); booleans as yes/no;
    dates as ISO; lists of scalars as ``a, b and c`` (an empty list as ``none``); objects and
    lists holding containers as compact JSON.
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, (date, datetime, time)):
        return value.isoformat()
    if isinstance(value, str):
        return f'"{value}"' if _needs_quotes(value) else value
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (list, tuple, dict)) for v in value):
            return json.dumps(list(value), ensure_ascii=False, separators=(",", ":"))
        if not value:
            return "none"
        parts = [render_value(v) for v in value]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def _mask_quotes(text: str) -> str:
    """`text` with the inside of every quoted span blanked out (same length), so that names and
    delimiters inside free text are never taken for the sentence's own."""
    return re.sub(
        r'"[^"]*"|“[^”]*”', lambda m: m.group(0)[0] + "\x00" * (len(m.group(0)) - 2) + m.group(0)[-1], text
    )


def _open_ended(rendered: str) -> bool:
    masked = _mask_quotes(rendered)
    return bool(re.search(r"[\s,]", masked)) or masked[:1] in ("[", "{")


def _is_plural(human: str) -> bool:
    last = human.split()[-1].lower() if human.split() else ""
    return last.endswith("s") and not last.endswith("ss")


def phrase_values(pairs: list[tuple[str, str]], rng: random.Random) -> str:
    """One or more sentences that state each ``(parameter, rendered value)`` pair with a template
    of `VALUE_PHRASES` (the parameter is humanised; already humanised names are fine), e.g.
    ``The employee ID is EMP123456, the start date is 2026-02-03 and the reason is "quarterly
    onboarding refresher".``

    Clauses are joined with ``, `` and a final `` and ``. A value that is open-ended (a list or
    JSON) is stated after its name and ends its sentence, so its extent is never ambiguous.
    """
    closed: list[tuple[str, bool]] = []
    open_: list[tuple[str, bool]] = []
    for name, value in pairs:
        human = humanise_param(name)
        is_open = _open_ended(value)
        template = rng.choice(_FORWARD_PHRASES if is_open else VALUE_PHRASES)
        if template == "the {name} is {value}" and _is_plural(human):
            template = "the {name} are {value}"
        clause = template.format(name=human, value=value)
        (open_ if is_open else closed).append((clause, template.startswith("{value}")))
    if not closed and not open_:
        return ""
    groups = [closed + open_[:1]] + [[c] for c in open_[1:]]
    sentences = []
    for i, group in enumerate(groups):
        clauses = [c for c, _ in group]
        body = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
        opener = rng.choice(_OPENERS) if i == 0 else ""
        if group[0][1]:  # the sentence would start with the value itself: lead into it
            body = rng.choice(_VALUE_FIRST_LEADS) + body
        sentence = opener + body if opener else body[:1].upper() + body[1:]
        sentences.append(sentence + ".")
    return " ".join(sentences)


# -- extraction -----------------------------------------------------------------------------

_LEFT_WORDS = frozenset(
    _words("the my our your a an and with new set its this that their his her also plus then")
)
_CONNECTOR_RE = re.compile(
    r"\s*[:=]\s*|\s+(?:is|are|was|were|should\s+be|will\s+be|would\s+be|to|of)\s+", re.IGNORECASE
)
_BACK_LEAD_RE = re.compile(r"(?:^|(?<=\s))(?:for|as)\s+the\s+$", re.IGNORECASE)
_RIGHT_END_RE = re.compile(r"\s*(?:[,;.!?)]|$)|\s+(?:and|please|too|as\s+well|instead|then)\b", re.IGNORECASE)
_CLAUSE_DELIM_RE = re.compile(r",\s|;|[.!?](?:\s|$)|\s+and\s+|\s+but\s+", re.IGNORECASE)
_FREE_END_RE = re.compile(
    r",\s|,$|;|\s+and\s|[.!?]+(?:\s|$)|\s+(?:please|so|but|because|thanks|thank\s+you)\b|$",
    re.IGNORECASE,
)
_LIST_SEP_RE = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
_LIST_SEP_BEFORE_RE = re.compile(r"(?:\s*,\s*(?:and\s+)?|\s+and\s+)$", re.IGNORECASE)
_OWNED_VALUE_RE = re.compile(r"(?:(?<![\w-])(?:is|are|was|were|be|to|of|the)\s+|[:=]\s*)$", re.IGNORECASE)
_ITEM_END_RE = re.compile(r"\s*(?:,|[.!?;](?:\s|$)|$)|\s+and\s", re.IGNORECASE)
_SENTENCE_START_RE = re.compile(r"(?:^\s*|[.!?;]\s+)$")
_LEAD_BEFORE_RE = re.compile(r"(?<![\w-])(?:with|take|then|also|plus|maybe|perhaps|try)\s+$", re.IGNORECASE)
_INTERJECTIONS = frozenset(_words("okay ok sure hi hello hey right well thanks great fine alright"))
_TOKEN_RE = re.compile(r"[^\s,;]+")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TRUE_WORDS = {"yes", "y", "true", "on", "1"}
_FALSE_WORDS = {"no", "n", "false", "off", "0"}
_TRAILING_PUNCT = ".!?;:)"


def _name_variants(name: str) -> tuple[list[str], list[str]]:
    """(exact, loose) spellings of a parameter name: the humanised and raw forms first, then the
    singular/plural of each (tried only when no exact spelling yields a value)."""
    human = humanise_param(name)
    exact = list(dict.fromkeys(v for v in (human, " ".join(_name_tokens(name)), name) if v.strip()))
    loose = []
    for v in exact:
        words = v.split()
        if words:
            loose.append(" ".join([*words[:-1], _toggle_plural(words[-1])]))
    loose = [v for v in dict.fromkeys(loose) if v.lower() not in {e.lower() for e in exact}]
    return exact, loose


def _variants_regex(variants: list[str]) -> re.Pattern[str] | None:
    alts = []
    for v in sorted(variants, key=len, reverse=True):
        words = [w for w in re.split(r"[\s_\-]+", v) if w]
        if words:
            alts.append(r"[\s_\-]+".join(re.escape(w) for w in words))
    if not alts:
        return None
    return re.compile(r"(?<![\w\-])(?:" + "|".join(alts) + r")(?![\w\-])", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _name_regexes(name: str) -> tuple[re.Pattern[str], ...]:
    """The exact-spelling regex, then the loose one, for a parameter name."""
    return tuple(rx for rx in map(_variants_regex, _name_variants(name)) if rx is not None)


def _left_ok(masked: str, start: int) -> bool:
    """A name starts a noun phrase of its own: at the start, after punctuation, or after a
    determiner (so ``date`` is not read inside ``the start date is ...``)."""
    prefix = masked[:start]
    if not prefix.strip():
        return True
    if not prefix[-1].isspace():
        return not (prefix[-1].isalnum() or prefix[-1] in "_-\x00")
    word = re.search(r"(\S+)\s+$", prefix)
    if word is None:
        return True
    w = word.group(1)
    return w[-1] in ',;:.!?("”' or w.lower() in _LEFT_WORDS


def _unquote(rendered: str) -> str:
    if len(rendered) >= 2 and rendered[0] == '"' and rendered[-1] == '"':
        return rendered[1:-1]
    return rendered


def _value_kind(spec: dict[str, Any]) -> str:
    """How a value is delimited in text: array, object, free (string run) or token."""
    if "const" in spec or isinstance(spec.get("enum"), list):
        return "token"
    types = _declared_types(spec) or [ValueGenerator._pick_type(spec)]
    main = next((t for t in types if t != "null"), "null")
    if main in ("array", "object"):
        return main
    if main == "string" and not spec.get("pattern") and spec.get("format") not in _FORMATS:
        return "free"
    return "token"


def _quoted_at(text: str, i: int) -> tuple[str, int] | None:
    if i < len(text) and text[i] in '"“':
        close = '"' if text[i] == '"' else "”"
        j = text.find(close, i + 1)
        if j >= 0:
            return text[i + 1 : j], j + 1
    return None


def _token_at(text: str, i: int) -> tuple[str, int] | None:
    m = _TOKEN_RE.match(text, i)
    if m is None:
        return None
    tok = m.group(0).rstrip(_TRAILING_PUNCT)
    return (tok, i + len(tok)) if tok else None


def _json_at(text: str, i: int) -> tuple[Any, int] | None:
    if i < len(text) and text[i] in "[{":
        try:
            value, end = json.JSONDecoder().raw_decode(text, i)
        except json.JSONDecodeError:
            return None
        return value, end
    return None


def _list_at(text: str, i: int) -> list[tuple[str, bool]]:
    """Items of a rendered list starting at `i`: quoted or bare tokens joined by ``, `` / `` and ``.

    An item after the first must itself be followed by a separator or the end of the sentence,
    and must not be a connector word or a ``name:``; otherwise it opens the next clause
    (``... to V1676912 and dry run: yes``) and the list ends before it.
    """
    items: list[tuple[str, bool]] = []
    pos = i
    while True:
        q = _quoted_at(text, pos)
        if q is not None:
            item, end, ends_sentence = (q[0], True), q[1], False
        else:
            m = _TOKEN_RE.match(text, pos)
            if m is None:
                break
            raw = m.group(0)
            tok = raw.rstrip(_TRAILING_PUNCT)
            if not tok or (items and (tok.lower() in _LIST_STOP or raw[-1] in ":=")):
                break
            item, end, ends_sentence = (tok, False), m.end(), tok != raw
        if items and not ends_sentence and not _ITEM_END_RE.match(text, end):
            break
        items.append(item)
        if ends_sentence:
            break
        sep = _LIST_SEP_RE.match(text, end)
        if sep is None or sep.end() >= len(text):
            break
        pos = sep.end()
    return items


def _coerce_scalar(raw: str, quoted: bool, spec: dict[str, Any]) -> tuple[bool, Any]:
    choices = [spec["const"]] if "const" in spec else spec.get("enum")
    if isinstance(choices, list):
        for exact in (True, False):
            for member in choices:
                said = _unquote(render_value(member))
                if said == raw if exact else said.lower() == raw.lower():
                    return True, copy.deepcopy(member)
        return False, None
    types = _declared_types(spec) or [ValueGenerator._pick_type(spec)]
    if "null" in types and not quoted and raw.lower() in ("none", "null"):
        return True, None
    for t in types:
        if t == "string":
            return True, raw
        if quoted:
            continue
        if t == "integer":
            m = re.fullmatch(r"[$€£]?([+-]?\d+)(?:\.0+)?%?", raw)
            if m:
                return True, int(m.group(1))
        elif t == "number":
            m = re.fullmatch(r"[$€£]?(" + _NUMBER_RE.pattern + r")%?", raw)
            if m:
                return True, float(m.group(1))
        elif t == "boolean":
            if raw.lower() in _TRUE_WORDS:
                return True, True
            if raw.lower() in _FALSE_WORDS:
                return True, False
        elif t in ("array", "object") and raw[:1] in "[{":
            try:
                return True, json.loads(raw)
            except json.JSONDecodeError:
                pass
    return False, None


def _coerce_list(items: list[tuple[str, bool]], spec: dict[str, Any]) -> tuple[bool, Any]:
    item_spec = spec.get("items") if isinstance(spec.get("items"), dict) else {}
    if len(items) == 1 and not items[0][1] and items[0][0].lower() in ("none", "nothing"):
        return True, []
    out = []
    for raw, quoted in items:
        ok, value = _coerce_scalar(raw, quoted, item_spec)
        if not ok:
            return False, None
        out.append(value)
    return (True, out) if out else (False, None)


def _read_forward(text: str, i: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    while i < len(text) and text[i].isspace():
        i += 1
    kind = _value_kind(spec)
    if kind in ("array", "object"):
        got = _json_at(text, i)
        if got is not None:
            return True, got[0]
        if kind == "object":
            return False, None
        return _coerce_list(_list_at(text, i), spec)
    q = _quoted_at(text, i)
    if q is not None:
        return _coerce_scalar(q[0], True, spec)
    if kind == "free":
        end = _FREE_END_RE.search(text, i)
        raw = text[i : end.start() if end else len(text)].strip().rstrip(_TRAILING_PUNCT)
        return (True, raw) if raw else (False, None)
    tok = _token_at(text, i)
    return _coerce_scalar(tok[0], False, spec) if tok else (False, None)


def _read_backward(text: str, masked: str, e: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    """The value that ends at `e` (``use VALUE for the name`` / ``VALUE as the name``)."""
    while e > 0 and text[e - 1].isspace():
        e -= 1
    if e == 0:
        return False, None
    kind = _value_kind(spec)
    uses = list(re.finditer(r"(?<![\w-])use\s+", masked[:e], re.IGNORECASE))
    use = uses[-1] if uses else None
    if use is not None:
        between = masked[use.end() : e]
        stop = r"[.!?;](?:\s|$)|\b(?:for|as)\s+the\b|\b(?:is|are)\b"
        if kind == "free":
            stop += r"|,\s|\s+and\s+"
        if re.search(stop, between, re.IGNORECASE):
            use = None
    if kind in ("array", "object") and text[e - 1] in "]}":
        for start in range(e - 1, -1, -1):
            if text[start] in "[{":
                got = _json_at(text, start)
                if got is not None and got[1] == e:
                    return True, got[0]
        return False, None
    if kind == "array":
        if use is not None:
            span = text[use.end() : e]
            items = _list_at(span, 0)
            return _coerce_list(items, spec)
        # Without a leading "use", walk back item by item. A further item must convert to the
        # item schema, must not be a connector word or an interjection ("Okay, a and b as the
        # tags"), must not be another clause's value (preceded by a connector, "the", ":" or
        # "="), and must itself follow a separator, the sentence start or a lead word ("go
        # with"): a word after any other word is the end of a name ("the problem title and X").
        item_spec = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        items: list[tuple[str, bool]] = []
        pos = e
        while pos > 0:
            item = _item_before(text, pos)
            if item is None:
                break
            (raw, quoted), start = item
            if items:
                if not quoted and (raw.lower() in _LIST_STOP or raw.lower() in _INTERJECTIONS):
                    break
                if _OWNED_VALUE_RE.search(masked, 0, start):
                    break
                ok, value = _coerce_scalar(raw, quoted, item_spec)
                if not ok or check_value(value, item_spec) is not None:
                    break
                before = masked[:start]
                if not (
                    _SENTENCE_START_RE.search(before)
                    or _LIST_SEP_BEFORE_RE.search(before)
                    or _LEAD_BEFORE_RE.search(before)
                ):
                    break
            items.insert(0, (raw, quoted))
            sep = _LIST_SEP_BEFORE_RE.search(masked, 0, start)
            if sep is None:
                break
            pos = sep.start()
        return _coerce_list(items, spec)
    item = _item_before(text, e)
    if item is None:
        return False, None
    (raw, quoted), _start = item
    if not quoted and kind == "free" and use is not None:
        raw = text[use.end() : e].strip()
    return _coerce_scalar(raw, quoted, spec)


def _item_before(text: str, e: int) -> tuple[tuple[str, bool], int] | None:
    if e > 0 and text[e - 1] in '"”':
        opener = '"' if text[e - 1] == '"' else "“"
        s = text.rfind(opener, 0, e - 1)
        if s >= 0:
            return (text[s + 1 : e - 1], True), s
    m = re.search(r"[^\s,;]+$", text[:e])
    if m is None:
        return None
    tok = m.group(0).lstrip("(")
    return ((tok, False), m.end() - len(tok)) if tok else None


def _clause_bounds(masked: str, start: int, end: int) -> tuple[int, int]:
    lo = 0
    for m in _CLAUSE_DELIM_RE.finditer(masked, 0, start):
        lo = m.end()
    m = _CLAUSE_DELIM_RE.search(masked, end)
    hi = m.start() if m else len(masked)
    return lo, hi


def _constrained(spec: dict[str, Any]) -> bool:
    return (
        "const" in spec
        or isinstance(spec.get("enum"), list)
        or isinstance(spec.get("pattern"), str)
        or spec.get("format") in _FORMATS
    )


def _search_conforming(text: str, masked: str, lo: int, hi: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    """A value conforming to a constrained `spec` anywhere in ``text[lo:hi]``."""
    region = text[lo:hi]
    choices = [spec["const"]] if "const" in spec else spec.get("enum")
    if isinstance(choices, list):
        said = sorted(((_unquote(render_value(m)), m) for m in choices), key=lambda p: -len(p[0]))
        for words, member in said:
            if words and re.search(r"(?<![\w-])" + re.escape(words) + r"(?![\w-])", region, re.IGNORECASE):
                return True, copy.deepcopy(member)
        return False, None
    candidates: list[str] = []
    fmt = spec.get("format")
    finder = {
        "date": _DATE_RE,
        "date-time": _DATETIME_RE,
        "time": _TIME_RE,
        "email": _EMAIL_RE,
        "uuid": _UUID_RE,
        "uri": _URI_RE,
        "url": _URI_RE,
    }.get(fmt if isinstance(fmt, str) else "")
    if finder is not None:
        candidates += [m.group(0) for m in finder.finditer(region)]
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        bare = re.sub(r"^\^|(?<!\\)\$$", "", pattern)
        with contextlib.suppress(re.error):
            candidates += [m.group(0) for m in re.finditer(bare, region) if m.group(0)]
    candidates += [m.group(1) for m in re.finditer(r'"([^"]*)"|“([^”]*)”', region) if m.group(1)]
    for m in re.finditer(r"[^\s,;]+", masked[lo:hi]):
        if "\x00" not in m.group(0):
            candidates.append(m.group(0).strip("\"'“”(").rstrip(_TRAILING_PUNCT))
    for cand in candidates:
        ok, value = _coerce_scalar(cand, False, spec)
        if ok and check_value(value, spec) is None:
            return True, value
    return False, None


def extract_value(
    text: str, name: str, spec: dict[str, Any] | None, *, anywhere: bool = False
) -> tuple[bool, Any]:
    """Find the value of parameter `name` in a user utterance; ``(True, value)`` coerced to the
    spec's type, or ``(False, None)``.

    The name is located by its humanised form (`humanise_param`), its raw key, or loosely by its
    singular/plural, outside quoted text and not inside a longer name (``date`` is not read from
    ``the start date is``). The value is taken after a connector (``is``/``are``/``should be``/
    ``to``/``of``/``:``/``=``) or before ``for the <name>``/``as the <name>``: a double-quoted
    string, a list ``a, b and c``, JSON for objects, a free-text run up to the next ``, ``/
    `` and ``/sentence end for unconstrained strings, or a single token otherwise. When the spec
    has an enum, a pattern or a date/date-time/time/email/uuid/uri format and that value does not
    conform, a conforming token in the same clause is preferred (an enum member matched as a whole
    word, case-insensitively). With `anywhere`, an utterance that does not name the parameter is
    searched whole for a conforming value (only for such constrained specs).
    """
    if not isinstance(text, str) or not text.strip():
        return False, None
    spec = spec if isinstance(spec, dict) else {}
    masked = _mask_quotes(text)
    tentative: tuple[bool, Any] | None = None
    anchors: list[tuple[int, int]] = []  # name spans fit for the clause search
    for rx in _name_regexes(name):
        for m in rx.finditer(masked):
            if _left_ok(masked, m.start()):
                anchors.append((m.start(), m.end()))
                conn = _CONNECTOR_RE.match(masked, m.end())
                if conn is not None:
                    got = _read_forward(text, conn.end(), spec)
                    if got[0] and check_value(got[1], spec) is None:
                        return got
                    if got[0] and tentative is None:
                        tentative = got
            lead = _BACK_LEAD_RE.search(masked, 0, m.start())
            if lead is not None and _RIGHT_END_RE.match(masked, m.end()):
                anchors.append((m.start(), m.end()))
                got = _read_backward(text, masked, lead.start(), spec)
                if got[0] and check_value(got[1], spec) is None:
                    return got
                if got[0] and tentative is None:
                    tentative = got
    if _constrained(spec):
        for start, end in anchors:
            lo, hi = _clause_bounds(masked, start, end)
            got = _search_conforming(text, masked, lo, hi, spec)
            if got[0]:
                return got
    if tentative is not None:
        return tentative
    if anywhere and _constrained(spec) and not anchors:
        return _search_conforming(text, masked, 0, len(text), spec)
    return False, None
