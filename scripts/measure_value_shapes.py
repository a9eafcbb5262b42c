"""How often generated values take the shape a parameter's description shows.

For every string parameter of a catalogue (nested properties and array items included, enums and
consts left out) whose description writes a code-like example ("e.g. 'VH-20931'", "(e.g. FRA)",
"such as PO-2024-0042") or spells out a format ("YYYY-MM-DD", "HH:MM", "ISO 4217", "E.164",
"UUID", ...), draw `--draws` values with `ValueGenerator.value_for` and check each against a
regex derived here from the description alone: an example's leading letters stay literal, then
digits, capitals and small letters become runs of the same class and length, and separators
stay literal. A value equal to the example counts as verbatim.

The script only uses `ValueGenerator`, `seeded_rng` and `load_catalogue`, so it measures any
checkout: ``PYTHONPATH=<checkout> python scripts/measure_value_shapes.py CATALOGUE...``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from typing import Any

from diaforge.cliargs import DefaultsHelpFormatter
from diaforge.data_gen.catalogue import load_catalogue
from diaforge.data_gen.values import ValueGenerator
from diaforge.rng import seeded_rng

_MARKER = r"(?:\be\.\s?g\.?|\bfor (?:example|instance)\b|\bsuch as\b|\blike\b)"
_EXAMPLE = re.compile(_MARKER + r"\s*[:,]?\s*(?:'([^'\s]+)'|\"([^\"\s]+)\"|([^\s,;()'\"]+))", re.IGNORECASE)
_DATETIME = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2})?"
_FORMATS: list[tuple[str, str]] = [  # (how the description spells it, the regex a value must match)
    (r"YYYY-MM-DDThh:mm", _DATETIME),
    (r"YYYY-MM-DD", r"\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"),
    (r"YYYY-MM", r"\d{4}-(?:0[1-9]|1[0-2])"),
    (r"HH:MM", r"(?:[01]\d|2[0-3]):[0-5]\d"),
    (r"ISO 8601 with time zone", _DATETIME + r"(?:Z|[+-]\d{2}:\d{2})"),
    (r"ISO 4217", r"[A-Z]{3}"),
    (r"ISO 3166(?:-1)? alpha-2", r"[A-Z]{2}"),
    (r"E\.164", r"\+[1-9]\d{7,14}"),
    (r"UUID", r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
]


def example_of(description: str) -> str | None:
    """The first example after e.g./for example/such as/like that is one code-like token."""
    for m in _EXAMPLE.finditer(description):
        token = next(g for g in m.groups() if g).rstrip(".:")
        if len(token) >= 2 and (
            re.search(r"\d", token)
            or len(re.findall(r"[A-Z]", token)) >= 2
            or re.search(r"\w[-_/.@]\w", token)
        ):
            return token
    return None


def shape_regex(example: str) -> str:
    """``VH-20931`` -> ``VH\\-\\d{5}``; ``FRA`` -> ``[A-Z]{3}``; an email keeps its domain."""
    if "@" in example and not example.startswith("@"):
        return r"[a-z]+\.[a-z]+@" + re.escape(example.split("@", 1)[1])
    runs = re.findall(r"\d+|[A-Z]+|[a-z]+|[^A-Za-z0-9]+", example)
    out = []
    for i, run in enumerate(runs):
        if i == 0 and run.isalpha() and len(runs) > 1 and not runs[1].isalpha():
            out.append(re.escape(run))  # a literal prefix
        elif run.isdigit():
            out.append(rf"\d{{{len(run)}}}")
        elif run.isupper():
            out.append(rf"[A-Z]{{{len(run)}}}")
        elif run.islower():
            out.append(rf"[a-z]{{{len(run)}}}")
        else:
            out.append(re.escape(run))
    return "".join(out)


def expected_shape(description: str) -> tuple[str, str] | None:
    """(what the description shows, the regex a value must fully match), or None."""
    example = example_of(description)
    if example is not None:
        return example, shape_regex(example)
    for spelled, rx in _FORMATS:
        if re.search(spelled, description, re.IGNORECASE):
            return spelled, rx
    return None


def string_params(name: str, spec: Any) -> Iterator[tuple[str, dict]]:
    """Every string (name, spec) under a property, nested properties and array items included."""
    if not isinstance(spec, dict):
        return
    if spec.get("type") == "string" and "enum" not in spec and "const" not in spec:
        yield name, spec
    for key, sub in (spec.get("properties") or {}).items():
        yield from string_params(key, sub)
    if isinstance(spec.get("items"), dict):
        yield from string_params(name, spec["items"])


def measure(path: str, draws: int, verbose: bool) -> tuple[int, int, int, int]:
    """(parameters with a shape, of which every draw matches, draws matching, draws verbatim)."""
    params = total_ok = draw_ok = verbatim = 0
    for tool in load_catalogue(path).tools:
        for top, spec in tool.properties.items():
            for name, sub in string_params(top, spec):
                shown = expected_shape(str(sub.get("description") or ""))
                if shown is None:
                    continue
                params += 1
                values = [
                    ValueGenerator(seeded_rng(tool.name, name, s)).value_for(name, sub) for s in range(draws)
                ]
                ok = [isinstance(v, str) and re.fullmatch(shown[1], v) is not None for v in values]
                draw_ok += sum(ok)
                verbatim += sum(v == shown[0] for v in values)
                total_ok += all(ok)
                if verbose and (not all(ok) or shown[0] in values):
                    print(f"  {tool.name}.{name}: {shown[0]!r} -> {values[:3]}", file=sys.stderr)
    return params, total_ok, draw_ok, verbatim


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=DefaultsHelpFormatter)
    ap.add_argument("catalogues", nargs="+", help="catalogue JSON files")
    ap.add_argument("--draws", type=int, default=20, help="values drawn per parameter (default 20)")
    ap.add_argument("-v", "--verbose", action="store_true", help="list the parameters that miss")
    args = ap.parse_args()
    for path in args.catalogues:
        params, total_ok, draw_ok, verbatim = measure(path, args.draws, args.verbose)
        n = max(1, params * args.draws)
        print(
            f"{path}: {params} string parameters show a shape; all {args.draws} draws match for "
            f"{total_ok}/{params} ({total_ok / max(1, params):.1%}); draws matching {draw_ok}/{n} "
            f"({draw_ok / n:.1%}); verbatim copies of the example {verbatim}"
        )


if __name__ == "__main__":
    main()
