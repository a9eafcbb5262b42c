"""From the options that name a model to the model under test: `model_spec` turns an
`diaforge.eval.EvalConfig` into a validated `diaforge.eval.models.ModelSpec` and the prompt format it is run with;
`check_device` refuses a device torch does not see; `slug` names the default run folder. No
argparse here: the library (`diaforge.eval.evaluate`) calls it with its config, the command lines with the
config their model options make (`diaforge.eval.cli_options.model_options`).

The prompt-format options are unset by default, so the model folder's ``prompt_format.json``
decides (`diaforge.eval.models.choose_prompt_format`); each option given over it that contradicts the file
prints a one-line warning.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diaforge.errors import InputError
from diaforge.eval.policies import POLICIES

if TYPE_CHECKING:
    from diaforge.eval.eval_config import EvalConfig
    from diaforge.eval.models import FormatChoice, ModelSpec

__all__ = ["check_device", "format_line", "format_options", "model_spec", "slug"]


def slug(model: str, prompt_mode: str) -> str:
    """The default run-folder name of a model: its folder name and prompt mode, or a policy's name."""
    if model in POLICIES:
        return model
    name = Path(model.rstrip("/")).name or "model"
    return f"{name}-{prompt_mode}"


def format_options(config: EvalConfig) -> dict:
    """The prompt-format options given (None: not given, the model's prompt_format.json decides)."""
    from diaforge.format import read_system_prompt_file

    return {
        "prompt_mode": config.prompt_mode,
        "tool_style": config.tool_style,
        "history_reasoning": config.history_reasoning,
        "target_reasoning": config.target_reasoning,
        "system_prompt": read_system_prompt_file(config.system_prompt_file)
        if config.system_prompt_file
        else None,
    }


def format_line(choice: FormatChoice) -> str:
    where = {
        "prompt_format.json": f"from {choice.file}",
        "--prompt-format": f"from {choice.file}",
        "defaults": "defaults",
        "options": "from the options",
    }
    return f"{choice.prompt_format.describe()} ({where[choice.source]})"


def model_spec(config: EvalConfig) -> tuple[ModelSpec, FormatChoice]:
    """The model under test as `config` describes it, validated, and its prompt format (the
    model folder's prompt_format.json, the options over it; a warning on stderr for each option
    that contradicts the file). A local checkpoint path is checked here, before anything is
    loaded. A reference policy needs no model (its name is the label); every other backend does."""
    from diaforge.eval.models import ModelSpec, choose_prompt_format, decoding_executor, describe_checkpoint

    # before any file is read; a served model's aids once its server says what it applies
    config.decoding.check(decoding_executor(config.backend), policy=config.backend in POLICIES)
    model = config.model
    if not model:
        if config.backend not in POLICIES:
            raise InputError(
                f"--backend {config.backend} needs --model (a model folder or a served model name)"
            )
        model = config.backend
    if config.backend in ("hf", "vllm"):
        describe_checkpoint(model)
    choice = choose_prompt_format(
        model if config.backend not in POLICIES else None, format_options(config), config.prompt_format
    )
    for warning in choice.warnings():
        print(warning, file=sys.stderr)
    budget = config.max_new_tokens
    cfg = ModelSpec(
        model=model,
        backend=config.backend,
        prompt_format=choice.prompt_format,
        base_url=config.base_url,
        max_new_tokens=budget if isinstance(budget, int) else ModelSpec.max_new_tokens,
        batch_size=config.batch_size,
        device=config.device,
        cache_gib=config.cache_gib,
        seed=config.seed,
        decoding=config.decoding,
    )
    cfg.validate()
    return cfg, choice


def check_device(config: EvalConfig) -> None:
    """`--device cuda` (or `cuda:N`, `mps`) where torch sees no such device: refused before a
    model is loaded (torch would fail with a traceback once the weights are in memory)."""
    device = config.device.strip()
    if device == "cpu" or config.backend not in ("hf", "vllm"):
        return
    import torch

    kind, _, index = device.partition(":")
    if kind == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise InputError(
                f"--device {device}: torch sees no CUDA GPU on this machine "
                f"(torch {torch.__version__}); use --device cpu"
            )
        if index and (not index.isdigit() or int(index) >= count):
            raise InputError(f"--device {device}: torch sees {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    elif kind == "mps":
        if not torch.backends.mps.is_available():
            raise InputError(f"--device {device}: MPS is not available here; use --device cpu")
    else:
        raise InputError(f"--device {device!r}: unknown device; use cpu, cuda, cuda:N or mps")
