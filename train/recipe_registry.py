"""The recipes' metadata, in one registry: `recipes/registry.yaml` (package data, beside the recipes).

Per backbone (a folder of `recipes/`) it holds the base model (the hub id or folder its SFT recipes
load, and the model its DPO recipe's SFT adapter belongs to), other model ids of the same
architecture, and the model's shape (`Shape`: what the memory planner, `train/plan.py`, counts).
Per recipe file of that folder: the accelerate config it is launched with, the memory to expect
(one line, as people read it), whether that figure was measured, and the planner's own line
(GPUs, sharding, peak GiB per GPU, the smallest card it fits) for a LoRA recipe that trains on a GPU.

The planner reads its shapes, a DPO recipe's base model and a recipe's accelerate config here; the
tests hold the registry against the recipe files, the accelerate configs and the planner. Nothing
reads the recipes' header comments: they are for people.

    from diaforge.train.recipe_registry import read_registry
    registry = read_registry()
    entry = registry.entry_of("recipes/llama-3.3-70b/sft_zero3.yaml")  # None outside recipes/
    entry.accelerate_config, registry.backbone_of(entry).shape.layers

A missing or malformed entry is one `InputError` line naming the registry file and the dotted key
(``.../registry.yaml, field 'backbones.gemma-3-4b.recipes.sft.yaml.accelerate_config': ...``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.configs import Keys, config_error, read_yaml_mapping
from diaforge.errors import InputError
from diaforge.packaged import packaged_path

REGISTRY_FILE = "registry.yaml"

#: The cards a planner line may name, by their usable GiB (what `python -m diaforge.train.plan
#: --gpu-memory` takes): an H100 80 GB and an H200 141 GB.
CARDS = {"H100": 79.6, "H200": 131.0}

SHARDINGS = ("none", "zero2", "zero3", "fsdp")


@dataclass(frozen=True)
class Shape:
    """A decoder's dimensions (its config.json), enough to count parameters and activations."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    #: Linear parameters outside the decoder layers that are loaded but not adapted (a vision tower).
    extra_linear: int = 0
    #: Decoder linear parameters when the layers are not uniform (Nemotron's pruned blocks).
    decoder_linear: int | None = None

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def layer_linears(self) -> list[tuple[int, int]]:
        """(in, out) of each linear of one decoder layer: q, k, v, o, gate, up, down."""
        h, i = self.hidden, self.intermediate
        return [(h, self.q_dim), (h, self.kv_dim), (h, self.kv_dim), (self.q_dim, h), (h, i), (h, i), (i, h)]

    def linear_params(self) -> int:
        if self.decoder_linear is not None:
            return self.decoder_linear
        return self.layers * sum(a * b for a, b in self.layer_linears())

    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied else 2)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Shape:
        """The shape of a Llama-like `config.json` (a local model folder, a model built on the spot)."""
        text = config.get("text_config") or config
        heads = int(text["num_attention_heads"])
        hidden = int(text["hidden_size"])
        return cls(
            hidden=hidden,
            intermediate=int(text["intermediate_size"]),
            layers=int(text["num_hidden_layers"]),
            heads=heads,
            kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads),
            vocab=int(text["vocab_size"]),
            tied=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
        )


@dataclass(frozen=True)
class PlannerLine:
    """What `python -m diaforge.train.plan RECIPE` prints for a recipe on the smallest card it fits."""

    gpus: int
    sharding: str  # none | zero2 | zero3 | fsdp
    peak_gib: float  # the plan's total per GPU, rounded to 0.1
    fits: str  # a card of CARDS


@dataclass(frozen=True)
class RecipeEntry:
    """One recipe file's metadata."""

    backbone: str  # its folder under recipes/: a key of `Registry.backbones`
    name: str  # the file's name in that folder: sft.yaml
    accelerate_config: str  # as launch commands spell it: accelerate_configs/single_gpu.yaml
    memory: str  # the memory to expect, one line
    memory_measured: bool  # False: `memory` is an estimate
    planner: PlannerLine | None  # None: the planner does not size it (a CPU run, full fine-tuning)

    @property
    def key(self) -> str:
        """``backbone/name``: the recipe's path under `recipes/`."""
        return f"{self.backbone}/{self.name}"

    def accelerate_config_path(self) -> Path:
        """The bundled accelerate config file (`diaforge.accelerate_configs`)."""
        return _accelerate_config_path(self.accelerate_config)


@dataclass(frozen=True)
class Backbone:
    """One folder of `recipes/`: its base model, the model's shape and its recipes."""

    name: str
    base_model: str
    same_shape: tuple[str, ...]  # other model ids of the same architecture
    shape: Shape
    recipes: dict[str, RecipeEntry]


@dataclass(frozen=True)
class Registry:
    path: Path
    backbones: dict[str, Backbone]

    @property
    def folder(self) -> Path:
        """The recipes' folder (the registry file's own)."""
        return self.path.parent

    def recipes(self) -> list[RecipeEntry]:
        return [entry for backbone in self.backbones.values() for entry in backbone.recipes.values()]

    def recipe(self, key: str) -> RecipeEntry | None:
        """The entry of ``backbone/name`` (a path under `recipes/`), None when there is none."""
        folder, _, name = key.partition("/")
        backbone = self.backbones.get(folder)
        return backbone.recipes.get(name) if backbone else None

    def entry_of(self, recipe: str | Path) -> RecipeEntry | None:
        """The entry of a recipe file in the registry's folder; None for a file anywhere else (or
        one the registry does not list)."""
        try:
            relative = Path(recipe).resolve().relative_to(self.folder.resolve())
        except ValueError:
            return None
        return self.recipe(relative.as_posix())

    def backbone_of(self, entry: RecipeEntry) -> Backbone:
        return self.backbones[entry.backbone]

    def shape_of_model(self, model: str) -> Shape | None:
        """The shape of a base model (or another id of its architecture); None when no backbone has it."""
        for backbone in self.backbones.values():
            if model == backbone.base_model or model in backbone.same_shape:
                return backbone.shape
        return None


@functools.cache
def _bundled() -> Registry:
    return read_registry_file(packaged_path("diaforge.recipes", REGISTRY_FILE))


def read_registry(path: str | Path | None = None) -> Registry:
    """The registry at `path`, by default the bundled `recipes/registry.yaml` (read once)."""
    return _bundled() if path is None else read_registry_file(Path(path))


# --------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------


def _accelerate_config_path(name: str) -> Path:
    parts = Path(name).parts[1:]
    return Path(str(packaged_path("diaforge.accelerate_configs"))).joinpath(*parts)


def _schema() -> type:
    """The registry file's pydantic model (built on first use: pydantic loads only for a read)."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    strict = ConfigDict(extra="forbid", strict=True)

    class ShapeFields(BaseModel):
        model_config = strict
        hidden: int = Field(ge=1)
        intermediate: int = Field(ge=1)
        layers: int = Field(ge=1)
        heads: int = Field(ge=1)
        kv_heads: int = Field(ge=1)
        head_dim: int = Field(ge=1)
        vocab: int = Field(ge=1)
        tied: bool
        extra_linear: int = Field(default=0, ge=0)
        decoder_linear: int | None = Field(default=None, ge=1)

    class PlannerFields(BaseModel):
        model_config = strict
        gpus: int = Field(ge=1)
        sharding: str
        peak_gib: float = Field(gt=0)
        fits: str

        @field_validator("sharding")
        @classmethod
        def _sharding(cls, value: str) -> str:
            if value not in SHARDINGS:
                raise ValueError(f"must be one of {', '.join(SHARDINGS)}, got {value!r}")
            return value

        @field_validator("fits")
        @classmethod
        def _card(cls, value: str) -> str:
            if value not in CARDS:
                raise ValueError(f"must be one of {', '.join(CARDS)}, got {value!r}")
            return value

    class RecipeFields(BaseModel):
        model_config = strict
        accelerate_config: str
        memory: str = Field(min_length=1)
        memory_measured: bool = False
        planner: PlannerFields | None = None

        @field_validator("accelerate_config")
        @classmethod
        def _config(cls, value: str) -> str:
            if not (value.startswith("accelerate_configs/") and value.endswith(".yaml")):
                raise ValueError(f"must be accelerate_configs/NAME.yaml, got {value!r}")
            return value

    class BackboneFields(BaseModel):
        model_config = strict
        base_model: str = Field(min_length=1)
        same_shape: list[str] = []
        shape: ShapeFields
        recipes: dict[str, RecipeFields] = Field(min_length=1)

    class RegistryFields(BaseModel):
        model_config = strict
        backbones: dict[str, BackboneFields] = Field(min_length=1)

    return RegistryFields


_TOP = Keys(["backbones"])
_BACKBONE = Keys(["base_model", "same_shape", "shape", "recipes"])
_RECIPE = Keys(["accelerate_config", "memory", "memory_measured", "planner"])
_PLANNER = Keys(["gpus", "sharding", "peak_gib", "fits"])
_SHAPE = Keys([f for f in Shape.__dataclass_fields__])


def _keys(parent: str) -> Keys:
    """The keys of the mapping at the dotted key `parent` (a recipe's key ends in .yaml)."""
    if not parent:
        return _TOP
    for suffix, keys in ((".shape", _SHAPE), (".planner", _PLANNER), (".yaml", _RECIPE)):
        if parent.endswith(suffix):
            return keys
    return _BACKBONE


def read_registry_file(path: Path) -> Registry:
    """The registry file at `path`, checked: every key and value, and every recipe and accelerate
    config it names exists. A problem is one `InputError` naming the file and the dotted key."""
    from pydantic import ValidationError

    raw = read_yaml_mapping(path, what="recipe registry")
    try:
        parsed = _schema().model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        unknown = any(e["type"] == "extra_forbidden" for e in errors)  # config_error names it first
        if first["type"] == "missing" and not unknown:  # config_error would show the whole mapping
            loc = [str(part) for part in first["loc"]]
            raise InputError(
                f"missing key {loc[-1]!r}", path=path, field=".".join(loc[:-1]) or None
            ) from None
        raise config_error(exc, path, raw, keys=_keys) from None
    backbones: dict[str, Backbone] = {}
    for name, fields in parsed.backbones.items():
        backbone = Backbone(
            name=name,
            base_model=fields.base_model,
            same_shape=tuple(fields.same_shape),
            shape=Shape(**fields.shape.model_dump()),
            recipes={},
        )
        for recipe, entry in fields.recipes.items():
            where = f"backbones.{name}.recipes.{recipe}"
            if not (path.parent / name / recipe).is_file():
                raise InputError(
                    f"no recipe file {name}/{recipe} beside the registry", path=path, field=where
                )
            if not _accelerate_config_path(entry.accelerate_config).is_file():
                raise InputError(
                    f"no bundled accelerate config {entry.accelerate_config}",
                    path=path,
                    field=f"{where}.accelerate_config",
                )
            planner = entry.planner
            backbone.recipes[recipe] = RecipeEntry(
                backbone=name,
                name=recipe,
                accelerate_config=entry.accelerate_config,
                memory=entry.memory,
                memory_measured=entry.memory_measured,
                planner=PlannerLine(**planner.model_dump()) if planner else None,
            )
        backbones[name] = backbone
    return Registry(path=path, backbones=backbones)
