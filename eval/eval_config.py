"""The configuration of one evaluation run: `EvalConfig`, whose fields are the keys of
``python -m diaforge.eval run --config FILE`` (one YAML mapping), the flags of ``eval run`` (a flag
given on the command line overrides the file's key) and the arguments of `diaforge.eval.evaluate`.
The decoding rules are one nested config, `decoding` (`diaforge.llm.decoding.DecodingConfig`): a
``decoding:`` mapping in YAML, flat flags made from its fields on the command line
(``--constrain-calls on``).

A YAML config holds any subset of the fields; the rest keep their defaults. Relative paths are
read from the folder the command runs in, as the flags' are. Types are strict (``limit: "5"``,
``seed: 1.5`` and ``quiet: 1`` are refused), and an unknown key is refused with the nearest known
one suggested. Every refusal is one `InputError` line naming the file and the key, raised before
anything slow is loaded; ``python -m diaforge.eval`` prints it and exits with code 2. An example:
``eval/configs/heldout.yaml``.

From Python::

    from diaforge.eval import EvalConfig, evaluate

    result = evaluate(EvalConfig(model="outputs/models/smollm2-135m-diaforge", limit=20))
    result.modes["dynamic"]["Acc"], result.run_dir
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

from diaforge.configs import Keys, check_choice, check_output_path, config_error, read_yaml_mapping
from diaforge.eval.models import BACKENDS
from diaforge.eval.transcripts import MODES
from diaforge.format import HISTORY_REASONING, PROMPT_MODES, TARGET_REASONING, TOOL_STYLES
from diaforge.llm.decoding import DecodingConfig, decoding_class, decoding_keys, fold_decoding

__all__ = [
    "CHOICES",
    "EXAMPLE_CONFIG",
    "MODES",
    "DecodingConfig",
    "EvalConfig",
    "config_defaults",
    "flag_keys",
    "load_eval_config",
    "parse_modes",
]

#: The example config that ships with the package (``python -m diaforge.eval run --config`` it).
EXAMPLE_CONFIG = Path(__file__).resolve().parent / "configs" / "heldout.yaml"

PositiveInt = Annotated[int, Field(ge=1)]
_PATH_FIELDS = ("model", "bench", "no_tool_bench", "out", "system_prompt_file", "prompt_format")
#: The fields that take one of a few values, and those values (flags and validation share them).
CHOICES = {
    "backend": BACKENDS,
    "prompt_mode": PROMPT_MODES,
    "tool_style": TOOL_STYLES,
    "history_reasoning": HISTORY_REASONING,
    "target_reasoning": TARGET_REASONING,
}


_BENCH_IN_CHECKOUT = "eval/benchmarks/diabench_heldout_v1.jsonl"
# The held-out benchmark ships inside the package (package data): in the checkout the default is
# its path relative to the root, as the README prints it; from any other folder, the installed file.
DEFAULT_BENCH = (
    _BENCH_IN_CHECKOUT
    if Path(_BENCH_IN_CHECKOUT).is_file()
    else str(Path(__file__).resolve().parent / "benchmarks" / "diabench_heldout_v1.jsonl")
)


def parse_modes(value: str | list[str] | tuple[str, ...]) -> list[str]:
    """``static``, ``dynamic`` or both (a list, comma-separated, or the word ``both``); ValueError
    otherwise."""
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [
        m for item in items for m in (MODES if isinstance(item, str) and item.strip() == "both" else [item])
    ]
    modes = [m.strip() for m in items if isinstance(m, str) and m.strip()]
    bad = [m for m in items if not isinstance(m, str) or m.strip() not in (*MODES, "")]
    if bad or not modes:
        raise ValueError(f"unknown mode {bad[0] if bad else '(none)'!r}; use static, dynamic or both")
    return modes


@dataclass(config=ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))
class EvalConfig:
    """Everything one evaluation run depends on (``eval run``'s flags, as YAML keys)."""

    model: str | None = None
    """The model under test: a local folder (base model, LoRA adapter or merged model) for `hf` and
    `vllm`, a served model name for `openai`. Unset for a reference policy, whose name is then the
    model's name. Default: unset."""
    backend: str = "hf"
    """`hf` (local transformers), `openai` (an OpenAI-compatible server), `vllm`, or a reference
    policy with no model (`diaforge.eval.policies`): `reference` (the judge's ceiling), `name-overlap` or
    `random` (floors). Default `hf`."""
    base_url: str | None = None
    """The OpenAI-compatible server of `backend: openai`; ``vllm-rules+http://host:8000/v1`` says it is
    a vLLM server that applies the decoding rules (its logits processor, `diaforge.llm.vllm_rules`),
    so each request sends them. Default: unset (the OpenAI API)."""
    bench: str = DEFAULT_BENCH
    """The benchmark JSONL. Default: the held-out benchmark that ships with the package."""
    modes: list[str] = dataclasses.field(default_factory=lambda: list(MODES))
    """Which evaluations run: `static`, `dynamic` or both (a list, or comma-separated). Default both."""
    user_proxy: str = "scripted"
    """The simulated user of dynamic mode: `scripted` (offline, the benchmark's own wording bank) or
    `openai:MODEL` (any OpenAI-compatible server, at `user_base_url`). Default `scripted`."""
    user_base_url: str | None = None
    """The server of an `openai:MODEL` user proxy. Default: unset (the OpenAI API)."""
    judge: str | None = None
    """The ConvRel rubric judge, a model name on an OpenAI-compatible server. Default: unset (ConvRel
    is not computed, never faked)."""
    judge_base_url: str | None = None
    """The server of the `judge` model. Default: unset (the OpenAI API)."""
    t_max: PositiveInt = 10
    """Dynamic mode: the most user turns per dialogue. Default 10."""
    repeats: PositiveInt = 1
    """Dynamic mode: play each benchmark dialogue this many times, the user-proxy's wording drawn
    from its own seed in each repeat (repeat 0 is the run without repeats), and report pass^1 ...
    pass^k over them (`diaforge.eval.passk`); every other metric stays on repeat 0. Static mode (it has no
    user-proxy) and the no-tool split are played once. Default 1."""
    n_samples: PositiveInt = 3
    """User-proxy candidates per turn (the paper's n). Default 3."""
    n_voters: PositiveInt = 3
    """Voters per user turn (the paper's m). Default 3."""
    limit: PositiveInt | None = None
    """Evaluate a seeded sample of this many dialogues. Default: unset, all of them."""
    no_tool_bench: str = "auto"
    """The no-tool split (retrieval misses), evaluated after `bench` and reported apart: `auto`
    (``<bench>_no_tool.jsonl`` beside `bench`, when it exists), `none`, or a file. Default `auto`."""
    no_tool_limit: PositiveInt | None = None
    """A seeded sample of this many no-tool dialogues. Default: unset, all of the split."""
    seed: int = 0
    """Seed of the samples, the user proxy and the reference policies. Default 0."""
    batch_size: PositiveInt = 16
    """Replies the hf backend decodes at once; a reply that ends gives its place to the next waiting
    dialogue (continuous batching). Default 16 (1.56x faster than batches of 8 run to their longest
    reply, on the CPU, for the demo's model; `make bench`, part eval_batching)."""
    max_new_tokens: int | str = "auto"
    """Reply length cap in tokens, or `auto`: the benchmark's longest reference assistant turn in the
    model's tokenizer plus 25 % (at least 32; `diaforge.eval.budget.auto_max_new_tokens`). Default `auto`."""
    device: str = "cpu"
    """Torch device of an `hf` model (`cpu`, `cuda`, `cuda:1`, `mps`). Default `cpu`."""
    cache_gib: Annotated[float, Field(gt=0)] | None = None
    """`hf`: memory the prefix cache keeps between turns, in GiB (the least recently used entry is
    dropped beyond it and recomputed if asked again, which changes a reply only by floating-point
    summation order). Default: unset, 3 GiB
    (`diaforge.llm.prefix_cache.DEFAULT_MAX_CACHED_BYTES`); a larger one on a GPU with room to spare."""
    decoding: DecodingConfig = dataclasses.field(default_factory=DecodingConfig)
    """The decoding rules (`diaforge.llm.decoding.DecodingConfig`: `loop_stop`, `constrain_calls`,
    `ground_values`, `copy_thoughts`), a mapping in YAML. Each is also a flag of ``eval run``
    (``--constrain-calls on``) and may be given as a top-level key, the flag's spelling, which
    overrides the mapping's. Default: every rule at its default (the loop stop alone)."""
    prompt_mode: str | None = None
    """`prompt` or `native`. This and the four format keys below default to unset: the model
    folder's ``prompt_format.json`` decides (a warning for each key that contradicts it)."""
    tool_style: str | None = None
    """How prompt mode lists the tools: `json` or `compact`. Default: unset (see `prompt_mode`)."""
    history_reasoning: str | None = None
    """Earlier thoughts in the prompt: `strip` or `keep`. Default: unset (see `prompt_mode`)."""
    target_reasoning: str | None = None
    """Whether the model writes thoughts (`keep` or `drop`); sizes the auto budget. Default: unset."""
    system_prompt_file: str | None = None
    """A custom system prompt; ``{tools}`` in it is filled with the candidates. Default: unset."""
    prompt_format: str | None = None
    """A ``prompt_format.json`` (or a model folder holding one) to use instead of the model's own,
    e.g. a base model prompted in its tuned model's format. Default: unset."""
    out: str | None = None
    """The run folder. Default: unset, ``outputs/eval/<model>-<prompt mode>`` (or the policy's name)."""
    label: str | None = None
    """The model's name in reports. Default: unset, `model` (or the policy's name)."""
    quiet: bool = False
    """No progress bars or loading messages. Default false."""
    wandb_project: str | None = None
    """Log the run's settings, metrics and files to this W&B project (offline into the run folder
    without an API key). Default: unset, no logging."""
    wandb_entity: str | None = None
    """W&B team or user. Default: unset, the key's default entity."""
    wandb_run_name: str | None = None
    """W&B run name. Default: unset, the model's label."""
    wandb_tags: list[str] = dataclasses.field(default_factory=list)
    """Tags of the W&B run. Default: none."""

    @model_validator(mode="before")
    @classmethod
    def _flat_decoding(cls, values: Any) -> Any:
        """The decoding keys given at the top (``EvalConfig(constrain_calls=True)``, a flag, an
        older YAML file) moved into `decoding`, over it (`diaforge.llm.decoding.fold_decoding`)."""
        keys = decoding_keys(decoding_class(cls))
        if isinstance(values, ArgsKwargs) and values.kwargs:
            return ArgsKwargs(values.args, fold_decoding(values.kwargs, keys=keys))
        return fold_decoding(values, keys=keys) if isinstance(values, dict) else values

    @field_validator(*_PATH_FIELDS, mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, os.PathLike) else value

    @field_validator("out")
    @classmethod
    def _output_path(cls, value: str | None) -> str | None:
        return check_output_path(value)

    @field_validator("modes", mode="before")
    @classmethod
    def _modes(cls, value: Any) -> Any:
        return parse_modes(value) if isinstance(value, str | list | tuple) else value

    @field_validator("max_new_tokens")
    @classmethod
    def _budget(cls, value: int | str) -> int | str:
        if isinstance(value, str):
            if value.strip().lower() != "auto":
                raise ValueError(f"expected 'auto' or a positive integer, got {value!r}")
            return "auto"
        if value < 1:
            raise ValueError(f"must be at least 1, got {value}")
        return value

    @field_validator(*CHOICES)
    @classmethod
    def _known_choice(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else check_choice(info.field_name, value, CHOICES[info.field_name])

    @property
    def wandb(self) -> dict[str, Any] | None:
        """`diaforge.eval.report.write_run`'s `wandb_cfg`: None without `wandb_project`."""
        if not self.wandb_project:
            return None
        return {
            "project": self.wandb_project,
            "entity": self.wandb_entity,
            "run_name": self.wandb_run_name,
            "tags": list(self.wandb_tags),
        }


def config_defaults() -> dict[str, Any]:
    """``{key: default}`` of every `EvalConfig` field."""
    return {f.name: getattr(EvalConfig(), f.name) for f in dataclasses.fields(EvalConfig)}


def flag_keys() -> list[str]:
    """The keys of ``eval run``'s flags, as `load_eval_config` takes them: every `EvalConfig` field
    but `decoding`, whose own fields stand in its place (``--constrain-calls``, ...)."""
    return [k for k in config_defaults() if k != "decoding"] + decoding_keys(decoding_class(EvalConfig))


#: The keys of an eval config and of its ``decoding`` mapping, as its errors name them.
CONFIG_KEYS = Keys([*config_defaults(), *decoding_keys()], otherwise=" (the keys are EvalConfig's fields)")
DECODING_KEYS = Keys(
    decoding_keys(), word="decoding key", otherwise=" (the keys are DecodingConfig's fields)"
)


def load_eval_config(path: str | Path | None = None, **overrides: Any) -> EvalConfig:
    """An `EvalConfig` from a YAML file (optional) with `overrides` over its keys (command-line
    flags; a None value is not an override). A wrong key or value is an `InputError` naming the
    file and the key."""
    raw = {str(k): v for k, v in read_yaml_mapping(path).items()} if path is not None else {}
    bad = sorted(set(overrides) - {*config_defaults(), *flag_keys()})
    if bad:
        raise TypeError(f"not an EvalConfig field: {bad[0]!r}")
    raw.update({k: v for k, v in overrides.items() if v is not None})
    raw = fold_decoding(raw, keys=decoding_keys(decoding_class(EvalConfig)))
    try:
        return EvalConfig(**raw)
    except ValidationError as exc:
        raise config_error(exc, path, raw, keys=_keys_of) from None


def _keys_of(parent: str) -> Keys:
    """The keys of the mapping at dotted key `parent` ("" for the top), for `config_error`."""
    return DECODING_KEYS if parent == "decoding" else CONFIG_KEYS
