"""`python -m eval run|score|compare|import|bfcl|next-action|turn-level`: evaluate a checkpoint,
rescore transcripts, compare runs; import peer benchmarks; the BFCL parity check; next-action
prediction and turn-level function calling (`eval.peers`).

``eval run`` is `eval.evaluate` behind a command line: ``--config FILE`` (a YAML mapping of
`eval.EvalConfig` keys, e.g. ``eval/configs/heldout.yaml``) and the flags given over it make the
config; a flag overrides its key.

The commands that load a model prompt it in the format it was trained with: the
``prompt_format.json`` of its folder (`eval.models.choose_prompt_format`). ``--prompt-mode``,
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
from collections.abc import Sequence

from diaforge.cliargs import positive_int
from diaforge.console import emit, quiet_library_bars, results_only_on_stdout
from diaforge.errors import command_main
from eval.cli_options import (
    EvalArgumentParser,
    add_model_args,
    add_wandb_args,
    model_options,
    wandb_config,
)
from eval.cli_peers import add_peer_parsers
from eval.model_spec import check_device

EXIT_USAGE = 2


def _cmd_run(args: argparse.Namespace) -> int:
    """``eval run``: the --config file and the flags given over it, as an `EvalConfig`, evaluated."""
    from eval.eval_config import config_defaults, load_eval_config
    from eval.evaluation import evaluate

    given = {key: getattr(args, key) for key in config_defaults() if hasattr(args, key)}
    result = evaluate(load_eval_config(args.config, **given))
    for line in result.summary_lines():
        emit(line)
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from eval.report import score_transcripts

    result = score_transcripts(args.transcripts, bench=args.bench)
    emit(json.dumps(result, indent=2))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from eval.compare import compare_runs

    emit(compare_runs(args.runs, out_dir=args.out, json_path=args.json, wandb_cfg=wandb_config(args)))
    return 0


def _on_off(value: str) -> bool:
    """``on`` or ``off``, as a switch."""
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {value!r}")
    return value == "on"


def _modes_arg(value: str) -> list[str]:
    """``--modes``: static, dynamic or both, comma-separated."""
    from eval.eval_config import parse_modes

    try:
        return parse_modes(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="evaluate a model on a benchmark, statically and/or dynamically")
    r.add_argument(
        "--config",
        help="YAML config: any key of EvalConfig (eval/eval_config.py; e.g. eval/configs/heldout.yaml); "
        "a flag given here overrides its key (default: none, the built-in defaults)",
    )
    add_model_args(r, policies=True, max_new_tokens="auto")
    r.add_argument("--bench", help="benchmark JSONL")
    r.add_argument("--modes", type=_modes_arg, help="static, dynamic, or both, comma-separated")
    r.add_argument("--user-proxy", help="'scripted' (offline) or 'openai:MODEL'")
    r.add_argument("--user-base-url", help="server for an openai user proxy")
    r.add_argument(
        "--judge", help="model name for the ConvRel rubric judge (OpenAI-compatible); offline: not computed"
    )
    r.add_argument("--judge-base-url", help="OpenAI-compatible server of the --judge model")
    r.add_argument("--t-max", type=positive_int, help="dynamic mode: most user turns per dialogue")
    r.add_argument(
        "--repeats",
        type=positive_int,
        help="dynamic mode: play each dialogue k times, the user-proxy's wording drawn from its own seed "
        "each time (repeat 0 is the run without --repeats), and report pass^1..pass^k; every other "
        "metric stays on repeat 0; static mode (no user-proxy) and the no-tool split are played once",
    )
    r.add_argument("--n-samples", type=positive_int, help="user-proxy candidates per turn (n)")
    r.add_argument("--n-voters", type=positive_int, help="voters per turn (m)")
    r.add_argument("--limit", type=positive_int, help="evaluate a seeded sample of this many dialogues")
    r.add_argument(
        "--no-tool-bench",
        help="the no-tool split (retrieval misses), evaluated after --bench and reported apart: auto "
        "(<bench>_no_tool.jsonl beside --bench, when it exists), none, or a file",
    )
    r.add_argument(
        "--no-tool-limit",
        type=positive_int,
        help="evaluate a seeded sample of this many no-tool dialogues (unset: all of the split)",
    )
    r.add_argument("--seed", type=int, help="seed of the sample, the user proxy and the policies")
    r.add_argument(
        "--loop-stop",
        type=_on_off,
        metavar="{on,off}",
        help="hf: end a reply whose tail repeats one block 3 times in a row (counted as truncated, as the "
        "budget would have made it) instead of generating it to the budget",
    )
    r.add_argument(
        "--constrain-calls",
        type=_on_off,
        metavar="{on,off}",
        help="hf: once a reply opens a call list, keep it a valid call to a candidate with the keys and "
        "value types of its schema (strict function calling); apply it alike to every model compared",
    )
    r.add_argument("--out", help="run folder (unset: outputs/eval/<model>-<prompt mode>)")
    add_wandb_args(r)
    _defaults_from_config(r)
    r.set_defaults(func=_cmd_run)


def _defaults_from_config(parser: argparse.ArgumentParser) -> None:
    """Every flag of ``eval run`` that sets an `EvalConfig` key is unset unless given (so that a
    --config file's key stands), and its help shows the key's default."""
    from eval.eval_config import config_defaults

    defaults = config_defaults()
    for action in parser._actions:
        if action.dest not in defaults:
            continue
        action.default = None
        default = defaults[action.dest]
        if default is None or default == []:
            continue
        if isinstance(default, bool):
            shown = "on" if default else "off"
        elif isinstance(default, list):
            shown = ",".join(default)
        else:
            shown = str(default)
        action.help = f"{action.help} (default: {shown}, unless --config sets {action.dest})"


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


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m eval`` parser: every subcommand, each option with its help and default."""
    parser = EvalArgumentParser(
        prog="python -m eval", description="Evaluate tool-calling models (DiaFORGE §3.3)"
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
    c.add_argument("--out", default="outputs/compare", help="folder for comparison.md and comparison.png")
    c.add_argument("--json", help="also write {label: metrics} of every run to this file")
    add_wandb_args(c)
    c.set_defaults(func=_cmd_compare)
    add_peer_parsers(sub)
    return parser


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        quiet_library_bars()
    check_outputs(args)
    if args.command != "run" and hasattr(
        args, "device"
    ):  # eval run checks the device of its config once it is assembled
        check_device(model_options(args))
    with results_only_on_stdout():
        return args.func(args)
