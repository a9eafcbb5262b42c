"""One run of `train/sft.py` for `make gpu-check` (bench/gpu_check.py), in its own process with a
step timer, and what the runs of a family give: throughput, MFU, peak memory, the parity of the two
layouts' losses and adapters, and the documented shape of the result JSON (`shape_problems`)."""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from diaforge.bench.gpu_sft import peak_flops

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30
MODES = ("prefix_shared", "naive")
#: Largest |loss difference| of a step between the layouts, by precision (token-mean loss near 11.9).
LOSS_TOLERANCE = {"fp32": 1e-4, "bf16": 0.02, "8bit": 0.05, "4bit": 0.02}
#: Largest ||B_shared - B_naive|| / ||B_naive|| over the LoRA B matrices after the last step: with
#: SGD from B = 0 that is the relative difference of the layouts' summed LoRA gradients. First
#: guesses for the GPU precisions (no GPU run has set them yet); fp32 on a CPU gives under 1e-6.
ADAPTER_TOLERANCE = {"fp32": 1e-4, "bf16": 0.05, "8bit": 0.1, "4bit": 0.05}
TOP_KEYS = ("check", "ok", "dry_run", "problems", "setup", "plan", "families", "wheels", "environment", "run")
FAMILY_KEYS = ("ok", "precision", "error", "planned_peak_gib", "parity", "speedup_naive_equivalent", *MODES)
PARITY_KEYS = ("losses", "max_abs_loss_diff", "loss_tolerance", "adapter_rel_diff", "adapter_tolerance", "ok")
MODE_KEYS = (
    "command",
    "log",
    "tokens_per_step",
    "naive_tokens_per_step",
    "steps",
    "timed_steps",
    "seconds",
    "step_seconds",
    "tokens_per_s",
    "naive_equivalent_tokens_per_s",
    "mfu",
    "peak_memory_gib",
    "losses",
)
MEASURED = MODE_KEYS[4:]


def log(msg: str) -> None:
    print(f"[gpu_check] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# The worker: train/sft.py with a step timer
# --------------------------------------------------------------------------------------------


def worker(metrics_path: str, argv: list[str]) -> int:
    """`worker METRICS.json RECIPE.yaml [--key value ...]`: `train/sft.py`'s `main` with a
    callback that times each optimizer step (synchronising the GPU) and records peak memory."""
    import torch
    from transformers import TrainerCallback

    from diaforge.train import sft

    on_cuda = torch.cuda.is_available()
    record: dict[str, Any] = {"step_seconds": [], "peak_memory_gib": None}

    def sync() -> None:
        if on_cuda:
            torch.cuda.synchronize()

    class StepTimer(TrainerCallback):
        started = 0.0

        def on_train_begin(self, *_args: Any, **_kwargs: Any) -> None:
            if on_cuda:
                sync()
                torch.cuda.reset_peak_memory_stats()
                record["memory_at_start_gib"] = round(torch.cuda.memory_allocated() / GIB, 2)

        def on_step_begin(self, *_args: Any, **_kwargs: Any) -> None:
            sync()
            self.started = time.perf_counter()

        def on_step_end(self, *_args: Any, **_kwargs: Any) -> None:
            sync()
            record["step_seconds"].append(round(time.perf_counter() - self.started, 4))

        def on_train_end(self, *_args: Any, **_kwargs: Any) -> None:
            if on_cuda:
                record["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / GIB, 2)

    build_trainer = sft.build_trainer

    def with_timer(*args: Any, **kwargs: Any) -> Any:
        trainer = build_trainer(*args, **kwargs)
        trainer.add_callback(StepTimer())
        return trainer

    sft.build_trainer = with_timer
    code = sft.main(argv)
    record["exit_code"] = code
    record["device"] = torch.cuda.get_device_name(0) if on_cuda else "cpu"
    if on_cuda:
        record["device_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / GIB, 1)
    Path(metrics_path).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return code


# --------------------------------------------------------------------------------------------
# Runs and results
# --------------------------------------------------------------------------------------------


def empty_mode(command: dict[str, Any], tokens: int, naive_tokens: int) -> dict[str, Any]:
    """A mode's entry before it runs (and in a dry run): what it will do, measurements null."""
    entry: dict[str, Any] = {key: None for key in MODE_KEYS}
    entry.update(
        command=shlex.join(command["argv"]), tokens_per_step=tokens, naive_tokens_per_step=naive_tokens
    )
    return entry


def run_mode(
    command: dict[str, Any], entry: dict[str, Any], args: argparse.Namespace, flops: Any
) -> str | None:
    """Train one mode in its own process and fill `entry`; the error line when it failed."""
    out_dir = Path(recipe_value(command["recipe"], "output_dir"))
    shutil.rmtree(out_dir, ignore_errors=True)
    command["metrics"].unlink(missing_ok=True)
    log_path = command["metrics"].with_suffix("").with_suffix(".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    entry["log"] = str(log_path)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    with log_path.open("w", encoding="utf-8") as logfile:
        try:
            proc = subprocess.run(
                command["argv"],
                cwd=ROOT,
                env=env,
                stdout=logfile,
                stderr=subprocess.STDOUT,
                timeout=args.timeout,
            )
        except subprocess.TimeoutExpired:
            return f"timed out after {args.timeout} s (log: {log_path})"
    if proc.returncode != 0 or not command["metrics"].is_file():
        lines = [x for x in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
        return f"exit code {proc.returncode}: {lines[-1] if lines else 'no output'} (log: {log_path})"
    metrics = json.loads(command["metrics"].read_text(encoding="utf-8"))
    state = json.loads((out_dir / "trainer_state.json").read_text(encoding="utf-8"))
    steps = metrics["step_seconds"]
    timed = steps[args.warmup :]
    seconds = sum(timed)
    entry.update(
        steps=len(steps),
        timed_steps=len(timed),
        seconds=round(seconds, 3),
        step_seconds=steps,
        losses=[round(e["loss"], 6) for e in state["log_history"] if "loss" in e],
        peak_memory_gib=metrics["peak_memory_gib"],
    )
    if timed and seconds > 0:
        entry["tokens_per_s"] = round(entry["tokens_per_step"] * len(timed) / seconds, 1)
        entry["naive_equivalent_tokens_per_s"] = round(
            entry["naive_tokens_per_step"] * len(timed) / seconds, 1
        )
        peak = peak_flops(metrics["device"], args.peak_tflops)
        entry["mfu"] = round(6 * flops * entry["tokens_per_s"] / peak, 4) if peak else None
    entry["device"] = metrics["device"]
    entry["device_memory_gib"] = metrics.get("device_memory_gib")
    return None


def recipe_value(path: Path, key: str) -> Any:
    from diaforge.train.config import read_recipe

    return read_recipe(path)[key]


def adapter_difference(first: Path, second: Path) -> float | None:
    """||B_first - B_second|| / ||B_second|| over the LoRA B matrices of two saved adapters."""
    from safetensors.torch import load_file

    try:
        a, b = (load_file(str(p / "adapter_model.safetensors")) for p in (first, second))
    except (OSError, FileNotFoundError):
        return None
    keys = [k for k in b if "lora_B" in k]
    num = sum(float((a[k].float() - b[k].float()).pow(2).sum()) for k in keys)
    den = sum(float(b[k].float().pow(2).sum()) for k in keys)
    return float(f"{math.sqrt(num / den):.3g}") if den > 0 else None


def parity(entry: dict[str, Any], precision: str, out_dirs: dict[str, Path]) -> dict[str, Any]:
    """Step losses of the two layouts and their adapters, against the precision's tolerances."""
    shared, naive = entry["prefix_shared"]["losses"] or [], entry["naive"]["losses"] or []
    diffs = [abs(a - b) for a, b in zip(shared, naive, strict=False)]
    result = {
        "losses": {"prefix_shared": shared, "naive": naive},
        "max_abs_loss_diff": float(f"{max(diffs):.3g}") if diffs else None,
        "loss_tolerance": LOSS_TOLERANCE[precision],
        "adapter_rel_diff": adapter_difference(out_dirs["prefix_shared"], out_dirs["naive"]),
        "adapter_tolerance": ADAPTER_TOLERANCE[precision],
    }
    result["ok"] = bool(
        diffs
        and len(shared) == len(naive)
        and result["max_abs_loss_diff"] <= result["loss_tolerance"]
        and result["adapter_rel_diff"] is not None
        and result["adapter_rel_diff"] <= result["adapter_tolerance"]
    )
    return result


def run_family(
    family: str, entry: dict[str, Any], commands: dict, args: argparse.Namespace, flops: int
) -> None:
    """Both layouts of one family, then their parity and the speed-up."""
    for mode in MODES:
        log(f"{family} {mode} ...")
        error = run_mode(commands[mode], entry[mode], args, flops)
        if error:
            entry.update(ok=False, error=f"{mode}: {error}")
            log(f"{family} {mode} failed: {error}")
            return
        log(f"{family} {mode}: losses {entry[mode]['losses']}, {entry[mode]['tokens_per_s']} tokens/s")
    out_dirs = {mode: Path(recipe_value(commands[mode]["recipe"], "output_dir")) for mode in MODES}
    entry["parity"] = parity(entry, entry["precision"], out_dirs)
    shared, naive = entry["prefix_shared"], entry["naive"]
    if shared["naive_equivalent_tokens_per_s"] and naive["naive_equivalent_tokens_per_s"]:
        ratio = shared["naive_equivalent_tokens_per_s"] / naive["naive_equivalent_tokens_per_s"]
        entry["speedup_naive_equivalent"] = round(ratio, 3)
    entry["ok"] = entry["parity"]["ok"]


def shape_problems(result: dict[str, Any]) -> list[str]:
    """What a result (dry or real) lacks of the documented shape; a real run's measurements must be
    numbers (MFU and peak memory may be null off CUDA), a dry run's all null."""
    problems = [f"missing top-level key {k!r}" for k in TOP_KEYS if k not in result]
    dry = result.get("dry_run")
    for family, entry in (result.get("families") or {}).items():
        problems += [f"{family}: missing {k!r}" for k in FAMILY_KEYS if k not in entry]
        parity_entry = entry.get("parity") or {}
        problems += [f"{family}: parity lacks {k!r}" for k in PARITY_KEYS if k not in parity_entry]
        if not all(isinstance(parity_entry.get(k), float) for k in ("loss_tolerance", "adapter_tolerance")):
            problems.append(f"{family}: parity tolerances must be numbers")
        for mode in MODES:
            values = entry.get(mode) or {}
            problems += [f"{family} {mode}: missing {k!r}" for k in MODE_KEYS if k not in values]
            if not isinstance(values.get("tokens_per_step"), int) or not isinstance(
                values.get("command"), str
            ):
                problems.append(f"{family} {mode}: tokens_per_step and command must be set")
            for key in MEASURED:
                value = values.get(key)
                if dry and value is not None:
                    problems.append(f"{family} {mode}: {key} must be null in a dry run")
                nullable = key in ("mfu", "peak_memory_gib") and values.get("device") == "cpu"
                if not dry and entry.get("error") is None and value is None and not nullable:
                    problems.append(f"{family} {mode}: {key} is not measured")
    if not result.get("families"):
        problems.append("no families")
    return problems
