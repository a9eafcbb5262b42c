"""The smaller entry points (bench, diaforge.train.preview, diaforge.train.merge, the scripts) document every option
and show its default, like `python -m diaforge.data_gen` and `python -m diaforge.eval` (whose whole parser trees
are walked in tests/data_gen/test_cli.py and tests/eval/test_cli_help.py).

Each entry point's parser is caught at its `parse_known_args`, before the command does any work.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable

import pytest

from diaforge.cliargs import DefaultsHelpFormatter


def _script_main(name: str) -> Callable[..., object]:
    return importlib.import_module(f"scripts.{name}").main


ENTRY_POINTS = {
    "diaforge.bench.run": lambda: importlib.import_module("diaforge.bench.run").main,
    "diaforge.train.preview": lambda: importlib.import_module("diaforge.train.preview").main,
    "diaforge.train.merge": lambda: importlib.import_module("diaforge.train.merge").main,
    "diaforge.eval.serve": lambda: importlib.import_module("diaforge.eval.serve").main,
    "scripts/check_near_duplicates.py": lambda: _script_main("check_near_duplicates"),
    "scripts/measure_value_shapes.py": lambda: _script_main("measure_value_shapes"),
}


class _Caught(Exception):
    pass


def _parser_of(main: Callable[..., object], monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    caught: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        caught.append(self)
        raise _Caught

    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
    monkeypatch.setattr(sys, "argv", ["prog"])
    with pytest.raises(_Caught):
        try:
            main([])
        except TypeError:  # a main() that reads sys.argv itself
            main()
    return caught[0]


def _shows_default(action: argparse.Action) -> bool:
    """True when the option has a default worth showing and its help line does not show it."""
    text = DefaultsHelpFormatter("prog")._get_help_string(action).lower()
    return "default" in text


def _has_default_to_show(action: argparse.Action) -> bool:
    d = action.default
    if d is None or d is argparse.SUPPRESS or (isinstance(d, list | tuple) and not d):
        return False
    return bool(action.option_strings) or action.nargs in ("?", "*")


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_option_has_help_and_shows_its_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    parser = _parser_of(ENTRY_POINTS[name](), monkeypatch)
    assert parser.formatter_class is DefaultsHelpFormatter, f"{name}: help does not show defaults"
    actions = [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]
    assert actions, name
    missing = [a.dest for a in actions if not (a.help or "").strip()]
    assert not missing, f"{name}: options without help: {missing}"
    hidden = [a.dest for a in actions if _has_default_to_show(a) and not _shows_default(a)]
    assert not hidden, f"{name}: defaults not shown: {hidden}"


def test_the_formatter_appends_defaults() -> None:
    parser = argparse.ArgumentParser(prog="p", formatter_class=DefaultsHelpFormatter)
    parser.add_argument("--k", type=int, default=5, help="how many")
    parser.add_argument("--fast", action="store_true", help="go fast")
    parser.add_argument("--out", help="where (default: stdout)")
    parser.add_argument("--tags", nargs="*", default=[], help="tags")
    text = " ".join(parser.format_help().split())
    assert "how many (default: 5)" in text
    assert "go fast (default: off)" in text
    assert "where (default: stdout)" in text and "stdout) (default" not in text
    assert "tags (default" not in text
