"""Chat backend over a local transformers causal LM folder (no server, no model hub).

The prompt is the tokenizer's own chat template (`add_generation_prompt=True`, `tools=` passed
through when given), generation stops at the end-of-turn token (the model's eos ids plus the
template's end-of-turn marker such as `<|im_end|>` or `<|eot_id|>`), and only the new tokens are
decoded. Each request's decoding rules (`diaforge.llm.rules`, built from its `DecodingConfig` by
`diaforge.llm.rules.build_chain`: stop strings, the loop stop, copied thoughts, the call rule)
run as one chain per row, and the row's finish reason comes from where it ended:
`finish_reason="length"` when the token budget cut it off, `"loop"` when the loop stop ended it,
`"stop"` for an end-of-turn token or a stop string.
Temperature 0 (or None with `default_temperature=None`) is greedy; otherwise tokens are sampled
with a `torch.Generator` seeded by `seed`, so a seeded request gives the same reply every time
and never touches torch's global random state.

`generate` blocks, so `chat` runs it in a worker thread (`asyncio.to_thread`) behind a lock: one
generation at a time per backend, while the event loop stays free for other agents. For
throughput (evaluation), `generate_batch(requests)` generates several requests together.

With `prefix_cache=True` (the default) and a model whose cache allows it (plain full-attention
layers: Llama, Qwen, SmolLM2 ...), generation goes through `PrefixCachedGenerator`: the keys and
values of earlier prompts and replies are kept, so a dialogue's next turn only computes what was
added since (and dialogues share their common system-prompt opening), and a finished row leaves
its batch at once; with `DecodingConfig.speculate` it drafts tokens by prompt lookup and verifies
them in one pass. Other models, or `prefix_cache=False`, use `model.generate` with left padding,
the same chains applied through a `LogitsProcessor` and a `StoppingCriteria`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from diaforge.llm.base import BackendConfigError, ChatResult, GenerationRequest, Usage
from diaforge.llm.constrain import span_kind
from diaforge.llm.decoding import DecodingConfig
from diaforge.llm.prefix_cache import (
    DEFAULT_MAX_CACHED_BYTES,
    Generated,
    PrefixCachedGenerator,
    supports_prefix_cache,
)
from diaforge.llm.rules import LENGTH_FINISH, ChainProcessor, ChainStopper, RuleChain, Vocab, build_chain

logger = logging.getLogger(__name__)

#: End-of-turn markers of common chat templates, used as extra stop tokens when the template uses them.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "<|eom_id|>", "</s>")

_DTYPES = {
    "float32": torch.float32,
    "fp32": torch.float32,
    "bfloat16": torch.bfloat16,
    "bf16": torch.bfloat16,
    "float16": torch.float16,
    "fp16": torch.float16,
}


def _resolve_dtype(dtype: str | torch.dtype) -> str | torch.dtype:
    if isinstance(dtype, torch.dtype) or dtype == "auto":
        return dtype
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise BackendConfigError(
            f"unknown dtype {dtype!r}; choose auto, float32, bfloat16 or float16"
        ) from None


def end_of_turn_ids(tokenizer: Any, generation_eos: int | Sequence[int] | None = None) -> list[int]:
    """The ids that end a reply: the generation config's eos ids (`generation_eos`), the
    tokenizer's eos, and the end-of-turn markers its chat template uses (`END_OF_TURN_TOKENS`),
    in that order and without repeats; empty when there is none. `HFBackend` stops on them, and
    `diaforge.llm.vllm_rules` builds the same `Vocab` from them inside a vLLM server."""
    ids: list[int] = []

    def add(value: Any) -> None:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if v is not None and int(v) not in ids:
                ids.append(int(v))

    add(generation_eos)
    add(tokenizer.eos_token_id)
    template = str(tokenizer.chat_template)
    vocab = tokenizer.get_vocab()
    for token in END_OF_TURN_TOKENS:
        if token in template and token in vocab:
            add(vocab[token])
    return ids


class _SeededSampler:
    """Logits processor that samples the next token with its own `torch.Generator` (temperature
    and top-p applied first) and leaves only that token possible, so that greedy decoding picks
    it. `generate` itself samples from torch's global generator, which is neither seedable per
    request nor safe to share between threads; this keeps sampling reproducible and local."""

    def __init__(self, temperature: float, top_p: float, seed: int | None) -> None:
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.seed = seed
        self.generator: torch.Generator | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if self.generator is None:
            self.generator = torch.Generator(device=scores.device)
            if self.seed is None:
                self.generator.seed()
            else:
                self.generator.manual_seed(int(self.seed))
        logits = scores.float() / self.temperature
        if self.top_p < 1.0:
            sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
            cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
            remove = cumulative - sorted_logits.softmax(dim=-1) >= self.top_p  # keeps at least one
            sorted_logits = sorted_logits.masked_fill(remove, float("-inf"))
            logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
        probs = logits.softmax(dim=-1)
        chosen = torch.multinomial(probs, num_samples=1, generator=self.generator)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter(-1, chosen, 0.0)


class HFBackend:
    """Local transformers model as a chat backend.

    Args:
        model_path: folder holding a causal LM (`config.json`, weights) and its tokenizer with a
            chat template. Loaded with `local_files_only=True`: a missing folder is a
            `BackendConfigError`, never a hub lookup.
        device: torch device, default "cpu".
        dtype: "auto" (the dtype saved in the folder), "float32", "bfloat16" or "float16".
        max_new_tokens: reply length cap when `chat` gets no `max_tokens`, default 256.
        default_temperature: used when `chat` gets `temperature=None`, default 0.7; None or 0
            makes the default greedy.
        top_p: nucleus sampling mass when sampling, default 1.0 (off).
        prefix_cache: reuse the keys and values of earlier prompts (module docstring), default
            True; ignored for models whose cache cannot be reused that way.
        max_cached_tokens: how many tokens of keys and values the prefix cache keeps (None: as
            many as its memory bound holds).
        max_cached_bytes: the prefix cache's memory bound (None: `prefix_cache.DEFAULT_MAX_CACHED_BYTES`).
        decoding: the decoding rules (`diaforge.llm.decoding.DecodingConfig`) of a request that
            names none (`chat`, `generate_one`); None (the default): no rule, so a reply runs to
            its end of turn or its budget. A `GenerationRequest` carries its own.
    """

    name = "hf"

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        dtype: str | torch.dtype = "auto",
        max_new_tokens: int = 256,
        default_temperature: float | None = 0.7,
        top_p: float = 1.0,
        prefix_cache: bool = True,
        max_cached_tokens: int | None = None,
        max_cached_bytes: int | None = None,
        decoding: DecodingConfig | None = None,
    ) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise BackendConfigError(f"model folder not found: {path}")
        if not (path / "config.json").is_file():
            raise BackendConfigError(
                f"model folder {path} has no config.json: not a transformers model folder"
            )
        from transformers import AutoModelForCausalLM, AutoTokenizer

        resolved = _resolve_dtype(dtype)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(str(path), local_files_only=True, dtype=resolved)
        except (OSError, ValueError, KeyError) as exc:
            raise BackendConfigError(f"cannot load the model in {path}: {exc}") from None
        try:
            model = model.to(device)
        except (RuntimeError, AssertionError) as exc:
            raise BackendConfigError(f"cannot move the model to device {device!r}: {exc}") from None
        self._setup(model, tokenizer, str(path), max_new_tokens, default_temperature, top_p)
        self._use_prefix_cache(prefix_cache, max_cached_tokens, max_cached_bytes)
        self.decoding = decoding

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        model_name: str = "model",
        max_new_tokens: int = 256,
        default_temperature: float | None = 0.7,
        top_p: float = 1.0,
        prefix_cache: bool = True,
        max_cached_tokens: int | None = None,
        max_cached_bytes: int | None = None,
        decoding: DecodingConfig | None = None,
    ) -> HFBackend:
        """Wrap an already loaded model (e.g. a base model with a PEFT adapter) and tokenizer."""
        self = cls.__new__(cls)
        self._setup(model, tokenizer, model_name, max_new_tokens, default_temperature, top_p)
        self._use_prefix_cache(prefix_cache, max_cached_tokens, max_cached_bytes)
        self.decoding = decoding
        return self

    def _use_prefix_cache(self, wanted: bool, max_tokens: int | None, max_bytes: int | None) -> None:
        self.prefix_cache: PrefixCachedGenerator | None = None
        if wanted and supports_prefix_cache(self.hf_model):
            self.prefix_cache = PrefixCachedGenerator(
                self.hf_model,
                self.eos_token_ids,
                max_cached_tokens=max_tokens,
                max_cached_bytes=DEFAULT_MAX_CACHED_BYTES if max_bytes is None else max_bytes,
            )

    def _setup(
        self,
        model: Any,
        tokenizer: Any,
        model_name: str,
        max_new_tokens: int,
        default_temperature: float | None,
        top_p: float,
    ) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise BackendConfigError(f"the tokenizer of {model_name} has no chat template")
        self.model = model_name
        self.hf_model = model.eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = int(max_new_tokens)
        self.default_temperature = default_temperature
        self.top_p = float(top_p)
        self.usage = Usage()
        self.eos_token_ids = self._end_of_turn_ids()
        pad = tokenizer.pad_token_id
        if pad is None:
            pad = getattr(model.generation_config, "pad_token_id", None)
        self.pad_token_id = int(pad) if pad is not None else self.eos_token_ids[0]
        self._thread_lock = threading.Lock()
        self._async_lock: asyncio.Lock | None = None
        self._async_lock_loop: asyncio.AbstractEventLoop | None = None
        self._warned_tools = False
        self._vocab: Vocab | None = None
        self.speculation: dict[str, int] = {}
        """Tokens taken from accepted prompt-lookup drafts, by what the reply was writing there
        (`diaforge.llm.constrain.span_kind`: thought, call, text)."""

    @property
    def vocab(self) -> Vocab:
        """The tokenizer as the decoding rules see it (`diaforge.llm.rules.Vocab`), built once."""
        if self._vocab is None:
            self._vocab = Vocab.of(self.tokenizer, self.eos_token_ids)
        return self._vocab

    def _end_of_turn_ids(self) -> list[int]:
        eos = getattr(self.hf_model.generation_config, "eos_token_id", None)
        ids = end_of_turn_ids(self.tokenizer, eos)
        if not ids:
            raise BackendConfigError(f"{self.model}: no end-of-turn token (no eos_token_id, no known marker)")
        return ids

    # -- prompts -----------------------------------------------------------------------------

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The prompt text exactly as the model sees it (chat template + generation prompt)."""
        kwargs: dict[str, Any] = {"add_generation_prompt": True, "tokenize": False}
        if tools:
            kwargs["tools"] = tools
            if not self._warned_tools and "tools" not in str(self.tokenizer.chat_template):
                self._warned_tools = True
                logger.warning(
                    "%s: its chat template ignores `tools`; put the tool specs in the system prompt instead",
                    self.model,
                )
        return self.tokenizer.apply_chat_template(messages, **kwargs)

    def _encode(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
        # The template already holds the special tokens (bos etc.): add none.
        return list(self.tokenizer(self.render(messages, tools), add_special_tokens=False)["input_ids"])

    # -- generation ----------------------------------------------------------------------------

    def chain(self, request: GenerationRequest) -> RuleChain | None:
        """The decoding rules of one request (its own `decoding`, else the backend's), or None
        when it has none."""
        decoding = request.decoding if request.decoding is not None else self.decoding
        if decoding is None and not request.stop:
            return None
        chain = build_chain(
            decoding if decoding is not None else DecodingConfig(loop_stop=False),
            self.vocab,
            candidates=request.candidates,
            said=request.user_texts(),
            stop=request.stop,
        )
        return chain if chain.rules else None

    def _generate_ids(
        self,
        prompts: list[list[int]],
        *,
        temperature: float | None,
        max_new_tokens: int,
        seed: int | None,
        chains: list[RuleChain | None],
        max_rows: int | None = None,
        speculate: int = 0,
        more: Callable[[int], Sequence[tuple[list[int], RuleChain | None]]] | None = None,
        on_done: Callable[[int, Generated], None] | None = None,
    ) -> list[Generated]:
        """Each prompt's new tokens up to and including its first end-of-turn token (which
        `completion_tokens` counts, as servers do), and why it stopped. `chains` holds each
        row's decoding rules (or None); a chain that masks tokens needs greedy decoding.
        `max_rows`: through the prefix cache, the most rows decoded at once (the rest wait and
        take the place of rows that end); `model.generate` takes them all at once. `speculate`:
        prompt-lookup drafts per step, greedy and through the prefix cache only (elsewhere the same
        replies come one pass a token). `more` and `on_done`: prompts that join while the call
        runs and each reply as it ends (`PrefixCachedGenerator.generate`; the prefix cache only)."""
        if temperature and any(c is not None and c.masks for c in chains):
            raise BackendConfigError(f"{self.model}: constrained decoding rules need greedy decoding")
        sampler = _SeededSampler(temperature, self.top_p, seed) if temperature else None

        def choose(logits: torch.Tensor) -> torch.Tensor:
            return (sampler(None, logits) if sampler is not None else logits).argmax(dim=-1)

        if self.prefix_cache is not None:
            with self._thread_lock:
                return self.prefix_cache.generate(
                    prompts,
                    max_new_tokens=max_new_tokens,
                    choose=choose,
                    chains=chains,
                    max_rows=max_rows,
                    speculate=0 if temperature else speculate,
                    more=more,
                    on_done=on_done,
                )
        if more is not None or on_done is not None:
            raise BackendConfigError(
                f"{self.model}: requests join a running batch through the prefix cache only"
            )
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        width = max(len(p) for p in prompts)
        device = self.hf_model.device
        input_ids = torch.tensor(
            [[self.pad_token_id] * (width - len(p)) + p for p in prompts], dtype=torch.long, device=device
        )
        attention_mask = torch.tensor(
            [[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long, device=device
        )
        # A fresh config: the model's own sampling defaults (do_sample, temperature, top_p) must
        # not leak into a request that asked for greedy decoding.
        config = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=False,
            eos_token_id=list(self.eos_token_ids),
            pad_token_id=self.pad_token_id,
        )
        bare = Vocab((), tuple(self.eos_token_ids), lambda ids: "")
        rows = [c if c is not None else RuleChain([], bare) for c in chains]
        for chain, prompt in zip(rows, prompts, strict=True):
            chain.admit(prompt)
        processor = ChainProcessor(rows, width, choose)
        with self._thread_lock, torch.inference_mode():
            self.hf_model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                logits_processor=LogitsProcessorList([processor]),
                stopping_criteria=StoppingCriteriaList([ChainStopper(processor)]),
            )
        out = []
        for chain, finish in zip(rows, processor.finish, strict=True):
            chain.retire()
            out.append(Generated(chain.row.ids, finish or LENGTH_FINISH))
        return out

    def _to_result(
        self, prompt_len: int, generated: Generated, stop: Sequence[str], chain: RuleChain | None
    ) -> ChatResult:
        new_ids = generated.ids
        text = self.tokenizer.decode(
            [t for t in new_ids if t not in self.eos_token_ids], skip_special_tokens=True
        )
        cuts = [text.find(s) for s in stop if s and s in text]
        if cuts:
            text = text[: min(cuts)]
        usage = Usage(prompt_tokens=prompt_len, completion_tokens=len(new_ids), requests=1)
        counters = chain.counters() if chain is not None else {}
        for at in generated.drafted:
            kind = span_kind(self.tokenizer.decode(new_ids[:at], skip_special_tokens=True))
            self.speculation[kind] = self.speculation.get(kind, 0) + 1
        return ChatResult(
            text=text, usage=usage, model=self.model, finish_reason=generated.finish, counters=counters
        )

    def _effective_temperature(self, temperature: float | None) -> float | None:
        return self.default_temperature if temperature is None else temperature

    def generate_one(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatResult:
        """Blocking version of `chat` (for scripts that have no event loop)."""
        request = GenerationRequest(
            messages, tools, temperature=temperature, max_tokens=max_tokens, seed=seed, stop=tuple(stop or ())
        )
        return self.generate_batch([request], batch_size=1)[0]

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._async_lock is None or self._async_lock_loop is not loop:
            self._async_lock = asyncio.Lock()
            self._async_lock_loop = loop
        return self._async_lock

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | None = None,
        stop: list[str] | None = None,
    ) -> ChatResult:
        """One reply, generated in a worker thread, one generation at a time."""
        async with self._lock():
            return await asyncio.to_thread(
                self.generate_one,
                messages,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=seed,
                tools=tools,
                stop=stop,
            )

    def generate_batch(
        self, requests: Sequence[GenerationRequest], *, batch_size: int = 8
    ) -> list[ChatResult]:
        """Replies to several requests, in their order. Through the prefix cache the batch is
        continuous: one call decodes `batch_size` rows at once, and a row that ends gives its place
        to the next request; `model.generate` takes `batch_size` requests at a time (grouped by
        length to limit padding). Requests that differ in temperature, budget or seed are decoded
        in separate groups. Greedy replies equal one-by-one `chat` replies; sampled replies with a
        seed are reproducible for the same batch composition."""
        requests = list(requests)
        if not requests:
            return []
        prompts = [self._encode(r.messages, r.tools) for r in requests]
        chains = [self.chain(r) for r in requests]
        results: list[ChatResult | None] = [None] * len(requests)
        size = max(1, batch_size)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(self.decode_key(r), []).append(i)
        for (temperature, budget, seed, speculate), members in groups.items():
            order = sorted(members, key=lambda i: -len(prompts[i]))
            # Through the prefix cache one call takes every prompt and keeps `size` rows decoding.
            step = len(order) if self.prefix_cache is not None else size
            for start in range(0, len(order), step):
                chunk = order[start : start + step]
                rows = self._generate_ids(
                    [prompts[i] for i in chunk],
                    temperature=temperature,
                    max_new_tokens=budget,
                    seed=None if seed is None else seed + start,
                    chains=[chains[i] for i in chunk],
                    max_rows=size,
                    speculate=speculate,
                )
                for i, generated in zip(chunk, rows, strict=True):
                    results[i] = self._to_result(len(prompts[i]), generated, requests[i].stop, chains[i])
                    self.usage.add(results[i].usage)
        return [r for r in results if r is not None]

    def decode_key(self, request: GenerationRequest) -> tuple[Any, ...]:
        """What requests decoded in one call share: temperature, budget, seed and speculation."""
        decoding = request.decoding if request.decoding is not None else self.decoding
        return (
            self._effective_temperature(request.temperature),
            request.max_tokens or self.max_new_tokens,
            request.seed,
            decoding.speculate if decoding is not None else 0,
        )

    @property
    def continuous(self) -> bool:
        """Whether requests can join a running batch (`generate_continuous`): the prefix cache."""
        return self.prefix_cache is not None

    def generate_continuous(
        self,
        first: Sequence[tuple[Any, GenerationRequest]],
        more: Callable[[int, tuple[Any, ...]], Sequence[tuple[Any, GenerationRequest]]],
        deliver: Callable[[Any, ChatResult], None],
        *,
        batch_size: int = 8,
    ) -> None:
        """Decode tagged requests in one continuous batch that others join while it runs, for a
        server: `first` (all of one `decode_key`) start it; `more(room, key)` is asked for up to
        `room` requests of the same key whenever a row is free, and `deliver(tag, result)` gets
        each reply as it ends. Returns when no row is left and `more` gives nothing. The replies
        are those `generate_batch` gives."""
        if not first:
            return
        key = self.decode_key(first[0][1])
        if any(self.decode_key(r) != key for _, r in first):
            raise ValueError("generate_continuous: the first requests differ in their decode key")
        temperature, budget, seed, speculate = key
        entries: list[tuple[Any, GenerationRequest, int, RuleChain | None]] = []

        def encode(
            items: Sequence[tuple[Any, GenerationRequest]],
        ) -> list[tuple[list[int], RuleChain | None]]:
            out = []
            for tag, r in items:
                prompt, chain = self._encode(r.messages, r.tools), self.chain(r)
                entries.append((tag, r, len(prompt), chain))
                out.append((prompt, chain))
            return out

        def done(i: int, generated: Generated) -> None:
            tag, r, prompt_len, chain = entries[i]
            result = self._to_result(prompt_len, generated, r.stop, chain)
            self.usage.add(result.usage)
            deliver(tag, result)

        started = encode(first)
        self._generate_ids(
            [p for p, _ in started],
            temperature=temperature,
            max_new_tokens=budget,
            seed=seed,
            chains=[c for _, c in started],
            max_rows=max(1, batch_size),
            speculate=speculate,
            more=lambda room: encode(more(room, key)),
            on_done=done,
        )

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for reuse."""
