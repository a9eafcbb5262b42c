"""Constrained call decoding: which texts are viable call lists, and that greedy decoding under the
constraint always ends in a call to a candidate with the keys and types of its schema."""

from __future__ import annotations

import json
import string

import pytest
import torch

from diaforge.llm.constrain import CallConstraint, CallGrammar, call_start

SCHEMAS = {
    "get_balance": {
        "type": "object",
        "properties": {
            "account": {"type": "string"},
            "period": {"type": "string"},
            "file_format": {"type": "string", "enum": ["csv", "xlsx"]},
        },
        "required": ["account", "period"],
    },
    "get_balances": {
        "type": "object",
        "properties": {
            "accounts": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": "integer"},
        },
        "required": ["accounts"],
    },
    "ping": {"type": "object", "properties": {}},
}
GRAMMAR = CallGrammar(SCHEMAS)


@pytest.mark.parametrize(
    "text",
    [
        '[{"name": "get_balance", "args": {"account": "A-1", "period": "2026-01"}}]',
        '[{"name": "get_balance", "args": {"period": "2026-01", "account": "say \\"hi\\"", "file_format": "csv"}}]',
        '[ {"name":"get_balances","args":{"accounts":["a","b"],"limit":3}} ]\n',
        '[{"name": "ping", "args": {}}, {"name": "ping", "args": {}}]',
    ],
)
def test_whole_valid_lists_are_complete(text):
    assert GRAMMAR.state(text) == "complete"
    for cut in range(len(text.rstrip())):
        assert GRAMMAR.state(text[:cut]) == "open", text[:cut]


@pytest.mark.parametrize(
    "text",
    [
        '[{"name": "get_bal",',  # not a candidate
        '[{"name": "delete_all"',
        '[{"name": "get_balance", "args": {}}]',  # required keys missing
        '[{"name": "get_balance", "args": {"acc": 1',  # a key the schema lacks
        '[{"name": "get_balance", "args": {"account": 7',  # a number for a string
        '[{"name": "get_balance", "args": {"account": "a", "account"',  # a key twice
        '[{"name": "get_balance", "args": {"account": "a", "period": "b", "file_format": "pdf"',  # not in the enum
        '[{"name": "get_balances", "args": {"accounts": ["a"], "limit": 2.5',  # not an integer
        '[{"name": "ping", "args": {}}] and more',
        '[{"tool": "ping"',
    ],
)
def test_texts_that_cannot_become_a_valid_call_are_invalid(text):
    assert GRAMMAR.state(text) == "invalid"


def test_the_call_list_starts_after_the_thought():
    assert call_start('<think>\nI call it.\n</think>\n[{"name"') == len("<think>\nI call it.\n</think>\n")
    assert call_start("<think>\nstill thinking [x") is None
    assert call_start("<think>ok</think>\nWhich one do you mean? [a] or [b]") is None
    assert call_start('  [{"na') == 2


VOCAB = [
    *string.printable[:95],
    '[{"name": "',
    '", "args": {',
    '"}}]',
    "get_",
    "balance",
    "_",
    '": "',
    '", "',
]


def _decode(ids: list[int]) -> str:
    return "".join(VOCAB[i] for i in ids)


@pytest.mark.parametrize("seed", range(8))
def test_greedy_decoding_under_the_constraint_ends_in_a_valid_call(seed):
    """Random logits, slightly favouring the structural tokens: every step keeps the text viable,
    and the reply ends (end of turn) with a call list that parses, names a candidate and carries
    its required keys."""
    eos = len(VOCAB)
    rule = CallConstraint(GRAMMAR, [*VOCAB, ""], [eos], _decode, max_scan=len(VOCAB) + 1)
    g = torch.Generator().manual_seed(seed)
    ids = [VOCAB.index("[")]
    for _ in range(2000):
        logits = torch.randn(len(VOCAB) + 1, generator=g)
        logits[[VOCAB.index('"'), VOCAB.index("}"), VOCAB.index("]"), VOCAB.index(",")]] += 2.0
        token = rule.choose(ids, logits)
        assert token is not None
        if token == eos:
            break
        ids.append(token)
        assert GRAMMAR.viable(_decode(ids))
    else:
        pytest.fail("no end of turn")
    calls = json.loads(_decode(ids))
    assert calls and all(c["name"] in SCHEMAS for c in calls)
    for c in calls:
        assert (
            set(SCHEMAS[c["name"]].get("required", []))
            <= set(c["args"])
            <= set(SCHEMAS[c["name"]]["properties"])
        )
    assert rule.fallbacks == 0


def test_text_before_a_call_is_left_alone():
    rule = CallConstraint(GRAMMAR, [*VOCAB, ""], [len(VOCAB)], _decode)
    assert rule.choose([VOCAB.index("H")], torch.zeros(len(VOCAB) + 1)) is None
    assert rule.steps == 0


def test_a_reply_that_answers_in_words_is_left_alone_from_then_on():
    rule = CallConstraint(GRAMMAR, [*VOCAB, ""], [len(VOCAB)], _decode)
    opening = [VOCAB.index(c) for c in "<thi"]
    assert rule.choose(opening, torch.zeros(len(VOCAB) + 1)) is None and not rule.free
    words = [VOCAB.index(c) for c in "<think>ok</think> Wh"]
    assert rule.choose(words, torch.zeros(len(VOCAB) + 1)) is None and rule.free
    call = [VOCAB.index(c) for c in "<think>ok</think>["]
    fresh = CallConstraint(GRAMMAR, [*VOCAB, ""], [len(VOCAB)], _decode)
    assert fresh.choose(call, torch.zeros(len(VOCAB) + 1)) is not None and not fresh.free
