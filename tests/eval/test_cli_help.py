"""`python -m diaforge.eval`'s doors: every option of every subcommand has help text and shows its default,
and a bad command line is still one line on stderr with exit code 2 (issue 15)."""

from __future__ import annotations

import argparse

import pytest

from diaforge.cliargs import DefaultsHelpFormatter
from diaforge.eval.cli import build_parser, main


def _walk(parser: argparse.ArgumentParser, path: str = "python -m diaforge.eval"):
    """(command path, parser) for the parser and every subparser under it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, f"{path} {name}")


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The user-facing arguments: everything but --help, the subcommand choice and hidden aliases."""
    return [
        a
        for a in parser._actions
        if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)
        and a.help is not argparse.SUPPRESS
    ]


def _name(action: argparse.Action) -> str:
    return "/".join(action.option_strings) or action.dest


PARSERS = list(_walk(build_parser()))
COMMANDS = [path for path, _ in PARSERS]


def test_the_walk_reaches_every_subcommand() -> None:
    names = {path.removeprefix("python -m diaforge.eval ") for path in COMMANDS}
    for command in ("run", "score", "compare", "import", "bfcl", "next-action", "dicebench", "turn-level"):
        assert command in names


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=COMMANDS)
def test_every_option_has_help(path: str, parser: argparse.ArgumentParser) -> None:
    missing = [_name(a) for a in _options(parser) if not (a.help or "").strip()]
    assert not missing, f"{path}: options without help: {', '.join(missing)}"


@pytest.mark.parametrize(("path", "parser"), PARSERS, ids=COMMANDS)
def test_every_default_is_shown(path: str, parser: argparse.ArgumentParser) -> None:
    """A default worth showing (not None, False or empty) appears in the option's help line, either
    written in the help text or appended by `DefaultsHelpFormatter`."""
    assert parser.formatter_class is DefaultsHelpFormatter, f"{path}: help does not show defaults"
    formatter = parser._get_formatter()
    hidden = []
    for action in _options(parser):
        default = action.default
        if default is None or default is False or (isinstance(default, list | tuple) and not default):
            continue
        shown = formatter._expand_help(action)
        if "default" not in shown.lower() or (
            "(default: " in shown and str(default) not in shown.replace("%%", "%")
        ):
            hidden.append(f"{_name(action)} ({default!r})")
    assert not hidden, f"{path}: defaults not shown: {', '.join(hidden)}"


def test_help_lists_defaults_and_exits_cleanly(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        build_parser().parse_args(["bfcl", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "(default: hf)" in out
    assert "(default: 384)" in out
    assert "allowed accuracy drop per category (default 0.02)" in out


@pytest.mark.parametrize(
    "argv",
    [["bfcl", "--model", "m", "--limit", "0"], ["run", "--nope"], ["dicebench", "run"], ["nothing"]],
)
def test_bad_command_lines_stay_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: python -m diaforge.eval")


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def test_own_commands_leave_the_peer_commands_out_and_the_rest_keep_them() -> None:
    from diaforge.eval.cli import OWN_COMMANDS

    everything = _commands(build_parser())
    assert {"run", "score", "compare", "bfcl", "import", "next-action", "turn-level"} <= everything
    for command in OWN_COMMANDS:
        assert _commands(build_parser(command)) == set(OWN_COMMANDS)
    assert _commands(build_parser("bfcl")) == everything
    assert _commands(build_parser("--help")) == everything
