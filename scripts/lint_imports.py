"""The import contract, checked on the sources laid out by their import names.

    python -m scripts.lint_imports          # what `make lint` and the pre-commit hook run

The checkout keeps the stages as top-level folders (`data_gen/`, `train/`, ...) that install as
`diaforge.data_gen`, `diaforge.train`, ... (pyproject.toml, `[tool.setuptools] package-dir`).
`lint-imports` finds a package's modules by walking its folder, so it would not see the stages
under `diaforge/`. This script copies every module of the checkout into a temporary folder laid
out by import name (the wheel's layout) and runs `lint-imports` there, against the contract in
pyproject.toml. `scripts` (the repository tools, never installed) is copied as it is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
CHECKOUT_ONLY = ("scripts",)
"""Top-level folders that are import names of the checkout alone (never installed)."""


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """Import name -> folder of the checkout, as pyproject.toml maps them."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"]["package-dir"])


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted import name of a module file of the checkout (`eval/cli.py` -> `diaforge.eval.cli`)."""
    rel = path.resolve().relative_to(root.resolve()).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    folders = {folder: name for name, folder in package_dirs(root).items()}
    folders.update({name: name for name in CHECKOUT_ONLY})
    if parts[0] not in folders:
        raise ValueError(f"{path} lies in no package folder of the checkout")
    return ".".join([folders[parts[0]], *parts[1:]])


def stage(dest: Path, root: Path = ROOT) -> Path:
    """Copy every module under the checkout's package folders into `dest`, by import name."""
    mapping = {**package_dirs(root), **{name: name for name in CHECKOUT_ONLY}}
    for name, folder in mapping.items():
        source = root / folder
        for path in source.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            target = dest.joinpath(*name.split("."), path.relative_to(source))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return dest


def lint_imports(root: Path = ROOT, *args: str) -> subprocess.CompletedProcess[str]:
    """`lint-imports --no-cache` on a staged copy of the checkout; its output captured."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if exe is None:
        raise SystemExit("lint-imports is not installed (the dev extra pins import-linter; make setup)")
    with tempfile.TemporaryDirectory(prefix="diaforge-imports-") as tmp:
        staged = stage(Path(tmp), root)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(staged), os.environ.get("PYTHONPATH", "")])}
        return subprocess.run(
            [exe, str(root / "pyproject.toml"), "--no-cache", *args],
            cwd=staged,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )


def main() -> int:
    result = lint_imports(ROOT, *sys.argv[1:])
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    raise SystemExit(main())
