"""Properties of the bundled assets in data_gen/assets/ (catalogue, splits, persona bank), and
their builder: the sources in data_gen/assets/sources/ rebuild them byte for byte, and a malformed
source is refused with one line naming the file and the entry.

The embedding-based near-duplicate share is not computed here (`python -m diaforge.data_gen analyze` and
`scripts/check_near_duplicates.py` measure it); only the cheap name component is checked.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.schema import Persona, Tool

ASSETS = ROOT / "data_gen" / "assets"
ISO_CURRENCY = re.compile(r"^[A-Z]{3}$")


def _load(name: str) -> list[dict]:
    return json.loads((ASSETS / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def raw() -> list[dict]:
    return _load("catalogue.json")


@pytest.fixture(scope="module")
def tools(raw: list[dict]) -> list[Tool]:
    return [Tool.model_validate(r) for r in raw]


@pytest.fixture(scope="module")
def personas() -> list[Persona]:
    lines = (ASSETS / "personas.jsonl").read_text(encoding="utf-8").splitlines()
    return [Persona.model_validate(json.loads(line)) for line in lines if line.strip()]


def _iter_properties(schema: dict, where: str = ""):
    """Every property schema, nested ones (array items, object properties) included."""
    for key, spec in schema.get("properties", {}).items():
        yield f"{where}{key}", key, spec
        items = spec.get("items")
        if isinstance(items, dict) and items.get("type") == "object":
            yield from _iter_properties(items, f"{where}{key}[].")
        if spec.get("type") == "object":
            yield from _iter_properties(spec, f"{where}{key}.")


def _lcs(a: str, b: str) -> int:
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


# ---------------------------------------------------------------------------------------------
# Catalogue
# ---------------------------------------------------------------------------------------------


def test_catalogue_size_and_lines_of_business(tools: list[Tool]) -> None:
    assert len(tools) >= 420
    lobs = Counter(t.metadata["line_of_business"] for t in tools)
    assert len(lobs) >= 10
    for lob in (
        "finance",
        "procurement",
        "human resources",
        "sales",
        "supply chain",
        "customer service",
        "IT service management",
        "manufacturing",
        "travel and expense",
    ):
        assert lobs[lob] >= 20, lob


def test_records_have_exactly_the_tool_shape(raw: list[dict], tools: list[Tool]) -> None:
    for rec, tool in zip(raw, tools, strict=True):
        assert set(rec) == {"name", "description", "parameters", "metadata"}
        assert set(rec["metadata"]) == {"line_of_business", "family", "split"}
        # Stored already normalised: validating changes nothing.
        assert tool.model_dump(mode="json") == rec


def test_names_unique_and_snake_case(tools: list[Tool]) -> None:
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    for name in names:
        assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name), name


def test_descriptions_are_short_and_distinct(tools: list[Tool]) -> None:
    descriptions = [t.description for t in tools]
    assert len(set(descriptions)) == len(descriptions)
    for t in tools:
        sentences = len(re.findall(r"[.!?](\s|$)", t.description))
        assert 1 <= sentences <= 3, t.name
        assert "{" not in t.description and "}" not in t.description, t.name


def test_required_parameter_share(tools: list[Tool]) -> None:
    share = sum(bool(t.required) for t in tools) / len(tools)
    assert 0.70 <= share <= 0.76, share
    counts = Counter(len(t.required) for t in tools)
    assert max(counts) <= 6
    # Mostly one to four required parameters, a few with five or six.
    assert sum(counts[k] for k in (5, 6)) <= 0.1 * len(tools)


def test_some_tools_take_no_parameters_at_all(tools: list[Tool]) -> None:
    bare = [t for t in tools if not t.properties]
    assert len(bare) >= 10
    # ... and some have only optional ones.
    assert any(t.properties and not t.required for t in tools)


def test_every_property_is_typed_and_generatable(tools: list[Tool]) -> None:
    for t in tools:
        for path, key, spec in _iter_properties(t.parameters):
            where = f"{t.name}.{path}"
            assert spec.get("description"), where
            kind = spec.get("type")
            assert kind in ("string", "integer", "number", "boolean", "array", "object"), where
            if kind in ("integer", "number"):
                assert "minimum" in spec and "maximum" in spec, where
                assert spec["minimum"] <= spec["maximum"], where
            if kind == "string":
                assert {"pattern", "enum", "format", "maxLength"} & spec.keys(), where
            if "pattern" in spec:
                re.compile(spec["pattern"])
            if "enum" in spec:
                assert spec["enum"] and len(set(spec["enum"])) == len(spec["enum"]), where
            if kind == "array":
                assert isinstance(spec.get("items"), dict) and "type" in spec["items"], where
            if "currency" in key and kind == "string":
                values = spec.get("enum", [])
                assert values and all(ISO_CURRENCY.match(c) for c in values), where


def test_identifier_properties_have_a_pattern_or_enum(tools: list[Tool]) -> None:
    for t in tools:
        for path, key, spec in _iter_properties(t.parameters):
            if key.endswith("_id"):
                assert "pattern" in spec or "enum" in spec, f"{t.name}.{path}"
            if key.endswith("_ids"):
                items = spec.get("items", {})
                assert "pattern" in items or "enum" in items, f"{t.name}.{path}"


def test_required_keys_are_declared(tools: list[Tool]) -> None:
    for t in tools:
        assert set(t.required) <= set(t.properties), t.name


def test_families_are_single_line_and_sized_two_to_five(tools: list[Tool]) -> None:
    members: dict[str, list[Tool]] = defaultdict(list)
    for t in tools:
        members[t.metadata["family"]].append(t)
    sizes = Counter(len(m) for m in members.values())
    assert set(sizes) <= {1, 2, 3, 4, 5}
    assert sizes[2] and sizes[3] and (sizes[4] or sizes[5]), sizes
    assert sizes[1] >= 20  # singletons with no near-duplicate exist too
    for family, group in members.items():
        assert len({t.metadata["line_of_business"] for t in group}) == 1, family
        assert len({t.metadata["split"] for t in group}) == 1, family


def test_family_members_share_most_of_their_name(tools: list[Tool]) -> None:
    """The cheap half of the near-duplicate criterion: S_name = 2 LCS / (|a| + |b|)."""
    members: dict[str, list[str]] = defaultdict(list)
    for t in tools:
        members[t.metadata["family"]].append(t.name)
    families = [names for names in members.values() if len(names) > 1]
    assert len(families) >= 100
    close = 0
    for names in families:
        best = max(2 * _lcs(a, b) / (len(a) + len(b)) for i, a in enumerate(names) for b in names[i + 1 :])
        close += best >= 0.6
    assert close / len(families) >= 0.9


# ---------------------------------------------------------------------------------------------
# Split
# ---------------------------------------------------------------------------------------------


def test_heldout_split(tools: list[Tool]) -> None:
    heldout = [t for t in tools if t.metadata["split"] == "heldout"]
    train = [t for t in tools if t.metadata["split"] == "train"]
    assert len(heldout) + len(train) == len(tools)
    assert len(heldout) >= 100
    heldout_lobs = {t.metadata["line_of_business"] for t in heldout}
    train_lobs = {t.metadata["line_of_business"] for t in train}
    assert len(heldout_lobs) >= 2
    # Whole lines of business are held out.
    assert not heldout_lobs & train_lobs
    assert not {t.name for t in heldout} & {t.name for t in train}
    assert not {t.metadata["family"] for t in heldout} & {t.metadata["family"] for t in train}


def test_split_files_partition_the_catalogue(raw: list[dict]) -> None:
    train = _load("catalogue_train.json")
    heldout = _load("catalogue_heldout.json")
    assert all(r["metadata"]["split"] == "train" for r in train)
    assert all(r["metadata"]["split"] == "heldout" for r in heldout)
    key = lambda r: r["name"]  # noqa: E731
    assert sorted(train + heldout, key=key) == sorted(raw, key=key)
    for r in train + heldout:
        Tool.model_validate(r)


# ---------------------------------------------------------------------------------------------
# Personas
# ---------------------------------------------------------------------------------------------


def test_persona_bank(personas: list[Persona]) -> None:
    assert len(personas) >= 320
    ids = [p.id for p in personas]
    assert len(ids) == len(set(ids))
    descriptions = [p.description for p in personas]
    assert len(descriptions) == len(set(descriptions))
    for p in personas:
        assert p.role and p.department and p.seniority and p.tone, p.id
        assert 2 <= len(p.jargon) <= 4, p.id
        assert len(set(p.jargon)) == len(p.jargon), p.id


def test_personas_cover_every_line_of_business(tools: list[Tool], personas: list[Persona]) -> None:
    catalogue_lobs = {t.metadata["line_of_business"] for t in tools}
    per_lob = Counter(p.line_of_business for p in personas)
    assert set(per_lob) == catalogue_lobs
    assert min(per_lob.values()) >= 10


def test_personas_vary(personas: list[Persona]) -> None:
    assert len({p.seniority for p in personas}) >= 5
    assert len({p.tone for p in personas}) >= 5
    assert len({p.role for p in personas}) >= 60


# ---------------------------------------------------------------------------------------------
# The builder: sources -> assets (scripts/build_assets.py, scripts/assets/)
# ---------------------------------------------------------------------------------------------

BUILT = ("catalogue.json", "catalogue_train.json", "catalogue_heldout.json", "personas.jsonl")


@pytest.fixture(scope="module")
def builder():
    """scripts/build_assets.py, imported as the module `python -m scripts.build_assets` runs."""
    return importlib.import_module("scripts.build_assets")


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A private copy of the sources trimmed to one line of business (finance), free to break;
    small, so that each malformed case parses little."""
    src, dst = ASSETS / "sources", tmp_path / "sources"
    (dst / "tools").mkdir(parents=True)
    for name in ("parameters.json", "persona_phrasing.yaml", "tools/finance.yaml"):
        shutil.copy(src / name, dst / name)
    lines = (src / "lines_of_business.yaml").read_text(encoding="utf-8")
    (dst / "lines_of_business.yaml").write_text(lines[: lines.index("- name:", lines.index("- name:") + 1)])
    chunks = re.split(r"(?m)^(?=[A-Za-z])", (src / "personas.yaml").read_text(encoding="utf-8"))
    (dst / "personas.yaml").write_text(chunks[0] + next(c for c in chunks if c.startswith("finance:")))
    return dst


def test_builder_reproduces_the_shipped_assets(builder, tmp_path: Path, capsys) -> None:
    """The sources are the whole truth: rebuilt from a copy, elsewhere, the assets are
    byte-identical (about a second: the build has no model and no encoder)."""
    sources = shutil.copytree(ASSETS / "sources", tmp_path / "sources")
    out = tmp_path / "out"
    assert builder.main(["--sources", str(sources), "--out", str(out)]) == 0
    assert "tools: 556 in 12 lines of business" in capsys.readouterr().out
    for name in BUILT:
        assert (out / name).read_bytes() == (ASSETS / name).read_bytes(), name


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


# (file, text to replace, replacement, what the error line must say)
MALFORMED = {
    "yaml-boolean-for-text": (
        "tools/finance.yaml",
        "channel: domestic",
        "channel: no",
        ["tools/finance.yaml", "record 'payment_run'", "field 'variants.0.fill.channel'", "valid string"],
    ),
    "unknown-parameter": (
        "tools/finance.yaml",
        "optional: [country_code]",
        "optional: [country_kode]",
        ["tools/finance.yaml", "record 'list_vat_returns_due'", "unknown parameter 'country_kode'"],
    ),
    "bad-split": (
        "lines_of_business.yaml",
        "split: train",
        "split: training",
        ["lines_of_business.yaml", "record 'finance'", "field 'split'", "'train' or 'heldout'"],
    ),
    "misspelt-key": (
        "tools/finance.yaml",
        "  - name: list_vat_returns_due",
        "  - nmae: list_vat_returns_due",
        ["tools/finance.yaml", "record '#", "field 'nmae'", "not permitted"],
    ),
    "missing-persona-line": (
        "personas.yaml",
        "finance:",
        "fnance:",
        ["personas.yaml", "record 'fnance'", "not a line of business"],
    ),
    "yaml-syntax": (
        "personas.yaml",
        "  roles:\n",
        "  roles: [\n",
        ["personas.yaml", "not valid YAML", "line "],
    ),
    "json-syntax": (
        "parameters.json",
        '"finance": {',
        '"finance": {,',
        ["parameters.json", "not valid JSON", "line 2"],
    ),
    "string-for-number": (
        "persona_phrasing.yaml",
        "junior: [1, 3]",
        "junior: ['1', 3]",
        ["persona_phrasing.yaml", "field 'years_by_seniority.junior.0'", "valid integer"],
    ),
    "unknown-seniority": (
        "personas.yaml",
        "seniorities: [junior, mid]",
        "seniorities: [junior, middling]",
        ["personas.yaml", "record 'finance'", "field 'roles.0.seniorities'", "'middling'"],
    ),
    "template-field": (
        "tools/finance.yaml",
        "fill:\n          channel: domestic",
        "fill:\n          chanel: domestic",
        ["tools/finance.yaml", "record 'schedule_payment_run_domestic'", "field 'fill'", "channel"],
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED), ids=sorted(MALFORMED))
def test_malformed_source_is_one_line_naming_file_and_entry(
    builder, sources: Path, tmp_path: Path, capsys, case
):
    name, old, new, expected = MALFORMED[case]
    _replace(sources / name, old, new)
    assert builder.main(["--sources", str(sources), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert not (tmp_path / "out").exists(), "nothing is written from malformed sources"


def test_stray_tools_file_is_refused(builder, sources: Path, tmp_path: Path, capsys) -> None:
    """A tools file no line of business points to would be silently left out of the catalogue."""
    shutil.copy(sources / "tools" / "finance.yaml", sources / "tools" / "finanse.yaml")
    assert builder.main(["--sources", str(sources), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "tools/finanse.yaml" in err and "no line of business" in err
