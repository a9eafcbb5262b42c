"""`make gpu-check` without a GPU: the dry run through make (plan, commands, JSON shape; no model
is built), the wheels it needs, and the same path end to end on a CPU with the tiny shape (fp32)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.bench import gpu_check, gpu_check_runs, gpu_wheels


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    if shutil.which("make") is None:
        pytest.skip("no make")
    work = tmp_path_factory.mktemp("gpu_check")
    out = work / "result.json"
    command = [
        "make",
        "-s",
        "gpu-check",
        "DRY_RUN=1",
        f"GPU_PY={sys.executable}",  # not the Makefile's .venv: no setup step
        f"GPU_CHECK_ARGS=--work {work} --out {out}",
    ]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "DRY RUN ok" in proc.stdout
    return json.loads(out.read_text()), work


def test_the_dry_run_plans_every_family_within_an_h100(dry_run) -> None:
    result, _ = dry_run
    assert result["dry_run"] is True and result["ok"] is True and result["problems"] == []
    assert list(result["families"]) == ["bf16", "8bit", "4bit"]
    for family, plan in result["plan"].items():
        assert plan["fits"] and plan["gpu_memory_gib"] == 79.6, family
        assert 25 < plan["peak_gib"] < 40  # one 4,096-token micro-batch without checkpointing
        assert result["families"][family]["planned_peak_gib"] == plan["peak_gib"]
    setup = result["setup"]
    assert setup["shape"] == "llama-3.2-3b" and setup["parameters_linear"] > 3e9
    assert setup["shared_tokens_per_step"] < setup["naive_tokens_per_step"]
    assert setup["attention"] == {"prefix_shared": "flex_attention", "naive": "sdpa"}


def test_the_dry_run_writes_each_command_and_recipe_and_builds_no_model(dry_run) -> None:
    import yaml

    result, work = dry_run
    setup = result["setup"]
    for family, entry in result["families"].items():
        for mode in gpu_check_runs.MODES:
            command = entry[mode]["command"].split()
            assert command[1:4] == ["-m", "diaforge.bench.gpu_check", "worker"]
            recipe = yaml.safe_load(Path(command[-1]).read_text())
            assert recipe["slicing"] == mode and recipe["packing"] == (mode == "prefix_shared")
            assert recipe["load_in_8bit"] == (family == "8bit") and recipe["load_in_4bit"] == (
                family == "4bit"
            )
            # every step is the whole data set: one row (or sample) per micro-batch
            assert (
                recipe["gradient_accumulation_steps"]
                == setup["rows" if mode == "prefix_shared" else "samples"]
            )
            assert recipe["per_device_train_batch_size"] == 1 and recipe["bf16"] is True
    model = Path(setup["model_dir"])
    assert (model / "tokenizer.json").is_file() and not list(model.glob("*.safetensors"))
    assert not (work / "runs").exists()


def test_the_dry_run_json_has_the_documented_shape_with_null_measurements(dry_run) -> None:
    result, _ = dry_run
    assert gpu_check_runs.shape_problems(result) == []
    for entry in result["families"].values():
        assert entry["parity"]["loss_tolerance"] > 0 and entry["parity"]["max_abs_loss_diff"] is None
        for mode in gpu_check_runs.MODES:
            assert all(entry[mode][k] is None for k in gpu_check_runs.MEASURED)
            assert entry[mode]["tokens_per_step"] > 0
    broken = json.loads(json.dumps(result))
    del broken["families"]["8bit"]["naive"]["mfu"]
    broken["families"]["4bit"]["prefix_shared"]["tokens_per_s"] = 1.0
    problems = gpu_check_runs.shape_problems(broken)
    assert "8bit naive: missing 'mfu'" in problems
    assert "4bit prefix_shared: tokens_per_s must be null in a dry run" in problems
    broken["dry_run"] = False  # a real run must carry its measurements
    assert any("is not measured" in p for p in gpu_check_runs.shape_problems(broken))


def test_the_wheels_fit_beside_the_project_at_the_pinned_versions(dry_run) -> None:
    result, _ = dry_run
    wheels = result["wheels"]
    assert wheels["fits"] and wheels["total_bytes"] <= 64 * 2**20 and wheels["version_problems"] == []
    names = {w["name"] for w in wheels["wheels"]}
    assert {"transformers", "trl", "datasets", "pydantic", "bitsandbytes", "peft"} <= names
    assert gpu_wheels.version_problems() == []


def test_slimming_keeps_the_cpu_and_chosen_cuda_libraries(tmp_path: Path) -> None:
    wheel = tmp_path / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"
    libraries = ["cpu", "cuda126", "cuda130", "cuda132", "rocm64", "xpu2025"]
    record = [f"bitsandbytes/libbitsandbytes_{lib}.so,sha256=x,4" for lib in libraries]
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("bitsandbytes/__init__.py", "")
        for lib in libraries:
            z.writestr(f"bitsandbytes/libbitsandbytes_{lib}.so", b"\0" * 4096)
        z.writestr(
            "bitsandbytes-0.50.2.dist-info/RECORD", "\n".join(["bitsandbytes/__init__.py,,0", *record])
        )
    assert gpu_wheels.slim_wheel(wheel, ["130"]) > 0
    with zipfile.ZipFile(wheel) as z:
        kept = sorted(n.rsplit("_", 1)[-1] for n in z.namelist() if n.endswith(".so"))
        rows = z.read("bitsandbytes-0.50.2.dist-info/RECORD").decode().split()
    assert kept == ["cpu.so", "cuda130.so"]
    assert sorted(r.split(",")[0] for r in rows) == [
        "bitsandbytes/__init__.py",
        "bitsandbytes/libbitsandbytes_cpu.so",
        "bitsandbytes/libbitsandbytes_cuda130.so",
    ]


def test_the_model_shape_is_the_planners_llama_3b() -> None:
    from diaforge.train.recipe_registry import read_registry

    planned = read_registry().shape_of_model("meta-llama/Llama-3.2-3B-Instruct")
    assert gpu_check.model_shape("llama-3.2-3b", 4000) == planned


def test_quantised_families_need_a_gpu(capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert gpu_check.main(["--families", "bf16,4bit"]) == 2
    assert "need a CUDA GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_the_whole_path_runs_on_a_cpu_with_the_tiny_shape(tmp_path: Path) -> None:
    """Model build, both layouts through train/sft.py with the step timer, parity, JSON: fp32 on a
    CPU, where the layouts agree to rounding."""
    out = tmp_path / "result.json"
    command = [sys.executable, "-m", "diaforge.bench.gpu_check", "--shape", "tiny", "--families", "bf16"]
    command += [
        "--dialogues",
        "2",
        "--steps",
        "2",
        "--max-length",
        "2048",
        "--work",
        str(tmp_path),
        "--out",
        str(out),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    entry = result["families"]["bf16"]
    assert result["ok"] and entry["ok"] and entry["precision"] == "fp32"
    assert entry["parity"]["max_abs_loss_diff"] <= 1e-4 and entry["parity"]["adapter_rel_diff"] <= 1e-4
    for mode in gpu_check_runs.MODES:
        assert (
            entry[mode]["steps"] == 2 and entry[mode]["timed_steps"] == 1 and entry[mode]["tokens_per_s"] > 0
        )
        assert len(entry[mode]["losses"]) == 2 and entry[mode]["mfu"] is None  # no peak known for a CPU
    assert entry["prefix_shared"]["tokens_per_step"] < entry["naive"]["tokens_per_step"]
    assert gpu_check_runs.shape_problems(result) == []
