"""Parity tests for diaforge.eval.anatomy: every count below is worked out by hand in the comments."""

from __future__ import annotations

import json

import pytest

from diaforge.eval.anatomy import (
    ANATOMY_KEYS,
    anatomy_breakdowns,
    anatomy_by_mode,
    asks,
    compute_anatomy,
    dialogue_anatomy,
    said_before_call,
    value_grounded,
)
from diaforge.eval.compare import compare_runs
from diaforge.eval.metrics import compute_metrics
from diaforge.eval.report import eval_settings, flatten_metrics, score_transcripts, write_run
from diaforge.eval.tables import anatomy_table
from diaforge.eval.transcripts import Transcript

GOLD = "open_ticket"
DISTRACTOR = "open_case"
GOLD_ARGS = {"queue": "IT", "priority": 2}


def U(text: str = "I need help") -> dict:
    return {"role": "user", "content": text}


def R(text: str) -> dict:
    return {"role": "assistant", "kind": "reply", "content": text, "raw": text}


def C(*calls: tuple[str, dict]) -> dict:
    tool_calls = [{"name": n, "args": a} for n, a in calls]
    return {
        "role": "assistant",
        "kind": "tool_calls",
        "raw": json.dumps(tool_calls),
        "tool_calls": tool_calls,
    }


BAD = {"role": "assistant", "kind": "malformed", "raw": '[{"name": ', "reason": "invalid JSON"}
CUT = {"role": "assistant", "kind": "truncated", "raw": "Which que", "reason": "token budget"}


def T(id: str, turns: list[dict], *, seed: str | None = GOLD, mode: str = "static", **kw) -> Transcript:
    record = {
        "id": id,
        "mode": mode,
        "model": "m",
        "seed_tool": seed,
        "gold_args": dict(GOLD_ARGS) if seed == GOLD else {},
        "candidate_tools": [GOLD, DISTRACTOR, "list_queues"],
        "required_params": 2,
        "has_near_duplicate": True,
        "turns": turns,
        "ended": "tool_call",
    }
    record.update(kw)
    return Transcript.model_validate(record)


def corpus(mode: str = "static") -> list[Transcript]:
    """Ten dialogues (gold: open_ticket{queue: IT, priority: 2}); per dialogue: asks first, called,
    right tool, right keys, right values, values, grounded."""
    return [
        # a1: asks; right tool, keys and values ("it" matches "IT"); 2 values, both said: 2 grounded.
        T(
            "a1",
            [
                U("I need a ticket"),
                R("Which queue and priority?"),
                U("The queue is IT and the priority is 2."),
                C((GOLD, {"queue": "it", "priority": 2})),
            ],
            mode=mode,
        ),
        # a2: calls at once (no ask); right tool, a key missing; 1 value, said ("an IT ticket").
        T("a2", [U("Open an IT ticket please"), C((GOLD, {"queue": "IT"}))], mode=mode),
        # a3: a statement first (no "?"), so no ask; wrong tool; 2 values, both said (3 as "3").
        T(
            "a3",
            [
                U("help"),
                R("Sure, one moment."),
                U("queue IT, priority 3"),
                C((DISTRACTOR, {"queue": "IT", "priority": 3})),
            ],
            mode=mode,
        ),
        # a4: asks; right tool, keys and values, but the user said HR and no priority: 0 of 2
        # grounded, invented (Acc credits it, the anatomy does not).
        T(
            "a4",
            [U("help with a ticket"), R("Which queue?"), U("The queue is HR."), C((GOLD, GOLD_ARGS))],
            mode=mode,
            has_near_duplicate=False,
        ),
        # a5: asks; right tool and keys, wrong value (priority 5); IT said, 5 not: 1 of 2, invented.
        T(
            "a5",
            [
                U("Ticket for queue IT please"),
                R("What priority?"),
                U("Priority 1."),
                C((GOLD, {"queue": "IT", "priority": 5})),
            ],
            mode=mode,
            has_near_duplicate=False,
        ),
        # a6: the first assistant turn is malformed, so no ask (the later "Which queue?" is not first); no call.
        T("a6", [U(), BAD, U("hello?"), R("Which queue?")], mode=mode, ended="t_max"),
        # a7: gold and a distractor in one turn: not the right tool; 3 values, all said.
        T(
            "a7",
            [
                U("queue IT priority 2"),
                C((GOLD, {"queue": "IT", "priority": 2}), (DISTRACTOR, {"queue": "IT"})),
            ],
            mode=mode,
        ),
        # a8: no gold tool, a call anyway: wrong tool; no values.
        T("a8", [U("what's the weather"), C(("list_queues", {}))], seed=None, mode=mode, required_params=0),
        # a9: a truncated first turn: no ask, no call.
        T("a9", [U(), CUT], mode=mode, ended="truncated"),
        # a10: right tool, a key missing; the value is said only after the call: 0 of 1, invented.
        T("a10", [U("hi"), C((GOLD, {"queue": "IT"})), U("queue IT")], mode=mode),
    ]


# Per dialogue: (asks_first, called, right_tool, right_keys, right_values, values, grounded)
EXPECTED = {
    "a1": (True, True, True, True, True, 2, 2),
    "a2": (False, True, True, False, False, 1, 1),
    "a3": (False, True, False, False, False, 2, 2),
    "a4": (True, True, True, True, True, 2, 0),
    "a5": (True, True, True, True, False, 2, 1),
    "a6": (False, False, False, False, False, 0, 0),
    "a7": (False, True, False, False, False, 3, 3),
    "a8": (False, True, False, False, False, 0, 0),
    "a9": (False, False, False, False, False, 0, 0),
    "a10": (False, True, True, False, False, 1, 0),
}


@pytest.mark.parametrize("t", corpus(), ids=lambda t: t.id)
def test_dialogue_anatomy_by_hand(t):
    a = dialogue_anatomy(t)
    got = (a.asks_first, a.called, a.right_tool, a.right_keys, a.right_values, a.values, a.grounded)
    assert got == EXPECTED[t.id]
    assert a.invented == (a.grounded < a.values)


def test_compute_anatomy_by_hand():
    a = compute_anatomy(corpus())
    assert tuple(a) == ANATOMY_KEYS
    # n 10; asks first: a1 a4 a5 = 3; calls: all but a6 a9 = 8.
    # right tool: a1 a2 a4 a5 a10 = 5 of 8; right keys: a1 a4 a5 = 3 of 5; right values: a1 a4 = 2 of 3.
    # values: 2+1+2+2+2+3+0+1 = 13; grounded: 2+1+2+0+1+3+0+0 = 9; invented: a4 a5 a10 = 3 of 8.
    assert a == {
        "n": 10,
        "calls_n": 8,
        "values_n": 13,
        "asks_first": 0.3,
        "asks_first_n": 3,
        "right_tool": 0.625,
        "right_tool_n": 5,
        "right_keys": 0.6,
        "right_keys_n": 3,
        "right_values": 0.666667,
        "right_values_n": 2,
        "values_grounded": 0.692308,
        "values_grounded_n": 9,
        "values_invented": 0.375,
        "values_invented_n": 3,
    }
    # With single calls, right values is Acc: Acc = 2/10 here (a1 and a4).
    assert compute_metrics(corpus())["Acc"] * 10 == a["right_values_n"]


def test_zero_denominators_are_none_not_zero():
    ts = [T("x", [U(), R("Which queue?")], ended="t_max"), T("y", [U(), BAD], ended="t_max")]
    a = compute_anatomy(ts)
    assert (a["n"], a["asks_first_n"], a["asks_first"], a["calls_n"]) == (2, 1, 0.5, 0)
    for share in ("right_tool", "right_keys", "right_values", "values_grounded", "values_invented"):
        assert a[share] is None, share
    empty = compute_anatomy([])
    assert empty["n"] == 0 and empty["asks_first"] is None


def test_by_mode_and_breakdowns():
    ts = corpus("static") + corpus("dynamic")[:2]
    by_mode = anatomy_by_mode(ts)
    assert set(by_mode) == {"static", "dynamic"}
    assert by_mode["static"] == compute_anatomy(corpus())
    assert (by_mode["dynamic"]["n"], by_mode["dynamic"]["right_tool_n"]) == (2, 2)
    b = anatomy_breakdowns(corpus())
    # No near-duplicate: a4 and a5 (both right tool and keys; a4 right values). The rest: 8.
    flat = b["by_near_duplicate"]["no_near_duplicate"]
    assert (flat["n"], flat["right_keys_n"], flat["right_values_n"], flat["values_invented_n"]) == (
        2,
        2,
        1,
        2,
    )
    assert b["by_near_duplicate"]["near_duplicate"]["n"] == 8
    # Required args: a8 has 0, the rest 2.
    assert set(b["by_required_args"]) == {"0", "2"}
    assert b["by_required_args"]["0"]["right_tool"] == 0.0


def test_asks_and_said_before_call():
    assert asks("Which queue?") and asks("Is it A? Or B.") and not asks("Sure, one moment.")
    t = corpus()[0]
    assert said_before_call(t) == "I need a ticket\nThe queue is IT and the priority is 2."
    assert said_before_call(corpus()[5]) is None  # a6: no call
    assert said_before_call(corpus()[9]) == "hi"  # a10: the later user turn does not count


@pytest.mark.parametrize(
    "key, value, said, grounded",
    [
        # strings: normalised containment between word boundaries
        ("city", "New York", "Ship it to new  YORK please", True),
        ("queue", "IT", "an item for the team", False),
        ("reason", "quarterly refresher", 'The reason is "quarterly refresher".', True),
        ("queue", "", "anything", False),
        # numbers: as numbers, not digits inside other words, dates or times
        ("amount", 12.5, "about 12.50 dollars", True),
        ("amount", 2018.0, "the amount is 2018", True),
        ("amount", 1000, "the amount is 1,000", True),
        ("amount", 1000.0, "the amount is 1,000.00", True),
        ("rooms", 3, "three bedrooms", True),
        ("rooms", 25, "twenty-five rooms", True),
        ("rooms", 2, "twenty-two rooms", False),
        ("year", 2026, "on 2026-03-09", False),
        ("rooms", 5, "room 15 or 50", False),
        ("day", 3, "on 2026-03-09", False),
        ("hour", 10, "at 10:30", False),
        ("percent", 85.1, 'splits [{"cost_center":"CC-4382","percent":85.1}]', True),
        ("percent", -5, "a change of -5", True),
        ("count", "4", "four of them", True),
        # dates and datetimes under the rules of values_match
        ("date", "2026/03/09", "leaving 2026-03-09", True),
        ("date", "2026-03-09T00:00:00", "leaving 2026-03-09.", True),
        ("date", "2026-03-10", "leaving 2026-03-09", False),
        ("at", "2026-03-09T10:00", "at 2026-03-09 10:00:00 please", True),
        # booleans: the key's words and the value's yes/no word in one clause
        ("government_official", True, "The government official is yes.", True),
        ("is_urgent", True, "urgent: yes", True),
        ("is_urgent", False, "the urgent flag is no", True),
        ("is_urgent", True, "the urgent flag is no", False),
        ("is_urgent", True, "yes, please", False),
        ("is_urgent", False, "urgent is yes and refund is no", False),
        ("refund", False, "urgent is yes and refund is no", True),
        # None, containers
        ("note", None, "none", False),
        ("emails", ["a@x.com", "b@x.com"], "a@x.com and b@x.com", True),
        ("emails", ["a@x.com", "c@x.com"], "a@x.com and b@x.com", False),
        ("emails", [], "none", False),
        ("address", {"city": "Paris", "zip": 75001}, "Paris, 75001", True),
        ("address", {"city": "Paris", "zip": 75002}, "Paris, 75001", False),
    ],
)
def test_value_grounded(key, value, said, grounded):
    assert value_grounded(key, value, said) is grounded


def test_anatomy_table_cells():
    table = anatomy_table([("Static", compute_anatomy(corpus())), ("old run", None)], first="Mode")
    lines = table.splitlines()
    assert lines[0].startswith("| Mode | n | asks first | right tool (↑) | right keys (↑) |")
    assert lines[2] == (
        "| Static | 10 | 0.30 [0.11, 0.60] (3/10) | 0.62 [0.31, 0.86] (5/8) | 0.60 [0.23, 0.88] (3/5) "
        "| 0.67 [0.21, 0.94] (2/3) | 0.69 [0.42, 0.87] (9/13) | 0.38 [0.14, 0.69] (3/8) |"
    )
    assert lines[3] == "| old run | – | – | – | – | – | – | – |"
    none = anatomy_table([("x", compute_anatomy([T("x", [U(), R("ok")], ended="t_max")]))])
    assert "| x | 1 | 0.00 [0.00, 0.79] (0/1) | – (0/0) |" in none


def test_run_folder_report_and_compare_carry_the_anatomy(tmp_path):
    ts = corpus("static") + corpus("dynamic")
    stored = write_run(tmp_path / "run", ts, model_label="tuned")
    assert stored["anatomy"] == anatomy_by_mode(ts)
    assert stored["anatomy_breakdowns"]["dynamic"] == anatomy_breakdowns(corpus("dynamic"))
    assert score_transcripts(tmp_path / "run") == {k: v for k, v in stored.items() if k != "model"}
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## The anatomy of the dialogues" in report
    assert "| Dynamic | 10 | 0.30 [0.11, 0.60] (3/10) | 0.62 [0.31, 0.86] (5/8) |" in report
    assert "Anatomy by slice (static):" in report
    assert "| no near-duplicate among candidates | 2 | 1.00 [0.34, 1.00] (2/2) |" in report
    # W&B: the anatomy goes to the summary, not the config.
    assert flatten_metrics(stored)["anatomy/dynamic/right_tool_n"] == 5
    assert "anatomy" not in eval_settings(stored)

    # A run whose metrics.json predates the anatomy gets it from its transcripts; without them, "–".
    write_run(tmp_path / "old", corpus("dynamic")[:2], model_label="old")
    old = json.loads((tmp_path / "old" / "metrics.json").read_text())
    for key in ("anatomy", "anatomy_breakdowns"):
        del old[key]
    (tmp_path / "old" / "metrics.json").write_text(json.dumps(old))
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "metrics.json").write_text(json.dumps({**old, "model": "bare"}))
    compare_runs(
        [tmp_path / "run", tmp_path / "old", tmp_path / "bare"],
        out_dir=tmp_path / "cmp",
        json_path=tmp_path / "cmp" / "report.json",
    )
    data = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert data["tuned"]["anatomy"]["dynamic"] == compute_anatomy(corpus("dynamic"))
    assert data["old"]["anatomy"]["dynamic"] == compute_anatomy(corpus("dynamic")[:2])
    assert "anatomy" not in data["bare"]
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "## The anatomy of the dialogues" in md
    assert "| tuned | 10 | 0.30 [0.11, 0.60] (3/10) | 0.62 [0.31, 0.86] (5/8) |" in md
    assert "| old | 2 | 0.50 [0.09, 0.91] (1/2) | 1.00 [0.34, 1.00] (2/2) |" in md
    assert "| bare | – |" in md
