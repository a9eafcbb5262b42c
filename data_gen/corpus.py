"""Corpus statistics of a set of dialogues: `python -m diaforge.data_gen analyze-corpus DIALOGUES.jsonl`.

What `analyze_corpus` reports (every number in one JSON object, see `format_corpus_report`):

* **turns**: total, user and assistant turns, turns per dialogue (mean, median, min, max and a
  histogram), calls per dialogue;
* **dialogue acts**: the distribution of the coarse CONFETTI label (`act`: seek_info, inform,
  reject, function_calling, other) and of the fine ToolDial action (`action`: clarify, request,
  suggest, call, response, response_fail, system_bye, retriever_call) over assistant turns, their
  joint distribution, how many assistant turns carry both labels, and every consistency violation
  (`label_violations`);
* **DICE-Score** (DICE-Bench, Eq. 1; `diaforge.dice`, whose docstring gives the rules): per
  dialogue, then mean, median, min, max and how many dialogues had an undefined score (scored 0.0);
* **lexical diversity**: TTR and NGD-2/3/4 over the assistant's replies (the same definitions and
  tokenisation as an evaluation run's, `diaforge.text.ttr` / `ngd`, so the numbers compare with an
  evaluation run's) and, separately, over the user turns.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any, get_args

from diaforge.dice import DICE_ALPHA, dialogue_dice_counts, dice_score
from diaforge.schema import ACT_OF_ACTION, CALL_ACTIONS, Dialogue, DialogueAct, SystemAction
from diaforge.text import ngd, tokenize, ttr

__all__ = [
    "ACTS",
    "ACTIONS",
    "analyze_corpus",
    "format_corpus_report",
    "label_violations",
]

ACTS: tuple[str, ...] = get_args(DialogueAct)
"""CONFETTI's coarse dialogue acts, in schema order."""
ACTIONS: tuple[str, ...] = get_args(SystemAction)
"""ToolDial's fine system actions, in schema order."""

_ROUND = 6


# --------------------------------------------------------------------------------------------
# Dialogue-act labels
# --------------------------------------------------------------------------------------------


def label_violations(d: Dialogue) -> list[str]:
    """Every problem with the act/action labels of `d`'s assistant turns, one string each:

    * a turn without an `act` or without an `action`;
    * an action whose act is not the one it implies (`diaforge.schema.ACT_OF_ACTION`:
      clarify/request/suggest -> seek_info, call/retriever_call -> function_calling,
      response -> inform, response_fail -> reject, system_bye -> other);
    * a turn with tool calls not labelled function_calling and call/retriever_call;
    * a turn without tool calls labelled call/retriever_call or function_calling (a clarify or
      request turn, like every other non-call turn, has no call).
    """
    out = []
    for i, t in enumerate(d.turns):
        if t.role != "assistant":
            continue
        where = f"{d.id} turn {i}"
        if t.act is None or t.action is None:
            missing = " and ".join(k for k in ("act", "action") if getattr(t, k) is None)
            out.append(f"{where}: no {missing}")
            continue
        if ACT_OF_ACTION.get(t.action) != t.act:
            out.append(
                f"{where}: action {t.action!r} implies act {ACT_OF_ACTION.get(t.action)!r}, got {t.act!r}"
            )
        if t.tool_calls and (t.act != "function_calling" or t.action not in CALL_ACTIONS):
            out.append(f"{where}: has tool calls but is labelled {t.act}/{t.action}")
        if not t.tool_calls and (t.act == "function_calling" or t.action in CALL_ACTIONS):
            out.append(f"{where}: labelled {t.act}/{t.action} but has no tool call")
    return out


# --------------------------------------------------------------------------------------------
# Lexical diversity (`diaforge.text`: the definitions of diaforge.eval.metrics' TTR and NGD)
# --------------------------------------------------------------------------------------------


def _diversity(texts: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"texts": len(texts), "tokens": sum(len(tokenize(text)) for text in texts)}
    out["TTR"] = round(ttr(texts), _ROUND)
    for n in (2, 3, 4):
        out[f"NGD{n}"] = round(ngd(texts, n), _ROUND)
    return out


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {
        "mean": round(statistics.fmean(values), _ROUND),
        "median": round(float(statistics.median(values)), _ROUND),
        "min": round(float(min(values)), _ROUND),
        "max": round(float(max(values)), _ROUND),
    }


def analyze_corpus(
    dialogues: Sequence[Dialogue],
    *,
    dice_counts: dict[str, tuple[list[int], int]] | None = None,
    counter_name: str = "value-matcher",
    max_examples: int = 20,
) -> dict[str, Any]:
    """Every statistic of the module docstring for `dialogues`, as one JSON-able dict.

    `dice_counts` ({dialogue id: (S, T)}) replaces the deterministic item counter, e.g. with the
    output of `LLMItemCounter.corpus_counts`; `counter_name` says which counter produced them.
    """
    n = len(dialogues)
    turn_counts = [len(d.turns) for d in dialogues]
    assistant = [t for d in dialogues for t in d.turns if t.role == "assistant"]
    users = [t for d in dialogues for t in d.turns if t.role == "user"]
    acts = Counter(t.act or "unlabelled" for t in assistant)
    actions = Counter(t.action or "unlabelled" for t in assistant)
    pairs = Counter(f"{t.act or '-'}/{t.action or '-'}" for t in assistant)
    violations = [v for d in dialogues for v in label_violations(d)]
    scores, undefined = [], 0
    for d in dialogues:
        counts, total = dice_counts[d.id] if dice_counts is not None else dialogue_dice_counts(d)
        if total == 0 or not any(counts):
            undefined += 1
        scores.append(dice_score(counts, total))
    replies = [t.content for t in assistant if not t.tool_calls and t.content.strip()]
    return {
        "dialogues": n,
        "turns": {
            "total": sum(turn_counts),
            "user": len(users),
            "assistant": len(assistant),
            "per_dialogue": _summary(turn_counts),
            "assistant_per_dialogue": _summary(
                [sum(1 for t in d.turns if t.role == "assistant") for d in dialogues]
            ),
            "histogram": {str(k): v for k, v in sorted(Counter(turn_counts).items())},
            "tool_calls": sum(len(t.tool_calls or []) for t in assistant),
        },
        "acts": {k: acts[k] for k in (*ACTS, "unlabelled") if acts[k]},
        "actions": {k: actions[k] for k in (*ACTIONS, "unlabelled") if actions[k]},
        "act_action": dict(sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))),
        "labels": {
            "assistant_turns": len(assistant),
            "fully_labelled": sum(1 for t in assistant if t.act is not None and t.action is not None),
            "violations": len(violations),
            "violation_examples": violations[:max_examples],
        },
        "dice": {
            "counter": counter_name,
            "alpha": round(DICE_ALPHA, _ROUND),
            **_summary(scores),
            "undefined": undefined,
            "n": n,
        },
        "diversity": {"assistant": _diversity(replies), "user": _diversity([t.content for t in users])},
        "seed_tools": len({d.seed_tool for d in dialogues if d.seed_tool is not None}),
    }


def format_corpus_report(stats: dict[str, Any]) -> str:
    """A readable summary of `analyze_corpus` output."""
    t, lab, dice, div = stats["turns"], stats["labels"], stats["dice"], stats["diversity"]
    per = t["per_dialogue"]
    lines = [
        f"dialogues:            {stats['dialogues']} ({stats['seed_tools']} distinct seed tools)",
        f"turns:                {t['total']} ({t['user']} user, {t['assistant']} assistant, {t['tool_calls']} tool calls)",
        f"turns per dialogue:   mean {per['mean']:.2f}, median {per['median']:g}, min {per['min']:g}, max {per['max']:g}",
        "turn histogram:       " + ", ".join(f"{k}: {v}" for k, v in t["histogram"].items()),
        f"DICE-Score ({dice['counter']}): mean {dice['mean']:.4f}, median {dice['median']:.4f}, "
        f"min {dice['min']:.4f}, max {dice['max']:.4f}; undefined (scored 0): {dice['undefined']}",
    ]
    for who in ("assistant", "user"):
        d = div[who]
        lines.append(
            f"{who + ' diversity:':<22}TTR {d['TTR']:.4f}  NGD2 {d['NGD2']:.4f}  NGD3 {d['NGD3']:.4f}  "
            f"NGD4 {d['NGD4']:.4f}  ({d['texts']} texts, {d['tokens']} tokens)"
        )
    total = max(1, lab["assistant_turns"])
    lines.append("")
    lines.append(
        f"labels: {lab['fully_labelled']}/{lab['assistant_turns']} assistant turns carry act and action "
        f"({lab['fully_labelled'] / total:.1%}); consistency violations: {lab['violations']}"
    )
    lines.append("acts:    " + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in stats["acts"].items()))
    lines.append("actions: " + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in stats["actions"].items()))
    lines.append("act/action: " + ", ".join(f"{k} {v}" for k, v in stats["act_action"].items()))
    for v in lab["violation_examples"]:
        lines.append(f"  violation: {v}")
    return "\n".join(lines)
