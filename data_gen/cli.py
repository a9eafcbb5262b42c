"""`python -m diaforge.data_gen ...`: the data engine's command line.

Every user-caused error (a bad file, record, field or option) prints one line to stderr and exits
with code 2; no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from diaforge.cliargs import (
    DefaultsHelpFormatter,
    OneLineArgumentParser,
    add_export_format_flags,
    add_field_flags,
    export_format_from_args,
    finite_float,
    int_between,
    output_path,
    positive_int,
)
from diaforge.console import emit, quiet_library_bars, results_only_on_stdout
from diaforge.data_gen.gen_config import (
    BACKENDS,
    CHOICES,
    MAX_CONCURRENCY,
    ROLE_DEFAULTS,
    GenerationConfig,
    RoleSpec,
)
from diaforge.data_gen.pairs_cli import add_pairs
from diaforge.errors import InputError, command_main
from diaforge.hygiene import check_output_dir, check_output_file

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def _cmd_analyze(args: argparse.Namespace) -> int:
    from diaforge.data_gen.catalogue import check_catalogue_size, load_catalogue
    from diaforge.data_gen.catalogue_analysis import analyze_catalogue, check_analysis_text
    from diaforge.similarity import get_encoder

    if not 0.0 <= args.threshold <= 1.0:
        raise InputError(f"--threshold must lie in [0, 1], got {args.threshold}")
    if args.k < 1:
        raise InputError(f"--k must be at least 1, got {args.k}")
    catalogue = load_catalogue(args.catalogue)
    check_catalogue_size(catalogue)
    check_analysis_text(catalogue.tools, args.catalogue)
    print(catalogue.report.summary(), file=sys.stderr)
    stats = analyze_catalogue(
        catalogue.tools, threshold=args.threshold, k=args.k, encoder=get_encoder(args.encoder), progress=None
    )
    if args.json:
        emit(json.dumps(stats, indent=2))
    else:
        emit(format_analysis(stats, top=args.top))
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


def _cmd_analyze_corpus(args: argparse.Namespace) -> int:
    from diaforge.data_gen.corpus import analyze_corpus, format_corpus_report
    from diaforge.schema import load_dialogues

    dialogues = load_dialogues(args.dialogues)
    dice_counts, counter_name = None, "value-matcher"
    if args.counter != "value":
        import asyncio

        from diaforge.dice import DiceBenchItemCounter, LLMItemCounter
        from diaforge.llm.openai_backend import OpenAIBackend

        kind, _, model = args.counter.partition(":")
        if kind not in ("openai", "dicebench") or not model:
            raise InputError(
                f"unknown --counter {args.counter!r}; use 'value', 'openai:MODEL' or 'dicebench:MODEL'"
            )
        counter_cls = DiceBenchItemCounter if kind == "dicebench" else LLMItemCounter

        async def llm_counts() -> dict:
            backend = OpenAIBackend(model, base_url=args.base_url)
            try:
                await backend.check()
                return await counter_cls(backend).corpus_counts(dialogues, concurrency=args.concurrency)
            finally:
                await backend.aclose()

        dice_counts = asyncio.run(llm_counts())
        counter_name = f"dicebench-prompt:{model}" if kind == "dicebench" else f"llm:{model}"
    stats = analyze_corpus(dialogues, dice_counts=dice_counts, counter_name=counter_name)
    if args.json:
        emit(json.dumps(stats, indent=2))
    else:
        emit(format_corpus_report(stats))
    return 0


def _cmd_generate(args: argparse.Namespace) -> int:
    import asyncio

    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import load_config

    keys = (*GENERATE_FLAGS, *ROLE_DEFAULTS, *GENERATE_SWITCHES)
    cfg = load_config(args.config, **{key: getattr(args, key) for key in keys})
    if not cfg.progress:
        quiet_library_bars()
    if not cfg.catalogue:
        raise InputError("no catalogue given: pass --catalogue FILE or set `catalogue:` in the config")
    check_output_dir(cfg.out, field="--out" if args.out else "out", what="run folder")
    summary = asyncio.run(generate(cfg))
    s = summary.stats
    emit(
        f"{summary.accepted}/{summary.seeds} seeds accepted ({s['acceptance_rate']:.1%}) in {summary.seconds:.1f}s"
        f"{f' ({summary.skipped} already done)' if summary.skipped else ''}; "
        f"asked a disambiguating question: {s['share_asking_disambiguation']:.1%}; "
        f"{_misses_note(s['no_tool'])}"
        f"tokens {summary.usage.total_tokens}, cost ${summary.usage.cost_usd:.4f}; output in {summary.out}"
    )
    return 0


def _misses_note(stats: dict) -> str:
    """The retrieval misses of a run, for its summary line ("" when the share is 0)."""
    if not stats["seeds"]:
        return ""
    return f"retrieval misses: {stats['accepted']} accepted ({stats['accepted_share']:.1%} of the corpus); "


def _build(args: argparse.Namespace, builder: Any, prefix: str, **options: Any) -> dict[str, Any]:
    """Run a benchmark builder of `diaforge.data_gen.engine` on the command line's catalogue, output file
    and work folder (a temporary one unless ``--work-dir`` is given); its summary."""
    import asyncio
    import tempfile

    check_output_file(args.out, field="--out", what="benchmark file")
    if args.work_dir:
        check_output_dir(args.work_dir, field="--work-dir", what="work folder")
    with tempfile.TemporaryDirectory(prefix=prefix) as work:
        return asyncio.run(
            builder(
                args.catalogue,
                args.out,
                work_dir=args.work_dir or work,
                seed=args.seed,
                split=args.split or None,
                progress=not args.quiet,
                **options,
            )
        )


def _cmd_build_benchmark(args: argparse.Namespace) -> int:
    from diaforge.data_gen.engine import build_benchmark

    info = _build(args, build_benchmark, "diabench-", seeds_per_tool=args.seeds_per_tool)
    emit(
        f"{info['records']} reference dialogues over {info['tools']} held-out tools "
        f"({', '.join(info['lines_of_business'])}) -> {args.out}"
    )
    return 0


def _cmd_build_no_tool_split(args: argparse.Namespace) -> int:
    from diaforge.data_gen.engine import build_no_tool_benchmark

    info = _build(args, build_no_tool_benchmark, "diabench-no-tool-", seeds=args.seeds)
    emit(f"{info['records']} retrieval misses from {info['seeds']} seeds over held-out tools -> {args.out}")
    return 0


def _cmd_ngram_overlap(args: argparse.Namespace) -> int:
    import json

    from diaforge.data_gen.overlap import ngram_overlap
    from diaforge.schema import load_dialogues

    stats = ngram_overlap(load_dialogues(args.train), load_dialogues(args.bench))
    emit(json.dumps(stats, indent=2))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from diaforge.data_gen.export import export_dialogues, lengths_line, summary_line, unchecked_note
    from diaforge.schema import load_dialogues

    check_output_dir(args.out, field="--out", what="export folder")
    fmt = export_format_from_args(args)
    tokenizer = _load_tokenizer(args.tokenizer) if args.tokenizer else None
    dialogues = load_dialogues(args.dialogues)
    if tokenizer is None:
        print(f"warning: {unchecked_note(fmt)}", file=sys.stderr)
    summary, warnings = export_dialogues(
        dialogues,
        args.out,
        fmt,
        tokenizer=tokenizer,
        tokenizer_name=args.tokenizer or "",
        force=args.force,
        progress=False if args.quiet else None,
    )
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if "token_lengths" in summary:
        print(lengths_line(summary["token_lengths"]), file=sys.stderr)
    emit(summary_line(summary))
    return 0


def _load_tokenizer(name: str) -> PreTrainedTokenizerBase:
    _check_tokenizer_path(name)
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot load a tokenizer ({str(exc).splitlines()[0]})", path=name) from None


def _check_tokenizer_path(name: str) -> None:
    """`--tokenizer` names a folder that exists, or something that can only be a hub id."""
    from pathlib import Path

    path = Path(name).expanduser()
    if path.is_dir():
        return
    if path.exists():
        raise InputError("is a file; --tokenizer names a model or tokenizer folder", path=name)
    if name.startswith((".", "/", "~")) or name.count("/") != 1:
        raise InputError(
            "no such folder; --tokenizer names a model or tokenizer folder (or a hub id in the local cache)",
            path=name,
        )


def _command(sub: argparse._SubParsersAction, name: str, summary: str) -> argparse.ArgumentParser:
    """A subcommand whose --help shows every option's default."""
    return sub.add_parser(name, help=summary, description=summary, formatter_class=DefaultsHelpFormatter)


def build_parser() -> argparse.ArgumentParser:
    """`python -m diaforge.data_gen` and its subcommands."""
    parser = OneLineArgumentParser(
        prog="python -m diaforge.data_gen",
        description=__doc__.splitlines()[0],
        formatter_class=DefaultsHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to do")
    for add in (
        _add_analyze,
        _add_analyze_corpus,
        _add_generate,
        _add_build_benchmark,
        _add_build_no_tool_split,
        _add_export,
        add_pairs,
        _add_ngram_overlap,
        _add_rollouts,
    ):
        add(sub)
    return parser


def _add_rollouts(sub: argparse._SubParsersAction) -> None:
    """``rollouts`` is listed here and run by `diaforge.pipeline.rollouts`: it plays the model under
    test, which this package does not import (the console ``diaforge data rollouts`` routes there)."""
    text = "a tuned model's rollouts with the teacher's answer: run it as `diaforge data rollouts ...`"
    p = sub.add_parser("rollouts", help=text, description=text, add_help=False)
    p.add_argument(
        "rest",
        nargs=argparse.REMAINDER,
        help="the options of `diaforge data rollouts` (see its --help), refused here",
    )
    p.set_defaults(func=_cmd_rollouts)


def _cmd_rollouts(args: argparse.Namespace) -> int:
    """Refuse, saying where rollouts run (their options are the pipeline's)."""
    raise InputError(
        "rollouts play the model under test, which `python -m diaforge.data_gen` does not load: run "
        "`diaforge data rollouts ...` or `python -m diaforge.pipeline rollouts ...`"
    )


def _add_analyze(sub: argparse._SubParsersAction) -> None:
    p = _command(sub, "analyze", "near-duplicate statistics of a tool catalogue (DiaFORGE A.4)")
    p.add_argument(
        "--catalogue", required=True, help="OpenAI specs (JSON list or JSONL), paper maps, or OpenAPI 3"
    )
    p.add_argument("--json", action="store_true", help="print a JSON object instead of a summary")
    p.add_argument("--threshold", type=finite_float, default=0.70, help="near-duplicate threshold")
    p.add_argument("--k", type=positive_int, default=5, help="distractors retrieved per tool")
    p.add_argument("--top", type=positive_int, default=10, help="pairs to list in the summary")
    p.add_argument(
        "--encoder",
        choices=("auto", "minilm", "tfidf"),
        default="auto",
        help="similarity encoder: auto is MiniLM when installed, else TF-IDF",
    )
    p.set_defaults(func=_cmd_analyze)


def _add_analyze_corpus(sub: argparse._SubParsersAction) -> None:
    c = _command(
        sub,
        "analyze-corpus",
        "DICE-Score, TTR, NGD-n, turn and dialogue-act distributions of a dialogue corpus",
    )
    c.add_argument("dialogues", help="dialogues JSONL (e.g. the dialogues.jsonl of a generation run)")
    c.add_argument("--json", action="store_true", help="print a JSON object instead of a summary")
    c.add_argument(
        "--counter",
        default="value",
        help="DICE item counter: 'value' (deterministic value matcher with number words, the default), "
        "'openai:MODEL' (an LLM told the items), or 'dicebench:MODEL' (DICE-Bench's own counting "
        "prompt, for parity with its paper: gpt-4o-mini there)",
    )
    c.add_argument(
        "--base-url",
        help="OpenAI-compatible server for an LLM counter (default: the OpenAI API, key in OPENAI_API_KEY)",
    )
    c.add_argument(
        "--concurrency",
        type=int_between(1, MAX_CONCURRENCY),
        default=4,
        help="dialogues counted at once by an LLM counter",
    )
    c.set_defaults(func=_cmd_analyze_corpus)


#: The `GenerationConfig` fields that `generate` takes as flags (the rest: --config only).
GENERATE_FLAGS = (
    "catalogue",
    "out",
    "num_dialogues",
    "seed",
    "concurrency",
    "k",
    "t_max",
    "max_attempts",
    "distractors",
    "wording",
    "reasoning",
    "no_tool_share",
    "dialogues_per_listing",
    "num_shards",
    "shard_index",
    "personas",
    "fluency_model",
)
#: Switches that turn a default-on part of the run off: field -> flag.
GENERATE_SWITCHES = {
    "validators": "--no-validators",
    "fluency_judge": "--no-fluency-judge",
    "plots": "--no-plots",
    "export": "--no-export",
    "progress": "--quiet",
}


def _add_generate(sub: argparse._SubParsersAction) -> None:
    """``generate``: ``--config`` and a flag for each field of `GENERATE_FLAGS`, the role
    defaults and the switches, each flag's help its field's description."""
    g = _command(sub, "generate", "synthesise validated disambiguation dialogues (UTC-Gen)")
    g.add_argument(
        "--config",
        help="YAML config: any field of GenerationConfig (data_gen/gen_config.py), plus per-role backends; "
        "a flag given here overrides its key (default: none, the built-in defaults)",
    )
    add_field_flags(
        g, GenerationConfig.model_fields, GENERATE_FLAGS, choices=CHOICES, types={"out": output_path}
    )
    roles = g.add_argument_group(
        "every role", "the backend of every role (roles: in the config sets them one by one)"
    )
    add_field_flags(roles, RoleSpec.model_fields, ROLE_DEFAULTS, choices={"backend": BACKENDS})
    add_field_flags(g, GenerationConfig.model_fields, GENERATE_SWITCHES, off=GENERATE_SWITCHES)
    g.set_defaults(func=_cmd_generate)


def _add_build_benchmark(sub: argparse._SubParsersAction) -> None:
    b = _command(sub, "build-benchmark", "build the held-out evaluation set (reference dialogues)")
    b.add_argument(
        "--catalogue", default="data_gen/assets/catalogue.json", help="catalogue holding the held-out tools"
    )
    b.add_argument("--split", default="heldout", help="tool split to use ('' for all tools)")
    b.add_argument(
        "--out",
        type=output_path,
        default="eval/benchmarks/diabench_heldout_v1.jsonl",
        help="benchmark JSONL to write",
    )
    b.add_argument("--seeds-per-tool", type=positive_int, default=1, help="reference dialogues per tool")
    b.add_argument("--seed", type=int, default=20260101, help="run seed of the generation")
    b.add_argument(
        "--work-dir",
        type=output_path,
        help="keep the generation run folder here (default: a temporary folder)",
    )
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=_cmd_build_benchmark)


def _add_build_no_tool_split(sub: argparse._SubParsersAction) -> None:
    b = _command(
        sub,
        "build-no-tool-split",
        "build the no-tool split of the held-out benchmark (retrieval misses: no candidate fits)",
    )
    b.add_argument(
        "--catalogue", default="data_gen/assets/catalogue.json", help="catalogue holding the held-out tools"
    )
    b.add_argument("--split", default="heldout", help="tool split to use ('' for all tools)")
    b.add_argument(
        "--out",
        type=output_path,
        default="eval/benchmarks/diabench_heldout_v1_no_tool.jsonl",
        help="split JSONL to write (eval run finds <benchmark>_no_tool.jsonl beside its benchmark)",
    )
    b.add_argument("--seeds", type=positive_int, default=20, help="retrieval misses to try (one per tool)")
    b.add_argument("--seed", type=int, default=20260128, help="run seed of the generation")
    b.add_argument(
        "--work-dir",
        type=output_path,
        help="keep the generation run folder here (default: a temporary folder)",
    )
    b.add_argument("--quiet", action="store_true", help="no progress bar")
    b.set_defaults(func=_cmd_build_no_tool_split)


def _add_export(sub: argparse._SubParsersAction) -> None:
    from diaforge.format import EXPORT_FORMATS

    e = _command(
        sub, "export", "dialogues in the Hugging Face conversational format (JSONL and a datasets folder)"
    )
    e.add_argument("dialogues", help="dialogues JSONL (e.g. the dialogues.jsonl of a generation run)")
    e.add_argument(
        "--format",
        required=True,
        choices=EXPORT_FORMATS,
        help="hf: native tools= and tool_calls; hf-prompt: the paper's text format, rendered by any template",
    )
    e.add_argument(
        "--out",
        type=output_path,
        required=True,
        help="folder for hf_conversational.jsonl, hf_dataset/, prompt_format.json (and token_lengths.json)",
    )
    e.add_argument(
        "--tokenizer",
        help="model or tokenizer folder whose chat template must render every row; also measures the "
        "rows' tokens and the max_length that keeps every final call (default: none, nothing checked)",
    )
    add_export_format_flags(e)
    e.add_argument(
        "--force", action="store_true", help="export even when the chat template drops part of the rows"
    )
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=_cmd_export)


def _add_ngram_overlap(sub: argparse._SubParsersAction) -> None:
    o = _command(
        sub,
        "ngram-overlap",
        "word 4-gram overlap of a benchmark's openings and questions with a training corpus",
    )
    o.add_argument("train", help="training dialogues (JSONL)")
    o.add_argument("bench", help="benchmark dialogues (JSONL)")
    o.set_defaults(func=_cmd_ngram_overlap)


@command_main
def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["rollouts"] and not {"-h", "--help"} & set(argv):
        _cmd_rollouts(argparse.Namespace())
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        quiet_library_bars()
    with results_only_on_stdout():
        return args.func(args)
