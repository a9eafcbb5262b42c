"""When no candidate fits: the scripted teacher's turns in a retrieval miss, and the rule
that reads a reply as a refusal.

In a retrieval miss (`DialogueState.no_tool`) the tool the user needs (`DialogueState.gold`) is not
among the candidates, while its near neighbours are. The user-proxy pursues its goal as usual. The
scripted teacher is told that the dialogue is a miss, as the `reference` policy is told the gold
tool, and what the user needs, as it is told the gold tool's schema once a selection is confirmed;
it only uses that to tell which of the user's words are about the need (not filler such as
"really"). It disambiguates as usual and keeps count of the candidates the user has ruled out
(`miss_progress`). A candidate is *ruled out* once

* the user turned it down: a question offered it and the user's answer did not point at it
  (`options.narrow`; "none of those" points at none), or it was offered twice unchosen; or
* the user's answers set it apart (`set_apart`): of the words of the need (its name and
  description) that the answers hold, the candidate lacks one and holds at most half, as "the
  balance of a general ledger account" sets apart a tool that reports cost-center actuals. The
  opening never does: it is vague by design, so a refusal always follows a question.

While the user has turned nothing down, the teacher asks the usual question (`ScriptedTeacher.ask`
over the candidates plausible after the opening), so a miss reads like any dialogue until the
user answers. Then it offers the candidates left, those the user's words support best first
(`options.plausible`; at most `max_options`, `ask_other` wording, `ask_one` for a single option).
Once every candidate is ruled out it says plainly that none of its tools does that (`refuse`
wording, labelled `reject`/`response_fail`): no call, no request for arguments. The no-tool
validator (`diaforge.data_gen.validators.no_tool_validator`) checks the same two ways of ruling out.

`is_refusal` is the one rule that reads a reply as a refusal, shared by the generator (a miss ends
at its refusal), the no-tool validator (`diaforge.data_gen.validators`) and the no-tool metrics
(`diaforge.eval.no_tool`): the reply asks nothing (no question mark, the rule by which `diaforge.eval.anatomy.asks`
reads a question) and holds a negation (`NEGATIONS`, or a word ending in n't).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from diaforge.data_gen.agents.options import narrow, plausible, prefixes_of
from diaforge.data_gen.agents.state import SELECTION, DialogueState, clarifying_turn
from diaforge.data_gen.phrasing import DETERMINERS, intent_of, verb_lemma
from diaforge.data_gen.phrasing.english import _BOUNDARY
from diaforge.data_gen.phrasing.judging import active_judge, judged
from diaforge.data_gen.phrasing.readings import unsure
from diaforge.data_gen.phrasing.render import action, sound
from diaforge.data_gen.wording import Wording
from diaforge.schema import Tool, Turn
from diaforge.text import content_stems, join_options, tool_stems

NEGATIONS = frozenset({"no", "none", "not", "cannot", "unable", "neither", "nor", "nothing", "never"})
"""Words that make a statement a refusal (besides any word ending in n't: can't, isn't)."""

NO_FIT_RULE = (
    "If the user's answers rule out every listed tool, say plainly that none of your tools can do "
    "that, without calling a tool and without asking for arguments."
)
"""The model-played teacher's extra rule in a retrieval miss."""

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


class MissTeacher(Protocol):
    """What the turns of a miss use of the scripted teacher (`ScriptedTeacher` is one): how many
    options a question offers, its reasoning style, its wording bank and its usual question."""

    max_options: int
    reasoning: str
    bank: Wording

    def ask(self, state: DialogueState, pool: list[Tool], rng: random.Random) -> Turn: ...


def is_refusal(text: str) -> bool:
    """Whether a reply is a refusal: it asks nothing (no question mark) and holds a negation."""
    if not text or "?" in text:
        return False
    tokens = _WORD.findall(text.lower().replace("\u2019", "'"))
    return any(t in NEGATIONS or t.endswith("n't") for t in tokens)


@dataclass(frozen=True)
class MissProgress:
    """Where a retrieval miss stands, replayed from its turns."""

    turned_down: list[Tool]
    """Candidates a question offered and the user's answer turned down, in that order."""
    left: list[Tool]
    """Candidates not yet ruled out (neither turned down nor set apart by the user's answers)."""
    said: str
    """Everything the user has said, one message after the other."""


def set_apart(need: Tool, candidate: Tool, answers: str) -> bool:
    """Whether the user's answers rule `candidate` out. The need words said are the stems of the
    answers that the name or description of `need` holds; the candidate is set apart when it lacks
    one of them and holds at most half of them (one that holds more is still worth asking about).
    Only the answers count, not the opening: it is vague by design, and the values and shop talk a
    user volunteers there say nothing about which tool does the job."""
    said = tool_stems(need) & content_stems(answers)
    covered = said & tool_stems(candidate)
    return bool(said - covered) and 2 * len(covered) <= len(said)


def _next_offer(
    candidates: Sequence[Tool], down: Sequence[str], left: Sequence[Tool], said: str, max_options: int
) -> tuple[list[Tool], list[Tool] | None]:
    """What the next question offers, and the pool of the usual question when it is one: while the
    user has turned nothing down, the candidates plausible after what they said (two or more);
    else the candidates left, those the user's words support best first (the usual question still,
    when nothing is turned down and two or more are offered)."""
    if not down:
        pool = plausible(candidates, said)
        if len(pool) > 1:
            return pool[:max_options], pool
    ranked = plausible(left, said) if left else []
    ranked += [c for c in left if c not in ranked]
    return ranked[:max_options], (ranked if not down and len(ranked) > 1 else None)


def miss_progress(
    state: DialogueState, max_options: int, offers: Callable[[Turn], list[Tool] | None] | None = None
) -> MissProgress:
    """Replays a miss: each assistant question offered what `_next_offer` gave at that point; the
    user's answer turns down those it does not point at, and any offered a second time. A
    candidate is ruled out once turned down or set apart by the user's answers (`set_apart`, with
    `state.gold` the tool the user needs).

    `offers` reads another assistant's turns instead (`diaforge.eval.decisions` replays a model's): the
    candidates an assistant turn offers, or None for a turn that asks nothing about which tool."""
    candidates = state.candidates
    said: list[str] = []
    down: list[str] = []
    offered: Counter[str] = Counter()
    pending: list[Tool] = []

    def left_now() -> list[Tool]:
        answers = " ".join(said[1:])
        return [c for c in candidates if c.name not in down and not set_apart(state.gold, c, answers)]

    for t in state.turns:
        if t.role == "user":
            for option in pending:
                offered[option.name] += 1
            kept = {k.name for k in narrow(pending, t.content)} if pending else set()
            down += [
                o.name for o in pending if o.name not in down and (o.name not in kept or offered[o.name] > 1)
            ]
            pending = []
            said.append(t.content)
        elif offers is not None:
            options = offers(t)
            if options is not None:
                pending = options
        elif not t.tool_calls and "?" in t.content:
            pending, _ = _next_offer(candidates, down, left_now(), " ".join(said), max_options)
    by_name = {c.name: c for c in candidates}
    return MissProgress(turned_down=[by_name[n] for n in down], left=left_now(), said=" ".join(said))


def miss_turn(teacher: MissTeacher, state: DialogueState, rng: random.Random) -> Turn:
    """The scripted teacher's next turn in a retrieval miss (module docstring): the usual question
    while the user has turned nothing down, then questions about the candidates left, and the
    refusal once none is."""
    progress = miss_progress(state, teacher.max_options)
    if not progress.left:
        return _refusal(teacher, state, progress, rng)
    down = [t.name for t in progress.turned_down]
    options, usual = _next_offer(state.candidates, down, progress.left, progress.said, teacher.max_options)
    if usual is not None:
        return teacher.ask(state, usual, rng)
    return _ask_other(teacher, state, options, progress, rng)


_CLAUSE_BREAKS = frozenset({"but", "which", "whereas", "so", "unless", "while"})
_DANGLING = DETERMINERS | {"and", "or", "of", "for", "to", "with", "by", "in", "on", "at", "that", "whose"}


def what_it_does(tool: Tool, prefixes: frozenset[str], max_words: int = 16) -> str:
    """What a tool does, as a verb phrase a person would say: its intent's verb and full object,
    cut before a second clause ("..., but ...", "... and sends ...") or, past `max_words` words,
    before the last preposition, with no dangling word at the end. Offered on its own or among
    candidates that are not alike, a tool is told apart by all of what it does, not by the words
    it does not share."""
    intent = intent_of(tool, prefixes)
    if intent.source == "name":
        return action(tool, prefixes, [tool])
    words = intent.full_object.split()
    kept: list[str] = []
    for i, w in enumerate(words):
        low = w.lower().strip(",;")
        after = words[i + 1] if i + 1 < len(words) else ""
        if low in _CLAUSE_BREAKS or (low == "and" and verb_lemma(after)):
            break
        if len(kept) == max_words:
            cut = max((j for j, k in enumerate(kept) if k.lower() in _BOUNDARY), default=0)
            kept = kept[:cut] if cut > 2 else kept
            break
        kept.append(w)
        if w.endswith(";"):
            break
    while len(kept) > 1 and kept[-1].lower().strip(",;") in _DANGLING:
        kept.pop()
    phrase = f"{intent.verb} {' '.join(kept).rstrip(',;')}"
    return judged(
        "offer",
        [phrase] if sound(phrase, [tool]) else [],
        action(tool, prefixes, [tool]),
        sure=active_judge() is None or not unsure(tool, prefixes),
    )


def _ask_other(
    teacher: MissTeacher,
    state: DialogueState,
    options: list[Tool],
    progress: MissProgress,
    rng: random.Random,
) -> Turn:
    """A question offering the candidates left, each by what it does (`what_it_does`)."""
    prefixes = prefixes_of(state.candidates)
    phrases = [what_it_does(o, prefixes) for o in options]
    if len(options) == 1:
        question = rng.choice(teacher.bank.ask_one).format(option=phrases[0])
    else:
        shown = list(phrases)
        rng.shuffle(shown)
        question = rng.choice(teacher.bank.ask_other).format(options=join_options(shown))
    declined = ", ".join(t.name for t in progress.turned_down) or "nothing yet"
    names = ", ".join(o.name for o in options)
    each = "; ".join(f"{p} ({o.name})" for o, p in zip(options, phrases, strict=True))
    if teacher.reasoning == "lookup":
        thought = (
            f"Turned down by the user: {declined}. Left to offer: {names}. What each does: {each}. "
            "I ask whether one of them is what the user needs, without naming tools."
        )
    else:
        thought = (
            f"The user turned down {declined}. Left to offer: {each}. I ask whether one of them is "
            "what the user needs, without naming tools."
        )
    return clarifying_turn(thought, question)


def _refusal(
    teacher: MissTeacher,
    state: DialogueState,
    progress: MissProgress,
    rng: random.Random,
) -> Turn:
    """The plain refusal: no call, no request for arguments."""
    down = ", ".join(t.name for t in progress.turned_down)
    others = ", ".join(c.name for c in state.candidates if c not in progress.turned_down)
    need = state.user_texts[-1] if state.user_texts else ""
    if teacher.reasoning == "lookup":
        parts = [f"Turned down by the user: {down}." if down else "", f"The user's need: `{need}`."]
        parts.append(f"It is not what {others} do." if others else "")
        parts.append("No candidate does it, so I call nothing and say so.")
    else:
        parts = [f"The user turned down {down}." if down else ""]
        parts.append(f"What they ask for is not what {others} do." if others else "")
        parts.append(
            "None of the candidates fits, so I neither guess a near match nor ask for arguments: "
            "I say plainly that no tool of mine does it."
        )
    return Turn(
        role="assistant",
        thought=" ".join(p for p in parts if p),
        content=rng.choice(teacher.bank.refuse),
        phase=SELECTION,
        act="reject",
        action="response_fail",
    )
