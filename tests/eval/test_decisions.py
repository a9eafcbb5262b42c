"""The when-to-call matrix and the calls the conversation does not support (diaforge.eval.decisions), and the candidate tool specs
beside a run (diaforge.eval.tool_specs): hand-written transcripts over three hand-written tools, every
open set, move and count worked out by hand from the rules of the module docstring; then the
issue's done-when on the packaged held-out benchmark, with the reference policy and the random
floor played through `eval run` (no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import ROOT
from _slow import slow_fixture

from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.decisions import (
    MODEL_MOVES,
    REFERENCE_MOVES,
    asks_missing_value,
    compute_decisions,
    decisions_section,
    model_move,
    replay,
)
from diaforge.eval.report import score_transcripts, summarise, write_run
from diaforge.eval.tool_specs import (
    TOOLS_FILE,
    DialogueTools,
    ToolSpecs,
    check_covers,
    read_tool_specs,
    reference_offers,
    specs_from_dialogues,
    write_tool_specs,
)
from diaforge.eval.transcripts import Transcript, TranscriptTurn
from diaforge.schema import Dialogue, Persona, Tool, ToolCall, Turn

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


def _tool(name: str, description: str, params: dict[str, dict]) -> Tool:
    return Tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": params, "required": list(params)},
    )


TICKET = _tool(
    "open_ticket",
    "Open an IT support ticket for a broken printer.",
    {
        "queue": {"type": "string", "description": "Support queue."},
        "priority": {"type": "string", "enum": ["low", "high"], "description": "Urgency."},
    },
)
ROOM = _tool("book_meeting_room", "Reserve a meeting room in the office.", {"room": {"type": "string"}})
LAPTOP = _tool(
    "order_laptop",
    "Order a new laptop from the IT catalogue.",
    {"employee_id": {"type": "string", "description": "Employee number."}},
)
PASSWORD = _tool("reset_password", "Reset the password of a user account.", {})
CANDIDATES = [TICKET, ROOM, LAPTOP]
NAMES = [t.name for t in CANDIDATES]

VAGUE = "Hello, I need some help please."  # supports no candidate: all three stay open
WHICH = "Should I open a support ticket for a broken printer or order a new laptop?"


def user(text: str) -> TranscriptTurn:
    return TranscriptTurn(role="user", content=text)


def reply(text: str) -> TranscriptTurn:
    return TranscriptTurn(role="assistant", kind="reply", content=text)


def call(name: str, **args: object) -> TranscriptTurn:
    return TranscriptTurn(role="assistant", kind="tool_calls", tool_calls=[ToolCall(name=name, args=args)])


def transcript(tid: str, turns: list[TranscriptTurn], gold: str | None = "open_ticket", **kw) -> Transcript:
    split = "no_tool" if gold is None else "positive"
    return Transcript(
        id=tid,
        mode=kw.pop("mode", "dynamic"),
        seed_tool=gold,
        candidate_tools=NAMES,
        turns=turns,
        ended=kw.pop("ended", "tool_call"),
        split=split,
        withheld_tool="reset_password" if gold is None else None,
        **kw,
    )


# A: asks which tool (two of the three open), the user picks, asks the missing values, calls.
A = transcript(
    "A",
    [
        user(VAGUE),
        reply(WHICH),
        user("The one for a broken printer."),
        reply("What is the queue and the priority (one of low or high)?"),
        user("The queue is Networking and the priority is high."),
        call("open_ticket", queue="Networking", priority="high"),
    ],
)
# B: asks for another tool's value first; the user says what it needs; asks an open question
# with the tool settled; calls the wrong tool with a value nobody said.
B = transcript(
    "B",
    [
        user(VAGUE),
        reply("What is the employee ID?"),
        user("None of those, I need to open a ticket for a broken printer."),
        reply("Could you tell me more?"),
        user("I need to open a support ticket."),
        call("order_laptop", employee_id="E-1"),
    ],
)
# C: the opening settles the room; malformed, a statement, a refusal where a tool fits, truncated.
C = transcript(
    "C",
    [
        user("I want to book a room."),
        TranscriptTurn(role="assistant", kind="malformed", raw="<tool_call>{", reason="bad JSON"),
        user("Please book a room."),
        reply("Sure, I will do that."),
        user("The room is Everest."),
        reply("I'm sorry, none of my tools can do that."),
        user("Please."),
        TranscriptTurn(role="assistant", kind="truncated", raw="Let me", reason="budget"),
    ],
    gold="book_meeting_room",
    ended="truncated",
)
# D: a retrieval miss: the user turns down the two offered tools and its answer sets the third apart.
D = transcript(
    "D",
    [
        user(VAGUE),
        reply(WHICH),
        user("None of those, I need to reset the password of my account."),
        reply("I'm sorry, none of my tools can do that."),
    ],
    gold=None,
    ended="refusal",
)
# E: a retrieval miss where the model calls a near neighbour at once.
E = transcript("E", [user(VAGUE), call("open_ticket", queue="IT")], gold=None)

SPECS = ToolSpecs(
    {
        **{t: DialogueTools(CANDIDATES) for t in "ABC"},
        **{t: DialogueTools(CANDIDATES, PASSWORD) for t in "DE"},
    },
    source="hand-written",
)


def _points(t: Transcript) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(p.reference, p.move, p.open) for p in replay(t, SPECS.dialogues[t.id])]


# --------------------------------------------------------------------------------------------
# Reading one reply
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "text", "move", "offered"),
    [
        ("reply", WHICH, "ask_tool", ["open_ticket", "order_laptop"]),  # two options, by meaning
        ("reply", "Do you want a new laptop?", "ask_tool", ["order_laptop"]),  # yes/no on one tool
        ("reply", "Could you tell me more?", "ask_tool", []),  # an open question
        ("reply", "What is the queue and the priority (one of low or high)?", "ask_value", []),
        ("reply", "What is the employee ID?", "ask_value", []),  # another candidate's parameter
        ("reply", "Sure, I will do that.", "other", []),  # no question mark, no negation
        ("reply", "I'm sorry, none of my tools can do that.", "refuse", []),  # diaforge.eval.no_tool's rule
        ("malformed", "", "malformed", []),
        ("truncated", "", "truncated", []),
        ("tool_calls", "", "call", []),
    ],
)
def test_model_move_classes(kind: str, text: str, move: str, offered: list[str]) -> None:
    got, options = model_move(kind, text, CANDIDATES)
    assert (got, [o.name for o in options]) == (move, offered)


def test_a_parameter_word_inside_an_offered_option_asks_for_no_value() -> None:
    city = {"city": {"type": "string", "description": "City."}}
    home = _tool("get_rate_domestic", "Look up the allowance for a city in the home country.", city)
    abroad = _tool("get_rate_international", "Look up the allowance for a foreign city.", city)
    pair = [home, abroad]
    question = "Which is it: look up a city in the home country or a foreign city?"
    # "city" names a required parameter, but only as a word of the two options it offers.
    assert model_move("reply", question, pair)[0] == "ask_tool"
    assert not asks_missing_value(question, home, "I need an allowance.", pair)
    # The same parameter asked for: the rest of the reply offers fewer than two tools.
    ask = "To look up the allowance, could you send the city?"
    assert model_move("reply", ask, pair)[0] == "ask_value"
    assert asks_missing_value(ask, home, "I need an allowance.", pair)
    # ... but not once the user gave it (the teacher's reading of values).
    assert not asks_missing_value(ask, home, "The city is Lyon.", pair)


def test_an_argument_named_as_the_teacher_says_it_is_asked_for() -> None:
    # The teacher says `needed_by` as "the needed-by date" and `weight_kg` as "weight in kg":
    # neither holds the humanised name ("needed by", "weight kg") as written.
    params = {
        "needed_by": {"type": "string", "description": "Date the review is due, YYYY-MM-DD."},
        "weight_kg": {"type": "number", "description": "Parcel weight."},
    }
    review = _tool("request_review", "Ask the legal team to review a contract.", params)
    assert (
        model_move("reply", "Could you also give me the needed-by date (YYYY-MM-DD)?", [review])[0]
        == "ask_value"
    )
    assert model_move("reply", "What is the weight in kg?", [review])[0] == "ask_value"
    assert asks_missing_value("What is the needed-by date?", review, "Review my contract.", [review])


# --------------------------------------------------------------------------------------------
# The replay, point by point
# --------------------------------------------------------------------------------------------


def test_replay_of_a_dialogue_that_asks_then_calls() -> None:
    every, ticket = tuple(NAMES), ("open_ticket",)
    assert _points(A) == [
        ("ask_tool", "ask_tool", every),
        ("ask_value", "ask_value", ticket),
        ("call", "call", ticket),
    ]
    first, second, third = replay(A, SPECS.dialogues["A"])
    assert first.offered == ("open_ticket", "order_laptop") and first.missing == ("queue", "priority")
    assert second.known_named == () and third.missing == () and third.said.count("\n") == 2


def test_replay_reads_answers_to_any_turn_the_user_reads_as_about_the_tool() -> None:
    # "What is the employee ID?" names no parameter of open_ticket: the user-proxy answers it by
    # saying what it needs, which settles the ticket; the open question keeps it settled.
    every, ticket = tuple(NAMES), ("open_ticket",)
    assert _points(B) == [
        ("ask_tool", "ask_value", every),
        ("ask_value", "ask_tool", ticket),
        ("ask_value", "call", ticket),
    ]


def test_replay_of_the_other_moves() -> None:
    room = ("book_meeting_room",)
    assert _points(C) == [
        ("ask_value", "malformed", room),
        ("ask_value", "other", room),
        ("call", "refuse", room),  # "The room is Everest." gave the one missing value
        ("call", "truncated", room),
    ]


def test_replay_of_a_retrieval_miss() -> None:
    assert _points(D) == [("ask_tool", "ask_tool", tuple(NAMES)), ("refuse", "refuse", ())]
    assert _points(E) == [("ask_tool", "call", tuple(NAMES))]


def test_static_mode_reads_the_reference_users_answers_against_the_open_tools() -> None:
    # Static: the user turns answer the teacher's questions, not the model's. An answer that gives
    # no value says which tool, whatever the model asked; one that gives values leaves the set.
    static = transcript(
        "A",
        [
            user(VAGUE),
            reply("What is the employee ID?"),
            user("The one for a broken printer."),
            reply("What is the queue?"),
            user("The queue is Networking and the priority is high."),
            call("open_ticket", queue="Networking", priority="high"),
        ],
        mode="static",
    )
    ticket = ("open_ticket",)
    assert _points(static) == [
        ("ask_tool", "ask_value", tuple(NAMES)),
        ("ask_value", "ask_value", ticket),
        ("call", "call", ticket),
    ]


def test_static_mode_reads_an_answer_against_what_the_reference_question_offered() -> None:
    # The reference's first question offered the ticket and the room only (its thought lists
    # them, `reference_offers`); "none of those" then leaves the laptop. Specs without the offers
    # (an older tools.json) assume the first four open tools were offered, so all three stay open.
    static = transcript(
        "L",
        [user(VAGUE), reply("What is the employee ID?"), user("None of those."), reply("Which one?")],
        gold="order_laptop",
        mode="static",
        ended="reference_end",
    )
    known = DialogueTools(CANDIDATES, None, [[TICKET, ROOM], None])
    points = [(p.reference, p.open) for p in replay(static, known)]
    assert points == [("ask_tool", tuple(NAMES)), ("ask_value", ("order_laptop",))]
    older = [(p.reference, p.open) for p in replay(static, DialogueTools(CANDIDATES))]
    assert older == [("ask_tool", tuple(NAMES)), ("ask_tool", tuple(NAMES))]


def test_reference_offers_come_from_the_reference_questions_thoughts() -> None:
    question = Turn(
        role="assistant",
        content="Should I open a ticket or book a room?",
        thought="Candidates that match the request: open_ticket, book_meeting_room, order_laptop. They differ "
        "in what they do (open_ticket: a broken printer; book_meeting_room: a meeting room). I ask.",
        phase="tool_selection",
    )
    values = Turn(role="assistant", content="What is the queue?", phase="argument_completion")
    d = _dialogue("R", CANDIDATES).model_copy(
        update={"turns": [Turn(role="user", content="hi"), question, Turn(role="user", content="x"), values]}
    )
    assert reference_offers(d) == [[TICKET, ROOM], None]
    assert reference_offers(_dialogue("M", CANDIDATES, PASSWORD)) is None  # a retrieval miss


# --------------------------------------------------------------------------------------------
# The matrix and the unsupported calls
# --------------------------------------------------------------------------------------------


def test_compute_decisions_matrix_and_unsupported_calls_by_hand() -> None:
    d = compute_decisions([A, B, C, D, E], SPECS)
    expected = {r: dict.fromkeys(MODEL_MOVES, 0) for r in REFERENCE_MOVES}
    expected["ask_tool"].update(ask_tool=2, ask_value=1, call=1)  # A1, D1 | B1 | E1
    expected["ask_value"].update(
        ask_tool=1, ask_value=1, call=1, malformed=1, other=1
    )  # B2 | A2 | B3 | C1 | C2
    expected["call"].update(call=1, refuse=1, truncated=1)  # A3 | C3 | C4
    expected["refuse"].update(refuse=1)  # D2
    assert d["matrix"] == expected
    assert (d["points_n"], d["agree_n"], d["agree"]) == (13, 5, round(5 / 13, 6))
    assert d["positive"]["points_n"] == 10 and d["positive"]["agree_n"] == 3
    assert d["no_tool"]["points_n"] == 3 and d["no_tool"]["agree_n"] == 2
    # Calls: A's is supported; B's names another tool than the one open, with a
    # value nobody said; E's calls a near neighbour where no candidate fits (its value "IT" is
    # not grounded either: "IT" is not in "Hello, I need some help please.").
    assert (d["calls_n"], d["unsupported_calls_n"], d["unsupported_calls"]) == (3, 2, round(2 / 3, 6))
    assert "tool_hallucination" not in d and "hallucinated_n" not in d  # When2Call's name is per item
    assert (d["tool_unsupported_n"], d["unknown_tool_n"], d["value_ungrounded_n"]) == (2, 0, 2)
    assert d["settled_off_gold_n"] == 0 and d["reader"] == "words"


def test_a_call_to_no_candidate_and_a_call_before_the_tool_is_settled() -> None:
    early = transcript(
        "A",
        [user("The queue is IT and the priority is low."), call("open_ticket", queue="IT", priority="low")],
    )
    ghost = transcript("B", [user(VAGUE), call("delete_everything")])
    d = compute_decisions([early, ghost], SPECS)
    # early: all three open (the words name no tool), so the call is not supported, its values are
    assert d["matrix"]["ask_tool"]["call"] == 2
    assert (d["calls_n"], d["unsupported_calls_n"], d["tool_unsupported_n"], d["unknown_tool_n"]) == (
        2,
        2,
        2,
        1,
    )
    assert d["value_ungrounded_n"] == 0


def test_no_calls_is_not_computed_rather_than_zero() -> None:
    d = compute_decisions([D], SPECS)
    assert d["calls_n"] == 0 and d["unsupported_calls"] is None and d["positive"] is None


# --------------------------------------------------------------------------------------------
# Tool specs beside the run, and "not computed"
# --------------------------------------------------------------------------------------------


def _dialogue(did: str, candidates: list[Tool], withheld: Tool | None = None) -> Dialogue:
    extra = {"withheld_tool": withheld.model_dump(mode="json")} if withheld else {}
    return Dialogue(
        id=did,
        seed_tool=None if withheld else candidates[0].name,
        candidate_tools=candidates,
        persona=Persona(id="p", description="someone"),
        goal="g",
        turns=[Turn(role="user", content="hi")],
        provenance=extra,
    )


def test_tools_json_round_trip_keeps_two_specs_that_share_a_name(tmp_path: Path) -> None:
    other_ticket = _tool("open_ticket", "Open a facilities ticket.", {"site": {"type": "string"}})
    specs = specs_from_dialogues(
        [
            _dialogue("x", CANDIDATES),
            _dialogue("y", [other_ticket, ROOM]),
            _dialogue("z", CANDIDATES, PASSWORD),
        ]
    )
    path = write_tool_specs(tmp_path / TOOLS_FILE, specs)
    raw = json.loads(path.read_text())
    assert sorted(raw["tools"]) == [
        "book_meeting_room",
        "open_ticket",
        "open_ticket#2",
        "order_laptop",
        "reset_password",
    ]
    # The reference has no assistant turn yet: no question, so no offers.
    assert raw["dialogues"]["y"] == {
        "candidates": ["open_ticket#2", "book_meeting_room"],
        "withheld": None,
        "offers": [],
    }
    back = read_tool_specs(path)
    assert back.dialogues["y"].candidates[0] == other_ticket
    assert back.dialogues["z"].withheld == PASSWORD and back.dialogues["x"].candidates == CANDIDATES


def test_specs_that_do_not_cover_the_transcripts_name_the_dialogue() -> None:
    with pytest.raises(InputError, match="'B'.*no tool specs"):
        check_covers(ToolSpecs({"A": DialogueTools(CANDIDATES)}, source="bench.jsonl"), [A, B])
    with pytest.raises(InputError, match="differ from the transcript"):
        check_covers(ToolSpecs({"A": DialogueTools([ROOM, TICKET, LAPTOP])}), [A])


def test_without_specs_the_sections_are_not_computed(tmp_path: Path) -> None:
    out = summarise([A])
    assert out["decisions"] is None and out["clarification"] is None
    metrics = write_run(tmp_path / "run", [A], model_label="m")
    assert not (tmp_path / "run" / TOOLS_FILE).exists()
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## When to call" in report and "Not computed: the run folder has no `tools.json`" in report
    assert decisions_section(metrics)[-1].startswith("Not computed")
    assert score_transcripts(tmp_path / "run")["decisions"] is None


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_write_run_stores_the_specs_and_score_recomputes_the_decisions(tmp_path: Path) -> None:
    metrics = write_run(tmp_path / "run", [A, B, D], model_label="m", tools=SPECS, encoder=None)
    assert (tmp_path / "run" / TOOLS_FILE).is_file()
    assert metrics["decisions"]["dynamic"]["points_n"] == 8
    assert metrics["clarification"]["dynamic"]["n"] == 2  # the positive split only
    # `eval score` reads tools.json beside the transcripts (reading with the run's encoder: the
    # hand-written questions read the same with it)
    rescored = score_transcripts(tmp_path / "run")
    assert rescored["decisions"]["dynamic"]["matrix"] == metrics["decisions"]["dynamic"]["matrix"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| ask tool | 2 | 1 | 0 | 0 | 0 | 0 | 0 | 3 |" in report


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_score_falls_back_to_the_benchmark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = tmp_path / "bench.jsonl"
    bench.write_text(_dialogue("A", CANDIDATES).model_dump_json() + "\n")
    run = tmp_path / "run"
    write_run(run, [A], model_label="m")  # no specs: an old run
    assert eval_main(["score", str(run)]) == 0
    assert json.loads(capsys.readouterr().out)["decisions"] is None
    assert eval_main(["score", str(run), "--bench", str(bench)]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert (
        scored["decisions"]["dynamic"]["agree_n"] == 3
        and scored["clarification"]["dynamic"]["tool_questions_n"] == 1
    )
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(_dialogue("Z", CANDIDATES).model_dump_json() + "\n")
    assert eval_main(["score", str(run), "--bench", str(wrong)]) == 2
    assert "'A'" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# The done-when on the held-out benchmark
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
@slow_fixture("reads MiniLM from disk")
def policy_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The reference on the whole held-out benchmark and its no-tool split, the random floor on
    a seeded 40 and 10 of them; dynamic mode (about a minute in all on two shared cores, most of
    it loading the sentence encoder once)."""
    out = tmp_path_factory.mktemp("runs")
    runs = {}
    for name, limits in (("reference", []), ("random", ["--limit", "40", "--no-tool-limit", "10"])):
        code = eval_main(
            [
                "run",
                "--backend",
                name,
                "--bench",
                str(BENCH),
                "--modes",
                "dynamic",
                "--quiet",
                "--out",
                str(out / name),
                *limits,
            ]
        )
        assert code == 0
        runs[name] = json.loads((out / name / "metrics.json").read_text())
        assert (out / name / TOOLS_FILE).is_file()
    return runs


def test_reference_follows_the_reference_move_at_every_decision(policy_runs: dict[str, dict]) -> None:
    d = policy_runs["reference"]["decisions"]["dynamic"]
    off_diagonal = sum(n for r, row in d["matrix"].items() for m, n in row.items() if m != r)
    assert off_diagonal == 0 and d["agree"] == 1.0
    assert d["positive"]["points_n"] > 115 and d["no_tool"]["agree"] == 1.0
    assert d["matrix"]["refuse"]["refuse"] == 20 and d["matrix"]["call"]["call"] == 115
    assert all(d["matrix"][r][r] > 0 for r in REFERENCE_MOVES)


def test_reference_clarification_against_the_random_floor(policy_runs: dict[str, dict]) -> None:
    ref = policy_runs["reference"]["clarification"]["dynamic"]
    # The teacher's questions offer every open tool, and read by meaning as the user-proxy reads
    # them they offer nothing else (docs/metrics.md, "Decisions and clarification").
    assert ref["tool_questions_n"] >= 100
    assert ref["option_precision"] == 1.0 and ref["option_recall"] == 1.0
    assert ref["ruled_out_offered_n"] == 0 and ref["open_offered_n"] == ref["open_n"] > 300
    assert ref["asks_settled_tool_n"] == 0 and ref["asks_known_value_n"] == 0
    assert ref["settled_n"] >= 100 and 1.5 <= ref["turns_to_settle"] <= 2.5
    rnd = policy_runs["random"]
    # The random floor never asks which tool: nothing to score, not a perfect score.
    assert rnd["clarification"]["dynamic"]["tool_questions_n"] == 0
    assert rnd["clarification"]["dynamic"]["option_precision"] is None
    assert rnd["clarification"]["dynamic"]["option_recall"] is None
    d = rnd["decisions"]["dynamic"]
    assert d["agree"] < 0.5 and d["matrix"]["ask_tool"]["ask_value"] > 0
    assert d["unsupported_calls"] > 0.5


def test_decision_shares_carry_wilson_intervals() -> None:
    from diaforge.eval.report import decision_intervals
    from diaforge.eval.stats import wilson
    from diaforge.eval.tables import counted_share

    decisions = {
        "dynamic": {
            "points_n": 10,
            "agree_n": 4,
            "calls_n": 5,
            "unsupported_calls_n": 0,
            "positive": {"points_n": 6, "agree_n": 4},
            "no_tool": {"points_n": 4, "agree_n": 0},
        }
    }
    clar = {
        "dynamic": {
            "tool_questions_n": 3,
            "gold_offered_n": 3,
            "open_n": 8,
            "open_offered_n": 6,
            "offered_n": 7,
            "questions_n": 5,
            "redundant_n": 1,
        }
    }
    out = decision_intervals(decisions, clar)
    agree = out["decisions"]["dynamic"]["agree"]
    assert (agree["k"], agree["n"]) == (4, 10)
    assert (agree["lo"], agree["hi"]) == pytest.approx(wilson(4, 10), abs=1e-6)
    # 0 of 5 calls: Wilson's upper end is z²/(n + z²) = 3.8415 / 8.8415 = 0.4345, not 0
    assert out["decisions"]["dynamic"]["unsupported_calls"]["hi"] == pytest.approx(0.4345, abs=1e-4)
    assert out["decisions"]["dynamic"]["agree_no_tool"]["k"] == 0
    recall = out["clarification"]["dynamic"]["option_recall"]
    assert (recall["k"], recall["n"]) == (6, 8)
    assert out["clarification"]["dynamic"]["option_precision"]["n"] == 7
    lo, hi = wilson(4, 10)
    assert counted_share(0.4, 4, 10) == f"0.40 [{lo:.2f}, {hi:.2f}] (4/10)"
    assert counted_share(None, 0, 0) == "– (0/0)"
    assert decision_intervals(None, None) == {}


def test_an_older_metrics_json_is_read_under_the_new_names(tmp_path: Path) -> None:
    """A run scored when the per-call share was called ``tool_hallucination`` still compares: its
    keys are read as ``unsupported_calls`` (and its count as ``unsupported_calls_n``), in the
    decisions and their intervals, and comparison.md prints it under the new name."""
    from diaforge.eval.compare import compare_runs
    from diaforge.eval.decisions import read_legacy_keys
    from diaforge.eval.tables import counted_share
    from diaforge.similarity import get_encoder

    old = {
        "decisions": {"dynamic": {"calls_n": 4, "hallucinated_n": 3, "tool_hallucination": 0.75}},
        "intervals": {"decisions": {"dynamic": {"tool_hallucination": {"k": 3, "n": 4}}}},
    }
    new = read_legacy_keys(old)
    assert new["decisions"]["dynamic"] == {"calls_n": 4, "unsupported_calls_n": 3, "unsupported_calls": 0.75}
    assert new["intervals"]["decisions"]["dynamic"] == {"unsupported_calls": {"k": 3, "n": 4}}
    assert read_legacy_keys({"decisions": None}) == {"decisions": None}
    write_run(tmp_path / "run", [A, B, C, D, E], model_label="m", tools=SPECS, encoder=get_encoder("tfidf"))
    metrics_path = tmp_path / "run" / "metrics.json"
    stored = json.loads(metrics_path.read_text())
    now = stored["decisions"]["dynamic"]
    cell = counted_share(now["unsupported_calls"], now["unsupported_calls_n"], now["calls_n"])
    for mode in stored["decisions"].values():
        mode["hallucinated_n"] = mode.pop("unsupported_calls_n")
        mode["tool_hallucination"] = mode.pop("unsupported_calls")
    for mode in stored["intervals"]["decisions"].values():
        mode["tool_hallucination"] = mode.pop("unsupported_calls")
    metrics_path.write_text(json.dumps(stored))
    compare_runs([tmp_path / "run"], out_dir=tmp_path / "cmp")
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "calls not supported (↓)" in md and "tool hallucination (↓)" not in md
    assert now["calls_n"] and f"| {cell} |" in md.split("## Decisions and clarification")[1]
