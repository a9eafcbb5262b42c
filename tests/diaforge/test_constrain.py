"""Constrained call decoding: which texts are viable call lists, and that greedy decoding under the
constraint always ends in a call to a candidate with the keys and types of its schema."""

from __future__ import annotations

import json
import string

import pytest
import torch

from diaforge.llm.call_rule import CallRule
from diaforge.llm.constrain import CallGrammar, Grounding, call_start
from tests._chain import chain_of, feed, toy_vocab

SCHEMAS = {
    "get_balance": {
        "type": "object",
        "properties": {
            "account": {"type": "string"},
            "period": {"type": "string"},
            "file_format": {"type": "string", "enum": ["csv", "xlsx"]},
            "rate": {"type": "number"},
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


@pytest.mark.parametrize("seed", range(8))
def test_greedy_decoding_under_the_constraint_ends_in_a_valid_call(seed):
    """Random logits, slightly favouring the structural tokens: every step keeps the text viable,
    and the reply ends (end of turn) with a call list that parses, names a candidate and carries
    its required keys."""
    eos = len(VOCAB)
    rule = CallRule(GRAMMAR)
    chain = chain_of([rule], toy_vocab(VOCAB), max_scan=len(VOCAB) + 1)
    g = torch.Generator().manual_seed(seed)
    feed(chain, "[")
    for _ in range(2000):
        logits = torch.randn(len(VOCAB) + 1, generator=g)
        logits[[VOCAB.index('"'), VOCAB.index("}"), VOCAB.index("]"), VOCAB.index(",")]] += 2.0
        token = chain.pick(logits, int(logits.argmax()))
        if chain.accept(token) is not None:
            assert token == eos
            break
        assert GRAMMAR.viable(chain.row.text)
    else:
        pytest.fail("no end of turn")
    calls = json.loads(chain.row.text)
    assert calls and all(c["name"] in SCHEMAS for c in calls)
    for c in calls:
        assert (
            set(SCHEMAS[c["name"]].get("required", []))
            <= set(c["args"])
            <= set(SCHEMAS[c["name"]]["properties"])
        )
    assert rule.counters["fallbacks"] == 0 and rule.counters["constrained_tokens"] > 0


def test_past_the_best_tokens_the_rest_of_the_vocabulary_is_scanned():
    """When none of the best `max_scan` tokens keeps the call valid, the best one of the rest that
    does is chosen (not the model's invalid token): no fallback."""
    logits = -torch.arange(len(VOCAB) + 1, dtype=torch.float)  # the vocabulary's order is the ranking
    expected = next(i for i, piece in enumerate(VOCAB) if GRAMMAR.viable("[" + piece))
    assert expected >= 2  # "0" and "1" rank first and cannot follow "["
    rule = CallRule(GRAMMAR)
    narrow = chain_of([rule], toy_vocab(VOCAB), max_scan=2)
    feed(narrow, "[")
    assert narrow.pick(logits, 0) == expected
    assert (rule.counters["deep_scans"], rule.counters["fallbacks"]) == (1, 0)
    wide_rule = CallRule(GRAMMAR)
    wide = chain_of([wide_rule], toy_vocab(VOCAB))
    feed(wide, "[")
    assert wide.pick(logits, 0) == expected and wide_rule.counters["deep_scans"] == 0


def test_a_complete_call_list_allows_only_the_end_of_turn():
    rule = CallRule(GRAMMAR)
    chain = chain_of([rule], toy_vocab(VOCAB))
    feed(chain, '[{"name": "ping", "args": {}}]')
    logits = torch.zeros(len(VOCAB) + 1)
    logits[VOCAB.index(" ")] = 5.0  # the model would go on
    assert chain.pick(logits, VOCAB.index(" ")) == len(VOCAB)
    assert chain.accept(len(VOCAB)) == "stop"


def test_text_before_a_call_is_left_alone():
    rule = CallRule(GRAMMAR)
    chain = chain_of([rule], toy_vocab(VOCAB))
    feed(chain, "H")
    assert chain.pick(torch.zeros(len(VOCAB) + 1), 7) == 7
    assert rule.counters["constrained_tokens"] == 0


def test_a_reply_that_answers_in_words_is_left_alone_from_then_on():
    rule = CallRule(GRAMMAR)
    chain = chain_of([rule], toy_vocab(VOCAB))
    feed(chain, "<thi")
    assert chain.pick(torch.zeros(len(VOCAB) + 1), 7) == 7 and not rule.free
    feed(chain, "nk>ok</think> Wh")
    assert chain.pick(torch.zeros(len(VOCAB) + 1), 7) == 7 and rule.free
    fresh_rule = CallRule(GRAMMAR)
    fresh = chain_of([fresh_rule], toy_vocab(VOCAB))
    feed(fresh, "<think>ok</think>[")
    assert fresh.pick(torch.zeros(len(VOCAB) + 1), VOCAB.index("0")) != VOCAB.index("0")
    assert not fresh_rule.free


# --------------------------------------------------------------------------------------------
# Grounded values: strings and numbers copied from what the user said
# --------------------------------------------------------------------------------------------

SAID = ["Hi, I need the balance of account  ACC-77 please.", "For Q3 2026, and limit it to 1,000 rows."]
GROUNDED = CallGrammar(SCHEMAS, Grounding.of(SAID))


@pytest.mark.parametrize(
    "text",
    [
        '[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q3 2026"}}]',
        '[{"name": "get_balance", "args": {"account": "acc-77", "period": "q3  2026", "file_format": "xlsx"}}]',
        '[{"name": "get_balances", "args": {"accounts": ["ACC-77"], "limit": 1000}}]',
        '[{"name": "get_balances", "args": {"accounts": ["account ACC-77", "Q3"]}}]',
    ],
)
def test_values_the_user_said_are_complete_under_grounding(text):
    assert GROUNDED.state(text) == "complete"
    assert GRAMMAR.state(text) == "complete"


@pytest.mark.parametrize(
    "text",
    [
        '[{"name": "get_balance", "args": {"account": "ACC-78", "period": "Q3 2026"}}]',  # not said
        '[{"name": "get_balance", "args": {"account": "CC-77", "period": "Q3 2026"}}]',  # inside a word
        '[{"name": "get_balance", "args": {"account": "ACC-7", "period": "Q3 2026"}}]',  # ends inside one
        '[{"name": "get_balance", "args": {"account": "", "period": "Q3 2026"}}]',  # empty
        '[{"name": "get_balances", "args": {"accounts": ["ACC-77", "Lisbon"]}}]',  # one item not said
        '[{"name": "get_balances", "args": {"accounts": ["ACC-77"], "limit": 100}}]',  # a number not said
        '[{"name": "get_balances", "args": {"accounts": ["ACC-77"], "limit": 20}}]',  # part of "2026"
    ],
)
def test_values_nobody_said_are_invalid_under_grounding(text):
    assert GRAMMAR.state(text) == "complete"  # valid as types
    assert GROUNDED.state(text) == "invalid"


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ('[{"name": "get_balance", "args": {"account": "ACC-7', "open"),  # "ACC-77" may follow
        ('[{"name": "get_balance", "args": {"account": "Lis', "invalid"),
        ('[{"name": "get_balance", "args": {"account": "CC', "invalid"),  # starts inside a word
        ('[{"name": "get_balance", "args": {"account": "AC\\u00', "invalid"),  # no escapes: dead ends
        ('[{"name": "get_balance", "args": {"account": "E\\', "invalid"),
        ('[{"name": "get_balances", "args": {"accounts": ["Q3"], "limit": 10', "open"),  # 1000 may follow
        ('[{"name": "get_balances", "args": {"accounts": ["Q3"], "limit": 9', "invalid"),
        ('[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q3", "rate": 1000.', "open"),
        ('[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q3", "rate": 1000.00', "open"),
        ('[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q3", "rate": 1000.01', "invalid"),
        ('[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q3", "rate": 10000', "invalid"),
    ],
)
def test_a_value_being_written_stays_open_only_while_it_can_become_a_said_one(text, state):
    assert GROUNDED.state(text) == state


def test_an_integer_copies_only_whole_numerals_said():
    """A deal value of 3715.5 said cannot become an integer: the integer stays free rather than
    stranding the decoder at "3715"; a whole numeral said is held to."""
    said_float = CallGrammar(SCHEMAS, Grounding.of(["the deal value is 3715.5"]))
    call = '[{"name": "get_balances", "args": {"accounts": ["deal"], "limit": '
    assert said_float.state(call + "42}}]") == "complete"
    said_both = CallGrammar(SCHEMAS, Grounding.of(["3715.5 in total, 12 of them"]))
    assert said_both.state(call.replace("deal", "total") + "12}}]") == "complete"
    assert said_both.state(call.replace("deal", "total") + "3715}}]") == "invalid"


ALPHABET = [c for c in string.printable if c not in "\t\n\r\x0b\x0c"]


@pytest.mark.parametrize(
    ("said", "prefix"),
    [
        (SAID, '[{"name": "get_balance", "args": {"account": "ACC-77", "period": "Q'),  # an escape was
        (SAID, '[{"name": "get_balance", "args": {"account": "ACC-77", "period": "pl'),  # a dead end
        (SAID, '[{"name": "get_balance", "args": {"account": "Q3", "period": "a'),
        (SAID, '[{"name": "get_balances", "args": {"accounts": ["Q3"], "limit": 1'),
        # 3715.5 said, an integer asked: "3715" was a dead end when non-whole numerals counted
        (
            ["the deal value is 3715.5"],
            '[{"name": "get_balances", "args": {"accounts": ["deal"], "limit": 371',
        ),
    ],
)
def test_every_character_a_grounded_call_allows_leads_on_to_a_complete_call(said, prefix):
    """Whatever character the grounded grammar lets the decoder add to an open call, a complete
    call can still follow (else the constraint strands the decoder and falls back to the model)."""
    grammar = CallGrammar(SCHEMAS, Grounding.of(said))
    assert grammar.state(prefix) == "open"
    allowed = [c for c in ALPHABET if grammar.viable(prefix + c)]
    assert allowed
    for c in allowed:
        assert _completes(grammar, prefix + c, 40), prefix + c


def _completes(grammar: CallGrammar, text: str, depth: int) -> bool:
    """Whether adding at most `depth` characters to `text` reaches a complete call."""
    state = grammar.state(text)
    if state == "complete":
        return True
    if state == "invalid" or depth == 0:
        return False
    return any(_completes(grammar, text + c, depth - 1) for c in _next_chars(text, ALPHABET, grammar))


def _next_chars(text: str, alphabet: list[str], grammar: CallGrammar) -> list[str]:
    """The characters that keep `text` viable, the ones closing a value or a container first."""
    viable = [c for c in alphabet if grammar.viable(text + c)]
    return sorted(viable, key=lambda c: (c not in '"]}', c not in ' ,:{["', c))


def test_numbers_stay_free_where_the_user_said_none():
    """Digits inside an identifier, a date or a clock time are not numerals said."""
    grammar = CallGrammar(SCHEMAS, Grounding.of(["the account is ACC-77, from 2026-03-09 at 10:30"]))
    assert grammar.grounding is not None and grammar.grounding.numerals == ()
    assert (
        grammar.state('[{"name": "get_balances", "args": {"accounts": ["ACC-77"], "limit": 5}}]')
        == "complete"
    )


def test_grounded_decoding_copies_the_said_value_instead_of_a_corrupted_one():
    """The model prefers a corrupted copy ("Lisão" for "Lisbon"): without grounding it is written,
    with grounding the best token that keeps the value a copy of the user's words is."""
    vocab = ['[{"name": "', "ping", "get_balance", '", "args": {"', "account", '": "', "Lis", "ão", "bon",
             '", "', "period", "Q3", " 2026", '"}}]']  # fmt: skip
    eos = len(vocab)
    preferred = ["[{\"name\": \"", "get_balance", '", "args": {"', "account", '": "', "Lis", "ão",
                 '", "', "period", '": "', "Q3", " 2026", '"}}]']  # fmt: skip

    def run(grammar: CallGrammar) -> str:
        chain = chain_of([CallRule(grammar)], toy_vocab(vocab))
        for step in range(40):
            logits = torch.zeros(len(vocab) + 1)
            want = preferred[min(step, len(preferred) - 1)]
            # the model's ranking: its wanted token first, "bon" second, then vocabulary order
            logits[vocab.index("bon")] = 2.0
            logits[vocab.index(want)] = 3.0
            logits -= torch.arange(len(vocab) + 1) * 1e-3
            token = chain.pick(logits, int(logits.argmax())) if step else vocab.index(want)
            if token == eos:
                break
            chain.accept(token)
            if chain.row.text.endswith('"}}]'):
                break
        return chain.row.text

    said = ["Use Lisbon for the account, period Q3 2026."]
    free = json.loads(run(CallGrammar(SCHEMAS)))
    held = json.loads(run(CallGrammar(SCHEMAS, Grounding.of(said))))
    assert free[0]["args"]["account"] == "Lisão"
    assert held[0]["args"] == {"account": "Lisbon", "period": "Q3 2026"}
