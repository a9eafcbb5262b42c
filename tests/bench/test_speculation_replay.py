"""`bench/speculation.py`'s replay: decoding with drafts, counted from the replies of a run without
them, gives the forward passes and drafted tokens the generator itself gives."""

from __future__ import annotations

import pytest
import torch

from diaforge.bench.speculation import _record_calls, _replays, replay
from diaforge.llm.prefix_cache import PrefixCachedGenerator
from tests._tiny import tiny_llama

VOCAB = 64


@pytest.fixture(scope="module")
def model():
    return tiny_llama(VOCAB, seed=5)


def _prompts() -> list[list[int]]:
    """Prompts whose own text repeats (as a listing copied into a reply does), of several lengths."""
    g = torch.Generator().manual_seed(11)
    out = []
    for n in (7, 11, 5, 9, 6, 13):
        block = torch.randint(1, VOCAB, (n,), generator=g).tolist()
        out.append(block * 3 + block[: n // 2])
    return out


def _greedy(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)


@pytest.mark.parametrize("max_rows", [None, 2, 4])
@pytest.mark.parametrize("overhead", [4.0, 16.0, 1e6])
def test_the_replay_counts_what_the_generator_counts(model, max_rows, overhead):
    prompts, eos = _prompts(), [3]
    plain = PrefixCachedGenerator(model, eos)
    calls: list = []
    assert _record_calls(plain, calls) == 48.0  # the CPU's overhead, none being set
    plain.generate(prompts, max_new_tokens=30, choose=_greedy, max_rows=max_rows)
    plain.generate(prompts[:3], max_new_tokens=30, choose=_greedy, max_rows=max_rows)
    drafted = PrefixCachedGenerator(model, eos)
    drafted.pass_overhead = overhead
    for batch in (prompts, prompts[:3]):
        drafted.generate(batch, max_new_tokens=30, choose=_greedy, max_rows=max_rows, speculate=4)
    counted = replay(calls, 4, overhead)
    stats = drafted.stats
    assert stats.accepted_tokens > 0
    assert (counted["forward_passes"], counted["drafted_tokens"], counted["accepted_tokens"]) == (
        stats.forward_passes,
        stats.drafted_tokens,
        stats.accepted_tokens,
    )
    assert replay(calls, 0, overhead)["forward_passes"] == plain.stats.forward_passes


def test_the_replays_report_says_whether_the_run_was_matched(model):
    prompts = _prompts()
    plain, calls = PrefixCachedGenerator(model, [3]), []
    overhead = _record_calls(plain, calls)
    plain.generate(prompts, max_new_tokens=20, choose=_greedy, max_rows=2)
    drafted = PrefixCachedGenerator(model, [3])
    drafted.generate(prompts, max_new_tokens=20, choose=_greedy, max_rows=2, speculate=4)
    report = _replays(calls, 4, overhead, drafted.stats.forward_passes)
    assert report["matches_run"] is True
    assert not _replays(calls, 4, overhead, drafted.stats.forward_passes + 1)["matches_run"]
    wide = report["by_overhead"]["unbounded"]
    assert wide["pass_ratio"] <= report["by_overhead"]["16"]["pass_ratio"]
    assert wide["columns"] >= report["by_overhead"]["16"]["columns"]
