"""DAgger-style SFT: the states a tuned model visited, each with the teacher's move, mixed with the
original corpus (recipe keys ``dagger_dataset_path`` and ``dagger_share``).

A rollout run (`diaforge data rollouts`, ``dialogues.jsonl``) holds one record per visited state:
the history as the model reached it, its assistant turns marked history only
(`diaforge.schema.HISTORY_ONLY`: never a training target), and the teacher's move, the one
target. So each state gives one sample, and an original dialogue as many as its assistant turns.

**The mix.** ``dagger_share`` s is the share of the training *samples* (trained turns) that come
from the states. With S states and O samples in the original dialogues, the mix keeps every
original dialogue and draws round(s / (1 - s) * O) states when there are that many; otherwise it
keeps every state and draws original dialogues (whole, in a seeded order) until their samples
reach S * (1 - s) / s. s = 1 trains on the states alone. The draws are seeded by the recipe's
``seed``; the result is in corpus order (originals first, then states).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from diaforge.schema import Dialogue

__all__ = ["mix_dagger", "trained_samples"]


def trained_samples(dialogues: Sequence[Dialogue]) -> int:
    """The samples `dialogues` give: their assistant turns that training takes as targets."""
    return sum(len(d.trained_turns()) for d in dialogues)


def mix_dagger(
    original: Sequence[Dialogue], states: Sequence[Dialogue], share: float, *, seed: int = 0
) -> tuple[list[Dialogue], dict[str, Any]]:
    """The mixed training dialogues (module docstring) and what the mix did (for the run's log and
    its data record): the dialogues and samples taken from each side, and the share reached."""
    if not 0.0 <= share <= 1.0 or math.isnan(share):
        raise ValueError(f"dagger_share must lie in [0, 1], got {share!r}")
    rng = random.Random(f"dagger:{seed}")
    kept, drawn = list(original), list(states)
    samples = trained_samples(original)
    if share == 0.0 or not states:
        drawn = []
    elif share == 1.0:
        kept = []
    else:
        want = round(share / (1.0 - share) * samples)
        if want <= len(states):
            drawn = sorted(rng.sample(range(len(states)), want))
            drawn = [states[i] for i in drawn]
        else:
            need, order, kept = len(states) * (1.0 - share) / share, list(range(len(original))), []
            rng.shuffle(order)
            total = 0
            for i in order:
                if total >= need:
                    break
                kept.append(i)
                total += len(original[i].trained_turns())
            kept = [original[i] for i in sorted(kept)]
    mixed = [*kept, *drawn]
    from_states = trained_samples(drawn)
    info = {
        "dagger_share": share,
        "original_dialogues": len(kept),
        "original_samples": trained_samples(kept),
        "dagger_states": len(drawn),
        "dagger_samples": from_states,
        "share_reached": round(from_states / max(trained_samples(mixed), 1), 4),
    }
    return mixed, info
