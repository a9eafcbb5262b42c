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

from data_gen.cliargs import OneLineArgumentParser, finite_float, positive_int
from data_gen.console import emit, results_only_on_stdout
from data_gen.errors import InputError
from data_gen.format import HISTORY_REASONING, PROMPT_MODES, TARGET_REASONING, TOOL_STYLES
from data_gen.llm.base import BackendConfigError, BackendError
from eval.policies import POLICIES

if TYPE_CHECKING:
    from data_gen.schema import Dialogue
    from eval.models import Budget, FormatChoice, ModelSpec

DEFAULT_BENCH = "eval/benchmarks/diabench_heldout_v1.jsonl"
EXIT_USAGE = 2


def _user_proxy(spec: str, base_url: str | None, n: int, m: int):  # noqa: ANN202
    """`scripted` or `openai:MODEL` (any OpenAI-compatible server with --user-base-url)."""
    from data_gen.agents import LLMUser, LLMVoter, ScriptedUser, ScriptedVoter, VotingUser

    if spec == "scripted":
        # The benchmark's own wording bank; `_run` gives it the sentence encoder once the model
        # and servers have answered, so that a bad server stays a one-line error.
        user = ScriptedUser(phrasing="heldout")
        return VotingUser(user, ScriptedVoter(), n=n, m=m), None
    kind, _, model = spec.partition(":")
    if kind != "openai" or not model:
        raise InputError(f"unknown user proxy {spec!r}; use 'scripted' or 'openai:MODEL'")
    from data_gen.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(model, base_url=base_url)
    return VotingUser(LLMUser(backend), LLMVoter(backend), n=n, m=m), backend


async def _run(args: argparse.Namespace) -> Path:
    from data_gen.schema import load_dialogues
    from data_gen.similarity import get_encoder
    from eval.models import ModelUnderTest, offline_env
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
    full_bench = load_dialogues(args.bench)
    bench = sample_benchmark(full_bench, args.limit, args.seed)
    cfg, choice = model_spec(args)
    budget = None
    if not cfg.is_policy:  # a reference policy writes its turns whole: no budget applies
        budget = run_budget(args.max_new_tokens, cfg, full_bench)
        cfg.max_new_tokens = budget.max_new_tokens
    user, user_backend = _user_proxy(args.user_proxy, args.user_base_url, args.n_samples, args.n_voters)
    started = time.monotonic()
    if cfg.backend not in ("openai", *POLICIES) and not args.quiet:
        print(f"loading {cfg.model} ({args.backend}; {_format_line(choice)}) ...", file=sys.stderr)
    model = ModelUnderTest(cfg)
    judge_backend = None
    try:
        await model.check()
        if user_backend is not None:
            await user_backend.check()
        if budget is not None:  # once everything is reachable: an error stays the only line
            print(budget.describe(), file=sys.stderr)
        encoder = get_encoder()
        near_dup = near_duplicate_flags(bench, encoder)
        if hasattr(user.user, "encoder"):  # the scripted proxy reads questions by meaning too
            user.user.encoder = encoder
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
    out = (
        Path(args.out) if args.out else Path("outputs/eval") / _slug(cfg.model, cfg.prompt_format.prompt_mode)
    )
    extra = {
        "benchmark": args.bench,
        "backend": args.backend,
        "max_new_tokens": budget.max_new_tokens if budget else None,
        "budget": budget.as_dict() if budget else None,
        "prompt_format": choice.as_dict(),
        "modes": modes,
        "user_proxy": user.name,
        "t_max": args.t_max,
        "n_samples": args.n_samples,
        "n_voters": args.n_voters,
        "limit": args.limit,
        "seed": args.seed,
        "checkpoint": model.info,
        "seconds": timings,
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


def _slug(model: str, prompt_mode: str) -> str:
    if model in POLICIES:
        return model
    name = Path(model.rstrip("/")).name or "model"
    return f"{name}-{prompt_mode}"


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
    emit(f"run folder: {out}")
    return 0


def _cmd_score(args: argparse.Namespace) -> int:
    from eval.report import score_transcripts

    result = score_transcripts(args.transcripts)
    emit(json.dumps(result, indent=2))
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from eval.report import compare_runs

    emit(compare_runs(args.runs, out_dir=args.out, json_path=args.json, wandb_cfg=wandb_config(args)))
    return 0


# --------------------------------------------------------------------------------------------
# Peer benchmarks and evaluation modes (eval.peers)
# --------------------------------------------------------------------------------------------

IMPORTERS = ("bfcl", "confetti", "tooldial", "dicebench", "dialogtool")


def _cmd_import(args: argparse.Namespace) -> int:
    from eval.peers import write_dialogues

    results = []
    if args.format == "bfcl":
        from eval.peers.bfcl import CATEGORIES, category_of, load_bfcl

        categories = [c.strip() for c in (args.category or ",".join(CATEGORIES)).split(",") if c.strip()]
        src = Path(args.src) if args.src else None
        if src is not None and src.is_file():
            cat = category_of(src)
            if cat is None:
                raise InputError("not a BFCL category file (BFCL_v<N>_<category>.json)", path=src)
            results.append(load_bfcl(cat, path=src, limit=args.limit))
        else:
            results.extend(load_bfcl(c, src, limit=args.limit) for c in categories)
    elif not args.src:
        raise InputError(f"import {args.format} needs SRC (a file or a folder)")
    elif args.format == "confetti":
        from eval.peers.confetti import load_confetti

        results.append(load_confetti(args.src))
    elif args.format == "tooldial":
        from eval.peers.tooldial import load_tooldial

        results.append(load_tooldial(args.src, api_docs=args.api_docs))
    elif args.format == "dialogtool":
        from eval.peers.dialogtool import load_dialogtool

        results.append(load_dialogtool(args.src, apps=args.api_docs))
    else:
        from eval.peers.dicebench import load_dicebench

        results.append(load_dicebench(args.src, tools=args.tools, graph=args.graph, tool_set=args.tool_set))
    dialogues = [d for r in results for d in r.dialogues]
    if args.format != "bfcl" and args.limit is not None:
        dialogues = dialogues[: args.limit]
    n = write_dialogues(args.out, dialogues)
    for r in results:
        print(r.report.summary(), file=sys.stderr)
    if args.json:
        emit(json.dumps([r.report.as_dict() for r in results], indent=2, default=str))
    else:
        for r in results:
            emit(f"{r.report.source}: {json.dumps(r.report.counts, default=str)}")
    print(f"{n} dialogues -> {args.out}", file=sys.stderr)
    return 0


def _add_model_args(p: argparse.ArgumentParser, *, required: bool = True, what: str = "") -> None:
    """--model, --backend and how to query it, shared by bfcl, next-action and turn-level."""
    p.add_argument(
        "--model",
        required=required,
        help="model/adapter/merged folder (hf, vllm) or served model name (openai)" + what,
    )
    p.add_argument("--backend", default="hf", choices=("hf", "openai", "vllm"))
    p.add_argument("--base-url", help="OpenAI-compatible server for --backend openai")
    p.add_argument("--batch-size", type=positive_int, default=8)
    p.add_argument("--max-new-tokens", type=positive_int, default=384)
    p.add_argument("--device", default="cpu")
    p.add_argument("--label", help="name of the model in reports")
    p.add_argument("--quiet", action="store_true")
    _add_format_args(p)


def _add_format_args(p: argparse.ArgumentParser) -> None:
    """The prompt-format options: unset by default, so the model's prompt_format.json decides."""
    g = p.add_argument_group(
        "prompt format",
        "default: the model folder's prompt_format.json (written by training), else the defaults",
    )
    g.add_argument(
        "--prompt-mode", choices=PROMPT_MODES, help="prompt (tools in the system prompt) or native"
    )
    g.add_argument("--tool-style", choices=TOOL_STYLES, help="tool listing in prompt mode (default json)")
    g.add_argument("--history-reasoning", choices=HISTORY_REASONING, help="earlier thoughts (default strip)")
    g.add_argument(
        "--target-reasoning",
        choices=TARGET_REASONING,
        help="whether the model writes thoughts (default keep); sizes the auto token budget",
    )
    g.add_argument(
        "--system-prompt-file", help="custom system prompt; '{tools}' is filled with the candidates"
    )
    g.add_argument(
        "--prompt-format",
        help="a prompt_format.json (or a model folder holding one) to use instead of the model's own, "
        "e.g. to prompt a base model in its tuned model's format",
    )
    g.add_argument("--mode", dest="legacy_mode", choices=PROMPT_MODES, help=argparse.SUPPRESS)


def _add_wandb_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Weights & Biases", "offline into the run folder when there is no API key")
    g.add_argument("--wandb-project", help="log the run's settings, metrics and files to this W&B project")
    g.add_argument("--wandb-entity", help="W&B team or user (default: the key's default entity)")
    g.add_argument("--wandb-run-name", help="W&B run name (default: the model label)")
    g.add_argument("--wandb-tags", nargs="*", default=[])


def wandb_config(args: argparse.Namespace) -> dict | None:
    """`write_run`'s `wandb_cfg` from the command line: None without --wandb-project."""
    if not getattr(args, "wandb_project", None):
        return None
    return {
        "project": args.wandb_project,
        "entity": args.wandb_entity,
        "run_name": args.wandb_run_name,
        "tags": args.wandb_tags,
    }


def format_options(args: argparse.Namespace) -> dict:
    """The prompt-format options given on the command line (None: not given)."""
    from data_gen.format import read_system_prompt_file

    prompt_mode = args.prompt_mode
    if getattr(args, "legacy_mode", None):
        print("note: --mode is now --prompt-mode (--modes chooses static/dynamic)", file=sys.stderr)
        prompt_mode = prompt_mode or args.legacy_mode
    return {
        "prompt_mode": prompt_mode,
        "tool_style": args.tool_style,
        "history_reasoning": args.history_reasoning,
        "target_reasoning": args.target_reasoning,
        "system_prompt": read_system_prompt_file(args.system_prompt_file)
        if args.system_prompt_file
        else None,
    }


def _format_line(choice: FormatChoice) -> str:
    where = {
        "prompt_format.json": f"from {choice.file}",
        "--prompt-format": f"from {choice.file}",
        "defaults": "defaults",
        "options": "from the options",
    }
    return f"{choice.prompt_format.describe()} ({where[choice.source]})"


def model_spec(args: argparse.Namespace) -> tuple[ModelSpec, FormatChoice]:
    """The model under test as the command line describes it, validated, and its prompt format
    (the model folder's prompt_format.json, the options over it; a warning on stderr for each
    option that contradicts the file). A local checkpoint path is checked here, before anything
    is loaded. A reference policy needs no `--model` (its name is the label); every other backend
    does."""
    from eval.models import ModelSpec, choose_prompt_format, describe_checkpoint

    model = args.model
    if not model:
        if args.backend not in POLICIES:
            raise InputError(
                f"--backend {args.backend} needs --model (a model folder or a served model name)"
            )
        model = args.backend
    if args.backend in ("hf", "vllm"):
        describe_checkpoint(model)
    choice = choose_prompt_format(
        model if args.backend not in POLICIES else None, format_options(args), args.prompt_format
    )
    for warning in choice.warnings():
        print(warning, file=sys.stderr)
    budget = args.max_new_tokens
    cfg = ModelSpec(
        model=model,
        backend=args.backend,
        prompt_format=choice.prompt_format,
        base_url=args.base_url,
        max_new_tokens=budget if isinstance(budget, int) else ModelSpec.max_new_tokens,
        batch_size=args.batch_size,
        device=args.device,
        seed=getattr(args, "seed", 0),
    )
    cfg.validate()
    return cfg, choice


def _load_model(args: argparse.Namespace):  # noqa: ANN202 - (ModelUnderTest, FormatChoice)
    from eval.models import ModelUnderTest, offline_env

    offline_env()
    cfg, choice = model_spec(args)
    if cfg.backend in ("hf", "vllm") and not args.quiet:
        print(f"loading {args.model} ({args.backend}; {_format_line(choice)}) ...", file=sys.stderr)
    model = ModelUnderTest(cfg)
    if args.label:
        model.label = args.label
    return model, choice


def _run_folder(args: argparse.Namespace, kind: str, prompt_mode: str) -> Path:
    return Path(args.out) if args.out else Path("outputs") / kind / _slug(args.model, prompt_mode)


def _log_peer_run(args: argparse.Namespace, out: Path, metrics: dict, kind: str) -> None:
    """The run folder of a peer command to W&B (with --wandb-project): settings, metrics, files."""
    cfg = wandb_config(args)
    if cfg is None:
        return
    from eval.report import log_folder_to_wandb

    settings = {
        k: v
        for k, v in vars(args).items()
        if k not in ("func", "legacy_mode", "quiet") and not k.startswith("wandb_")
    }
    log_folder_to_wandb(
        out,
        metrics,
        job_type=kind,
        settings=settings,
        **{k: v for k, v in cfg.items() if v is not None},
        run_name=cfg["run_name"] or f"{kind}: {args.label or args.model}",
    )


async def _with_model(args: argparse.Namespace, fn):  # noqa: ANN001, ANN202
    """(result of `fn(model)`, the model's FormatChoice)."""
    model, choice = _load_model(args)
    try:
        await model.check()
        return await fn(model), choice
    finally:
        await model.aclose()


def _cmd_bfcl(args: argparse.Namespace) -> int:
    from eval.peers.bfcl import (
        ALL_CATEGORIES,
        CATEGORIES,
        SINGLE_TURN,
        compare_bfcl,
        format_bfcl,
        load_bfcl,
        run_bfcl,
        write_bfcl_run,
    )

    groups = {"parity": CATEGORIES, "single_turn": SINGLE_TURN, "all": ALL_CATEGORIES}
    categories = [
        c
        for part in args.categories.split(",")
        if part.strip()
        for c in groups.get(part.strip(), (part.strip(),))
    ]
    bad = [c for c in categories if c not in ALL_CATEGORIES]
    if bad or not categories:
        raise InputError(
            f"unknown BFCL category {bad[0] if bad else '(none)'!r}; choose from "
            f"{', '.join(ALL_CATEGORIES)}, or a group: {', '.join(groups)}"
        )
    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, got {args.limit}")
    baseline = None
    if args.baseline:
        base_path = Path(args.baseline)
        base_path = base_path / "bfcl_metrics.json" if base_path.is_dir() else base_path
        if not base_path.is_file():
            raise InputError("baseline run has no bfcl_metrics.json", path=base_path)
        baseline = json.loads(base_path.read_text(encoding="utf-8"))
    entries = {c: load_bfcl(c, args.data, limit=args.limit).dialogues for c in categories}
    started = time.monotonic()
    (metrics, records), choice = asyncio.run(
        _with_model(args, lambda m: run_bfcl(m, entries, progress=not args.quiet))
    )
    metrics["limit"] = args.limit
    metrics["prompt_format"] = choice.as_dict()
    metrics["backend"] = args.backend
    metrics["wall_seconds"] = round(time.monotonic() - started, 2)
    comparison = compare_bfcl(baseline, metrics, tolerance=args.tolerance) if baseline else None
    folder = _run_folder(args, "bfcl", choice.prompt_format.prompt_mode)
    out = write_bfcl_run(folder, metrics, records, comparison=comparison)
    _log_peer_run(args, out, metrics, "bfcl")
    emit(format_bfcl(metrics, comparison))
    emit(f"run folder: {out}")
    return 3 if comparison and comparison["regressions"] and args.fail_on_regression else 0


def _bench(args: argparse.Namespace) -> list:
    from data_gen.schema import load_dialogues
    from eval.runner import sample_benchmark

    return sample_benchmark(load_dialogues(args.bench), args.limit, args.seed)


def _cmd_next_action_score(args: argparse.Namespace) -> int:
    """``next-action score``: gold and predicted label files in a peer's published form."""
    from eval.peers.label_files import (
        format_label_scores,
        label_of,
        read_label_file,
        read_states,
        score_dst,
        score_label_files,
    )

    if not args.gold or not args.pred:
        raise InputError("next-action score needs --gold FILE and --pred FILE")
    if args.task == "dst":
        gold, pred = read_states(args.gold, gold=True), read_states(args.pred, gold=False)
    else:
        gold = [label_of(x, args.gold, i) for i, x in enumerate(read_label_file(args.gold), start=1)]
        pred = [label_of(x, args.pred, i) for i, x in enumerate(read_label_file(args.pred), start=1)]
    if len(gold) != len(pred):
        raise InputError(f"{len(gold)} gold labels but {len(pred)} predictions", path=args.pred)
    if args.task == "dst":
        metrics = score_dst(gold, pred)
        emit(
            f"DST: accuracy {metrics['accuracy']:.3f} ({metrics['n'] - metrics['errors']}/{metrics['n']}), "
            f"generation errors {metrics['generation_errors']}"
        )
    else:
        metrics = score_label_files(gold, pred, labels=args.labels)
        emit(format_label_scores(metrics))
    if args.json:
        emit(json.dumps(metrics, indent=2))
    return 0


def _cmd_next_action(args: argparse.Namespace) -> int:
    from eval.peers.next_action import (
        format_next_action,
        run_next_action,
        score_records,
        write_next_action_run,
    )

    if args.verb == "score":
        return _cmd_next_action_score(args)
    if args.predictions:
        from eval.peers import read_json_lines

        records = [obj for _, obj in read_json_lines(args.predictions)]
        for i, r in enumerate(records, start=1):
            if not isinstance(r, dict) or not {"gold", "pred"} <= set(r):
                raise InputError(
                    "a prediction record needs 'gold' and 'pred'", path=args.predictions, record=i
                )
        metrics = score_records(records, tools_known=any(r.get("pred_tools") for r in records))
        emit(format_next_action(metrics))
        if args.json:
            emit(json.dumps(metrics, indent=2))
        return 0
    if not args.model:
        raise InputError("next-action needs --model (or --predictions FILE to rescore saved predictions)")
    bench = _bench(args)
    (metrics, records), choice = asyncio.run(
        _with_model(
            args,
            lambda m: run_next_action(
                m, bench, method=args.method, labels=args.labels, progress=not args.quiet
            ),
        )
    )
    metrics["model"] = args.label or args.model
    metrics["benchmark"] = args.bench
    metrics["prompt_format"] = choice.as_dict()
    out = write_next_action_run(
        _run_folder(args, "next_action", choice.prompt_format.prompt_mode), metrics, records
    )
    _log_peer_run(args, out, metrics, "next-action")
    emit(format_next_action(metrics))
    emit(f"run folder: {out}")
    return 0


def _cmd_dicebench(args: argparse.Namespace) -> int:
    from eval.peers.dicebench import (
        format_dice_em,
        load_dicebench,
        read_dice_predictions,
        run_dicebench,
        score_dice_predictions,
        write_dice_predictions,
    )

    result = load_dicebench(args.data, tools=args.tools, tool_set=args.tool_set)
    dialogues = result.dialogues[: args.limit] if args.limit is not None else result.dialogues
    if args.verb == "score":
        if not args.pred:
            raise InputError("dicebench score needs --pred (a prediction file or folder)")
        metrics = score_dice_predictions(dialogues, read_dice_predictions(args.pred))
        metrics["predictions"] = args.pred
    else:
        if not args.model and args.backend not in POLICIES:
            raise InputError("dicebench run needs --model (or a reference policy as --backend)")
        files, choice = asyncio.run(
            _with_model(args, lambda m: run_dicebench(m, dialogues, progress=not args.quiet))
        )
        label = args.label or args.model or args.backend
        if args.model:
            out = _run_folder(args, "dicebench", choice.prompt_format.prompt_mode)
        else:
            out = Path(args.out or f"outputs/dicebench/{label}")
        paths = write_dice_predictions(out, label, files)
        metrics = score_dice_predictions(dialogues, read_dice_predictions(out))
        metrics["model"] = label
        metrics["prompt_format"] = choice.as_dict()
        (out / "dicebench_metrics.json").write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
        print(f"{len(paths)} prediction files -> {out}", file=sys.stderr)
    metrics["data"] = args.data
    metrics["tool_set"] = result.report.counts["tool_set"]
    emit(format_dice_em(metrics))
    if args.json:
        emit(json.dumps(metrics, indent=2))
    return 0


def _cmd_turn_level(args: argparse.Namespace) -> int:
    from eval.peers.acts import cmd_act_set, run_with_act_classifier
    from eval.peers.turn_level import (
        format_turn_level,
        run_turn_level,
        turn_level_metrics,
        write_turn_level_run,
    )

    if args.verb == "acts":
        return cmd_act_set(args)
    if args.records:
        from eval.peers import read_json_lines

        records = [obj for _, obj in read_json_lines(args.records)]
        metrics = turn_level_metrics(records)
        emit(format_turn_level(metrics))
        if args.json:
            emit(json.dumps(metrics, indent=2))
        return 0
    if not args.model:
        raise InputError("turn-level needs --model (or --records FILE to rescore saved records)")
    bench = _bench(args)
    (metrics, records), choice = asyncio.run(
        _with_model(
            args,
            lambda m: run_with_act_classifier(
                args, lambda c: run_turn_level(m, bench, progress=not args.quiet, act_classifier=c)
            ),
        )
    )
    metrics["act_classifier"] = args.act_classifier
    metrics["model"] = args.label or args.model
    metrics["benchmark"] = args.bench
    metrics["prompt_format"] = choice.as_dict()
    out = write_turn_level_run(
        _run_folder(args, "turn_level", choice.prompt_format.prompt_mode), metrics, records
    )
    _log_peer_run(args, out, metrics, "turn-level")
    emit(format_turn_level(metrics))
    emit(f"run folder: {out}")
    return 0


def _add_peer_parsers(sub: argparse._SubParsersAction) -> None:
    from eval.peers.acts import add_turn_level_act_args

    i = sub.add_parser(
        "import",
        help="import a peer benchmark (BFCL, CONFETTI, ToolDial, DICE-Bench, DialogTool) as our dialogues",
    )
    i.add_argument("format", choices=IMPORTERS)
    i.add_argument(
        "src",
        nargs="?",
        help="file or folder (bfcl: a data folder or a category file; default: the installed bfcl-eval wheel)",
    )
    i.add_argument("--out", required=True, help="dialogues JSONL to write")
    i.add_argument(
        "--category", help="bfcl: comma-separated categories (default: the five of the parity check)"
    )
    i.add_argument(
        "--api-docs",
        help="tooldial: its API file (after_coor_before_emb.json); dialogtool: the Apps file "
        "(default: apps.json beside the dialogues)",
    )
    i.add_argument("--tools", help="dicebench: tool_docs.json or tool_graph.json")
    i.add_argument("--graph", help="dicebench: tool_graph.json (node and edge counts in the report)")
    i.add_argument(
        "--tool-set",
        default="all",
        choices=("all", "own"),
        help="dicebench: every documented tool in every instance (DICE-Bench's prompt, default) "
        "or only the functions an instance calls",
    )
    i.add_argument("--limit", type=positive_int, help="import at most this many records (bfcl: per category)")
    i.add_argument("--json", action="store_true", help="print the import reports as JSON")
    i.set_defaults(func=_cmd_import)

    b = sub.add_parser("bfcl", help="BFCL parity check: per-category AST accuracy (DiaFORGE C.6)")
    _add_model_args(b)
    b.add_argument(
        "--categories",
        default="parity",
        help="comma-separated BFCL categories or groups: parity (the five of DiaFORGE C.6, default), "
        "single_turn (all 13), all (single- and multi-turn)",
    )
    b.add_argument("--limit", type=positive_int, help="first N entries of each category")
    b.add_argument("--data", help="BFCL data folder (default: the installed bfcl-eval wheel)")
    b.add_argument("--out", help="run folder (default outputs/bfcl/<model>-<prompt mode>)")
    b.add_argument("--baseline", help="run folder (or bfcl_metrics.json) of the base model: report deltas")
    b.add_argument(
        "--tolerance",
        type=finite_float,
        default=0.02,
        help="allowed accuracy drop per category (default 0.02)",
    )
    b.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 3 when a category drops by more than --tolerance",
    )
    _add_wandb_args(b)
    b.set_defaults(func=_cmd_bfcl)

    n = sub.add_parser(
        "next-action",
        help="next-action prediction (ToolDial / DialogTool actions); 'next-action score' rescores label files",
    )
    n.add_argument(
        "verb",
        nargs="?",
        choices=("run", "score"),
        default="run",
        help="run (default): predict with --model; score: compare --gold and --pred label files",
    )
    n.add_argument(
        "--labels",
        default="tooldial",
        choices=("tooldial", "dialogtool"),
        help="action label set: ToolDial's 8 system actions or DialogTool's 9 SGD actions",
    )
    n.add_argument("--gold", help="score: gold labels (JSON array of labels or of {'label': ...})")
    n.add_argument("--pred", help="score: predicted labels (JSON array)")
    n.add_argument(
        "--task",
        default="action",
        choices=("action", "dst"),
        help="score: action labels, or dialogue states (ToolDial DST exact match)",
    )
    _add_model_args(n, required=False, what="; omit with --predictions")
    n.add_argument(
        "--bench", default=DEFAULT_BENCH, help=f"dialogues JSONL with action labels (default {DEFAULT_BENCH})"
    )
    n.add_argument(
        "--method",
        default="reply",
        choices=("reply", "label"),
        help="read the action off a reply, or ask for a label",
    )
    n.add_argument("--limit", type=positive_int, help="a seeded sample of this many dialogues")
    n.add_argument("--seed", type=int, default=0)
    n.add_argument("--out", help="run folder (default outputs/next_action/<model>-<prompt mode>)")
    n.add_argument("--predictions", help="rescore a next_action_predictions.jsonl (no model)")
    n.add_argument("--json", action="store_true", help="with --predictions: also print the metrics as JSON")
    _add_wandb_args(n)
    n.set_defaults(func=_cmd_next_action)

    d = sub.add_parser(
        "dicebench",
        help="DICE-Bench exact match per round and party count; 'run' queries a model, 'score' "
        "rescores prediction files in DICE-Bench's own format",
    )
    d.add_argument("verb", choices=("run", "score"))
    d.add_argument("--data", required=True, help="a round_<n>.json file or a folder of them")
    d.add_argument("--tools", help="tool_docs.json or tool_graph.json (run: the tools in every prompt)")
    d.add_argument(
        "--tool-set",
        default="all",
        choices=("all", "own"),
        help="all (default): every documented tool in every prompt, as DICE-Bench; own: an "
        "instance's own functions only (not comparable with the paper)",
    )
    d.add_argument("--pred", help="score: <model>_round_<n>.json prediction file or folder")
    d.add_argument("--model", help="run: model folder or served model name")
    d.add_argument("--backend", default="hf", choices=("hf", "openai", "vllm", *POLICIES))
    d.add_argument("--base-url")
    d.add_argument("--batch-size", type=positive_int, default=8)
    d.add_argument(
        "--max-new-tokens", type=positive_int, default=2000, help="DICE-Bench generates up to 2000"
    )
    d.add_argument("--device", default="cpu")
    d.add_argument("--label")
    d.add_argument("--quiet", action="store_true")
    d.add_argument("--limit", type=positive_int, help="the first N instances")
    d.add_argument("--out", help="run: folder for the prediction files (default outputs/dicebench/<model>)")
    d.add_argument("--json", action="store_true", help="also print the metrics as JSON")
    _add_format_args(d)
    d.set_defaults(func=_cmd_dicebench)

    t = sub.add_parser(
        "turn-level", help="turn-level function calling with gold history, chain score, DA accuracy"
    )
    _add_model_args(t, required=False, what="; omit with --records")
    t.add_argument(
        "--bench", default=DEFAULT_BENCH, help=f"reference dialogues JSONL (default {DEFAULT_BENCH})"
    )
    t.add_argument("--limit", type=positive_int, help="a seeded sample of this many dialogues")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--out", help="run folder (default outputs/turn_level/<model>-<prompt mode>)")
    t.add_argument("--records", help="rescore a turn_level_records.jsonl (no model)")
    t.add_argument("--json", action="store_true", help="with --records: also print the metrics as JSON")
    add_turn_level_act_args(t)
    _add_wandb_args(t)
    t.set_defaults(func=_cmd_turn_level)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog="python -m eval", description="Evaluate tool-calling models (DiaFORGE §3.3)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
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
    r.add_argument("--judge-base-url")
    r.add_argument("--t-max", type=positive_int, default=10)
    r.add_argument("--n-samples", type=positive_int, default=3, help="user-proxy candidates per turn (n)")
    r.add_argument("--n-voters", type=positive_int, default=3, help="voters per turn (m)")
    r.add_argument("--limit", type=positive_int, help="evaluate a seeded sample of this many dialogues")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--batch-size", type=positive_int, default=8)
    r.add_argument(
        "--max-new-tokens",
        type=max_new_tokens_arg,
        default="auto",
        help="reply length cap: a number, or auto (default): the benchmark's longest reference "
        "assistant turn in the model's tokenizer, plus 25%% (at least 32)",
    )
    r.add_argument("--device", default="cpu")
    r.add_argument("--out", help="run folder (default outputs/eval/<model>-<prompt mode>)")
    r.add_argument("--label", help="name of the model in reports")
    r.add_argument("--quiet", action="store_true")
    _add_format_args(r)
    _add_wandb_args(r)
    r.set_defaults(func=_cmd_run)
    s = sub.add_parser("score", help="recompute every metric from saved transcripts (no model)")
    s.add_argument("transcripts")
    s.set_defaults(func=_cmd_score)
    c = sub.add_parser("compare", help="one table and one trade-off plot for several runs")
    c.add_argument("runs", nargs="+")
    c.add_argument("--out", default="outputs/compare")
    c.add_argument("--json", help="also write {label: metrics} of every run to this file")
    _add_wandb_args(c)
    c.set_defaults(func=_cmd_compare)
    _add_peer_parsers(sub)
    from eval.demo import add_demo_parsers

    add_demo_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        out = getattr(args, "out", None)
        is_run_folder = args.command in ("run", "compare", "next-action", "turn-level")
        if out and is_run_folder and Path(out).exists() and not Path(out).is_dir():
            raise InputError(
                "exists and is not a folder; --out names the run folder", path=out, field="--out"
            )
        with results_only_on_stdout():
            return args.func(args)
    except (InputError, BackendConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BackendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
