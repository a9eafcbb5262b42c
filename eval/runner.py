"""Static and dynamic evaluation (DiaFORGE §3.3).

- **static**: the user turns come from the benchmark's reference dialogue; the model writes every
  assistant turn in order, with its own earlier replies in the history (not the reference's), and
  the dialogue stops at its first tool call or when the reference runs out of user turns. A
  reference policy (no model) is also handed the reference's own assistant turns, the questions
  those user turns answer (`DialogueRun.answered`, `eval.policies.ReferencePolicy.respond`).
- **dynamic**: the model is the assistant inside the engine's loop with the frozen user-proxy
  (multi-sample voting, n candidates and m voters); up to T_max turn pairs, stopping at the first
  tool call. With ``repeats`` k > 1 every dialogue is played k times, one repeat after the other
  (each as the whole benchmark in lock step, so repeat 0 is batched exactly as a run without
  repeats is): repeat r draws the user-proxy's turns from the generator
  ``seeded_rng(seed, id, step)`` for r = 0 (the run without repeats, unchanged) and
  ``seeded_rng(seed, id, step, "repeat", r)`` for r > 0. Only the user's wording changes between
  repeats; the model's decoding is whatever it is configured to be (greedy stays greedy). pass^k
  over the repeats is `diaforge.eval.passk`. Static mode has no user-proxy and is never repeated.

In both, a reply cut off by the token budget (`Reply.kind == "truncated"`) also ends the
dialogue (``ended: "truncated"``): what the model meant to say is unknown, and the user-proxy is
not asked to answer half a sentence. On the no-tool split (`split="no_tool"`, `diaforge.eval.no_tool`) the
first refusal ends the dialogue too (``ended: "refusal"``): it is the model's answer, as a call
is; the user-proxy pursues the tool the record withheld.

Both advance all dialogues in lock step (`DialogueRun` is one dialogue's state), so each step is
one batched generation call, and return one `diaforge.eval.transcripts.Transcript` per dialogue.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from diaforge.data_gen.agents import COMPLETION, SELECTION, DialogueState, User
from diaforge.data_gen.agents.refusal import is_refusal
from diaforge.eval.models import TRUNCATED_REASON, ModelUnderTest, Reply, reply_to_turn
from diaforge.eval.moves import asks_missing_value
from diaforge.eval.transcripts import Transcript, TranscriptTurn
from diaforge.rng import seeded_rng
from diaforge.schema import Dialogue, ToolCall, Turn
from diaforge.similarity import NEAR_DUPLICATE_THRESHOLD, Encoder, pair_score


@dataclass
class DynamicConfig:
    """The dynamic loop: turn cap, voting sizes, seed, and how many times each dialogue is played."""

    t_max: int = 10
    n_samples: int = 3
    n_voters: int = 3
    seed: int = 0
    repeats: int = 1
    """Trials per dialogue, each with the user-proxy's wording from its own seed (`user_rng`)."""


def user_rng(seed: int, dialogue_id: str, step: int, repeat: int = 0) -> random.Random:
    """The generator of the user-proxy's turn at `step` of a dialogue in trial `repeat`: repeat 0
    keys it exactly as a run without repeats does; another repeat adds its number to the key."""
    if repeat == 0:
        return seeded_rng(seed, dialogue_id, step)
    return seeded_rng(seed, dialogue_id, step, "repeat", repeat)


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


def _assistant_record(reply: Reply) -> TranscriptTurn:
    """The transcript's record of one model reply (how it was classified, its raw text)."""
    p = reply.parsed
    kind = reply.kind
    return TranscriptTurn(
        role="assistant",
        content=p.content if kind == "reply" else "",
        raw=reply.raw,
        kind=kind,
        thought=p.thought,
        tool_calls=[ToolCall(name=c.name, args=c.args) for c in p.tool_calls]
        if kind == "tool_calls"
        else None,
        reason=TRUNCATED_REASON if kind == "truncated" else p.reason,
    )


def _bar_name(mode: str, split: str, repeat: str = "") -> str:
    """The progress bar of a mode: "static", or "no-tool static" for the no-tool split, and which
    repeat it plays when there are several ("dynamic 2/3")."""
    name = mode if split == "positive" else f"no-tool {mode}"
    return f"{name} {repeat}" if repeat else name


def _ending(reply: Reply, split: str) -> str | None:
    """How a reply ends the dialogue: at a call, a cut-off reply, or (no-tool split) a refusal."""
    if reply.kind in ("tool_calls", "truncated"):
        return "tool_call" if reply.kind == "tool_calls" else "truncated"
    if split == "no_tool" and reply.kind == "reply" and is_refusal(reply.parsed.content):
        return "refusal"
    return None


def _drop_turns(bar: Any, turns: int) -> None:
    """A dialogue that ended early will not take its last `turns` turns: they leave the bar's
    total (the most turns every dialogue could take), so the bar ends at 100 % with no ETA left."""
    if turns > 0:
        bar.total -= turns
        bar.refresh()


@dataclass
class DialogueRun:
    """One benchmark dialogue while the model plays it, in either mode."""

    dialogue: Dialogue
    """The reference record (candidates, gold tool and arguments, the reference's own turns)."""
    max_turns: int
    """The most user turns it can take: the reference's user turns (static) or T_max (dynamic)."""
    turns: list[Turn] = field(default_factory=list)
    """The conversation so far as the model sees it: the user turns and the model's own replies."""
    records: list[TranscriptTurn] = field(default_factory=list)
    """The same turns as the transcript records them."""
    users: list[Turn] = field(default_factory=list)
    """Static: the reference's user turns, taken in order."""
    state: DialogueState | None = None
    """Dynamic: the user-proxy's view (its phase, the gold tool); its `turns` is `turns`."""
    ended: str | None = None
    """How it ended (`diaforge.eval.transcripts.ENDINGS`); None while it runs."""
    repeat: int = 0
    """Which trial of the dialogue this is (dynamic mode with repeats; 0 otherwise)."""

    def in_progress(self) -> Dialogue:
        return self.dialogue.model_copy(update={"turns": self.turns})

    def answered(self) -> list[Turn]:
        """Static: the reference's own assistant turns, in order (the questions its user turns
        answer), for a reference policy only (`eval.policies.ReferencePolicy.respond`)."""
        return [t for t in self.dialogue.turns if t.role == "assistant"]

    def transcript(self, mode: str, label: str, near_dup: bool, split: str) -> Transcript:
        d = self.dialogue
        gold, withheld = d.gold_tool, d.withheld_tool
        return Transcript(
            id=d.id,
            mode=mode,
            model=label,
            seed_tool=d.seed_tool,
            gold_args=d.gold_args,
            candidate_tools=[c.name for c in d.candidate_tools],
            required_params=len(gold.required) if gold else 0,
            has_near_duplicate=near_dup,
            turns=self.records,
            ended=self.ended,
            split=split,
            withheld_tool=withheld.name if withheld is not None else None,
            repeat=self.repeat,
        )


#: The next user turn of a dialogue at a step (the reference's, or the user-proxy's answer).
UserTurns = Callable[[DialogueRun, int], Awaitable[Turn]]


async def _play(
    model: ModelUnderTest,
    runs: list[DialogueRun],
    user_turn: UserTurns,
    *,
    mode: str,
    out_of_turns: str,
    near_dup: dict[str, bool],
    progress: bool,
    split: str,
    bar_note: str = "",
    encoder: Encoder | None = None,
) -> list[Transcript]:
    """Advance every dialogue in lock step, a user turn then one batched model call per step,
    until each has ended at a call, a cut-off reply or (no-tool split) a refusal, or ran out of
    turns (`out_of_turns`: ``reference_end`` or ``t_max``); one transcript per dialogue.
    `encoder` reads the options of a reply for `asks_for_arguments` (dynamic mode)."""
    bar = tqdm(
        total=sum(r.max_turns for r in runs),
        desc=_bar_name(mode, split, bar_note),
        unit="turn",
        disable=not progress,
    )
    for step in range(max((r.max_turns for r in runs), default=0)):
        for r in runs:
            if r.ended is None and step >= r.max_turns:
                r.ended = out_of_turns
        active = [r for r in runs if r.ended is None]
        if not active:
            break
        for r in active:
            turn = await user_turn(r, step)
            r.turns.append(turn)
            r.records.append(TranscriptTurn(role="user", content=turn.content))
        dialogues = [r.in_progress() for r in active]
        if mode == "static" and getattr(model, "is_policy", False):
            replies = await model.respond(dialogues, answered=[r.answered() for r in active])
        else:
            replies = await model.respond(dialogues)
        for r, reply in zip(active, replies, strict=True):
            turn = reply_to_turn(reply, phase=r.state.phase if r.state is not None else None)
            r.turns.append(turn)
            r.records.append(_assistant_record(reply))
            r.ended = _ending(reply, split)
            if r.ended is not None:
                _drop_turns(bar, r.max_turns - step - 1)
            elif r.state is not None and asks_for_arguments(turn, r.state, encoder):
                r.state.phase = COMPLETION
        bar.update(len(active))
    bar.close()
    for r in runs:
        r.ended = r.ended or out_of_turns
    return [r.transcript(mode, model.label, near_dup[r.dialogue.id], split) for r in runs]


async def run_static(
    model: ModelUnderTest,
    bench: Sequence[Dialogue],
    near_dup: dict[str, bool],
    *,
    progress: bool = True,
    split: str = "positive",
) -> list[Transcript]:
    """Static evaluation of every benchmark dialogue: the reference's user turns, in order."""
    runs = []
    for d in bench:
        users = [t for t in d.turns if t.role == "user"]
        runs.append(DialogueRun(d, max_turns=len(users), users=users))

    async def reference_turn(r: DialogueRun, step: int) -> Turn:
        return r.users[step]

    return await _play(
        model,
        runs,
        reference_turn,
        mode="static",
        out_of_turns="reference_end",
        near_dup=near_dup,
        progress=progress,
        split=split,
    )


async def run_dynamic(
    model: ModelUnderTest,
    bench: Sequence[Dialogue],
    near_dup: dict[str, bool],
    user: User,
    cfg: DynamicConfig,
    *,
    progress: bool = True,
    split: str = "positive",
    encoder: Encoder | None = None,
) -> list[Transcript]:
    """Dynamic evaluation: the model plays the assistant against the frozen user-proxy (any
    `diaforge.data_gen.agents.User`; `eval run` gives the voting one), `cfg.repeats` times per dialogue
    (module docstring); the transcripts of repeat 0 first, then those of repeat 1, ... `encoder` is the sentence encoder the user-proxy reads questions with, used as well to
    tell when a reply asks for values (`asks_for_arguments`; None: by words only)."""

    async def proxy_turn(r: DialogueRun, step: int) -> Turn:
        text, _ = await user.reply(r.state, user_rng(cfg.seed, r.dialogue.id, step, r.repeat))
        return Turn(role="user", content=text)

    transcripts: list[Transcript] = []
    for repeat in range(cfg.repeats):
        runs = []
        for d in bench:
            state = DialogueState(
                gold=d.gold_tool or d.withheld_tool,
                candidates=list(d.candidate_tools),
                persona=d.persona,
                goal=d.goal,
                gold_args=dict(d.gold_args),
            )
            runs.append(DialogueRun(d, max_turns=cfg.t_max, turns=state.turns, state=state, repeat=repeat))
        transcripts += await _play(
            model,
            runs,
            proxy_turn,
            mode="dynamic",
            out_of_turns="t_max",
            near_dup=near_dup,
            progress=progress,
            split=split,
            encoder=encoder,
            bar_note=f"{repeat + 1}/{cfg.repeats}" if cfg.repeats > 1 else "",
        )
    return transcripts


def asks_for_arguments(turn: Turn, state: DialogueState, encoder: Encoder | None = None) -> bool:
    """Whether an assistant reply asks for one of the gold tool's required arguments that the user
    has not given yet (`diaforge.eval.moves.asks_missing_value`, options read with `encoder` as the
    user-proxy reads them): the user-proxy then moves to giving values. An argument the user
    already gave is not what the reply asks for, nor is one named in the description of a tool
    the reply offers ("look up a city in the home country or a foreign city?")."""
    if state.phase != SELECTION or not turn.content:
        return False
    said = " ".join(state.user_texts)
    return asks_missing_value(turn.content, state.gold, said, state.candidates, encoder)


def sample_benchmark(bench: Sequence[Dialogue], limit: int | None, seed: int = 0) -> list[Dialogue]:
    """The first `limit` dialogues after a seeded shuffle (all of them when limit is None)."""
    items = list(bench)
    if limit is None or limit >= len(items):
        return items
    random.Random(seed).shuffle(items)
    return sorted(items[:limit], key=lambda d: d.id)
