"""Rollouts with the teacher's answer (DAgger: Ross, Gordon and Bagnell, 2011): the model under
test plays the dynamic loop against the user-proxy, and at every assistant turn the scripted
teacher writes its own move for that exact history.

The loop is the dynamic evaluation's (`diaforge.eval.runner`): all seeds in lock step, a user turn
(the user-proxy's, drawn from ``seeded_rng(seed, id, step)``), then one batched model call. At each
assistant turn the teacher (`diaforge.eval.policies.ReferencePolicy`: the scripted teacher told the
gold tool once its selection is settled, taking every value from the live user-proxy; on a
retrieval miss, its miss-mode turn) answers the same history, and the two turns are compared
(`diaforge.eval.disagreements.classify`).

**Which move the dialogue continues on.** On the model's, since that is the state it will meet at
inference, except where the model's move ends the dialogue or leaves nothing a user could answer:
a call, a truncated or malformed output, and on a retrieval miss a refusal. There the loop
continues on the teacher's move, so that the rollout goes on to the states after the model's
mistake; were the model to stop calling too early, those are the states it would meet next. When
the teacher's move also ends the dialogue (both call, or both refuse), the dialogue ends on the
teacher's move. A dialogue also ends once the move it continued on is a call or (retrieval miss)
a refusal, or after `RolloutLoop.t_max` user turns.

Each assistant turn of the rollout's path (`Rollout.dialogue`, the project's dialogue format) is
the move followed, with the comparison under ``metadata["rollout"]`` (`ROLLOUT_KEY`): the
model's turn as it wrote it (``model``, with its ``kind`` and ``raw`` text), the teacher's turn
(``teacher``), the moves, the disagreement ``kind`` (None: they agree) and which turn the path
``followed``. `diaforge.data_gen.rollouts` turns these records into training data.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from diaforge.data_gen.agents import COMPLETION, DialogueState, User, is_refusal
from diaforge.eval.disagreements import classify, near_duplicate_names
from diaforge.eval.models import ModelUnderTest, Reply, reply_to_turn
from diaforge.eval.policies import ReferencePolicy
from diaforge.eval.runner import asks_for_arguments, user_rng
from diaforge.schema import Dialogue, Turn
from diaforge.similarity import Encoder

__all__ = ["ROLLOUT_KEY", "Rollout", "RolloutLoop", "play_rollouts"]

ROLLOUT_KEY = "rollout"
"""The ``metadata`` key of an assistant turn of a rollout's path that holds the comparison."""

FOLLOW_WHY = {
    "model": "the model's move keeps the dialogue going: the state it meets at inference",
    "teacher": "the model's move ends the dialogue or cannot be answered; the teacher's goes on",
    "both_end": "both moves end the dialogue; it ends on the teacher's",
}
"""Why a path followed the turn it did (``metadata["rollout"]["why"]``)."""


@dataclass
class RolloutLoop:
    """The rollout loop's settings."""

    t_max: int = 10
    """The most user turns a rollout takes (the dynamic evaluation's T_max). Default 10."""
    seed: int = 0
    """Seeds the user-proxy's wording (`diaforge.eval.runner.user_rng`) and the teacher's. Default 0."""
    progress: bool = True
    """Show a progress bar on stderr (turns played). Default True."""


@dataclass
class Rollout:
    """One seed played: its path in the dialogue format, how it ended and what it took."""

    dialogue: Dialogue
    """The seed record with the path's turns; each assistant turn holds the comparison (`ROLLOUT_KEY`),
    and its provenance how the rollout ended and its seconds (``rollout_ended``, ``rollout_seconds``)."""
    ended: str = ""
    """``teacher_call`` or ``refusal`` (the move followed ended it: always the teacher's, see the
    module docstring) or ``t_max``."""
    seconds: float = 0.0
    """Wall-clock seconds of the loop shared among the seeds played together, per seed."""


@dataclass
class _Run:
    seed: Dialogue
    state: DialogueState
    near: frozenset[str]
    ended: str | None = None
    turns: list[Turn] = field(default_factory=list)


def _ends(turn: Turn, kind: str, miss: bool) -> bool:
    """Whether a move ends the dialogue, or (malformed, truncated) leaves nothing to answer."""
    if kind in ("tool_calls", "malformed", "truncated"):
        return True
    return miss and is_refusal(turn.content)


def _dump(turn: Turn) -> dict[str, Any]:
    return turn.model_dump(mode="json", exclude={"metadata"}, exclude_none=True)


def _step(run: _Run, reply: Reply, teacher: Turn, encoder: Encoder | None) -> Turn:
    """The turn the path follows after one model reply, with the comparison in its metadata;
    sets `run.ended` when the dialogue ends there."""
    state, miss = run.state, run.seed.withheld_tool is not None
    mine = reply_to_turn(reply, phase=state.phase)
    said = "\n".join(state.user_texts)
    verdict = classify(
        mine,
        reply.kind,
        teacher,
        candidates=run.seed.candidate_tools,
        gold=run.seed.gold_tool,
        said=said,
        near=run.near,
        encoder=encoder,
    )
    model_ends = _ends(mine, reply.kind, miss)
    teacher_ends = _ends(teacher, "tool_calls" if teacher.tool_calls else "reply", miss)
    follow = "both_end" if model_ends and teacher_ends else "teacher" if model_ends else "model"
    chosen = teacher if follow != "model" else mine
    record = {
        "model": {**_dump(mine), "kind": reply.kind, "raw": reply.raw},
        "teacher": _dump(teacher),
        "model_move": verdict.model_move,
        "teacher_move": verdict.teacher_move,
        "kind": verdict.kind,
        "detail": verdict.detail,
        "followed": "model" if follow == "model" else "teacher",
        "why": FOLLOW_WHY[follow],
    }
    turn = chosen.model_copy(update={"metadata": {**chosen.metadata, ROLLOUT_KEY: record}})
    if _ends(chosen, "tool_calls" if chosen.tool_calls else "reply", miss):
        # A followed move of the model never ends the dialogue (a move that would is the teacher's).
        run.ended = "refusal" if miss and not chosen.tool_calls else "teacher_call"
    elif asks_for_arguments(chosen, state, encoder):
        state.phase = COMPLETION
    return turn


def _start(seed: Dialogue, encoder: Encoder | None) -> _Run:
    state = DialogueState(
        gold=seed.gold_tool or seed.withheld_tool,
        candidates=list(seed.candidate_tools),
        persona=seed.persona,
        goal=seed.goal,
        gold_args=dict(seed.gold_args),
    )
    return _Run(seed, state, near_duplicate_names(seed.gold_tool, seed.candidate_tools, encoder))


async def play_rollouts(
    model: ModelUnderTest,
    seeds: Sequence[Dialogue],
    user: User,
    teacher: ReferencePolicy,
    loop: RolloutLoop | None = None,
    *,
    encoder: Encoder | None = None,
) -> list[Rollout]:
    """Play every seed (a dialogue record with its persona, goal, gold arguments and candidates;
    its turns are ignored) as the module docstring says; one `Rollout` per seed, in order.
    `encoder` reads questions by meaning and finds near-duplicates (None: by words only)."""
    loop = loop or RolloutLoop()
    started = time.monotonic()
    runs = [_start(s, encoder) for s in seeds]
    bar = tqdm(
        total=len(runs) * loop.t_max, desc="turns", unit="turn", disable=not loop.progress, leave=False
    )
    for step in range(loop.t_max):
        active = [r for r in runs if r.ended is None]
        if not active:
            break
        for r in active:
            text, _ = await user.reply(r.state, user_rng(loop.seed, r.seed.id, step))
            r.state.turns.append(Turn(role="user", content=text))
        progress = [r.seed.model_copy(update={"turns": list(r.state.turns)}) for r in active]
        replies = await model.respond(progress)
        for r, d, reply in zip(active, progress, replies, strict=True):
            r.state.turns.append(_step(r, reply, teacher.turn(d), encoder))
            if r.ended is not None:
                bar.total -= loop.t_max - step - 1
        bar.update(len(active))
    bar.close()
    each = (time.monotonic() - started) / max(len(runs), 1)
    out = []
    for r in runs:
        ended, seconds = r.ended or "t_max", round(each, 3)
        provenance = r.seed.provenance.model_copy(deep=True)
        provenance.model_extra.update(rollout_ended=ended, rollout_seconds=seconds)
        dialogue = r.seed.model_copy(update={"turns": list(r.state.turns), "provenance": provenance})
        out.append(Rollout(dialogue, ended, seconds))
    return out
