"""The flags of `diaforge demo` and `diaforge demo-curve` are made from the fields of `DemoConfig`
(`diaforge.cliargs.add_field_flags`): each field is exactly one flag, its help the field's
documentation with its default, its value read as the field takes it, and the config built from
the flags given with every other field at its default. A field added to `DemoConfig` is a flag of
both commands with no edit to `diaforge.pipeline.cli`."""

from __future__ import annotations

import argparse
from pathlib import Path, PurePath
from typing import Any

import pytest
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as pydantic_dataclass

from diaforge.cliargs import field_help
from diaforge.data_gen.wording import REASONING_STYLES
from diaforge.llm.decoding import DecodingConfig
from diaforge.pipeline import cli
from diaforge.pipeline.curve import DEMO_ONLY_FIELDS
from diaforge.pipeline.demo_config import DemoConfig, PositiveInt

#: The fields with a flag: `DemoConfig`'s, and for its nested `decoding` the fields of `DecodingConfig`.
FIELDS = {**DemoConfig.__pydantic_fields__, **DecodingConfig.__pydantic_fields__}
#: The options of each command that are not `DemoConfig` fields.
OWN_OPTIONS = {"demo": set(), "demo-curve": {"sizes"}}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def _shown(value: Any) -> str:
    """A default as the help shows it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


#: The commands whose flags come from `DemoConfig` (the pipeline's `rollouts` has its own options).
SUBPARSERS = {k: v for k, v in _subparsers(cli.build_parser()).items() if k in ("demo", "demo-curve")}
#: The demo's decoding rules (its defaults, not `eval run`'s).
DEMO_DECODING = DemoConfig().decoding.as_dict()


def test_the_curve_takes_every_field_but_the_demos_own() -> None:
    assert set(DEMO_ONLY_FIELDS) <= set(FIELDS)
    assert set(cli.demo_flags("demo")) == set(FIELDS) - {"decoding"}
    assert cli.demo_flags("demo-curve") == [n for n in cli.demo_flags("demo") if n not in DEMO_ONLY_FIELDS]


@pytest.mark.parametrize("command", sorted(SUBPARSERS))
def test_every_field_is_exactly_one_flag_with_its_help_and_default(command: str) -> None:
    parser = SUBPARSERS[command]
    formatter = parser._get_formatter()
    options = _options(parser)
    assert {a.dest for a in options} == set(cli.demo_flags(command)) | OWN_OPTIONS[command]
    for name in cli.demo_flags(command):
        (action,) = [a for a in options if a.dest == name]
        assert action.option_strings == ["--" + name.replace("_", "-")], name
        assert action.default is None, name  # a flag left out leaves the field's default
        text = " ".join(formatter._expand_help(action).split())
        documentation = field_help(FIELDS[name]).replace("%%", "%").rstrip(".")
        default = FIELDS[name].get_default(call_default_factory=True)
        if name in DEMO_DECODING:  # the demo's own default replaces the documentation's sentence
            documentation, default = documentation.rsplit(" Default", 1)[0].rstrip("."), DEMO_DECODING[name]
        assert documentation and documentation in text, name
        if "default" not in documentation.lower():  # else the documentation says it
            assert text.endswith(f"(default: {_shown(default)})"), (name, text)


def test_the_reasoning_styles_are_the_generators() -> None:
    for parser in SUBPARSERS.values():
        (action,) = [a for a in _options(parser) if a.dest == "reasoning"]
        assert tuple(action.choices) == REASONING_STYLES


@pytest.mark.parametrize("command", sorted(SUBPARSERS))
def test_no_flag_given_is_the_default_config(command: str) -> None:
    assert cli.demo_config(cli.build_parser().parse_args([command])) == DemoConfig()


#: A value for every field, as the command line gives it and as the config holds it.
GIVEN = {
    "out": ("demo2", Path("demo2")),
    "model_dir": ("models/m", Path("models/m")),
    "recipe": ("r.yaml", Path("r.yaml")),
    "catalogue": ("c.json", Path("c.json")),
    "dialogues": ("12", 12),
    "bench": ("b.jsonl", Path("b.jsonl")),
    "limit": ("3", 3),
    "modes": ("static,dynamic", "static,dynamic"),
    "no_tool_limit": ("5", 5),
    "t_max": ("2", 2),
    "batch_size": ("4", 4),
    "seed": ("7", 7),
    "reasoning": ("summary", "summary"),
    "loop_stop": ("off", False),
    "constrain_calls": ("off", False),
    "ground_values": ("off", False),
    "copy_thoughts": ("off", False),
    "speculate": ("4", 4),
    "unaided_limit": ("10", 10),
    "no_tool_share": ("0.25", 0.25),
    "device": ("cuda:1", "cuda:1"),
    "threads": ("2", 2),
    "fresh": (None, True),
    "train_dialogues": ("9", 9),
    "floors": ("reference, random", ("reference", "random")),
}


def test_every_flag_sets_its_field() -> None:
    assert set(GIVEN) == set(FIELDS) - {"decoding"}, "give the new field a value here"
    argv = ["demo"]
    for name, (text, _) in GIVEN.items():
        argv += ["--" + name.replace("_", "-"), *([] if text is None else [text])]
    cfg = cli.demo_config(cli.build_parser().parse_args(argv))
    for name, (_, value) in GIVEN.items():
        holder, default = (
            (cfg.decoding, DemoConfig().decoding) if name in DEMO_DECODING else (cfg, DemoConfig())
        )
        assert getattr(holder, name) == value, name
        assert getattr(holder, name) != getattr(default, name), name  # the flag changed it


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ("--limit 0", "argument --limit: must be at least 1, got 0"),
        ("--threads 0", "argument --threads: must be at least 1, got 0"),
        ("--no-tool-limit -1", "argument --no-tool-limit: must be 0 or more, got -1"),
        ("--seed -1", "argument --seed: must be 0 or more, got -1"),
        ("--no-tool-share 1.5", "argument --no-tool-share: must lie in [0, 1], got '1.5'"),
        ("--reasoning plain", "argument --reasoning: invalid choice: 'plain'"),
        ("--constrain-calls maybe", "argument --constrain-calls: expected on or off, got 'maybe'"),
        ("--fresh yes", "unrecognized arguments: yes"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_flag(
    argv: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in SUBPARSERS:
        with pytest.raises(SystemExit) as stop:
            cli.build_parser().parse_args([command, *argv.split()])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("command", ["demo", "demo-curve"])
def test_a_new_field_is_a_flag_with_no_edit_to_the_cli(command: str, monkeypatch) -> None:
    @pydantic_dataclass(config=ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))
    class Wider(DemoConfig):
        warmup_rounds: PositiveInt = 3
        """Rounds played before the measured ones."""

    monkeypatch.setattr(cli, "DemoConfig", Wider)
    parser = _subparsers(cli.build_parser())[command]
    (action,) = [a for a in _options(parser) if a.dest == "warmup_rounds"]
    assert action.option_strings == ["--warmup-rounds"]
    help_text = " ".join(parser._get_formatter()._expand_help(action).split())
    assert help_text == "Rounds played before the measured ones (default: 3)"
    cfg = cli.demo_config(cli.build_parser().parse_args([command, "--warmup-rounds", "5"]))
    assert isinstance(cfg, Wider) and cfg.warmup_rounds == 5


def test_paths_are_paths_from_the_flags_and_from_python() -> None:
    cfg = DemoConfig(out="o", recipe=str(DemoConfig().recipe))  # type: ignore[arg-type]
    assert all(isinstance(getattr(cfg, n), PurePath) for n in ("out", "model_dir", "recipe", "bench"))
