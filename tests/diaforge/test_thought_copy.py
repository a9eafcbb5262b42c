"""Copy rules of the lookup thoughts: which tool a description names, which thoughts break a copy
span, and that greedy decoding under the rule writes the listing's name, signature and call where
the model would have written another candidate's."""

from __future__ import annotations

import string

import pytest
import torch

from diaforge.format.prompt import tool_signature
from diaforge.llm.call_rule import CallRule
from diaforge.llm.constrain import CallGrammar
from diaforge.llm.thought_copy import Listed, ThoughtCopy, ThoughtRule, name_matches, thought_of
from diaforge.schema import Tool
from tests._chain import chain_of, decode_greedy, toy_vocab

ONE_KEY = {"type": "object", "properties": {"contract_id": {"type": "string"}}, "required": ["contract_id"]}
TWO_KEYS = {
    "type": "object",
    "properties": {"contract_id": {"type": "string"}, "note": {"type": "string"}},
    "required": ["contract_id", "note"],
}
TOOLS = [
    Tool(
        name="send_for_esignature_parallel",
        description="Send a final contract for electronic signature to every signer at once.",
        parameters=ONE_KEY,
    ),
    Tool(
        name="send_for_esignature_sequential",
        description="Send a final contract for electronic signature in the order of the signer list.",
        parameters=ONE_KEY,
    ),
    Tool(
        name="void_envelope", description="Void a sent signature envelope with a note.", parameters=TWO_KEYS
    ),
]
LISTED = [Listed.of(t) for t in TOOLS]
COPY = ThoughtCopy(TOOLS)


@pytest.mark.parametrize(
    ("description", "names"),
    [
        ("in the order of the signer list", ["send_for_esignature_sequential"]),
        ("to every signer at once", ["send_for_esignature_parallel"]),
        ("void an envelope", ["void_envelope"]),
        # words every listed tool holds weigh little, and none shared leaves every tool
        ("a final contract", ["send_for_esignature_parallel", "send_for_esignature_sequential"]),
        ("book a hotel", [t.name for t in TOOLS]),
    ],
)
def test_a_description_names_the_listed_tools_that_share_its_rarest_words(description, names):
    assert name_matches(description, LISTED) == names


def test_the_lookup_span_is_the_listing_signature_and_required_keys():
    assert LISTED[2].lookup == f"{tool_signature(TOOLS[2])}. Required: contract_id, note."


@pytest.mark.parametrize(
    ("thought", "broken"),
    [
        ("Candidates: a, b. What each does: in the order of the signer list (send_for_esignature_s", None),
        (
            "Candidates: a, b. What each does: in the order of the signer list (send_for_esignature_p",
            "in the",
        ),
        (
            "What each does: at once (send_for_esignature_parallel); in the order of the signer list (void",
            "; in",
        ),
        ("The user chose in the order of the signer list (send_for_esignature_sequential). ", None),
        ("The user chose in the order of the signer list (send_for_esignature_parallel). ", "The user"),
        # after a choice, the tool is the chosen one, its signature and its required keys verbatim
        (
            "The user chose the signer list (send_for_esignature_sequential). The tool is send_for_esignature_s",
            None,
        ),
        (
            "The user chose the signer list (send_for_esignature_sequential). The tool is send_for_esignature_p",
            "The tool",
        ),
        (
            "The tool is void_envelope(contract_id*: string, note*: string). Required: contract_id, note. Known",
            None,
        ),
        (
            "The tool is void_envelope(contract_id*: string, note*: string). Required: contract_id.",
            "The tool",
        ),
        ("The tool is void_envelope(contract_id*: string). Req", "The tool"),
        ("Nothing here is a copy (a parenthesis) of anything", None),
    ],
)
def test_a_copy_span_is_broken_where_it_leaves_the_listing(thought, broken):
    """`broken` names where the first span that leaves the listing begins (None: none does)."""
    assert COPY.broken(thought) == (None if broken is None else thought.index(broken))


def test_spans_written_before_and_skipped_spans_are_not_checked_again():
    thought = "The user chose at once (send_for_esignature_sequential). Nothing is known"
    assert COPY.broken(thought) == 0
    assert COPY.broken(thought, since=len(thought) - 5) is None
    assert COPY.broken(thought, skip=frozenset({0})) is None


def test_the_open_thought_of_a_reply():
    assert thought_of("<think>The user") == "The user"
    assert thought_of("  <think>x</think>[") is None
    assert thought_of("Hello") is None


# A model that prefers to miscopy: greedy decoding with and without the rule.
def _script(name: str) -> str:
    tool = next(t for t in TOOLS if t.name == name)
    return (
        "<think>The user chose in the order of the signer list (" + name + "). The tool is "
        + tool_signature(tool) + ". Required: contract_id. Nothing is missing, so I call it.</think>"
        + '[{"name": "' + name + '", "args": {"contract_id": "C-1"}}]'
    )  # fmt: skip


WRONG, RIGHT = _script("send_for_esignature_parallel"), _script("send_for_esignature_sequential")
PIECES = ["<think>", "The user chose ", "in the order of the signer list", " (", "send_for_esignature_",
          "parallel", "sequential", "). ", "The tool is ", "(contract_id*: string)", ". Required: ",
          "contract_id", ". Nothing is missing, so I call it.", "</think>", '[{"name": "', '", "args": {"',
          '": "', "C-1", '"}}]']  # fmt: skip
VOCAB = [*string.printable[:95], *PIECES]
EOS = len(VOCAB)


def _model(text: str) -> torch.Tensor:
    """Scores that follow WRONG where the text allows it, else RIGHT; longer pieces first."""
    scores = torch.full((EOS + 1,), -10.0)
    for i, piece in enumerate(VOCAB):
        if WRONG.startswith(text + piece):
            scores[i] = 10 + len(piece) / 100
        elif RIGHT.startswith(text + piece):
            scores[i] = 5 + len(piece) / 100
    return scores


def _call_rule() -> CallRule:
    return CallRule(CallGrammar({t.name: t.parameters for t in TOOLS}))


def test_greedy_decoding_under_the_rule_copies_the_listing_where_the_model_would_not():
    assert (
        decode_greedy(chain_of([_call_rule()], toy_vocab(VOCAB)), _model) == WRONG
    )  # the model alone miscopies
    thought, call = ThoughtRule(ThoughtCopy(TOOLS)), _call_rule()
    assert decode_greedy(chain_of([thought, call], toy_vocab(VOCAB)), _model) == RIGHT
    assert thought.counters["thought_copies"] >= 1 and thought.counters["copy_fallbacks"] == 0
    assert list(call.grammar.tools) == ["send_for_esignature_sequential"]  # the call follows the thought


def test_the_thought_rule_talks_to_the_call_rule_through_the_row_only():
    """The settled tool travels in the row's notes: a call rule of another chain is untouched."""
    thought, call, other = ThoughtRule(ThoughtCopy(TOOLS)), _call_rule(), _call_rule()
    chain = chain_of([thought, call], toy_vocab(VOCAB))
    decode_greedy(chain, _model)
    assert chain.row.notes == {"tool": "send_for_esignature_sequential"}
    assert len(other.grammar.tools) == len(TOOLS)
