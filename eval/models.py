"""The model under test: load it (base folder, LoRA adapter folder, merged folder, a served model,
or vLLM) and ask it for the next assistant turn of many dialogues at once.

Prompt mode shows the candidate tools in the system prompt and expects the paper's text format;
native mode passes them as `tools=` (to the chat template, or to the server's tools API) and reads
native tool calls. Either way every reply comes back as a `ParsedMessage` (reply, tool calls, or
malformed with a reason) plus the raw text.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from data_gen.errors import InputError
from data_gen.format import (
    ParsedMessage,
    openai_tools,
    parse_assistant,
    parse_openai_message,
    to_chat_messages,
)
from data_gen.llm.base import BackendConfigError
from data_gen.schema import Dialogue, Turn

BACKENDS = ("hf", "openai", "vllm")
MODES = ("prompt", "native")


@dataclass
class Reply:
    parsed: ParsedMessage
    raw: str


@dataclass
class ModelConfig:
    """How to load and query the model under test."""

    model: str
    """A local folder (base, LoRA adapter, or merged model) for `hf`/`vllm`, or a served model name for `openai`."""
    backend: str = "hf"
    mode: str = "prompt"
    """`prompt` (tools in the system prompt, the paper's text format) or `native` (tools= / tools API)."""
    base_url: str | None = None
    """OpenAI-compatible server for `backend: openai`; the key comes from `api_key_env`."""
    api_key_env: str = "OPENAI_API_KEY"
    max_new_tokens: int = 384
    temperature: float = 0.0
    """0 = greedy (the default: evaluation should be deterministic)."""
    batch_size: int = 8
    device: str = "cpu"
    history_reasoning: str = "strip"
    """Earlier turns' thoughts in the prompt: `strip` (as at inference, the default) or `keep`."""
    system_prompt: str | None = None
    """Override the reference system prompt (prompt mode) or the native one."""
    tool_style: str = "json"
    """How prompt mode lists the tools: `json` or `compact` (use what the model was trained with)."""

    def validate(self) -> None:
        if self.backend not in BACKENDS:
            raise InputError(f"unknown model backend {self.backend!r}; choose one of {', '.join(BACKENDS)}")
        if self.mode not in MODES:
            raise InputError(f"unknown mode {self.mode!r}; choose prompt or native")
        if self.tool_style not in ("json", "compact"):
            raise InputError(f"unknown tool style {self.tool_style!r}; choose json or compact")


def describe_checkpoint(path: str | Path) -> dict[str, Any]:
    """What a local folder holds: `{"kind": "adapter"|"model", "base": ..., "path": ...}`.

    A folder with `adapter_config.json` is a LoRA adapter whose base comes from the adapter's
    `base_model_name_or_path`; a folder with `config.json` is a full (base or merged) model.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("model path not found (give a local model, adapter or merged folder)", path=p)
    if not p.is_dir():
        raise InputError("model path is not a folder", path=p)
    if (p / "adapter_config.json").exists():
        cfg = json.loads((p / "adapter_config.json").read_text(encoding="utf-8"))
        base = cfg.get("base_model_name_or_path")
        if not base:
            raise InputError("adapter_config.json names no base model", path=p / "adapter_config.json")
        base_path = Path(base)
        if not base_path.is_absolute() and not base_path.exists() and (p / base).exists():
            base_path = p / base
        if not base_path.exists():
            raise InputError(
                f"the adapter's base model {base!r} is not a local folder; materialise it or edit "
                "base_model_name_or_path in adapter_config.json",
                path=p / "adapter_config.json",
            )
        return {"kind": "adapter", "path": str(p), "base": str(base_path)}
    if (p / "config.json").exists():
        return {"kind": "model", "path": str(p), "base": None}
    raise InputError(
        "folder holds neither config.json (a model) nor adapter_config.json (a LoRA adapter)", path=p
    )


def load_hf_model(path: str | Path, *, device: str = "cpu"):  # noqa: ANN201 - (model, tokenizer, info)
    """Loads a base, merged, or base + LoRA adapter model and its tokenizer, offline."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    info = describe_checkpoint(path)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    src = info["base"] if info["kind"] == "adapter" else info["path"]
    model = AutoModelForCausalLM.from_pretrained(src, dtype=dtype, local_files_only=True)
    if info["kind"] == "adapter":
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, info["path"], local_files_only=True)
    tok_dir = info["path"] if (Path(info["path"]) / "tokenizer_config.json").exists() else src
    tokenizer = AutoTokenizer.from_pretrained(tok_dir, local_files_only=True)
    model.to(device)
    model.eval()
    return model, tokenizer, info


class ModelUnderTest:
    """The assistant being evaluated. `respond` takes dialogues in progress (their turns so far end
    with a user turn) and returns the model's next assistant turn for each."""

    def __init__(self, cfg: ModelConfig) -> None:
        cfg.validate()
        self.cfg = cfg
        self.label = cfg.model
        self._backend = None
        self._vllm = None
        if cfg.backend == "hf":
            from data_gen.llm.hf_backend import HFBackend

            model, tokenizer, info = load_hf_model(cfg.model, device=cfg.device)
            self.info = info
            self._backend = HFBackend.from_model(
                model,
                tokenizer,
                model_name=Path(cfg.model).name,
                max_new_tokens=cfg.max_new_tokens,
                default_temperature=cfg.temperature or None,
            )
        elif cfg.backend == "openai":
            from data_gen.llm.openai_backend import OpenAIBackend

            self.info = {"kind": "served", "path": cfg.model, "base": None}
            self._backend = OpenAIBackend(
                cfg.model,
                base_url=cfg.base_url,
                api_key_env=cfg.api_key_env,
                default_temperature=cfg.temperature,
                default_max_tokens=cfg.max_new_tokens,
            )
        else:
            self._vllm = _VLLMRunner(cfg)
            self.info = self._vllm.info

    async def check(self) -> None:
        check = getattr(self._backend, "check", None)
        if check is not None:
            await check()

    async def aclose(self) -> None:
        if self._backend is not None:
            await self._backend.aclose()

    def messages(self, d: Dialogue) -> list[dict[str, Any]]:
        return to_chat_messages(
            d,
            mode=self.cfg.mode,
            history_reasoning=self.cfg.history_reasoning,
            system=self.cfg.system_prompt,
            arguments_as="dict" if self.cfg.backend == "hf" else "json",
            tool_style=self.cfg.tool_style,
        )

    def tools(self, d: Dialogue) -> list[dict[str, Any]] | None:
        return openai_tools(d.candidate_tools) if self.cfg.mode == "native" else None

    async def respond(self, dialogues: list[Dialogue]) -> list[Reply]:
        convs = [self.messages(d) for d in dialogues]
        tools = [self.tools(d) for d in dialogues]
        if self.cfg.backend == "hf":
            import asyncio

            results = await asyncio.to_thread(
                self._backend.generate_batch,
                convs,
                temperature=self.cfg.temperature,
                max_tokens=self.cfg.max_new_tokens,
                seed=0,
                tools=tools if self.cfg.mode == "native" else None,
                batch_size=self.cfg.batch_size,
            )
            return [Reply(parse_assistant(r.text), r.text) for r in results]
        if self.cfg.backend == "openai":
            import asyncio

            async def one(msgs: list[dict], tls: list[dict] | None) -> Reply:
                r = await self._backend.chat(msgs, temperature=self.cfg.temperature, seed=0, tools=tls)
                if r.tool_calls:
                    message = {
                        "content": r.text,
                        "tool_calls": r.tool_calls,
                        "reasoning_content": r.reasoning,
                    }
                    return Reply(
                        parse_openai_message(message), json.dumps(message, ensure_ascii=False, default=str)
                    )
                return Reply(parse_assistant(r.text), r.text)

            return await asyncio.gather(*(one(m, t) for m, t in zip(convs, tools, strict=True)))
        return self._vllm.generate(convs, tools)


def reply_to_turn(reply: Reply, phase: str | None = None) -> Turn:
    """The model's reply as an assistant turn (malformed text is kept as the visible content)."""
    p = reply.parsed
    if p.kind == "tool_calls":
        return Turn(role="assistant", thought=p.thought, tool_calls=p.tool_calls, phase=phase)
    if p.kind == "reply":
        return Turn(role="assistant", thought=p.thought, content=p.content, phase=phase)
    return Turn(
        role="assistant",
        thought=p.thought,
        content=reply.raw.strip(),
        phase=phase,
        metadata={"malformed": p.reason},
    )


class _VLLMRunner:
    """Offline vLLM generation with an optional LoRA adapter (the `vllm` extra, in its own
    environment: its pins clash with ours)."""

    def __init__(self, cfg: ModelConfig) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError:
            raise BackendConfigError(
                "the vllm backend needs vLLM installed (in its own environment: its torch/transformers "
                "pins clash with this toolkit's); use --backend hf, or serve the model and use --backend openai"
            ) from None
        info = describe_checkpoint(cfg.model)
        self.info = info
        self.cfg = cfg
        base = info["base"] if info["kind"] == "adapter" else info["path"]
        self.llm = LLM(model=base, enable_lora=info["kind"] == "adapter", max_lora_rank=64)
        self.params = SamplingParams(temperature=cfg.temperature, max_tokens=cfg.max_new_tokens)
        self.lora = None
        if info["kind"] == "adapter":
            from vllm.lora.request import LoRARequest

            self.lora = LoRARequest("adapter", 1, info["path"])

    def generate(self, convs: list[list[dict]], tools: list[list[dict] | None]) -> list[Reply]:
        kwargs: dict[str, Any] = {"lora_request": self.lora} if self.lora else {}
        if self.cfg.mode == "native" and tools and tools[0]:
            kwargs["tools"] = tools[0]
        outs = self.llm.chat(convs, self.params, **kwargs)
        return [Reply(parse_assistant(o.outputs[0].text), o.outputs[0].text) for o in outs]


def offline_env() -> None:
    """Evaluation never reaches a model hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
