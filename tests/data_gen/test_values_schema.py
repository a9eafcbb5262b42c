"""Schema checking through jsonschema (issue 15): the eight probes that the hand-written checks let
through, each rejected with an actionable reason while a valid counterpart passes; the catalogue
spellings the checker still accepts; and the generator drawing values for composed schemas."""

from __future__ import annotations

import random
from typing import Any

import pytest

from diaforge.data_gen.values import ValueGenerator, check_arguments, check_value
from diaforge.rng import seeded_rng
from diaforge.schema import Tool

_DEFS = {"$defs": {"Code": {"type": "string", "pattern": r"^CC-\d{4}$"}}}

# (probe, schema, a value that breaks it, a valid counterpart, a fragment the reason must carry)
PROBES: list[tuple[str, dict[str, Any], Any, Any, str]] = [
    (
        "anyOf",
        {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^[A-Z]{3}$"}]},
        "usd",
        "USD",
        "matches none of the anyOf options: option 1: expected integer",
    ),
    (
        "oneOf",
        {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
        3,
        2.5,
        "matches oneOf options 1 and 2; it must match exactly one",
    ),
    (
        "allOf",
        {"allOf": [{"type": "string", "minLength": 3}, {"pattern": "^[a-z]+$"}]},
        "abc1",
        "abcd",
        "does not match pattern ^[a-z]+$",
    ),
    ("not", {"type": "string", "not": {"enum": ["none", "n/a"]}}, "n/a", "Oslo", "must not match"),
    ("$ref", {**_DEFS, "$ref": "#/$defs/Code"}, "CC-12", "CC-1234", r"does not match pattern ^CC-\d{4}$"),
    ("const", {"const": "EUR"}, "USD", "EUR", '"USD" is not "EUR"'),
    ("pattern", {"type": "string", "pattern": r"^EMP\d{6}$"}, "EMP12", "EMP123456", "does not match pattern"),
    ("format", {"type": "string", "format": "date"}, "2026-02-30", "2026-02-28", "is not a valid date"),
]


@pytest.mark.parametrize(("probe", "schema", "bad", "good", "reason"), PROBES, ids=[p[0] for p in PROBES])
def test_each_probe_is_rejected_and_its_counterpart_passes(
    probe: str, schema: dict[str, Any], bad: Any, good: Any, reason: str
) -> None:
    problem = check_value(bad, schema)
    assert problem is not None, f"{probe}: {bad!r} was let through"
    assert reason in problem, problem
    assert check_value(good, schema) is None


def test_probes_inside_an_argument_map_name_the_argument() -> None:
    tool = Tool(
        name="book_cost_center",
        parameters={
            "type": "object",
            **_DEFS,
            "properties": {
                "center": {"$ref": "#/$defs/Code"},
                "currency": {"anyOf": [{"const": "EUR"}, {"const": "USD"}]},
                "split": {"type": "array", "items": {"$ref": "#/$defs/Code"}},
            },
            "required": ["center"],
        },
    )
    assert check_arguments(tool, {"center": "CC-4100", "currency": "USD", "split": ["CC-1000"]}) == []
    problems = check_arguments(tool, {"center": "4100", "currency": "GBP", "split": ["CC-1000", "x"]})
    assert problems[0] == r'center: "4100" does not match pattern ^CC-\d{4}$'
    assert problems[1].startswith(
        'currency: "GBP" matches none of the anyOf options: option 1: "GBP" is not "EUR"'
    )
    assert problems[2] == r'split[1]: "x" does not match pattern ^CC-\d{4}$'


def test_formats_checked_by_jsonschema_and_by_ours() -> None:
    assert check_value("10.0.0.300", {"format": "ipv4"}) == '"10.0.0.300" is not a valid IPv4 address'
    assert check_value("10.0.0.3", {"format": "ipv4"}) is None
    assert check_value("a@b", {"format": "email"}) is not None  # jsonschema alone accepts any "@"
    assert check_value("2026-02-03 09:30+01:00", {"format": "date-time"}) is None
    assert check_value("https://x.example.com/a b", {"format": "uri"}) is not None
    assert check_value("anything", {"format": "hostname"}) is None  # formats we do not draw: annotations


def test_catalogue_spellings_are_still_read() -> None:
    assert check_value(2.5, {"type": "float"}) is None  # an alias, as catalogues write it
    assert "expected object" in check_value([], {"type": "dict"})
    assert check_value("x", {"type": "whatever"}) is None  # an unknown spelling constrains nothing
    assert check_value("ab", {"type": "string", "required": True, "minLength": "3"}) is None  # malformed
    assert "greater than 5" in check_value(5, {"minimum": 5, "exclusiveMinimum": True})
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 5, "exclusiveMinimum": True}
    assert check_value(5, draft4) == "5 must be greater than 5 (exclusiveMinimum)"
    assert check_value(0.3, {"type": "number", "multipleOf": 0.1}) is None  # float rounding
    assert "not a valid regular expression" in check_value("a", {"pattern": "("})
    assert "cannot be resolved" in check_value("a", {"$ref": "#/$defs/Missing"})


def test_a_wrong_type_is_the_only_reason_given_for_that_place() -> None:
    assert (
        check_value(3, {"type": "string", "enum": ["a"], "minLength": 2}) == "expected string, got integer 3"
    )


@pytest.mark.parametrize(("probe", "schema", "bad", "good", "reason"), PROBES, ids=[p[0] for p in PROBES])
def test_the_generator_draws_conforming_values_for_each_probe(
    probe: str, schema: dict[str, Any], bad: Any, good: Any, reason: str
) -> None:
    for seed in range(20):
        value = ValueGenerator(seeded_rng(probe, seed)).value_for("code", schema)
        assert check_value(value, schema) is None, (probe, value)


def test_gold_args_resolve_refs_against_the_tool() -> None:
    tool = Tool(
        name="split_cost",
        parameters={
            "type": "object",
            **_DEFS,
            "properties": {
                "centers": {"type": "array", "items": {"$ref": "#/$defs/Code"}, "minItems": 2},
                "mode": {"oneOf": [{"const": "even"}, {"const": "weighted"}]},
            },
            "required": ["centers", "mode"],
        },
    )
    for seed in range(10):
        args = ValueGenerator(random.Random(seed)).gold_args(tool)
        assert check_arguments(tool, args) == [], args
        assert args["mode"] in ("even", "weighted")
