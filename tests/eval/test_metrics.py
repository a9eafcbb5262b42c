"""Parity tests for diaforge.eval.metrics: every number below is worked out by hand in the comments."""

from __future__ import annotations

import asyncio
import json
from fractions import Fraction
from types import SimpleNamespace

import pytest

from diaforge.eval.judge import ConvRelJudge, parse_grade
from diaforge.eval.metrics import (
    METRIC_KEYS,
    compute_breakdowns,
    compute_metrics,
    conv_rel,
    first_call,
    metrics_by_mode,
    ngd,
    reply_texts,
    score_dialogue,
    tokenize,
    ttr,
    values_match,
)
from diaforge.eval.transcripts import Transcript, TranscriptTurn

GOLD = "open_ticket"
DISTRACTOR = "open_case"
GOLD_ARGS = {"queue": "IT", "priority": 2}


def U(text: str = "I need help") -> dict:
    return {"role": "user", "content": text}


def R(text: str, thought: str | None = None) -> dict:
    return {"role": "assistant", "kind": "reply", "content": text, "raw": text, "thought": thought}


def C(*calls: tuple[str, dict], thought: str | None = None) -> dict:
    tool_calls = [{"name": n, "args": a} for n, a in calls]
    return {
        "role": "assistant",
        "kind": "tool_calls",
        "content": "",
        "raw": json.dumps(tool_calls),
        "thought": thought,
        "tool_calls": tool_calls,
    }


def BAD(raw: str = '[{"name": "open_ticket", "args": {', reason: str = "invalid JSON") -> dict:
    return {"role": "assistant", "kind": "malformed", "content": "", "raw": raw, "reason": reason}


def T(
    id: str,
    turns: list[dict],
    *,
    seed: str | None = GOLD,
    gold_args: dict | None = None,
    mode: str = "static",
    required: int = 2,
    near_dup: bool = True,
    convrel: list[int] | None = None,
    ended: str = "tool_call",
) -> Transcript:
    return Transcript.model_validate(
        {
            "id": id,
            "mode": mode,
            "model": "m",
            "seed_tool": seed,
            "gold_args": dict(GOLD_ARGS) if gold_args is None else gold_args,
            "candidate_tools": [GOLD, DISTRACTOR, "list_queues"],
            "required_params": required,
            "has_near_duplicate": near_dup,
            "turns": turns,
            "convrel": convrel,
            "ended": ended,
        }
    )


def corpus() -> list[Transcript]:
    """Twelve dialogues, one per branch of Appendix C.1 (gold: open_ticket{queue: IT, priority: 2})."""
    return [
        # d1 no call: TAR 1.
        T("d1-no-call", [U(), R("Which queue do you mean?")], ended="t_max"),
        # d2 wrong tool: FTR 1, not aligned; tnames(c) = 1, keys(c) = 2.
        T("d2-wrong-tool", [U(), C((DISTRACTOR, {"queue": "IT", "priority": 2}))]),
        # d3 gold + distractor in one turn: FTR 1, Acc 0, aligned; hits 1 of tnames 2; keys {queue, priority}: 2 of 2.
        T("d3-extra-tool", [U(), C((GOLD, {"queue": "IT", "priority": 2}), (DISTRACTOR, {"queue": "IT"}))]),
        # d4 gold twice: FTR 1 (superfluous), Acc 0, aligned; tnames 1 (a set), keys 2 of 2.
        T(
            "d4-gold-twice",
            [U(), C((GOLD, {"queue": "IT", "priority": 2}), (GOLD, {"queue": "IT", "priority": 2}))],
        ),
        # d5 missing key: Acc 0, aligned; keys 1 of 1.
        T("d5-missing-key", [U(), C((GOLD, {"queue": "IT"}))]),
        # d6 extra key: Acc 0, aligned; keys 2 hits of 3.
        T("d6-extra-key", [U(), C((GOLD, {"queue": "IT", "priority": 2, "note": "x"}))]),
        # d7 wrong value: Acc 0, aligned; keys 2 of 2.
        T("d7-wrong-value", [U(), C((GOLD, {"queue": "HR", "priority": 2}))]),
        # d8 correct (values match after normalisation): Acc 1; keys 2 of 2.
        T("d8-correct", [U(), C((GOLD, {"queue": " it ", "priority": "2"}))]),
        # d9 correct after two clarifying turns: Acc 1; 3 assistant turns.
        T(
            "d9-clarify-then-call",
            [
                U(),
                R("Is this about a ticket or a case?", thought="two similar tools"),
                U("a ticket"),
                R("Which queue and priority?"),
                U("IT, priority 2"),
                C((GOLD, {"queue": "IT", "priority": 2})),
            ],
        ),
        # d10 malformed then nothing: TAR 1 and TAR_malformed 1.
        T("d10-malformed-only", [U(), BAD()], ended="t_max"),
        # d11 malformed then a correct call: Acc 1, 2 assistant turns (1 malformed).
        T("d11-malformed-then-call", [U(), BAD(), U("try again"), C((GOLD, {"queue": "IT", "priority": 2}))]),
        # d12 seed with no required args called with {}: Acc 1; tnames 1 hit; keys 0, gold keys 0.
        T(
            "d12-no-args",
            [U(), C(("list_queues", {}))],
            seed="list_queues",
            gold_args={},
            required=0,
            near_dup=False,
        ),
    ]


def F(num: int, den: int) -> float:
    return float(Fraction(num, den))


# --------------------------------------------------------------------------------------------
# Dialogue level
# --------------------------------------------------------------------------------------------


def test_dialogue_indicators_each_branch():
    expected = {  # id: (Acc, FTR, TAR, aligned)
        "d1-no-call": (0, 0, 1, False),
        "d2-wrong-tool": (0, 1, 0, False),
        "d3-extra-tool": (0, 1, 0, True),
        "d4-gold-twice": (0, 1, 0, True),
        "d5-missing-key": (0, 0, 0, True),
        "d6-extra-key": (0, 0, 0, True),
        "d7-wrong-value": (0, 0, 0, True),
        "d8-correct": (1, 0, 0, True),
        "d9-clarify-then-call": (1, 0, 0, True),
        "d10-malformed-only": (0, 0, 1, False),
        "d11-malformed-then-call": (1, 0, 0, True),
        "d12-no-args": (1, 0, 0, True),
    }
    for t in corpus():
        s = score_dialogue(t)
        assert (s.acc, s.ftr, s.tar, s.aligned) == expected[t.id], t.id


def test_first_call_skips_replies_and_malformed_turns():
    t = corpus()[10]  # d11
    calls = first_call(t)
    assert [c.name for c in calls] == [GOLD]
    assert first_call(corpus()[9]) is None  # d10: a malformed turn carries no calls
    assert first_call(corpus()[0]) is None


def test_only_the_first_tool_bearing_turn_counts():
    # A wrong call first, then the right one: c(d) is the wrong one.
    t = T("late-fix", [U(), C((DISTRACTOR, {"queue": "IT"})), U("no, a ticket"), C((GOLD, GOLD_ARGS))])
    s = score_dialogue(t)
    assert (s.acc, s.ftr, s.tar) == (0, 1, 0)


def test_ftr_counts_every_call_not_the_set():
    # Two calls to the same distractor: 2 wrong calls. Gold + two distractors: 2.
    t1 = T("x1", [U(), C((DISTRACTOR, {}), (DISTRACTOR, {}))])
    t2 = T("x2", [U(), C((GOLD, GOLD_ARGS), (DISTRACTOR, {}), ("made_up_endpoint", {}))])
    # Three calls to the gold tool: 2 superfluous.
    t3 = T("x3", [U(), C((GOLD, GOLD_ARGS), (GOLD, GOLD_ARGS), (GOLD, GOLD_ARGS))])
    assert [score_dialogue(t).ftr for t in (t1, t2, t3)] == [2, 2, 2]
    # Mean over 3 dialogues: 6 / 3 = 2, above 1 as the paper's definition allows.
    assert compute_metrics([t1, t2, t3])["FTR"] == pytest.approx(2.0, abs=1e-12)


def test_no_tool_expected():
    # seed_tool None: g(d) = (∅, ∅). No call -> Acc 1 (and TAR 1); any call is a false positive.
    quiet = T("n1", [U("thanks, bye"), R("Goodbye!")], seed=None, gold_args={}, ended="reference_end")
    eager = T("n2", [U("thanks, bye"), C((GOLD, GOLD_ARGS))], seed=None, gold_args={})
    assert (score_dialogue(quiet).acc, score_dialogue(quiet).tar) == (1, 1)
    assert (score_dialogue(eager).acc, score_dialogue(eager).ftr, score_dialogue(eager).aligned) == (
        0,
        1,
        False,
    )
    m = compute_metrics([quiet, eager])
    # TCP: 0 hits / 1 predicted name; TCR, PKR: nothing in G -> 0.0 by convention; PKP 0 / 2 keys.
    assert (m["TCP"], m["TCR"], m["PKP"], m["PKR"]) == (0.0, 0.0, 0.0, 0.0)


# --------------------------------------------------------------------------------------------
# Corpus level
# --------------------------------------------------------------------------------------------


def test_corpus_metrics_by_hand():
    m = compute_metrics(corpus())
    assert tuple(m) == METRIC_KEYS
    assert m["n"] == 12
    # Acc: d8, d9, d11, d12 -> 4 / 12.
    assert m["Acc"] == pytest.approx(F(4, 12), abs=1e-6)
    # FTR: d2, d3, d4 one each -> 3 / 12.
    assert m["FTR"] == pytest.approx(F(3, 12), abs=1e-12)
    # TAR: d1, d10 -> 2 / 12.
    assert m["TAR"] == pytest.approx(F(2, 12), abs=1e-6)
    # M = d3..d9, d11, d12 (9 dialogues), one name hit each = 9.
    # Σ_C |tnames(c)| = d2 1 + d3 2 + d4 1 + d5..d9 5 + d11 1 + d12 1 = 11; Σ_G |tnames(g)| = 12.
    assert m["TCP"] == pytest.approx(F(9, 11), abs=1e-6)
    assert m["TCR"] == pytest.approx(F(9, 12), abs=1e-12)
    # Key hits over M: d3 2 + d4 2 + d5 1 + d6 2 + d7 2 + d8 2 + d9 2 + d11 2 + d12 0 = 15.
    # Σ_C |keys(c)| = d2 2 + d3 2 + d4 2 + d5 1 + d6 3 + d7 2 + d8 2 + d9 2 + d11 2 + d12 0 = 18.
    # Σ_G |keys(g)| = 11 * 2 + 0 = 22.
    assert m["PKP"] == pytest.approx(F(15, 18), abs=1e-6)
    assert m["PKR"] == pytest.approx(F(15, 22), abs=1e-6)
    # Assistant turns: 1 each except d9 (3) and d11 (2) -> 10 + 3 + 2 = 15; malformed: d10, d11 -> 2.
    assert m["malformed"] == pytest.approx(F(2, 15), abs=1e-6)
    assert m["malformed_dialogues"] == pytest.approx(F(2, 12), abs=1e-6)
    # No call and a malformed turn: d10 only.
    assert m["TAR_malformed"] == pytest.approx(F(1, 12), abs=1e-6)
    assert m["ConvRel"] is None


def test_rounding_is_six_places_and_exact_fractions_hold():
    m = compute_metrics(corpus())
    # Rounded values are within 5e-7 of the fraction; exact where the fraction is short.
    assert m["Acc"] == round(1 / 3, 6)
    assert m["TCR"] == 0.75
    assert m["FTR"] == 0.25


def test_precision_recall_stay_in_unit_interval_and_zero_denominators():
    assert compute_metrics([])["n"] == 0
    empty = compute_metrics([])
    assert all(empty[k] == 0.0 for k in METRIC_KEYS if k not in ("n", "ConvRel"))
    # Only abstentions: no predicted names or keys -> TCP = PKP = 0.0 (zero denominator), TCR = PKR = 0 / 12.
    m = compute_metrics([T("a", [U(), R("hm?")]), T("b", [U(), R("ok?")])])
    assert (m["TCP"], m["TCR"], m["PKP"], m["PKR"], m["TAR"]) == (0.0, 0.0, 0.0, 0.0, 1.0)
    full = compute_metrics(corpus())
    assert all(0.0 <= full[k] <= 1.0 for k in ("TCP", "TCR", "PKP", "PKR"))


def test_metrics_by_mode_and_breakdowns():
    static = corpus()
    dynamic = [t.model_copy(update={"mode": "dynamic"}) for t in corpus()[:3]]
    by_mode = metrics_by_mode(static + dynamic)
    assert list(by_mode) == ["static", "dynamic"]
    assert by_mode["static"] == compute_metrics(static)
    # d1..d3: Acc 0/3, FTR 2/3, TAR 1/3.
    assert by_mode["dynamic"]["FTR"] == pytest.approx(F(2, 3), abs=1e-6)
    assert list(metrics_by_mode(dynamic)) == ["dynamic"]

    b = compute_breakdowns(static)
    assert set(b) == {"by_near_duplicate", "by_required_args"}
    # Only d12 has no near-duplicate and 0 required args; it is a correct call.
    assert b["by_near_duplicate"]["no_near_duplicate"]["n"] == 1
    assert b["by_near_duplicate"]["no_near_duplicate"]["Acc"] == 1.0
    assert b["by_near_duplicate"]["near_duplicate"]["n"] == 11
    # Near-duplicate slice: Acc d8, d9, d11 -> 3 / 11.
    assert b["by_near_duplicate"]["near_duplicate"]["Acc"] == pytest.approx(F(3, 11), abs=1e-6)
    assert set(b["by_required_args"]) == {"0", "2"}  # empty buckets are left out
    t3 = T("many", [U(), R("which?")], required=5)
    assert set(compute_breakdowns([t3])["by_required_args"]) == {"3+"}


# --------------------------------------------------------------------------------------------
# Value matching
# --------------------------------------------------------------------------------------------

MATCH_TABLE = [
    # (pred, gold, matches)
    ("IT", "IT", True),
    (2, 2, True),
    (3, 3.0, True),
    ("437292", 437292, True),
    ("12.50", 12.5, True),
    ("1e3", 1000, True),
    ("-4", -4, True),
    ("12a", 12, False),
    ("1,000", 1000, False),
    ("1_000", 1000, False),
    ("nan", 12, False),
    ("007", "7", False),  # two strings are never compared as numbers
    (True, True, True),
    (True, False, False),
    ("true", True, True),
    (" FALSE ", False, True),
    ("yes", True, False),
    (1, True, False),
    (0, False, False),
    ("New  York ", "new york", True),
    ("Straße", "STRASSE", True),  # case folding
    ("ＡＢＣ　１２", "abc 12", True),  # NFKC: full-width letters, digits and space
    ("new-york", "new york", False),  # no fuzzy matching
    ("TR-20931", "TR-20932", False),
    ("2026-02-03", "2026-02-03", True),
    ("2026/02/03", "2026-02-03", True),
    ("2026-02-03T00:00:00", "2026-02-03", True),
    ("2026-02-03 00:00", "2026-02-03", True),
    ("2026-02-03T09:30:00", "2026-02-03", False),
    ("2026-02-04", "2026-02-03", False),
    ("2026/02-03", "2026-02-03", False),  # mixed separators are not a date
    ("2026-02-03T10:00", "2026-02-03T10:00:00", True),
    ("2026-02-03T10:00:00+01:00", "2026-02-03T09:00:00Z", True),  # same instant
    ("2026-02-03T10:00:00+01:00", "2026-02-03T10:00:00Z", False),
    ("2026-02-03T10:00:00+05:00", "2026-02-03T10:00:00", True),  # naive vs aware: wall clocks
    ("2026-02-03T10:00:00", "2026-02-03T10:00:01", False),
    ([1, "a"], ["1", "A"], True),
    ([1, 2], [2, 1], False),
    ([1], [1, 1], False),
    ({"a": 1, "b": [True]}, {"a": "1", "b": ["true"]}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ({"a": 1}, {"A": 1}, False),
    (None, None, True),
    (None, "", False),
    (None, 0, False),
    ("", None, False),
    ("1", [1], False),
    ({"a": 1}, [1], False),
]


@pytest.mark.parametrize(("pred", "gold", "expected"), MATCH_TABLE)
def test_values_match_table(pred, gold, expected):
    assert values_match(pred, gold) is expected
    assert values_match(gold, pred) is expected  # symmetric


def test_acc_needs_exact_key_set_and_matching_values():
    ok = T("v1", [U(), C((GOLD, {"queue": "it", "priority": "2"}))])
    wrong_case_key = T("v2", [U(), C((GOLD, {"Queue": "IT", "priority": 2}))])
    null_value = T("v3", [U(), C((GOLD, {"queue": "IT", "priority": None}))])
    assert [score_dialogue(t).acc for t in (ok, wrong_case_key, null_value)] == [1, 0, 0]


# --------------------------------------------------------------------------------------------
# TTR and NGD
# --------------------------------------------------------------------------------------------


def test_tokenizer():
    assert tokenize("Don't stop, DON'T! It's 3 o'clock.") == [
        "don't",
        "stop",
        "don't",
        "it's",
        "3",
        "o'clock",
    ]
    assert tokenize("") == []


def test_ttr_and_ngd_by_hand():
    texts = ["The cat sat.", "The cat ran."]
    # Tokens: the cat sat the cat ran -> 6, distinct {the, cat, sat, ran} = 4.
    assert ttr(texts) == pytest.approx(F(4, 6), abs=1e-12)
    # Bigrams inside each reply: (the cat)(cat sat) + (the cat)(cat ran) -> 4, distinct 3.
    # Crossing replies would add (sat the) and give 4 / 5.
    assert ngd(texts, 2) == pytest.approx(F(3, 4), abs=1e-12)
    # Trigrams: (the cat sat), (the cat ran) -> 2 / 2.
    assert ngd(texts, 3) == pytest.approx(1.0, abs=1e-12)
    # 4-grams: none inside a 3-token reply -> 0.0 (crossing would give some).
    assert ngd(texts, 4) == 0.0
    assert ttr([]) == 0.0 and ngd(["..."], 2) == 0.0
    assert ttr(["Don't stop, don't"]) == pytest.approx(F(2, 3), abs=1e-12)


def test_conversational_metrics_use_reply_text_only():
    t = T(
        "txt",
        [
            U("user words never count"),
            R("The cat sat.", thought="secret thinking words"),
            U("and?"),
            BAD(raw="garbage garbage garbage"),
            U("and?"),
            R("The cat ran."),
            U("ok"),
            C((GOLD, {"queue": "words in call json"})),
        ],
    )
    assert reply_texts([t]) == ["The cat sat.", "The cat ran."]
    m = compute_metrics([t])
    assert m["TTR"] == pytest.approx(round(4 / 6, 6), abs=1e-12)
    assert m["NGD2"] == 0.75
    assert m["NGD3"] == 1.0
    assert m["NGD4"] == 0.0


# --------------------------------------------------------------------------------------------
# ConvRel
# --------------------------------------------------------------------------------------------


def test_convrel_none_when_not_computed():
    assert conv_rel(corpus()) is None
    assert compute_metrics(corpus())["ConvRel"] is None
    # An empty grade list is "no grades", not a zero.
    assert conv_rel([T("e", [U(), R("x")], convrel=[])]) is None


def test_convrel_grade_mapping():
    a = T("a", [U(), R("x"), U(), R("y")], convrel=[3, 2])  # (1 + 0.5) / 2 = 0.75
    b = T("b", [U(), R("x")], convrel=[1])  # 0
    c = T("c", [U(), R("x")])  # not graded: left out
    # Mean over graded dialogues: (0.75 + 0) / 2 = 0.375.
    assert conv_rel([a, b, c]) == pytest.approx(0.375, abs=1e-12)
    assert compute_metrics([a, b, c])["ConvRel"] == 0.375
    assert conv_rel([T("d", [U(), R("x"), U(), R("y"), U(), R("z")], convrel=[2, 2, 3])]) == pytest.approx(
        F(2, 3), abs=1e-12
    )


def test_convrel_grades_are_validated():
    with pytest.raises(ValueError, match="1, 2 or 3"):
        T("bad", [U(), R("x")], convrel=[4])
    with pytest.raises(ValueError, match="assistant turns"):
        T("long", [U(), R("x")], convrel=[3, 3])


@pytest.mark.parametrize(
    ("answer", "grade"),
    [
        ("Score: 3", 3),
        ("score = **2**", 2),
        ("SCORE:1", 1),
        ("I'd give it a 2.", 2),
        ("<think>between 1 and 2</think>\nScore: 3", 3),
        ("Score: 4", None),
        ("Score: 2.5", None),
        ("I cannot grade this.", None),
        ("", None),
        ("10 out of 10", None),
    ],
)
def test_parse_grade(answer, grade):
    assert parse_grade(answer) == grade


class FakeJudgeBackend:
    """Answers with canned texts, in order, and records what it was asked."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    async def chat(self, messages, *, temperature=None, max_tokens=None, seed=None):
        self.calls.append(
            {"messages": messages, "temperature": temperature, "max_tokens": max_tokens, "seed": seed}
        )
        return SimpleNamespace(text=self.answers.pop(0))


def test_judge_grade_parses_answer():
    backend = FakeJudgeBackend(["Score: 3", "Hmm. Score: 2", "no idea"])
    judge = ConvRelJudge(backend)
    prefix = [{"role": "user", "content": "Open a ticket for IT"}]
    assert asyncio.run(judge.grade(prefix, "Which priority?")) == 3
    assert asyncio.run(judge.grade(prefix, "Which priority?")) == 2
    assert asyncio.run(judge.grade(prefix, "Which priority?")) is None
    sent = backend.calls[0]
    assert sent["temperature"] == 0.0 and sent["seed"] == 0 and sent["max_tokens"] > 0
    prompt = sent["messages"][-1]["content"]
    assert "USER: Open a ticket for IT" in prompt and "Which priority?" in prompt
    assert "1 = off-topic" in prompt and "3 = fully grounded" in prompt


def test_judge_grades_every_assistant_turn_with_calls_as_json():
    t = T(
        "j",
        [
            U("Open a ticket"),
            R("Which queue?", thought="PRIVATE THOUGHT"),
            U("IT, priority 2"),
            C((GOLD, {"queue": "IT", "priority": 2})),
        ],
    )
    backend = FakeJudgeBackend(["Score: 3", "Score: 2"])
    grades = asyncio.run(ConvRelJudge(backend).grade_transcript(t))
    assert grades == [3, 2]
    assert len(backend.calls) == 2
    first, second = (c["messages"][-1]["content"] for c in backend.calls)
    assert "(no earlier messages)" not in first and "USER: Open a ticket" in first
    assert "ASSISTANT: Which queue?" in second  # the earlier reply is in the prefix
    assert '"name": "open_ticket"' in second and '"queue": "IT"' in second  # the call as JSON
    assert all("PRIVATE THOUGHT" not in c["messages"][-1]["content"] for c in backend.calls)
    # Feed the grades back: ConvRel = (1 + 0.5) / 2.
    graded = t.model_copy(update={"convrel": grades})
    assert compute_metrics([graded])["ConvRel"] == 0.75


def test_judge_skips_unparseable_answers_and_annotates():
    t1 = T("a1", [U(), R("x"), U(), R("y")])
    t2 = T("a2", [U(), R("z")])
    backend = FakeJudgeBackend(["Score: 1", "gibberish", "Score: 3"])
    out = asyncio.run(ConvRelJudge(backend).annotate([t1, t2], concurrency=1))
    assert [t.convrel for t in out] == [[1], [3]]
    assert t1.convrel is None  # copies, the input is untouched


def test_transcript_turn_consistency():
    with pytest.raises(ValueError):
        TranscriptTurn(role="assistant", kind="tool_calls", tool_calls=[])
    with pytest.raises(ValueError):
        TranscriptTurn(role="user", content="x", kind="reply")
    with pytest.raises(ValueError):
        TranscriptTurn(role="assistant", content="x")
