"""What the model-loading commands of ``python -m diaforge.eval`` share: the options that name the model
under test and its prompt format (`add_model_args`, declared once for every such command; what
they give is turned into a model by `diaforge.eval.model_spec`), the W&B options, the run folder, and the
help formatter that shows every option's default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, positive_int
from diaforge.eval.model_spec import format_line, model_spec, slug
from diaforge.eval.models import MODEL_BACKENDS
from diaforge.eval.policies import POLICIES
from diaforge.format import HISTORY_REASONING, PROMPT_MODES, TARGET_REASONING, TOOL_STYLES
from diaforge.llm.decoding import decoding_keys

if TYPE_CHECKING:
    from diaforge.eval.eval_config import EvalConfig
    from diaforge.eval.models import FormatChoice, ModelUnderTest

T = TypeVar("T")

__all__ = [
    "EvalArgumentParser",
    "add_format_args",
    "add_model_args",
    "add_wandb_args",
    "load_model",
    "log_peer_run",
    "max_new_tokens_arg",
    "model_options",
    "run_folder",
    "wandb_config",
    "with_model",
]


class EvalArgumentParser(OneLineArgumentParser):
    """`OneLineArgumentParser` (one-line errors, exit 2) whose help shows the defaults
    (`DefaultsHelpFormatter`) and which takes no abbreviated flag (``--mode`` would silently be
    ``--model`` of bfcl, or ``--modes``); its subparsers are of the same class."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def add_model_args(
    p: argparse.ArgumentParser,
    *,
    required: bool = False,
    policies: bool = False,
    max_new_tokens: int | str = 384,
    what: str = "",
) -> None:
    """The options that name the model under test and say how to query it: --model, --backend,
    --base-url, --batch-size, --max-new-tokens, --device, --label, --quiet and the prompt-format
    options (`add_format_args`), for every command that loads a model (run, bfcl, next-action,
    dicebench, turn-level). `policies`: the reference policies of `diaforge.eval.policies` are backends
    too (no --model then); `max_new_tokens`: the default budget, a number or ``auto`` (`eval run`,
    `max_new_tokens_arg`); `what` ends the --model help."""
    backends = (*MODEL_BACKENDS, *POLICIES) if policies else MODEL_BACKENDS
    model_help = "model/adapter/merged folder (hf, vllm) or served model name (openai)"
    p.add_argument(
        "--model",
        required=required,
        help=model_help + ("; not needed for the reference policies" if policies else "") + what,
    )
    p.add_argument(
        "--backend",
        default="hf",
        choices=backends,
        help="hf: local transformers; openai: an OpenAI-compatible server; vllm: local vLLM"
        + ("; or a reference policy with no model: reference (the judge's ceiling), name-overlap or "
           "random (floors)" if policies else ""),
    )  # fmt: skip
    p.add_argument(
        "--base-url",
        help="OpenAI-compatible server for --backend openai; vllm-rules+http://HOST:PORT/v1: a vLLM "
        "server with the toolkit's logits processor, sent each request's decoding aids",
    )
    p.add_argument("--batch-size", type=positive_int, default=8, help="prompts (dialogues) per model call")
    if max_new_tokens == "auto":
        p.add_argument(
            "--max-new-tokens",
            type=max_new_tokens_arg,
            default="auto",
            help="reply length cap: a number, or auto: the benchmark's longest reference assistant turn "
            "in the model's tokenizer, plus 25%% (at least 32)",
        )
    else:
        p.add_argument(
            "--max-new-tokens", type=positive_int, default=max_new_tokens, help="reply length cap in tokens"
        )
    p.add_argument("--device", default="cpu", help="torch device of an hf model (cpu, cuda, cuda:1, ...)")
    p.add_argument("--label", help="name of the model in reports (default: --model, or the policy's name)")
    p.add_argument("--quiet", action="store_true", help="no progress bars or loading messages")
    add_format_args(p)


def max_new_tokens_arg(value: str) -> int | str:
    """``--max-new-tokens``: ``auto`` or a positive whole number."""
    if value.strip().lower() == "auto":
        return "auto"
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def add_format_args(p: argparse.ArgumentParser) -> None:
    """The prompt-format options: unset by default, so the model's prompt_format.json decides."""
    g = p.add_argument_group(
        "prompt format",
        "default: the model folder's prompt_format.json (written by training), else the defaults",
    )
    g.add_argument(
        "--prompt-mode",
        choices=PROMPT_MODES,
        help="prompt (tools in the system prompt) or native (default prompt)",
    )
    g.add_argument("--tool-style", choices=TOOL_STYLES, help="tool listing in prompt mode (default json)")
    g.add_argument("--history-reasoning", choices=HISTORY_REASONING, help="earlier thoughts (default strip)")
    g.add_argument(
        "--target-reasoning",
        choices=TARGET_REASONING,
        help="whether the model writes thoughts (default keep); sizes the auto token budget",
    )
    g.add_argument(
        "--system-prompt-file",
        help="custom system prompt; '{tools}' is filled with the candidates (default: the built-in one)",
    )
    g.add_argument(
        "--prompt-format",
        help="a prompt_format.json (or a model folder holding one) to use instead of the model's own, "
        "e.g. to prompt a base model in its tuned model's format (default: the model's own)",
    )


def add_wandb_args(p: argparse.ArgumentParser) -> None:
    """The W&B options of every command that writes a run folder: no logging without --wandb-project."""
    g = p.add_argument_group("Weights & Biases", "offline into the run folder when there is no API key")
    g.add_argument(
        "--wandb-project",
        help="log the run's settings, metrics and files to this W&B project (default: no logging)",
    )
    g.add_argument("--wandb-entity", help="W&B team or user (default: the key's default entity)")
    g.add_argument("--wandb-run-name", help="W&B run name (default: the model label)")
    g.add_argument("--wandb-tags", nargs="*", default=[], help="tags of the W&B run (default: none)")


def wandb_config(args: argparse.Namespace) -> dict | None:
    """`write_run`'s `wandb_cfg` from the command line: None without --wandb-project."""
    if not getattr(args, "wandb_project", None):
        return None
    return {
        "project": args.wandb_project,
        "entity": args.wandb_entity,
        "run_name": args.wandb_run_name,
        "tags": args.wandb_tags,
    }


#: The `EvalConfig` keys that name the model under test and say how to query it (`add_model_args`),
#: and the decoding rules (`diaforge.llm.decoding.DecodingConfig`'s fields, flat as their flags).
MODEL_KEYS = (
    "model",
    "backend",
    "base_url",
    "batch_size",
    "max_new_tokens",
    "device",
    "seed",
    *decoding_keys(),
    "prompt_mode",
    "tool_style",
    "history_reasoning",
    "target_reasoning",
    "system_prompt_file",
    "prompt_format",
)


def model_options(args: argparse.Namespace) -> EvalConfig:
    """The model options of a command line as an `EvalConfig` (what `diaforge.eval.model_spec` takes): the
    `MODEL_KEYS` given, every other key at its default."""
    from diaforge.eval.eval_config import EvalConfig

    return EvalConfig(**{k: getattr(args, k) for k in MODEL_KEYS if getattr(args, k, None) is not None})


def load_model(args: argparse.Namespace) -> tuple[ModelUnderTest, FormatChoice]:
    from diaforge.eval.models import ModelUnderTest, offline_env

    offline_env()
    cfg, choice = model_spec(model_options(args))
    if cfg.backend in ("hf", "vllm") and not args.quiet:
        print(f"loading {args.model} ({args.backend}; {format_line(choice)}) ...", file=sys.stderr)
    model = ModelUnderTest(cfg)
    if args.label:
        model.label = args.label
    return model, choice


def run_folder(args: argparse.Namespace, kind: str, prompt_mode: str) -> Path:
    return Path(args.out) if args.out else Path("outputs") / kind / slug(args.model, prompt_mode)


def log_peer_run(args: argparse.Namespace, out: Path, metrics: dict, kind: str) -> None:
    """The run folder of a peer command to W&B (with --wandb-project): settings, metrics, files."""
    cfg = wandb_config(args)
    if cfg is None:
        return
    from diaforge.eval.report import log_folder_to_wandb

    settings = {
        k: v for k, v in vars(args).items() if k not in ("func", "quiet") and not k.startswith("wandb_")
    }
    log_folder_to_wandb(
        out,
        metrics,
        job_type=kind,
        settings=settings,
        **{k: v for k, v in cfg.items() if v is not None},
        run_name=cfg["run_name"] or f"{kind}: {args.label or args.model}",
    )


async def with_model(
    args: argparse.Namespace, fn: Callable[[ModelUnderTest], Awaitable[T]]
) -> tuple[T, FormatChoice]:
    """(result of `fn(model)`, the model's FormatChoice)."""
    model, choice = load_model(args)
    try:
        await model.check()
        return await fn(model), choice
    finally:
        await model.aclose()
