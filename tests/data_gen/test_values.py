"""Slot values (DiaFORGE §3.1): regex sampling, schema conformance, the typed generator and the
render -> phrase -> extract round trip the scripted agents rely on."""

from __future__ import annotations

import json
import random
import re
import signal
from datetime import date

import pytest
from _repo import FIXTURES, ROOT
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from diaforge.data_gen.values import (
    VALUE_PHRASES,
    UnsupportedPattern,
    ValueGenerator,
    check_arguments,
    check_value,
    extract_value,
    phrase_values,
    render_value,
    sample_pattern,
)
from diaforge.rng import seeded_rng
from diaforge.schema import Persona, Tool
from diaforge.text import humanise_param

PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CATALOGUE = ROOT / "data_gen" / "assets" / "catalogue.json"

# ---------------------------------------------------------------------------------------------
# Regex sampler
# ---------------------------------------------------------------------------------------------

_ATOMS = st.one_of(
    st.sampled_from(list("abcXYZ019_")),
    st.sampled_from([r"\-", r"\.", r"\/", "@", "#", r"\+", r"\(", r"\$"]),
    st.sampled_from(
        ["[A-Z]", "[a-z0-9]", "[A-Z0-9_-]", r"\d", r"\w", r"\s", ".", "[xyz]", r"[a-f\d]", "[.-]"]
    ),
)
_QUANTIFIERS = st.sampled_from(["", "", "?", "*", "+", "{3}", "{1,3}", "{0,2}", "{2,}", "*?", "+?", "{2,4}?"])


def _quantified(unit: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(unit, _QUANTIFIERS).map("".join)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    group = st.tuples(st.sampled_from(["(", "(?:", "(?P<g>"]), st.lists(inner, min_size=1, max_size=3)).map(
        lambda t: t[0] + "|".join(t[1]) + ")"
    )
    return st.one_of(_quantified(group), st.lists(inner, min_size=2, max_size=4).map("".join))


def _no_duplicate_group_names(p: str) -> str:
    count = iter(range(1000))
    return re.sub(r"\(\?P<g>", lambda _m: f"(?P<g{next(count)}>", p)


PATTERNS = st.tuples(
    st.booleans(), st.recursive(_quantified(_ATOMS), _extend, max_leaves=12), st.booleans()
).map(lambda t: _no_duplicate_group_names(("^" if t[0] else "") + t[1] + ("$" if t[2] else "")))


class _Slow(Exception):
    pass


def _fullmatch_within(pattern: str, text: str, seconds: int = 2) -> bool | None:
    """`re.fullmatch`, or None when Python's backtracking engine needs longer than `seconds`
    (nested ambiguous repeats such as `((a|a*)*){3}` make it exponential, even on a match)."""
    if not hasattr(signal, "SIGALRM"):
        return bool(re.fullmatch(pattern, text))

    def _raise(*_args: object) -> None:
        raise _Slow

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        return bool(re.fullmatch(pattern, text))
    except _Slow:
        return None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@PROPERTY
@given(PATTERNS, st.integers(0, 2**32))
def test_sampled_strings_fullmatch_their_pattern(pattern: str, seed: int) -> None:
    sample = sample_pattern(pattern, random.Random(seed))
    matched = _fullmatch_within(pattern, sample)
    assume(matched is not None)  # the oracle itself could not decide in time
    assert matched, (pattern, sample)


def test_sampler_handles_patterns_that_make_re_backtrack() -> None:
    pattern = r"^(((a|a*|a)*|(b)){3}){3}$"
    samples = [sample_pattern(pattern, random.Random(s)) for s in range(50)]
    assert all(set(x) <= {"a", "b"} for x in samples)
    assert all(re.fullmatch(pattern, x) for x in samples if len(x) < 8)


def test_anchors_must_hold_where_they_are() -> None:
    rng = random.Random(1)
    assert all(re.fullmatch(r"(^a|b)c", sample_pattern(r"(^a|b)c", rng)) for _ in range(20))
    assert all(re.fullmatch(r"x(y$|z)", sample_pattern(r"x(y$|z)", rng)) for _ in range(20))
    with pytest.raises(UnsupportedPattern):
        sample_pattern(r"a$b", rng)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[A-Z]{2,4}-\d{4,6}$",
        r"^EMP\d{6}$",
        r"^(?:PO|INV)-[0-9]{5}$",
        r"^[a-z0-9._-]+@example\.com$",
        r"^\d{3}-\d{3}-\d{4}$",
        r"^[A-Z0-9_-]{8}$",
        r"^CC-\d{4}$",
        r"^(https?)://[a-z]+\.example\.com/\w+$",
        r"^v\d+(\.\d+){1,2}$",
        r"^\w+\s\w+$",
    ],
)
def test_api_style_patterns(pattern: str) -> None:
    rng = random.Random(7)
    samples = {sample_pattern(pattern, rng) for _ in range(30)}
    assert all(re.fullmatch(pattern, s) for s in samples)
    assert len(samples) > 1  # diverse


@pytest.mark.parametrize(
    "pattern",
    [r"[^a-z]+", r"(?=x)x", r"(?!x)y", r"(a)\1", r"\bword\b", r"(?<=a)b", r"\D", "(", "[z-a]", "a^b", r"a++"],
)
def test_unsupported_patterns_raise(pattern: str) -> None:
    with pytest.raises(UnsupportedPattern):
        sample_pattern(pattern, random.Random(0))
    assert issubclass(UnsupportedPattern, ValueError)


# ---------------------------------------------------------------------------------------------
# check_value / check_arguments
# ---------------------------------------------------------------------------------------------


def test_check_value_types_integer_is_not_bool() -> None:
    assert check_value(3, {"type": "integer"}) is None
    assert "expected integer" in check_value(True, {"type": "integer"})
    assert "expected integer" in check_value(3.0, {"type": "integer"})
    assert check_value(3, {"type": "number"}) is None
    assert check_value(2.5, {"type": "number"}) is None
    assert "expected number" in check_value(False, {"type": "number"})
    assert "expected number" in check_value(float("nan"), {"type": "number"})
    assert "expected boolean" in check_value(1, {"type": "boolean"})
    assert check_value(None, {"type": ["string", "null"]}) is None
    assert check_value("x", {}) is None
    assert check_value([1, "a"], {"type": "array"}) is None


def test_check_value_reasons() -> None:
    assert check_value(12, {"type": "number", "minimum": 50}) == "12 is below minimum 50"
    assert check_value(120, {"type": "integer", "maximum": 100}) == "120 is above maximum 100"
    assert "greater than 0" in check_value(0, {"type": "number", "exclusiveMinimum": 0})
    assert "less than 10" in check_value(10, {"type": "number", "exclusiveMaximum": 10})
    assert "greater than 5" in check_value(5, {"type": "number", "minimum": 5, "exclusiveMinimum": True})
    assert "multiple of 0.5" in check_value(1.2, {"type": "number", "multipleOf": 0.5})
    assert check_value(1.5, {"type": "number", "multipleOf": 0.5}) is None
    assert (
        check_value("urgent", {"type": "string", "enum": ["low", "high"]})
        == '"urgent" is not one of "low", "high"'
    )
    assert check_value(1, {"enum": [True, 2]}) is not None  # 1 is not true
    assert "does not match pattern" in check_value("EMP12", {"type": "string", "pattern": r"^EMP\d{6}$"})
    assert check_value("xx EMP123456", {"type": "string", "pattern": r"EMP\d{6}"}) is None  # search
    assert "shorter than minLength 3" in check_value("ab", {"type": "string", "minLength": 3})
    assert "longer than maxLength 2" in check_value("abc", {"type": "string", "maxLength": 2})
    assert "fewer than minItems 2" in check_value(["a"], {"type": "array", "minItems": 2})
    assert "more than maxItems 1" in check_value(["a", "b"], {"type": "array", "maxItems": 1})
    assert "repeated" in check_value(["a", "a"], {"type": "array", "uniqueItems": True})
    assert check_value(["a", 2], {"type": "array", "items": {"type": "string"}}).startswith(
        "[1]: expected string"
    )
    obj = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city", "zip"]}
    assert check_value({"city": 3, "zip": "1"}, obj) == "city: expected string, got integer 3"
    assert check_value({"city": "Oslo"}, obj) == "zip: missing required property"
    closed = {"type": "object", "properties": {"city": {"type": "string"}}, "additionalProperties": False}
    assert check_value({"city": "Oslo", "x": 1}, closed) == "x: unknown property"


@pytest.mark.parametrize(
    ("value", "fmt", "ok"),
    [
        ("2026-02-03", "date", True),
        ("2026-02-30", "date", False),
        ("2026-2-3", "date", False),
        ("03/02/2026", "date", False),
        ("2026-02-03T09:30:00", "date-time", True),
        ("2026-02-03T09:30:00Z", "date-time", True),
        ("2026-02-03 09:30+01:00", "date-time", True),
        ("2026-02-03", "date-time", False),
        ("2026-02-03T25:00:00", "date-time", False),
        ("09:30:00", "time", True),
        ("9:30", "time", False),
        ("ana.silva@contoso.example.com", "email", True),
        ("ana.silva@", "email", False),
        ("not an email@x.com", "email", False),
        ("123e4567-e89b-42d3-a456-426614174000", "uuid", True),
        ("123e4567", "uuid", False),
        ("https://intranet.example.com/a", "uri", True),
        ("anything", "made-up-format", True),
    ],
)
def test_check_value_formats(value: str, fmt: str, ok: bool) -> None:
    assert (check_value(value, {"type": "string", "format": fmt}) is None) is ok


def _tool(properties: dict, required: list[str]) -> Tool:
    return Tool(
        name="demo_tool", parameters={"type": "object", "properties": properties, "required": required}
    )


def test_check_arguments_lists_every_problem() -> None:
    tool = _tool(
        {
            "amount": {"type": "number", "minimum": 50},
            "currency": {"type": "string", "enum": ["USD", "EUR"]},
            "note": {"type": "string"},
        },
        ["amount", "currency"],
    )
    assert check_arguments(tool, {"amount": 120.5, "currency": "EUR"}) == []
    problems = check_arguments(tool, {"amount": 12, "colour": "red"})
    assert "currency: missing required argument" in problems
    assert any(p.startswith("colour: unknown argument") for p in problems)
    assert "amount: 12 is below minimum 50" in problems
    assert len(problems) == 3
    assert check_arguments(tool, ["not", "a", "map"]) == ["arguments must be an object, got array"]


# ---------------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------------

_STRING_SPECS = st.one_of(
    st.just({"type": "string"}),
    st.sampled_from(
        [
            {"type": "string", "pattern": r"^[A-Z]{3}-\d{5}$"},
            {"type": "string", "pattern": r"^(?:PO|INV)\d{6}$"},
            {"type": "string", "pattern": r"[a-z]+_[0-9]{2}"},
            {"type": "string", "format": "date"},
            {"type": "string", "format": "date-time"},
            {"type": "string", "format": "time"},
            {"type": "string", "format": "email"},
            {"type": "string", "format": "uuid"},
            {"type": "string", "format": "uri"},
            {"type": "string", "enum": ["low", "medium", "high"]},
            {"type": "string", "enum": ["in progress", "on hold"]},
            {"type": ["string", "null"]},
            {"type": "date"},
            {"type": "str"},
            {},
        ]
    ),
    st.tuples(st.integers(0, 12), st.integers(0, 30)).map(
        lambda t: {"type": "string", "minLength": t[0], "maxLength": t[0] + t[1]}
    ),
)


@st.composite
def _numeric_specs(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["integer", "number"]))
    spec: dict = {"type": kind}
    lo = draw(st.none() | st.integers(-1000, 10_000))
    width = draw(st.integers(0, 5000))
    if lo is not None:
        if draw(st.booleans()):
            spec["minimum"] = lo
        else:
            spec["exclusiveMinimum"] = lo
    if draw(st.booleans()):
        base = lo if lo is not None else draw(st.integers(-1000, 10_000))
        if draw(st.booleans()):
            spec["maximum"] = base + width + 2
        else:
            spec["exclusiveMaximum"] = base + width + 2
    if draw(st.integers(0, 4)) == 0:  # a step, within bounds wide enough to hold a multiple
        base = lo or 0
        spec = {"type": kind, "minimum": base, "maximum": base + width + 20}
        spec["multipleOf"] = 5 if kind == "integer" else 0.5
    if draw(st.integers(0, 5)) == 0:
        spec = {"type": kind, "enum": [1, 2, 3] if kind == "integer" else [0.5, 1.5]}
    return spec


_SCALAR_SPECS = st.one_of(_STRING_SPECS, _numeric_specs(), st.just({"type": "boolean"}))


@st.composite
def _container_specs(draw: st.DrawFn) -> dict:
    if draw(st.booleans()):
        spec: dict = {"type": "array", "items": draw(_SCALAR_SPECS)}
        lo = draw(st.none() | st.integers(0, 3))
        if lo is not None:
            spec["minItems"] = lo
            if draw(st.booleans()):
                spec["maxItems"] = lo + draw(st.integers(0, 3))
        if draw(st.booleans()):  # only over item types with plenty of distinct values
            spec["uniqueItems"] = True
            spec["items"] = draw(
                st.sampled_from(
                    [
                        {"type": "string"},
                        {"type": "string", "format": "date"},
                        {"type": "string", "pattern": r"^[A-Z]{3}-\d{5}$"},
                        {"type": "integer"},
                        {"type": "number", "minimum": 0},
                    ]
                )
            )
        return spec
    names = draw(st.lists(st.sampled_from(_GEN_NAMES), min_size=1, max_size=3, unique=True))
    props = {n: draw(_SCALAR_SPECS) for n in names}
    return {"type": "object", "properties": props, "required": names[: draw(st.integers(0, len(names)))]}


_GEN_NAMES = [
    "employee_id",
    "start_date",
    "invoice_date",
    "amount",
    "currency",
    "reason",
    "priority",
    "cost_center",
    "quantity",
    "is_urgent",
    "tags",
    "manager_email",
    "country_code",
    "discount_percent",
    "notes",
    "project",
    "due_date",
    "department",
    "request_id",
    "phone",
    "weight",
    "code",
    "meeting_time",
    "approvers",
    "address",
    "vendorName",
    "hire_date",
    "city",
    "x",
]
_PERSONAS = [
    None,
    Persona(
        id="p-fin-01", description="A finance controller.", department="Finance", line_of_business="Banking"
    ),
    Persona(id="p-hr-07", description="An HR business partner for a sales team."),
]


@st.composite
def _tools(draw: st.DrawFn) -> Tool:
    names = draw(st.lists(st.sampled_from(_GEN_NAMES), min_size=1, max_size=7, unique=True))
    props = {n: draw(st.one_of(_SCALAR_SPECS, _SCALAR_SPECS, _container_specs())) for n in names}
    required = [n for n in names if draw(st.booleans())]
    return _tool(props, required)


@PROPERTY
@given(_tools(), st.integers(0, 2**32), st.sampled_from(_PERSONAS), st.booleans())
def test_gold_args_pass_check_arguments(
    tool: Tool, seed: int, persona: Persona | None, optional: bool
) -> None:
    args = ValueGenerator(random.Random(seed)).gold_args(tool, persona, include_optional=optional)
    assert check_arguments(tool, args) == []
    assert set(tool.required) <= set(args)
    if optional:
        assert set(args) == set(tool.properties)
    json.dumps(args)  # JSON-serialisable


def test_gold_args_only_required_by_default() -> None:
    tool = _tool({"request_id": {"type": "string"}, "comment": {"type": "string"}}, ["request_id"])
    assert list(ValueGenerator(random.Random(0)).gold_args(tool)) == ["request_id"]


def test_unsatisfiable_schema_raises_value_error() -> None:
    with pytest.raises(ValueError, match="quantity"):
        ValueGenerator(random.Random(0)).value_for(
            "quantity", {"type": "integer", "minimum": 5, "maximum": 4}
        )


def testseeded_rng_is_deterministic() -> None:
    a = [seeded_rng("tool_x", 3).random() for _ in range(3)]
    assert a[0] == a[1] == a[2]
    assert seeded_rng("tool_x", 3).random() != seeded_rng("tool_x", 4).random()
    assert seeded_rng("a", "bc").random() != seeded_rng("ab", "c").random()
    tool = _tool({"employee_id": {"type": "string"}, "start_date": {"type": "string", "format": "date"}}, [])
    first = ValueGenerator(seeded_rng("t", 1)).gold_args(tool, include_optional=True)
    again = ValueGenerator(seeded_rng("t", 1)).gold_args(tool, include_optional=True)
    assert first == again


def _many(name: str, spec: dict, n: int = 40, persona: Persona | None = None) -> list:
    return [ValueGenerator(seeded_rng(name, s)).value_for(name, spec, persona=persona) for s in range(n)]


def test_values_are_diverse_across_seeds() -> None:
    for name, spec in [
        ("employee_id", {"type": "string"}),
        ("start_date", {"type": "string", "format": "date"}),
        ("amount", {"type": "number"}),
        ("reason", {"type": "string"}),
        ("manager_name", {"type": "string"}),
        ("currency", {"type": "string"}),
    ]:
        assert len({json.dumps(v) for v in _many(name, spec)}) >= 8, name


def test_name_heuristics() -> None:
    ids = _many("employee_id", {"type": "string"})
    assert all(re.fullmatch(r"EMP-?\d{4,6}", v) for v in ids)
    assert all(re.fullmatch(r"CC-\d{4}", v) for v in _many("cost_center", {"type": "string"}))
    assert all(re.fullmatch(r"[A-Z]{3}", v) for v in _many("currency", {"type": "string"}))
    assert all(re.fullmatch(r"[A-Z]{2}", v) for v in _many("country_code", {"type": "string"}))
    assert all(re.fullmatch(r"\+1-555-01\d\d", v) for v in _many("phone", {"type": "string"}))
    assert all(re.fullmatch(r"\+1-555-01\d\d", v) for v in _many("mobileNumber", {"type": "string"}))
    # a phone word that names what an identifier belongs to is no phone number
    assert not any(v.startswith("+1-555") for v in _many("mobileAppId", {"type": "string"}))
    # The description's example shape wins for identifiers.
    described = {"type": "string", "description": "Identifier of the training request, e.g. TR-12345."}
    assert all(re.fullmatch(r"TR-\d{5}", v) for v in _many("request_id", described))
    for text in _many("reason", {"type": "string"}) + _many("comment", {"type": "string"}):
        assert 3 <= len(text.split()) <= 8 and not re.search(r"[\",]", text)
    emails = _many("email", {"type": "string"}) + _many("contact", {"type": "string", "format": "email"})
    assert all(re.fullmatch(r"[a-z]+\.[a-z]+@[a-z]+\.example\.com", e) for e in emails)
    persona = _PERSONAS[1]
    domains = {e.split("@")[1] for e in _many("approver_email", {"type": "string"}, persona=persona)}
    assert len(domains) == 1  # the persona's company
    assert set(_many("department", {"type": "string"}, persona=persona)) == {"Finance"}
    assert all(1 <= q <= 10 for q in _many("quantity", {"type": "integer"}))
    assert all(0 <= p <= 100 for p in _many("discount_percent", {"type": "number"}))
    amounts = _many("amount", {"type": "number"})
    assert all(isinstance(a, float) and round(a, 2) == a for a in amounts)
    assert all(isinstance(t, list) and 1 <= len(t) <= 3 for t in _many("tags", {"type": "array"}))


def test_dates_follow_the_name() -> None:
    today = date(2026, 1, 15)

    def days(name: str) -> list[int]:
        out = []
        for s in range(40):
            v = ValueGenerator(seeded_rng(s), today=today).value_for(
                name, {"type": "string", "format": "date"}
            )
            d = date.fromisoformat(v)
            assert d.weekday() < 5  # business days
            out.append((d - today).days)
        return out

    assert all(-60 <= d < 0 for d in days("invoice_date") + days("hire_date") + days("active_since"))
    assert all(0 < d <= 123 for d in days("start_date") + days("due_date") + days("travel_date"))
    assert all(-60 <= d <= 123 for d in days("review_date"))
    stamps = _many("meeting_time", {"type": "string", "format": "date-time"})
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:(00|15|30|45):00", s) for s in stamps)


def test_end_dates_follow_start_dates() -> None:
    spec = {"type": "string", "format": "date"}
    tool = _tool({"start_date": spec, "end_date": spec}, ["start_date", "end_date"])
    for s in range(50):
        args = ValueGenerator(seeded_rng("range", s)).gold_args(tool)
        assert args["end_date"] >= args["start_date"]


# ---------------------------------------------------------------------------------------------
# Rendering and extraction
# ---------------------------------------------------------------------------------------------


def test_render_value() -> None:
    assert render_value("EMP123456") == "EMP123456"
    assert render_value("quarterly onboarding refresher") == '"quarterly onboarding refresher"'
    assert render_value(1250.5) == "1250.5"
    assert render_value(1250.0) == "1250"
    assert render_value(7) == "7"
    assert render_value(True) == "yes" and render_value(False) == "no"
    assert render_value(date(2026, 2, 3)) == "2026-02-03"
    assert render_value(["hr", "it", "q3"]) == "hr, it and q3"
    assert render_value(["hr", "q3"]) == "hr and q3"
    assert render_value(["x"]) == "x"
    assert render_value(["two words", "b"]) == '"two words" and b'
    assert render_value(["a", "b"]) == '"a" and b'  # an article would read as part of the sentence
    assert render_value({"city": "Oslo"}) == '{"city":"Oslo"}'
    assert render_value("and") == '"and"'


def test_humanise_param() -> None:
    assert humanise_param("cost_center_id") == "cost center ID"
    assert humanise_param("startDate") == "start date"
    assert humanise_param("is_urgent") == "urgent flag"
    assert humanise_param("employee_ids") == "employee IDs"
    for key in ("cost_center_id", "is_urgent", "employee_ids", "purchaseOrderNumber"):
        assert humanise_param(humanise_param(key)) == humanise_param(key)


def test_extract_value_examples() -> None:
    text = (
        'The employee ID is EMP123456, the start date is 2026-02-03 and the reason is "quarterly onboarding '
        'refresher".'
    )
    date_spec = {"type": "string", "format": "date"}
    assert extract_value(text, "employee_id", {"type": "string"}) == (True, "EMP123456")
    assert extract_value(text, "start_date", date_spec) == (True, "2026-02-03")
    assert extract_value(text, "reason", {"type": "string"}) == (True, "quarterly onboarding refresher")
    # A shorter name is not read inside a longer one.
    assert extract_value(text, "date", date_spec) == (False, None)
    assert extract_value(text, "id", {"type": "string"}) == (False, None)
    assert extract_value(text, "cost_center", {"type": "string"}) == (False, None)
    # Enums: whole word, any case; numbers and booleans coerced.
    prio = {"type": "string", "enum": ["low", "medium", "high"]}
    assert extract_value("Please mark it HIGH priority, the priority is High.", "priority", prio) == (
        True,
        "high",
    )
    assert extract_value("priority: definitely HIGH", "priority", prio) == (True, "high")
    assert extract_value("priority: whatever, really high", "priority", prio) == (False, None)  # other clause
    assert extract_value("use 12 for the quantity", "quantity", {"type": "integer"}) == (True, 12)
    assert extract_value("the amount is 1250.5.", "amount", {"type": "number"}) == (True, 1250.5)
    assert extract_value("the urgent flag is yes", "is_urgent", {"type": "boolean"}) == (True, True)
    assert extract_value("Is Urgent: no", "is_urgent", {"type": "boolean"}) == (True, False)
    tags = {"type": "array", "items": {"type": "string"}}
    assert extract_value("The tags are hr, travel and q3.", "tags", tags) == (True, ["hr", "travel", "q3"])
    assert extract_value("the tag is travel", "tags", tags) == (True, ["travel"])  # loose singular
    # A pattern prefers a conforming token of the clause.
    pattern = {"type": "string", "pattern": r"^TR-\d{5}$"}
    assert extract_value("the request ID is probably TR-20931", "request_id", pattern) == (True, "TR-20931")
    assert extract_value("It's TR-20931.", "request_id", pattern) == (False, None)
    assert extract_value("It's TR-20931.", "request_id", pattern, anywhere=True) == (True, "TR-20931")
    assert extract_value("", "x", {}) == (False, None)
    assert extract_value("nothing relevant here", "amount", {"type": "number"}) == (False, None)


# Parameters (with spec variants) of the round-trip tests, chosen to collide: "date" is a suffix of
# "start date", "id" of "employee ID", "status" values hold spaces, tags are lists.
_ROUND_TRIP_POOL: dict[str, list[dict]] = {
    "employee_id": [{"type": "string"}, {"type": "string", "pattern": r"^EMP\d{6}$"}, {"type": "integer"}],
    "start_date": [{"type": "string", "format": "date"}, {"type": "string"}],
    "amount": [{"type": "number", "minimum": 50, "maximum": 10000}, {"type": "integer", "minimum": 1}],
    "currency": [{"type": "string"}, {"type": "string", "enum": ["USD", "EUR", "GBP"]}],
    "reason": [{"type": "string"}],
    "priority": [
        {"type": "string", "enum": ["low", "medium", "high"]},
        {"type": "integer", "minimum": 1, "maximum": 5},
    ],
    "cost_center": [{"type": "string"}, {"type": "string", "pattern": r"^CC-\d{4}$"}],
    "quantity": [{"type": "integer", "minimum": 1, "maximum": 50}, {"type": "number"}],
    "is_urgent": [{"type": "boolean"}],
    "tags": [
        {"type": "array", "items": {"type": "string"}},
        {
            "type": "array",
            "items": {"type": "string", "enum": ["hr", "it", "finance", "travel"]},
            "maxItems": 3,
        },
        {"type": "array", "items": {"type": "integer"}},
    ],
    "date": [{"type": "string", "format": "date"}],
    "id": [{"type": "string"}],
    "manager_name": [{"type": "string"}],
    "approver_email": [{"type": "string", "format": "email"}],
    "status": [{"type": "string", "enum": ["in progress", "on hold", "done"]}],
    "meeting_time": [{"type": "string", "format": "date-time"}],
    "notes": [{"type": ["string", "null"]}],
    "discount": [{"type": "number", "minimum": 0, "maximum": 100}],
    "approvers": [{"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 2}],
    "flags": [{"type": "array", "items": {"type": "boolean"}}],
    "address": [
        {
            "type": "object",
            "properties": {"city": {"type": "string"}, "street": {"type": "string"}},
            "required": ["city", "street"],
        }
    ],
    "code": [{"type": "string", "pattern": r"^[a-z]{2}\.[0-9]{2}$"}],
}


@st.composite
def _param(draw: st.DrawFn, name: str) -> tuple[str, dict, object]:
    spec = draw(st.sampled_from(_ROUND_TRIP_POOL[name]))
    seed = draw(st.integers(0, 2**32))
    return name, spec, ValueGenerator(random.Random(seed)).value_for(name, spec)


@st.composite
def _params(draw: st.DrawFn, min_size: int, max_size: int) -> list[tuple[str, dict, object]]:
    names = draw(
        st.lists(st.sampled_from(sorted(_ROUND_TRIP_POOL)), min_size=min_size, max_size=max_size, unique=True)
    )
    return [draw(_param(n)) for n in names]


@PROPERTY
@given(_params(1, 1), st.sampled_from(["{}", "{}.", "Hi! {}.", "Okay, {}. Thanks!"]))
def test_round_trip_every_template(params: list, frame: str) -> None:
    ((name, spec, value),) = params
    for template in VALUE_PHRASES:
        clause = template.format(name=humanise_param(name), value=render_value(value))
        text = frame.format(clause)
        assert extract_value(text, name, spec) == (True, value), text


@PROPERTY
@given(_params(2, 4), st.integers(0, 2**32))
def test_round_trip_multi_parameter_utterances(params: list, seed: int) -> None:
    text = phrase_values([(name, render_value(value)) for name, _spec, value in params], random.Random(seed))
    for name, spec, value in params:
        assert extract_value(text, name, spec) == (True, value), (name, text)


@PROPERTY
@given(_params(1, 3), st.integers(0, 2**32))
def test_round_trip_with_raw_keys(params: list, seed: int) -> None:
    """Users (and LLM backends) sometimes say the raw key; phrase_values then humanises it."""
    rng = random.Random(seed)
    for name, spec, value in params:
        text = f"{name}: {render_value(value)}"
        assert extract_value(text, name, spec) == (True, value), text
    text = phrase_values([(name, render_value(value)) for name, _spec, value in params], rng)
    assert all(extract_value(text, n, s) == (True, v) for n, s, v in params)


def test_phrase_values_reads_naturally() -> None:
    rng = random.Random(3)
    text = phrase_values(
        [
            ("employee_id", "EMP123456"),
            ("start_date", "2026-02-03"),
            ("reason", '"quarterly onboarding refresher"'),
        ],
        rng,
    )
    assert text.endswith(".") and text[0].isupper()
    assert text.count(".") >= 1 and "EMP123456" in text
    # Open-ended values (lists) come after their name and close their sentence.
    text = phrase_values([("tags", "a, b and c"), ("approvers", "x and y"), ("amount", "5")], rng)
    assert re.search(r"(tags|approvers)(:| are| should be| to) [ax]", text)
    assert phrase_values([], rng) == ""


def test_a_yes_or_a_no_is_said_after_its_name() -> None:
    said = [phrase_values([("government official", "no")], random.Random(seed)) for seed in range(30)]
    assert not any(re.search(r"\bno as the|use no for|go with no|take no", s, re.I) for s in said)
    assert all(extract_value(s, "government_official", {"type": "boolean"}) == (True, False) for s in said)


def test_values_volunteered_in_a_first_message_never_open_as_a_reply() -> None:
    # "Sure," and "Of course," answer a question; a first message answers none
    openers = ("Sure,", "Okay,", "Of course,")
    replies = [phrase_values([("berth", "B-12")], random.Random(seed)) for seed in range(40)]
    assert any(r.startswith(openers) for r in replies)
    volunteered = [phrase_values([("berth", "B-12")], random.Random(seed), reply=False) for seed in range(40)]
    assert not any(v.startswith(openers) for v in volunteered)
    assert all(v[0].isupper() and "B-12" in v for v in volunteered)


# ---------------------------------------------------------------------------------------------
# The bundled catalogue (written by another part of the toolkit; skipped until it exists)
# ---------------------------------------------------------------------------------------------


def _catalogue_tools() -> list[Tool]:
    if not CATALOGUE.exists():
        pytest.skip(f"{CATALOGUE} is not there yet")
    try:
        from diaforge.data_gen.catalogue import load_catalogue

        return list(load_catalogue(CATALOGUE).tools)
    except ImportError:
        raw = json.loads(CATALOGUE.read_text(encoding="utf-8"))
        records = raw["tools"] if isinstance(raw, dict) else raw
        return [Tool.model_validate({k: v for k, v in r.items() if k in Tool.model_fields}) for r in records]


def test_catalogue_gold_args_conform_and_round_trip() -> None:
    tools = _catalogue_tools()
    assert tools
    for tool in tools:
        for seed in range(3):
            gen = ValueGenerator(seeded_rng(tool.name, seed))
            args = gen.gold_args(tool, include_optional=seed == 2)
            assert check_arguments(tool, args) == [], (tool.name, args)
            text = phrase_values(
                [(k, render_value(v)) for k, v in args.items()], seeded_rng("say", tool.name, seed)
            )
            for key, value in args.items():
                got = extract_value(text, key, tool.properties[key])
                assert got == (True, value), (tool.name, key, value, text)


# ---------------------------------------------------------------------------------------------
# Values follow what the description shows (examples and spelled-out formats)
# ---------------------------------------------------------------------------------------------

_DATETIME = r"20\d\d-\d\d-\d\dT\d\d:\d\d"

# (parameter, description, the shape every value must fully match, the example shown or None).
# Each regex is written by hand from the example: the literal prefix and separators as written,
# then digits and letters of the same class and count.
DESCRIBED = [
    ("vehicle_id", "Fleet vehicle id, e.g. 'VH-20931'.", r"VH-\d{5}", "VH-20931"),
    ("employee_number", "Employee number, e.g. EMP004217.", r"EMP\d{6}", "EMP004217"),
    ("origin_airport", "IATA code of the departure airport (e.g. FRA).", r"[A-Z]{3}", "FRA"),
    (
        "purchase_order",
        "Purchase order it belongs to, such as PO-2024-0042.",
        r"PO-\d{4}-\d{4}",
        "PO-2024-0042",
    ),
    ("invoice_number", 'Supplier invoice number like "INV/7781".', r"INV/\d{4}", "INV/7781"),
    ("room", "Room code, for example B4-117.", r"B\d-\d{3}", "B4-117"),
    ("warehouse", "Warehouse, e.g. WH-HAM-01.", r"WH-[A-Z]{3}-\d{2}", "WH-HAM-01"),
    ("sku", "Stock keeping unit, e.g. SKU-AB12CD34.", r"SKU-[A-Z]{2}\d{2}[A-Z]{2}\d{2}", "SKU-AB12CD34"),
    ("system", "System identifier, e.g. SYS_HR_07.", r"SYS_[A-Z]{2}_\d{2}", "SYS_HR_07"),
    ("handle", "Public handle, e.g. @jane_doe.", r"@[a-z]{4}_[a-z]{3}", "@jane_doe"),
    ("operation", "Operation in the routing, e.g. 0010.", r"00\d{2}", "0010"),
    ("quarter", "Fiscal quarter, e.g. 2025-Q2.", r"20\d\d-Q\d", "2025-Q2"),
    ("organiser", "Organiser's email, e.g. jane.doe@corp.example.", r"[a-z]+\.[a-z]+@corp\.example", None),
    ("window", "Start of the window, e.g. 2025-03-01T10:00:00Z.", _DATETIME + r":00Z", None),
    ("service_day", "Day of the service, YYYY-MM-DD.", r"20\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])", None),
    ("activation", "Planned activation month, YYYY-MM.", r"20\d\d-(0[1-9]|1[0-2])", None),
    ("slot_start", "Start of the slot as HH:MM (24-hour clock).", r"([01]\d|2[0-3]):[0-5]\d", None),
    (
        "charged_in",
        "ISO 4217 currency code of the invoice.",
        r"(USD|EUR|GBP|JPY|CHF|CAD|AUD|SEK|NOK|DKK|INR|SGD|BRL|MXN|ZAR|PLN|CNY|HKD|NZD)",
        None,
    ),
    ("site", "Country of the site as an ISO 3166 alpha-2 country code.", r"[A-Z]{2}", None),
    ("switchboard", "Site switchboard in E.164 phone format.", r"\+[1-9]\d{7,14}", None),
    (
        "idempotency_key",
        "Idempotency key (UUID).",
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        None,
    ),
    ("publish", "When to publish (ISO 8601 with time zone).", _DATETIME + r":00(Z|[+-]\d\d:\d\d)", None),
    ("starts", "Start, YYYY-MM-DDThh:mm.", _DATETIME + r"(:00)?", None),
]


@pytest.mark.parametrize(
    ("name", "description", "shape", "example"), DESCRIBED, ids=[c[0] for c in DESCRIBED]
)
def test_values_take_the_shape_the_description_shows(
    name: str, description: str, shape: str, example: str | None
) -> None:
    spec = {"type": "string", "description": description}
    tool = _tool({name: spec}, [name])
    values = [ValueGenerator(seeded_rng("described", name, s)).gold_args(tool)[name] for s in range(60)]
    for v in values:
        assert re.fullmatch(shape, v), (name, v)
        assert check_arguments(tool, {name: v}) == []
    assert example not in values  # fresh values, never the example itself
    assert len(set(values)) >= 5  # and not one value over and over


def test_description_examples_yield_to_the_schema() -> None:
    example = "Vehicle id, e.g. 'VH-20931'."
    # enum and const are stronger than the example
    assert set(_many("vehicle_id", {"type": "string", "enum": ["A1", "B2"], "description": example})) == {
        "A1",
        "B2",
    }
    assert set(_many("vehicle_id", {"type": "string", "const": "C3", "description": example})) == {"C3"}
    # ... and so is a pattern the example's shape cannot meet
    patterned = {"type": "string", "pattern": r"^V[0-9]{7}$", "description": example}
    assert all(re.fullmatch(r"V\d{7}", v) for v in _many("vehicle_id", patterned))
    # ... or a format: a date-time, although the description spells out a date
    timed = {"type": "string", "format": "date-time", "description": "Pick-up day, YYYY-MM-DD."}
    assert all(check_value(v, timed) is None and "T" in v for v in _many("pickup", timed))
    # ... or length bounds the example's shape does not fit
    short = {"type": "string", "maxLength": 6, "description": example}
    assert all(len(v) <= 6 and check_value(v, short) is None for v in _many("vehicle_id", short))
    # Where the example is the only allowed value, it is the value.
    only = {"type": "string", "enum": ["VH-20931"], "description": example}
    assert set(_many("vehicle_id", only)) == {"VH-20931"}


def test_a_pattern_that_admits_the_shape_gets_it() -> None:
    # The pattern allows junk like "k._9-x"; the example shows what a real one looks like.
    spec = {
        "type": "string",
        "pattern": r"^[a-z][a-z0-9._-]{2,19}$",
        "description": "Login, e.g. svc-backup.",
    }
    assert all(re.fullmatch(r"svc-[a-z]{6}", v) for v in _many("login", spec))
    review = {"type": "string", "pattern": r"^20[0-9]{2}-(H1|H2|FY)$", "description": "Cycle, e.g. 2025-H1."}
    assert all(re.fullmatch(r"20\d\d-H[12]", v) for v in _many("review_cycle", review))


def test_free_text_and_prose_examples_give_no_shape() -> None:
    # Several words, a plain word after "like": no code to copy, the name heuristics decide.
    rules = {"type": "string", "description": "Filter rules, e.g. 'industry = retail AND country = FR'."}
    assert all(" = " not in v for v in _many("segment_rules", rules))
    reason = {"type": "string", "description": "Why, in words like urgent or routine."}
    assert all(3 <= len(v.split()) <= 8 for v in _many("reason", reason))


def test_a_wcf_date_and_a_capitalised_word_keep_the_example_s_format() -> None:
    """A JSON date of a .NET service ("/Date(ms+zone)/", as Xero writes them) is a date near today
    in that format, never "/Hmya(962372569577+0009)/"; a capitalised word in a code is kept."""
    from datetime import datetime, timezone

    start = {"type": "string", "example": "/Date(1547164800000+0000)/"}
    for v in _many("StartDate", start):
        m = re.fullmatch(r"/Date\((\d+)\+0000\)/", v)
        assert m, v
        assert abs(datetime.fromtimestamp(int(m.group(1)) / 1000, timezone.utc).year - 2026) <= 1, v
    assert all(
        re.fullmatch(r"/Date\(\d+\)/", v)
        for v in _many("UpdatedUTC", {"type": "string", "example": "/Date(1573621523465)/"})
    )
    room = {"type": "string", "description": "The room, e.g. Suite-0412."}
    assert all(re.fullmatch(r"Suite-0\d{3}", v) for v in _many("room", room))


def test_list_items_follow_the_list_description() -> None:
    spec = {
        "type": "array",
        "items": {"type": "string"},
        "minItems": 2,
        "description": "Cost objects to split the charge across, e.g. WBS-1100-023.",
    }
    lists = _many("cost_objects", spec)
    assert all(len(items) >= 2 for items in lists)
    assert all(re.fullmatch(r"WBS-\d{4}-\d{3}", v) for items in lists for v in items)


def _described_catalogue() -> list[Tool]:
    from diaforge.data_gen.catalogue import load_catalogue

    return list(load_catalogue(FIXTURES / "catalogue_described.json").tools)


def test_described_catalogue_gold_args_conform_and_round_trip() -> None:
    """The shaped values survive being said and read back, like every other generated value."""
    for tool in _described_catalogue():
        for seed in range(5):
            args = ValueGenerator(seeded_rng(tool.name, seed)).gold_args(tool)
            assert check_arguments(tool, args) == [], (tool.name, args)
            text = phrase_values([(k, render_value(v)) for k, v in args.items()], seeded_rng("say", seed))
            for key, value in args.items():
                assert extract_value(text, key, tool.properties[key]) == (True, value), (key, text)


def test_measure_value_shapes_script() -> None:
    """`scripts/measure_value_shapes.py` finds every described parameter of the fixture and
    every draw matches; a parameter drawn from its name alone would not."""
    import importlib.util

    path = ROOT / "scripts" / "measure_value_shapes.py"
    loader = importlib.util.spec_from_file_location("measure_value_shapes", path)
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    params, all_ok, draws_ok, verbatim = module.measure(str(FIXTURES / "catalogue_described.json"), 5, False)
    assert params == 37 and all_ok == params and draws_ok == 5 * params and verbatim == 0
    assert module.expected_shape("Fleet vehicle id, e.g. 'VH-20931'.") == ("VH-20931", r"VH\-\d{5}")
    assert not re.fullmatch(module.shape_regex("EMP004217"), "EMP-4217")


def test_free_text_values_fit_what_their_parameter_calls_for():
    """A role name is a role, an event term a clinical term, a branch a branch, a SHA hexadecimal;
    and a string nothing calls for is counted as a generic draw."""
    import random as _random

    from diaforge.data_gen.values import ValueGenerator
    from diaforge.data_gen.values.vocabulary import COMPANIES, JOB_TITLES, MEDICAL_TERMS, SPECIALTIES, STREETS
    from diaforge.schema import Tool as _Tool

    props = {
        "role_name": {"type": "string", "description": "Name of the role to grant."},
        "event_term": {"type": "string", "description": "MedDRA preferred term of the event."},
        "specialty": {"type": "string", "description": "Specialty referred to."},
        "branch_name": {"type": "string", "description": "Branch name."},
        "commit_sha": {"type": "string", "description": "Commit SHA."},
        "street_name": {"type": "string", "description": "Street the pothole is on."},
        "premises_name": {"type": "string", "description": "Name of the premises."},
        "frobnicator": {"type": "string"},
    }
    tool = _Tool(
        name="t", description="d", parameters={"type": "object", "properties": props, "required": list(props)}
    )
    for seed in range(20):
        gen = ValueGenerator(_random.Random(seed))
        args = gen.gold_args(tool, None)
        assert args["role_name"] in JOB_TITLES
        assert args["event_term"] in MEDICAL_TERMS
        assert args["specialty"] in SPECIALTIES
        assert args["branch_name"] in ("main", "develop") or "/" in args["branch_name"]
        assert all(c in "0123456789abcdef" for c in args["commit_sha"])
        assert args["street_name"] in STREETS and args["premises_name"] in COMPANIES
        assert gen.generic_draws >= 1  # the frobnicator


@pytest.mark.parametrize(
    "description",
    [
        "Delivery addr (office or home).",
        "The billing address of the account.",
        "Shipping address, street first.",
    ],
)
def test_an_address_the_description_names_is_a_street_address(description: str) -> None:
    # the name ("ship_to", "bill_to") says nothing; the description's head does
    for value in _many("ship_to", {"type": "string", "description": description}, n=5):
        assert re.fullmatch(r"\d+ [A-Z][\w ]+", value), value
    # an email address stays an email's
    assert all(
        "@" in v for v in _many("contact_email", {"type": "string", "description": "Email address."}, n=5)
    )


def test_schema_examples_that_show_no_shape_are_chosen_from_as_written() -> None:
    # "host" alone would draw a person (an event's host); the schema lists what a DNS host looks like
    spec = {
        "type": "string",
        "description": "The name the record answers for.",
        "examples": ["@", "www", "mail"],
    }
    drawn = _many("host", spec, n=20)
    assert set(drawn) <= {"@", "www", "mail"} and len(set(drawn)) > 1
    # one example alone is no list to choose from: never the same value every time
    assert len(set(_many("host", {"type": "string", "examples": ["www"]}, n=10))) > 1


def test_a_user_principal_name_is_written_as_an_address() -> None:
    # "user" alone would draw a person's name
    assert all("@" in v for v in _many("user_upn", {"type": "string", "description": "User UPN."}, n=5))
