"""Build a chat backend from its configuration (a `backend:` block of the YAML config or CLI flags).

spec = BackendSpec(backend="openai", model="Qwen/Qwen2.5-7B-Instruct", base_url="http://127.0.0.1:8000/v1")
backend = build_backend(spec, cache_dir="outputs/cache")   # None for `scripted`
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.llm.base import BackendConfigError, ChatBackend

BACKENDS = ("scripted", "openai", "hf")

#: `model` values that mean "the embedded SmolLM2-135M-Instruct" for the hf backend.
SMOLLM2_ALIASES = ("", "smollm2", "SmolLM2-135M-Instruct")


@dataclass
class BackendSpec:
    """Which backend an agent role talks to, and how."""

    backend: str = "scripted"
    """`scripted` (rule-based agents, no model, the offline default), `openai` (any
    OpenAI-compatible server) or `hf` (a local transformers model folder)."""

    model: str = ""
    """openai: the model name the server knows (`gpt-4o-mini`, vLLM's served model name). hf: the
    model folder; empty or `smollm2` means the embedded SmolLM2-135M-Instruct, materialised on
    first use into `outputs/models/SmolLM2-135M-Instruct`. Unused by scripted."""

    base_url: str | None = None
    """openai: endpoint such as `http://127.0.0.1:8000/v1` for vLLM, SGLang, llama.cpp, Ollama
    or TGI. None (default) is the real OpenAI API, which needs the key in `api_key_env`."""

    api_key_env: str = "OPENAI_API_KEY"
    """openai: name of the environment variable holding the API key (never the key itself:
    keys stay out of config files). Default `OPENAI_API_KEY`."""

    temperature: float | None = 0.7
    """Sampling temperature used when an agent does not set one, default 0.7 (the paper's
    generator setting); 0 is greedy. Requests at temperature 0 or with a seed are cached."""

    max_tokens: int | None = None
    """Reply length cap when an agent does not set one. openai: None lets the server decide;
    hf: None means 256 new tokens."""

    timeout: float = 60.0
    """openai: seconds per attempt before it counts as a timeout and is retried, default 60."""

    max_retries: int = 6
    """openai: retries after the first attempt on 429, 5xx, timeouts and connection errors,
    default 6 (exponential backoff with full jitter, `Retry-After` honoured)."""

    extra_body: dict[str, Any] | None = None
    """openai: extra JSON fields sent with every request, e.g. vLLM's
    `{"structured_outputs": {"json": schema}}` or `{"chat_template_kwargs": {"enable_thinking": false}}`."""

    device: str = "cpu"
    """hf: torch device, default `cpu`."""

    dtype: str = "auto"
    """hf: `auto` (the dtype saved with the model), `float32`, `bfloat16` or `float16`."""

    prices: dict[str, dict[str, float]] = field(default_factory=dict)
    """openai: `{model: {"input_per_million": usd, "output_per_million": usd}}`, merged over the
    table given to `build_backend`. Unknown model: cost 0 with one warning."""

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, *, where: str = "backend") -> BackendSpec:
        """Build from a config mapping; an unknown key is a `BackendConfigError` naming it."""
        data = dict(data or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BackendConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))}"
            )
        spec = cls(**data)
        spec.validate(where=where)
        return spec

    def validate(self, *, where: str = "backend") -> None:
        if self.backend not in BACKENDS:
            raise BackendConfigError(
                f"unknown backend {self.backend!r}; choose {', '.join(BACKENDS[:-1])} or {BACKENDS[-1]}"
            )
        if self.backend == "openai" and not self.model:
            raise BackendConfigError(f"{where}: the openai backend needs `model` (the name the server knows)")
        if self.temperature is not None and self.temperature < 0:
            raise BackendConfigError(f"{where}: temperature must be >= 0, got {self.temperature}")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise BackendConfigError(f"{where}: max_tokens must be > 0, got {self.max_tokens}")

    def as_dict(self) -> dict[str, Any]:
        """For provenance records. Holds no secret: the key stays in the environment."""
        return dataclasses.asdict(self)


def build_backend(
    spec: BackendSpec,
    *,
    cache_dir: str | Path | None = None,
    prices: dict[str, dict[str, float]] | None = None,
) -> ChatBackend | None:
    """The backend `spec` describes, or None for `scripted` (whose agents never call a model).

    `cache_dir` turns on the request cache of the openai backend (see `diaforge.llm.cache` for
    what is cached). Raises `BackendConfigError` for a bad configuration; it does not contact
    the server: call `await backend.check()` for that.
    """
    spec.validate()
    if spec.backend == "scripted":
        return None
    if spec.backend == "openai":
        from diaforge.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(
            spec.model,
            base_url=spec.base_url,
            api_key_env=spec.api_key_env,
            timeout=spec.timeout,
            max_retries=spec.max_retries,
            cache=cache_dir,
            prices={**(prices or {}), **spec.prices},
            default_temperature=spec.temperature,
            default_max_tokens=spec.max_tokens,
            extra_body=spec.extra_body,
        )
    from diaforge.llm.hf_backend import HFBackend

    model_path = spec.model
    if model_path in SMOLLM2_ALIASES:
        from diaforge.llm.smollm2 import DEFAULT_SMOLLM2_DIR, materialise_smollm2

        model_path = str(materialise_smollm2(DEFAULT_SMOLLM2_DIR))
    return HFBackend(
        model_path,
        device=spec.device,
        dtype=spec.dtype,
        max_new_tokens=spec.max_tokens or 256,
        default_temperature=spec.temperature,
    )
