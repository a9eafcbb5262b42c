"""pass^k over repeated dynamic runs (`diaforge.eval.passk`): the τ-bench formula on hand-counted cases,
the stable / wording-sensitive counts, ``metrics.json`` keeping every other number on repeat 0,
the report and console blocks, and ``eval run --repeats 3`` on the reference policies."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from diaforge.errors import InputError
from diaforge.eval.cli import main as eval_main
from diaforge.eval.passk import (
    compute_pass_k,
    pass_hat_k,
    pass_k_values,
    passk_lines,
    passk_section,
    summarise_pass_k,
    trial_outcomes,
)
from diaforge.eval.report import score_transcripts, summarise
from diaforge.eval.runner import user_rng
from diaforge.eval.stats import mean_interval
from diaforge.eval.tables import render_report
from diaforge.eval.transcripts import (
    Transcript,
    TranscriptTurn,
    first_trials,
    read_transcripts,
    write_transcripts,
)
from diaforge.rng import seeded_rng
from diaforge.schema import ToolCall

# --------------------------------------------------------------------------------------------
# The formula
# --------------------------------------------------------------------------------------------


def test_one_dialogue_three_trials_two_successes() -> None:
    assert pass_hat_k(2, 3, 1) == Fraction(2, 3)
    assert pass_hat_k(2, 3, 2) == Fraction(1, 3)  # C(2,2)/C(3,2) = 1/3
    assert pass_hat_k(2, 3, 3) == 0  # C(2,3) = 0
    assert [pass_hat_k(3, 3, k) for k in (1, 2, 3)] == [1, 1, 1]
    assert [pass_hat_k(0, 3, k) for k in (1, 2, 3)] == [0, 0, 0]
    assert pass_hat_k(3, 5, 2) == Fraction(3, 10)  # C(3,2)/C(5,2) = 3/10


def test_pass_k_averages_over_dialogues() -> None:
    outcomes = [(2, 3), (3, 3), (0, 3)]
    assert pass_k_values(outcomes, 1) == Fraction(5, 9)  # (2/3 + 1 + 0) / 3
    assert pass_k_values(outcomes, 2) == Fraction(4, 9)  # (1/3 + 1 + 0) / 3
    assert pass_k_values(outcomes, 3) == Fraction(1, 3)  # (0 + 1 + 0) / 3
    assert pass_k_values([], 1) == 0


@pytest.mark.parametrize(("c", "n", "k"), [(4, 3, 1), (-1, 3, 1), (1, 3, 0), (1, 3, 4)])
def test_pass_hat_k_refuses_impossible_counts(c: int, n: int, k: int) -> None:
    with pytest.raises(ValueError, match="need 0 <= successes"):
        pass_hat_k(c, n, k)


# --------------------------------------------------------------------------------------------
# From transcripts
# --------------------------------------------------------------------------------------------


def _t(did: str, repeat: int, right: bool, *, mode: str = "dynamic", split: str = "positive") -> Transcript:
    """A one-turn dialogue whose call is right (the gold value) or wrong (another value)."""
    if split == "no_tool":
        return Transcript(id=did, mode=mode, seed_tool=None, ended="t_max", split=split, repeat=repeat)
    call = ToolCall(name="open_ticket", args={"queue": "IT" if right else "HR"})
    return Transcript(
        id=did,
        mode=mode,
        seed_tool="open_ticket",
        gold_args={"queue": "IT"},
        candidate_tools=["open_ticket", "open_case"],
        required_params=1,
        turns=[
            TranscriptTurn(role="user", content="Open a ticket for the IT queue"),
            TranscriptTurn(role="assistant", kind="tool_calls", raw="[...]", tool_calls=[call]),
        ],
        ended="tool_call",
        repeat=repeat,
    )


# a: 2 of 3 right; b: 3 of 3; c: 0 of 3; d: 1 of 3. Repeat 0: a right, b right, c wrong, d wrong.
TRIALS = {
    "a": (True, False, True),
    "b": (True, True, True),
    "c": (False, False, False),
    "d": (False, True, False),
}
REPEATED = [_t(did, r, oks[r]) for r in range(3) for did, oks in TRIALS.items()]


def test_trial_outcomes_in_repeat_order() -> None:
    shuffled = list(reversed(REPEATED))
    assert trial_outcomes(shuffled) == {did: list(oks) for did, oks in TRIALS.items()}


def test_compute_pass_k_by_hand() -> None:
    out = compute_pass_k(REPEATED)
    # successes 2, 3, 0, 1 of 3 each:
    assert out["n"] == 4 and out["trials"] == 3
    assert out["pass^1"] == round((2 + 3 + 0 + 1) / 12, 6) == 0.5
    assert out["pass^2"] == round((1 / 3 + 1 + 0 + 0) / 4, 6) == 0.333333  # C(2,2)/C(3,2) = 1/3, C(1,2) = 0
    assert out["pass^3"] == 0.25  # only b
    assert (out["always_n"], out["never_n"], out["wording_sensitive_n"]) == (1, 1, 2)
    assert out["wording_sensitive"] == 0.5
    assert out["by_successes"] == {"0": 1, "1": 1, "2": 1, "3": 1}
    assert "pass^4" not in out
    # pass^k's interval resamples the dialogues' own values C(c, k)/C(3, k): for k = 3 these are 0, 1, 0, 0
    iv = out["intervals"]
    assert iv["pass^3"] == mean_interval([0.0, 1.0, 0.0, 0.0]) and iv["pass^3"]["mean"] == 0.25
    assert iv["pass^1"] == mean_interval([2 / 3, 1.0, 0.0, 1 / 3])
    # a resample mean of 0, 1, 0, 0 is a count of quarters: 0 has probability (3/4)^4 = 0.32, so lo = 0;
    # 1 (the one dialogue drawn four times) has 1/256, under 2.5 %, while 3/4 or more has 13/256 > 2.5 %
    assert iv["pass^3"]["lo"] == 0.0 and iv["pass^3"]["hi"] == 0.75
    # wording-sensitive 2 of 4, Wilson by hand: centre 0.5, half 1.96/(1 + 1.96²/4) * sqrt(1/16 + 1.96²/64) = 0.35
    ws = iv["wording_sensitive"]
    assert (ws["k"], ws["n"]) == (2, 4) and ws["lo"] == pytest.approx(0.150, abs=1e-3)
    assert ws["hi"] == pytest.approx(0.850, abs=1e-3)


def test_a_dialogue_with_fewer_trials_caps_k() -> None:
    out = compute_pass_k([*REPEATED, _t("e", 0, True), _t("e", 1, True)])  # e: 2 trials, both right
    assert out["trials"] == 2 and "pass^3" not in out
    assert out["pass^2"] == round((1 / 3 + 1 + 0 + 0 + 1) / 5, 6)
    assert out["always_n"] == 2 and out["by_successes"] == {"0": 1, "1": 1, "2": 2, "3": 1}


def test_empty_gives_no_pass_k() -> None:
    assert compute_pass_k([]) == {
        "n": 0,
        "trials": 0,
        "always_n": 0,
        "never_n": 0,
        "wording_sensitive_n": 0,
        "wording_sensitive": None,
        "by_successes": {"0": 0},
        "intervals": {"wording_sensitive": {"k": 0, "n": 0, "lo": None, "hi": None}},
    }


def test_one_trial_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="two transcripts of dialogue 'a' in dynamic mode, repeat 1"):
        trial_outcomes([_t("a", 1, True), _t("a", 1, False)])
    path = tmp_path / "transcripts.jsonl"
    write_transcripts(path, [*REPEATED, _t("a", 1, True)])
    with pytest.raises(InputError) as err:
        score_transcripts(path)
    assert str(err.value).startswith(str(path)) and "repeat 1" in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_only_repeated_modes_get_pass_k() -> None:
    static = [_t(did, 0, oks[0], mode="static") for did, oks in TRIALS.items()]
    assert set(summarise_pass_k([*REPEATED, *static])) == {"dynamic"}
    assert summarise_pass_k(first_trials([*REPEATED, *static])) == {}


def test_every_other_metric_stays_on_repeat_0() -> None:
    no_tool = [_t("x", 0, False, split="no_tool")]
    first = [t for t in REPEATED if t.repeat == 0]
    with_repeats = summarise([*REPEATED, *no_tool])
    alone = summarise([*first, *no_tool])
    assert with_repeats.pop("pass_k") == {"dynamic": compute_pass_k(REPEATED)}
    assert with_repeats == alone and "pass_k" not in alone
    assert alone["dynamic"]["Acc"] == 0.5 and alone["dynamic"]["n"] == 4  # a and b right in repeat 0


def test_an_old_transcript_line_is_repeat_0(tmp_path: Path) -> None:
    line = json.loads(_t("a", 0, True).model_dump_json())
    del line["repeat"]
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (t,) = read_transcripts(path)
    assert t.repeat == 0
    with pytest.raises(ValueError, match="repeat"):
        Transcript.model_validate({**line, "repeat": -1})


def test_user_rng_keeps_repeat_0_and_redraws_the_others() -> None:
    assert user_rng(7, "d1", 2).random() == seeded_rng(7, "d1", 2).random()
    assert user_rng(7, "d1", 2, 0).random() == seeded_rng(7, "d1", 2).random()
    assert user_rng(7, "d1", 2, 1).random() == seeded_rng(7, "d1", 2, "repeat", 1).random()
    draws = {user_rng(7, "d1", 2, r).random() for r in range(4)}
    assert len(draws) == 4


# --------------------------------------------------------------------------------------------
# Report and console
# --------------------------------------------------------------------------------------------


def test_report_and_console_blocks() -> None:
    metrics = {"model": "m", **summarise(REPEATED)}
    section = passk_section(metrics)
    assert section[0] == "## pass^k: the same dialogues in other words"
    iv = metrics["pass_k"]["dynamic"]["intervals"]
    p1 = iv["pass^1"]
    assert f"| Dynamic | 4 | 3 | 0.50 [{p1['lo']:.2f}, {p1['hi']:.2f}] | 0.33 [" in section[2]
    assert "| 0.25 [0.00, 0.75] |" in section[2]
    assert section[3] == (
        "- Dynamic: always right 1, never right 1, wording-sensitive (right in some trials, wrong in "
        "others) 2 of 4 (50.0% [15.0, 85.0])."
    )
    (line,) = passk_lines(metrics, "dynamic")
    assert line.startswith(f"         pass^1 0.500 [{p1['lo']:.3f}, {p1['hi']:.3f}]  pass^2 0.333 [")
    assert line.endswith("pass^3 0.250 [0.000, 0.750]  (4 dialogues x 3 trials)  wording-sensitive 2/4")
    assert passk_lines(metrics, "static") == []
    assert "## pass^k" in render_report(metrics, "m")
    plain = {"model": "m", **summarise(first_trials(REPEATED))}
    assert passk_section(plain) == [] and passk_lines(plain, "dynamic") == []
    assert "pass^k" not in render_report(plain, "m")


# --------------------------------------------------------------------------------------------
# The done-when: eval run --repeats 3 on the reference policies
# --------------------------------------------------------------------------------------------

# --limit 12 (the seeded sample of seed 0) holds two dialogues whose name-overlap outcome depends
# on the wording (000116-register_new_legal_entity and 000120-book_airport_transfer).
LIMIT = "12"


def _policy_run(policy: str, out: Path) -> dict:
    argv = ["run", "--backend", policy, "--modes", "dynamic", "--repeats", "3", "--limit", LIMIT,
            "--no-tool-bench", "none", "--out", str(out), "--quiet"]  # fmt: skip
    assert eval_main(argv) == 0
    return json.loads((out / "metrics.json").read_text())


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_repeats_3_on_the_policies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref = _policy_run("reference", tmp_path / "reference")
    block = ref["pass_k"]["dynamic"]
    assert ref["repeats"] == 3 and block["n"] == 12 and block["trials"] == 3
    assert block["pass^1"] == block["pass^2"] == block["pass^3"] == 1.0  # the ceiling, in every wording
    assert block["wording_sensitive_n"] == 0 and block["always_n"] == 12

    name = _policy_run("name-overlap", tmp_path / "name-overlap")
    block = name["pass_k"]["dynamic"]
    assert block["pass^3"] < block["pass^1"]
    assert block["wording_sensitive_n"] == 2 and block["wording_sensitive"] == round(2 / 12, 6)
    # pass^k is the formula over the recorded successes per dialogue:
    outcomes = [(int(c), 3) for c, count in block["by_successes"].items() for _ in range(count)]
    for k in (1, 2, 3):
        assert block[f"pass^{k}"] == round(float(pass_k_values(outcomes, k)), 6)
    transcripts = read_transcripts(tmp_path / "name-overlap" / "transcripts.jsonl")
    assert [t.repeat for t in transcripts] == [0] * 12 + [1] * 12 + [2] * 12
    assert name["dynamic"]["n"] == 12  # Acc and the rest: repeat 0 only
    report = (tmp_path / "name-overlap" / "report.md").read_text()
    assert "## pass^k: the same dialogues in other words" in report and "wording-sensitive" in report
    out = capsys.readouterr().out
    assert f"(12 dialogues x 3 trials)  wording-sensitive {block['wording_sensitive_n']}/12" in out
