"""Where the demo and its curve train and evaluate (`--device`): the CPU, the default, or one CUDA GPU.

On a GPU the training command takes the bundled `accelerate_configs/single_gpu.yaml` (one process,
bf16 autocast; `--gpu_ids N` for `cuda:N`) instead of `cpu.yaml`, every model's `eval run` gets
`--device`, and the recipe must be one made for a GPU: the demo's own says `use_cpu: true`, which
would train on the CPU behind the GPU's back. `recipes/smollm2-135m/curve-gpu.yaml`
(`gpu_curve_recipe`) is the demo's recipe with GPU precision. A GPU that torch does not see is
refused before the first stage (`check_device_present`), not after an hour of data generation.
"""

from __future__ import annotations

import re
from pathlib import Path

from diaforge.errors import InputError
from diaforge.packaged import packaged_path

DEVICE_PATTERN = re.compile(r"cpu|cuda(:\d+)?")
"""The devices the demo trains and evaluates on: the CPU, or one CUDA GPU (`cuda`, `cuda:N`)."""


def gpu_accelerate_config() -> Path:
    """The bundled accelerate config of a GPU device (one process on one GPU, bf16 autocast)."""
    return packaged_path("diaforge.accelerate_configs", "single_gpu.yaml")


def gpu_curve_recipe() -> Path:
    """The bundled recipe of the curve on a GPU (`recipes/smollm2-135m/curve-gpu.yaml`): the demo's
    data, slicing and optimisation with GPU precision."""
    return packaged_path("diaforge.recipes", "smollm2-135m", "curve-gpu.yaml")


def gpu_index(device: str) -> str | None:
    """The N of `cuda:N` (None for `cuda` and `cpu`)."""
    return device.partition(":")[2] or None


def recipe_uses_cpu(recipe: str | Path) -> bool:
    """Whether a recipe file says `use_cpu: true` (one that cannot be read says nothing here:
    training reports what is wrong with it)."""
    from diaforge.train.config import read_recipe
    from diaforge.train.recipe_fields import RecipeError

    try:
        return read_recipe(recipe).get("use_cpu") is True
    except RecipeError:
        return False


def validate_device(device: object, recipe: str | Path) -> None:
    """`device` is cpu, cuda or cuda:N, and a GPU device comes with a recipe that does not say
    `use_cpu: true`; otherwise one line (`InputError`) naming `--device`."""
    if not isinstance(device, str) or not DEVICE_PATTERN.fullmatch(device):
        raise InputError(f"--device must be cpu, cuda or cuda:N, got {device!r}")
    if device != "cpu" and recipe_uses_cpu(recipe):
        raise InputError(
            f"--device {device}: the recipe says use_cpu: true; give a GPU recipe, "
            f"e.g. --recipe {gpu_curve_recipe()}",
            path=recipe,
        )


def check_device_present(device: str) -> None:
    """A GPU device that torch does not see (or a `cuda:N` past its count) is refused in one line,
    before any stage runs: `eval run`'s own check (`diaforge.eval.model_spec.check_device`), which would
    otherwise first fire after generation and training."""
    if device == "cpu":
        return
    from diaforge.eval.eval_config import EvalConfig
    from diaforge.eval.model_spec import check_device

    check_device(EvalConfig(device=device))
