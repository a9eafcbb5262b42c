"""Chat backend over a local transformers causal LM folder (no server, no model hub).

The prompt is the tokenizer's own chat template (`add_generation_prompt=True`, `tools=` passed
through when given), generation stops at the end-of-turn token (the model's eos ids plus the
template's end-of-turn marker such as `<|im_end|>` or `<|eot_id|>`), and only the new tokens are
decoded. A reply that reached the token budget with neither an end-of-turn token nor a stop
string comes back with `finish_reason="length"` (cut off), one ended by the loop stop
(`loop_stop`, `diaforge.llm.loops`: its tail repeats one block over and over) with `"loop"`, any
other with `"stop"`.
Temperature 0 (or None with `default_temperature=None`) is greedy; otherwise tokens are sampled
with a `torch.Generator` seeded by `seed`, so a seeded request gives the same reply every time
and never touches torch's global random state.

`generate` blocks, so `chat` runs it in a worker thread (`asyncio.to_thread`) behind a lock: one
generation at a time per backend, while the event loop stays free for other agents. For
throughput (evaluation), `generate_batch` generates several conversations together.

With `prefix_cache=True` (the default) and a model whose cache allows it (plain full-attention
layers: Llama, Qwen, SmolLM2 ...), generation goes through `PrefixCachedGenerator`: the keys and
values of earlier prompts and replies are kept, so a dialogue's next turn only computes what was
added since (and dialogues share their common system-prompt opening), and a finished row leaves
its batch at once. Other models, or `prefix_cache=False`, use `model.generate` with left padding.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import torch

from diaforge.llm.base import BackendConfigError, ChatResult, Usage
from diaforge.llm.loops import LOOP_FINISH, LoopStop
from diaforge.llm.prefix_cache import PrefixCachedGenerator, supports_prefix_cache

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


class _StopOnStrings:
    """Stopping criterion: a row is done once its decoded new text contains a stop string.

    transformers' own `stop_strings` needs a tokenizer whose vocabulary it can reconstruct as
    text, which fails for some tokenizers; decoding the tail of each row works for all."""

    def __init__(self, tokenizer: Any, stop: list[str], prompt_width: int) -> None:
        self.tokenizer = tokenizer
        self.stop = [s for s in stop if s]
        self.prompt_width = prompt_width
        # A stop string of n characters spans at most n tokens (plus a little for merges).
        self.window = max(len(s) for s in self.stop) + 4

    def holds_stop(self, new_ids: list[int]) -> bool:
        """Whether the decoded tail of a row's new tokens contains a stop string."""
        tail = self.tokenizer.decode(new_ids[-self.window :], skip_special_tokens=True)
        return any(s in tail for s in self.stop)

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        tails = input_ids[:, max(self.prompt_width, input_ids.shape[1] - self.window) :].tolist()
        done = [self.holds_stop(tail) for tail in tails]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class _StopOnLoop:
    """Stopping criterion of `model.generate`: a row is done once its new tokens loop (`LoopStop`)."""

    def __init__(self, loop_stop: LoopStop, prompt_width: int) -> None:
        self.loop_stop = loop_stop
        self.prompt_width = prompt_width

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        done = [self.loop_stop(row) for row in input_ids[:, self.prompt_width :].tolist()]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def _row_constraint(constraints: list[Any] | None) -> Any:
    """The `constrain` hook of `PrefixCachedGenerator.generate` for per-prompt constraints."""
    if not constraints or all(c is None for c in constraints):
        return None

    def constrain(index: int, new_ids: list[int], logits: torch.Tensor) -> int | None:
        rule = constraints[index]
        return None if rule is None else rule.choose(new_ids, logits)

    return constrain


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
            many as its memory bound, `prefix_cache.DEFAULT_MAX_CACHED_BYTES`, holds).
        loop_stop: end a reply whose tail loops (`diaforge.llm.loops.LoopStop`) with
            ``finish_reason="loop"``; None (the default) lets it run to the budget.
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
        loop_stop: LoopStop | None = None,
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
        self._use_prefix_cache(prefix_cache, max_cached_tokens)
        self.loop_stop = loop_stop

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
        loop_stop: LoopStop | None = None,
    ) -> HFBackend:
        """Wrap an already loaded model (e.g. a base model with a PEFT adapter) and tokenizer."""
        self = cls.__new__(cls)
        self._setup(model, tokenizer, model_name, max_new_tokens, default_temperature, top_p)
        self._use_prefix_cache(prefix_cache, max_cached_tokens)
        self.loop_stop = loop_stop
        return self

    def _use_prefix_cache(self, wanted: bool, max_cached_tokens: int | None) -> None:
        self.prefix_cache: PrefixCachedGenerator | None = None
        if wanted and supports_prefix_cache(self.hf_model):
            self.prefix_cache = PrefixCachedGenerator(
                self.hf_model, self.eos_token_ids, max_cached_tokens=max_cached_tokens
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

    def _end_of_turn_ids(self) -> list[int]:
        ids: list[int] = []

        def add(value: Any) -> None:
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if v is not None and int(v) not in ids:
                    ids.append(int(v))

        add(getattr(self.hf_model.generation_config, "eos_token_id", None))
        add(self.tokenizer.eos_token_id)
        template = str(self.tokenizer.chat_template)
        vocab = self.tokenizer.get_vocab()
        for token in END_OF_TURN_TOKENS:
            if token in template and token in vocab:
                add(vocab[token])
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

    def _generate_ids(
        self,
        prompts: list[list[int]],
        *,
        temperature: float | None,
        max_new_tokens: int,
        seed: int | None,
        stop: list[str] | None,
        constraints: list[Any] | None = None,
        max_rows: int | None = None,
    ) -> list[list[int]]:
        """Left-pad, generate, and return each row's new tokens up to and including its first
        end-of-turn token (which `completion_tokens` counts, as servers do). `constraints` holds
        one `CallConstraint` (or None) per prompt: constrained call decoding, greedy and
        prefix-cached only. `max_rows`: through the prefix cache, the most rows decoded at once
        (the rest wait and take the place of rows that end)."""
        constrained = constraints is not None and any(c is not None for c in constraints)
        if constrained and (self.prefix_cache is None or temperature):
            raise BackendConfigError(
                f"{self.model}: constrained call decoding needs greedy decoding through the prefix cache"
            )
        if self.prefix_cache is not None:
            return self._generate_cached(
                prompts,
                temperature=temperature,
                max_new_tokens=max_new_tokens,
                seed=seed,
                stop=stop,
                constraints=constraints,
                max_rows=max_rows,
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
        processors = LogitsProcessorList()
        if temperature:
            processors.append(_SeededSampler(temperature, self.top_p, seed))
        criteria = StoppingCriteriaList()
        if stop and any(stop):
            criteria.append(_StopOnStrings(self.tokenizer, list(stop), width))
        if self.loop_stop is not None:
            criteria.append(_StopOnLoop(self.loop_stop, width))
        with self._thread_lock, torch.inference_mode():
            output = self.hf_model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                logits_processor=processors,
                stopping_criteria=criteria,
            )
        rows = []
        eos = set(self.eos_token_ids)
        for row in output[:, width:].tolist():
            kept = []
            for token in row:
                kept.append(token)
                if token in eos:
                    break
            else:
                # A row stopped early (stop string) while others went on is padded after its end.
                while kept and kept[-1] == self.pad_token_id:
                    kept.pop()
            rows.append(kept)
        return rows

    def _generate_cached(
        self,
        prompts: list[list[int]],
        *,
        temperature: float | None,
        max_new_tokens: int,
        seed: int | None,
        stop: list[str] | None,
        constraints: list[Any] | None = None,
        max_rows: int | None = None,
    ) -> list[list[int]]:
        """`_generate_ids` through the prefix cache (same contract)."""
        sampler = _SeededSampler(temperature, self.top_p, seed) if temperature else None

        def choose(logits: torch.Tensor) -> torch.Tensor:
            if sampler is not None:
                logits = sampler(None, logits)
            return logits.argmax(dim=-1)

        stops = _StopOnStrings(self.tokenizer, list(stop), 0) if stop and any(stop) else None
        loops = self.loop_stop

        def stopped(new_ids: list[int]) -> bool:
            return (stops is not None and stops.holds_stop(new_ids)) or (loops is not None and loops(new_ids))

        with self._thread_lock:
            generated = self.prefix_cache.generate(
                prompts,
                max_new_tokens=max_new_tokens,
                choose=choose,
                stopped_by_text=stopped if stops is not None or loops is not None else None,
                constrain=_row_constraint(constraints),
                max_rows=max_rows,
            )
        return [g.ids for g in generated]

    def _to_result(
        self, prompt_len: int, new_ids: list[int], stop: list[str] | None, max_new_tokens: int
    ) -> ChatResult:
        text = self.tokenizer.decode(
            [t for t in new_ids if t not in self.eos_token_ids], skip_special_tokens=True
        )
        stopped = any(t in self.eos_token_ids for t in new_ids)
        if stop:
            cuts = [text.find(s) for s in stop if s and s in text]
            if cuts:
                text = text[: min(cuts)]
                stopped = True
        # No end-of-turn token and no stop string within the budget: the reply was cut off.
        finish = "stop" if stopped or len(new_ids) < max_new_tokens else "length"
        if finish == "stop" and not stopped and self.loop_stop is not None and self.loop_stop.period(new_ids):
            finish = LOOP_FINISH
        usage = Usage(prompt_tokens=prompt_len, completion_tokens=len(new_ids), requests=1)
        return ChatResult(text=text, usage=usage, model=self.model, finish_reason=finish)

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
        prompt = self._encode(messages, tools)
        budget = max_tokens or self.max_new_tokens
        new_ids = self._generate_ids(
            [prompt],
            temperature=self._effective_temperature(temperature),
            max_new_tokens=budget,
            seed=seed,
            stop=stop,
        )[0]
        result = self._to_result(len(prompt), new_ids, stop, budget)
        self.usage.add(result.usage)
        return result

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
        self,
        conversations: list[list[dict[str, Any]]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        tools: list[dict[str, Any]] | list[list[dict[str, Any]] | None] | None = None,
        stop: list[str] | None = None,
        batch_size: int = 8,
        constraints: list[Any] | None = None,
    ) -> list[ChatResult]:
        """Replies to several conversations, in their order, generated `batch_size` at a time
        with left padding (conversations of similar length are grouped to limit padding). Through
        the prefix cache the batch is continuous: every conversation goes to one call that decodes
        `batch_size` rows at once, and a row that ends gives its place to the next conversation.

        `tools` is either one list of tool specs shared by every conversation, or one entry per
        conversation (a list of specs or None). Greedy replies equal one-by-one `chat` replies;
        sampled replies with a seed are reproducible for the same batch composition.
        `constraints` (one per conversation, or None) constrain the call lists of greedy replies
        (`diaforge.llm.constrain`).
        """
        if not conversations:
            return []
        if tools and all(t is None or isinstance(t, list) for t in tools):
            if len(tools) != len(conversations):
                raise ValueError(f"tools has {len(tools)} entries for {len(conversations)} conversations")
            per_item: list[Any] = list(tools)
        else:
            per_item = [tools] * len(conversations)
        prompts = [self._encode(m, t) for m, t in zip(conversations, per_item, strict=True)]
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        results: list[ChatResult | None] = [None] * len(prompts)
        effective = self._effective_temperature(temperature)
        budget = max_tokens or self.max_new_tokens
        size = max(1, batch_size)
        # Through the prefix cache one call takes every prompt and keeps `size` rows decoding;
        # `model.generate` takes `size` prompts at a time.
        step = len(order) if self.prefix_cache is not None else size
        for start in range(0, len(order), step):
            chunk = order[start : start + step]
            rows = self._generate_ids(
                [prompts[i] for i in chunk],
                temperature=effective,
                max_new_tokens=budget,
                seed=None if seed is None else seed + start,
                stop=stop,
                constraints=None if constraints is None else [constraints[i] for i in chunk],
                max_rows=size,
            )
            for i, new_ids in zip(chunk, rows, strict=True):
                results[i] = self._to_result(len(prompts[i]), new_ids, stop, budget)
                self.usage.add(results[i].usage)
        return [r for r in results if r is not None]

    async def aclose(self) -> None:
        """Nothing to release: the model stays loaded for reuse."""
