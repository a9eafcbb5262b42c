"""`diaforge.configs`: the one YAML mapping reader of every stage's config, and pydantic's refusals
as one line naming the file and the key (each expected line written out by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from diaforge.configs import (
    FieldProblem,
    Keys,
    check_choice,
    check_output_path,
    config_error,
    loose_boolean,
    read_yaml_mapping,
)
from diaforge.errors import InputError, UserError

# --------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------


def _file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "c.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_a_mapping_is_read_and_an_empty_file_is_an_empty_mapping(tmp_path: Path) -> None:
    assert read_yaml_mapping(_file(tmp_path, "k: 3\nname: x\nflag: true\n")) == {
        "k": 3,
        "name": "x",
        "flag": True,
    }
    assert read_yaml_mapping(_file(tmp_path, "")) == {}
    assert read_yaml_mapping(_file(tmp_path, "# only a comment\n")) == {}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the line of the problem (the document ends on line 2) and PyYAML's own words
        ("roles: [1\n", "c.yaml:2: invalid YAML: expected ',' or ']', but got '<stream end>'"),
        ("- 1\n- 2\n", "c.yaml: must be a mapping of keys to values, not a list"),
        ("just words\n", "c.yaml: must be a mapping of keys to values, not a single value"),
        (
            "plots: off\n",
            "c.yaml, field 'plots': ambiguous value off: write true or false (or \"off\" for a string)",
        ),
        (
            "roles:\n  user: {stream: yes}\n",
            "c.yaml, field 'roles.user.stream': ambiguous value yes: write true or false (or \"yes\" for a string)",
        ),
        (
            "k: 2\nk: 3\n",
            "c.yaml, line 2, field 'k': duplicate key 'k' (first set on line 1); YAML would keep only the last, "
            "so remove one of them",
        ),
        (b"# caf\xe9\nk: 2\n", "c.yaml, line 1: not UTF-8 text: byte 0xe9 at column 6"),
    ],
    ids=["syntax", "list", "scalar", "loose-boolean", "nested-loose-boolean", "duplicate", "not-utf8"],
)
def test_every_failure_is_one_line_starting_with_the_file(
    tmp_path: Path, text: str | bytes, expected: str
) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(InputError) as caught:
        read_yaml_mapping(path)
    line = str(caught.value)
    assert "\n" not in line
    assert line.startswith(f"{tmp_path}/c.yaml")
    assert line.removeprefix(f"{tmp_path}/").startswith(expected)


def test_a_missing_file_is_named_with_what_it_should_have_been(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        read_yaml_mapping(tmp_path / "r.yaml", what="recipe file")
    assert str(caught.value) == f"{tmp_path}/r.yaml: recipe file not found"
    with pytest.raises(InputError, match=r"config file not found$"):
        read_yaml_mapping(tmp_path / "c.yaml")


def test_loose_boolean_finds_the_first_yaml_1_1_spelling() -> None:
    assert loose_boolean("a: true\nb: false\nc: 'no'\n") is None
    assert loose_boolean("a: true\nb: {c: [1, On]}\nd: no\n") == ("b.c", "On")


# --------------------------------------------------------------------------------------------
# pydantic's refusals
# --------------------------------------------------------------------------------------------


class _Role(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    temperature: float | None = None
    retries: int = Field(6, ge=0)


class _Config(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)

    k: int = Field(5, ge=1)
    share: float = Field(0.0, ge=0.0, le=1.0)
    jobs: int = Field(8, ge=1, le=1024)
    name: str = "x"
    quiet: bool = False
    tags: list[str] = Field(default_factory=list)
    budget: int | str = "auto"
    roles: dict[str, _Role] = Field(default_factory=dict)
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    shards: int = Field(1, ge=1)
    index: int = Field(0, ge=0)
    out: str = "run"

    @field_validator("out")
    @classmethod
    def _output_path(cls, value: str) -> str:
        return check_output_path(value)

    @model_validator(mode="after")
    def _index_below_shards(self) -> _Config:
        if self.index >= self.shards:
            raise FieldProblem(f"index must lie in [0, {self.shards - 1}]", "index")
        return self


TOP = Keys([*_Config.model_fields, "backend"], word="config key", renamed={"phrasing": "name"})
ROLE = Keys(list(_Role.model_fields), word="backend setting", otherwise=" (see _Role)")
NOTES = {"jobs": "a server queues requests past its own limit anyway"}
SHAPES = {"prices": "must map a model to {input: USD}"}


def _line(raw: dict) -> str:
    with pytest.raises(ValidationError) as caught:
        _Config.model_validate(raw)
    err = config_error(
        caught.value, "c.yaml", raw, keys=lambda parent: ROLE if parent else TOP, notes=NOTES, shapes=SHAPES
    )
    assert isinstance(err, InputError)
    return str(err)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"k": "five"}, "c.yaml, field 'k': must be an integer, got 'five'"),
        ({"k": 2.7}, "c.yaml, field 'k': must be an integer, got 2.7"),
        ({"k": True}, "c.yaml, field 'k': must be an integer, got true"),
        ({"k": 0}, "c.yaml, field 'k': must be at least 1, got 0"),
        ({"index": -1}, "c.yaml, field 'index': must be 0 or more, got -1"),
        ({"share": "half"}, "c.yaml, field 'share': must be a number, got 'half'"),
        ({"share": 1.5}, "c.yaml, field 'share': must be at most 1.0, got 1.5"),
        ({"share": float("inf")}, "c.yaml, field 'share': must be a finite number, got inf"),
        (
            {"jobs": 100000},
            "c.yaml, field 'jobs': must be at most 1,024, got 100000; a server queues requests past its own "
            "limit anyway",
        ),
        ({"name": None}, "c.yaml, field 'name': must be a string, got null"),
        ({"quiet": "no"}, "c.yaml, field 'quiet': must be true or false, got 'no'"),
        ({"tags": "a"}, "c.yaml, field 'tags': must be a list, got 'a'"),
        ({"tags": ["a", 3]}, "c.yaml, field 'tags': must be a string, got 3"),  # the list's key, not 'tags.1'
        ({"budget": 1.5}, "c.yaml, field 'budget': must be an integer, got 1.5"),  # not 'budget.int'
        ({"roles": {"user": []}}, "c.yaml, field 'roles.user': must be a mapping, got list"),
        ({"roles": {"user": {"retries": [1]}}}, "c.yaml, field 'roles.user.retries': must be an integer, got list"),
        ({"prices": {"m": 3}}, "c.yaml, field 'prices': must map a model to {input: USD}"),
        ({"shards": 2, "index": 2}, "c.yaml, field 'index': index must lie in [0, 1]"),
        ({"out": ""}, "c.yaml, field 'out': must name a file or folder to write, got ''"),
        ({"out": "  "}, "c.yaml, field 'out': must name a file or folder to write, got only white space"),
        ({"shard": 3}, "c.yaml: unknown config key 'shard'; did you mean 'shards'?"),
        ({"phrasing": "y"}, "c.yaml: unknown config key 'phrasing'; did you mean 'name'?"),
        ({"roles": {"user": {"temprature": 1.0}}}, "c.yaml, field 'roles.user': unknown backend setting "
         "'temprature'; did you mean 'temperature'?"),
        ({"roles": {"user": {"zzz": 1}}}, "c.yaml, field 'roles.user': unknown backend setting 'zzz' (see _Role)"),
        # an unknown key is named before any other problem: a misspelt key explains the rest
        ({"k": 0, "qiet": True}, "c.yaml: unknown config key 'qiet'; did you mean 'quiet'?"),
    ],
)  # fmt: skip
def test_the_first_problem_is_one_line_naming_the_file_and_the_key(raw: dict, expected: str) -> None:
    assert _line(raw) == expected


def test_check_choice_names_the_key_and_the_choices() -> None:
    assert check_choice("mode", "b", ("a", "b")) == "b"
    with pytest.raises(ValueError) as caught:
        check_choice("mode", "c", ("a", "b"))
    assert str(caught.value) == "mode must be one of a, b, got 'c'"


def test_a_field_problem_is_a_user_error_and_a_value_error() -> None:
    """pydantic turns a ValueError raised in a validator into its error; raised anywhere else it
    is still a one-line `UserError` (exit 2)."""
    problem = FieldProblem("too many", "k")
    assert isinstance(problem, ValueError) and isinstance(problem, UserError)
    assert (str(problem), problem.field, problem.exit_code) == ("too many", "k", 2)
