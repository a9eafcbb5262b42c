"""`python -m diaforge.pipeline demo|demo-curve` (also `diaforge demo`, `diaforge demo-curve`, `make demo`,
`make demo-curve`): the demo's command line.

Every option has help and shows its default; the bundled files (recipe, catalogue, benchmark) show
where they were found. A bad command line or setting is one line on stderr and exit code 2; a
stage whose command fails ends the demo with exit code 1 after that command's own output.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from diaforge.pipeline.demo import DEFAULT_CURVE_SIZES, FLOORS, DemoConfig, run_demo

from diaforge.cliargs import (
    DefaultsHelpFormatter,
    OneLineArgumentParser,
    non_negative_int,
    output_folder,
    positive_int,
    share,
)
from diaforge.console import results_only_on_stdout
from diaforge.errors import InputError, command_main

COMMANDS = {
    "demo": "the whole loop on SmolLM2 (what `make demo` runs): data, training, evaluation, report",
    "demo-curve": "train at several corpus sizes and plot dynamic Acc against training samples",
}


def build_parser() -> argparse.ArgumentParser:
    """The `python -m diaforge.pipeline` parser: `demo` and `demo-curve`, with the options they share."""
    parser = OneLineArgumentParser(
        prog="python -m diaforge.pipeline",
        description="The demo: data, training and evaluation in one resumable command.",
        formatter_class=DefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    defaults = DemoConfig()
    for name, help_text in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=DefaultsHelpFormatter)
        _add_shared_options(p, defaults)
        if name == "demo":
            p.add_argument(
                "--train-dialogues",
                type=positive_int,
                help="override the recipe's max_dialogues (default: the recipe's)",
            )
            p.add_argument(
                "--floors",
                default=",".join(FLOORS),
                help="comma-separated reference policies evaluated beside the models",
            )
            p.set_defaults(func=_cmd_demo)
        else:
            p.add_argument(
                "--sizes",
                default=",".join(map(str, DEFAULT_CURVE_SIZES)),
                help="comma-separated training dialogue counts",
            )
            p.set_defaults(func=_cmd_curve)
    return parser


def _add_shared_options(p: argparse.ArgumentParser, defaults: DemoConfig) -> None:
    p.add_argument(
        "--out", type=output_folder, default=defaults.out, help="demo folder, under the working folder"
    )
    p.add_argument(
        "--model-dir", type=output_folder, default=defaults.model_dir, help="where SmolLM2 is materialised"
    )
    p.add_argument("--recipe", type=Path, default=defaults.recipe, help="training recipe")
    p.add_argument("--catalogue", type=Path, default=defaults.catalogue, help="training tool catalogue")
    p.add_argument("--dialogues", type=positive_int, default=defaults.dialogues, help="dialogues to generate")
    p.add_argument("--bench", type=Path, default=defaults.bench, help="held-out benchmark")
    p.add_argument("--limit", type=positive_int, default=defaults.limit, help="benchmark dialogues evaluated")
    p.add_argument(
        "--modes",
        default=defaults.modes,
        help="evaluation modes of every run, comma-separated (static,dynamic; the curve is dynamic only)",
    )
    p.add_argument(
        "--no-tool-limit",
        type=non_negative_int,
        default=defaults.no_tool_limit,
        help="dialogues of the no-tool split evaluated beside them (default 0: none; 20: all of it)",
    )
    p.add_argument(
        "--t-max", type=positive_int, default=defaults.t_max, help="turn pairs of the dynamic loop"
    )
    p.add_argument(
        "--batch-size",
        type=positive_int,
        default=defaults.batch_size,
        help="replies the hf backend decodes at once (continuous batching)",
    )
    p.add_argument(
        "--seed", type=non_negative_int, default=defaults.seed, help="seed of the corpus and the sample"
    )
    p.add_argument(
        "--reasoning",
        choices=("summary", "lookup"),
        default=defaults.reasoning,
        help="style of the teacher's thoughts in the corpus (diaforge data generate --reasoning)",
    )
    p.add_argument(
        "--constrain-calls",
        choices=("on", "off"),
        default="on" if defaults.constrain_calls else "off",
        help="constrained call decoding for every model evaluated (diaforge eval run --constrain-calls)",
    )
    p.add_argument(
        "--ground-values",
        choices=("on", "off"),
        default="on" if defaults.ground_values else "off",
        help="hold call values to the user's words (diaforge eval run --ground-values); only with "
        "--constrain-calls on",
    )
    p.add_argument(
        "--copy-thoughts",
        choices=("on", "off"),
        default="on" if defaults.copy_thoughts else "off",
        help="hold the copy spans of lookup thoughts to the tool listing (diaforge eval run "
        "--copy-thoughts); only with --constrain-calls on",
    )
    p.add_argument(
        "--no-tool-share",
        type=share,
        default=defaults.no_tool_share,
        help="share of retrieval misses in the corpus (diaforge data generate --no-tool-share)",
    )
    p.add_argument(
        "--device",
        default=defaults.device,
        help="where training and the models' evaluations run: cpu, cuda or cuda:N (a GPU trains with "
        "accelerate_configs/single_gpu.yaml and needs a GPU recipe: recipes/smollm2-135m/curve-gpu.yaml)",
    )
    p.add_argument("--threads", type=positive_int, help="torch threads (default: every core)")
    p.add_argument("--fresh", action="store_true", help="start over instead of resuming")


def _config(args: argparse.Namespace) -> DemoConfig:
    return DemoConfig(
        out=args.out,
        model_dir=args.model_dir,
        recipe=args.recipe,
        catalogue=args.catalogue,
        dialogues=args.dialogues,
        bench=args.bench,
        limit=args.limit,
        modes=args.modes,
        no_tool_limit=args.no_tool_limit,
        t_max=args.t_max,
        batch_size=args.batch_size,
        seed=args.seed,
        reasoning=args.reasoning,
        constrain_calls=args.constrain_calls == "on",
        ground_values=args.ground_values == "on",
        copy_thoughts=args.copy_thoughts == "on",
        no_tool_share=args.no_tool_share,
        threads=args.threads,
        fresh=args.fresh,
        device=args.device,
    )


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag} must be comma-separated whole numbers, got {text!r}") from None


def _cmd_demo(args: argparse.Namespace) -> None:
    cfg = _config(args)
    cfg.train_dialogues = args.train_dialogues
    cfg.floors = tuple(f.strip() for f in args.floors.split(",") if f.strip())
    run_demo(cfg)


def _cmd_curve(args: argparse.Namespace) -> None:
    from diaforge.pipeline.curve import run_curve

    run_curve(_config(args), _ints(args.sizes, "--sizes"))


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m diaforge.pipeline COMMAND ...`; returns the exit status."""
    args = build_parser().parse_args(argv)
    with results_only_on_stdout():
        args.func(args)
    return 0
