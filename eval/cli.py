"""`python -m eval run|score|compare|import|bfcl|next-action|turn-level`: evaluate a checkpoint,
rescore transcripts, compare runs; import peer benchmarks; the BFCL parity check; next-action
prediction and turn-level function calling (`eval.peers`).

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
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from diaforge.cliargs import positive_int
from diaforge.console import emit, quiet_library_bars, results_only_on_stdout
from diaforge.errors import InputError
from diaforge.llm.base import BackendConfigError, BackendError
from eval.cli_options import (
    DEFAULT_BENCH,
    EvalArgumentParser,
    add_format_args,
    add_wandb_args,
    format_line,
    model_spec,
    slug,
    wandb_config,
)
from eval.cli_peers import add_peer_parsers
from eval.policies import POLICIES

if TYPE_CHECKING:
    from diaforge.schema import Dialogue
    from eval.models import Budget, ModelSpec

EXIT_USAGE = 2


def _user_proxy(spec: str, base_url: str | None, n: int, m: int):  # noqa: ANN202
    """`scripted` or `openai:MODEL` (any OpenAI-compatible server with --user-base-url)."""
    from data_gen.agents import LLMUser, LLMVoter, ScriptedUser, ScriptedVoter, VotingUser

    if spec == "scripted":
        # The benchmark's own wording bank; `_run` gives it the sentence encoder once the model
        # and servers have answered, so that a bad server stays a one-line error.
        user = ScriptedUser(wording="heldout")
        return VotingUser(user, ScriptedVoter(), n=n, m=m), None
    kind, _, model = spec.partition(":")
    if kind != "openai" or not model:
        raise InputError(f"unknown user proxy {spec!r}; use 'scripted' or 'openai:MODEL'")
    from diaforge.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(model, base_url=base_url)
    return VotingUser(LLMUser(backend), LLMVoter(backend), n=n, m=m), backend


def _modes(text: str) -> list[str]:
    """``--modes``: static, dynamic or both, comma-separated."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("static", "dynamic")]
    if bad or not modes:
        raise InputError(
            f"unknown mode {bad[0] if bad else '(none)'!r} in --modes; use static, dynamic or both"
        )
    return modes


async def _transcripts(
    args: argparse.Namespace,
    model,
    bench: list,
    modes: list[str],
    user,  # noqa: ANN001
    split: str = "positive",
) -> tuple[list, dict[str, float]]:
    """Run each mode on `bench` (the positive split, or the no-tool split): (transcripts, seconds
    per mode)."""
    from diaforge.similarity import get_encoder
    from eval.runner import DynamicConfig, near_duplicate_flags, run_dynamic, run_static
    from eval.transcripts import Transcript

    encoder = get_encoder()
    near_dup = near_duplicate_flags(bench, encoder)
    if hasattr(user.user, "encoder"):  # the scripted proxy reads questions by meaning too
        user.user.encoder = encoder
    records: list[dict] = []
    timings: dict[str, float] = {}
    for mode in modes:
        t0 = time.monotonic()
        if mode == "static":
            records += await run_static(model, bench, near_dup, progress=not args.quiet, split=split)
        else:
            dyn = DynamicConfig(
                t_max=args.t_max, n_samples=args.n_samples, n_voters=args.n_voters, seed=args.seed
            )
            records += await run_dynamic(
                model, bench, near_dup, user, dyn, progress=not args.quiet, split=split
            )
        timings[mode] = round(time.monotonic() - t0, 2)
    return [Transcript.model_validate(r) for r in records], timings


async def _grade(args: argparse.Namespace, transcripts: list) -> None:
    """ConvRel grades from the ``--judge`` model, into each transcript's `convrel`."""
    from diaforge.llm.openai_backend import OpenAIBackend
    from eval.judge import ConvRelJudge

    judge_backend = OpenAIBackend(args.judge, base_url=args.judge_base_url)
    try:
        await judge_backend.check()
        judge = ConvRelJudge(judge_backend)
        for t in transcripts:
            t.convrel = await judge.grade_transcript(t)
    finally:
        await judge_backend.aclose()


async def _run(args: argparse.Namespace) -> Path:
    """``eval run``: evaluate the model on the benchmark in each mode and write the run folder."""
    from diaforge.lineage import training_lineage
    from diaforge.schema import load_dialogues
    from eval.models import ModelUnderTest, offline_env
    from eval.no_tool import check_positive_bench, load_no_tool_split, no_tool_bench_for
    from eval.report import write_run
    from eval.runner import sample_benchmark

    offline_env()
    modes = _modes(args.modes)
    full_bench = load_dialogues(args.bench)
    check_positive_bench(args.bench, full_bench)
    bench = sample_benchmark(full_bench, args.limit, args.seed)
    split_path = no_tool_bench_for(args.bench, args.no_tool_bench)
    split = (
        sample_benchmark(load_no_tool_split(split_path), args.no_tool_limit, args.seed) if split_path else []
    )
    cfg, choice = model_spec(args)
    budget = None
    if not cfg.is_policy:  # a reference policy writes its turns whole: no budget applies
        budget = run_budget(args.max_new_tokens, cfg, full_bench)
        cfg.max_new_tokens = budget.max_new_tokens
    user, user_backend = _user_proxy(args.user_proxy, args.user_base_url, args.n_samples, args.n_voters)
    started = time.monotonic()
    if cfg.backend not in ("openai", *POLICIES) and not args.quiet:
        print(f"loading {cfg.model} ({args.backend}; {format_line(choice)}) ...", file=sys.stderr)
    model = ModelUnderTest(cfg)
    try:
        await model.check()
        if user_backend is not None:
            await user_backend.check()
        if budget is not None:  # once everything is reachable: an error stays the only line
            print(budget.describe(), file=sys.stderr)
        transcripts, timings = await _transcripts(args, model, bench, modes, user)
        split_timings: dict[str, float] = {}
        if split:  # after the positive split, so that it runs exactly as it did without the no-tool split
            more, split_timings = await _transcripts(args, model, split, modes, user, split="no_tool")
            transcripts += more
        if args.judge:
            await _grade(args, transcripts)
    finally:
        await model.aclose()
        if user_backend is not None:
            await user_backend.aclose()
    out = (
        Path(args.out) if args.out else Path("outputs/eval") / slug(cfg.model, cfg.prompt_format.prompt_mode)
    )
    extra = {
        "benchmark": args.bench,
        "backend": args.backend,
        "max_new_tokens": budget.max_new_tokens if budget else None,
        "budget": budget.as_dict() if budget else None,
        "decoding": {
            "greedy": True,
            "loop_stop": cfg.loop_stop and cfg.backend == "hf",
            "constrain_calls": cfg.constrain_calls,
            "constraint_stats": model.constraint_stats,
        },
        "prompt_format": choice.as_dict(),
        "modes": modes,
        "user_proxy": user.name,
        "t_max": args.t_max,
        "n_samples": args.n_samples,
        "n_voters": args.n_voters,
        "limit": args.limit,
        "seed": args.seed,
        "no_tool_benchmark": str(split_path) if split_path else None,
        "no_tool_limit": args.no_tool_limit,
        "checkpoint": model.info,
        "training": training_lineage(model.info["path"]) if cfg.backend in ("hf", "vllm") else None,
        "seconds": timings,
        "no_tool_seconds": split_timings,
        "wall_seconds": round(time.monotonic() - started, 2),
    }
    write_run(
        out, transcripts, model_label=args.label or cfg.model, extra=extra, wandb_cfg=wandb_config(args)
    )
    return out


def max_new_tokens_arg(value: str) -> int | str:
    """``--max-new-tokens``: ``auto`` or a positive whole number."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def run_budget(requested: int | str, cfg: ModelSpec, bench: Sequence[Dialogue]) -> Budget:
    """The token budget of `eval run`: an explicit number as given, else (``auto``) the longest
    reference assistant turn of the whole benchmark file (not only the sampled dialogues), written
    as the model's prompt format has it write turns (without thoughts for `target_reasoning:
    drop`), in the model's tokenizer, plus a margin (`eval.models.auto_max_new_tokens`)."""
    from eval.models import Budget, auto_max_new_tokens, token_counter

    if requested != "auto":
        return Budget(int(requested), "explicit")
    count, counted_with = token_counter(cfg.model, cfg.backend)
    return auto_max_new_tokens(bench, count, counted_with, cfg.prompt_format)


def _cmd_run(args: argparse.Namespace) -> int:
    out = asyncio.run(_run(args))
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    for mode in ("static", "dynamic"):
        if mode in metrics:
            m = metrics[mode]
            emit(
                f"{mode:8s} Acc {m['Acc']:.3f}  FTR {m['FTR']:.3f}  TAR {m['TAR']:.3f}  "
                f"malformed {m['malformed']:.3f}  truncated {m['truncated']:.3f}  n={m['n']}"
            )
            a = metrics.get("anatomy", {}).get(mode)
            if a:
                emit(
                    f"{'':8s} asks first {a['asks_first_n']}/{a['n']}  right tool {a['right_tool_n']}/"
                    f"{a['calls_n']}  right keys {a['right_keys_n']}/{a['right_tool_n']}  values grounded "
                    f"{a['values_grounded_n']}/{a['values_n']}"
                )
    from eval.no_tool import run_lines

    for line in run_lines(metrics):
        emit(line)
    emit(f"run folder: {out}")
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from eval.report import score_transcripts

    result = score_transcripts(args.transcripts)
    emit(json.dumps(result, indent=2))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from eval.compare import compare_runs

    emit(compare_runs(args.runs, out_dir=args.out, json_path=args.json, wandb_cfg=wandb_config(args)))
    return 0


def _add_run_parser(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("run", help="evaluate a model on a benchmark, statically and/or dynamically")
    r.add_argument(
        "--model",
        help="model/adapter/merged folder (hf, vllm) or served model name (openai); "
        "not needed for the reference policies",
    )
    r.add_argument("--bench", default=DEFAULT_BENCH, help=f"benchmark JSONL (default {DEFAULT_BENCH})")
    r.add_argument("--modes", default="static,dynamic", help="static, dynamic, or both (default)")
    r.add_argument(
        "--backend",
        default="hf",
        choices=("hf", "openai", "vllm", *POLICIES),
        help="a model backend, or a reference policy with no model: reference (the judge's ceiling), "
        "name-overlap or random (floors)",
    )
    r.add_argument("--base-url", help="OpenAI-compatible server for --backend openai")
    r.add_argument("--user-proxy", default="scripted", help="'scripted' (offline default) or 'openai:MODEL'")
    r.add_argument("--user-base-url", help="server for an openai user proxy")
    r.add_argument(
        "--judge", help="model name for the ConvRel rubric judge (OpenAI-compatible); offline: not computed"
    )
    r.add_argument("--judge-base-url", help="OpenAI-compatible server of the --judge model")
    r.add_argument(
        "--t-max", type=positive_int, default=10, help="dynamic mode: most user turns per dialogue"
    )
    r.add_argument("--n-samples", type=positive_int, default=3, help="user-proxy candidates per turn (n)")
    r.add_argument("--n-voters", type=positive_int, default=3, help="voters per turn (m)")
    r.add_argument("--limit", type=positive_int, help="evaluate a seeded sample of this many dialogues")
    r.add_argument(
        "--no-tool-bench",
        default="auto",
        help="the no-tool split (retrieval misses), evaluated after --bench and reported apart: auto "
        "(<bench>_no_tool.jsonl beside --bench, when it exists), none, or a file",
    )
    r.add_argument(
        "--no-tool-limit",
        type=positive_int,
        help="evaluate a seeded sample of this many no-tool dialogues (default: all of the split)",
    )
    r.add_argument("--seed", type=int, default=0, help="seed of the sample, the user proxy and the policies")
    r.add_argument("--batch-size", type=positive_int, default=8, help="dialogues per model call")
    r.add_argument(
        "--max-new-tokens",
        type=max_new_tokens_arg,
        default="auto",
        help="reply length cap: a number, or auto (default): the benchmark's longest reference "
        "assistant turn in the model's tokenizer, plus 25%% (at least 32)",
    )
    r.add_argument("--device", default="cpu", help="torch device of an hf model (cpu, cuda, cuda:1, ...)")
    r.add_argument(
        "--loop-stop",
        choices=("on", "off"),
        default="on",
        help="hf: end a reply whose tail repeats one block 3 times in a row (counted as truncated, as the "
        "budget would have made it) instead of generating it to the budget",
    )
    r.add_argument(
        "--constrain-calls",
        choices=("on", "off"),
        default="off",
        help="hf: once a reply opens a call list, keep it a valid call to a candidate with the keys and "
        "value types of its schema (strict function calling); apply it alike to every model compared",
    )
    r.add_argument("--out", help="run folder (default outputs/eval/<model>-<prompt mode>)")
    r.add_argument("--label", help="name of the model in reports")
    r.add_argument("--quiet", action="store_true", help="no progress bars or loading messages")
    add_format_args(r)
    add_wandb_args(r)
    r.set_defaults(func=_cmd_run)


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


def check_device(args: argparse.Namespace) -> None:
    """`--device cuda` (or `cuda:N`, `mps`) where torch sees no such device: refused before a
    model is loaded (torch would fail with a traceback once the weights are in memory)."""
    device = str(getattr(args, "device", None) or "cpu").strip()
    if device == "cpu" or getattr(args, "backend", "hf") not in ("hf", "vllm"):
        return
    import torch

    kind, _, index = device.partition(":")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise InputError(
                f"--device {device}: torch sees no CUDA GPU on this machine "
                f"(torch {torch.__version__}); use --device cpu"
            )
        if index and (not index.isdigit() or int(index) >= count):
            raise InputError(f"--device {device}: torch sees {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    elif kind == "mps":
        if not torch.backends.mps.is_available():
            raise InputError(f"--device {device}: MPS is not available here; use --device cpu")
    else:
        raise InputError(f"--device {device!r}: unknown device; use cpu, cuda, cuda:N or mps")


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m eval`` parser: every subcommand, each option with its help and default."""
    parser = EvalArgumentParser(
        prog="python -m eval", description="Evaluate tool-calling models (DiaFORGE §3.3)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run_parser(sub)
    s = sub.add_parser("score", help="recompute every metric from saved transcripts (no model)")
    s.add_argument("transcripts", help="a transcripts.jsonl, or a run folder holding one")
    s.set_defaults(func=_cmd_score)
    c = sub.add_parser("compare", help="one table and one trade-off plot for several runs")
    c.add_argument("runs", nargs="+", help="run folders (or their metrics.json)")
    c.add_argument("--out", default="outputs/compare", help="folder for comparison.md and comparison.png")
    c.add_argument("--json", help="also write {label: metrics} of every run to this file")
    add_wandb_args(c)
    c.set_defaults(func=_cmd_compare)
    add_peer_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "quiet", False):
        quiet_library_bars()
    try:
        check_outputs(args)
        check_device(args)
        with results_only_on_stdout():
            return args.func(args)
    except (InputError, BackendConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
