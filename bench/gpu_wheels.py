"""The wheels `make gpu-check` needs on a GPU machine that has torch but not our dependencies, and
whether they fit beside the project in what such a machine is sent (`BUDGET_BYTES`).

    python -m diaforge.bench.gpu_check wheels [--dest .whl] [--cuda 130]     # on a machine with pip's index

The GPU machines lent to this project run Python 3.12 with torch 2.11 (CUDA 13.0), accelerate,
huggingface_hub, tokenizers, safetensors, numpy, pandas, pyarrow and xxhash, but not transformers
at our version (they have 5.17; we need 5.19 or later), TRL, datasets, pydantic, peft at our
version or bitsandbytes, and they cannot reach an index. `WHEELS` lists exactly what is carried,
each at the version of requirements/constraints.txt (bitsandbytes, a GPU extra, is not pinned
there). bitsandbytes ships one CUDA library per CUDA version (43 MB in all): `slim_wheel` keeps the
CPU library and those of `--cuda` only, 3.6 MB for CUDA 13.0. What a GPU run installs them with:

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site make gpu-check GPU_PY=python3        # or: make gpu-check GPU_PY=python3 WHEELS=.whl
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
BUDGET_BYTES = 64 * 2**20  # the working tree plus carried wheels a GPU machine is sent
PYTHON = "3.12"
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_24_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)

# (distribution, version, why it is carried, bytes of the wheel as downloaded or slimmed)
WHEELS: list[tuple[str, str, str, int]] = [
    ("transformers", "5.23.0", "the image has 5.17; the toolkit needs >=5.19", 13_336_114),
    ("trl", "1.16.0", "SFTTrainer (train/sft.py)", 948_205),
    ("peft", "0.21.2", "LoRA, at the tested version", 835_427),
    ("datasets", "5.2.0", "TRL's datasets", 608_276),
    ("dill", "0.4.1", "needed by datasets", 120_019),
    ("multiprocess", "0.70.19", "needed by datasets", 150_281),
    ("fsspec", "2026.9.0", "datasets 5.2 needs <=2026.9.0 (the image's is not known)", 221_738),
    ("pydantic", "2.14.3", "diaforge.schema (the dialogue records)", 494_071),
    ("pydantic_core", "2.50.4", "needed by pydantic (cp312 manylinux wheel)", 2_261_727),
    ("annotated_types", "0.8.0", "needed by pydantic", 13_427),
    ("typing_inspection", "0.4.5", "needed by pydantic", 14_874),
    ("typing_extensions", "4.16.0", "pydantic 2.14 needs >=4.16", 45_571),
    ("bitsandbytes", "0.50.2", "8-bit and 4-bit bases; slimmed to the CUDA 13.0 library", 3_593_119),
]
#: Distributions pip may not find under their own name in a wheel's file name.
WHEEL_PREFIX = {name: name.replace("-", "_") for name, *_ in WHEELS}


def pinned_versions(path: Path = CONSTRAINTS) -> dict[str, str]:
    """`name==version` lines of the constraints file, by normalised name."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;#]+)", line.strip())
        if match:
            out[normalise(match.group(1))] = match.group(2)
    return out


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def version_problems() -> list[str]:
    """Carried versions that differ from requirements/constraints.txt."""
    pinned = pinned_versions()
    return [
        f"{name}: carried {version}, constraints.txt pins {pinned[normalise(name)]}"
        for name, version, *_ in WHEELS
        if normalise(name) in pinned and pinned[normalise(name)] != version
    ]


def project_bytes() -> int:
    """What the project's tracked files take (an uncompressed `git archive`); the size of the
    tracked tree when git is not there."""
    try:
        proc = subprocess.run(
            ["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True, timeout=120
        )
        return len(proc.stdout)
    except (OSError, subprocess.SubprocessError):
        skip = {".git", ".venv", "outputs", ".whl", "__pycache__"}
        return sum(p.stat().st_size for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.parts))


def found_wheel(dest: Path, name: str, version: str) -> Path | None:
    matches = sorted(dest.glob(f"{WHEEL_PREFIX[name]}-{version}-*.whl")) if dest.is_dir() else []
    return matches[0] if matches else None


def budget(dest: Path | None = None) -> dict[str, Any]:
    """Each wheel's bytes (as found in `dest`, else as recorded here), the project's, and whether
    together they stay within `BUDGET_BYTES`."""
    wheels = []
    for name, version, why, recorded in WHEELS:
        path = found_wheel(dest, name, version) if dest else None
        size = path.stat().st_size if path else recorded
        wheels.append({"name": name, "version": version, "why": why, "bytes": size, "found": bool(path)})
    project = project_bytes()
    total = project + sum(w["bytes"] for w in wheels)
    return {
        "wheels": wheels,
        "wheel_bytes": total - project,
        "project_bytes": project,
        "total_bytes": total,
        "budget_bytes": BUDGET_BYTES,
        "fits": total <= BUDGET_BYTES,
        "version_problems": version_problems(),
    }


def format_budget(b: dict[str, Any]) -> str:
    lines = [
        f"  {w['name']}=={w['version']:<10} {w['bytes'] / 2**20:6.2f} MiB  {w['why']}" for w in b["wheels"]
    ]
    lines.append(
        f"wheels {b['wheel_bytes'] / 2**20:.1f} MiB + project {b['project_bytes'] / 2**20:.1f} MiB = "
        f"{b['total_bytes'] / 2**20:.1f} MiB of {b['budget_bytes'] / 2**20:.0f} MiB: "
        + ("fits" if b["fits"] else "does NOT fit")
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Fetching and slimming
# --------------------------------------------------------------------------------------------


def slim_wheel(path: Path, keep_cuda: list[str]) -> int:
    """Rewrite a bitsandbytes wheel without the native libraries of other CUDA versions, ROCm and
    XPU (their RECORD lines go too); the CPU library and `libbitsandbytes_cuda{V}.so` for V in
    `keep_cuda` stay. Returns the bytes removed from the archive."""
    keep = {f"libbitsandbytes_cuda{v}.so" for v in keep_cuda} | {"libbitsandbytes_cpu.so"}
    before = path.stat().st_size
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
        dropped = {
            i.filename
            for i in src.infolist()
            if re.fullmatch(r"libbitsandbytes_\w+\.so", Path(i.filename).name)
            and Path(i.filename).name not in keep
        }
        for info in src.infolist():
            if info.filename in dropped:
                continue
            data = src.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = ("\n".join(x for x in lines if x.split(",", 1)[0] not in dropped) + "\n").encode()
            dst.writestr(info, data)
    tmp.replace(path)
    return before - path.stat().st_size


def download(dest: Path, specs: list[str], python: str = PYTHON) -> None:
    """`pip download` of `specs` (``name==version``) as wheels for the GPU machines' Python and
    platform into `dest`, without their dependencies (`make gpu-curve-pack` uses it too)."""
    dest.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(dest)]
    command += ["--python-version", python, "--implementation", "cp"]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    subprocess.run(command + specs, check=True)


def fetch(dest: Path, keep_cuda: list[str]) -> dict[str, Any]:
    """Download `WHEELS` for the GPU machines' Python and platform into `dest` (pip, without
    dependencies) and slim bitsandbytes; returns `budget(dest)`."""
    download(dest, [f"{name}=={version}" for name, version, *_ in WHEELS])
    bnb = next(v for n, v, *_ in WHEELS if n == "bitsandbytes")
    path = found_wheel(dest, "bitsandbytes", bnb)
    if path is not None:
        slim_wheel(path, keep_cuda)
    return budget(dest)
