"""`diaforge.cliargs.add_field_flags`: a config's fields as flags, each documented once (on its
field): the name, the reader its type and bounds call for, the choices, the default in the help,
and unset flags left None so that a config file's key stands. And `output_path`, the type of every
flag that names a file or folder to write."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from diaforge.cliargs import (
    DefaultsHelpFormatter,
    OneLineArgumentParser,
    add_field_flags,
    output_folder,
    output_path,
)

MODES = ("fast", "slow")


class _Run(BaseModel):
    num_items: int = Field(100, ge=1, le=1000, description="Items to make.")
    k: int = Field(5, ge=1, description="Neighbours per item.")
    index: int = Field(0, ge=0, description="Which shard.")
    seed: int = Field(0, description="Run seed.")
    share: float = Field(0.0, ge=0.0, le=1.0, description="Share of misses.")
    limit: int | None = Field(None, ge=1, description="Stop after this many. Default: unset, all.")
    mode: str = Field("fast", description="`fast` or `slow`.")
    tags: list[str] = Field(default_factory=list, description="Labels of the run.")
    strict: bool = Field(False, description="Refuse what is doubtful.")
    quiet: bool = Field(False, description="No progress bar.")
    plots: bool = Field(True, description="Write the plots (25 % of the time).")
    out: str | None = Field(None, description="Run folder.")


def _parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog="run", formatter_class=DefaultsHelpFormatter)
    names = [n for n in _Run.model_fields if n != "plots"]
    add_field_flags(parser, _Run.model_fields, names, choices={"mode": MODES}, switches=("quiet",))
    add_field_flags(parser, _Run.model_fields, ["plots"], off={"plots": "--no-plots"})
    return parser


def test_flags_read_values_as_their_fields_take_them() -> None:
    argv = "--num-items 7 --k 2 --index 0 --seed -3 --share 0.25 --limit 4 --mode slow --tags a b"
    args = _parser().parse_args([*argv.split(), "--strict", "on", "--quiet", "--no-plots", "--out", "x"])
    assert vars(args) == {
        "num_items": 7,
        "k": 2,
        "index": 0,
        "seed": -3,
        "share": 0.25,
        "limit": 4,
        "mode": "slow",
        "tags": ["a", "b"],
        "strict": True,
        "quiet": True,
        "plots": False,
        "out": "x",
    }


def test_a_flag_not_given_is_none_so_the_config_key_stands() -> None:
    assert set(vars(_parser().parse_args([])).values()) == {None}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("--num-items 0", "argument --num-items: must be at least 1, got 0"),
        ("--num-items 1001", "argument --num-items: must be at most 1,000, got 1,001"),
        ("--k five", "argument --k: expected a whole number, got 'five'"),
        ("--index -1", "argument --index: must be 0 or more, got -1"),
        ("--seed x", "argument --seed: invalid int value: 'x'"),
        ("--share 1.5", "argument --share: must lie in [0, 1], got '1.5'"),
        ("--limit 0", "argument --limit: must be at least 1, got 0"),
        ("--mode medium", "argument --mode: invalid choice: 'medium' (choose from 'fast', 'slow')"),
        ("--strict maybe", "argument --strict: expected on or off, got 'maybe'"),
    ],
)
def test_a_bad_value_is_one_line(argv: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        _parser().parse_args(argv.split())
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"error: run: {message} (see --help)\n"


def test_the_help_is_the_field_documentation_and_its_default_once() -> None:
    text = " ".join(_parser().format_help().split())
    for shown in (
        "--num-items NUM_ITEMS Items to make (default: 100)",
        "--seed SEED Run seed (default: 0)",
        "--limit LIMIT Stop after this many. Default: unset, all.",  # the text speaks of its default
        "--mode {fast,slow} fast or slow (default: fast)",  # backquotes dropped
        "--tags [TAGS ...] Labels of the run (default: none)",
        "--strict {on,off} Refuse what is doubtful (default: off)",
        "--quiet No progress bar (default: off)",
        "--no-plots turn off plots (on by default): write the plots (25 % of the time).",
        "--out OUT Run folder (default: none)",
    ):
        assert shown in text, shown
    assert text.count("(default:") == 10  # every flag but --limit and --no-plots, each once


def _outputs() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(prog="run")
    parser.add_argument("--out", type=output_path)
    parser.add_argument("--model-dir", type=output_folder)
    return parser


@pytest.mark.parametrize(
    ("value", "shown"),
    [("", "''"), ("   ", "only white space"), ("\t", "only white space")],
)
@pytest.mark.parametrize("flag", ["--out", "--model-dir"])
def test_an_empty_or_blank_output_flag_is_one_line_naming_it(
    flag: str, value: str, shown: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--out ""` would write into the working folder, `--out " "` into a folder named by a space."""
    with pytest.raises(SystemExit) as stop:
        _outputs().parse_args([flag, value])
    assert stop.value.code == 2
    assert capsys.readouterr().err == (
        f"error: run: argument {flag}: must name a file or folder to write, got {shown} (see --help)\n"
    )


def test_an_output_flag_keeps_the_path_as_given() -> None:
    args = _outputs().parse_args(["--out", " a b ", "--model-dir", "models/x"])
    assert (args.out, args.model_dir) == (" a b ", Path("models/x"))
