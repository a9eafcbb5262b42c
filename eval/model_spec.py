"""From the options that name a model to the model under test: `model_spec` turns a command
line of `eval.cli_options.add_model_args`, or an `eval.EvalConfig` (the same attribute names), into
a validated `eval.models.ModelSpec` and the prompt format it is run with; `check_device` refuses a
device torch does not see; `slug` names the default run folder. No argparse here: the library
(`eval.evaluate`) and the command lines both call it.

The prompt-format options are unset by default, so the model folder's ``prompt_format.json``
decides (`eval.models.choose_prompt_format`); each option given over it that contradicts the file
prints a one-line warning.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diaforge.errors import InputError
from eval.policies import POLICIES

if TYPE_CHECKING:
    from eval.eval_config import EvalConfig
    from eval.models import FormatChoice, ModelSpec

    #: What names the model under test: a parsed command line or an `eval.EvalConfig` (the same
    #: attribute names).
    ModelOptions = argparse.Namespace | EvalConfig

__all__ = ["check_device", "format_line", "format_options", "model_spec", "slug"]


def slug(model: str, prompt_mode: str) -> str:
    """The default run-folder name of a model: its folder name and prompt mode, or a policy's name."""
    if model in POLICIES:
        return model
    name = Path(model.rstrip("/")).name or "model"
    return f"{name}-{prompt_mode}"


def format_options(opts: ModelOptions) -> dict:
    """The prompt-format options given (None: not given, the model's prompt_format.json decides)."""
    from diaforge.format import read_system_prompt_file

    return {
        "prompt_mode": opts.prompt_mode,
        "tool_style": opts.tool_style,
        "history_reasoning": opts.history_reasoning,
        "target_reasoning": opts.target_reasoning,
        "system_prompt": read_system_prompt_file(opts.system_prompt_file)
        if opts.system_prompt_file
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


def model_spec(opts: ModelOptions) -> tuple[ModelSpec, FormatChoice]:
    """The model under test as `opts` describes it (a command line of `add_model_args`, or an
    `eval.EvalConfig`), validated, and its prompt format (the model folder's prompt_format.json,
    the options over it; a warning on stderr for each option that contradicts the file). A local
    checkpoint path is checked here, before anything is loaded. A reference policy needs no model
    (its name is the label); every other backend does."""
    from eval.models import ModelSpec, choose_prompt_format, describe_checkpoint

    model = opts.model
    if not model:
        if opts.backend not in POLICIES:
            raise InputError(
                f"--backend {opts.backend} needs --model (a model folder or a served model name)"
            )
        model = opts.backend
    if opts.backend in ("hf", "vllm"):
        describe_checkpoint(model)
    choice = choose_prompt_format(
        model if opts.backend not in POLICIES else None, format_options(opts), opts.prompt_format
    )
    for warning in choice.warnings():
        print(warning, file=sys.stderr)
    budget = opts.max_new_tokens
    cfg = ModelSpec(
        model=model,
        backend=opts.backend,
        prompt_format=choice.prompt_format,
        base_url=opts.base_url,
        max_new_tokens=budget if isinstance(budget, int) else ModelSpec.max_new_tokens,
        batch_size=opts.batch_size,
        device=opts.device,
        seed=getattr(opts, "seed", 0),
        loop_stop=getattr(opts, "loop_stop", True),
        constrain_calls=getattr(opts, "constrain_calls", False) and opts.backend == "hf",
    )
    cfg.validate()
    return cfg, choice


def check_device(opts: ModelOptions) -> None:
    """`--device cuda` (or `cuda:N`, `mps`) where torch sees no such device: refused before a
    model is loaded (torch would fail with a traceback once the weights are in memory)."""
    device = str(getattr(opts, "device", None) or "cpu").strip()
    if device == "cpu" or getattr(opts, "backend", "hf") not in ("hf", "vllm"):
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
