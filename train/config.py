"""The recipe: our fields (`DiaforgeArguments`) beside TRL's `SFTConfig` and `ModelConfig`.

A recipe is one flat YAML mapping whose keys are fields of any of the three dataclasses, exactly
as in TRL and alignment-handbook; every key can be overridden on the command line
(``--learning_rate 2e-4``). `parse_recipe` wraps `trl.TrlParser` so that mistakes give one line
(``recipe.yaml: unknown key 'foo'``) instead of a traceback.

Size exception: the module is the recipe's documented fields (their help texts are the recipe
reference, `--help`) and the checks that read them; splitting it would part a field from its check.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.errors import InputError, UserError
from diaforge.format import HISTORY_REASONING, PROMPT_MODES, TARGET_REASONING, TOOL_STYLES, PromptFormat

# Recipes say `gradient_checkpointing`, which every transformers 5.x we support understands;
# 5.20+ calls it a deprecated alias of `activation_checkpointing` each time a recipe is parsed.
warnings.filterwarnings("ignore", message="`gradient_checkpointing", category=FutureWarning)
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing", category=FutureWarning)

# The prompt-format options take their allowed values from diaforge.format (PromptFormat); these
# two decide only how the training samples are built.
OVERFLOW = ("drop", "truncate_history")
SLICING = ("naive", "prefix_shared")
LOSS_POSITIONS = ("all", "trained")  # train/loss_positions.py


class RecipeError(UserError):
    """A recipe or command-line mistake; `str(err)` is one line meant to be printed as is."""


@dataclass
class DiaforgeArguments:
    """Data, turn slicing, run management and W&B fields of a DiaFORGE training recipe.

    The LoRA, model and optimiser settings are TRL's (`ModelConfig`, `SFTConfig`); the paper's
    values (Appendix B) are set in the recipes, not here.
    """

    dataset_path: list[str] = field(
        default_factory=list,
        metadata={
            "help": "Dialogue JSONL file(s) written by `python -m data_gen generate` (one or a list). Required. "
            "Every line is validated; a bad line stops the run naming file, line and field."
        },
    )
    eval_dataset_path: list[str] | None = field(
        default=None,
        metadata={
            "help": "Optional held-out dialogue JSONL file(s), sliced like the training data and used when "
            "`eval_strategy` is not 'no'. Default None: no evaluation during training."
        },
    )
    max_dialogues: int | None = field(
        default=None,
        metadata={
            "help": "Use only the first N dialogues of the training files (quick runs, demos). Default None: all."
        },
    )
    prompt_mode: str = field(
        default=PromptFormat.prompt_mode,
        metadata={
            "help": "'prompt' (default, the paper's format): the candidate tools are listed in the system prompt "
            "and a turn is plain text, '<think>..</think>' then a reply or a JSON call list. 'native': the tools "
            "go to the chat template's `tools=` and calls are `tool_calls`; needs a template that renders tools "
            "(and `reasoning_content`, unless target_reasoning is 'drop').",
            "choices": list(PROMPT_MODES),
        },
    )
    history_reasoning: str = field(
        default=PromptFormat.history_reasoning,
        metadata={
            "help": "Thoughts of earlier assistant turns in the prompt: 'strip' (default) removes them, as at "
            "inference, where the model never sees its own past private reasoning; 'keep' shows them.",
            "choices": list(HISTORY_REASONING),
        },
    )
    target_reasoning: str = field(
        default=PromptFormat.target_reasoning,
        metadata={
            "help": "'keep' (default): the trained turn includes its thought, as in the paper. 'drop': train the "
            "reply or call alone (the paper's 'without thinking traces' ablation).",
            "choices": list(TARGET_REASONING),
        },
    )
    overflow: str = field(
        default="truncate_history",
        metadata={
            "help": "Samples longer than `max_length`: 'truncate_history' (default) removes whole earlier "
            "user/assistant exchanges, oldest first, keeping the system prompt, the last user turn and the "
            "whole target, and drops the sample if it still does not fit; 'drop' drops it. The target is never "
            "cut. Counts are reported.",
            "choices": list(OVERFLOW),
        },
    )
    eot_token: str | None = field(
        default=None,
        metadata={
            "help": "End-of-turn token trained after each target. Default None (auto): whichever of the "
            "tokenizer's eos token, <|im_end|>, <|eot_id|>, <|eom_id|>, <end_of_turn>, <|end|>, </s> comes "
            "first after the target in the rendered conversation."
        },
    )
    tool_style: str = field(
        default=PromptFormat.tool_style,
        metadata={
            "help": "How prompt mode lists the candidate tools: 'json' (default; one JSON spec per line, as "
            "diaforge.format.system_prompt) or 'compact' (one signature line per tool, about a quarter of the "
            "tokens; for small models and CPU budgets). Recorded in prompt_format.json, which evaluation reads.",
            "choices": list(TOOL_STYLES),
        },
    )
    slicing: str = field(
        default="naive",
        metadata={
            "help": "How the turn-sliced samples reach the model. 'naive' (default): one row per sample, each "
            "re-encoding its whole history (tokens grow with the square of the turns). 'prefix_shared': all the "
            "samples of a dialogue in one row that holds their common prefixes once, with an attention mask and "
            "position ids that give every sample exactly its own view (train/prefix_shared.py): same per-sample "
            "loss, fewer tokens. A dialogue that would pass max_length is split into groups of whole samples; "
            "with `packing: true` the rows of several dialogues are packed into max_length rows (our packing, "
            "not TRL's) with no attention across them. per_device_train_batch_size then counts rows, not samples, "
            "and the loss is the mean over the batch's trained tokens, as with naive rows. Needs sdpa or eager "
            "attention (set automatically; flash attention cannot take the mask).",
            "choices": list(SLICING),
        },
    )
    share_listing: bool = field(
        default=False,
        metadata={
            "help": "With slicing: prefix_shared, dialogues over the same candidate listing (same tools, same order; "
            "`diaforge data generate --dialogues-per-listing N` writes them) share one row: the listing once, each "
            "dialogue a branch under it with its own positions and view (train/prefix_shared.py): same per-sample "
            "loss, fewer tokens per dialogue; max_length still splits rows between whole samples. Default False: one "
            "dialogue per row as before, since rows of several dialogues make fewer, larger steps per epoch.",
        },
    )
    loss_positions: str = field(
        default="trained",
        metadata={
            "help": "Where the LM head and the loss run. 'trained' (default): only at the positions whose next "
            "token is trained (the model gets `logits_to_keep`; train/loss_positions.py): TRL's loss, gradients "
            "and metrics up to float rounding, without projecting the prompt tokens onto the vocabulary. 'all': "
            "TRL's own loss over every position. Models whose forward takes no tensor `logits_to_keep` fall back "
            "to 'all' with a warning.",
            "choices": list(LOSS_POSITIONS),
        },
    )
    focal_gamma: float = field(
        default=0.0,
        metadata={
            "help": "Default 0: TRL's plain token-mean loss. Above 0, each trained token's loss is multiplied by "
            "(1 - p)^focal_gamma, p the model's detached probability of it (focal loss). Needs loss_positions: "
            "trained. At 2 the demo model stopped asking first (recipes/smollm2-135m/README.md, row 4).",
        },
    )
    system_prompt_file: str | None = field(
        default=None,
        metadata={
            "help": "Text file replacing the built-in system prompt. In prompt mode '{tools}' in it is replaced "
            "by the candidate tools in `tool_style` (appended under 'Available tools:' when absent). Default None: "
            "the reference prompt of diaforge.format. Its text is recorded in prompt_format.json, so evaluation "
            "uses the same prompt."
        },
    )
    resume: bool = field(
        default=True,
        metadata={
            "help": "Default True: when `output_dir` holds checkpoint-* folders, resume from the last one (unless "
            "`resume_from_checkpoint` names one). False: start from scratch."
        },
    )
    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "Delete existing checkpoint-* folders of `output_dir` before training (implies a fresh "
            "start). Default False: nothing is deleted."
        },
    )
    wandb_project: str | None = field(
        default=None,
        metadata={"help": "W&B project (WANDB_PROJECT). Default None: wandb's own default ('huggingface')."},
    )
    wandb_entity: str | None = field(
        default=None,
        metadata={"help": "W&B entity (team or user). Default None: the logged-in user's default entity."},
    )
    wandb_tags: list[str] | None = field(
        default=None,
        metadata={"help": "W&B run tags, e.g. [diaforge, llama-3.2-3b]. Default None: no tags."},
    )

    def __post_init__(self) -> None:
        # YAML scalars arrive as strings, lists as lists: accept both for the list fields.
        if isinstance(self.dataset_path, str):
            self.dataset_path = [self.dataset_path]
        if isinstance(self.eval_dataset_path, str):
            self.eval_dataset_path = [self.eval_dataset_path]
        if isinstance(self.wandb_tags, str):
            self.wandb_tags = [t.strip() for t in self.wandb_tags.split(",") if t.strip()]
        # argparse does not check `choices` of values that come from the YAML file: check here.
        for name, allowed in (
            ("prompt_mode", PROMPT_MODES),
            ("history_reasoning", HISTORY_REASONING),
            ("target_reasoning", TARGET_REASONING),
            ("overflow", OVERFLOW),
            ("tool_style", TOOL_STYLES),
            ("slicing", SLICING),
            ("loss_positions", LOSS_POSITIONS),
        ):
            value = getattr(self, name)
            if value not in allowed:
                raise RecipeError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if not float(self.focal_gamma) >= 0:
            raise RecipeError(f"focal_gamma must be a number >= 0, got {self.focal_gamma!r}")
        if self.focal_gamma > 0 and self.loss_positions != "trained":
            raise RecipeError("focal_gamma needs loss_positions: trained (the focal factor is applied there)")
        if self.max_dialogues is not None and int(self.max_dialogues) < 1:
            raise RecipeError(f"max_dialogues must be a positive integer, got {self.max_dialogues!r}")

    def prompt_format(self) -> PromptFormat:
        """The recipe's `PromptFormat` with its system prompt's text: that of `system_prompt_file`
        (`InputError` naming the file when it is missing or empty), else the reference prompt as a
        template, which renders the same messages; either way prompt_format.json records the text
        and its hash."""
        from diaforge.format import read_system_prompt_file, reference_prompt_template

        if self.system_prompt_file:
            system = read_system_prompt_file(self.system_prompt_file)
        else:
            system = reference_prompt_template(self.prompt_mode)
        return PromptFormat(
            prompt_mode=self.prompt_mode,
            tool_style=self.tool_style,
            history_reasoning=self.history_reasoning,
            target_reasoning=self.target_reasoning,
            system_prompt=system,
            eot_token=self.eot_token,
        )

    def slicing_config(self) -> dict[str, Any]:
        """The fields that decide what the samples are (part of the data fingerprint)."""
        return {
            "prompt_mode": self.prompt_mode,
            "history_reasoning": self.history_reasoning,
            "target_reasoning": self.target_reasoning,
            "overflow": self.overflow,
            "eot_token": self.eot_token,
            "system_prompt_file": self.system_prompt_file,
            "tool_style": self.tool_style,
            "max_dialogues": self.max_dialogues,
        }


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

# The paper's LoRA recipe (Appendix B) as defaults; recipes state them explicitly as well.
PAPER_DEFAULTS: dict[str, Any] = {
    "use_peft": True,  # LoRA, not full fine-tuning
    "lora_r": 16,
    "lora_alpha": 16,
    "lora_dropout": 0.05,
    "lora_target_modules": "all-linear",  # every linear layer except the output head
    "learning_rate": 1e-4,  # peak
    "lr_scheduler_type": "cosine",
    "optim": "adamw_torch",
    "num_train_epochs": 1.0,
    "per_device_train_batch_size": 1,  # one completion per batch
    "logging_steps": 10,
}


def device_defaults(on_gpu: bool) -> dict[str, Any]:
    """Defaults that depend on the machine: bf16 and gradient checkpointing on a GPU; fp32, no
    checkpointing and `use_cpu` on a CPU. A recipe or the command line may still override them."""
    if on_gpu:
        return {**PAPER_DEFAULTS, "bf16": True, "dtype": "bfloat16", "gradient_checkpointing": True}
    return {
        **PAPER_DEFAULTS,
        "bf16": False,
        "dtype": "float32",
        "gradient_checkpointing": False,
        "use_cpu": True,
    }


def recipe_dataclasses() -> tuple[type, type, type]:
    from trl import ModelConfig, SFTConfig

    return (DiaforgeArguments, SFTConfig, ModelConfig)


def known_keys(classes: Sequence[type] | None = None) -> set[str]:
    return {f.name for cls in classes or recipe_dataclasses() for f in dataclasses.fields(cls) if f.init}


def read_recipe_yaml(path: str | Path, classes: Sequence[type] | None = None) -> dict[str, Any]:
    """The recipe file as a mapping; unknown keys, YAML syntax errors and non-mappings are
    `RecipeError`s that name the file (and the line, for syntax errors)."""
    from diaforge.configs import read_yaml_mapping

    try:
        data = read_yaml_mapping(path, what="recipe file")
    except InputError as exc:
        raise RecipeError(str(exc)) from None
    keys = known_keys(classes) | {"env"}
    for key in data:
        if key not in keys:
            raise RecipeError(f"{path}: unknown key '{key}'")
    return data


def split_recipe_argv(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """`[RECIPE.yaml] [--key value ...]` -> (recipe path or None, overrides). `--config X` is
    accepted too, as in TRL's scripts."""
    args = list(argv)
    recipe = None
    if args and not args[0].startswith("-"):
        recipe = args.pop(0)
    if "--config" in args:
        i = args.index("--config")
        if i + 1 >= len(args):
            raise RecipeError("--config needs a recipe file")
        if recipe is not None:
            raise RecipeError("give the recipe once, either as the first argument or with --config")
        recipe = args[i + 1]
        del args[i : i + 2]
    return recipe, args


def explicit_keys(recipe: dict[str, Any], overrides: Sequence[str]) -> set[str]:
    """Keys set by the recipe or the command line (the rest keep their defaults)."""
    keys = set(recipe)
    for arg in overrides:
        if arg.startswith("--"):
            keys.add(arg[2:].split("=", 1)[0].replace("-", "_"))
    return keys


def _make_parser_class():
    from trl import TrlParser

    class _Parser(TrlParser):
        """TrlParser whose argparse errors (a bad value, a missing one) raise instead of exiting."""

        def error(self, message: str):  # type: ignore[override]
            raise RecipeError(message)

    return _Parser


def parse_recipe(argv: Sequence[str] | None = None, *, device_defaults: dict | None = None, classes=None):
    """Parse ``RECIPE.yaml [--key value ...]`` into `(DiaforgeArguments, SFTConfig, ModelConfig,
    explicit_keys)` (with `classes`, another stage's three dataclasses: train/dpo_config.py).

    `device_defaults` replace the dataclass defaults before the recipe is applied (e.g. bf16 off on
    a CPU machine); the recipe, then the command line, override them. Raises `RecipeError` (one line)
    for an unknown key in the file or on the command line and for invalid values.
    """
    _Parser = _make_parser_class()
    argv = list(sys.argv[1:] if argv is None else argv)
    recipe_path, overrides = split_recipe_argv(argv)
    recipe = read_recipe_yaml(recipe_path, classes) if recipe_path else {}
    known = known_keys(classes)
    for arg in overrides:
        if arg.startswith("--"):
            key = arg[2:].split("=", 1)[0]
            if key.replace("-", "_") not in known and key not in known:
                raise RecipeError(f"unknown option '--{key}' (not a recipe key)")

    parser = _Parser(tuple(classes or recipe_dataclasses()))
    if device_defaults:
        parser.set_defaults(**{k: v for k, v in device_defaults.items() if k not in recipe})
    args = (["--config", recipe_path] if recipe_path else []) + overrides
    where = recipe_path or "command line"
    try:
        diaforge_args, training_args, model_args = parser.parse_args_and_config(args)
    except RecipeError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    except (ValueError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise RecipeError(f"{where}: {first}") from None
    check_ranges(training_args, model_args, where=where)
    if recipe_path:
        resolve_recipe_paths(diaforge_args, training_args, model_args, Path(recipe_path).parent)
    return diaforge_args, training_args, model_args, explicit_keys(recipe, overrides)


#: Recipe keys that name files or folders to read. How a relative one is found
#: (`resolve_recipe_paths`): in the working folder, else beside the recipe. `output_dir` is not
#: among them: outputs go under the working folder, wherever the recipe lives.
INPUT_PATH_KEYS = ("dataset_path", "eval_dataset_path", "system_prompt_file", "chat_template_path")


def resolve_path(value: str, recipe_dir: Path) -> str:
    """The one rule for a relative input path of a recipe: the working folder first; when nothing
    is there, the recipe's own folder; when neither holds it, the value is left as written (and
    its check reports it missing). Absolute paths are taken as they are."""
    path = Path(value).expanduser()
    if path.is_absolute() or path.exists():
        return value
    beside = recipe_dir / path
    return str(beside) if beside.exists() else value


def resolve_recipe_paths(diaforge_args: Any, training_args: Any, model_args: Any, recipe_dir: Path) -> None:
    """Apply `resolve_path` to every input path of a recipe (and to `model_name_or_path` when it
    names a folder beside the recipe), so a recipe runs from any folder."""
    for obj in (diaforge_args, training_args):
        for key in INPUT_PATH_KEYS:
            value = getattr(obj, key, None)
            if isinstance(value, str) and value:
                setattr(obj, key, resolve_path(value, recipe_dir))
            elif isinstance(value, list):
                setattr(obj, key, [resolve_path(v, recipe_dir) if isinstance(v, str) else v for v in value])
    name = model_args.model_name_or_path
    if isinstance(name, str) and name and "://" not in name:
        model_args.model_name_or_path = resolve_path(name, recipe_dir)


#: Recipe keys that must be > 0, and those that must be >= 0 (TRL and transformers accept the
#: wrong ones silently: `num_train_epochs: -3` trains zero steps and saves an untrained adapter).
_POSITIVE = (
    "num_train_epochs",
    "learning_rate",
    "per_device_train_batch_size",
    "per_device_eval_batch_size",
    "gradient_accumulation_steps",
    "lora_r",
    "lora_alpha",
    "max_length",  # None (no limit) is allowed; -5 would slice every turn away after a model is built
    "save_steps",  # 0 would save at every step of transformers' modulo, or never
    "eval_steps",
)
_NON_NEGATIVE = (
    "warmup_ratio",
    "warmup_steps",
    "weight_decay",
    "lora_dropout",
    "max_grad_norm",
    "logging_steps",
)


def check_ranges(training_args: Any, model_args: Any, *, where: str) -> None:
    """Refuse out-of-range and non-finite numbers by key, one line each (`RecipeError`)."""
    import math

    for obj in (training_args, model_args):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name, None)
            if isinstance(value, float) and not math.isfinite(value):
                raise RecipeError(f"{where}: {f.name}: {value} is not a finite number")
    for obj in (training_args, model_args):
        for name in _POSITIVE:
            value = getattr(obj, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                raise RecipeError(f"{where}: {name} must be greater than 0, got {value}")
        for name in _NON_NEGATIVE:
            value = getattr(obj, name, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
                raise RecipeError(f"{where}: {name} must be 0 or more, got {value}")
    max_steps = getattr(training_args, "max_steps", -1)
    if isinstance(max_steps, int) and max_steps == 0 or (isinstance(max_steps, int) and max_steps < -1):
        raise RecipeError(
            f"{where}: max_steps must be -1 (use num_train_epochs) or at least 1, got {max_steps}"
        )
    for name in ("lora_target_modules", "lora_modules_to_save"):
        value = getattr(model_args, name, None)
        if value is not None and not (
            isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))
        ):
            raise RecipeError(
                f"{where}: {name} must be a module name, a list of module names or 'all-linear', "
                f"got {value!r}"
            )
    ratio = getattr(training_args, "warmup_ratio", 0.0)
    if isinstance(ratio, float) and ratio > 1:
        raise RecipeError(f"{where}: warmup_ratio must lie in [0, 1], got {ratio}")


def check_recipe(diaforge_args: Any, training_args: Any, model_args: Any, *, where: str) -> None:
    """The checks that need more than one key or a look at the disk: dataset files that exist, no
    TRL loss masking on top of ours, and an attention that takes prefix-shared rows; `where` (the recipe file) starts the
    one-line `RecipeError`. `train/sft.py` runs them after parsing, `python -m train.launch` before
    any process starts."""
    from diaforge.hygiene import check_output_dir

    if not diaforge_args.dataset_path:
        raise RecipeError(f"{where}: dataset_path is not set (the dialogue JSONL file(s) to train on)")
    for key in ("dataset_path", "eval_dataset_path"):
        for path in getattr(diaforge_args, key) or []:
            found = Path(path).expanduser()
            if found.is_dir():
                raise RecipeError(
                    f"{where}: {key}: {path}: is a folder; name the dialogue JSONL file in it "
                    f"(e.g. {Path(path) / 'dialogues.jsonl'})"
                )
            if not found.exists():
                raise RecipeError(f"{where}: {key}: {path}: file not found")
            if not found.is_file():
                raise RecipeError(
                    f"{where}: {key}: {path}: is not a regular file (a device, pipe or socket); "
                    "name a dialogue JSONL file"
                )
    try:
        diaforge_args.prompt_format()  # reads system_prompt_file: a bad one stops the run here
    except InputError as exc:
        raise RecipeError(f"{where}: system_prompt_file: {exc}") from None
    try:
        if os.environ.get("RANK", "0") == "0":  # one process probes the folder, not every rank
            check_output_dir(training_args.output_dir, field="output_dir")
    except InputError as exc:
        raise RecipeError(f"{where}: {exc}") from None
    _check_not_an_adapter(model_args.model_name_or_path, where=where)
    if training_args.assistant_only_loss:
        raise RecipeError(f"{where}: assistant_only_loss: turn slicing masks the loss itself; remove the key")
    if diaforge_args.share_listing and diaforge_args.slicing != "prefix_shared":
        raise RecipeError(
            f"{where}: share_listing needs slicing: prefix_shared (a naive row holds one sample)"
        )
    attn = model_args.attn_implementation
    if diaforge_args.slicing == "prefix_shared" and attn and attn not in ("sdpa", "eager", "flex_attention"):
        # Its rows carry a 4D attention mask: SDPA (or eager; flex gets a BlockMask) takes it,
        # flash attention cannot.
        raise RecipeError(
            f"{where}: slicing: prefix_shared needs attn_implementation sdpa, eager or flex_attention, "
            f"got {attn!r}"
        )


def _check_not_an_adapter(name: str | None, *, where: str) -> None:
    """A LoRA adapter folder given as the model to train: say which base it belongs to."""
    import json

    folder = Path(str(name or "")).expanduser()
    if not name or not folder.is_dir() or (folder / "config.json").exists():
        return
    adapter = folder / "adapter_config.json"
    if not adapter.is_file():
        return
    try:
        base = json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError, AttributeError):
        base = None
    to_base = f"set model_name_or_path to its base, {base}," if base else "set model_name_or_path to its base"
    raise RecipeError(
        f"{where}: model_name_or_path: {name} is a LoRA adapter, not a model; {to_base} or merge it "
        f"first (python -m train.merge --adapter {name} --output MERGED) and train on MERGED"
    )


def resolved_recipe(diaforge_args: Any, training_args: Any, model_args: Any) -> dict[str, Any]:
    """Every field of the three dataclasses with its final value: a flat mapping that parses back
    as a recipe (`recipe_resolved.yaml`)."""
    out: dict[str, Any] = {}
    training = training_args.to_dict()
    # to_dict() masks every *_token field ("<PAD_TOKEN>"); keep the real pad/eos tokens, which are
    # settings, and leave the hub token, a secret, out of the file.
    for key in list(training):
        if key.endswith("_token"):
            if "hub" in key:
                del training[key]
            else:
                training[key] = getattr(training_args, key)
    for obj, values in (
        (diaforge_args, dataclasses.asdict(diaforge_args)),
        (model_args, dataclasses.asdict(model_args)),
        (training_args, training),
    ):
        init_fields = {f.name for f in dataclasses.fields(obj) if f.init}
        for key, value in values.items():
            if key in init_fields and key not in out:
                out[key] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    """YAML-safe form of a config value (enums to their value, tuples to lists)."""
    import enum

    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
