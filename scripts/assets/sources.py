"""Read and check the data files the assets are built from (`data_gen/assets/sources/`).

    lines_of_business.yaml   the lines of business in catalogue order: name, family-id prefix, split
    parameters.json          the parameter library: JSON Schema per parameter name, in sections
    tools/<line>.yaml        one file per line of business: tool families and singletons, in order
    personas.yaml            persona ingredients per line of business: roles, pains, jargon
    persona_phrasing.yaml    shared persona phrasing: companies, regions, tones, sentence templates

Every file is parsed with the bounded parsers of `diaforge.hygiene` and every entry checked by a
strict pydantic model (no coercion: `"3"` is not a number and `no` is not a string), so a malformed
source is one `InputError` naming the file, the entry and the field. Lists keep their order: the
catalogue follows the order of the tool files and the persona RNG draws follow the order of the
persona lists, so reordering entries changes the built assets.
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError

from diaforge.errors import InputError
from diaforge.hygiene import load_json, load_yaml, read_text_file

# The fields a persona sentence template may use (see `scripts.assets.personas`).
TEMPLATE_FIELDS = frozenset(
    {"role", "Role", "a", "A", "company", "region", "duty", "Duty", "pain", "years", "tone_habit"}
)


def _ref(value: Any) -> str | dict[str, Any]:
    """A parameter reference: a library key, or `{key: override}` where the override is a new
    description (a string) or fields that replace the library's (a mapping)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, override),) = value.items()
        if isinstance(key, str) and isinstance(override, str | dict):
            return value
    raise ValueError(
        "a parameter is a name from parameters.json or a one-key mapping {name: description or fields}"
    )


#: A parameter reference of a tool: see `_ref`.
Ref = Annotated[Any, PlainValidator(_ref)]


def ref_key(ref: str | dict[str, Any]) -> str:
    """The parameter name of a reference."""
    return ref if isinstance(ref, str) else next(iter(ref))


class _Source(BaseModel):
    """Strict and closed: an unknown key or a value of the wrong type is an error, not a guess."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LineOfBusiness(_Source):
    name: str = Field(min_length=1, description="Name, as in the tools' `line_of_business`.")
    prefix: str = Field(pattern=r"^[a-z]+$", description="Start of the family ids, e.g. `fin`.")
    split: Literal["train", "heldout"] = Field(description="Training line or held out for evaluation.")


class Variant(_Source):
    """One member of a family: its own name and how it differs from the family."""

    name: str
    fill: dict[str, str] = Field(default_factory=dict, description="Values of the template's fields.")
    description: str | None = Field(default=None, description="Replaces the filled template entirely.")
    add_required: list[Ref] = Field(default_factory=list)
    add_optional: list[Ref] = Field(default_factory=list)
    drop: list[str] = Field(default_factory=list, description="Family parameters this member lacks.")


class Family(_Source):
    """Near-duplicate tools sharing a description template and most parameters."""

    family: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Family id without the prefix.")
    template: str
    required: list[Ref] = Field(default_factory=list)
    optional: list[Ref] = Field(default_factory=list)
    variants: list[Variant] = Field(min_length=2)


class Singleton(_Source):
    """A tool with no near-duplicate: a family of its own."""

    name: str
    description: str
    required: list[Ref] = Field(default_factory=list)
    optional: list[Ref] = Field(default_factory=list)


class _ToolsFile(_Source):
    tools: list[dict[str, Any]]


class Role(_Source):
    title: str = Field(min_length=1)
    department: str = Field(min_length=1)
    seniorities: list[str] = Field(min_length=1)
    duties: list[str] = Field(min_length=1, description="Third-person verb phrases: 'closes the books'.")


class PersonaKit(_Source):
    """The persona ingredients of one line of business."""

    goods_industries_only: bool = False
    roles: list[Role] = Field(min_length=1)
    pains: list[str] = Field(min_length=1)
    jargon: list[str] = Field(min_length=4, description="Each persona samples two to four terms.")


class Phrasing(_Source):
    """The persona phrasing shared by every line of business."""

    company_sizes: list[str] = Field(min_length=1)
    goods_industries: list[str] = Field(min_length=1)
    service_industries: list[str] = Field(min_length=1)
    regions: list[str] = Field(min_length=1)
    tones: dict[str, str] = Field(min_length=1)
    templates: list[str] = Field(min_length=1)
    years_by_seniority: dict[str, Annotated[list[int], Field(min_length=2, max_length=2)]]


M = TypeVar("M", bound=_Source)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as composed from its source entry, before its parameters are resolved."""

    name: str
    description: str
    lob: str
    family: str
    required: list[Any]
    optional: list[Any]
    source: str  # the file it came from, for error messages


@dataclass(frozen=True)
class Sources:
    """Everything the builder reads, checked."""

    lines: list[LineOfBusiness]
    parameters: dict[str, dict[str, Any]]
    specs: list[ToolSpec]
    kits: dict[str, PersonaKit]
    phrasing: Phrasing


# --------------------------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------------------------


def shown(path: Path) -> Path:
    """The path as a person would type it: relative to the working folder where possible."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def read_source(path: Path) -> Any:
    """A JSON or YAML source (by suffix), parsed; any failure is an `InputError` naming the file."""
    path = shown(path)
    text = read_text_file(path, what="asset source file")
    try:
        if path.suffix == ".json":
            return load_json(text, path=path)
        return load_yaml(text, path=path)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path=path
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise InputError(f"not valid YAML: {problem}{where}", path=path) from None


def check(model: type[M], value: Any, path: Path, record: str | None) -> M:
    """`model` validated from `value`; the first problem becomes a one-line `InputError`."""
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key shows up twice (unknown key, missing field): name the misspelling.
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        field = ".".join(str(part) for part in first["loc"]) or None
        message = first["msg"].removeprefix("Value error, ")
        if len(errors) > 1:
            more = len(errors) - 1
            message += f" (and {more} more problem{'s' if more > 1 else ''} in this entry)"
        raise InputError(message, path=shown(path), record=record, field=field) from None


def _entry_name(entry: Any, key: str, index: int) -> str:
    """What an entry is called in an error: its name where it has one, else its position."""
    name = entry.get(key) if isinstance(entry, dict) else None
    return name if isinstance(name, str) and name else f"#{index + 1}"


# --------------------------------------------------------------------------------------------
# The files
# --------------------------------------------------------------------------------------------


def tools_file(root: Path, lob: str) -> Path:
    """Where the tools of a line of business live: `tools/<name, spaces as underscores>.yaml`."""
    return root / "tools" / (re.sub(r"[^a-z0-9]+", "_", lob.lower()).strip("_") + ".yaml")


def load_lines(root: Path) -> list[LineOfBusiness]:
    """The lines of business, in catalogue order, with unique names and prefixes."""
    path = root / "lines_of_business.yaml"
    data = read_source(path)
    if not isinstance(data, list) or not data:
        raise InputError("expected a list of lines of business", path=shown(path))
    lines = [
        check(LineOfBusiness, entry, path, _entry_name(entry, "name", i)) for i, entry in enumerate(data)
    ]
    for attr in ("name", "prefix"):
        values = [getattr(line, attr) for line in lines]
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise InputError(f"{attr} used twice", path=shown(path), record=twice[0], field=attr)
    return lines


def load_parameters(root: Path) -> dict[str, dict[str, Any]]:
    """The parameter library, flattened over its sections: name -> JSON Schema."""
    path = root / "parameters.json"
    data = read_source(path)
    if not isinstance(data, dict):
        raise InputError(
            "expected an object of sections, each mapping names to JSON Schemas", path=shown(path)
        )
    library: dict[str, dict[str, Any]] = {}
    section_of: dict[str, str] = {}
    for section, params in data.items():
        if not isinstance(params, dict):
            raise InputError(
                "a section maps parameter names to JSON Schemas", path=shown(path), record=section
            )
        for key, spec in params.items():
            if not isinstance(spec, dict):
                raise InputError("a parameter must be a JSON Schema object", path=shown(path), record=key)
            if key in library:
                raise InputError(
                    f"parameter declared twice (also in section {section_of[key]!r})",
                    path=shown(path),
                    record=key,
                )
            library[key] = spec
            section_of[key] = section
    return library


def _expand(family: Family, lob: LineOfBusiness, path: Path) -> list[ToolSpec]:
    """The members of a family, each with its filled description and parameter lists."""
    specs = []
    for var in family.variants:
        description = var.description
        if description is None:
            try:
                description = family.template.format(**var.fill)
            except (KeyError, IndexError, ValueError) as exc:
                raise InputError(
                    f"the template cannot be filled: {type(exc).__name__} {exc}",
                    path=shown(path),
                    record=var.name,
                    field="fill",
                ) from None
        required = [r for r in family.required if ref_key(r) not in var.drop] + list(var.add_required)
        optional = [o for o in family.optional if ref_key(o) not in var.drop] + list(var.add_optional)
        fid = f"{lob.prefix}.{family.family}"
        specs.append(ToolSpec(var.name, description, lob.name, fid, required, optional, str(shown(path))))
    return specs


def load_tools(root: Path, lob: LineOfBusiness) -> list[ToolSpec]:
    """The tools of one line of business, families expanded, in file order."""
    path = tools_file(root, lob.name)
    doc = check(_ToolsFile, read_source(path), path, None)
    source = str(shown(path))
    specs: list[ToolSpec] = []
    for i, entry in enumerate(doc.tools):
        if "family" in entry:
            specs += _expand(check(Family, entry, path, _entry_name(entry, "family", i)), lob, path)
            continue
        one = check(Singleton, entry, path, _entry_name(entry, "name", i))
        required, optional = list(one.required), list(one.optional)
        fid = f"{lob.prefix}.{one.name}"
        specs.append(ToolSpec(one.name, one.description, lob.name, fid, required, optional, source))
    return specs


def _check_stray_tool_files(root: Path, lines: list[LineOfBusiness]) -> None:
    """A tool file no line of business points to would be silently ignored; refuse it."""
    expected = {tools_file(root, line.name) for line in lines}
    for path in sorted((root / "tools").glob("*")):
        if path not in expected:
            raise InputError(
                "no line of business in lines_of_business.yaml has this file name", path=shown(path)
            )


def load_kits(root: Path, lines: list[LineOfBusiness], seniorities: set[str]) -> dict[str, PersonaKit]:
    """The persona ingredients of every line of business (exactly those of lines_of_business.yaml)."""
    path = root / "personas.yaml"
    data = read_source(path)
    if not isinstance(data, dict):
        raise InputError(
            "expected a mapping from line of business to its persona ingredients", path=shown(path)
        )
    names = [line.name for line in lines]
    for name in data:
        if name not in names:
            raise InputError(
                "not a line of business in lines_of_business.yaml", path=shown(path), record=name
            )
    kits: dict[str, PersonaKit] = {}
    for name in names:
        if name not in data:
            raise InputError(
                "this line of business has no persona ingredients", path=shown(path), record=name
            )
        kit = check(PersonaKit, data[name], path, name)
        for r, role in enumerate(kit.roles):
            unknown = [s for s in role.seniorities if s not in seniorities]
            if unknown:
                raise InputError(
                    f"seniority {unknown[0]!r} is not in years_by_seniority of persona_phrasing.yaml",
                    path=shown(path),
                    record=name,
                    field=f"roles.{r}.seniorities",
                )
        kits[name] = kit
    return kits


def load_phrasing(root: Path) -> Phrasing:
    """The shared persona phrasing, with templates that use only known fields."""
    path = root / "persona_phrasing.yaml"
    phrasing = check(Phrasing, read_source(path), path, None)
    for i, template in enumerate(phrasing.templates):
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(template) if f is not None}
        except ValueError as exc:
            raise InputError(f"bad template: {exc}", path=shown(path), field=f"templates.{i}") from None
        unknown = sorted(fields - TEMPLATE_FIELDS)
        if unknown:
            known = ", ".join(sorted(TEMPLATE_FIELDS))
            raise InputError(
                f"unknown field {{{unknown[0]}}}; use {known}", path=shown(path), field=f"templates.{i}"
            )
    for level, (low, high) in phrasing.years_by_seniority.items():
        if not 0 <= low <= high:
            raise InputError("expected [low, high] with 0 <= low <= high", path=shown(path), record=level)
    return phrasing


def load_sources(root: Path) -> Sources:
    """Every source file under `root`, checked (see the module docstring)."""
    lines = load_lines(root)
    parameters = load_parameters(root)
    _check_stray_tool_files(root, lines)
    specs = [spec for line in lines for spec in load_tools(root, line)]
    phrasing = load_phrasing(root)
    kits = load_kits(root, lines, set(phrasing.years_by_seniority))
    return Sources(lines, parameters, specs, kits, phrasing)
