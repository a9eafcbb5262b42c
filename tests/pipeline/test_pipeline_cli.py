"""`python -m diaforge.pipeline`'s doors: every option has help and shows its default, a bad command line is
one line with exit code 2, and the files the demo reads are found inside the installed packages
from a working folder outside the checkout (not through the source tree, not under the cwd)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.cliargs import DefaultsHelpFormatter
from diaforge.packaged import PackagedFileError, packaged_path
from diaforge.pipeline.cli import build_parser, main
from diaforge.pipeline.demo import cpu_accelerate_config
from diaforge.pipeline.demo_config import DemoConfig, demo_recipe


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


SUBPARSERS = _subparsers(build_parser())


def test_the_commands_are_demo_demo_curve_and_rollouts() -> None:
    assert set(SUBPARSERS) == {"demo", "demo-curve", "rollouts"}


@pytest.mark.parametrize("name", sorted(SUBPARSERS))
def test_every_option_has_help_and_shows_its_default(name: str) -> None:
    parser = SUBPARSERS[name]
    assert parser.formatter_class is DefaultsHelpFormatter
    formatter = parser._get_formatter()
    options = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert not [a.dest for a in options if not (a.help or "").strip()]
    hidden = [
        a.dest
        for a in options
        if a.default not in (None, False) and "default" not in formatter._expand_help(a).lower()
    ]
    assert not hidden, f"{name}: defaults not shown: {hidden}"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--limit", "0"], "--limit"),
        (["demo-curve", "--sizes", "10,x"], "--sizes"),
        (["rollouts", "--model", "m", "--out", "o", "--num-dialogues", "0"], "--num-dialogues"),
        (["demo", "--recipe", "no/such/recipe.yaml"], "--recipe"),
        (["nothing"], "invalid choice"),
    ],
)
def test_bad_command_lines_are_one_line(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_bundled_files_are_found_from_a_folder_outside_the_checkout(tmp_path: Path, monkeypatch) -> None:
    """From an empty working folder the defaults are the bundled recipe, catalogue, benchmark and
    accelerate config: absolute paths inside the installed packages, none under the cwd."""
    monkeypatch.chdir(tmp_path)
    cfg = DemoConfig()
    cfg.validate()
    bundled = {
        "recipe": cfg.recipe,
        "catalogue": cfg.catalogue,
        "bench": cfg.bench,
        "accelerate config": cpu_accelerate_config(),
    }
    for name, path in bundled.items():
        assert path.is_absolute() and path.is_file(), name
        assert not path.resolve().is_relative_to(tmp_path.resolve()), name
    assert cfg.recipe.resolve() == ROOT / "recipes" / "smollm2-135m" / "demo.yaml"
    assert not cfg.out.is_absolute() and not cfg.model_dir.is_absolute()  # outputs: under the cwd


def test_the_demo_recipe_reads_its_system_prompt_from_any_folder(tmp_path: Path, monkeypatch) -> None:
    """The recipe names its system prompt beside itself, so training on it finds the prompt from any
    working folder (the demo trains in the user's folder, on the bundled recipe)."""
    from diaforge.train.config import device_defaults, parse_recipe

    monkeypatch.chdir(tmp_path)
    args, *_ = parse_recipe([str(demo_recipe())], device_defaults=device_defaults(False))
    assert Path(args.system_prompt_file).resolve() == ROOT / "recipes" / "smollm2-135m" / "system_prompt.txt"


def test_a_missing_bundled_file_is_one_line_naming_the_package() -> None:
    with pytest.raises(PackagedFileError, match=r"nope.yaml is not in package 'diaforge.recipes'"):
        packaged_path("diaforge.recipes", "nope.yaml")
    with pytest.raises(PackagedFileError, match=r"package 'no_such_package_here' is not installed"):
        packaged_path("no_such_package_here", "x")
