"""The package list of the one installed name, `diaforge` (the rest of the metadata is in pyproject.toml).

pyproject.toml's `[tool.setuptools] package-dir` maps each top-level folder of the checkout to its
import name (`data_gen/` is `diaforge.data_gen`, ...). Setuptools' own discovery cannot rename what it
finds, so this file lists, under each mapped name, every package below its folder.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import find_packages, setup

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent


def layout() -> dict[str, str]:
    """Import name -> folder, as pyproject.toml declares it."""
    config = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"]["package-dir"])


def packages(folders: dict[str, str]) -> list[str]:
    """Every package under each mapped folder, by its import name."""
    found = []
    for name, folder in folders.items():
        found.append(name)
        found += [f"{name}.{sub}" for sub in find_packages(str(HERE / folder))]
    # A folder nested in another (none today) would be found twice; keep the first.
    return sorted(set(found))


setup(packages=packages(layout()))
