"""Clarification quality grounded in the catalogue: the questions themselves, scored.

A disambiguating question is only as good as the options it offers. The decision replay of
`diaforge.eval.decisions` knows, at every assistant turn of the positive split, which candidates the
conversation so far leaves open (O_k, the state the scripted teacher tracks), which options a
question offers (Q_k, read by meaning as the user-proxy reads it) and which required values of
the gold tool τ* the user has given. This module scores every question against that state; no
benchmark we know of scores the question itself deterministically. Notation as in
`diaforge.eval.decisions`: a *tool question* is a turn whose move is ``ask_tool`` (it offers two
candidates or more, one, or none), a *value question* one whose move is ``ask_value``.

Per tool question q at a_k::

    gold_offered(q)  = 1[τ* ∈ Q_k]
    |Q_k ∩ O_k|        the open tools it offers       |O_k|   the tools it should cover
    |Q_k ∖ O_k|        the ruled-out tools it names   |Q_k|   the options it offers

Over the tool questions T and value questions V of a set of dialogues D (one mode, positive
split)::

    gold_offered     = Σ_T gold_offered(q) / |T|                          (gold_offered_n / tool_questions_n)
    option_recall    = Σ_T |Q ∩ O| / Σ_T |O|                              (open_offered_n / open_n)
    option_precision = Σ_T |Q ∩ O| / Σ_T |Q|                              (open_offered_n / offered_n)
    redundant        = (asks_known_value_n + asks_settled_tool_n) / (|T| + |V|)   (redundant_n / questions_n)
    turns_to_settle  = Σ_{d settled} s(d) / settled_n

* ``ruled_out_offered_n`` = Σ_T |Q ∖ O|: a ruled-out tool a question names counts against its
  precision. An open question (Q = ∅) adds to the recall's denominator only.
* ``asks_known_value_n``: value questions that name a required parameter of τ* whose value the
  user has already given (read as the teacher reads values); ``asks_settled_tool_n``: tool
  questions asked while O_k has one member (nothing is left to ask about).
* s(d), the turn at which the tool is settled, is the position k of the first assistant turn of d
  at which O_k = {τ*}; d is *settled* when it has one (``settled_n`` of ``n`` dialogues). A
  vague opening never settles the tool, so s(d) = 1 means the opening named what the user needs.

Every share is rounded to 6 decimals and None over a zero denominator ("not computed": a model
that asks no question has no question to score). `compute_clarification` gives the dict of one
mode, `summarise_clarification` ``metrics.json`` -> ``clarification`` (one dict per mode); None
without tool specs (`diaforge.eval.tool_specs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from diaforge.eval.decisions import NOT_COMPUTED, DecisionPoint, replay_all
from diaforge.eval.metrics import split_by_mode
from diaforge.eval.tables import DOWN, MODE_TITLE, UP, counted_share, markdown_table
from diaforge.eval.tool_specs import ToolSpecs
from diaforge.eval.transcripts import Transcript

if TYPE_CHECKING:
    from diaforge.similarity import Encoder

__all__ = [
    "CLARIFICATION_KEYS",
    "CLARIFICATION_NOTE",
    "CLARIFICATION_SHARES",
    "clarification_section",
    "clarification_table",
    "compute_clarification",
    "decision_quality_section",
    "summarise_clarification",
]

CLARIFICATION_SHARES = (
    ("gold_offered", "gold_offered_n", "tool_questions_n"),
    ("option_recall", "open_offered_n", "open_n"),
    ("option_precision", "open_offered_n", "offered_n"),
    ("redundant", "redundant_n", "questions_n"),
)
"""(share, numerator, denominator) keys of every share, in the order reports show them."""

CLARIFICATION_KEYS = (
    "n",
    "tool_questions_n",
    "value_questions_n",
    "questions_n",
    "gold_offered_n",
    "gold_offered",
    "open_n",
    "offered_n",
    "open_offered_n",
    "ruled_out_offered_n",
    "option_recall",
    "option_precision",
    "asks_known_value_n",
    "asks_settled_tool_n",
    "redundant_n",
    "redundant",
    "settled_n",
    "turns_to_settle",
)
"""The keys of one mode of ``metrics.json`` -> ``clarification``."""

_ROUND = 6


def _share(num: int, den: int) -> float | None:
    return round(num / den, _ROUND) if den else None


def compute_clarification(
    transcripts: Sequence[Transcript],
    specs: ToolSpecs | None = None,
    encoder: Encoder | None = None,
    points: Sequence[list[DecisionPoint]] | None = None,
) -> dict[str, Any]:
    """The clarification quality of one mode's transcripts (the positive split; others are left
    out): the keys of `CLARIFICATION_KEYS`. Give `points` (`diaforge.eval.decisions.replay_all` of these
    transcripts) or the `specs` (and `encoder`) to replay them."""
    if points is None:
        if specs is None:
            raise ValueError("compute_clarification needs the decision points or the tool specs")
        points = replay_all(transcripts, specs, encoder)
    pairs = [(t, ps) for t, ps in zip(transcripts, points, strict=True) if t.split == "positive"]
    c = dict.fromkeys(
        (
            "tool_questions_n",
            "value_questions_n",
            "gold_offered_n",
            "open_n",
            "offered_n",
            "open_offered_n",
            "ruled_out_offered_n",
            "asks_known_value_n",
            "asks_settled_tool_n",
            "settled_n",
        ),
        0,
    )
    settle_turns = 0
    for t, ps in pairs:
        gold = t.seed_tool
        for p in ps:
            if p.move == "ask_tool":
                opened, offered = set(p.open), set(p.offered)
                c["tool_questions_n"] += 1
                c["gold_offered_n"] += gold in offered
                c["open_n"] += len(opened)
                c["offered_n"] += len(offered)
                c["open_offered_n"] += len(offered & opened)
                c["ruled_out_offered_n"] += len(offered - opened)
                c["asks_settled_tool_n"] += len(opened) == 1
            elif p.move == "ask_value":
                c["value_questions_n"] += 1
                c["asks_known_value_n"] += bool(p.known_named)
        settled = next((p.position for p in ps if p.open == (gold,)), None)
        if settled is not None:
            c["settled_n"] += 1
            settle_turns += settled
    out: dict[str, Any] = {"n": len(pairs), **c}
    out["questions_n"] = c["tool_questions_n"] + c["value_questions_n"]
    out["redundant_n"] = c["asks_known_value_n"] + c["asks_settled_tool_n"]
    for share, num, den in CLARIFICATION_SHARES:
        out[share] = _share(out[num], out[den])
    out["turns_to_settle"] = _share(settle_turns, c["settled_n"])
    return {k: out[k] for k in CLARIFICATION_KEYS}


def summarise_clarification(
    transcripts: Sequence[Transcript], specs: ToolSpecs | None, encoder: Encoder | None = None
) -> dict[str, Any] | None:
    """``metrics.json`` -> ``clarification``: `compute_clarification` per mode, or None when
    there are no tool specs."""
    if specs is None:
        return None
    return {
        mode: compute_clarification(ts, specs, encoder) for mode, ts in split_by_mode(transcripts).items()
    }


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

CLARIFICATION_NOTE = (
    "Every question of the positive split scored against the state the conversation supports (the "
    "tools still open, as the scripted teacher reads the user's answers): *gold offered*, the "
    "questions asking which tool whose options include the gold tool; *option recall*, the open "
    "tools they offer of all open tools; *option precision*, the open tools among the options they "
    "offer (a tool the user already ruled out counts against it); *redundant*, the questions that "
    "ask for a value the user gave or which tool when one is left; *settled*, the dialogues in which "
    "the gold tool became the only one open, and the mean assistant turn at which it did. "
    '"–": nothing to count. Definitions: docs/metrics.md, "Decisions and clarification", and '
    "`eval/clarification.py`."
)

_TITLES = {
    "gold_offered": f"gold offered ({UP})",
    "option_recall": f"option recall ({UP})",
    "option_precision": f"option precision ({UP})",
    "redundant": f"redundant questions ({DOWN})",
}


def _cell(m: Mapping[str, Any], share: str, num: str, den: str) -> str:
    return counted_share(m.get(share), int(m.get(num, 0)), int(m.get(den, 0)))


def clarification_table(rows: Sequence[tuple[str, Mapping[str, Any] | None]], first: str = "Mode") -> str:
    """One row per (label, `compute_clarification` dict): the questions, each share with its
    counts, the settled dialogues and the turns to settle; "–" for a row whose dict is None."""
    headers = [
        first,
        "tool questions",
        *(_TITLES[s] for s, _, _ in CLARIFICATION_SHARES),
        "settled",
        "turns to settle",
    ]
    body = []
    for label, m in rows:
        if m is None:
            body.append([label] + ["–"] * (len(headers) - 1))
            continue
        turns = m.get("turns_to_settle")
        body.append(
            [
                label,
                str(m.get("tool_questions_n", 0)),
                *(_cell(m, *k) for k in CLARIFICATION_SHARES),
                f"{m.get('settled_n', 0)}/{m.get('n', 0)}",
                "–" if turns is None else f"{turns:.2f}",
            ]
        )
    return markdown_table(headers, body)


def clarification_section(metrics: Mapping[str, Any]) -> list[str]:
    """The "Clarification quality" part of ``report.md``: one row per mode; a "not computed" line
    when ``metrics.json`` has no ``clarification`` (no tool specs)."""
    if "clarification" not in metrics:
        return []
    parts = ["## Clarification quality", CLARIFICATION_NOTE]
    found = metrics.get("clarification")
    if not isinstance(found, Mapping):
        parts.append(NOT_COMPUTED)
        return parts
    rows = [(MODE_TITLE.get(mode, mode), m) for mode, m in found.items() if isinstance(m, Mapping)]
    parts.append(clarification_table(rows))
    return parts


def _run_cells(metrics: Mapping[str, Any], mode: str) -> list[str]:
    d = (metrics.get("decisions") or {}).get(mode)
    c = (metrics.get("clarification") or {}).get(mode)
    cells = (
        ["–", "–"]
        if not isinstance(d, Mapping)
        else [
            _cell(d, "agree", "agree_n", "points_n"),
            _cell(d, "unsupported_calls", "unsupported_calls_n", "calls_n"),
        ]
    )
    cells += (
        ["–", "–"]
        if not isinstance(c, Mapping)
        else [
            _cell(c, "option_recall", "open_offered_n", "open_n"),
            _cell(c, "option_precision", "open_offered_n", "offered_n"),
        ]
    )
    return cells


def decision_quality_section(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The compact "Decisions and clarification" part of ``comparison.md``: one row per run, per
    mode the agreement with the reference move and the calls not supported by the conversation
    (`diaforge.eval.decisions`), the
    option recall and precision of its questions (this module); "–" where a run has none (no tool
    specs, or a ``metrics.json`` from before them). Nothing when no run has them."""
    if not any(isinstance(m.get("decisions"), Mapping) for _, m in rows):
        return []
    modes = [
        mode
        for mode in MODE_TITLE
        if any(isinstance((m.get("decisions") or {}).get(mode), Mapping) for _, m in rows)
    ]
    titles = (
        f"agree ({UP})",
        f"calls not supported ({DOWN})",
        f"option recall ({UP})",
        f"option precision ({UP})",
    )
    headers = ["Model", *(f"{MODE_TITLE[mode]} {t}" for mode in modes for t in titles)]
    body = [[label, *(cell for mode in modes for cell in _run_cells(m, mode))] for label, m in rows]
    note = (
        "Every decision against the reference move (both splits) and the share of calls the conversation "
        "does not support (tool not the one left open, or a value the user never gave; a share of "
        "calls, not When2Call's per-item tool hallucination rate; `eval/decisions.py`); the option "
        "recall and precision of the questions asking which tool (`eval/clarification.py`). "
        'Definitions: docs/metrics.md, "Decisions and clarification".'
    )
    return ["## Decisions and clarification", note, markdown_table(headers, body)]
