"""`python -m diaforge.data_gen pairs` (`diaforge data pairs`): the command line of `diaforge.data_gen.pairs`."""

from __future__ import annotations

import argparse

from diaforge.cliargs import (
    DefaultsHelpFormatter,
    add_export_format_flags,
    export_format_from_args,
    output_path,
)
from diaforge.console import emit
from diaforge.data_gen.wording import WORDING_CHOICES
from diaforge.errors import InputError
from diaforge.hygiene import check_output_dir


def run_pairs(args: argparse.Namespace) -> int:
    from diaforge.data_gen.pairs import KINDS, PairOptions, parse_mix, summary_line, write_pairs
    from diaforge.schema import load_dialogues

    check_output_dir(args.out, field="--out", what="pairs folder")
    fmt = export_format_from_args(args)
    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip()) if args.kinds else KINDS
    try:
        pair_options = PairOptions(
            kinds=kinds,
            mix=parse_mix(args.mix) if args.mix else None,
            seed=args.seed,
            wording=args.wording,
            encoder=args.encoder,
            max_pairs=args.max_pairs,
        )
    except ValueError as exc:
        raise InputError(f"--kinds/--mix/--max-pairs: {exc}") from None
    summary = write_pairs(load_dialogues(args.dialogues), args.out, fmt, pair_options)
    emit(summary_line(summary))
    return 0


def add_pairs(sub: argparse._SubParsersAction) -> None:
    from diaforge.data_gen.pairs import KINDS
    from diaforge.format import EXPORT_FORMATS

    summary = (
        "preference pairs (chosen and rejected turns of named kinds) for DPO, in TRL's preference format"
    )
    p = sub.add_parser("pairs", help=summary, description=summary, formatter_class=DefaultsHelpFormatter)
    p.add_argument("dialogues", help="dialogues JSONL (e.g. the dialogues.jsonl of a generation run)")
    p.add_argument(
        "--out",
        type=output_path,
        required=True,
        help="folder for pairs.jsonl, preference.jsonl, prompt_format.json, stats.json",
    )
    p.add_argument(
        "--kinds",
        default="",
        help=f"comma-separated kinds to build (default: all: {', '.join(KINDS)})",
    )
    p.add_argument(
        "--mix",
        default="",
        help="relative weight of each kind, kind=weight,... (e.g. premature_call=2,near_duplicate=1); "
        "kinds it leaves out are dropped; default: keep every pair",
    )
    p.add_argument(
        "--max-pairs",
        type=int,
        default=None,
        help="keep at most N pairs, drawn with the seed from the whole corpus after the mix "
        "(default: keep all)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="seed of invented values, wording, the mix and --max-pairs"
    )
    p.add_argument("--wording", choices=WORDING_CHOICES, default="train", help="wording bank")
    p.add_argument(
        "--encoder",
        choices=("auto", "minilm", "tfidf"),
        default="tfidf",
        help="description encoder of the composite similarity that finds the near-duplicate",
    )
    p.add_argument(
        "--format",
        default="hf-prompt",
        choices=EXPORT_FORMATS,
        help="format of preference.jsonl: hf-prompt (the paper's text format) or hf (native tool_calls)",
    )
    add_export_format_flags(p)
    p.set_defaults(func=run_pairs)
