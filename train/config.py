"""Reading a recipe: our fields (`DiaforgeArguments`) beside TRL's `SFTConfig` and `ModelConfig`.

A recipe is one flat YAML mapping whose keys are fields of any of the three dataclasses, exactly
as in TRL and alignment-handbook; every key can be overridden on the command line
(``--learning_rate 2e-4``). `parse_recipe` wraps `trl.TrlParser` so that mistakes give one line
(``recipe.yaml: unknown key 'foo'``) instead of a traceback; it also resolves the recipe's
relative input paths, and `resolved_recipe` writes every final value back as a recipe.

The fields themselves and `RecipeError` are in train/recipe_fields.py (`RecipeError` is imported
from here by the scripts too); the checks a parsed recipe goes through are in
train/recipe_checks.py.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from diaforge.train.recipe_checks import check_ranges
from diaforge.train.recipe_fields import DiaforgeArguments, RecipeError

# Recipes say `gradient_checkpointing`, which every transformers 5.x we support understands;
# 5.20+ calls it a deprecated alias of `activation_checkpointing` each time a recipe is parsed.
warnings.filterwarnings("ignore", message="`gradient_checkpointing", category=FutureWarning)
warnings.filterwarnings("ignore", message="`is_gradient_checkpointing", category=FutureWarning)


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


def read_recipe(path: str | Path) -> dict[str, Any]:
    """The recipe file's top-level mapping, read once and the same way wherever a recipe is read
    (training, the planner, the demo's device check, the benchmarks); a YAML syntax error, a
    non-mapping or an unreadable file is a `RecipeError` that names the file. Keys are not checked
    here (`read_recipe_yaml` checks them against the recipe's dataclasses)."""
    from diaforge.configs import read_yaml_mapping
    from diaforge.errors import InputError

    try:
        return read_yaml_mapping(path, what="recipe file")
    except InputError as exc:
        raise RecipeError(str(exc)) from None


def unknown_key_message(path: str | Path, key: str, keys: set[str]) -> str:
    """`PATH: unknown key 'KEY'`, with the closest known key when one is near (did you mean)."""
    import difflib

    close = difflib.get_close_matches(key, sorted(keys), n=1, cutoff=0.75)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"{path}: unknown key '{key}'{hint}"


def read_recipe_yaml(path: str | Path, classes: Sequence[type] | None = None) -> dict[str, Any]:
    """The recipe file as a mapping (`read_recipe`); unknown keys are `RecipeError`s that name the
    file, the key and the nearest known key."""
    data = read_recipe(path)
    keys = known_keys(classes) | {"env"}
    for key in data:
        if key not in keys:
            raise RecipeError(unknown_key_message(path, key, keys))
    return data


def is_dpo_recipe(path: str | Path) -> bool:
    """Whether a recipe file is the DPO stage's: it has a top-level ``pairs_path`` key (a file
    that cannot be read is not one; training reports what is wrong with it)."""
    try:
        return "pairs_path" in read_recipe(path)
    except RecipeError:
        return False


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
