"""Driving a decoding rule chain over a toy vocabulary (token id -> a string piece), as the
generator drives it over a tokenizer's: the tests of the rules share it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from diaforge.llm.rules import BaseRule, Choice, DecodingRule, Mask, Row, RuleChain, Vocab


def toy_vocab(pieces: Sequence[str]) -> Vocab:
    """`pieces` as a vocabulary whose last id (``len(pieces)``) is the end of turn, with no text."""
    texts = [*pieces, ""]
    return Vocab(texts, (len(pieces),), lambda ids: "".join(texts[i] for i in ids))


def chain_of(rules: Sequence[DecodingRule], vocab: Vocab, *, max_scan: int = 4096) -> RuleChain:
    chain = RuleChain(list(rules), vocab, max_scan=max_scan)
    chain.admit([])
    return chain


def feed(chain: RuleChain, text: str) -> None:
    """Accept the tokens that spell `text` one character (or piece) at a time, greedily by length."""
    texts = chain.vocab.texts
    while text:
        token = max((i for i, p in enumerate(texts) if p and text.startswith(p)), key=lambda i: len(texts[i]))
        chain.accept(token)
        text = text[len(texts[token]) :]


def decode_greedy(chain: RuleChain, scores: Callable[[str], torch.Tensor], steps: int = 300) -> str:
    """Greedy decoding under `chain`: `scores(text)` gives the model's logits after `text`."""
    for _ in range(steps):
        logits = scores(chain.row.text)
        token = chain.pick(logits, int(torch.argmax(logits)))
        if chain.accept(token) is not None:
            break
    return chain.row.text


class BanToken(BaseRule):
    """A toy masking rule: the row may never write `banned` (the model's next best stands in);
    ``bans`` counts the tokens where that changed the choice."""

    name = "ban"

    def __init__(self, banned: int) -> None:
        super().__init__()
        self.banned = banned
        self.counters = {"bans": 0}
        self._mask = Mask(lambda t: t != banned)

    def mask(self, row: Row) -> Mask:
        return self._mask

    def chosen(self, row: Row, choice: Choice) -> None:
        self.count("bans", int(choice.rank != 0))
