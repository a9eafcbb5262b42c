"""`python -m eval run|score|compare`: evaluate a checkpoint, rescore transcripts, compare runs.

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

from data_gen.errors import InputError
from data_gen.llm.base import BackendConfigError, BackendError

DEFAULT_BENCH = "eval/benchmarks/diabench_heldout_v1.jsonl"
EXIT_USAGE = 2


def _user_proxy(spec: str, base_url: str | None, n: int, m: int):  # noqa: ANN202
    """`scripted` or `openai:MODEL` (any OpenAI-compatible server with --user-base-url)."""
    from data_gen.agents import LLMUser, LLMVoter, ScriptedUser, ScriptedVoter, VotingUser

    if spec == "scripted":
        return VotingUser(ScriptedUser(), ScriptedVoter(), n=n, m=m), None
    kind, _, model = spec.partition(":")
    if kind != "openai" or not model:
        raise InputError(f"unknown user proxy {spec!r}; use 'scripted' or 'openai:MODEL'")
    from data_gen.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(model, base_url=base_url)
    return VotingUser(LLMUser(backend), LLMVoter(backend), n=n, m=m), backend


async def _run(args: argparse.Namespace) -> Path:
    from data_gen.schema import load_dialogues
    from data_gen.similarity import get_encoder
    from eval.models import ModelConfig, ModelUnderTest, describe_checkpoint, offline_env
    from eval.report import write_run
    from eval.runner import DynamicConfig, near_duplicate_flags, run_dynamic, run_static, sample_benchmark
    from eval.transcripts import Transcript

    offline_env()
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in ("static", "dynamic")]
    if bad or not modes:
        raise InputError(
            f"unknown mode {bad[0] if bad else '(none)'!r} in --modes; use static, dynamic or both"
        )
    bench = sample_benchmark(load_dialogues(args.bench), args.limit, args.seed)
    cfg = ModelConfig(
        model=args.model,
        backend=args.backend,
        mode=args.mode,
        base_url=args.base_url,
        max_new_tokens=args.max_new_tokens,
        batch_size=args.batch_size,
        device=args.device,
        history_reasoning=args.history_reasoning,
        tool_style=args.tool_style,
    )
    cfg.validate()
    if cfg.backend != "openai":
        describe_checkpoint(cfg.model)  # a bad path fails here, before anything is loaded
    user, user_backend = _user_proxy(args.user_proxy, args.user_base_url, args.n_samples, args.n_voters)
    started = time.monotonic()
    if cfg.backend != "openai" and not args.quiet:
        print(f"loading {args.model} ({args.backend}, {args.mode} mode) ...", file=sys.stderr)
    model = ModelUnderTest(cfg)
    judge_backend = None
    try:
        await model.check()
        if user_backend is not None:
            await user_backend.check()
        near_dup = near_duplicate_flags(bench, get_encoder())
        records: list[dict] = []
        timings: dict[str, float] = {}
        for mode in modes:
            t0 = time.monotonic()
            if mode == "static":
                records += await run_static(model, bench, near_dup, progress=not args.quiet)
            else:
                dyn = DynamicConfig(
                    t_max=args.t_max, n_samples=args.n_samples, n_voters=args.n_voters, seed=args.seed
                )
                records += await run_dynamic(model, bench, near_dup, user, dyn, progress=not args.quiet)
            timings[mode] = round(time.monotonic() - t0, 2)
        transcripts = [Transcript.model_validate(r) for r in records]
        if args.judge:
            from data_gen.llm.openai_backend import OpenAIBackend
            from eval.metrics import ConvRelJudge

            judge_backend = OpenAIBackend(args.judge, base_url=args.judge_base_url)
            await judge_backend.check()
            judge = ConvRelJudge(judge_backend)
            for t in transcripts:
                t.convrel = await judge.grade_transcript(t)
    finally:
        await model.aclose()
        for b in (user_backend, judge_backend):
            if b is not None:
                await b.aclose()
    out = Path(args.out) if args.out else Path("outputs/eval") / _slug(args.model, args.mode)
    extra = {
        "benchmark": args.bench,
        "backend": args.backend,
        "mode": args.mode,
        "tool_style": args.tool_style,
        "user_proxy": user.name,
        "t_max": args.t_max,
        "checkpoint": model.info,
        "seconds": timings,
        "wall_seconds": round(time.monotonic() - started, 2),
    }
    wandb_cfg = (
        {"project": args.wandb_project, "run_name": args.wandb_run_name, "tags": args.wandb_tags}
        if args.wandb_project
        else None
    )
    write_run(out, transcripts, model_label=args.label or args.model, extra=extra, wandb_cfg=wandb_cfg)
    return out


def _slug(model: str, mode: str) -> str:
    name = Path(model.rstrip("/")).name or "model"
    return f"{name}-{mode}"


def _cmd_run(args: argparse.Namespace) -> int:
    out = asyncio.run(_run(args))
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    for mode in ("static", "dynamic"):
        if mode in metrics:
            m = metrics[mode]
            print(
                f"{mode:8s} Acc {m['Acc']:.3f}  FTR {m['FTR']:.3f}  TAR {m['TAR']:.3f}  "
                f"malformed {m['malformed']:.3f}  n={m['n']}"
            )
    print(f"run folder: {out}")
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from eval.report import score_transcripts

    result = score_transcripts(args.transcripts)
    print(json.dumps(result, indent=2))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from eval.report import compare_runs

    print(compare_runs(args.runs, out_dir=args.out, json_path=args.json))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m eval", description="Evaluate tool-calling models (DiaFORGE §3.3)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="evaluate a model on a benchmark, statically and/or dynamically")
    r.add_argument(
        "--model", required=True, help="model/adapter/merged folder (hf, vllm) or served model name (openai)"
    )
    r.add_argument("--bench", default=DEFAULT_BENCH, help=f"benchmark JSONL (default {DEFAULT_BENCH})")
    r.add_argument("--modes", default="static,dynamic", help="static, dynamic, or both (default)")
    r.add_argument("--backend", default="hf", choices=("hf", "openai", "vllm"))
    r.add_argument("--mode", default="prompt", choices=("prompt", "native"), help="tool presentation")
    r.add_argument("--base-url", help="OpenAI-compatible server for --backend openai")
    r.add_argument("--user-proxy", default="scripted", help="'scripted' (offline default) or 'openai:MODEL'")
    r.add_argument("--user-base-url", help="server for an openai user proxy")
    r.add_argument(
        "--judge", help="model name for the ConvRel rubric judge (OpenAI-compatible); offline: not computed"
    )
    r.add_argument("--judge-base-url")
    r.add_argument("--t-max", type=int, default=10)
    r.add_argument("--n-samples", type=int, default=3, help="user-proxy candidates per turn (n)")
    r.add_argument("--n-voters", type=int, default=3, help="voters per turn (m)")
    r.add_argument("--limit", type=int, help="evaluate a seeded sample of this many dialogues")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--batch-size", type=int, default=8)
    r.add_argument("--max-new-tokens", type=int, default=384)
    r.add_argument("--device", default="cpu")
    r.add_argument("--history-reasoning", default="strip", choices=("strip", "keep"))
    r.add_argument(
        "--tool-style", default="json", choices=("json", "compact"), help="tool listing in prompt mode"
    )
    r.add_argument("--out", help="run folder (default outputs/eval/<model>-<mode>)")
    r.add_argument("--label", help="name of the model in reports")
    r.add_argument(
        "--wandb-project", help="log the summary and transcripts to W&B (offline without an API key)"
    )
    r.add_argument("--wandb-run-name")
    r.add_argument("--wandb-tags", nargs="*", default=[])
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_cmd_run)
    s = sub.add_parser("score", help="recompute every metric from saved transcripts (no model)")
    s.add_argument("transcripts")
    s.set_defaults(func=_cmd_score)
    c = sub.add_parser("compare", help="one table and one trade-off plot for several runs")
    c.add_argument("runs", nargs="+")
    c.add_argument("--out", default="outputs/compare")
    c.add_argument("--json", help="also write {label: metrics} of every run to this file")
    c.set_defaults(func=_cmd_compare)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (InputError, BackendConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
