"""Offline generation with vLLM (`LLM.chat`), for evaluation at scale on a GPU.

vLLM lives in its own environment (its torch and transformers pins clash with this toolkit's), so
it is imported when a backend is built, never at module load. A LoRA adapter is served through a
`LoRARequest` over its base model.

`LLM.chat` takes one `tools` list for every conversation of a call. Conversations that carry
different tools (each dialogue has its own candidates) are therefore sent in groups, one call per
distinct tool list, and their replies put back in the order they were asked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from diaforge.llm.base import BackendConfigError, ChatResult, GenerationRequest

__all__ = ["VLLMBackend", "group_by_tools"]

VLLM_MISSING = (
    "the vllm backend needs vLLM installed (in its own environment: its torch/transformers pins clash "
    "with this toolkit's); use --backend hf, or serve the model and use --backend openai"
)


def group_by_tools(tools: Sequence[list[dict[str, Any]] | None]) -> list[tuple[list[dict] | None, list[int]]]:
    """The indices of the conversations that share a tool list, one group per distinct list (in the
    order each list first appears), with the list itself."""
    groups: dict[str, tuple[list[dict] | None, list[int]]] = {}
    for i, tls in enumerate(tools):
        key = json.dumps(tls, sort_keys=True, ensure_ascii=False, default=str)
        groups.setdefault(key, (tls, []))[1].append(i)
    return list(groups.values())


class VLLMBackend:
    """Greedy (or sampled) replies from a vLLM `LLM` over a model folder or a LoRA adapter.

    Args:
        base: the model folder vLLM loads (an adapter's base model).
        adapter: the adapter folder served on top of it, or None.
        temperature, max_tokens: the sampling settings of every reply.
        llm_factory: builds the `LLM` (tests pass a fake); None imports vLLM.
    """

    def __init__(
        self,
        base: str,
        *,
        adapter: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        llm_factory: Callable[..., Any] | None = None,
    ) -> None:
        if llm_factory is None:
            try:
                from vllm import LLM, SamplingParams
                from vllm.lora.request import LoRARequest
            except ImportError:
                raise BackendConfigError(VLLM_MISSING) from None
            self.llm = LLM(model=base, enable_lora=adapter is not None, max_lora_rank=64)
            self._sampling: Any = SamplingParams
            self.lora: Any = LoRARequest("adapter", 1, adapter) if adapter else None
        else:  # a stand-in LLM (tests): the settings travel as plain mappings
            self.llm = llm_factory(model=base, enable_lora=adapter is not None, max_lora_rank=64)
            self._sampling = None
            self.lora = {"lora_name": "adapter", "lora_int_id": 1, "lora_path": adapter} if adapter else None
        self.temperature, self.max_tokens = temperature, max_tokens

    def generate_batch(
        self, requests: Sequence[GenerationRequest], *, batch_size: int | None = None
    ) -> list[ChatResult]:
        """One reply per request, in their order; each request's `tools` go to the chat template
        with their own conversations only, and its temperature and budget (where it sets them)
        to its own sampling settings. vLLM batches the whole list itself (`batch_size` is not
        used)."""
        requests = list(requests)
        results: list[ChatResult | None] = [None] * len(requests)
        for tls, indices in group_by_tools([r.tools for r in requests]):
            kwargs: dict[str, Any] = {"lora_request": self.lora} if self.lora else {}
            if tls:
                kwargs["tools"] = tls
            params = [self._params(requests[i]) for i in indices]
            outs = self.llm.chat([requests[i].messages for i in indices], params, **kwargs)
            for i, out in zip(indices, outs, strict=True):
                first = out.outputs[0]
                results[i] = ChatResult(first.text, finish_reason=getattr(first, "finish_reason", None))
        return [r for r in results if r is not None]

    def _params(self, request: GenerationRequest) -> Any:
        """The sampling settings of one request: the backend's, with the request's own over them."""
        temperature = self.temperature if request.temperature is None else request.temperature
        max_tokens = request.max_tokens or self.max_tokens
        if self._sampling is None:  # a stand-in LLM (tests): the settings as a plain mapping
            return {"temperature": temperature, "max_tokens": max_tokens}
        return self._sampling(temperature=temperature, max_tokens=max_tokens)
