"""The demo as one command, `diaforge demo` (`python -m diaforge.pipeline demo`, what `make demo` runs):
materialise SmolLM2, generate a training corpus, fine-tune it through the public training command,
evaluate the base and the tuned model and the floors on the same held-out dialogues, compare, and
write ``report.json`` with every run's metrics, the wall time of each stage and the commands.

Every stage runs the command a user would type (`diaforge data|train|eval ...`, in a subprocess of
the working folder, so its output streams as usual) and is skipped when its result is already
complete: a demo cut short picks up where it stopped (`--fresh` starts over). Its outputs go under
the working folder; what it reads (the recipe, the tool catalogue, the benchmark, the accelerate
config) ships inside the installed packages and is found there (`diaforge.packaged`), so the demo
runs from any folder. What it runs is a `DemoConfig` (`diaforge.pipeline.demo_config`, whose
fields are the demo's flags). `diaforge demo-curve` (`diaforge.pipeline.curve`) trains at several
corpus sizes and plots the dynamic accuracy against the number of training samples.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from diaforge.errors import UserError
from diaforge.llm.decoding import NEEDS, NOT_AIDS
from diaforge.packaged import packaged_path
from diaforge.pipeline.demo_config import DemoConfig
from diaforge.pipeline.device import check_device_present, gpu_accelerate_config, gpu_index


def cpu_accelerate_config() -> Path:
    """The bundled accelerate config the demo trains with (one process, CPU, fp32)."""
    return packaged_path("diaforge.accelerate_configs", "cpu.yaml")


@dataclass
class Stage:
    """One timed step of the demo."""

    name: str
    seconds: float = 0.0
    skipped: bool = False
    """Its result was already complete (a resumed demo)."""
    commands: list[str] = field(default_factory=list)
    peak_rss_mb: float | None = None
    """The largest resident memory of its commands, each with the processes it waited for (the
    kernel's ``ru_maxrss`` of each command, through `os.wait4`), in MiB; None where the platform
    does not report it."""


class Runner:
    """Runs the demo's commands in the working folder and times its stages."""

    def __init__(self, threads: int | None, total: int | None = None) -> None:
        self.stages: list[Stage] = []
        self.total = total
        """How many stages the run has, for the `== [k/total]` lines (None: not shown)."""
        self.started = time.monotonic()
        self.env = dict(os.environ)
        self.env.setdefault("HF_HUB_OFFLINE", "1")
        self.env.setdefault("TRANSFORMERS_OFFLINE", "1")
        self.env.setdefault("WANDB_MODE", "offline")
        self.env["OMP_NUM_THREADS"] = str(threads or os.cpu_count() or 1)

    def stage(self, name: str, done: bool, steps: Callable[[Stage], None]) -> Stage:
        stage = Stage(name)
        self.stages.append(stage)
        head = f"== [{len(self.stages)}/{self.total}] {name}" if self.total else f"== {name}"
        if done:
            stage.skipped = True
            print(f"{head}: already complete, skipped", flush=True)
            return stage
        elapsed = (time.monotonic() - self.started) / 60
        print(f"{head} (after {elapsed:.1f} min; its own progress bar shows its ETA)", flush=True)
        start = time.monotonic()
        steps(stage)
        stage.seconds = round(time.monotonic() - start, 1)
        print(f"{head}: {stage.seconds:.0f} s", flush=True)
        return stage

    def run(self, stage: Stage, argv: Sequence[str]) -> None:
        command = " ".join(shlex.quote(str(a)) for a in argv)
        stage.commands.append(shown_command(argv))
        returncode, peak = run_measured([str(a) for a in argv], self.env)
        if peak is not None:
            stage.peak_rss_mb = max(stage.peak_rss_mb or 0.0, peak)
        if returncode != 0:
            raise DemoError(f"stage {stage.name!r} failed (exit {returncode}): {command}")


def run_measured(argv: Sequence[str], env: dict[str, str]) -> tuple[int, float | None]:
    """Run `argv` to its end; its exit code and its peak resident memory in MiB (the command and
    every descendant it waited for, `ru_maxrss` from `os.wait4`; None without `os.wait4`). A child
    starts from its parent's resident size at the fork, so the figure is at least this process's
    own: small for the demo's runner, which holds no model."""
    process = subprocess.Popen(list(argv), env=env)
    if not hasattr(os, "wait4"):
        return process.wait(), None
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        raise
    process.returncode = os.waitstatus_to_exitcode(status)
    # Linux reports ru_maxrss in KiB (macOS in bytes).
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return process.returncode, round(usage.ru_maxrss / scale, 1)


class DemoError(UserError):
    """A stage's command failed; its own output says why (exit 1: the input was fine)."""

    exit_code = 1


def python_argv(*args: Any) -> list[str]:
    return [sys.executable, *map(str, args)]


def diaforge_argv(command: str, *args: Any) -> list[str]:
    """`diaforge COMMAND ARGS...` as the demo runs it: the console script installed beside this
    interpreter, which leaves the working folder off the import path (a user's own `eval.py` or
    `recipes/` there cannot stand in for the project's packages); `python -m diaforge` where the
    script is not installed."""
    script = Path(sys.executable).with_name("diaforge.exe" if os.name == "nt" else "diaforge")
    head = [str(script)] if script.is_file() else python_argv("-m", "diaforge")
    return [*head, command, *map(str, args)]


def shown_command(argv: Sequence[Any]) -> str:
    """A command as the report records it: as a user types it (`python`, `diaforge`), not with
    the paths of this interpreter."""
    words = [str(a) for a in argv]
    if words[0] == sys.executable:
        words[0] = "python"
    elif Path(words[0]).stem == "diaforge" and Path(words[0]).parent == Path(sys.executable).parent:
        words[0] = "diaforge"
    return " ".join(shlex.quote(w) for w in words)


def complete_run(folder: Path) -> bool:
    return (folder / "metrics.json").is_file()


def is_trained(folder: Path) -> bool:
    return (folder / "train_results.json").is_file() and (
        (folder / "adapter_config.json").is_file() or (folder / "config.json").is_file()
    )


def eval_args(
    cfg: DemoConfig,
    modes: str | None = None,
    *,
    decoding: bool = True,
    aids: bool = True,
    limit: int | None = None,
) -> list[str]:
    """The options every evaluation of the demo shares (same dialogues, same loop); `modes`
    overrides the config's, `limit` its number of dialogues (the first of the same seeded sample).
    `decoding=False` leaves out every decoding setting: for the floors (a policy decodes nothing,
    and `eval run` refuses an aid it cannot apply). `aids=False` leaves out the decoding aids but
    keeps the settings that change only a reply's cost (speculation): for the tuned model served
    without the aids."""
    if cfg.no_tool_limit == 0:
        no_tool = ["--no-tool-bench", "none"]
    else:
        no_tool = ["--no-tool-limit", str(cfg.no_tool_limit)] if cfg.no_tool_limit else []
    return [
        "--bench",
        str(cfg.bench),
        "--modes",
        modes or cfg.modes,
        "--limit",
        str(limit or cfg.limit),
        "--seed",
        str(cfg.seed),
        "--t-max",
        str(cfg.t_max),
        *(_decoding_args(cfg, aids) if decoding else []),
        *no_tool,
    ]


def _decoding_args(cfg: DemoConfig, aids: bool = True) -> list[str]:
    """The decoding settings of the model evaluations (base and tuned alike), as `eval run`'s flags,
    from `cfg.decoding`: ``--constrain-calls`` always, every other setting where it differs from
    `eval run`'s default, and a rule that needs `constrain_calls` (`NEEDS`) only with it. A switch
    is written ``on``/``off``, a number as itself. `aids=False`: the aids left out (`eval run`'s
    default, off), the rest kept."""
    decoding, default = cfg.decoding.as_dict(), type(cfg.decoding)().as_dict()
    aid_names = {n for n, v in default.items() if isinstance(v, bool) and n not in NOT_AIDS}
    args = []
    for name, value in decoding.items():
        if name in NEEDS and not decoding["constrain_calls"]:
            continue
        if not aids and name in aid_names:
            continue
        if (aids and name == "constrain_calls") or value != default[name]:
            shown = ("on" if value else "off") if isinstance(value, bool) else str(value)
            args += ["--" + name.replace("_", "-"), shown]
    return args


def model_and_corpus(runner: Runner, cfg: DemoConfig, data: Path) -> None:
    """The first two stages of the demo and the curve: the base model, then the training corpus."""
    from diaforge.llm.smollm2 import is_materialised

    runner.stage(
        "materialise",
        is_materialised(cfg.model_dir),
        lambda s: runner.run(s, python_argv("-m", "diaforge.llm.smollm2", "--out", cfg.model_dir)),
    )
    runner.stage(
        "generate",
        (data / "stats.json").is_file(),
        lambda s: runner.run(s, _generate_command(cfg, data)),
    )


def _generate_command(cfg: DemoConfig, data: Path) -> list[str]:
    return diaforge_argv(
        "data",
        "generate",
        "--catalogue",
        cfg.catalogue,
        "--out",
        data,
        "--num-dialogues",
        cfg.dialogues,
        "--seed",
        cfg.seed,
        "--reasoning",
        cfg.reasoning,
        *(["--no-tool-share", cfg.no_tool_share] if cfg.no_tool_share else []),
    )


def train_command(cfg: DemoConfig, data: Path, output_dir: Path, train_dialogues: int | None) -> list[str]:
    """`diaforge train` of the recipe on `data` into `output_dir`: on the CPU with cpu.yaml, on a
    GPU with single_gpu.yaml (`--gpu_ids N` for `cuda:N`)."""
    if cfg.device == "cpu":
        launcher = ["--config_file", cpu_accelerate_config()]
    else:
        index = gpu_index(cfg.device)
        launcher = ["--config_file", gpu_accelerate_config(), *(["--gpu_ids", index] if index else [])]
    command = diaforge_argv(
        "train",
        *launcher,
        cfg.recipe,
        "--model_name_or_path",
        cfg.model_dir,
        "--dataset_path",
        data,
        "--output_dir",
        output_dir,
    )
    if train_dialogues is not None:
        command += ["--max_dialogues", str(train_dialogues)]
    return command


def model_eval_command(
    cfg: DemoConfig, model: Path, label: str, out: Path, fmt_from: Path, *, aided: bool = True
) -> list[str]:
    """`eval run` of a model; the base is prompted in the tuned model's format (`fmt_from`), so
    that the two differ only by the fine-tuning. `aided=False`: every decoding aid off, on
    `unaided_limit` dialogues (`unaided_command`)."""
    return diaforge_argv(
        "eval",
        "run",
        "--model",
        model,
        "--label",
        label,
        "--out",
        out,
        "--batch-size",
        cfg.batch_size,
        "--device",
        cfg.device,
        "--prompt-format",
        fmt_from / "prompt_format.json",
        *(eval_args(cfg) if aided else eval_args(cfg, aids=False, limit=unaided_count(cfg))),
    )


UNAIDED = "tuned-unaided"
"""The label of the tuned model's evaluation with every decoding aid off."""


def unaided_count(cfg: DemoConfig) -> int:
    """How many dialogues the unaided evaluation takes (0: none)."""
    return min(cfg.limit, cfg.limit if cfg.unaided_limit is None else cfg.unaided_limit)


def run_demo(cfg: DemoConfig) -> dict[str, Any]:
    """The whole demo; returns the report it writes to ``<out>/report.json``."""
    from diaforge.eval.compare import compare_runs

    cfg.validate()
    check_device_present(cfg.device)
    out = cfg.out
    if cfg.fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(cfg.threads, total=8 if unaided_count(cfg) else 7)
    started = time.monotonic()
    data, sft, runs = out / "data", out / "sft", out / "eval"

    model_and_corpus(runner, cfg, data)
    runner.stage(
        "train",
        is_trained(sft),
        lambda s: runner.run(s, train_command(cfg, data / "dialogues.jsonl", sft, cfg.train_dialogues)),
    )
    for label, model in (("base", cfg.model_dir), ("tuned", sft)):
        folder = runs / label
        runner.stage(
            f"eval {label}",
            complete_run(folder),
            lambda s, m=model, lb=label, f=folder: runner.run(s, model_eval_command(cfg, m, lb, f, sft)),
        )
    models = ["base", "tuned"]
    if unaided_count(cfg):
        models.insert(1, UNAIDED)  # before "tuned": the pair is stored as tuned minus unaided
        runner.stage(
            "eval tuned unaided",
            complete_run(runs / UNAIDED),
            lambda s: runner.run(s, model_eval_command(cfg, sft, UNAIDED, runs / UNAIDED, sft, aided=False)),
        )

    def floors(stage: Stage) -> None:
        for policy in cfg.floors:
            if not complete_run(runs / policy):
                runner.run(
                    stage,
                    diaforge_argv(
                        "eval",
                        "run",
                        "--backend",
                        policy,
                        "--out",
                        runs / policy,
                        "--quiet",
                        *eval_args(cfg, decoding=False),
                    ),
                )

    runner.stage("floors", all(complete_run(runs / p) for p in cfg.floors), floors)

    report_path = out / "report.json"

    def compare(stage: Stage) -> None:
        stage.commands.append(
            "diaforge eval compare " + " ".join(str(runs / r) for r in (*models, *cfg.floors))
        )
        print(compare_runs([runs / r for r in (*models, *cfg.floors)], out_dir=out, json_path=report_path))

    runner.stage("compare", False, compare)
    report = demo_report(cfg, runner, json.loads(report_path.read_text(encoding="utf-8")), started)
    report_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(render_gain(report["gain"]))
    print(report["benchmark"]["note"])
    if report["served"]:
        print(render_served(report["served"]))
    from diaforge.eval.no_tool import render_split_summary

    print(render_split_summary(report["splits"]))
    print(f"demo: {report['wall_seconds'] / 60:.1f} min; report in {report_path}")
    return report


def demo_report(
    cfg: DemoConfig, runner: Runner, runs_report: dict[str, Any], started: float
) -> dict[str, Any]:
    """The report `make demo` writes: the comparison's runs, then the gain, the served numbers,
    each stage's time and peak memory, the commands and the configuration."""
    from diaforge.eval.no_tool import split_summary

    return {
        **runs_report,
        "gain": gain_summary(runs_report),
        "benchmark": benchmark_coverage(cfg),
        "served": served_summary(runs_report, unaided_count(cfg), cfg.limit),
        "wall_seconds": round(time.monotonic() - started, 1),
        "timings": {s.name: s.seconds for s in runner.stages},
        "peak_rss_mb": {s.name: s.peak_rss_mb for s in runner.stages if s.peak_rss_mb is not None},
        "resumed_stages": [s.name for s in runner.stages if s.skipped],
        "commands": {s.name: s.commands for s in runner.stages if s.commands},
        "config": plain_config(cfg),
        "machine": {"cpus": os.cpu_count(), "threads": int(runner.env["OMP_NUM_THREADS"])},
        "splits": split_summary(runs_report),  # each run's positive row beside its no-tool row
    }


def benchmark_coverage(cfg: DemoConfig) -> dict[str, Any]:
    """How much of the held-out benchmark the models were evaluated on: all of it, or a seeded sample."""
    total = sum(1 for line in cfg.bench.read_text(encoding="utf-8").splitlines() if line.strip())
    evaluated = min(cfg.limit, total)
    whole = evaluated == total
    note = (
        f"evaluated on the whole held-out benchmark: {total} dialogues"
        if whole
        else f"evaluated on {evaluated} of the held-out benchmark's {total} dialogues (seeded sample, --limit)"
    )
    return {"dialogues": evaluated, "of": total, "whole": whole, "note": note}


def plain_config(cfg: DemoConfig) -> dict[str, Any]:
    """The configuration as JSON holds it (paths as text, tuples as lists)."""
    return json.loads(json.dumps(asdict(cfg), default=str))


def _metric(runs: dict[str, Any], label: str, mode: str, key: str) -> float | None:
    value = runs.get(label, {}).get(mode, {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


DEFAULT_CURVE_SIZES = (10, 20, 40, 80)
"""Training dialogues of `make demo-curve`'s runs (`diaforge.pipeline.curve`)."""

GAIN_BAR = {"over_base_pp": 30.0, "over_name_overlap_pp": 10.0}
"""What the demo must show to call the data's effect a gain: dynamic Acc at least 30 points over the
base and 10 over the name-overlap floor, with an FTR no higher than the floor's, and tuned −
name-overlap *shown* and positive by the verdict rule (`diaforge.eval.stats.verdict`: its paired 95 %
interval excludes 0 and the exact McNemar p < 0.05; a borderline difference does not pass)."""

_PAIRED_KEYS = ("n", "diff", "lo", "hi", "wins", "losses", "p_value", "verdict")


def _paired(runs: dict[str, Any], against: str, mode: str) -> dict[str, Any] | None:
    """tuned − `against` compared dialogue by dialogue on Acc, as `eval compare` put it in the
    report (``report["tuned"]["paired"][against][mode]``, `diaforge.eval.stats.PairedDifference`), with
    the ``verdict`` `eval compare` stored (`diaforge.eval.stats.verdict`, taken from the rule here for
    a pair stored without one); None when the runs were not paired."""
    from diaforge.eval.stats import VERDICTS, verdict

    value = (((runs.get("tuned") or {}).get("paired") or {}).get(against) or {}).get(mode)
    if not isinstance(value, dict):
        return None
    out = {k: value.get(k) for k in _PAIRED_KEYS}
    if out["verdict"] not in VERDICTS:
        try:
            out["verdict"] = verdict(value)
        except ValueError:  # a pair without its interval or p: no verdict
            out["verdict"] = None
    return out


def gain_summary(runs: dict[str, Any]) -> dict[str, Any]:
    """The test of a gain, per mode: the tuned model's Acc minus the base's and minus the
    name-overlap floor's (in points), the same two differences compared dialogue by dialogue
    (``paired_over_base``, ``paired_over_name_overlap``: difference, 95 % interval, dialogues only
    the tuned model / only the other got right, McNemar p, and the verdict of the rule: shown,
    borderline or not shown), whether its FTR is no higher than the base's and than the floor's,
    and whether it passes the bar `make demo` is held to (`GAIN_BAR`; None when a number it needs
    is missing)."""
    from diaforge.eval.stats import SHOWN

    summary: dict[str, Any] = {}
    for mode in ("static", "dynamic"):
        tuned = _metric(runs, "tuned", mode, "Acc")
        base = _metric(runs, "base", mode, "Acc")
        floor = _metric(runs, "name-overlap", mode, "Acc")
        ftr_tuned = _metric(runs, "tuned", mode, "FTR")
        ftr_base = _metric(runs, "base", mode, "FTR")
        ftr_floor = _metric(runs, "name-overlap", mode, "FTR")
        summary[mode] = {
            "tuned_Acc": tuned,
            "over_base_pp": None if tuned is None or base is None else round(100 * (tuned - base), 1),
            "over_name_overlap_pp": None
            if tuned is None or floor is None
            else round(100 * (tuned - floor), 1),
            "FTR_tuned": ftr_tuned,
            "FTR_base": ftr_base,
            "FTR_not_above_base": None if ftr_tuned is None or ftr_base is None else ftr_tuned <= ftr_base,
            "FTR_name_overlap": ftr_floor,
            "FTR_not_above_name_overlap": None
            if ftr_tuned is None or ftr_floor is None
            else ftr_tuned <= ftr_floor,
            "paired_over_base": _paired(runs, "base", mode),
            "paired_over_name_overlap": _paired(runs, "name-overlap", mode),
        }
        g = summary[mode]
        over_floor = g["paired_over_name_overlap"] or {}
        parts = (
            g["over_base_pp"],
            g["over_name_overlap_pp"],
            g["FTR_not_above_name_overlap"],
            over_floor.get("verdict"),
        )
        g["passes"] = (
            None
            if any(p is None for p in parts)
            else g["over_base_pp"] >= GAIN_BAR["over_base_pp"]
            and g["over_name_overlap_pp"] >= GAIN_BAR["over_name_overlap_pp"]
            and bool(g["FTR_not_above_name_overlap"])
            and over_floor["verdict"] == SHOWN
            and (over_floor.get("diff") or 0) > 0
        )
    return summary


def served_summary(runs: dict[str, Any], unaided: int, limit: int) -> dict[str, Any] | None:
    """The tuned model's Acc with the demo's decoding aids and with none (what a stock server
    gives), per mode, and their paired difference (aided minus unaided, on the dialogues both
    evaluated: ``report["tuned"]["paired"]["tuned-unaided"]``); None when the unaided run was
    skipped. ``sample`` says when the unaided run took fewer dialogues than the aided one."""
    if not unaided or UNAIDED not in runs:
        return None
    out: dict[str, Any] = {
        "unaided_dialogues": unaided,
        "aided_dialogues": limit,
        "sample": (
            f"the unaided run took the first {unaided} of the {limit} dialogues of the same seeded sample"
            if unaided < limit
            else None
        ),
    }
    for mode in ("static", "dynamic"):
        aided, bare = _metric(runs, "tuned", mode, "Acc"), _metric(runs, UNAIDED, mode, "Acc")
        if aided is None and bare is None:
            continue
        out[mode] = {
            "aided_Acc": aided,
            "unaided_Acc": bare,
            "paired_aided_over_unaided": _paired(runs, UNAIDED, mode),
        }
    return out


def render_served(served: dict[str, Any]) -> str:
    """The aided and unaided numbers side by side, one line a mode, with the paired difference."""
    lines = []
    for mode in ("static", "dynamic"):
        row = served.get(mode)
        if not row:
            continue
        aided = "n/a" if row["aided_Acc"] is None else f"{row['aided_Acc']:.3f}"
        bare = "n/a" if row["unaided_Acc"] is None else f"{row['unaided_Acc']:.3f}"
        lines.append(
            f"tuned {mode} Acc with the decoding aids {aided}, with none (a stock server) {bare}; "
            f"aided - unaided: {_paired_text(row['paired_aided_over_unaided'])}"
        )
    if served.get("sample"):
        lines.append(f"({served['sample']})")
    return "\n".join(lines)


def _paired_text(p: dict[str, Any] | None) -> str:
    """A paired difference as the demo prints it, its verdict first (`diaforge.eval.stats.verdict_sentence`):
    "not shown: +15.0 pp [-1.8, +30.8], McNemar p = 0.111 (n=80)"."""
    from diaforge.eval.stats import verdict_sentence

    if not p or any(p.get(k) is None for k in ("diff", "lo", "hi", "p_value")):
        return "n/a"
    return f"{verdict_sentence(p, points=True)} (n={p['n']})"


def render_gain(gain: dict[str, Any]) -> str:
    """`gain_summary` as the lines the demo prints: per mode the point differences, FTRs and the
    verdict, then the paired differences with their intervals."""
    lines = ["mode     tuned Acc  vs base   vs name-overlap  FTR tuned/base/floor  passes"]
    for mode, g in gain.items():

        def pp(x: float | None) -> str:
            return "n/a" if x is None else f"{x:+.1f} pp"

        def num(x: float | None) -> str:
            return "n/a" if x is None else f"{x:.3f}"

        lines.append(
            f"{mode:<8} {num(g['tuned_Acc']):<10} {pp(g['over_base_pp']):<9} {pp(g['over_name_overlap_pp']):<16} "
            f"{num(g['FTR_tuned'])}/{num(g['FTR_base'])}/{num(g.get('FTR_name_overlap'))}  "
            f"{'n/a' if g.get('passes') is None else ('yes' if g['passes'] else 'no')}"
        )
    lines.append(
        "paired, dialogue by dialogue (verdict: Acc difference [95% CI], exact McNemar p, n; shown "
        "needs both the interval to exclude 0 and p < 0.05):"
    )
    for mode, g in gain.items():
        lines.append(
            f"{mode:<8} tuned - base {_paired_text(g.get('paired_over_base'))}; "
            f"tuned - name-overlap {_paired_text(g.get('paired_over_name_overlap'))}"
        )
    return "\n".join(lines)
