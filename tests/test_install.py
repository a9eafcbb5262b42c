"""The distribution as a user installs it: one import name, and every door working outside the checkout.

A wheel is built from a copy of the checkout's sources, installed with pip into a fresh virtual
environment, and run from a folder outside the checkout. The fresh environment borrows the
project's dependencies (torch, transformers, ...) from the test's own environment through a `.pth`
line; `.pth` files in a borrowed folder are not run, so the checkout's editable install of
`diaforge` stays out of it and every `diaforge` module comes from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from _repo import ROOT

pytestmark = pytest.mark.slow(reason="builds a wheel, makes a virtual environment and runs the doors in it")

#: What the checkout holds besides the sources a wheel is built from.
NOT_SOURCES = (
    ".git",
    ".venv",
    "outputs",
    "site",
    "build",
    "tests",
    "docs",
    "__pycache__",
    "*.egg-info",
    ".*_cache",
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of a copy of the checkout (the checkout itself gets no build folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCES))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
         "--wheel-dir", str(tmp / "dist"), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = (tmp / "dist").glob("diaforge-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel installed by pip, and nothing else of ours."""
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    site = _site_packages(python)
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    return env_dir


def _site_packages(python: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    return Path(
        subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    )


def test_the_wheel_holds_one_top_level_name(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        tops = {name.split("/")[0] for name in zf.namelist()}
        names = zf.namelist()
    assert tops == {"diaforge", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, tops
    # The stages, their package data and the recipes travel under the one name.
    for path in (
        "diaforge/data_gen/engine.py",
        "diaforge/data_gen/assets/catalogue_train.json",
        "diaforge/train/sft.py",
        "diaforge/eval/benchmarks/diabench_heldout_v1.jsonl",
        "diaforge/pipeline/demo.py",
        "diaforge/bench/run.py",
        "diaforge/recipes/tiny/sft.yaml",
        "diaforge/recipes/registry.yaml",
        "diaforge/accelerate_configs/cpu.yaml",
    ):
        assert path in names, path


def test_the_install_adds_exactly_one_import_name(venv: Path) -> None:
    site = _site_packages(venv / "bin" / "python")
    added = {p.name for p in site.iterdir()} - {"borrowed-dependencies.pth", "__pycache__"}
    assert {n for n in added if not n.endswith(".dist-info")} == {"diaforge"}, added
    record = next(site.glob("diaforge-*.dist-info")) / "RECORD"
    tops = {line.split("/")[0].split(",")[0] for line in record.read_text().splitlines()}
    assert {t for t in tops if not t.endswith(".dist-info") and not t.startswith("..")} == {"diaforge"}, tops


def _door(venv: Path, work: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", WANDB_MODE="disabled", PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    done = subprocess.run(
        [str(venv / "bin" / "diaforge"), *argv],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, (argv, done.stderr[-3000:])
    return done


def test_the_doors_work_outside_the_checkout(venv: Path, tmp_path: Path) -> None:
    """`diaforge data generate`, `diaforge train` (one step of the tiny recipe) and `diaforge eval run`
    (the reference policy), from a folder outside the checkout, with only the wheel's `diaforge`."""
    work = tmp_path / "work"
    work.mkdir()
    python = venv / "bin" / "python"
    where = subprocess.run(
        [str(python), "-c", "import diaforge.eval.cli as m, diaforge.recipes as r; print(m.__file__); print(r.__file__)"],
        cwd=work, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    site = _site_packages(python)
    assert all(Path(p).is_relative_to(site) for p in where), where

    catalogue = site / "diaforge" / "data_gen" / "assets" / "catalogue_train.json"
    _door(venv, work, "data", "generate", "--catalogue", str(catalogue), "--num-dialogues", "4",
          "--out", "data", "--quiet")  # fmt: skip
    dialogues = (work / "data" / "dialogues.jsonl").read_text(encoding="utf-8").splitlines()
    assert dialogues and all(json.loads(line)["turns"] for line in dialogues)

    # The tiny recipe as the wheel ships it, its data and output overridden on the command line.
    shutil.copy(site / "diaforge" / "recipes" / "tiny" / "sft.yaml", work / "tiny.yaml")
    _door(venv, work, "train", "--config_file", "cpu", "tiny.yaml", "--dataset_path", "data/dialogues.jsonl",
          "--output_dir", "out/sft", "--max_steps", "1", "--max_dialogues", "2", "--max_length", "16384",
          "--save_strategy", "no", "--report_to", "none")  # fmt: skip
    assert (work / "out" / "sft" / "adapter_model.safetensors").is_file()

    _door(venv, work, "eval", "run", "--backend", "reference", "--limit", "2", "--modes", "dynamic",
          "--out", "out/eval", "--quiet")  # fmt: skip
    metrics = json.loads((work / "out" / "eval" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["dynamic"]["n"] == 2 and metrics["dynamic"]["Acc"] == 1.0
    assert Path(metrics["benchmark"]).is_relative_to(site)
