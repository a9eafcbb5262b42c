"""`make gpu-check`: a few LoRA steps of `train/sft.py`, through the Trainer, on a Llama-3.2-3B-shaped
random model, for each family of base the recipes use (bf16 LoRA, 8-bit LoRA, 4-bit QLoRA), with
prefix-shared rows checked against naive slicing of the same samples.

    python -m diaforge.bench.gpu_check [--families bf16,8bit,4bit] [--steps 4] [--out FILE]    # on a GPU
    python -m diaforge.bench.gpu_check --dry-run                 # anywhere: plan, commands, JSON shape
    python -m diaforge.bench.gpu_check --shape tiny --families bf16   # the same path on a CPU, fp32, tiny model
    python -m diaforge.bench.gpu_check wheels [--dest .whl]      # the wheels a bare GPU machine needs (bench/gpu_wheels.py)

What runs. The first `--dialogues` of `--corpus` (default: the 115 dialogues of the held-out
benchmark file, used only as token sequences of the right shape: the weights are random, nothing is
learned or kept) are sliced at `--max-length` with a byte-level BPE tokenizer trained on them. A
random model of the shape (bench/gpu_sft.py: SHAPES; Llama-3.2-3B: 3.2 B parameters, vocabulary
128,256, tied head) is built once into the work folder (bf16 safetensors, about 6 GiB). Then, per
family, `train/sft.py` trains twice on the same samples, `slicing: prefix_shared` (packed rows,
flex attention on a GPU) and `slicing: naive` (one sample per micro-batch, SDPA), each in its own
process with a callback that times every optimizer step and records the peak of GPU memory.

Every optimizer step is the whole data set (`gradient_accumulation_steps` = rows, or samples; one
row or sample per micro-batch): TRL's loss is the mean over the step's label tokens, so both layouts
train on exactly the same tokens at every step, with the same seed, and their losses must agree at
every step (`LOSS_TOLERANCE`). The loss of a random model hardly depends on which tokens are the
context, so the adapters are compared too: the optimizer is plain SGD at a constant rate, so each
LoRA B matrix (zero at the start) ends as minus the rate times the sum of its gradients, and
`adapter_rel_diff` is the relative difference of the two layouts' LoRA gradients
(`ADAPTER_TOLERANCE`). On a CPU in fp32 both are under 1e-5; showing earlier turns' thoughts to
later ones (history_reasoning keep instead of strip, the same labels) moves the loss by 4e-4 and the
gradients by 3.5 %. The memory planner counts AdamW's two moments for the LoRA weights (0.2 GiB
more here). Throughput is counted over the steps after `--warmup` (flex attention compiles in the
first): processed tokens per second, naive-equivalent tokens per second (the tokens naive slicing
needs for the same samples), MFU (6 x linear parameters, head included, x processed tokens per
second over the device's dense bf16 peak, as bench/gpu_sft.py) and peak memory against the
planner's (train/plan.py).

`--dry-run` does everything but train: it slices the data, writes and parses every recipe, checks
that the planner fits each family on `--gpu-memory` and that the wheels fit beside the project, and
writes the JSON with every measurement null, checked by `shape_problems` like a real result.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from diaforge.bench import gpu_wheels
from diaforge.bench.gpu_check_runs import (
    ADAPTER_TOLERANCE,
    LOSS_TOLERANCE,
    MODES,
    PARITY_KEYS,
    empty_mode,
    log,
    run_family,
    shape_problems,
    worker,
)
from diaforge.bench.gpu_sft import SHAPES

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "outputs" / "gpu_check"
CORPUS = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
FAMILIES = ("bf16", "8bit", "4bit")
MODEL_MARKER = "gpu_check_model.json"
#: What the check imports on the GPU machine (the torch there is the machine's own).
REQUIREMENTS = (
    "torch>=2.6",
    "transformers>=5.19,<6",
    "trl>=1.7,<2",
    "peft>=0.17",
    "accelerate>=1.10",
    "datasets>=4.7",
    "pydantic>=2.7",
    "huggingface_hub>=1.31",
    "pyarrow>=24",  # datasets 5.2; the machine's own (a 40 MB wheel)
    "fsspec>=2023.1.0,<=2026.9.0",
)
QUANTISED_REQUIREMENTS = ("bitsandbytes>=0.45",)


# --------------------------------------------------------------------------------------------
# Data, model and plan
# --------------------------------------------------------------------------------------------


def model_dir(args: argparse.Namespace) -> Path:
    """The built model's folder: one per shape, corpus, dialogue count and tokenizer size."""
    key = f"{Path(args.corpus).resolve()}:{Path(args.corpus).stat().st_size}:{args.dialogues}:{args.vocab}"
    return Path(args.work) / f"model-{args.shape}-{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def prepare_data(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """Train the tokenizer (saved into `folder` unless a model is built there), slice the
    dialogues as train/sft.py will, and count samples, rows and tokens of one pass."""
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_tokenizer, load_tokenizer
    from diaforge.train.prefix_shared import build_prefix_shared
    from diaforge.train.recipe_fields import DiaforgeArguments
    from diaforge.train.slicing import SliceConfig, TurnSlicer, check_training_dialogues, dialogue_texts

    dialogues = check_training_dialogues(load_dialogues(args.corpus), args.corpus)[: args.dialogues]
    if not (folder / MODEL_MARKER).is_file():
        folder.mkdir(parents=True, exist_ok=True)
        build_tiny_tokenizer(dialogue_texts(dialogues), vocab_size=args.vocab).save_pretrained(folder)
    tokenizer = load_tokenizer(str(folder))
    data_args = DiaforgeArguments(dataset_path=[str(args.corpus)], **SLICING)
    config = SliceConfig.from_args(data_args, max_length=args.max_length)
    samples, stats = TurnSlicer(tokenizer, config).slice_all(dialogues)
    _rows, shared = build_prefix_shared(samples, max_length=args.max_length, packing=True)
    return {
        "dialogues": len(dialogues),
        "samples": stats.samples,
        "rows": shared.rows,
        "naive_tokens_per_step": stats.total_tokens,
        "shared_tokens_per_step": shared.shared_tokens,
        "trained_tokens_per_step": stats.trained_tokens,
        "token_ratio": round(shared.token_ratio, 4),
        "vocab": len(tokenizer),
    }


SLICING = {
    "prompt_mode": "prompt",
    "history_reasoning": "strip",
    "target_reasoning": "keep",
    "overflow": "truncate_history",
}


def model_spec(shape: str, vocab: int) -> dict[str, Any]:
    return {**SHAPES[shape], "vocab_size": max(SHAPES[shape]["vocab_size"], vocab)}


def model_shape(shape: str, vocab: int) -> Any:
    from diaforge.train.plan import Shape

    return Shape.from_config(model_spec(shape, vocab))


def linear_parameters(shape: Any) -> int:
    """Parameters of the linear layers, the output head included (what MFU counts)."""
    return shape.linear_params() + shape.vocab * shape.hidden


def plans(args: argparse.Namespace, families: list[str], vocab: int) -> dict[str, Any]:
    """The planner's peak of one micro-batch (a row or sample of up to `--max-length` tokens) per
    family, and whether it fits `--gpu-memory`."""
    from diaforge.train.plan import Setup, estimate

    shape = model_shape(args.shape, vocab)
    out = {}
    for family in families:
        quant = family if family != "bf16" else "bf16"
        plan = estimate(
            Setup(shape=shape, quant=quant, tokens=args.max_length, checkpointing=args.gradient_checkpointing)
        )
        out[family] = {
            "peak_gib": plan.total,
            "parts": plan.parts,
            "gpu_memory_gib": args.gpu_memory,
            "fits": plan.fits(args.gpu_memory),
        }
    return out


def build_model(folder: str, shape: str) -> int:
    """`build-model FOLDER SHAPE`: the random model of `shape` for the tokenizer saved in FOLDER,
    built on the GPU when there is one (bf16), else in fp32, and saved there with a marker."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    path = Path(folder)
    tokenizer = AutoTokenizer.from_pretrained(path)
    config = LlamaConfig(
        **model_spec(shape, len(tokenizer)),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    on_gpu = torch.cuda.is_available()
    dtype = torch.bfloat16 if on_gpu else torch.float32
    started = time.perf_counter()
    torch.manual_seed(0)
    with torch.device("cuda" if on_gpu else "cpu"):
        model = LlamaForCausalLM(config).to(dtype)
    model.save_pretrained(path)
    params = sum(p.numel() for p in model.parameters())
    marker = {
        "shape": shape,
        "parameters": params,
        "dtype": str(dtype),
        "seconds": time.perf_counter() - started,
    }
    (path / MODEL_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
    log(f"built {params:,} parameters ({dtype}) into {path}")
    return 0


# --------------------------------------------------------------------------------------------
# Recipes and commands
# --------------------------------------------------------------------------------------------


def recipe(args: argparse.Namespace, family: str, mode: str, data: dict[str, Any], on_gpu: bool) -> dict:
    """The flat recipe of one run (train/config.py keys)."""
    attn = (
        ("flex_attention" if args.attn == "flex" else "sdpa")
        if on_gpu and mode == "prefix_shared"
        else "sdpa"
    )
    return {
        "model_name_or_path": str(model_dir(args)),
        "dtype": "bfloat16" if on_gpu else "float32",
        "attn_implementation": attn,
        "load_in_8bit": family == "8bit",
        "load_in_4bit": family == "4bit",
        "dataset_path": str(args.corpus),
        "max_dialogues": args.dialogues,
        **SLICING,
        "max_length": args.max_length,
        "slicing": mode,
        "packing": mode == "prefix_shared",
        "use_peft": True,
        "lora_r": 16,
        "lora_alpha": 16,
        "lora_dropout": 0.0,  # dropout would draw differently in the two layouts
        "lora_target_modules": "all-linear",
        "learning_rate": args.learning_rate,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "optim": "sgd",  # the adapters are then lr x the summed gradients: comparable across layouts
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "max_steps": args.steps,
        "per_device_train_batch_size": 1,
        "gradient_accumulation_steps": data["rows"] if mode == "prefix_shared" else data["samples"],
        "seed": 0,
        "bf16": on_gpu,
        "gradient_checkpointing": args.gradient_checkpointing,
        "output_dir": str(Path(args.work) / "runs" / f"{family}-{mode}"),
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": True,
        "resume": False,
    }


def write_recipes(args: argparse.Namespace, families: list[str], data: dict, on_gpu: bool) -> dict[str, Any]:
    """Each run's recipe file and command line, by family and mode."""
    import yaml

    out: dict[str, Any] = {}
    folder = Path(args.work) / "recipes"
    folder.mkdir(parents=True, exist_ok=True)
    for family in families:
        out[family] = {}
        for mode in MODES:
            path = folder / f"{family}-{mode}.yaml"
            path.write_text(yaml.safe_dump(recipe(args, family, mode, data, on_gpu), sort_keys=False))
            metrics = Path(args.work) / "runs" / f"{family}-{mode}.metrics.json"
            argv = [sys.executable, "-m", "diaforge.bench.gpu_check", "worker", str(metrics), str(path)]
            out[family][mode] = {"recipe": path, "metrics": metrics, "argv": argv}
    return out


def recipe_problems(commands: dict[str, Any]) -> list[str]:
    """Parse and check every recipe as train/sft.py does; on a machine without a GPU with bf16
    off and use_cpu on, since TRL refuses bf16 there (every other key is checked as written)."""
    import torch

    from diaforge.train.config import RecipeError, device_defaults, parse_recipe
    from diaforge.train.recipe_checks import check_recipe

    here = torch.cuda.is_available()
    problems = []
    for family, modes in commands.items():
        for mode, command in modes.items():
            argv = [str(command["recipe"])] + ([] if here else ["--bf16", "false", "--use_cpu", "true"])
            try:
                parsed = parse_recipe(argv, device_defaults=device_defaults(here))
                check_recipe(*parsed[:3], where=str(command["recipe"]))
            except RecipeError as exc:
                problems.append(f"{family} {mode}: {exc}")
    return problems


def environment(quantised: bool) -> dict[str, Any]:
    """Installed versions of what the check imports, and what is missing or too old."""
    from importlib import metadata

    from packaging.requirements import Requirement

    versions: dict[str, str | None] = {}
    problems = []
    for spec in REQUIREMENTS + (QUANTISED_REQUIREMENTS if quantised else ()):
        req = Requirement(spec)
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            versions[req.name] = None
            problems.append(f"{req.name}: not installed (needs {req.specifier}; see bench/gpu_wheels.py)")
            continue
        versions[req.name] = version
        if not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name} {version}: needs {req.specifier}")
    return {"versions": versions, "problems": problems}


# --------------------------------------------------------------------------------------------
# The check
# --------------------------------------------------------------------------------------------


def skeleton(args: argparse.Namespace, data: dict, plan: dict, commands: dict, on_gpu: bool) -> dict:
    """The result with everything known before training; measurements null."""
    shape = model_shape(args.shape, data["vocab"])
    families = {}
    for family, modes in commands.items():
        families[family] = {
            "ok": None,
            "precision": family if on_gpu else "fp32",
            "error": None,
            "planned_peak_gib": plan[family]["peak_gib"],
            "parity": {
                **dict.fromkeys(PARITY_KEYS),
                "loss_tolerance": LOSS_TOLERANCE[family if on_gpu else "fp32"],
                "adapter_tolerance": ADAPTER_TOLERANCE[family if on_gpu else "fp32"],
            },
            "speedup_naive_equivalent": None,
            "prefix_shared": empty_mode(
                modes["prefix_shared"], data["shared_tokens_per_step"], data["naive_tokens_per_step"]
            ),
            "naive": empty_mode(modes["naive"], data["naive_tokens_per_step"], data["naive_tokens_per_step"]),
        }
    setup = {
        "shape": args.shape,
        "parameters_linear": linear_parameters(shape),
        "model_dir": str(model_dir(args)),
        "corpus": str(
            Path(args.corpus).relative_to(ROOT) if Path(args.corpus).is_relative_to(ROOT) else args.corpus
        ),
        **data,
        "max_length": args.max_length,
        "steps": args.steps,
        "warmup": args.warmup,
        "learning_rate": args.learning_rate,
        "lora": "r=16 alpha=16 dropout=0 all-linear",
        "optimizer": "sgd, constant learning rate",
        "attention": {"prefix_shared": recipe_attention(commands, "prefix_shared"), "naive": "sdpa"},
        "gradient_checkpointing": args.gradient_checkpointing,
    }
    run = {
        "command": "python -m diaforge.bench.gpu_check " + shlex.join(args.argv),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return {
        "check": "gpu-check",
        "ok": None,
        "dry_run": args.dry_run,
        "problems": [],
        "setup": setup,
        "plan": plan,
        "families": families,
        "wheels": None,
        "environment": None,
        "run": run,
    }


def recipe_attention(commands: dict, mode: str) -> str | None:
    from diaforge.train.config import read_recipe

    for modes in commands.values():
        return read_recipe(modes[mode]["recipe"])["attn_implementation"]
    return None


def ensure_model(args: argparse.Namespace) -> str | None:
    """Build the random model once (in its own process, so its GPU memory is freed); the error."""
    folder = model_dir(args)
    if (folder / MODEL_MARKER).is_file():
        log(f"model: {folder} (built before)")
        return None
    command = [sys.executable, "-m", "diaforge.bench.gpu_check", "build-model", str(folder), args.shape]
    proc = subprocess.run(command, cwd=ROOT, timeout=args.timeout)
    if proc.returncode != 0 or not (folder / MODEL_MARKER).is_file():
        return f"building the model failed (exit code {proc.returncode})"
    return None


def static_problems(args: argparse.Namespace, result: dict, commands: dict) -> list[str]:
    """What is wrong before anything trains: recipes, plans, wheels (and, for a real run, the
    installed packages)."""
    problems = recipe_problems(commands)
    if args.shape == "llama-3.2-3b":
        problems += [
            f"{family}: the planner puts it at {p['peak_gib']} GiB, over 90% of {p['gpu_memory_gib']} GiB"
            for family, p in result["plan"].items()
            if not p["fits"]
        ]
    wheels = result["wheels"]
    if not wheels["fits"]:
        problems.append(
            f"wheels and project take {wheels['total_bytes']} bytes, over {wheels['budget_bytes']}"
        )
    problems += wheels["version_problems"]
    if not args.dry_run:
        problems += result["environment"]["problems"]
    return problems


def check(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    families = [f.strip() for f in args.families.split(",") if f.strip()]
    import torch

    on_gpu = args.dry_run or torch.cuda.is_available()
    if any(f not in FAMILIES for f in families) or not families:
        print(f"error: --families takes some of {','.join(FAMILIES)}", file=sys.stderr)
        return 2
    if not on_gpu and families != ["bf16"]:
        print("error: 8-bit and 4-bit need a CUDA GPU; on a CPU use --families bf16 (fp32)", file=sys.stderr)
        return 2
    args.work, args.corpus = Path(args.work).resolve(), Path(args.corpus).resolve()
    data = prepare_data(args, model_dir(args))
    log(f"{data['samples']} samples of {data['dialogues']} dialogues in {data['rows']} rows")
    commands = write_recipes(args, families, data, on_gpu)
    result = skeleton(args, data, plans(args, families, data["vocab"]), commands, on_gpu)
    result["environment"] = environment(quantised=families != ["bf16"])
    result["wheels"] = gpu_wheels.budget(ROOT / ".whl")
    problems = static_problems(args, result, commands)
    if not args.dry_run and not problems:
        error = ensure_model(args)
        problems += [error] if error else []
        flops = linear_parameters(model_shape(args.shape, data["vocab"]))
        for family in families if not error else []:
            entry = result["families"][family]
            run_family(family, entry, commands[family], args, flops)
            if not entry["ok"]:
                problems.append(f"{family}: {entry['error'] or 'the layouts disagree'}")
        result["run"]["versions"] = result["environment"]["versions"]
    problems += shape_problems(result)
    result.update(ok=not problems, problems=problems)
    result["run"]["seconds"] = round(time.perf_counter() - started, 1)
    out = Path(args.out) if args.out else args.work / "gpu_check.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(summary(result))
    log(f"written to {out}")
    return 0 if result["ok"] else 1


def summary(result: dict[str, Any]) -> str:
    lines = []
    for family, entry in result["families"].items():
        plan = result["plan"][family]
        lines.append(
            f"{family} ({entry['precision']}): planned peak {plan['peak_gib']} GiB, fits: {plan['fits']}"
        )
        for mode in MODES:
            m = entry[mode]
            lines.append(
                f"  {mode:<13} {m['tokens_per_step']:>7} tokens/step  tokens/s {m['tokens_per_s']}"
                f"  naive-equivalent {m['naive_equivalent_tokens_per_s']}  MFU {m['mfu']}  peak {m['peak_memory_gib']} GiB"
            )
            if result["dry_run"]:
                lines.append(f"    {m['command']}")
        par = entry["parity"]
        lines.append(
            f"  parity: losses {par['max_abs_loss_diff']} (<= {par['loss_tolerance']}), adapters "
            f"{par['adapter_rel_diff']} (<= {par['adapter_tolerance']}); ok: {entry['ok']}"
        )
    lines.append(gpu_wheels.format_budget(result["wheels"]))
    lines += [f"problem: {p}" for p in result["problems"]]
    lines.append(("DRY RUN " if result["dry_run"] else "") + ("ok" if result["ok"] else "FAILED"))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m diaforge.bench.gpu_check", description=__doc__.split("\n\n")[0]
    )
    p.add_argument(
        "--dry-run", action="store_true", help="plan, commands and JSON shape; no model, no training"
    )
    p.add_argument("--families", default=",".join(FAMILIES), help="comma-separated, of bf16,8bit,4bit")
    p.add_argument("--shape", choices=sorted(SHAPES), default="llama-3.2-3b", help="model architecture")
    p.add_argument("--corpus", default=str(CORPUS), help="dialogues JSONL (token sequences only)")
    p.add_argument("--dialogues", type=int, default=16, help="dialogues of the corpus to train on")
    p.add_argument(
        "--vocab", type=int, default=8192, help="tokenizer size to train (a small corpus gives fewer)"
    )
    p.add_argument("--max-length", type=int, default=4096, help="slicing max_length and packed row length")
    p.add_argument("--steps", type=int, default=4, help="optimizer steps per run (each is the whole data)")
    p.add_argument("--warmup", type=int, default=1, help="first steps left out of the throughput")
    p.add_argument("--learning-rate", type=float, default=1e-3, help="constant, plain SGD")
    p.add_argument(
        "--attn", choices=["flex", "sdpa"], default="flex", help="prefix-shared attention on a GPU"
    )
    p.add_argument("--gradient-checkpointing", action="store_true", help="off by default: 4,096 tokens fit")
    p.add_argument(
        "--gpu-memory", type=float, default=79.6, help="GiB the plan must fit (default: H100 80 GB)"
    )
    p.add_argument("--peak-tflops", type=float, help="the device's dense bf16 peak, for MFU, if not known")
    p.add_argument("--timeout", type=int, default=1800, help="seconds per training process")
    p.add_argument("--work", default=str(WORK), help="folder for the model, recipes, runs and logs")
    p.add_argument("--out", help="result JSON (default: WORK/gpu_check.json)")
    return p


def wheels_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m diaforge.bench.gpu_check wheels", description=gpu_wheels.__doc__.split("\n\n")[0]
    )
    p.add_argument("--dest", default=str(ROOT / ".whl"), help="folder for the wheels (git-ignored)")
    p.add_argument(
        "--cuda", default="130", help="CUDA versions whose bitsandbytes library to keep, e.g. 130,132"
    )
    p.add_argument("--list", action="store_true", help="print the list and the budget only; fetch nothing")
    args = p.parse_args(argv)
    dest = Path(args.dest)
    report = gpu_wheels.budget(dest) if args.list else gpu_wheels.fetch(dest, args.cuda.split(","))
    print(gpu_wheels.format_budget(report))
    return 0 if report["fits"] and not report["version_problems"] else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["wheels"]:
        return wheels_main(argv[1:])
    if argv[:1] == ["build-model"] and len(argv) == 3:
        return build_model(argv[1], argv[2])
    if argv[:1] == ["worker"] and len(argv) >= 3:
        return worker(argv[1], argv[2:])
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args.dialogues < 1 or args.steps <= args.warmup or args.warmup < 0:
        print("error: need --dialogues >= 1 and --steps > --warmup >= 0", file=sys.stderr)
        return 2
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
