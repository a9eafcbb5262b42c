"""Files that ship inside an installed package, found through `importlib.resources`.

The bundled recipes (`recipes/`), accelerate configs (`accelerate_configs/`), tool catalogues
(`data_gen/assets/`) and benchmarks (`eval/benchmarks/`) are package data: a command finds them
by package name, never through the location of its own source file or the working folder, so it
runs from any folder, from a checkout installed with `pip install -e .` as from a wheel.

The paths are handed to other processes (accelerate, the stage commands), so the package must
live on the file system (not in a zip archive); every install this project supports does.
"""

from __future__ import annotations

import importlib.util
from importlib import resources
from pathlib import Path

from diaforge.errors import UserError


class PackagedFileError(UserError, FileNotFoundError):
    """A bundled file is not where its package says it is."""


def packaged_path(package: str, *parts: str) -> Path:
    """The path of `parts` (a file or folder) inside the installed `package`.

    Raises `PackagedFileError`, one line that names the package and where it was found, when the
    package is missing or does not hold the file (an install that left its data out)."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise PackagedFileError(f"package {package!r} is not installed (pip install -e . installs it)")
    path = Path(str(resources.files(package))).joinpath(*parts)
    if not path.exists():
        where = ", ".join(spec.submodule_search_locations or []) or spec.origin
        raise PackagedFileError(
            f"{'/'.join(parts)} is not in package {package!r} (found at {where}); reinstall the "
            "toolkit (pip install -e . in a checkout) so that its data files are installed"
        )
    return path
