"""Prefix-cached generation: same tokens as `model.generate`, with the prompt's known prefix reused."""

from __future__ import annotations

import pytest
import torch

from diaforge.llm.drafts import PromptLookup
from diaforge.llm.prefix_cache import PrefixCachedGenerator, common_prefix, supports_prefix_cache
from diaforge.llm.rules import RuleChain, Vocab
from tests._chain import BanToken
from tests._tiny import tiny_llama

VOCAB = 96


def _tiny_llama(seed: int = 0):
    return tiny_llama(VOCAB, seed)


@pytest.fixture(scope="module")
def model():
    return _tiny_llama()


def _greedy(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)


def _reference(model, prompt: list[int], max_new_tokens: int, eos: list[int]) -> list[int]:
    """`model.generate` on the prompt alone (no padding, no cache reuse), cut after the first eos."""
    from transformers import GenerationConfig

    config = GenerationConfig(
        max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=eos, pad_token_id=0
    )
    out = model.generate(input_ids=torch.tensor([prompt]), generation_config=config)[
        0, len(prompt) :
    ].tolist()
    for i, t in enumerate(out):
        if t in eos:
            return out[: i + 1]
    return out


def _prompts(seed: int, lengths: list[int]) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(1, VOCAB, (n,), generator=g).tolist() for n in lengths]


@pytest.mark.slow(reason="greedy decoding, batched and one by one")
def test_batched_cached_decoding_equals_generate_one_by_one(model):
    prompts = _prompts(1, [5, 17, 9, 30])
    free = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])  # an id never produced
    plain = free.generate(prompts, max_new_tokens=12, choose=_greedy)
    expected = [_reference(model, p, 12, [VOCAB + 1]) for p in prompts]
    assert [g.ids for g in plain] == expected
    assert not any(g.stopped for g in plain)
    # An end-of-turn id that some rows write early: those rows leave the batch, the others go on.
    eos = expected[1][3]
    gen = PrefixCachedGenerator(model, eos_token_ids=[eos])
    out = gen.generate(prompts, max_new_tokens=12, choose=_greedy)
    assert [g.ids for g in out] == [_reference(model, p, 12, [eos]) for p in prompts]
    assert out[1].stopped and out[1].ids[-1] == eos and len(out[1].ids) <= 4
    assert any(not g.stopped and len(g.ids) == 12 for g in out)


@pytest.mark.slow(reason="greedy decoding, continuously batched and one by one")
@pytest.mark.parametrize(
    ("max_rows", "spare", "grow"), [(1, 256, True), (2, 1, True), (3, 2, True), (3, 0, False)]
)
def test_continuous_batching_equals_generate_one_by_one(model, monkeypatch, max_rows, spare, grow):
    """Waiting prompts take the places of rows that end: longer and shorter ones than the batch's
    width, a row that ends at its first token, and rows that run to the budget. The batch's
    buffers grow in place, remade when full (`spare` columns at a time) or reshaped; or, with
    `grow` off, the cache concatenates as `DynamicLayer` does."""
    from diaforge.llm import decode_rows

    monkeypatch.setattr(decode_rows, "SPARE_COLUMNS", spare)
    prompts = _prompts(4, [6, 31, 3, 12, 44, 8, 20])
    free = [_reference(model, p, 10, [VOCAB + 1]) for p in prompts]
    eos = [free[1][2], free[3][0]]  # prompt 1 ends at its third token, prompt 3 at its first
    expected = [_reference(model, p, 10, eos) for p in prompts]
    assert len(expected[3]) == 1 and any(len(e) == 10 for e in expected)
    gen = PrefixCachedGenerator(model, eos_token_ids=eos)
    gen.grow_in_place = grow
    out = gen.generate(prompts, max_new_tokens=10, choose=_greedy, max_rows=max_rows)
    assert [g.ids for g in out] == expected
    assert [g.stopped for g in out] == [e[-1] in eos for e in expected]
    # Every prompt and the reply tokens fed after it are stored for the next turn.
    for prompt, reply in zip(prompts, expected, strict=True):
        entry, reuse = gen._lookup(prompt + reply + [1])
        assert entry is not None and reuse == len(prompt) + len(reply) - 1


def test_a_row_joins_into_the_place_a_row_that_ended_left():
    """A prompt no wider than the batch is written into the free row of the buffers, the rows
    already there not copied; a wider one remakes the buffers, padding every row anew."""
    from diaforge.llm.decode_rows import DecodeRows

    def kv(values: list[int]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        t = torch.tensor(values, dtype=torch.float).view(1, 1, -1, 1).expand(1, 2, -1, 4).clone()
        return [(t, t + 100)]

    rows = DecodeRows(torch.device("cpu"))
    rows.join([(0, kv([1, 2, 3, 4]), 4, 7), (1, kv([5, 6, 7]), 3, 7)])
    buffer = rows.cache.layers[0]._kbuf.data_ptr()
    rows.select([1])  # row 0 ended: its place is free, and the column only it saw is cut
    rows.join([(2, kv([8, 9]), 2, 7)])
    layer = rows.cache.layers[0]
    assert layer._kbuf.data_ptr() == buffer and rows.active == [1, 2]
    assert rows.mask.tolist() == [[1, 1, 1], [0, 1, 1]]
    assert layer.keys[:, 0, :, 0].tolist() == [[5, 6, 7], [0, 8, 9]]
    assert layer.values[1, 0, 1:, 0].tolist() == [108, 109]
    rows.join([(3, kv([11, 12, 13, 14]), 4, 7)])  # wider than the batch, and no free row
    layer = rows.cache.layers[0]
    assert layer._kbuf.data_ptr() != buffer
    assert layer.keys[:, 0, :, 0].tolist() == [[0, 5, 6, 7], [0, 0, 8, 9], [11, 12, 13, 14]]


@pytest.mark.slow(reason="greedy decoding of prompts that join a running call")
@pytest.mark.parametrize("speculate", [0, 3])
def test_prompts_that_join_a_running_call_get_what_they_get_alone(model, speculate):
    """A server's call: two prompts start it, three more arrive while it runs (one of them ends at
    its first token) and are asked for only while a row is free; each reply is heard as it ends,
    and every reply equals the prompt's alone."""
    first, later = _prompts(5, [9, 26]), _prompts(6, [14, 4, 33])
    alone = [_reference(model, p, 9, [VOCAB + 1]) for p in first + later]
    eos = [alone[0][2], alone[3][0]]  # the first prompt ends at its third token, the fourth at its first
    expected = [_reference(model, p, 9, eos) for p in first + later]
    assert len(expected[0]) == 3 and len(expected[1]) == 9 and len(expected[3]) == 1
    ticks = [[], [later[0]], [], [later[1], later[2]]]  # what has arrived by each ask
    pending: list[list[int]] = []
    asked, heard = [], []

    def more(room: int) -> list[tuple[list[int], None]]:
        asked.append(room)
        pending.extend(ticks.pop(0) if ticks else [])
        taken = pending[:room]
        del pending[:room]
        return [(p, None) for p in taken]

    gen = PrefixCachedGenerator(model, eos_token_ids=eos)
    out = gen.generate(
        first,
        max_new_tokens=9,
        choose=_greedy,
        max_rows=2,
        speculate=speculate,
        more=more,
        on_done=lambda i, g: heard.append((i, g.ids)),
    )
    assert [g.ids for g in out] == expected
    assert sorted(heard) == [(i, e) for i, e in enumerate(expected)]
    assert not ticks and not pending and all(0 < room <= 2 for room in asked)


def test_a_call_that_takes_more_prompts_needs_a_row_cap(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])
    with pytest.raises(ValueError, match="max_rows"):
        gen.generate(_prompts(1, [4]), max_new_tokens=2, choose=_greedy, more=lambda room: [])


def test_next_turn_reuses_the_prompt_and_reply_and_gives_the_same_tokens(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])
    first = _prompts(2, [40])[0]
    reply = gen.generate([first], max_new_tokens=6, choose=_greedy)[0].ids
    assert gen.stats.reused_tokens == 0 and gen.stats.prompt_tokens == 40
    # The next turn: the whole first prompt, the reply, then new user tokens.
    second = first + reply + _prompts(3, [8])[0]
    out = gen.generate([second], max_new_tokens=6, choose=_greedy)[0].ids
    assert out == _reference(model, second, 6, [VOCAB + 1])
    # Everything but the reply's last token (chosen, never fed to the model) came from the cache.
    assert gen.stats.reused_tokens == 40 + len(reply) - 1
    # The first entry is contained in the second one's tokens, so only the longer one is kept.
    assert len(gen._entries) == 1
    assert gen.cached_tokens == len(second) + 5


def test_dialogues_share_their_common_opening(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])
    system = _prompts(4, [25])[0]
    a, b = (system + tail for tail in _prompts(5, [6, 11]))
    gen.generate([a], max_new_tokens=3, choose=_greedy)
    out = gen.generate([b], max_new_tokens=5, choose=_greedy)[0].ids
    assert out == _reference(model, b, 5, [VOCAB + 1])
    assert gen.stats.reused_tokens == common_prefix(a, b) >= 25


def test_the_time_in_prefills_and_in_passes_is_counted(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])
    gen.generate(_prompts(2, [9, 14]), max_new_tokens=6, choose=_greedy)
    seconds = gen.stats.as_dict()
    assert gen.stats.prefill_seconds > 0 and gen.stats.decode_seconds > 0
    assert set(seconds) >= {"prefill_seconds", "decode_seconds"}


def test_whole_prompt_cached_still_computes_its_last_token(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1])
    prompt = _prompts(6, [12])[0]
    first = gen.generate([prompt + [7, 8, 9]], max_new_tokens=4, choose=_greedy)[0].ids
    again = gen.generate([prompt], max_new_tokens=4, choose=_greedy)[0].ids
    assert again == _reference(model, prompt, 4, [VOCAB + 1])
    assert gen.stats.reused_tokens == len(prompt) - 1
    assert first == _reference(model, prompt + [7, 8, 9], 4, [VOCAB + 1])


def test_the_store_stays_within_its_token_bound(model):
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1], max_cached_tokens=60)
    for prompt in _prompts(7, [20, 22, 24, 26]):
        gen.generate([prompt], max_new_tokens=3, choose=_greedy)
        assert gen.cached_tokens <= 60
    assert gen.stats.evicted_entries >= 2
    # A prompt longer than the bound is generated but not stored.
    gen.clear()
    gen.generate(_prompts(8, [70]), max_new_tokens=2, choose=_greedy)
    assert gen.cached_tokens == 0


def test_the_store_stays_within_its_memory_bound(model):
    per_token = 2 * 2 * 2 * 12 * 8  # keys and values, 2 layers, 2 heads of 12, float64
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1], max_cached_bytes=60 * per_token)
    for prompt in _prompts(7, [20, 22, 24, 26]):
        gen.generate([prompt], max_new_tokens=3, choose=_greedy)
        assert gen.cached_bytes == gen.cached_tokens * per_token <= 60 * per_token
    assert gen.stats.evicted_entries >= 2
    assert 40 * per_token <= gen.stats.peak_cached_bytes <= 60 * per_token  # what metrics.json reports


@pytest.mark.parametrize("max_rows", [1, 2])
def test_a_full_store_keeps_what_the_waiting_prompts_reuse(model, max_rows):
    """Each turn asks for every dialogue's next reply in one call, in the same order. When the
    store overflows mid-call it evicts what no waiting prompt needs (here the entry just written),
    not the least recently used entry that the next prompt is about to read."""
    gen = PrefixCachedGenerator(model, eos_token_ids=[VOCAB + 1], max_cached_tokens=75)
    first = _prompts(9, [20, 20, 20])
    replies = [g.ids for g in gen.generate(first, max_new_tokens=4, choose=_greedy, max_rows=max_rows)]
    assert gen.cached_tokens == 3 * 23  # each prompt and the three reply tokens fed back
    second = [p + r + t for p, r, t in zip(first, replies, _prompts(10, [3, 3, 3]), strict=True)]
    before = gen.stats.reused_tokens
    out = gen.generate(second, max_new_tokens=4, choose=_greedy, max_rows=max_rows)
    assert [g.ids for g in out] == [_reference(model, p, 4, [VOCAB + 1]) for p in second]
    # Every dialogue found its first turn in the store (least-recently-used eviction found one).
    assert gen.stats.reused_tokens - before == 3 * 23
    assert gen.cached_tokens <= 75 and gen.stats.evicted_entries >= 1
    assert not gen._pins


def test_only_plain_full_attention_caches_qualify(model):
    from transformers import MistralConfig, MistralForCausalLM

    assert supports_prefix_cache(model)
    sliding = MistralForCausalLM(
        MistralConfig(
            vocab_size=VOCAB,
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
            sliding_window=8,
        )
    )
    assert not supports_prefix_cache(sliding)


# --------------------------------------------------------------------------------------------
# Prompt-lookup speculation
# --------------------------------------------------------------------------------------------


def test_prompt_lookup_drafts_what_followed_the_latest_match_of_the_tail():
    lookup = PromptLookup([5, 6, 7, 8, 9, 5, 6, 7, 1, 2], max_ngram=3, min_ngram=2)
    assert lookup.draft(4) == []  # the tail "1 2" was never seen before
    for t in (5, 6):
        lookup.add(t)
    assert lookup.draft(2) == [7, 1]  # "5 6" last stood before "7 1"
    lookup.add(3)
    assert lookup.draft(3) == []  # "6 3" is new and one-token matches are below min_ngram
    assert PromptLookup([4, 4], max_ngram=2, min_ngram=1).draft(3) == [4]


def test_prompt_lookup_follows_the_longest_match_and_falls_back_to_one_token():
    """With tails of up to eight tokens, "5 1 2 3" last stood before 9, while its shorter tail
    "1 2 3" stood later before 8; and a single token's match drafts when one token is allowed."""
    context = [5, 1, 2, 3, 9, 6, 1, 2, 3, 8, 5, 1, 2, 3]
    assert PromptLookup(context, max_ngram=8, min_ngram=1).draft(1) == [9]
    assert PromptLookup(context).draft(1) == [8]  # the default's tails: two or three tokens
    assert PromptLookup([4, 7, 6, 4], max_ngram=8, min_ngram=1).draft(2) == [7, 6]
    assert PromptLookup([4, 7, 6, 4]).draft(2) == []


def _repeating_prompts(seed: int) -> list[list[int]]:
    """Prompts whose own text repeats, as a listing copied into a reply does."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for n in (7, 11, 5, 9):
        block = torch.randint(1, VOCAB, (n,), generator=g).tolist()
        out.append(block * 3 + block[: n // 2])
    return out


@pytest.mark.parametrize("max_rows", [None, 2])
@pytest.mark.parametrize("with_rule", [False, True])
@pytest.mark.parametrize("overhead", [1e6, 8.0])
def test_speculation_writes_exactly_what_decoding_without_it_writes(model, max_rows, with_rule, overhead):
    """Greedy replies are token for token the same with and without drafts, with a masking rule
    applied to drafted tokens as to single ones, in fewer forward passes; whether the passes are
    as wide as the drafts (a pass's fixed cost dwarfs its columns, as on a GPU) or chosen narrower
    (`DraftWidth`)."""
    eos = [0]
    prompts = _repeating_prompts(3)
    vocab = Vocab((), (0,), lambda ids: "")

    def run(speculate: int) -> tuple[list, PrefixCachedGenerator]:
        gen = PrefixCachedGenerator(model, eos)
        gen.pass_overhead = overhead
        chains = [RuleChain([BanToken(p[-1])], vocab) for p in prompts] if with_rule else None
        out = gen.generate(
            prompts, max_new_tokens=40, choose=_greedy, chains=chains, max_rows=max_rows, speculate=speculate
        )
        return [(g.ids, g.finish) for g in out], gen

    plain, plain_gen = run(0)
    drafted, gen = run(4)
    assert drafted == plain
    assert gen.stats.accepted_tokens > 0
    assert gen.stats.forward_passes < plain_gen.stats.forward_passes


def test_a_speculated_reply_is_stored_for_the_next_turn_without_its_rejected_drafts(model):
    """The keys and values kept after a drafted reply are the prompt's and the accepted tokens'
    only: the next turn that extends them decodes as `generate` does from scratch."""
    eos = [0]
    prompt = _repeating_prompts(5)[0]
    gen = PrefixCachedGenerator(model, eos)
    gen.pass_overhead = 1e6  # every draft fed whole, so that some are rejected
    first = gen.generate([prompt], max_new_tokens=24, choose=_greedy, speculate=4)[0]
    assert gen.stats.drafted_tokens > gen.stats.accepted_tokens > 0  # some drafts were rejected
    follow = prompt + first.ids + prompt[:6]
    reused_before = gen.stats.reused_tokens
    again = gen.generate([follow], max_new_tokens=12, choose=_greedy, speculate=4)[0]
    assert gen.stats.reused_tokens - reused_before >= len(prompt) + len(first.ids) - 1
    assert again.ids == _reference(model, follow, 12, eos)


def test_a_pass_of_several_tokens_gives_the_same_logits_with_grouped_heads_in_place(monkeypatch):
    """`grouped_query_attention` only stops transformers copying key heads (4 query heads share 2
    here): left-padded rows, fed three tokens at once, get the very same logits without a single
    copy; the switch is restored after."""
    import os

    from transformers.integrations import sdpa_attention

    copies = []
    repeat_kv = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: copies.append(n) or repeat_kv(x, n))

    from diaforge.llm.decode_rows import DecodeRows
    from diaforge.llm.prefix_cache import GQA_SWITCH, grouped_query_attention

    model = _tiny_llama(seed=4).float()
    prompt = torch.randint(1, VOCAB, (1, 40), generator=torch.Generator().manual_seed(2))
    with torch.inference_mode():
        kv = [
            (layer.keys, layer.values)
            for layer in model(input_ids=prompt, use_cache=True).past_key_values.layers
        ]
        logits = []
        for grouped in (False, True):
            rows = DecodeRows(model.device)
            rows.join(
                [
                    (b, [(k[:, :, : 40 - 7 * b], v[:, :, : 40 - 7 * b]) for k, v in kv], 40 - 7 * b, 3)
                    for b in range(3)
                ]
            )
            feed = torch.randint(1, VOCAB, (3, 3), generator=torch.Generator().manual_seed(5))
            before = os.environ.get(GQA_SWITCH)
            with grouped_query_attention() if grouped else torch.inference_mode():
                out = model(
                    input_ids=feed,
                    position_ids=rows.positions.view(-1, 1) + torch.arange(3),
                    attention_mask=rows.grow_mask([3, 2, 3]),
                    past_key_values=rows.cache,
                    use_cache=True,
                )
            assert os.environ.get(GQA_SWITCH) == before
            logits.append(out.logits)
            if not grouped:
                assert copies  # two per layer: keys and values
                copies.clear()
    assert not copies
    assert torch.equal(logits[0], logits[1])


def test_freed_memory_is_handed_back_whenever_the_batch_is_remade(model, monkeypatch):
    """Rows joining and rows leaving remake the batch's buffers; each time the generator asks the C
    heap to give its free pages back (`diaforge.llm.memory`), unless told not to."""
    import diaforge.llm.prefix_cache as prefix_cache

    calls = []
    monkeypatch.setattr(prefix_cache, "release_free_memory", lambda: calls.append(1) or True)
    prompts = _repeating_prompts(7)
    gen = PrefixCachedGenerator(model, [0])
    gen.generate(prompts, max_new_tokens=6, choose=_greedy, max_rows=2)
    assert len(calls) >= 2  # the first rows joining, then rows leaving and others taking their place
    calls.clear()
    gen.release_memory = False
    gen.generate(prompts, max_new_tokens=6, choose=_greedy, max_rows=2)
    assert not calls
