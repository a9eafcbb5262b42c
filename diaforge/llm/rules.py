"""Decoding rules: one protocol for every rule that shapes or ends a reply, and one chain that
applies them to each row a generator decodes.

A rule lives for one reply (one row). The generator **admits** the row (`DecodingRule.admit`,
with the row's `Row`: its prompt, and later its accepted tokens and their text), then, at every
step, asks each rule for a **mask** of the tokens it allows next (`DecodingRule.mask`: a `Mask`,
or None when the rule has no opinion at this step), picks the highest-scoring token every mask
allows, tells each masking rule what was picked (`DecodingRule.chosen`: its rank, whether the rest
of the vocabulary had to be scanned, whether no token fitted and the model's own choice stood),
**advances** every rule by the accepted token (`DecodingRule.advance`, which may end the row with a
finish reason such as ``"loop"``), and finally **retires** it (`DecodingRule.retire`). A rule keeps
its own state between steps, so a step costs what the new token adds, not a re-reading of the
reply; its `counters` are one flat dict, summed over rows by `RuleChain.counters`.

`RuleChain` applies the rules in the order `diaforge.llm.decoding` gives them (the `order` of each
field's `Rule`): rules that end a reply first (stop strings, the loop stop), then the thought's copy
spans, then the call list. Rules talk to each other only through the row's `Row.notes` (the thought
rule leaves the tool its thought settled on; the call rule reads it), never through each other's
state.

The chain is executor-neutral: `diaforge.llm.prefix_cache.PrefixCachedGenerator` drives it one row
at a time, and `ChainProcessor` / `ChainStopper` drive it inside ``model.generate`` as a
transformers `LogitsProcessor` and `StoppingCriteria`.

Adding a rule: docs/extending.md, "A decoding rule" (its module, one `DecodingConfig` field, its tests).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from diaforge.llm.decoding import DecodingConfig, decoding_keys, rule_of

if TYPE_CHECKING:
    import torch

    from diaforge.schema import Tool

__all__ = [
    "EOS_FINISH",
    "LENGTH_FINISH",
    "Choice",
    "DecodingRule",
    "Mask",
    "Row",
    "RuleChain",
    "RuleContext",
    "StopStrings",
    "Vocab",
    "ChainProcessor",
    "ChainStopper",
    "build_chain",
]

EOS_FINISH = "stop"
"""The finish reason of a row that wrote an end-of-turn token or a stop string (OpenAI's word)."""
LENGTH_FINISH = "length"
"""The finish reason of a row cut by its token budget."""
MAX_SCAN = 4096
"""How many of the best-scoring tokens a mask is tested on before the rest of the vocabulary."""


@dataclass(frozen=True)
class Vocab:
    """What the rules know of the tokenizer: each token's text alone, the end-of-turn ids, and the
    decoder of a whole reply (which, unlike joining token texts, joins bytes split across tokens)."""

    texts: Sequence[str]
    """Token id -> its text decoded alone; special tokens as empty text."""
    eos: tuple[int, ...]
    """End-of-turn token ids, the first the one a rule writes when it ends a reply."""
    decode: Callable[[list[int]], str]

    @classmethod
    def of(cls, tokenizer: Any, eos_ids: Sequence[int]) -> Vocab:
        """The vocabulary of a transformers tokenizer (texts computed once: keep the result)."""
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        texts = ["" if i in special else tokenizer.decode([i]) for i in range(len(tokenizer))]
        return cls(
            texts, tuple(int(t) for t in eos_ids), lambda ids: tokenizer.decode(ids, skip_special_tokens=True)
        )


@dataclass
class Row:
    """One reply being decoded, as every rule of its chain sees it."""

    prompt: list[int]
    """The prompt's token ids."""
    vocab: Vocab
    ids: list[int] = field(default_factory=list)
    """The reply's accepted tokens so far."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What one rule tells a later one (``"tool"``: the tool the thought settled on)."""
    _text: str | None = None

    @property
    def text(self) -> str:
        """The reply so far, decoded whole (end-of-turn tokens left out); computed once per token."""
        if self._text is None:
            self._text = self.vocab.decode([t for t in self.ids if t not in self.vocab.eos])
        return self._text

    def append(self, token: int) -> None:
        self.ids.append(int(token))
        self._text = None


@dataclass(frozen=True)
class Mask:
    """The tokens a rule allows at one step: those in `tokens` when it is given (a short list,
    tested in score order), else every token for which `allows` holds. With `deep` false only the
    best `MAX_SCAN` tokens are tried; if none of them passes, the rule gives way for this step."""

    allows: Callable[[int], bool]
    tokens: tuple[int, ...] | None = None
    deep: bool = True


@dataclass(frozen=True)
class Choice:
    """What the chain did with a rule's mask at one step."""

    token: int
    """The token written."""
    rank: int | None
    """Its place in score order among the tokens tried (0: the model's own choice); None when no
    allowed token was found and the model's own choice stood (`fallback`)."""
    deep: bool = False
    """The best `MAX_SCAN` tokens held none that every mask allows: the rest were scanned."""

    @property
    def fallback(self) -> bool:
        return self.rank is None


@runtime_checkable
class DecodingRule(Protocol):
    """One rule of one row (module docstring). `counters` is a flat ``{name: int}``."""

    name: str
    counters: dict[str, int]

    def admit(self, row: Row) -> None:
        """The row joins the batch; its prompt is known, no token yet."""

    def mask(self, row: Row) -> Mask | None:
        """The tokens this rule allows next, or None where it allows any."""

    def chosen(self, row: Row, choice: Choice) -> None:
        """What was written at a step where this rule's mask applied."""

    def advance(self, row: Row, token: int) -> str | None:
        """The row accepted `token` (already in `row.ids`); a finish reason ends the row."""

    def retire(self, row: Row) -> None:
        """The row has ended (or left); release what the rule holds."""


class BaseRule:
    """Defaults of every hook, so a rule writes only the hooks it needs."""

    name = "rule"

    def __init__(self) -> None:
        self.counters: dict[str, int] = {}

    def admit(self, row: Row) -> None:
        return None

    def mask(self, row: Row) -> Mask | None:
        return None

    def chosen(self, row: Row, choice: Choice) -> None:
        return None

    def advance(self, row: Row, token: int) -> str | None:
        return None

    def retire(self, row: Row) -> None:
        return None

    def count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n


@dataclass(frozen=True)
class RuleContext:
    """What a rule's factory may read when a row's chain is built: the decoding settings, the
    vocabulary, the candidate tools whose calls the row may write, what the user said, the stop
    strings of the request."""

    decoding: DecodingConfig
    vocab: Vocab
    candidates: tuple[Tool, ...] = ()
    said: tuple[str, ...] = ()
    stop: tuple[str, ...] = ()


class StopStrings(BaseRule):
    """Ends a row once its decoded tail holds one of the request's stop strings (finish
    ``"stop"``; the text is cut before it when the reply is made). transformers' own stop strings
    need a vocabulary it can rebuild as text, which some tokenizers lack; decoding the tail of
    the row works for all."""

    name = "stop_strings"

    def __init__(self, stop: Sequence[str]) -> None:
        super().__init__()
        self.stop = [s for s in stop if s]
        # A stop string of n characters spans at most n tokens (plus a little for merges).
        self.window = max((len(s) for s in self.stop), default=0) + 4

    def advance(self, row: Row, token: int) -> str | None:
        tail = row.vocab.decode(row.ids[-self.window :])
        return EOS_FINISH if any(s in tail for s in self.stop) else None


class RuleChain:
    """The rules of one row, applied in order (module docstring)."""

    def __init__(self, rules: Sequence[DecodingRule], vocab: Vocab, *, max_scan: int = MAX_SCAN) -> None:
        self.rules = list(rules)
        self.vocab = vocab
        self.max_scan = max_scan
        self.row: Row | None = None

    @property
    def masks(self) -> bool:
        """Whether any rule of the chain may mask tokens (greedy decoding only)."""
        return any(type(r).mask is not BaseRule.mask for r in self.rules)

    def admit(self, prompt: Sequence[int]) -> Row:
        self.row = Row(list(prompt), self.vocab)
        for rule in self.rules:
            rule.admit(self.row)
        return self.row

    def pick(self, logits: torch.Tensor, free: int) -> int:
        """The token to write: `free` (the model's own choice) unless a rule's mask excludes it,
        then the best-scoring token every mask allows (the model's choice again when none does)."""
        row = self.row
        masks = [(rule, m) for rule in self.rules if (m := rule.mask(row)) is not None]
        if not masks:
            return free
        token, rank, deep = self._search([m for _, m in masks], logits, free)
        choice = Choice(free if token is None else token, rank, deep)
        for rule, _ in masks:
            rule.chosen(row, choice)
        return choice.token

    def _search(
        self, masks: list[Mask], logits: torch.Tensor, free: int
    ) -> tuple[int | None, int | None, bool]:
        import torch

        def fits(t: int) -> bool:
            return all(m.allows(t) for m in masks)

        listed = [m.tokens for m in masks if m.tokens is not None]
        if listed:
            allowed = [t for t in listed[0] if all(t in other for other in listed[1:])]
            order = sorted(allowed, key=lambda t: -float(logits[t]))
            for rank, t in enumerate(order):
                if fits(t):
                    return t, rank, False
            return None, None, False
        if fits(free):
            return free, 0, False
        scores = logits.float()
        k = min(self.max_scan, scores.shape[-1])
        best = torch.topk(scores, k).indices
        for rank, t in enumerate(best.tolist()):
            if t != free and fits(t):
                return t, rank, False
        if k >= scores.shape[-1] or not all(m.deep for m in masks):
            return None, None, False
        rest = torch.ones_like(scores, dtype=torch.bool)
        rest[best] = False
        others = torch.nonzero(rest).squeeze(-1)
        order = others[torch.argsort(scores[others], descending=True)]
        for rank, t in enumerate(order.tolist(), start=k):
            if fits(t):
                return t, rank, True
        return None, None, True

    def accept(self, token: int) -> str | None:
        """Append `token` to the row and advance every rule; the finish reason when the row ends
        here (``"stop"`` for an end-of-turn token, else the first rule's reason), else None."""
        row = self.row
        row.append(token)
        if token in self.vocab.eos:
            return EOS_FINISH
        finish = None
        for rule in self.rules:
            reason = rule.advance(row, token)
            finish = finish or reason
        return finish

    def retire(self) -> None:
        for rule in self.rules:
            rule.retire(self.row)

    def counters(self) -> dict[str, int]:
        """Every rule's counters, summed by name."""
        return sum_counters([self])


def sum_counters(chains: Sequence[RuleChain]) -> dict[str, int]:
    """The counters of many chains' rules, summed by name (in first-seen order)."""
    total: dict[str, int] = {}
    for chain in chains:
        for rule in chain.rules:
            for key, n in rule.counters.items():
                total[key] = total.get(key, 0) + n
    return total


class ChainProcessor:
    """The chains of a batch inside ``model.generate``: a transformers `LogitsProcessor` that
    feeds each row's last token to its chain and leaves only the chain's pick possible. Rows whose
    chain has ended are left alone (generate pads them). `width` is the padded prompt length."""

    def __init__(
        self, chains: Sequence[RuleChain], width: int, choose: Callable[[torch.Tensor], torch.Tensor]
    ) -> None:
        self.chains = list(chains)
        self.width = width
        self.choose = choose
        self.finish: list[str | None] = [None] * len(self.chains)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        import torch

        new = input_ids.shape[1] - self.width
        free = self.choose(scores)
        out = torch.full_like(scores, float("-inf"))
        for b, chain in enumerate(self.chains):
            if new > 0 and self.finish[b] is None and len(chain.row.ids) < new:
                self.finish[b] = chain.accept(int(input_ids[b, -1]))
            token = int(free[b]) if self.finish[b] is not None else chain.pick(scores[b], int(free[b]))
            out[b, token] = 0.0
        return out


class ChainStopper:
    """The stopping criterion that goes with a `ChainProcessor`: a row is done once its chain has
    given a finish reason for a token it accepted, which the processor learns one step late; this
    criterion accepts the newest token itself so the row stops at once."""

    def __init__(self, processor: ChainProcessor) -> None:
        self.processor = processor

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        import torch

        p = self.processor
        new = input_ids.shape[1] - p.width
        for b, chain in enumerate(p.chains):
            if p.finish[b] is None and len(chain.row.ids) < new:
                p.finish[b] = chain.accept(int(input_ids[b, -1]))
        done = [f is not None for f in p.finish]
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


def build_chain(
    decoding: DecodingConfig,
    vocab: Vocab,
    *,
    candidates: Sequence[Any] = (),
    said: Sequence[str] = (),
    stop: Sequence[str] = (),
) -> RuleChain:
    """The `RuleChain` of one row: the stop strings of the request first, then
    the rule of every field that is on, in the order of their `Rule`s. `candidates` are the
    tools the row may call, `said` what the user said (grounded values copy it)."""
    context = RuleContext(decoding, vocab, tuple(candidates), tuple(said), tuple(s for s in stop if s))
    rules: list[tuple[int, Any]] = []
    if context.stop:
        rules.append((0, StopStrings(context.stop)))
    for name in decoding_keys(type(decoding)):
        rule = rule_of(type(decoding), name)
        if rule is None or rule.factory is None or getattr(decoding, name) is not True:
            continue
        built = _load(rule.factory)(context)
        if built is not None:
            rules.append((rule.order, built))
    return RuleChain([r for _, r in sorted(rules, key=lambda pair: pair[0])], vocab)


def _load(path: str) -> Any:
    """The callable a ``"module:attr.attr"`` path names."""
    module, _, attrs = path.partition(":")
    target: Any = importlib.import_module(module)
    for attr in attrs.split("."):
        target = getattr(target, attr)
    return target
