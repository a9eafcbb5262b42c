"""`diaforge demo-curve` (`python -m diaforge.pipeline demo-curve`): the learning curve of the demo's recipe.
It trains at several corpus sizes (the first N dialogues of the demo's corpus) and evaluates each
tuned model on the demo's held-out dialogues, with the anatomy (`diaforge.eval.anatomy`) at every point, so
a curve shows which sub-skill moves with more data and not only Acc. Every point carries the 95 %
intervals of its run (``intervals``, `diaforge.eval.intervals`): the printed lines show them and the plot
draws the Wilson interval of each point's Acc as an error bar. Like the demo it runs the user's
commands from the working folder and writes under it (`diaforge.pipeline.demo`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.pipeline.demo import (
    DEFAULT_CURVE_SIZES,
    Runner,
    complete_run,
    diaforge_argv,
    eval_args,
    is_trained,
    model_and_corpus,
    plain_config,
    train_command,
)
from diaforge.pipeline.demo_config import DemoConfig
from diaforge.pipeline.device import check_device_present

DEMO_ONLY_FIELDS = ("train_dialogues", "floors")
"""The `DemoConfig` fields the curve does not take, and so not flags of ``demo-curve``: it trains
at each of its sizes (not at `train_dialogues`) and evaluates no floors."""


def run_curve(cfg: DemoConfig, sizes: Sequence[int] = DEFAULT_CURVE_SIZES) -> dict[str, Any]:
    """Train at each corpus size (the first N dialogues of the demo's corpus, generated if
    missing) and evaluate each tuned model dynamically on the demo's dialogues; writes
    ``<out>/curve/curve.json`` and ``curve.png`` (dynamic Acc against training samples, the base
    and the name-overlap floor as lines)."""
    cfg.validate()
    if not sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes):
        raise InputError(f"--sizes must be whole numbers >= 1, got {list(sizes)!r}")
    if max(sizes) > cfg.dialogues:
        raise InputError(f"--sizes go up to {max(sizes)} dialogues but --dialogues is {cfg.dialogues}")
    check_device_present(cfg.device)
    out = cfg.out / "curve"
    if cfg.fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    runner = Runner(cfg.threads, total=2 + 2 * len(set(sizes)))
    data = cfg.out / "data"
    model_and_corpus(runner, cfg, data)
    check_corpus_reaches(data, max(sizes))
    points = [_curve_point(runner, cfg, data, out / f"n{n}", n) for n in sorted(set(sizes))]
    demo_point = _demo_point(cfg.out)
    if demo_point is not None and demo_point["dialogues"] not in {p["dialogues"] for p in points}:
        points.append(demo_point)  # the demo's own tuned model: same recipe, same dialogues
        points.sort(key=lambda p: p["dialogues"])
    references = {}
    for label in ("base", "name-overlap"):
        path = cfg.out / "eval" / label / "metrics.json"
        if path.is_file():
            references[label] = json.loads(path.read_text(encoding="utf-8")).get("dynamic", {})
    result = {
        "points": points,
        "references": references,
        "timings": {s.name: s.seconds for s in runner.stages},
        "commands": {s.name: s.commands for s in runner.stages if s.commands},
        "config": plain_config(cfg),
    }
    (out / "curve.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    plot_curve(result, out / "curve.png")
    for p in points:
        print(point_line(p))
    print(f"curve in {out / 'curve.json'} and {out / 'curve.png'}")
    return result


def check_corpus_reaches(data: Path, largest: int) -> None:
    """The generated corpus holds at least `largest` accepted dialogues (``stats.json``): the
    recipe's `max_dialogues` would otherwise train the largest point on fewer than it is named for.
    About 92 % of seeds are accepted (406 of 440 with the bundled training catalogue), so
    `--dialogues` must be some 9 % above the largest size."""
    stats_path = data / "stats.json"
    accepted = json.loads(stats_path.read_text(encoding="utf-8")).get("accepted")
    if isinstance(accepted, int) and accepted < largest:
        raise InputError(
            f"the corpus holds {accepted} accepted dialogues but --sizes goes up to {largest}: remove "
            f"{data} and run again with more --dialogues (about {largest * 440 // 406 + 1} seeds give {largest})",
            path=stats_path,
        )


def point_line(point: dict[str, Any]) -> str:
    """The line `run_curve` prints for a point: dynamic Acc and FTR with their intervals and n, and
    the anatomy's shares with their counts."""
    from diaforge.eval.tables import fmt_ci, interval_of

    one = {"dynamic": point["dynamic"], "intervals": {"dynamic": point.get("intervals") or {}}}
    a = point.get("anatomy", {})

    def ci(key: str) -> str:
        value = point["dynamic"].get(key)
        return "n/a" if value is None else fmt_ci(float(value), interval_of(one, "dynamic", key), digits=3)

    def share(name: str, num: str, den: str) -> str:
        return f"{name} {a[num]}/{a[den]}" if num in a and den in a else f"{name} n/a"

    return (
        f"{point['dialogues']:>5} dialogues, {point['samples']:>5} samples: dynamic Acc {ci('Acc')}, "
        f"FTR {ci('FTR')}, n={point['dynamic'].get('n', 'n/a')}; {share('asks first', 'asks_first_n', 'n')}, "
        f"{share('right tool', 'right_tool_n', 'calls_n')}, {share('right keys', 'right_keys_n', 'right_tool_n')}, "
        f"{share('values grounded', 'values_grounded_n', 'values_n')}"
    )


def _curve_point(runner: Runner, cfg: DemoConfig, data: Path, folder: Path, n: int) -> dict[str, Any]:
    """Train on the first `n` dialogues of the corpus in `data` into ``folder/sft``, evaluate the
    tuned model dynamically into ``folder/eval``; the curve's point for `n` (each stage resumable)."""
    sft = folder / "sft"
    trained = runner.stage(
        f"train {n}",
        is_trained(sft),
        lambda s, f=sft, k=n: runner.run(s, train_command(cfg, data / "dialogues.jsonl", f, k)),
    )
    runner.stage(
        f"eval {n}",
        complete_run(folder / "eval"),
        lambda s, f=folder, m=sft: runner.run(
            s,
            diaforge_argv(
                "eval",
                "run",
                "--model",
                m,
                "--label",
                f"tuned-{f.name}",
                "--out",
                f / "eval",
                "--batch-size",
                cfg.batch_size,
                "--device",
                cfg.device,
                # The curve is of the positive skill: its points skip the no-tool split.
                *eval_args(replace(cfg, no_tool_limit=0), "dynamic"),
            ),
        ),
    )
    summary = json.loads((sft / "train_summary.json").read_text(encoding="utf-8"))
    metrics = json.loads((folder / "eval" / "metrics.json").read_text(encoding="utf-8"))
    return {
        "dialogues": n,
        "samples": summary["stats"]["samples"],
        "dynamic": metrics.get("dynamic", {}),
        "intervals": metrics.get("intervals", {}).get("dynamic", {}),
        "anatomy": metrics.get("anatomy", {}).get("dynamic", {}),
        # A point trained by an earlier run keeps that run's time (the trainer's own runtime).
        "train_seconds": summary.get("train_runtime") if trained.skipped else trained.seconds,
    }


def _demo_point(out: Path) -> dict[str, Any] | None:
    """The point of the demo's own tuned model (``<out>/sft`` and ``<out>/eval/tuned``), if the
    demo has run: the curve need not train that size again."""
    summary_path, metrics_path = out / "sft" / "train_summary.json", out / "eval" / "tuned" / "metrics.json"
    if not (summary_path.is_file() and metrics_path.is_file()):
        return None
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    report = out / "report.json"
    seconds = (
        json.loads(report.read_text(encoding="utf-8")).get("timings", {}).get("train")
        if report.is_file()
        else None
    )
    metrics = json.loads(metrics_path.read_text(encoding="utf-8"))
    return {
        "dialogues": summary["stats"]["dialogues"],
        "samples": summary["stats"]["samples"],
        "dynamic": metrics.get("dynamic", {}),
        "intervals": metrics.get("intervals", {}).get("dynamic", {}),
        "anatomy": metrics.get("anatomy", {}).get("dynamic", {}),
        "train_seconds": seconds,
        "from": "demo",
    }


def plot_curve(result: dict[str, Any], path: Path) -> None:
    """`curve_figure` of `result` saved as a PNG at `path`."""
    import matplotlib.pyplot as plt

    fig = curve_figure(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def _acc_bounds(point: dict[str, Any]) -> tuple[float, float] | None:
    """The Wilson 95 % interval of a point's dynamic Acc: the stored one, else from its rate and n."""
    from diaforge.eval.stats import wilson

    stored = (point.get("intervals") or {}).get("Acc") or {}
    if stored.get("lo") is not None and stored.get("hi") is not None:
        return float(stored["lo"]), float(stored["hi"])
    n, acc = point["dynamic"].get("n"), point["dynamic"].get("Acc")
    if not isinstance(n, int) or n < 1 or acc is None:
        return None
    return wilson(round(float(acc) * n), n)


def curve_figure(result: dict[str, Any]) -> Any:
    """Dynamic Acc (with its 95 % interval as an error bar) and FTR against training samples, with
    the references as horizontal lines: each point labelled with its dialogues, the sizes written out as ticks, the legend below the
    axes (the lower left is where a failing model lands), n in the title."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FixedLocator, NullLocator

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    points = result["points"]
    xs = [p["samples"] for p in points]
    acc = [p["dynamic"].get("Acc", 0.0) for p in points]
    ax.plot(xs, acc, "o-", label="tuned: dynamic Acc", zorder=3)
    bars = [_acc_bounds(p) for p in points]  # the Wilson 95 % interval of each point's Acc
    if any(b is not None for b in bars):
        low = [y - b[0] if b else 0.0 for y, b in zip(acc, bars, strict=True)]
        high = [b[1] - y if b else 0.0 for y, b in zip(acc, bars, strict=True)]
        ax.errorbar(xs, acc, yerr=[low, high], fmt="none", ecolor="C0", capsize=3, zorder=3)
    ax.plot(xs, [p["dynamic"].get("FTR", 0.0) for p in points], "s--", label="tuned: dynamic FTR", zorder=3)
    for x, y, point in zip(xs, acc, points, strict=True):
        ax.annotate(f"{point['dialogues']} dial.", (x, y), textcoords="offset points", xytext=(0, 8),
                    ha="center", fontsize=7)  # fmt: skip
    for (label, metrics), style in zip(result["references"].items(), (":", "-."), strict=False):
        if "Acc" in metrics:
            ax.axhline(metrics["Acc"], linestyle=style, color="grey", label=f"{label}: dynamic Acc", zorder=2)
    ax.set_xscale("log")
    # The corpus sizes themselves as ticks, written out (no 4x10^1 on a log axis).
    ax.xaxis.set_major_locator(FixedLocator(xs))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(x) for x in xs])
    ax.set_xlabel("training samples (turn-sliced)")
    ax.set_ylabel("share of dialogues")
    ax.set_ylim(-0.04, 1.04)  # a line at 0 (the base) or 1 stays visible
    n = (result.get("config") or {}).get("limit")
    ax.set_title(
        f"learning curve, n = {n} held-out dialogues per point" if n else "learning curve", fontsize=9
    )
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
