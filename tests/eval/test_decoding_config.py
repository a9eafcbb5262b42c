"""The decoding rules are one object, `DecodingConfig` (`diaforge.llm.decoding`): `EvalConfig` and
`DemoConfig` nest it, a YAML config gives it as a ``decoding:`` mapping, ``eval run`` and the demo
make one flag per field of it, what the rules need is checked in `DecodingConfig.check`, and
``metrics.json["decoding"]`` records it whole with the executor that applied it."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest
from pydantic import ConfigDict, StrictBool
from pydantic.dataclasses import dataclass

from diaforge.errors import InputError
from diaforge.eval import EvalConfig, load_eval_config
from diaforge.eval import eval_config as eval_config_module
from diaforge.eval.cli import build_parser
from diaforge.eval.eval_config import EXAMPLE_CONFIG, flag_keys
from diaforge.llm.decoding import DecodingConfig

ON = DecodingConfig(constrain_calls=True, ground_values=True, copy_thoughts=True)


def _load_flags(*flags: str, config: Path | None = None) -> EvalConfig:
    """The `EvalConfig` of an ``eval run`` command line, as `eval run` makes it."""
    argv = ["run", *(["--config", str(config)] if config else []), *flags]
    args = build_parser("run").parse_args(argv)
    return load_eval_config(args.config, **{k: getattr(args, k) for k in flag_keys()})


def test_a_yaml_decoding_mapping_loads(tmp_path: Path) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text(
        "backend: hf\ndecoding:\n  constrain_calls: true\n  ground_values: true\n  loop_stop: false\n",
        encoding="utf-8",
    )
    cfg = load_eval_config(config)
    assert cfg.decoding == DecodingConfig(loop_stop=False, constrain_calls=True, ground_values=True)
    assert isinstance(cfg.decoding, DecodingConfig)
    shipped = load_eval_config(EXAMPLE_CONFIG)  # the example spells every rule under decoding:
    assert shipped.decoding == DecodingConfig()
    assert "decoding:" in EXAMPLE_CONFIG.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("yaml", "expected"),
    [
        (
            "decoding:\n  constrain_calls: 1\n",
            "field 'decoding.constrain_calls': must be true or false, got 1",
        ),
        (
            "decoding:\n  constrain: true\n",
            "unknown decoding key 'constrain'; did you mean 'constrain_calls'?",
        ),
        ("decoding: 3\n", "field 'decoding': must be a mapping, got 3"),
    ],
)
def test_a_bad_decoding_mapping_is_one_line_naming_the_key(tmp_path: Path, yaml: str, expected: str) -> None:
    config = tmp_path / "eval.yaml"
    config.write_text(yaml, encoding="utf-8")
    with pytest.raises(InputError) as error:
        load_eval_config(config)
    assert expected in str(error.value) and str(config) in str(error.value)


def test_a_flag_and_the_yaml_key_give_the_same_config(tmp_path: Path) -> None:
    nested = tmp_path / "nested.yaml"
    nested.write_text("decoding:\n  constrain_calls: true\n  copy_thoughts: true\n", encoding="utf-8")
    flat = tmp_path / "flat.yaml"  # the flags' spelling, as older files have it
    flat.write_text("constrain_calls: true\ncopy_thoughts: true\n", encoding="utf-8")
    from_flags = _load_flags("--constrain-calls", "on", "--copy-thoughts", "on")
    expected = DecodingConfig(constrain_calls=True, copy_thoughts=True)
    assert (
        from_flags.decoding
        == load_eval_config(nested).decoding
        == load_eval_config(flat).decoding
        == expected
    )
    assert from_flags == load_eval_config(nested) == EvalConfig(decoding=expected)
    # A flag overrides its key and leaves the mapping's other keys as they are.
    over = _load_flags("--copy-thoughts", "off", "--ground-values", "on", config=nested)
    assert over.decoding == DecodingConfig(constrain_calls=True, ground_values=True)
    assert _load_flags(config=nested).decoding == expected  # no flag given: the file's keys stand


def test_the_check_refuses_what_a_rule_needs_and_what_the_executor_cannot_apply() -> None:
    DecodingConfig().check("openai")  # the loop stop alone: left out where it cannot run
    ON.check("hf")
    with pytest.raises(InputError, match=r"^--ground-values on needs --constrain-calls on \(it holds"):
        DecodingConfig(ground_values=True).check("hf")
    with pytest.raises(InputError, match=r"^--copy-thoughts on needs --constrain-calls on \(it hands"):
        DecodingConfig(copy_thoughts=True).check("hf")
    with pytest.raises(
        InputError, match=r"^--constrain-calls on, --ground-values on, --copy-thoughts on: .*vllm"
    ):
        ON.check("vllm")
    with pytest.raises(InputError, match="the random policy decodes nothing"):
        DecodingConfig(constrain_calls=True).check("random", policy=True)
    assert ON.unapplied("hf") == [] and DecodingConfig().unapplied("openai") == ["loop_stop"]
    assert DecodingConfig(speculate=4).unapplied("vllm") == ["loop_stop", "speculate"]


@pytest.mark.parametrize(("backend", "unapplied"), [("reference", ["loop_stop"]), ("random", ["loop_stop"])])
def test_metrics_record_the_whole_config_and_its_executor(backend: str, unapplied: list[str]) -> None:
    from diaforge.eval.evaluation import _settings
    from diaforge.eval.model_spec import model_spec
    from diaforge.eval.models import ModelUnderTest

    config = EvalConfig(backend=backend, decoding=DecodingConfig(loop_stop=True))
    spec, choice = model_spec(config)
    record = _settings(config, spec, choice, None, ModelUnderTest(spec), "scripted", None)["decoding"]
    assert {k: record[k] for k in dataclasses.asdict(DecodingConfig())} == config.decoding.as_dict()
    assert record["executor"] == backend and record["unapplied"] == unapplied
    assert {"greedy", "constraint_stats", "prefix_cache"} <= set(record)


@dataclass(config=ConfigDict(extra="forbid", use_attribute_docstrings=True))
class WiderDecoding(DecodingConfig):
    no_links: StrictBool = False
    """`hf`: never write a token holding ``http``. Default false."""


@dataclass(config=ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))
class WiderEvalConfig(EvalConfig):
    decoding: WiderDecoding = dataclasses.field(default_factory=WiderDecoding)


def test_a_new_decoding_field_is_a_flag_of_eval_run_with_no_other_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(eval_config_module, "EvalConfig", WiderEvalConfig)
    parser = build_parser("run")
    (run,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    (action,) = [a for a in run.choices["run"]._actions if a.dest == "no_links"]
    assert action.option_strings == ["--no-links"] and "never write a token holding http" in action.help
    cfg = _load_flags("--constrain-calls", "on", "--no-links", "on")
    assert isinstance(cfg.decoding, WiderDecoding) and cfg.decoding.no_links and cfg.decoding.constrain_calls
    assert cfg.decoding.aids() == ["constrain_calls", "no_links"]  # refused outside hf, as the others
    with pytest.raises(InputError, match=r"^--constrain-calls on, --no-links on: "):
        cfg.decoding.check("openai")


def test_a_new_decoding_field_is_a_flag_of_the_demo_with_no_other_edit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from diaforge.pipeline import cli
    from diaforge.pipeline.demo import eval_args
    from diaforge.pipeline.demo_config import DemoConfig

    @dataclass(config=ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))
    class WiderDemo(DemoConfig):
        decoding: WiderDecoding = dataclasses.field(
            default_factory=lambda: WiderDecoding(
                constrain_calls=True, ground_values=True, copy_thoughts=True
            )
        )

    monkeypatch.setattr(cli, "DemoConfig", WiderDemo)
    cfg = cli.demo_config(
        cli.build_parser().parse_args(["demo", "--no-links", "on", "--copy-thoughts", "off"])
    )
    assert isinstance(cfg, WiderDemo) and cfg.decoding.no_links and not cfg.decoding.copy_thoughts
    args = eval_args(cfg)
    assert args[args.index("--no-links") + 1] == "on" and "--copy-thoughts" not in args


def test_the_demo_decodes_with_every_aid_on_and_its_flags_say_so() -> None:
    from diaforge.pipeline import cli
    from diaforge.pipeline.demo_config import DemoConfig

    demo_on = dataclasses.replace(ON, speculate=8)  # and speculation, which changes no reply
    assert DemoConfig().decoding == demo_on
    assert cli.demo_config(cli.build_parser().parse_args(["demo", "--constrain-calls", "off"])).decoding == (
        dataclasses.replace(demo_on, constrain_calls=False)
    )
    parser = cli.build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    demo = sub.choices["demo"]
    (action,) = [a for a in demo._actions if a.dest == "ground_values"]
    text = " ".join(demo._get_formatter()._expand_help(action).split())
    assert text.endswith("(default: on)") and "Default false" not in text
