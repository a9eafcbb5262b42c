"""Benchmarks on this machine (CPU), measured in one run, printed as a table and written to
--out (outputs/bench/results.json under the working folder by default; the reference numbers of
this checkout are bench/results.json, refreshed with --out bench/results.json). What each number
means: bench/README.md.

    python -m diaforge.bench.run [--out FILE] [--only token_ratio,loss_parity,...]
    diaforge bench [--out FILE] [--only ...]

Nothing is written outside the folder of --out: SmolLM2 is read from the checkout's
outputs/models when it is there, else materialised into <folder of --out>/models.

Parts (all by default):

- token_ratio:  training tokens per epoch, prefix-shared over naive turn slicing, on a bundled
                corpus of scripted dialogues, with SmolLM2's tokenizer and the demo recipe's slicing;
- loss_parity:  largest per-sample loss difference between the two on a tiny random Llama with LoRA
                in fp32 (and the largest relative difference of the LoRA gradients);
- step_speedup: LoRA training throughput (samples per second) of SmolLM2-135M on CPU, prefix-shared
                over naive, on the same dialogues;
- listing_rows: dialogues per training minute of SmolLM2-135M on CPU (full fine-tuning, as the demo),
                shared-listing rows (`share_listing`) over today's rows, on the same dialogues generated
                with `--dialogues-per-listing 6`; with tokens per dialogue on the whole corpus
                (bench/listing_rows.py);
- loss_positions: step time of the prefix-shared trainer on SmolLM2, loss at every position over
                loss at the trained positions only (bench/loss_positions.py);
- dpo_shared:   DPO step time of SmolLM2-135M on CPU, TRL's rows (the prompt read twice) over
                shared-prompt rows (the prompt once), with tokens per pair (bench/dpo_shared.py);
- datagen:      requests per second through the OpenAI backend against a local OpenAI-compatible
                server with a fixed latency, over the ideal (concurrency / latency), at 8, 32, 64
                requests in flight; also through the engine's own scheduling (seeds of sequential
                requests, twice the concurrency in flight, one shared request limit);
- dynamic_eval: wall time of dynamic evaluation of SmolLM2-135M, one dialogue at a time with
                every prompt recomputed, over batched through the prefix cache (batch 8); also
                batched without the cache.
- eval_loop:    the demo's evaluation loop (static and dynamic, demo format and a realistic
                budget), one dialogue at a time without cache or loop stop, over batch 8 through
                the prefix cache with the loop stop (bench/evalloop.py).
- eval_batching: the dynamic loop with calls constrained, chunks of 8 over continuous batching
                of 16 rows (also of 8, and 16 with the concatenating cache);
                `--batching-model` a tuned model (bench/evalloop.py).
- eval_speculation: the evaluation loop with every decoding aid on, forward passes with prompt-lookup
                speculation over without, wall time likewise, and whether the transcripts are identical;
                `--speculation-model` a tuned model (bench/speculation.py).
- serve:        requests per second of `diaforge serve` on SmolLM2 at 8 concurrent clients over 1
                (also 16), and over `transformers serve`'s on the same requests (bench/serve.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.bench.evalloop import add_batching_args
from diaforge.bench.inputs import (
    BENCH,
    DEMO_RECIPE,
    FIXTURE,
    ROOT,
    demo_slicing,
    generate_corpus,
    log,
    slice_samples,
    smollm2_path,
)
from diaforge.bench.serve import add_serve_args
from diaforge.bench.speculation import add_speculation_args
from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, output_path
from diaforge.format import HISTORY_REASONING

# Modest CPU use on a shared machine: one thread unless told otherwise (before torch is imported;
# nothing above imports it).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

PARTS = (
    "token_ratio",
    "loss_parity",
    "step_speedup",
    "listing_rows",
    "loss_positions",
    "dpo_shared",
    "datagen",
    "dynamic_eval",
    "eval_loop",
    "eval_batching",
    "eval_speculation",
    "serve",
)
DEFAULT_OUT = "outputs/bench/results.json"

# --------------------------------------------------------------------------------------------
# 1. Token ratio
# --------------------------------------------------------------------------------------------


def bench_token_ratio(dialogues, tokenizer) -> dict[str, Any]:
    from diaforge.train.prefix_shared import build_prefix_shared

    settings = demo_slicing()
    samples, _ = slice_samples(tokenizer, dialogues, **settings)
    _, stats = build_prefix_shared(samples, max_length=settings["max_length"])
    headline = stats.as_dict()
    variants = {}
    for history in HISTORY_REASONING:
        for style, max_length in (("compact", settings["max_length"]), ("json", 4096)):
            s, _ = slice_samples(
                tokenizer,
                dialogues,
                **{**settings, "history_reasoning": history, "tool_style": style, "max_length": max_length},
            )
            _, st = build_prefix_shared(s, max_length=max_length)
            variants[f"{history}/{style}/max_length={max_length}"] = {
                "naive_tokens": st.naive_tokens,
                "shared_tokens": st.shared_tokens,
                "token_ratio": round(st.token_ratio, 4),
                "split_dialogues": st.split_dialogues,
            }
    return {
        "value": round(stats.token_ratio, 4),
        "settings": settings,
        "dialogues": len(dialogues),
        "stats": headline,
        "variants": variants,
    }


# --------------------------------------------------------------------------------------------
# 2. Loss parity (the computation of tests/train/test_prefix_shared.py)
# --------------------------------------------------------------------------------------------


def _token_losses(logits, labels):
    import torch

    from diaforge.train.slicing import IGNORE_INDEX

    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    target = labels[:, 1:]
    valid = target != IGNORE_INDEX
    nll = -logp.gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return nll * valid, valid


def _lora_grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def bench_loss_parity(dialogues, work: Path) -> dict[str, Any]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.prefix_shared import PrefixSharedCollator, build_prefix_shared
    from diaforge.train.slicing import dialogue_texts

    path = build_tiny_model(work / "tiny-parity", texts=dialogue_texts(dialogues), seed=0)
    tokenizer = AutoTokenizer.from_pretrained(path)
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="sdpa")
    torch.manual_seed(0)
    config = LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear", init_lora_weights=False
    )
    model = get_peft_model(base, config).eval()
    cases = {}
    worst_loss, worst_grad = 0.0, 0.0
    for history in HISTORY_REASONING:
        samples, _ = slice_samples(tokenizer, dialogues, history_reasoning=history)
        model.zero_grad()
        want = []
        for s in samples:
            nll, valid = _token_losses(
                model(input_ids=torch.tensor([s["input_ids"]])).logits, torch.tensor([s["labels"]])
            )
            loss = nll.sum() / valid.sum()
            loss.backward()
            want.append(loss.item())
        want_grads = _lora_grads(model)
        for packing, batch_size in ((False, 3), (True, 2)):
            rows, stats = build_prefix_shared(samples, max_length=4096 if packing else None, packing=packing)
            collate = PrefixSharedCollator(tokenizer.pad_token_id, return_sample_index=True)
            model.zero_grad()
            n = len(samples)
            sums, counts = torch.zeros(n), torch.zeros(n)
            for start in range(0, len(rows), batch_size):
                batch = collate(rows[start : start + batch_size])
                index = batch.pop("sample_index")[:, 1:]
                nll, valid = _token_losses(model(**batch).logits, batch["labels"])
                per = torch.zeros(n).index_add_(0, index[valid], torch.ones(int(valid.sum())))
                weights = torch.zeros_like(nll)
                weights[valid] = 1.0 / per[index[valid]]
                counts += per
                sums += torch.zeros(n).index_add_(0, index[valid], nll[valid].detach())
                (nll * weights).sum().backward()
            got = (sums / counts).tolist()
            got_grads = _lora_grads(model)
            loss_diff = max(abs(a - b) for a, b in zip(got, want, strict=True))
            grad_rel = max(((got_grads[k] - g).norm() / g.norm()).item() for k, g in want_grads.items())
            worst_loss, worst_grad = max(worst_loss, loss_diff), max(worst_grad, grad_rel)
            cases[f"{history}/{'packed' if packing else 'per-dialogue'}/batch={batch_size}"] = {
                "samples": n,
                "rows": stats.rows,
                "max_abs_loss_diff": loss_diff,
                "max_rel_lora_grad_diff": grad_rel,
                "token_ratio": round(stats.token_ratio, 4),
            }
    return {
        "value": worst_loss,
        "max_rel_lora_grad_diff": worst_grad,
        "model": "tiny random LlamaForCausalLM (hidden 64, 2 layers), LoRA r=4 on all linear layers, fp32, sdpa",
        "dialogues": len(dialogues),
        "cases": cases,
    }


# --------------------------------------------------------------------------------------------
# 3. Step speedup on SmolLM2
# --------------------------------------------------------------------------------------------


def bench_step_speedup(dialogues, model_path: Path, tokenizer, num_dialogues: int) -> dict[str, Any]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from diaforge.train.prefix_shared import PrefixSharedCollator, build_prefix_shared

    settings = demo_slicing()
    chosen = dialogues[: num_dialogues + 1]  # the first one only warms up
    per_dialogue = []
    for d in chosen:
        samples, _ = slice_samples(tokenizer, [d], **settings)
        rows, _ = build_prefix_shared(samples, max_length=settings["max_length"])
        per_dialogue.append((samples, rows))
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32, attn_implementation="sdpa")
    lora = LoraConfig(r=16, lora_alpha=16, lora_dropout=0.0, target_modules="all-linear")
    model = get_peft_model(model, lora)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    collate = PrefixSharedCollator(tokenizer.pad_token_id)

    def step(batch) -> None:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def naive(samples) -> float:
        start = time.perf_counter()
        for s in samples:
            step({"input_ids": torch.tensor([s["input_ids"]]), "labels": torch.tensor([s["labels"]])})
        return time.perf_counter() - start

    def shared(rows) -> float:
        start = time.perf_counter()
        for row in rows:
            step(collate([row]))
        return time.perf_counter() - start

    warm_samples, warm_rows = per_dialogue[0]
    naive(warm_samples[:1])
    shared(warm_rows[:1])
    t_naive = t_shared = 0.0
    n_samples = naive_tokens = shared_tokens = naive_steps = shared_steps = 0
    for i, (samples, rows) in enumerate(per_dialogue[1:]):
        # Alternate which goes first, so that a load change on a shared machine hits both alike.
        if i % 2 == 0:
            t_naive += naive(samples)
            t_shared += shared(rows)
        else:
            t_shared += shared(rows)
            t_naive += naive(samples)
        n_samples += len(samples)
        naive_steps += len(samples)
        shared_steps += len(rows)
        naive_tokens += sum(len(s["input_ids"]) for s in samples)
        shared_tokens += sum(len(r["input_ids"]) for r in rows)
    return {
        "value": round(t_naive / t_shared, 3),
        "dialogues": len(per_dialogue) - 1,
        "samples": n_samples,
        "naive": {
            "steps": naive_steps,
            "tokens": naive_tokens,
            "seconds": round(t_naive, 2),
            "samples_per_s": round(n_samples / t_naive, 4),
            "tokens_per_s": round(naive_tokens / t_naive, 1),
        },
        "prefix_shared": {
            "steps": shared_steps,
            "tokens": shared_tokens,
            "seconds": round(t_shared, 2),
            "samples_per_s": round(n_samples / t_shared, 4),
            "tokens_per_s": round(shared_tokens / t_shared, 1),
        },
        "setup": (
            "SmolLM2-135M-Instruct fp32, LoRA r=16 alpha=16 all-linear, AdamW, sdpa; naive: one sample per "
            "optimizer step; prefix-shared: one row per dialogue (or per group when max_length splits it); "
            f"slicing as {DEMO_RECIPE.relative_to(ROOT)}; torch threads {torch.get_num_threads()}"
        ),
    }


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1e-3 else f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value)


def print_table(results: dict[str, Any]) -> None:
    rows = [
        ("token_ratio_shared_vs_naive", "<= 0.5", "training tokens per epoch, prefix-shared / naive"),
        (
            "loss_parity_max_abs_diff",
            "<= 1e-5",
            "largest per-sample loss difference (fp32, tiny Llama + LoRA)",
        ),
        ("step_speedup_shared_vs_naive", "", "LoRA training samples/s on CPU, SmolLM2, shared / naive"),
        (
            "listing_rows_dialogues_per_minute",
            "> 1",
            "SmolLM2 full FT dialogues/min, shared-listing rows / one dialogue per row",
        ),
        ("loss_positions_step_speedup", "> 1", "SmolLM2 step time, loss_positions all / trained"),
        ("dpo_shared_step_speedup", "> 1", "SmolLM2 DPO step time, TRL's rows / shared-prompt rows"),
        ("datagen_concurrency_efficiency", ">= 0.9 at 64", "achieved requests/s / (in flight / latency)"),
        (
            "dynamic_eval_batched_speedup",
            ">= 4",
            "dynamic eval wall time, SmolLM2: batch 1 recomputed / batch 8 prefix-cached",
        ),
        (
            "eval_loop_speedup",
            "",
            "static+dynamic eval, demo format: one at a time / batch 8 cached with loop stop",
        ),
        (
            "eval_batching_speedup",
            "> 1",
            "dynamic eval, calls constrained: chunks of 8, concatenated cache / continuous 16, in place",
        ),
        ("serve_concurrency_speedup", ">= 3 at 8", "diaforge serve requests/s on SmolLM2, 8 clients / 1"),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'metric'.ljust(width)}  {'value':<34}  {'target':<13}  meaning")
    print(f"{'-' * width}  {'-' * 34}  {'-' * 13}  {'-' * 40}")
    for key, target, meaning in rows:
        if key in results:
            print(f"{key.ljust(width)}  {_fmt(results[key]):<34}  {target:<13}  {meaning}")
    print()


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    """The options and the parts to run (an unknown part is a usage error, exit 2)."""
    parser = OneLineArgumentParser(
        prog="python -m diaforge.bench.run",
        description=__doc__.split("\n\n")[0],
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument(
        "--out",
        type=output_path,
        default=DEFAULT_OUT,
        help="results file, under the working folder when relative (the checkout's reference numbers: "
        "bench/results.json)",
    )
    parser.add_argument(
        "--only", default=",".join(PARTS), help=f"comma-separated parts of: {', '.join(PARTS)}"
    )
    parser.add_argument(
        "--dialogues", type=int, default=200, help="scripted dialogues to generate (token ratio)"
    )
    parser.add_argument(
        "--step-dialogues", type=int, default=4, help="dialogues of the SmolLM2 step benchmark"
    )
    parser.add_argument(
        "--listing-dialogues",
        type=int,
        default=3,
        help="dialogues timed by listing_rows (siblings over one listing, after a family that warms up)",
    )
    parser.add_argument("--positions-rounds", type=int, default=3, help="rows of the loss_positions part")
    parser.add_argument("--dpo-rounds", type=int, default=3, help="pairs timed by the dpo_shared part")
    parser.add_argument(
        "--latency",
        type=float,
        default=1.0,
        help="injected server latency in seconds (default 1.0, a typical completion; at 0.25 s the client CPU caps 64 in flight near 0.75)",
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (default 1: the machine is shared)"
    )
    add_batching_args(parser)
    add_speculation_args(parser)
    add_serve_args(parser)
    args = parser.parse_args(argv)
    parts = [p.strip() for p in args.only.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s): {', '.join(unknown)}")
    from diaforge.errors import InputError
    from diaforge.hygiene import check_output_file

    try:
        check_output_file(args.out, field="--out", what="results file")
    except InputError as exc:
        parser.error(str(exc))
    return args, parts


@dataclass
class Measurements:
    """What the parts measured: headline values by result key, details and seconds by part."""

    results: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def part(self, parts: list[str], name: str, key: str, fn: Any, *fargs: Any) -> None:
        """Run part `name` when selected; its result's "value" becomes `results[key]`."""
        if name not in parts:
            return
        log(f"{name} ...")
        t = time.perf_counter()
        out = fn(*fargs)
        self.timings[name] = time.perf_counter() - t
        self.results[key] = out.pop("value")
        self.details[name] = out
        log(f"{name}: {_fmt(self.results[key])} ({self.timings[name]:.1f} s)")


def measure(args: argparse.Namespace, parts: list[str], work: Path) -> Measurements:
    """Run the selected parts in `work`, sharing the corpus and the SmolLM2 tokenizer."""
    from diaforge.bench.datagen import bench_datagen
    from diaforge.bench.dpo_shared import bench_dpo_shared
    from diaforge.bench.loss_positions import bench_loss_positions
    from diaforge.schema import load_dialogues

    m = Measurements()
    corpus = tokenizer = model_path = None
    if {"token_ratio", "loss_parity", "step_speedup", "loss_positions"} & set(parts):
        t = time.perf_counter()
        corpus = generate_corpus(work / "corpus", args.dialogues)
        m.timings["corpus"] = time.perf_counter() - t
    if {"token_ratio", "step_speedup", "listing_rows", "loss_positions", "dpo_shared"} & set(parts):
        from transformers import AutoTokenizer

        model_path = smollm2_path(Path(args.out).expanduser().resolve().parent)
        tokenizer = AutoTokenizer.from_pretrained(model_path)
    m.part(parts, "token_ratio", "token_ratio_shared_vs_naive", bench_token_ratio, corpus, tokenizer)
    parity_dialogues = [*load_dialogues(FIXTURE), *(corpus or [])[:6]]
    m.part(parts, "loss_parity", "loss_parity_max_abs_diff", bench_loss_parity, parity_dialogues, work)
    m.part(
        parts,
        "step_speedup",
        "step_speedup_shared_vs_naive",
        bench_step_speedup,
        corpus,
        model_path,
        tokenizer,
        args.step_dialogues,
    )
    if "listing_rows" in parts:
        from diaforge.bench.listing_rows import PER_LISTING, bench_listing_rows

        t = time.perf_counter()
        siblings = generate_corpus(
            work / "listing-corpus", args.dialogues, dialogues_per_listing=PER_LISTING, reasoning="lookup"
        )
        m.timings["listing_corpus"] = time.perf_counter() - t
        m.part(
            parts,
            "listing_rows",
            "listing_rows_dialogues_per_minute",
            bench_listing_rows,
            siblings,
            model_path,
            tokenizer,
            args.listing_dialogues,
            demo_slicing(),
        )
    m.part(
        parts,
        "loss_positions",
        "loss_positions_step_speedup",
        bench_loss_positions,
        corpus,
        model_path,
        tokenizer,
        args.positions_rounds,
    )
    speedup = "dpo_shared_step_speedup"
    m.part(parts, "dpo_shared", speedup, bench_dpo_shared, model_path, tokenizer, args.dpo_rounds)
    m.part(parts, "datagen", "datagen_concurrency_efficiency", bench_datagen, args.latency)
    measure_eval(args, parts, m)
    return m


def measure_eval(args: argparse.Namespace, parts: list[str], m: Measurements) -> None:
    """The evaluation and serving parts (bench/evalloop.py, speculation.py, serve.py), each on its own model."""
    from diaforge.bench.evalloop import bench_dynamic_eval, bench_eval_batching, bench_eval_loop

    out_dir = Path(args.out).expanduser().resolve().parent
    if "dynamic_eval" in parts:
        m.part(
            parts, "dynamic_eval", "dynamic_eval_batched_speedup", bench_dynamic_eval, smollm2_path(out_dir)
        )
    if "eval_loop" in parts:
        m.part(parts, "eval_loop", "eval_loop_speedup", bench_eval_loop, ROOT, smollm2_path(out_dir), BENCH)
    if "eval_batching" in parts:
        batching = Path(args.batching_model) if args.batching_model else smollm2_path(out_dir)
        sizes = (args.batching_dialogues, 5, args.batching_budget)
        m.part(parts, "eval_batching", "eval_batching_speedup", bench_eval_batching, batching, BENCH, *sizes)
    if "eval_speculation" in parts:
        from diaforge.bench.speculation import bench_eval_speculation

        model = Path(args.speculation_model) if args.speculation_model else smollm2_path(out_dir)
        modes = tuple(mode.strip() for mode in args.speculation_modes.split(",") if mode.strip())
        sizes = (args.speculation_dialogues, 5, args.speculation_budget, args.speculate, modes)
        key = "eval_speculation_pass_ratio"
        m.part(parts, "eval_speculation", key, bench_eval_speculation, model, BENCH, *sizes)
    if "serve" in parts:
        from diaforge.bench.serve import bench_serve

        model = Path(args.serve_model) if args.serve_model else smollm2_path(out_dir)
        sizes = (args.serve_requests, args.serve_budget, args.serve_concurrency, args.serve_baseline)
        m.part(parts, "serve", "serve_concurrency_speedup", bench_serve, model, BENCH, *sizes, args.threads)


def run_record(argv: list[str] | None, parts: list[str], seconds: float, m: Measurements) -> dict[str, Any]:
    """How the results were obtained: the command, the parts and their times, the machine and versions."""
    import torch
    import transformers
    import trl

    return {
        "command": "python -m diaforge.bench.run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "parts": parts,
        "seconds": round(seconds, 1),
        "part_seconds": {k: round(v, 1) for k, v in m.timings.items()},
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
        "torch_threads": torch.get_num_threads(),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": trl.__version__,
        },
    }


def run(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure the selected parts, write the results file and print the table."""
    args, parts = parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="diaforge-bench-") as tmp:
        m = measure(args, parts, Path(tmp))
    output = {
        **m.results,
        "details": m.details,
        "run": run_record(argv, parts, time.perf_counter() - started, m),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(output, indent=2) + "\n", encoding="utf-8")
    print_table(m.results)
    log(f"written to {out} in {output['run']['seconds']} s")
    return output


def main(argv: list[str] | None = None) -> int:
    run(argv)
    return 0


if __name__ == "__main__":
    from diaforge.console import run_main

    run_main(main)
