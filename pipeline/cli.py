"""`python -m diaforge.pipeline demo|demo-curve|rollouts` (also `diaforge demo`, `diaforge demo-curve`, `make demo`,
`make demo-curve`): the demo's command line.

Every option but the curve's ``--sizes`` is a field of `DemoConfig`, its flag made from the field
(`diaforge.cliargs.add_field_flags`: the name, the reader its type and bounds call for, the
choices, the help its documentation with its default), so a new field is a new flag with no edit
here. Every option has help and shows its default; the bundled files (recipe, catalogue,
benchmark) show where they were found. A bad command line or setting is one line on stderr and
exit code 2; a stage whose command fails ends the demo with exit code 1 after that command's own
output.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, add_field_flags, output_folder
from diaforge.console import results_only_on_stdout
from diaforge.errors import InputError, command_main
from diaforge.llm.decoding import decoding_class, decoding_keys
from diaforge.pipeline.curve import DEMO_ONLY_FIELDS, run_curve
from diaforge.pipeline.demo import DEFAULT_CURVE_SIZES, run_demo
from diaforge.pipeline.demo_config import CHOICES, OUTPUT_FOLDERS, SWITCHES, DemoConfig
from diaforge.pipeline.rollouts import add_rollouts

COMMANDS = {
    "demo": "the whole loop on SmolLM2 (what `make demo` runs): data, training, evaluation, report",
    "demo-curve": "train at several corpus sizes and plot dynamic Acc against training samples",
}


def build_parser() -> argparse.ArgumentParser:
    """The `python -m diaforge.pipeline` parser: `demo` and `demo-curve`, each with a flag for every
    `DemoConfig` field it takes (`demo_flags`) and the curve with its `--sizes`."""
    parser = OneLineArgumentParser(
        prog="python -m diaforge.pipeline",
        description="The demo: data, training and evaluation in one resumable command.",
        formatter_class=DefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=DefaultsHelpFormatter)
        add_field_flags(
            p,
            {**DemoConfig.__pydantic_fields__, **decoding_class(DemoConfig).__pydantic_fields__},
            demo_flags(name),
            choices=CHOICES,
            types=dict.fromkeys(OUTPUT_FOLDERS, output_folder),
            switches=SWITCHES,
            defaults=DemoConfig().decoding.as_dict(),
        )
        if name == "demo":
            p.set_defaults(func=_cmd_demo)
        else:
            # Not a DemoConfig field: the corpus sizes of the curve's points (`run_curve`'s argument).
            p.add_argument(
                "--sizes",
                default=",".join(map(str, DEFAULT_CURVE_SIZES)),
                help="comma-separated training dialogue counts",
            )
            p.set_defaults(func=_cmd_curve)
    add_rollouts(sub)
    return parser


def demo_flags(command: str) -> list[str]:
    """The `DemoConfig` fields that are flags of `command`: every one, but those the curve does not
    take (`DEMO_ONLY_FIELDS`) for ``demo-curve``; the nested `decoding` is its own fields'
    flags, in its place (``--constrain-calls``, ...)."""
    names = [
        name for name in DemoConfig.__pydantic_fields__ if command == "demo" or name not in DEMO_ONLY_FIELDS
    ]
    at = names.index("decoding")
    return [*names[:at], *decoding_keys(decoding_class(DemoConfig)), *names[at + 1 :]]


def demo_config(args: argparse.Namespace) -> DemoConfig:
    """The `DemoConfig` of a command line: the fields whose flags were given (a flag left out is
    None, so the field's default stands; a decoding flag goes into `decoding`, over the demo's)."""
    keys = demo_flags("demo")
    given = {k: v for k, v in vars(args).items() if k in keys and v is not None}
    return DemoConfig(**given)


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag} must be comma-separated whole numbers, got {text!r}") from None


def _cmd_demo(args: argparse.Namespace) -> None:
    run_demo(demo_config(args))


def _cmd_curve(args: argparse.Namespace) -> None:
    run_curve(demo_config(args), _ints(args.sizes, "--sizes"))


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m diaforge.pipeline COMMAND ...`; returns the exit status."""
    args = build_parser().parse_args(argv)
    with results_only_on_stdout():
        args.func(args)
    return 0
