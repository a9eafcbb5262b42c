"""The token budget of a run (`max_new_tokens`): as given, or ``auto``, measured on the
benchmark in the model's own tokenizer (`run_budget`), and recorded with where it came from
(`Budget`, in ``metrics.json``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diaforge.errors import InputError
from diaforge.eval.models import ModelSpec, load_tokenizer
from diaforge.format import PromptFormat
from diaforge.schema import Dialogue

AUTO_MARGIN = 0.25
"""`auto` budget: the longest reference assistant turn plus this share of it..."""
AUTO_MIN_MARGIN = 32
"""... and at least this many tokens (room for the end-of-turn token and a wordier model)."""
FALLBACK_MAX_NEW_TOKENS = 384
"""`auto` budget of a benchmark with no reference assistant turns (an imported peer benchmark)."""


def reference_turn_texts(bench: Iterable[Dialogue], fmt: PromptFormat | None = None) -> list[str]:
    """Every reference assistant turn of a benchmark as prompt-mode text, as a model trained in
    `fmt` must write it: with its thought, unless ``fmt.target_reasoning`` is 'drop'."""
    fmt = fmt or PromptFormat()
    return [fmt.target_text(t) for d in bench for t in d.turns if t.role == "assistant"]


@dataclass(frozen=True)
class Budget:
    """The token budget of a run and where it came from (recorded in ``metrics.json``)."""

    max_new_tokens: int
    """The cap passed to the backend."""
    source: str
    """``auto`` (from the benchmark) or ``explicit`` (given on the command line)."""
    longest_reference_turn: int | None = None
    """``auto``: the longest reference assistant turn, in tokens (None for ``explicit``)."""
    counted_with: str | None = None
    """``auto``: ``tokenizer`` (the model's), ``characters`` (no local tokenizer: one token per
    character, an upper bound for byte-level BPE on ASCII text) or ``fallback`` (no reference
    assistant turns: `FALLBACK_MAX_NEW_TOKENS`)."""
    with_thoughts: bool | None = None
    """``auto``: whether the reference turns were counted with their thoughts (the format's
    `target_reasoning` is 'keep')."""

    def describe(self) -> str:
        if self.source != "auto":
            return f"max_new_tokens {self.max_new_tokens} (given)"
        if self.counted_with == "fallback":
            return (
                f"max_new_tokens {self.max_new_tokens} (auto: the benchmark has no reference assistant turns)"
            )
        unit = "tokens" if self.counted_with == "tokenizer" else "characters, no local tokenizer"
        thoughts = (
            "" if self.with_thoughts is None else (" and thought" if self.with_thoughts else ", no thought")
        )
        return (
            f"max_new_tokens {self.max_new_tokens} (auto: longest reference assistant turn "
            f"{self.longest_reference_turn} {unit} with its end-of-turn token{thoughts}, plus {AUTO_MARGIN:.0%}, "
            f"at least {AUTO_MIN_MARGIN})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_new_tokens": self.max_new_tokens,
            "source": self.source,
            "longest_reference_turn": self.longest_reference_turn,
            "counted_with": self.counted_with,
            "with_thoughts": self.with_thoughts,
        }


def auto_max_new_tokens(
    bench: Iterable[Dialogue],
    count: Callable[[str], int],
    counted_with: str,
    fmt: PromptFormat | None = None,
) -> Budget:
    """The ``auto`` budget: the longest reference assistant turn of `bench` as a model trained in
    `fmt` writes it (see `reference_turn_texts`), measured with `count`, plus
    ``max(AUTO_MIN_MARGIN, ceil(AUTO_MARGIN * longest))``; `FALLBACK_MAX_NEW_TOKENS` when the
    benchmark has no assistant turn."""
    fmt = fmt or PromptFormat()
    lengths = [count(text) for text in reference_turn_texts(bench, fmt)]
    if not lengths:
        return Budget(FALLBACK_MAX_NEW_TOKENS, "auto", None, "fallback")
    longest = max(lengths)
    margin = max(AUTO_MIN_MARGIN, math.ceil(AUTO_MARGIN * longest))
    return Budget(longest + margin, "auto", longest, counted_with, fmt.target_reasoning == "keep")


def token_counter(model: str, backend: str) -> tuple[Callable[[str], int], str]:
    """How `auto_max_new_tokens` measures text for this model: its tokenizer when it is a local
    folder (always for `hf` and `vllm`; for `openai` when `model` names a local model folder),
    else characters. The end-of-turn token the model must also write is counted."""
    tokenizer = None
    if backend != "openai":
        tokenizer = load_tokenizer(model)
    elif Path(model).is_dir():
        try:
            tokenizer = load_tokenizer(model)
        except (InputError, OSError, ValueError):  # a folder that is not a model: count characters
            tokenizer = None
    if tokenizer is not None:
        return (lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1), "tokenizer"
    return (lambda text: len(text) + 1), "characters"


def run_budget(requested: int | str, spec: ModelSpec, bench: Sequence[Dialogue]) -> Budget:
    """The token budget of a run: an explicit number as given, else (``auto``) the longest
    reference assistant turn of the whole benchmark file (not only the sampled dialogues), written
    as the model's prompt format has it write turns (without thoughts for `target_reasoning:
    drop`), in the model's tokenizer, plus a margin (`auto_max_new_tokens`)."""
    if requested != "auto":
        return Budget(int(requested), "explicit")
    count, counted_with = token_counter(spec.model, spec.backend)
    return auto_max_new_tokens(bench, count, counted_with, spec.prompt_format)
