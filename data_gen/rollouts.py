"""The generator's side of rollouts (`diaforge data rollouts`): the seeds a tuned model plays, and
what its rollouts become as training data.

The model plays in `diaforge.eval.rollouts` (the model under test lives in ``eval``, which sits above
this package); the command that joins the two is `diaforge.pipeline.rollouts`. Here:

* **Seeds** (`RolloutSeeds`): seeds drawn as `generate` draws them (persona, gold arguments, goal,
  candidate pool; `diaforge.data_gen.seed_engine.Engine.seed_record`) from the training tools
  only. A catalogue with a ``split`` per tool gives its ``train`` tools; any tool of the
  ``heldout`` split or named by the benchmark (`benchmark_tools`) is left out of the seeds and of
  the distractor pool, and `check_no_heldout` refuses a record that names one (the leakage check).
* **DAgger states** (`dagger_states`): one record per assistant turn of a rollout's path: the
  history as the model reached it, every earlier assistant turn marked history only
  (`diaforge.schema.HISTORY_ONLY`: training never takes it as a target), then the teacher's move for
  that history. `validate_state` runs the generator's rule validators on it; the accepted states
  are the SFT corpus that a recipe mixes with the original one (``dagger_dataset_path``,
  ``dagger_share``: `diaforge.train.dagger`).
* **On-policy pairs** (`on_policy_pairs`): at every turn where the two disagree, the teacher's move
  as chosen and the model's own move as rejected, after the same prompt, as the pair records of
  `diaforge data pairs` (`diaforge.format.pair_record`, variant ``on_policy``, kind the
  disagreement's), for the existing DPO stage. A malformed or truncated output is left out: its
  text is no turn, and rendered back as one it would not be what the model wrote.
* **Statistics** (`rollout_stats`): the disagreements by kind, the moves, which move the paths
  followed, how they ended, the states the validators accepted and refused, the pairs, the time.

A path's assistant turns hold the comparison under ``metadata["rollout"]`` (``model``, ``teacher``,
``kind``, ``followed``, ...; `diaforge.eval.rollouts` documents it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.data_gen.validators import (
    format_validator,
    naturalness_validator,
    no_tool_validator,
    toolargs_validator,
    toolcall_validator,
)
from diaforge.errors import InputError
from diaforge.format import pair_record
from diaforge.schema import HISTORY_ONLY, Dialogue, Tool, Turn, Verdict, load_dialogues

__all__ = [
    "ROLLOUT_KEY",
    "ROLLOUT_SOURCE",
    "RolloutSeeds",
    "benchmark_tools",
    "check_no_heldout",
    "dagger_states",
    "on_policy_pairs",
    "rollout_stats",
    "training_tools",
    "validate_state",
]

ROLLOUT_KEY = "rollout"
"""The ``metadata`` key of a path's assistant turn that holds the comparison (as ``eval`` writes it)."""
ROLLOUT_SOURCE = "rollout"
"""``provenance.source`` of a rollout's path and of its states."""
PAIR_VARIANT = "on_policy"
"""The ``variant`` of an on-policy pair (the generator's synthetic pairs name theirs)."""
UNPAIRED = ("malformed", "truncated")
"""Disagreement kinds that make no pair (the model's text is no turn)."""


def benchmark_tools(path: str | Path | None) -> set[str]:
    """The names of every tool a benchmark file shows (gold, candidates, withheld); empty for None."""
    if path is None:
        return set()
    names: set[str] = set()
    for d in load_dialogues(path):
        names.update(t.name for t in d.candidate_tools)
        names.update(t.name for t in (d.gold_tool, d.withheld_tool) if t is not None)
        if d.seed_tool:
            names.add(d.seed_tool)
    return names


def training_tools(tools: Sequence[Tool], held_out: set[str], *, path: str | Path) -> tuple[list[Tool], int]:
    """The tools rollouts may use and how many were left out: with a ``split`` on any tool, those
    of split ``train``; never one of split ``heldout`` nor one named in `held_out`. `InputError`
    (naming the catalogue) when none is left."""
    split = any("split" in t.metadata for t in tools)
    kept = [
        t
        for t in tools
        if (not split or t.metadata.get("split") == "train")
        and t.metadata.get("split") != "heldout"
        and t.name not in held_out
    ]
    if not kept:
        why = "no tool of split 'train'" if split else "every tool is named by the benchmark"
        raise InputError(
            f"no tool left for rollouts ({why}); rollouts play training tools only, never a held-out one",
            path=path,
            field="catalogue",
        )
    return kept, len(tools) - len(kept)


def check_no_heldout(records: Iterable[Dialogue], held_out: set[str], *, path: str | Path) -> None:
    """The leakage check: `InputError` naming the record when one shows a held-out tool."""
    for d in records:
        shown = {t.name for t in d.candidate_tools} | ({d.seed_tool} if d.seed_tool else set())
        leaked = sorted(shown & held_out)
        if leaked:
            raise InputError(
                f"shows held-out tool {leaked[0]!r}", path=path, record=d.id, field="candidate_tools"
            )


class RolloutSeeds:
    """The seeds of a rollout run, drawn as `generate` draws them from `tools` (the training tools:
    `training_tools`) with the generation config `cfg` (its seed, k, shards, wording, encoder)."""

    def __init__(self, cfg: Any, tools: Sequence[Tool]) -> None:
        from diaforge.data_gen.seed_engine import Engine

        self.engine = Engine(cfg, tools)

    def indices(self) -> list[int]:
        """The seed indices of this shard (seed i runs in shard i mod num_shards)."""
        return self.engine.seed_indices()

    async def record(self, index: int) -> Dialogue:
        """Seed `index` with no turns, its provenance marked as a rollout's."""
        d = await self.engine.seed_record(index)
        d.provenance.source = ROLLOUT_SOURCE
        return d


def _comparison(turn: Turn) -> dict[str, Any] | None:
    return turn.metadata.get(ROLLOUT_KEY) if turn.role == "assistant" else None


def _as_history(turn: Turn) -> Turn:
    """An assistant turn of the path as a history turn: no comparison, marked history only."""
    if turn.role != "assistant":
        return turn
    meta = {k: v for k, v in turn.metadata.items() if k != ROLLOUT_KEY}
    return turn.model_copy(update={"metadata": {**meta, HISTORY_ONLY: True}})


def _turn(record: dict[str, Any]) -> Turn:
    return Turn.model_validate({k: v for k, v in record.items() if k not in ("kind", "raw")})


def dagger_states(path: Dialogue, *, only_disagreements: bool = False) -> list[Dialogue]:
    """The visited states of one rollout's path, each ending with the teacher's move (module
    docstring); with `only_disagreements`, only the states where the model's move differed."""
    out = []
    for i, turn in enumerate(path.turns):
        comparison = _comparison(turn)
        if comparison is None or (only_disagreements and comparison["kind"] is None):
            continue
        target = _turn(comparison["teacher"])
        history = [_as_history(t) for t in path.turns[:i]]
        provenance = path.provenance.model_copy(
            update={"source": ROLLOUT_SOURCE},
            deep=True,
        )
        extra = provenance.model_extra if provenance.model_extra is not None else {}
        extra[ROLLOUT_KEY] = {
            "path": path.id,
            "turn_index": i,
            "kind": comparison["kind"],
            "model_move": comparison["model_move"],
            "teacher_move": comparison["teacher_move"],
        }
        out.append(
            path.model_copy(
                update={"id": f"{path.id}/{i}", "turns": [*history, target], "provenance": provenance}
            )
        )
    return out


def validate_state(state: Dialogue) -> list[Verdict]:
    """The rule validators that judge a state ending with the teacher's move: format and
    naturalness always; tool call and arguments when the move is a call; the no-tool validator
    when it is the refusal of a retrieval miss. Stops at the first failure, as the cascade does."""
    last = state.turns[-1]
    checks = [format_validator, naturalness_validator]
    if last.tool_calls:
        checks += [toolcall_validator, toolargs_validator]
    elif state.withheld_tool is not None and is_refusal(last.content):
        checks.append(no_tool_validator)
    verdicts = []
    for check in checks:
        verdicts.append(check(state))
        if not verdicts[-1].passed:
            break
    return verdicts


def on_policy_pairs(path: Dialogue) -> list[dict[str, Any]]:
    """The pair records of one path: at each turn where the model disagreed (but for a malformed or
    truncated output), the teacher's move chosen, the model's rejected, the same history before."""
    out = []
    for state in dagger_states(path, only_disagreements=True):
        i = state.provenance.model_extra[ROLLOUT_KEY]["turn_index"]
        comparison = path.turns[i].metadata[ROLLOUT_KEY]
        if comparison["kind"] in UNPAIRED:
            continue
        rejected = _turn(comparison["model"]).model_copy(update={"phase": None})
        out.append(
            pair_record(state, len(state.turns) - 1, rejected, kind=comparison["kind"], variant=PAIR_VARIANT)
        )
    return out


def rollout_stats(
    paths: Sequence[Dialogue],
    rejects: Sequence[dict[str, Any]],
    pairs: Sequence[dict[str, Any]],
    *,
    kinds: Sequence[str] = (),
    states_accepted: int = 0,
) -> dict[str, Any]:
    """``stats.json`` of a rollout run: every kind of `kinds` counted (0 when none), then any
    other kind met; the moves (``teacher->model``), the move followed, the endings, the states
    accepted and refused (by validator), the pairs by kind and the seconds per dialogue."""
    comparisons = [c for d in paths for t in d.turns if (c := _comparison(t)) is not None]
    by_kind = Counter(c["kind"] for c in comparisons if c["kind"] is not None)
    seconds = [float((d.provenance.model_extra or {}).get("rollout_seconds", 0.0)) for d in paths]
    endings = Counter(str((d.provenance.model_extra or {}).get("rollout_ended")) for d in paths)
    return {
        "dialogues": len(paths),
        "assistant_turns": len(comparisons),
        "agreements": sum(c["kind"] is None for c in comparisons),
        "disagreements": sum(by_kind.values()),
        "by_kind": {
            **{k: by_kind.get(k, 0) for k in kinds},
            **{k: n for k, n in sorted(by_kind.items()) if k not in kinds},
        },
        "dialogues_with_disagreement": sum(
            any((c := _comparison(t)) is not None and c["kind"] is not None for t in d.turns) for d in paths
        ),
        "moves": dict(
            sorted(Counter(f"{c['teacher_move']}->{c['model_move']}" for c in comparisons).items())
        ),
        "followed": dict(sorted(Counter(c["followed"] for c in comparisons).items())),
        "ended": dict(sorted(endings.items())),
        "states_accepted": states_accepted,
        "states_rejected": len(rejects),
        "reject_validators": dict(sorted(Counter(r["validator"] for r in rejects).items())),
        "pairs": len(pairs),
        "pairs_by_kind": dict(sorted(Counter(p["kind"] for p in pairs).items())),
        "seconds_per_dialogue": round(sum(seconds) / len(seconds), 3) if seconds else None,
    }
