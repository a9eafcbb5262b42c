"""Static and dynamic evaluation (DiaFORGE §3.3).

- **static**: the user turns come from the benchmark's reference dialogue; the model writes every
  assistant turn in order, with its own earlier replies in the history (not the reference's), and
  the dialogue stops at its first tool call or when the reference runs out of user turns.
- **dynamic**: the model is the assistant inside the engine's loop with the frozen user-proxy
  (multi-sample voting, n candidates and m voters); up to T_max turn pairs, stopping at the first
  tool call.

In both, a reply cut off by the token budget (`Reply.kind == "truncated"`) also ends the
dialogue (``ended: "truncated"``): what the model meant to say is unknown, and the user-proxy is
not asked to answer half a sentence. On the no-tool split (`split="no_tool"`, `eval.no_tool`) the
first refusal ends the dialogue too (``ended: "refusal"``): it is the model's answer, as a call
is; the user-proxy pursues the tool the record withheld.

Both advance all dialogues in lock step, so each step is one batched generation call.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from data_gen.agents import COMPLETION, SELECTION, DialogueState, VotingUser
from data_gen.agents.refusal import is_refusal
from diaforge.rng import seeded_rng
from diaforge.schema import Dialogue, Turn
from diaforge.similarity import NEAR_DUPLICATE_THRESHOLD, Encoder, pair_score
from diaforge.text import humanise_param
from eval.models import TRUNCATED_REASON, ModelUnderTest, Reply, reply_to_turn


@dataclass
class DynamicConfig:
    """The dynamic loop: turn cap, voting sizes, seed."""

    t_max: int = 10
    n_samples: int = 3
    n_voters: int = 3
    seed: int = 0


def near_duplicate_flags(bench: Sequence[Dialogue], encoder: Encoder) -> dict[str, bool]:
    """Whether a candidate of each dialogue is a near-duplicate (A.4, >= 0.70) of its gold tool."""
    flags: dict[str, bool] = {}
    for d in bench:
        gold = d.gold_tool or d.withheld_tool  # a retrieval miss: near-duplicates of what the user needs
        if gold is None:
            flags[d.id] = False
            continue
        others = [c for c in d.candidate_tools if c.name != gold.name]
        vecs = encoder.encode([gold.description, *[c.description for c in others]])
        flags[d.id] = any(
            pair_score(gold, c, vecs[0], vecs[i + 1]).score >= NEAR_DUPLICATE_THRESHOLD
            for i, c in enumerate(others)
        )
    return flags


def _turn_record(turn: Turn, reply: Reply | None = None) -> dict[str, Any]:
    if turn.role == "user":
        return {"role": "user", "content": turn.content}
    p = reply.parsed
    kind = reply.kind
    return {
        "role": "assistant",
        "content": p.content if kind == "reply" else "",
        "raw": reply.raw,
        "kind": kind,
        "thought": p.thought,
        "tool_calls": [{"name": c.name, "args": c.args} for c in p.tool_calls]
        if kind == "tool_calls"
        else None,
        "reason": TRUNCATED_REASON if kind == "truncated" else p.reason,
    }


def _bar_name(mode: str, split: str) -> str:
    """The progress bar of a mode: "static", or "no-tool static" for the no-tool split."""
    return mode if split == "positive" else f"no-tool {mode}"


def _ending(reply: Reply, split: str) -> str | None:
    """How a reply ends the dialogue: at a call, a cut-off reply, or (no-tool split) a refusal."""
    if reply.kind in ("tool_calls", "truncated"):
        return "tool_call" if reply.kind == "tool_calls" else "truncated"
    if split == "no_tool" and reply.kind == "reply" and is_refusal(reply.parsed.content):
        return "refusal"
    return None


def _transcript(
    d: Dialogue, mode: str, label: str, records: list[dict], ended: str, near_dup: bool, split: str
) -> dict[str, Any]:
    gold = d.gold_tool
    withheld = d.withheld_tool
    return {
        "id": d.id,
        "mode": mode,
        "model": label,
        "seed_tool": d.seed_tool,
        "gold_args": d.gold_args,
        "candidate_tools": [c.name for c in d.candidate_tools],
        "required_params": len(gold.required) if gold else 0,
        "has_near_duplicate": near_dup,
        "turns": records,
        "convrel": None,
        "ended": ended,
        "error": None,
        "split": split,
        "withheld_tool": withheld.name if withheld is not None else None,
    }


def _drop_turns(bar: Any, turns: int) -> None:
    """A dialogue that ended early will not take its last `turns` turns: they leave the bar's
    total (the most turns every dialogue could take), so the bar ends at 100 % with no ETA left."""
    if turns > 0:
        bar.total -= turns
        bar.refresh()


def _in_progress(d: Dialogue, turns: list[Turn]) -> Dialogue:
    return d.model_copy(update={"turns": turns})


async def run_static(
    model: ModelUnderTest,
    bench: Sequence[Dialogue],
    near_dup: dict[str, bool],
    *,
    progress: bool = True,
    split: str = "positive",
) -> list[dict[str, Any]]:
    """Static evaluation of every benchmark dialogue; returns transcript records."""
    states = []
    for d in bench:
        users = [t for t in d.turns if t.role == "user"]
        states.append({"d": d, "users": users, "turns": [], "records": [], "ended": None})
    steps = max((len(s["users"]) for s in states), default=0)
    bar = tqdm(
        total=sum(len(s["users"]) for s in states),
        desc=_bar_name("static", split),
        unit="turn",
        disable=not progress,
    )
    for step in range(steps):
        active = [s for s in states if s["ended"] is None and step < len(s["users"])]
        for s in states:
            if s["ended"] is None and step >= len(s["users"]):
                s["ended"] = "reference_end"
        if not active:
            break
        for s in active:
            user = s["users"][step]
            s["turns"].append(user)
            s["records"].append(_turn_record(user))
        replies = await model.respond([_in_progress(s["d"], s["turns"]) for s in active])
        for s, reply in zip(active, replies, strict=True):
            turn = reply_to_turn(reply)
            s["turns"].append(turn)
            s["records"].append(_turn_record(turn, reply))
            s["ended"] = _ending(reply, split)
            if s["ended"] is not None:
                _drop_turns(bar, len(s["users"]) - step - 1)
        bar.update(len(active))
    bar.close()
    out = []
    for s in states:
        out.append(
            _transcript(
                s["d"],
                "static",
                model.label,
                s["records"],
                s["ended"] or "reference_end",
                near_dup[s["d"].id],
                split,
            )
        )
    return out


async def run_dynamic(
    model: ModelUnderTest,
    bench: Sequence[Dialogue],
    near_dup: dict[str, bool],
    user: VotingUser,
    cfg: DynamicConfig,
    *,
    progress: bool = True,
    split: str = "positive",
) -> list[dict[str, Any]]:
    """Dynamic evaluation: the model plays the assistant against the frozen voting user-proxy."""
    states = []
    for d in bench:
        state = DialogueState(
            gold=d.gold_tool or d.withheld_tool,
            candidates=list(d.candidate_tools),
            persona=d.persona,
            goal=d.goal,
            gold_args=dict(d.gold_args),
        )
        states.append({"d": d, "state": state, "records": [], "ended": None})
    bar = tqdm(
        total=len(states) * cfg.t_max, desc=_bar_name("dynamic", split), unit="turn", disable=not progress
    )
    for step in range(cfg.t_max):
        active = [s for s in states if s["ended"] is None]
        if not active:
            break
        for s in active:
            rng = seeded_rng(cfg.seed, s["d"].id, step)
            text, _ = await user.reply(s["state"], rng)
            turn = Turn(role="user", content=text)
            s["state"].turns.append(turn)
            s["records"].append(_turn_record(turn))
        replies = await model.respond([_in_progress(s["d"], s["state"].turns) for s in active])
        for s, reply in zip(active, replies, strict=True):
            turn = reply_to_turn(reply, phase=s["state"].phase)
            s["state"].turns.append(turn)
            s["records"].append(_turn_record(turn, reply))
            s["ended"] = _ending(reply, split)
            if s["ended"] is not None:
                _drop_turns(bar, cfg.t_max - step - 1)
            elif asks_for_arguments(turn, s["state"]):
                s["state"].phase = COMPLETION
        bar.update(len(active))
    bar.close()
    out = []
    for s in states:
        out.append(
            _transcript(
                s["d"],
                "dynamic",
                model.label,
                s["records"],
                s["ended"] or "t_max",
                near_dup[s["d"].id],
                split,
            )
        )
    return out


def asks_for_arguments(turn: Turn, state: DialogueState) -> bool:
    """Whether an assistant reply asks for one of the gold tool's required arguments (the user-proxy
    then moves to giving values)."""
    if state.phase != SELECTION or not turn.content:
        return False
    low = turn.content.lower()
    return any(humanise_param(k).lower() in low or k.lower() in low for k in state.gold.required)


def sample_benchmark(bench: Sequence[Dialogue], limit: int | None, seed: int = 0) -> list[Dialogue]:
    """The first `limit` dialogues after a seeded shuffle (all of them when limit is None)."""
    items = list(bench)
    if limit is None or limit >= len(items):
        return items
    random.Random(seed).shuffle(items)
    return sorted(items[:limit], key=lambda d: d.id)
