"""The loop stop: which token tails count as a loop, and that stopping there loses nothing a full
greedy run would have kept."""

from __future__ import annotations

import pytest
import torch
from test_prefix_cache import _reference, _tiny_llama

from diaforge.llm.loops import LoopRule, LoopStop
from diaforge.llm.prefix_cache import PrefixCachedGenerator
from diaforge.llm.rules import RuleChain, Vocab


def test_a_block_repeated_three_times_is_a_loop() -> None:
    block = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]
    ids = [1, 2, 3] + block * 3
    assert LoopStop().period(ids) == 16


def test_two_repeats_or_a_short_span_are_not_a_loop() -> None:
    block = list(range(20, 40))
    assert LoopStop().period([1, 2] + block * 2) == 0
    # Three repeats of a 4-token block cover 12 tokens, below the 48-token minimum span.
    assert LoopStop().period([9, 9, 9] + [1, 2, 3, 4] * 3) == 0
    assert LoopStop().period([1, 2, 3, 4] * 12) == 4


def test_the_loop_must_reach_the_end() -> None:
    block = list(range(50, 66))
    assert LoopStop().period(block * 3 + [1, 2, 3]) == 0


def test_ordinary_text_is_not_a_loop() -> None:
    ids = list(range(1, 400))
    assert LoopStop().period(ids) == 0


def test_checked_only_every_few_tokens() -> None:
    stop = LoopStop(every=4)
    ids = [7] + list(range(100, 116)) * 3  # 49 tokens: a loop, but 49 is not a multiple of 4
    assert stop.period(ids) == 16
    assert not stop(ids)
    assert stop(ids[1:])


@pytest.mark.parametrize(
    "kwargs", [{"min_period": 0}, {"min_period": 9, "max_period": 8}, {"min_repeats": 1}]
)
def test_bad_settings_are_refused(kwargs) -> None:
    with pytest.raises(ValueError):
        LoopStop(**kwargs)


@pytest.mark.slow(reason="greedy decoding of tiny models to a long budget")
def test_stopping_at_a_loop_keeps_a_prefix_of_the_full_greedy_reply() -> None:
    """On tiny random models (whose greedy replies fall into cycles), the loop-stopped reply is a
    prefix of the full-budget reply and ends in a loop, and the full reply runs to the budget with
    no end of turn: both are truncated, so stopping early changed the length, not the outcome. (The
    loop itself may drift into another one later; the outcome is what evaluation scores.)"""
    stop = LoopStop(min_period=1, min_span=24)
    budget = 160
    looped = 0
    for seed in (0, 1, 2):
        model = _tiny_llama(seed=seed)
        g = torch.Generator().manual_seed(11)
        for n in (9, 14, 20, 6):
            looped += _check_one(model, torch.randint(1, 96, (n,), generator=g).tolist(), stop, budget)
    assert looped >= 4


def _check_one(model, prompt: list[int], stop: LoopStop, budget: int) -> int:
    """Asserts the loop-stopped reply against the full one; 1 when the loop stop ended it."""
    full = _reference(model, prompt, budget, eos=[0])
    gen = PrefixCachedGenerator(model, [0])
    chain = RuleChain([LoopRule(stop)], Vocab((), (0,), lambda ids: ""))
    cut = gen.generate([prompt], max_new_tokens=budget, choose=lambda x: x.argmax(-1), chains=[chain])[0]
    assert full[: len(cut.ids)] == cut.ids
    if cut.finish != "loop":
        assert cut.ids == full  # no loop: the same reply, to its end of turn or the budget
        return 0
    assert stop.period(cut.ids) > 0
    # What the loop stop claims: the reply would not have ended either (truncated both ways).
    assert len(full) == budget and 0 not in full, "the full reply reached its end of turn after the loop"
    return 1
