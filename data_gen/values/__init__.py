"""Slot values: the gold argument map of a dialogue, and how values travel through natural text.

DiaFORGE §3.1 ("Slot Value Generator") draws concrete, persona-consistent values for the required
arguments of the seed tool so that the user-proxy never has to invent them. This package is the
offline, rule-based version of that generator, plus the pieces the scripted agents share. Its
modules, each with one responsibility:

* `patterns`: `sample_pattern`, a string that fully matches a JSON Schema `pattern` (the regex
  subset real API schemas use); anything else raises `UnsupportedPattern`.
* `checking`: `check_value` / `check_arguments`, does a value (an argument map) conform to its
  JSON Schema? Checked with `jsonschema` (anyOf/oneOf/allOf/not/$ref included); each problem
  comes back as one short line, e.g. ``amount: 12 is below minimum 50``.
* `formats`: the string formats (date, date-time, time, email, uuid, uri) the generator writes
  and the checker and the extractor recognise.
* `generator`: `ValueGenerator`, typed, realistic values by schema first (enum, pattern, format,
  bounds), then the shape the description shows (`described`), then parameter-name rules
  (`names`, over the tables of `vocabulary`). Every value it returns passes `check_value`.
* `rendering` / `extraction`: `render_value` / `phrase_values` / `extract_value`, how a user says
  a value in a sentence and how the assistant reads it back. The contract, held by property
  tests: for every generated value ``v``, ``extract_value(phrase_with(render_value(v)), name,
  spec) == (True, v)`` for every template of `VALUE_PHRASES`, also when one sentence carries
  several parameters.

How a person names a parameter (`humanise_param`) is shared text vocabulary: `diaforge.text`.
"""

from __future__ import annotations

from diaforge.data_gen.values.checking import check_arguments, check_value
from diaforge.data_gen.values.extraction import extract_value
from diaforge.data_gen.values.generator import ValueGenerator
from diaforge.data_gen.values.patterns import UnsupportedPattern, sample_pattern
from diaforge.data_gen.values.rendering import VALUE_PHRASES, phrase_values
from diaforge.saying import render_value

__all__ = [
    "UnsupportedPattern",
    "VALUE_PHRASES",
    "ValueGenerator",
    "check_arguments",
    "check_value",
    "extract_value",
    "phrase_values",
    "render_value",
    "sample_pattern",
]
