"""`eval compare` (diaforge.eval.compare.compare_runs) takes every verdict word from the one rule of
diaforge.eval.stats.verdict: runs whose Acc differ by 15 points but whose paired comparison does not
show it are "not shown" (never "clears"), a difference the interval shows but the exact test does
not is "borderline" with both figures, and only a shown gain clears the heuristic floor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diaforge.eval.compare import compare_runs
from diaforge.eval.report import write_run
from diaforge.eval.transcripts import Transcript

USER = {"role": "user", "content": "I need a ticket for the IT queue"}


def _call(name: str) -> dict:
    calls = [{"name": name, "args": {"queue": "IT"}}]
    return {
        "role": "assistant",
        "kind": "tool_calls",
        "content": "",
        "raw": json.dumps(calls),
        "tool_calls": calls,
    }


def _transcript(i: int, right: int) -> Transcript:
    return Transcript.model_validate(
        {
            "id": f"h{i}",
            "mode": "dynamic",
            "model": "m",
            "seed_tool": "open_ticket",
            "gold_args": {"queue": "IT"},
            "candidate_tools": ["open_ticket", "open_case"],
            "turns": [USER, _call("open_ticket" if right else "open_case")],
            "ended": "tool_call",
        }
    )


def _runs(tmp_path: Path, a: int, b: int, c: int, d: int) -> list[Path]:
    """A model ("tuned") and the name-overlap floor on the same a + b + c + d dialogues: a right in
    both, b only with the model, c only with the floor, d in neither."""
    cells = [(1, 1)] * a + [(1, 0)] * b + [(0, 1)] * c + [(0, 0)] * d
    out = []
    for name, column, backend in (("tuned", 0, "hf"), ("name-overlap", 1, "name-overlap")):
        ts = [_transcript(i, cell[column]) for i, cell in enumerate(cells)]
        write_run(tmp_path / name, ts, model_label=name, extra={"benchmark": "b", "backend": backend})
        out.append(tmp_path / name)
    return out


def _floor_line(md: str) -> str:
    section = md.split("## Against the floors")[1].split("\n## ")[0]
    (line,) = [ln for ln in section.splitlines() if ln.startswith("- tuned, dynamic: ")]
    return line


@pytest.mark.parametrize(
    ("table", "acc", "words", "verdict"),
    [
        # `make demo`'s tuned model against the floor: 0.54 against 0.39 on 80 dialogues, 30 won and
        # 18 lost: +0.15 [-0.02, +0.31], p = 0.111. The points differ; the paired test shows nothing.
        (
            (13, 30, 18, 19),
            "Acc 0.54 vs name-overlap 0.39 (+0.15)",
            "paired over 80 dialogues, not shown: +0.15 [-0.02, +0.31], McNemar p = 0.111; "
            "not shown to clear the heuristic floor.",
            "not shown",
        ),
        # The CPU's 730-dialogue model: 27 won, 14 lost: the interval excludes 0, p = 0.0596 does not
        # reach 0.05: borderline, with both figures.
        (
            (17, 27, 14, 22),
            "Acc 0.55 vs name-overlap 0.39 (+0.16)",
            "paired over 80 dialogues, borderline: +0.16 [+0.01, +0.31] excludes 0, McNemar p = 0.0596 "
            "is not below 0.05; not shown to clear the heuristic floor.",
            "borderline",
        ),
        # 30 won and 8 lost: +0.275 [+0.13, +0.40], p = 2 · Σ_{i ≤ 8} C(38, i) / 2^38 = 0.000472: shown,
        # and only this one clears it.
        (
            (13, 30, 8, 29),
            "Acc 0.54 vs name-overlap 0.26 (+0.27)",
            "paired over 80 dialogues, shown: +0.28 [+0.13, +0.40], McNemar p = 0.000472; "
            "clears the heuristic floor.",
            "shown",
        ),
    ],
)
def test_compare_words_follow_the_verdict_rule(tmp_path, table, acc, words, verdict):
    runs = _runs(tmp_path, *table)
    printed = compare_runs(runs, out_dir=tmp_path / "cmp", json_path=tmp_path / "report.json")
    md = (tmp_path / "cmp" / "comparison.md").read_text()
    line = _floor_line(md)
    assert line == f"- tuned, dynamic: {acc}; {words}"
    assert ("clears" in line) is (verdict == "shown")
    # The paired table, printed and written, carries the same word.
    (row,) = [
        ln for ln in printed.splitlines() if ln.startswith("| tuned − name-overlap (floor) | dynamic |")
    ]
    assert row.endswith(f"| {verdict} | 0 |")
    assert row in md
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["tuned"]["paired"]["name-overlap"]["dynamic"]["verdict"] == verdict


def test_not_shown_is_never_called_a_gain(tmp_path):
    """The demo's numbers: no line of comparison.md says the model clears the floor or that the
    difference is distinguishable, shown or a gain."""
    md_dir = tmp_path / "cmp"
    compare_runs(_runs(tmp_path, 13, 30, 18, 19), out_dir=md_dir)
    md = (md_dir / "comparison.md").read_text()
    line = _floor_line(md)
    assert "not shown" in line and "clears" not in line
    assert "distinguishable" not in md
    assert "| not shown | 0 |" in md and "| shown |" not in md
