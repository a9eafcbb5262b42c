"""Generation that reuses the key/value cache of earlier prompts (for multi-turn evaluation).

A dialogue's prompt at turn t+1 starts with its prompt at turn t (system prompt, tool listing,
history), and many dialogues share the same system-prompt opening. `PrefixCachedGenerator` keeps
the keys and values computed for earlier prompts (and the replies generated after them), finds for
each new prompt the stored entry with the longest common token prefix, and only runs the model on
the rest. Decoding then advances all rows of a batch together: each row's cache is left-padded to
the longest, with the padding masked out and every row given its own position ids, and a row that
writes an end-of-turn token (or a stop string) leaves the batch at once. With `max_rows` set, the
prompts beyond it wait, and each row that leaves is replaced by the next waiting prompt before the
following step (continuous batching): the batch stays full instead of running on with the few
rows of its longest replies. A row that joins is left-padded to the batch's width (or widens it),
and the columns no row sees any more are cut from the left.

Only models whose cache is a plain `DynamicCache` of full-attention layers qualify (Llama, Qwen,
Mistral without sliding windows, SmolLM2 ...): `supports_prefix_cache` says whether a model does,
and `HFBackend` falls back to `model.generate` otherwise. Greedy output equals `model.generate`'s
up to floating-point summation order (the prefix's keys were computed in another chunking).

Memory: each stored token costs ``2 * layers * kv_heads * head_dim * bytes`` (46 KiB for
SmolLM2-135M in fp32). The store holds up to `max_cached_bytes` (3 GiB by default, `eval run
--cache-gib`: about 68,000 tokens of SmolLM2-135M in fp32, chosen to keep the demo's evaluations
under 8 GB of resident memory, a figure reasoned in docs/results.md), and optionally up to `max_cached_tokens`; an entry that another
entry extends is dropped as redundant. Beyond the bounds it evicts the least recently used entry
that no prompt still waiting in the current `generate` call will reuse, and only then the ones
such prompts need; an evicted prompt is computed again when it comes back, which changes its
cost, not its reply (but for the summation order above). A multi-turn evaluation asks for every
dialogue's next turn in one call, in the same order each turn; plain LRU would there evict, turn
after turn, exactly the entries the call is about to read.
"""

from __future__ import annotations

import os
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from diaforge.llm.decode_rows import DecodeRows
from diaforge.llm.drafts import DraftWidth, PromptLookup
from diaforge.llm.memory import release_free_memory
from diaforge.llm.rules import LENGTH_FINISH, RuleChain, Vocab

DEFAULT_MAX_CACHED_BYTES = 3 * 2**30
"""Bytes of keys and values kept between calls (about 68,000 tokens of SmolLM2-135M in fp32)."""


def supports_prefix_cache(model: Any) -> bool:
    """Whether `model`'s cache is made of full-attention `DynamicLayer`s only (no sliding window,
    no linear attention, no encoder-decoder), which `PrefixCachedGenerator` can pad and slice."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    config = getattr(model, "config", None)
    if config is None or getattr(config, "is_encoder_decoder", False):
        return False
    try:
        cache = DynamicCache(config=config)
    except Exception:  # an architecture this cache cannot describe: use generate()
        return False
    return bool(cache.layers) and all(type(layer) is DynamicLayer for layer in cache.layers)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _Entry:
    ids: list[int]
    """The tokens whose keys and values are stored (a prompt and the reply tokens fed after it)."""
    kv: list[tuple[torch.Tensor, torch.Tensor]]
    """Per layer, keys and values of shape ``[1, kv_heads, len(ids), head_dim]``."""
    nbytes: int = 0
    """Memory the keys and values take."""


@dataclass
class CacheStats:
    """What the cache saved: prompt tokens served from it against those computed."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    evicted_entries: int = 0
    forward_passes: int = 0
    """Decoding steps run through the model (prefills not counted)."""
    drafted_tokens: int = 0
    """Tokens proposed by prompt lookup (`speculate`) and fed for verification."""
    accepted_tokens: int = 0
    """Drafted tokens the model agreed with (each saved a forward pass)."""
    prefill_seconds: float = 0.0
    """Wall time spent computing prompts (the part of each not served from the store)."""
    decode_seconds: float = 0.0
    """Wall time spent in decoding passes, the rules' picks and the drafts' checks included."""
    peak_cached_bytes: int = 0
    """The most memory the store's keys and values took at once."""
    max_cached_bytes: int = 0
    """The store's bound (`PrefixCachedGenerator.max_cached_bytes`)."""

    @property
    def reuse_share(self) -> float:
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        """The counts and the reuse share, as a run's metrics record them."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "reused_tokens": self.reused_tokens,
            "computed_tokens": self.prompt_tokens - self.reused_tokens,
            "reuse_share": round(self.reuse_share, 4),
            "evicted_entries": self.evicted_entries,
            "forward_passes": self.forward_passes,
            "drafted_tokens": self.drafted_tokens,
            "accepted_tokens": self.accepted_tokens,
            "prefill_seconds": round(self.prefill_seconds, 1),
            "decode_seconds": round(self.decode_seconds, 1),
            "peak_cached_mb": round(self.peak_cached_bytes / 2**20, 1),
            "max_cached_mb": round(self.max_cached_bytes / 2**20, 1),
        }


@dataclass
class Generated:
    """One row's output: the new token ids (up to and including an end-of-turn token) and why it stopped."""

    ids: list[int]
    finish: str
    """``"stop"`` (an end-of-turn token or a stop string), ``"length"`` (the token budget) or a
    rule's own reason (``"loop"``, `diaforge.llm.loops`)."""
    drafted: list[int] = field(default_factory=list)
    """Positions in `ids` of the tokens that came from accepted prompt-lookup drafts."""

    @property
    def stopped(self) -> bool:
        """Whether something other than the token budget ended it."""
        return self.finish != LENGTH_FINISH


class PrefixCachedGenerator:
    """Batched greedy or sampled decoding over a store of prompt caches.

    Args:
        model: a causal LM (or a PEFT model around one) for which `supports_prefix_cache` holds.
        eos_token_ids: tokens that end a turn.
        max_cached_tokens: how many tokens of keys and values to keep between calls (None: no
            bound but the bytes').
        max_cached_bytes: how much memory the kept keys and values may take.
    """

    def __init__(
        self,
        model: Any,
        eos_token_ids: Sequence[int],
        *,
        max_cached_tokens: int | None = None,
        max_cached_bytes: int = DEFAULT_MAX_CACHED_BYTES,
    ):
        self.model = model
        self.eos = set(int(t) for t in eos_token_ids)
        self.max_cached_tokens = None if max_cached_tokens is None else int(max_cached_tokens)
        self.max_cached_bytes = int(max_cached_bytes)
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._pins: Counter[int] = Counter()
        """Entries that prompts still waiting in the current `generate` call will reuse."""
        self._moved: dict[int, int] = {}
        """Pinned entries since replaced by one that extends them: old key -> new key."""
        self._next_key = 0
        self.grow_in_place = True
        """Decode into preallocated buffers (`diaforge.llm.decode_rows`); False: `DynamicLayer`'s
        concatenation, the way before (kept for `make bench`'s comparison)."""
        self.stats = CacheStats(max_cached_bytes=self.max_cached_bytes)
        self.release_memory = os.environ.get("DIAFORGE_TRIM", "1") != "0"
        """Hand freed memory back to the system whenever the batch is remade
        (`diaforge.llm.memory.release_free_memory`)."""
        self.pass_overhead: float | None = None
        """The fixed cost of a decoding pass in token columns, which decides how wide speculative
        passes are (`diaforge.llm.drafts.DraftWidth`); None: the model's device's
        (`diaforge.llm.drafts.PASS_OVERHEAD`)."""
        self._logits_to_keep = True
        self._bare = Vocab((), tuple(self.eos), lambda ids: "")
        """The vocabulary of a row without rules: its end-of-turn tokens alone."""

    # -- the store ---------------------------------------------------------------------------

    def clear(self) -> None:
        self._entries.clear()
        self._pins.clear()

    @property
    def cached_tokens(self) -> int:
        return sum(len(e.ids) for e in self._entries.values())

    @property
    def cached_bytes(self) -> int:
        return sum(e.nbytes for e in self._entries.values())

    def _best(self, prompt: list[int]) -> tuple[int | None, int]:
        """The key of the entry sharing the longest prefix with `prompt`, and that prefix's length."""
        best_key, best_len = None, 0
        for key, entry in self._entries.items():
            n = common_prefix(entry.ids, prompt)
            if n > best_len:
                best_key, best_len = key, n
        return best_key, best_len

    def _lookup(self, prompt: list[int]) -> tuple[_Entry | None, int]:
        """The entry sharing the longest prefix with `prompt`, and how many tokens to reuse (always
        leaving at least the prompt's last token to compute, whose logits start the reply)."""
        key, n = self._best(prompt)
        if key is None:
            return None, 0
        self._entries.move_to_end(key)
        return self._entries[key], min(n, len(prompt) - 1)

    def _over(self) -> bool:
        if self.max_cached_tokens is not None and self.cached_tokens > self.max_cached_tokens:
            return True
        return self.cached_bytes > self.max_cached_bytes

    def _store(self, ids: list[int], kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)
        if not ids or nbytes > self.max_cached_bytes:
            return
        if self.max_cached_tokens is not None and len(ids) > self.max_cached_tokens:
            return
        key = self._next_key
        self._next_key += 1
        for old in [k for k, e in self._entries.items() if common_prefix(e.ids, ids) == len(e.ids)]:
            del self._entries[old]  # wholly contained in the new entry, which serves its prompts as well
            if old in self._pins:
                self._pins[key] += self._pins.pop(old)
                self._moved[old] = key
        self._entries[key] = _Entry(ids, kv, nbytes)
        while self._over():
            # The least recently used entry no waiting prompt needs; failing that, the oldest.
            victim = next((k for k in self._entries if not self._pins.get(k)), next(iter(self._entries)))
            del self._entries[victim]
            self._pins.pop(victim, None)
            self.stats.evicted_entries += 1
        self.stats.peak_cached_bytes = max(self.stats.peak_cached_bytes, self.cached_bytes)

    def _pin(self, prompts: Sequence[list[int]]) -> list[int | None]:
        """Pin the entry each prompt will reuse until that prompt is prefilled; the keys, per prompt."""
        keys = [self._best(p)[0] for p in prompts]
        self._pins = Counter(k for k in keys if k is not None)
        self._moved = {}
        return keys

    def _pin_one(self, prompt: list[int]) -> int | None:
        """Pin the entry a prompt that joins a running call will reuse (the others' pins kept)."""
        key = self._best(prompt)[0]
        if key is not None:
            self._pins[key] += 1
        return key

    def _unpin(self, key: int | None) -> None:
        while key in self._moved:
            key = self._moved[key]
        if key is not None and self._pins.get(key):
            self._pins[key] -= 1
            if not self._pins[key]:
                del self._pins[key]

    # -- generation --------------------------------------------------------------------------

    @torch.inference_mode()
    def _prefill(
        self, prompt: list[int], pin: int | None = None
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Last-position logits of `prompt` and its keys and values, reusing a stored prefix; the
        entry `pin` held for this prompt (`_pin`) is released."""
        from transformers import DynamicCache

        entry, reuse = self._lookup(prompt)
        self._unpin(pin)
        self.stats.prompt_tokens += len(prompt)
        self.stats.reused_tokens += reuse
        device = self.model.device

        def cache() -> DynamicCache:  # the reused prefix, as a cache the model may append to
            if entry is None or reuse == 0:
                return DynamicCache()
            return DynamicCache(ddp_cache_data=[(k[:, :, :reuse], v[:, :, :reuse]) for k, v in entry.kv])

        suffix = torch.tensor([prompt[reuse:]], dtype=torch.long, device=device)
        positions = torch.arange(reuse, len(prompt), device=device).unsqueeze(0)
        inputs = {
            "input_ids": suffix,
            "position_ids": positions,
            "attention_mask": torch.ones(1, len(prompt), dtype=torch.long, device=device),
            "past_key_values": cache(),
            "use_cache": True,
        }
        if self._logits_to_keep:
            try:  # only the last position's logits: the vocabulary projection of the rest is waste
                out = self.model(**inputs, logits_to_keep=1)
            except TypeError:  # an architecture without the option
                self._logits_to_keep = False
                inputs["past_key_values"] = cache()
        if not self._logits_to_keep:
            out = self.model(**inputs)
        kv = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        return out.logits[:, -1, :], kv

    @torch.inference_mode()
    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int,
        choose: Callable[[torch.Tensor], torch.Tensor],
        chains: Sequence[RuleChain | None] | None = None,
        max_rows: int | None = None,
        speculate: int = 0,
        more: Callable[[int], Sequence[tuple[list[int], RuleChain | None]]] | None = None,
        on_done: Callable[[int, Generated], None] | None = None,
    ) -> list[Generated]:
        """New tokens for each prompt, decoded together, in the order of `prompts`.

        `choose` maps a ``[rows, vocab]`` logits tensor to the model's own token ids (greedy:
        argmax); `chains` (one per prompt, or None) are the rows' decoding rules
        (`diaforge.llm.rules.RuleChain`): each may mask the model's choice and end its row.
        `max_rows` caps the rows decoded at once (None: all); a row that ends gives its place to
        the next waiting prompt (continuous batching). `speculate` > 0 drafts up to that many
        tokens per row by prompt lookup (`PromptLookup`) and verifies them in one pass: for greedy
        `choose` only, where it writes what decoding without it writes.

        A server keeps one call going while requests arrive: `more(room)` is asked before every
        pass where fewer than `max_rows` rows decode and none waits, and the prompts (with their
        chains) it gives join the call, numbered after those before them; `on_done(i, generated)`
        hears of each reply as it ends, before the call returns."""
        if not prompts and more is None:
            return []
        if more is not None and max_rows is None:
            raise ValueError("a call that takes more prompts as it goes needs max_rows")
        cap = len(prompts) if max_rows is None else max(1, int(max_rows))
        waiting, pinned = deque(range(len(prompts))), self._pin(prompts)
        call = _Call(self, prompts, max_new_tokens, choose, chains, speculate, on_done)
        rows = call.rows
        while True:
            if more is not None and not waiting and len(rows.active) < cap:
                for prompt, chain in more(cap - len(rows.active)):
                    waiting.append(call.add(list(prompt), chain))
                    pinned.append(self._pin_one(prompt))
            joining, start = [], time.perf_counter()
            while waiting and len(rows.active) + len(joining) < cap:
                i = waiting.popleft()
                call.admit(i)
                joining.append((i, *self._prefill(call.prompts[i], pinned[i])))
            self.stats.prefill_seconds += time.perf_counter() - start
            if joining:
                call.join(joining)
                self._release()
            if not rows.active:
                if waiting:
                    continue
                break
            going, start = len(rows.active), time.perf_counter()
            rows.select(call.step())
            self.stats.decode_seconds += time.perf_counter() - start
            if len(rows.active) < going:
                self._release()
        return call.results()

    def _release(self) -> None:
        """The batch was remade (rows joined or left): give the freed buffers' pages back
        (`diaforge.llm.memory`)."""
        if self.release_memory:
            release_free_memory()

    def _keep(self, prompt: list[int], new: list[int], cache: Any, row: int, mask: torch.Tensor) -> None:
        """Store row `row`'s keys and values: its prompt and the reply tokens fed back so far (all
        but the last, which was chosen but never run through the model), read from the columns its
        mask shows (left padding and rejected drafts are hidden)."""
        fed = len(new) - 1
        ids = prompt + new[:fed]
        columns = mask[row].nonzero().squeeze(-1)
        if len(columns) != len(ids):
            raise RuntimeError(f"row {row}: {len(columns)} visible columns for {len(ids)} tokens")
        kv = [
            (layer.keys[row, :, columns].unsqueeze(0), layer.values[row, :, columns].unsqueeze(0))
            for layer in cache.layers
        ]
        self._store(ids, kv)


GQA_SWITCH = "TRANSFORMERS_SDPA_FORCE_GQA"
"""transformers' switch that makes its SDPA attention pass ``enable_gqa=True`` rather than copy
every key/value head once per query head it serves (`repeat_kv`)."""


@contextmanager
def grouped_query_attention() -> Iterator[None]:
    """Within: transformers' SDPA attends with grouped heads in place (`GQA_SWITCH`). For a pass of
    several tokens a row with a masked cache otherwise copies its whole cache, every layer, times
    the query heads per key head: on SmolLM2-135M (9 query heads, 3 key heads), 16 rows of about
    900 cached tokens, a pass of 2 columns cost 3.6 times a single-token one with the copies and 1.3
    times without, one of 9 columns 9.5 and 2.8 times (``pass_cost`` in bench/speculation.py), with
    the same logits to the bit. Single-token passes already avoid the copy (transformers packs their
    query heads) and are left as they were."""
    before = os.environ.get(GQA_SWITCH)
    os.environ[GQA_SWITCH] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(GQA_SWITCH, None)
        else:
            os.environ[GQA_SWITCH] = before


class _Call:
    """One `PrefixCachedGenerator.generate` call: its prompts, each row's rule chain, prompt lookup,
    drafted positions and output, and the rows decoding together (`DecodeRows`)."""

    def __init__(
        self,
        gen: PrefixCachedGenerator,
        prompts: list[list[int]],
        max_new_tokens: int,
        choose: Callable[[torch.Tensor], torch.Tensor],
        chains: Sequence[RuleChain | None] | None,
        speculate: int,
        on_done: Callable[[int, Generated], None] | None = None,
    ) -> None:
        self.gen, self.budget, self.choose, self.speculate, self.on_done = (
            gen,
            max_new_tokens,
            choose,
            speculate,
            on_done,
        )
        self.prompts: list[list[int]] = []
        self.chains: list[RuleChain] = []
        self.masking: list[bool] = []
        self.done: list[Generated | None] = []
        self.lookups: list[PromptLookup | None] = []
        self.drafted: list[list[int]] = []
        for i, prompt in enumerate(prompts):
            self.add(prompt, chains[i] if chains is not None else None)
        self.rows = DecodeRows(gen.model.device, gen.grow_in_place)
        device = getattr(gen.model.device, "type", str(gen.model.device))
        self.width = (
            DraftWidth.for_device(device) if gen.pass_overhead is None else DraftWidth(gen.pass_overhead)
        )

    def add(self, prompt: list[int], chain: RuleChain | None) -> int:
        """A prompt for this call (waiting until `admit`); its number."""
        chain = chain if chain is not None else RuleChain([], self.gen._bare)
        self.prompts.append(prompt)
        self.chains.append(chain)
        self.masking.append(chain.masks)
        self.done.append(None)
        self.lookups.append(None)
        self.drafted.append([])
        return len(self.prompts) - 1

    def admit(self, i: int) -> None:
        """Prompt `i` is about to join: its chain and its lookup start."""
        self.chains[i].admit(self.prompts[i])
        if self.speculate:
            self.lookups[i] = PromptLookup(self.prompts[i])

    def join(self, joining: list[tuple[int, torch.Tensor, Any]]) -> None:
        """Prefilled prompts (index, last logits, keys and values): each writes its first token,
        and those not ended by it join the rows."""
        firsts = self.pick(torch.cat([logits for _, logits, _ in joining]), [i for i, _, _ in joining])
        staying = []
        for (i, _, kv), t in zip(joining, firsts.tolist(), strict=True):
            if self.take(i, t):
                self.gen._store(list(self.prompts[i]), kv)  # its one token was never fed
            else:
                staying.append((i, kv, len(self.prompts[i]), t))
        self.rows.join(staying)

    def pick(self, logits: torch.Tensor, indices: list[int]) -> torch.Tensor:
        """The model's own tokens for these rows, each passed through its chain."""
        token = self.choose(logits)
        for b, i in enumerate(indices):
            if self.masking[i]:
                token[b] = self.chains[i].pick(logits[b], int(token[b]))
        return token

    def take(self, i: int, t: int) -> bool:
        """Append `t` to row `i`'s reply; True when the reply has ended."""
        chain = self.chains[i]
        if self.lookups[i] is not None:
            self.lookups[i].add(t)
        finish = chain.accept(t)
        if finish is None and len(chain.row.ids) >= self.budget:
            finish = LENGTH_FINISH
        if finish is None:
            return False
        self.done[i] = Generated(chain.row.ids, finish, self.drafted[i])
        chain.retire()
        self.width.forget(i)
        if self.on_done is not None:
            self.on_done(i, self.done[i])
        return True

    def step(self) -> list[int]:
        """One forward pass for every row (with their drafts when speculating); the rows going on."""
        rows = self.rows
        drafts = [self.lookups[i].draft(self.speculate) for i in rows.active] if self.speculate else []
        width = self.width.width(rows.active, drafts) if any(drafts) else 1
        return self.step_drafted([d[: width - 1] for d in drafts]) if width > 1 else self.step_one()

    def step_one(self) -> list[int]:
        """Feed each row its chosen token; pick the next; the rows still going."""
        rows, gen = self.rows, self.gen
        out = gen.model(
            input_ids=rows.token.view(-1, 1),
            position_ids=rows.positions.view(-1, 1),
            attention_mask=rows.grow_mask(),
            past_key_values=rows.cache,
            use_cache=True,
        )
        gen.stats.forward_passes += 1
        rows.cache = out.past_key_values
        rows.positions = rows.positions + 1
        rows.token = self.pick(out.logits[:, -1, :], rows.active)
        keep = []
        for b, i in enumerate(rows.active):
            if self.take(i, int(rows.token[b])):
                gen._keep(self.prompts[i], self.chains[i].row.ids, rows.cache, b, rows.mask)
            else:
                keep.append(b)
        return keep

    def step_drafted(self, drafts: list[list[int]]) -> list[int]:
        """Feed each row its chosen token and its draft in one pass; accept, row by row, the
        longest run of drafted tokens the model (through the row's rules) would have written
        itself, then the model's own next token; hide the rejected columns."""
        rows, gen = self.rows, self.gen
        width = 1 + max(len(d) for d in drafts)
        lengths = [1 + len(d) for d in drafts]
        feed = [
            [int(rows.token[b]), *d] + [int(rows.token[b])] * (width - lengths[b])
            for b, d in enumerate(drafts)
        ]
        device = gen.model.device
        with grouped_query_attention():
            out = gen.model(
                input_ids=torch.tensor(feed, dtype=torch.long, device=device),
                position_ids=rows.positions.view(-1, 1) + torch.arange(width, device=device),
                attention_mask=rows.grow_mask(lengths),
                past_key_values=rows.cache,
                use_cache=True,
            )
        gen.stats.forward_passes += 1
        gen.stats.drafted_tokens += sum(len(d) for d in drafts)
        rows.cache = out.past_key_values
        logits = out.logits
        free = self.choose(logits.reshape(-1, logits.shape[-1])).view(len(drafts), width).tolist()
        keep = []
        for b, i in enumerate(rows.active):
            draft, n, kept, ended = drafts[b], 0, 0, False
            for j in range(len(draft) + 1):
                t = free[b][j]
                if self.masking[i]:
                    t = self.chains[i].pick(logits[b, j], t)
                n += 1
                if j < len(draft) and t == draft[j]:
                    self.drafted[i].append(len(self.chains[i].row.ids))
                    gen.stats.accepted_tokens += 1
                    kept += 1
                ended = self.take(i, t)
                if ended or j == len(draft) or t != draft[j]:
                    break
            if draft and not ended:
                self.width.verified(i, len(draft), kept)
            rows.hide(b, width - n)
            rows.positions[b] += n
            rows.token[b] = t
            if ended:
                gen._keep(self.prompts[i], self.chains[i].row.ids, rows.cache, b, rows.mask)
            else:
                keep.append(b)
        return keep

    def results(self) -> list[Generated]:
        return [g for g in self.done if g is not None]
