"""`python -m data_gen ...`: the data engine's command line.

Every user-caused error (a bad file, record, field or option) prints one line to stderr and exits
with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from data_gen.errors import InputError

EXIT_USAGE = 2


def _cmd_analyze(args: argparse.Namespace) -> int:
    from data_gen.catalogue import load_catalogue
    from data_gen.similarity import analyze_catalogue, get_encoder

    if not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold must lie in [0, 1], got {args.threshold}")
    if args.k < 1:
        raise InputError(f"--k must be at least 1, got {args.k}")
    catalogue = load_catalogue(args.catalogue)
    print(catalogue.report.summary(), file=sys.stderr)
    stats = analyze_catalogue(
        catalogue.tools, threshold=args.threshold, k=args.k, encoder=get_encoder(args.encoder)
    )
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print(format_analysis(stats, top=args.top))
    return 0


def format_analysis(stats: dict, *, top: int = 10) -> str:
    """A readable summary of `analyze_catalogue` output."""
    lines = [
        f"tools:                          {stats['num_tools']}",
        f"with a near-duplicate (>= {stats['threshold']:.2f}): {stats['tools_with_near_duplicate']:.1%}"
        f" ({stats['num_tools_with_near_duplicate']} tools)",
        f"near-duplicate pairs:           {stats['num_near_duplicate_pairs']}",
        f"mean top-{stats['k']} similarity:          {stats['mean_topk_similarity']:.3f}",
        f"with required parameters:       {stats['share_with_required_params']:.1%}",
        f"encoder:                        {stats['encoder']}",
    ]
    lobs = stats.get("by_line_of_business", {})
    if len(lobs) > 1:
        lines.append("")
        lines.append("by line of business:")
        width = max(len(k) for k in lobs)
        for lob, s in lobs.items():
            lines.append(
                f"  {lob:<{width}}  {s['num_tools']:>4} tools  {s['tools_with_near_duplicate']:6.1%} near-dup"
            )
    if stats["pairs"] and top > 0:
        lines.append("")
        lines.append(f"top {min(top, len(stats['pairs']))} pairs (score = .40 name + .35 desc + .25 param):")
        for p in stats["pairs"][:top]:
            lines.append(
                f"  {p['score']:.3f}  {p['a']}  ~  {p['b']}  "
                f"(name {p['name']:.2f}, desc {p['desc']:.2f}, param {p['param']:.2f})"
            )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m data_gen", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("analyze", help="near-duplicate statistics of a tool catalogue (DiaFORGE A.4)")
    p.add_argument(
        "--catalogue", required=True, help="OpenAI specs (JSON list or JSONL), paper maps, or OpenAPI 3"
    )
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a summary")
    p.add_argument("--threshold", type=float, default=0.70, help="near-duplicate threshold (default 0.70)")
    p.add_argument("--k", type=int, default=5, help="distractors retrieved per tool (default 5)")
    p.add_argument("--top", type=int, default=10, help="pairs to list in the summary (default 10)")
    p.add_argument("--encoder", choices=("auto", "minilm", "tfidf"), default="auto")
    p.set_defaults(func=_cmd_analyze)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
