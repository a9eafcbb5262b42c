"""Retrieval misses in a generation run: which seeds are misses, their candidates,
their dialogue loop, and what `stats.json` says about them.

DiaFORGE assumes that the retriever always returns the gold tool; in production it misses, and a
model trained only on dialogues where some candidate is right learns to call one anyway, most
likely a near-duplicate. A run's `no_tool_share` (`GenerationConfig`) of its seeds become
*retrieval misses*:

* **Which seeds.** Exactly ``floor(share * num_dialogues + 0.5)`` seed indices, drawn by a generator
  seeded with the run seed alone (`miss_seeds`): every shard and every rerun agrees, and a share
  of 0 draws nothing, so the run makes the corpus it made before misses existed.
* **Candidates.** The k+1 tools nearest the seed tool (k+1 random ones with `distractors:
  random`), shuffled (`miss_candidates`): the seed tool is out, its near neighbours stay, and a
  miss shows as many candidates as any other dialogue, so their count tells a model nothing.
* **The dialogue** (`converse_miss`). The user-proxy pursues the seed tool as usual; the teacher
  disambiguates and, once the user has turned every candidate down, says plainly that none of its
  tools does that (`diaforge.data_gen.agents.refusal`). The dialogue ends at that refusal. A call is a wrong
  selection (stage `selection`, retried like one); no refusal within `t_max` is a `t_max` reject.
* **The record.** ``seed_tool: null``, id ``<index>-miss-<tool>``, the seed tool's spec in
  ``provenance.withheld_tool`` and its values in ``gold_args`` (what the user would give). The
  cascade is format -> no_tool -> naturalness (`diaforge.data_gen.validators`), then the two judges; a
  `no_tool` reject (a call, an early refusal, a request for arguments) is retried.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from diaforge.data_gen.agents import DialogueState, Teacher, User
from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.llm.base import Usage
from diaforge.rng import seeded_rng
from diaforge.schema import Dialogue, Tool, Turn
from diaforge.similarity import DistractorRetriever


def miss_count(num_dialogues: int, share: float) -> int:
    """How many of `num_dialogues` seeds a share makes retrieval misses (halves round up)."""
    return min(num_dialogues, math.floor(share * num_dialogues + 0.5)) if share > 0 else 0


def miss_seeds(num_dialogues: int, share: float, seed: int) -> frozenset[int]:
    """The seed indices that are retrieval misses: `miss_count` of them, drawn from the run seed."""
    count = miss_count(num_dialogues, share)
    if count == 0:
        return frozenset()
    return frozenset(seeded_rng(seed, "no_tool").sample(range(num_dialogues), count))


def miss_candidates(
    retriever: DistractorRetriever, gold: Tool, k: int, distractors: str, rng: random.Random
) -> list[Tool]:
    """The candidates of a miss: k+1 neighbours of `gold` (nearest, or random), shuffled."""
    if distractors == "random":
        picks = retriever.random(gold.name, k + 1, rng)
    else:
        picks = retriever.topk(gold.name, k + 1)
    pool = list(picks)
    rng.shuffle(pool)
    return pool


async def converse_miss(
    user: User,
    teacher: Teacher,
    state: DialogueState,
    rng: random.Random,
    usage: Usage,
    t_max: int,
) -> tuple[bool, str | None]:
    """A miss's dialogue, at most `t_max` user turns, until the teacher refuses. Returns whether it
    did, and the tool it called instead (or None). A call is kept in the turns, so the reject shows it."""
    for _ in range(t_max):
        text, u = await user.reply(state, rng)
        usage.add(u)
        state.turns.append(Turn(role="user", content=text))
        move = await teacher.act(state, rng)
        usage.add(move.usage)
        state.turns.append(move.turn)
        if move.turn.tool_calls:
            return False, move.turn.tool_calls[0].name
        if is_refusal(move.turn.content):
            return True, None
    return False, None


def no_tool_stats(dialogues: Sequence[Dialogue], *, share: float, seeds: int) -> dict[str, Any]:
    """`stats.json` -> ``no_tool``: the configured share, the seeds it made misses, how many of
    them were accepted, their share of the accepted corpus, and how many assistant turns an
    accepted miss took to its refusal (mean)."""
    misses = [d for d in dialogues if d.withheld_tool is not None]
    turns = [len(d.assistant_turns()) for d in misses]
    return {
        "share": share,
        "seeds": seeds,
        "accepted": len(misses),
        "accepted_share": len(misses) / len(dialogues) if dialogues else 0.0,
        "mean_turns_to_refusal": sum(turns) / len(turns) if turns else None,
    }
