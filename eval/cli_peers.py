"""The peer-benchmark commands of ``python -m diaforge.eval``: ``import`` (BFCL, CONFETTI, ToolDial,
DICE-Bench, DialogTool, When2Call as our dialogues), ``bfcl`` (the parity check),
``next-action``, ``dicebench``, ``turn-level`` and ``when2call`` (`diaforge.eval.peers`).

Every user-caused error raises `InputError`, which `diaforge.eval.cli.main` prints as one line (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from diaforge.cliargs import finite_float, output_path, positive_int
from diaforge.console import emit
from diaforge.errors import InputError
from diaforge.eval.cli_options import (
    add_model_args,
    add_wandb_args,
    log_peer_run,
    run_folder,
    with_model,
)
from diaforge.eval.eval_config import DEFAULT_BENCH
from diaforge.eval.policies import POLICIES

__all__ = ["IMPORTERS", "add_peer_parsers"]

IMPORTERS = ("bfcl", "confetti", "tooldial", "dicebench", "dialogtool", "when2call")


def _cmd_import(args: argparse.Namespace) -> int:
    from diaforge.eval.peers import write_dialogues

    results = []
    if args.format == "bfcl":
        from diaforge.eval.peers.bfcl.categories import CATEGORIES, category_of
        from diaforge.eval.peers.bfcl.importer import load_bfcl

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
        from diaforge.eval.peers.confetti import load_confetti

        results.append(load_confetti(args.src))
    elif args.format == "tooldial":
        from diaforge.eval.peers.tooldial import load_tooldial

        results.append(load_tooldial(args.src, api_docs=args.api_docs))
    elif args.format == "dialogtool":
        from diaforge.eval.peers.dialogtool import load_dialogtool

        results.append(load_dialogtool(args.src, apps=args.api_docs))
    elif args.format == "when2call":
        from diaforge.eval.peers.when2call import load_when2call

        results.append(load_when2call(args.src))
    else:
        from diaforge.eval.peers.dicebench import load_dicebench

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


def _cmd_bfcl(args: argparse.Namespace) -> int:
    from diaforge.eval.peers.bfcl.categories import ALL_CATEGORIES, CATEGORIES, SINGLE_TURN
    from diaforge.eval.peers.bfcl.importer import load_bfcl
    from diaforge.eval.peers.bfcl.runner import compare_bfcl, format_bfcl, run_bfcl, write_bfcl_run

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
        with_model(args, lambda m: run_bfcl(m, entries, progress=not args.quiet))
    )
    metrics["limit"] = args.limit
    metrics["prompt_format"] = choice.as_dict()
    metrics["backend"] = args.backend
    metrics["wall_seconds"] = round(time.monotonic() - started, 2)
    comparison = compare_bfcl(baseline, metrics, tolerance=args.tolerance) if baseline else None
    folder = run_folder(args, "bfcl", choice.prompt_format.prompt_mode)
    out = write_bfcl_run(folder, metrics, records, comparison=comparison)
    log_peer_run(args, out, metrics, "bfcl")
    emit(format_bfcl(metrics, comparison))
    emit(f"run folder: {out}")
    return 3 if comparison and comparison["regressions"] and args.fail_on_regression else 0


def _bench(args: argparse.Namespace) -> list:
    from diaforge.eval.runner import sample_benchmark
    from diaforge.schema import load_dialogues

    return sample_benchmark(load_dialogues(args.bench), args.limit, args.seed)


def _cmd_next_action_score(args: argparse.Namespace) -> int:
    """``next-action score``: gold and predicted label files in a peer's published form."""
    from diaforge.eval.peers.label_files import (
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
    from diaforge.eval.peers.next_action import (
        format_next_action,
        run_next_action,
        score_records,
        write_next_action_run,
    )

    if args.verb == "score":
        return _cmd_next_action_score(args)
    if args.predictions:
        from diaforge.eval.peers import read_json_lines

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
        with_model(
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
        run_folder(args, "next_action", choice.prompt_format.prompt_mode), metrics, records
    )
    log_peer_run(args, out, metrics, "next-action")
    emit(format_next_action(metrics))
    emit(f"run folder: {out}")
    return 0


def _cmd_dicebench(args: argparse.Namespace) -> int:
    from diaforge.eval.peers.dicebench import load_dicebench
    from diaforge.eval.peers.dicebench_em import (
        format_dice_em,
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
            with_model(args, lambda m: run_dicebench(m, dialogues, progress=not args.quiet))
        )
        label = args.label or args.model or args.backend
        if args.model:
            out = run_folder(args, "dicebench", choice.prompt_format.prompt_mode)
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
    from diaforge.eval.peers.acts import cmd_act_set, run_with_act_classifier
    from diaforge.eval.peers.turn_level import (
        format_turn_level,
        run_turn_level,
        turn_level_metrics,
        write_turn_level_run,
    )

    if args.verb == "acts":
        return cmd_act_set(args)
    if args.records:
        from diaforge.eval.peers import read_json_lines

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
        with_model(
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
        run_folder(args, "turn_level", choice.prompt_format.prompt_mode), metrics, records
    )
    log_peer_run(args, out, metrics, "turn-level")
    emit(format_turn_level(metrics))
    emit(f"run folder: {out}")
    return 0


def _cmd_when2call(args: argparse.Namespace) -> int:
    """``when2call score``: When2Call's metrics over an lm-eval samples log or a judge output."""
    from diaforge.eval.peers.when2call_scores import format_when2call, read_predictions, score_when2call

    form, items = read_predictions(args.pred)
    metrics = score_when2call(items, form)
    metrics["predictions"] = args.pred
    emit(format_when2call(metrics))
    if args.json:
        emit(json.dumps(metrics, indent=2))
    return 0


def _add_import_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval import``."""
    i = sub.add_parser(
        "import",
        help="import a peer benchmark (BFCL, CONFETTI, ToolDial, DICE-Bench, DialogTool, When2Call) "
        "as our dialogues",
    )
    i.add_argument("format", choices=IMPORTERS, help="the peer benchmark to import")
    i.add_argument(
        "src",
        nargs="?",
        help="file or folder (bfcl: a data folder or a category file, default: the installed bfcl-eval "
        "wheel; when2call: a test file or a folder holding when2call_test_mcq.jsonl)",
    )
    i.add_argument("--out", type=output_path, required=True, help="dialogues JSONL to write")
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


def _add_bfcl_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval bfcl``."""
    b = sub.add_parser("bfcl", help="BFCL parity check: per-category AST accuracy (DiaFORGE C.6)")
    add_model_args(b, required=True)
    b.add_argument(
        "--categories",
        default="parity",
        help="comma-separated BFCL categories or groups: parity (the five of DiaFORGE C.6, default), "
        "single_turn (all 13), all (single- and multi-turn)",
    )
    b.add_argument("--limit", type=positive_int, help="first N entries of each category")
    b.add_argument("--data", help="BFCL data folder (default: the installed bfcl-eval wheel)")
    b.add_argument("--out", type=output_path, help="run folder (default outputs/bfcl/<model>-<prompt mode>)")
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
    add_wandb_args(b)
    b.set_defaults(func=_cmd_bfcl)


def _add_next_action_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval next-action``."""
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
    add_model_args(n, required=False, what="; omit with --predictions")
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
    n.add_argument("--seed", type=int, default=0, help="seed of the benchmark sample")
    n.add_argument(
        "--out", type=output_path, help="run folder (default outputs/next_action/<model>-<prompt mode>)"
    )
    n.add_argument("--predictions", help="rescore a next_action_predictions.jsonl (no model)")
    n.add_argument("--json", action="store_true", help="with --predictions: also print the metrics as JSON")
    add_wandb_args(n)
    n.set_defaults(func=_cmd_next_action)


def _add_dicebench_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval dicebench``."""
    d = sub.add_parser(
        "dicebench",
        help="DICE-Bench exact match per round and party count; 'run' queries a model, 'score' "
        "rescores prediction files in DICE-Bench's own format",
    )
    d.add_argument(
        "verb",
        choices=("run", "score"),
        help="run: query a model on every round; score: rescore --pred files",
    )
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
    add_model_args(d, policies=True, max_new_tokens=2000, what="; run only")
    d.add_argument("--limit", type=positive_int, help="the first N instances")
    d.add_argument(
        "--out",
        type=output_path,
        help="run: folder for the prediction files (default outputs/dicebench/<model>)",
    )
    d.add_argument("--json", action="store_true", help="also print the metrics as JSON")
    d.set_defaults(func=_cmd_dicebench)


def _add_turn_level_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval turn-level``."""
    from diaforge.eval.peers.acts import add_turn_level_act_args

    t = sub.add_parser(
        "turn-level", help="turn-level function calling with gold history, chain score, DA accuracy"
    )
    add_model_args(t, required=False, what="; omit with --records")
    t.add_argument(
        "--bench", default=DEFAULT_BENCH, help=f"reference dialogues JSONL (default {DEFAULT_BENCH})"
    )
    t.add_argument("--limit", type=positive_int, help="a seeded sample of this many dialogues")
    t.add_argument("--seed", type=int, default=0, help="seed of the benchmark sample")
    t.add_argument(
        "--out", type=output_path, help="run folder (default outputs/turn_level/<model>-<prompt mode>)"
    )
    t.add_argument("--records", help="rescore a turn_level_records.jsonl (no model)")
    t.add_argument("--json", action="store_true", help="with --records: also print the metrics as JSON")
    add_turn_level_act_args(t)
    add_wandb_args(t)
    t.set_defaults(func=_cmd_turn_level)


def _add_when2call_parser(sub: argparse._SubParsersAction) -> None:
    """``python -m diaforge.eval when2call``."""
    w = sub.add_parser(
        "when2call",
        help="When2Call's metrics (macro F1, acc-norm, tool hallucination rate) over its lm-eval "
        "samples log or its LLM-judge output",
    )
    w.add_argument(
        "verb", choices=("score",), help="score: rescore a prediction file in When2Call's own form"
    )
    w.add_argument(
        "--pred",
        required=True,
        help="lm-eval-harness samples_when2call-*.jsonl (--log_samples) or run_openai_judge.py output",
    )
    w.add_argument("--json", action="store_true", help="also print the metrics as JSON")
    w.set_defaults(func=_cmd_when2call)


def add_peer_parsers(sub: argparse._SubParsersAction) -> None:
    """The peer-benchmark subcommands: import, bfcl, next-action, dicebench, turn-level, when2call."""
    _add_import_parser(sub)
    _add_bfcl_parser(sub)
    _add_next_action_parser(sub)
    _add_dicebench_parser(sub)
    _add_turn_level_parser(sub)
    _add_when2call_parser(sub)
