"""`python -m diaforge.eval run|score|compare|import|bfcl|next-action|turn-level`: evaluate a checkpoint,
rescore transcripts, compare runs; import peer benchmarks; the BFCL parity check; next-action
prediction and turn-level function calling (`diaforge.eval.peers`).

``eval run`` is `diaforge.eval.evaluate` behind a command line: ``--config FILE`` (a YAML mapping of
`diaforge.eval.EvalConfig` keys, e.g. ``eval/configs/heldout.yaml``) and the flags given over it make the
config; a flag overrides its key.

The commands that load a model prompt it in the format it was trained with: the
``prompt_format.json`` of its folder (`diaforge.eval.models.choose_prompt_format`). ``--prompt-mode``,
``--tool-style``, ``--history-reasoning``, ``--target-reasoning`` and ``--system-prompt-file``
override it, each with a one-line warning when it contradicts the file; ``--prompt-format FILE``
uses another model's file (a base model in its tuned model's format). Every command that writes
a run folder takes ``--wandb-project`` (and ``--wandb-entity``, ``--wandb-run-name``,
``--wandb-tags``); W&B runs offline into the run folder when there is no API key.

Every user-caused error prints one line to stderr and exits with code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from diaforge.cliargs import add_field_flags, output_path
from diaforge.console import emit, quiet_library_bars, results_only_on_stdout
from diaforge.errors import command_main
from diaforge.eval.cli_options import (
    EvalArgumentParser,
    add_wandb_args,
    max_new_tokens_arg,
    model_options,
    wandb_config,
)
from diaforge.eval.model_spec import check_device
from diaforge.llm.decoding import decoding_class, decoding_keys

if TYPE_CHECKING:
    from diaforge.llm.decoding import DecodingConfig


def _cmd_run(args: argparse.Namespace) -> int:
    """``eval run``: the --config file and the flags given over it, as an `EvalConfig`, evaluated."""
    from diaforge.eval.eval_config import flag_keys, load_eval_config
    from diaforge.eval.evaluation import evaluate

    given = {key: getattr(args, key) for key in flag_keys()}
    result = evaluate(load_eval_config(args.config, **given))
    for line in result.summary_lines():
        emit(line)
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from diaforge.eval.report import score_transcripts

    result = score_transcripts(args.transcripts, bench=args.bench)
    emit(json.dumps(result, indent=2))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from diaforge.eval.compare import compare_runs

    emit(compare_runs(args.runs, out_dir=args.out, json_path=args.json, wandb_cfg=wandb_config(args)))
    return 0


def _modes_arg(value: str) -> list[str]:
    """``--modes``: static, dynamic or both, comma-separated."""
    from diaforge.eval.eval_config import parse_modes

    try:
        return parse_modes(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: The `EvalConfig` keys of ``eval run`` shown under their own headings in its help.
FORMAT_KEYS = ("prompt_mode", "tool_style", "history_reasoning", "target_reasoning", "system_prompt_file")
WANDB_KEYS = ("wandb_project", "wandb_entity", "wandb_run_name", "wandb_tags")


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    """``eval run``: ``--config`` and one flag for each `EvalConfig` field, its help the field's
    documentation; the nested `decoding` is one flag for each of its own fields
    (`add_decoding_flags`)."""
    from diaforge.eval.eval_config import CHOICES, EvalConfig

    r = sub.add_parser("run", help="evaluate a model on a benchmark, statically and/or dynamically")
    r.add_argument(
        "--config",
        help="YAML config: any key of EvalConfig (eval/eval_config.py; e.g. eval/configs/heldout.yaml); "
        "a flag given here overrides its key (default: none, the built-in defaults)",
    )
    fields = EvalConfig.__pydantic_fields__
    headed = (*FORMAT_KEYS, "prompt_format", *WANDB_KEYS, "decoding")
    places = [
        (r, [name for name in fields if name not in headed]),
        (r.add_argument_group("prompt format"), [*FORMAT_KEYS, "prompt_format"]),
        (
            r.add_argument_group("Weights & Biases"),
            WANDB_KEYS,
        ),
    ]
    for place, names in places:
        add_field_flags(
            place,
            fields,
            names,
            choices=CHOICES,
            types={"modes": _modes_arg, "max_new_tokens": max_new_tokens_arg, "out": output_path},
            switches=("quiet",),
        )
    add_decoding_flags(
        r.add_argument_group("decoding", "the decoding rules (a YAML config's decoding: mapping)"),
        decoding_class(EvalConfig),
    )
    r.set_defaults(func=_cmd_run)


def add_decoding_flags(
    place: argparse.ArgumentParser | argparse._ArgumentGroup, config: type[DecodingConfig]
) -> None:
    """One ``--<name> on|off`` flag for each field of `config` (`EvalConfig`'s `decoding`: a new
    field is a new flag with no edit here), its help the field's documentation."""
    add_field_flags(place, config.__pydantic_fields__, decoding_keys(config))


#: Commands whose --out is a folder they write (the others' --out is a file).
RUN_FOLDER_COMMANDS = ("run", "compare", "next-action", "turn-level", "bfcl", "dicebench")


def check_outputs(args: argparse.Namespace) -> None:
    """Before any work: every output this command line names can be written (`InputError` naming
    the flag otherwise); nothing is left behind by the check."""
    from diaforge.hygiene import check_output_dir, check_output_file

    out = getattr(args, "out", None)
    if out and args.command in RUN_FOLDER_COMMANDS:
        check_output_dir(out, field="--out", what="run folder")
    elif out and args.command == "import":
        check_output_file(out, field="--out", what="dialogues file")
    if getattr(args, "json", None) and args.command == "compare":
        check_output_file(args.json, field="--json", what="JSON report")


#: The commands defined in this module; the peer benchmarks' commands live in `diaforge.eval.cli_peers`.
OWN_COMMANDS = ("run", "score", "compare")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``python -m diaforge.eval`` parser: every subcommand, each option with its help and default.
    `command` is the command line's first word: when it names one of `OWN_COMMANDS`, argparse can
    never reach a peer command, so `diaforge.eval.cli_peers` is not imported (``eval run`` reads less)."""
    parser = EvalArgumentParser(
        prog="python -m diaforge.eval", description="Evaluate tool-calling models (DiaFORGE §3.3)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run_parser(sub)
    s = sub.add_parser("score", help="recompute every metric from saved transcripts (no model)")
    s.add_argument("transcripts", help="a transcripts.jsonl, or a run folder holding one")
    s.add_argument(
        "--bench",
        help="the benchmark the run used, for the candidate tool specs of the decisions and clarification "
        "quality when no tools.json lies beside the transcripts (its no-tool split beside it is read "
        "too); with neither, those sections are null (not computed)",
    )
    s.set_defaults(func=_cmd_score)
    c = sub.add_parser("compare", help="one table and one trade-off plot for several runs")
    c.add_argument("runs", nargs="+", help="run folders (or their metrics.json)")
    c.add_argument(
        "--out",
        type=output_path,
        default="outputs/compare",
        help="folder for comparison.md and comparison.png",
    )
    c.add_argument("--json", type=output_path, help="also write {label: metrics} of every run to this file")
    add_wandb_args(c)
    c.set_defaults(func=_cmd_compare)
    if command not in OWN_COMMANDS:
        from diaforge.eval.cli_peers import add_peer_parsers

        add_peer_parsers(sub)
    return parser


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    if getattr(args, "quiet", False):
        quiet_library_bars()
    check_outputs(args)
    if args.command != "run" and hasattr(
        args, "device"
    ):  # eval run checks the device of its config once it is assembled
        check_device(model_options(args))
    with results_only_on_stdout():
        return args.func(args)
