"""Reference policies: the floors (and the ceiling) every evaluation report stands beside.

Each policy plays the assistant through the same static and dynamic loops as a model
(``python -m diaforge.eval run --backend reference|name-overlap|random``), with no model. Its turns are
written by the scripted teacher (`data_gen.agents.ScriptedTeacher.complete`; the reference's
questions about which tool by `ScriptedTeacher.ask`) for the tool the policy picked: the teacher reads the values the user has given out of the user turns, asks for the
missing required arguments (at most three at a time) and calls the tool when none is missing. The
turn is rendered in the assistant text format (`diaforge.format.render_assistant`, thought
included), so a policy's transcript reads like any model's and goes through the same parser.

The three policies differ only in how they pick the tool:

* ``reference``: the scripted teacher as it generates a dialogue. While more than one candidate
  is open (`ScriptedTeacher.remaining`: the candidates the opening supports, narrowed by the
  user's answers to its questions; the gold tool unseen) it asks its question about them
  (`ScriptedTeacher.ask`); once one is left it is told the gold tool (`Dialogue.seed_tool`), as the
  generator confirms a selection, and asks for its values or calls it. Every argument value still
  comes only from what the user said, never from the gold map. It is the judge's ceiling: it must
  score near-perfect, which shows that the user-proxy answers what it is asked, with the exact
  values, and it follows the reference move at every decision (`diaforge.eval.decisions`). Its question
  offers every tool still open; in static mode, where the user's answers are to the reference
  dialogue's questions, it reads them against those questions (`ReferencePolicy.respond`). A
  retrieval miss of the no-tool split (`Dialogue.withheld_tool`) gets the teacher told that no
  candidate fits (`diaforge.data_gen.agents.refusal.miss_turn`): it asks what the user means until the user
  has ruled out every candidate, then refuses plainly, as the split's reference dialogues do. Any
  other case with no gold tool gets a polite refusal (no call).
* ``name-overlap``: the candidate whose *name* words share the most stems with everything the user
  has said so far (ties: the first in candidate order), re-read at every turn. A no-model
  heuristic: a benchmark on which it scores high rewards template recall, not disambiguation, and a
  model's gain that does not clear it is not a gain.
* ``random``: one candidate drawn uniformly at random, seeded by the run seed and the dialogue id
  (the same tool at every turn of a dialogue).

All three are deterministic for a given seed: the teacher's wording is drawn from a generator
seeded by the policy, the seed, the dialogue id and the turn count.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod

from diaforge.format import render_assistant
from diaforge.schema import Dialogue, Tool, Turn

__all__ = ["POLICIES", "NameOverlapPolicy", "Policy", "RandomPolicy", "ReferencePolicy", "make_policy"]

POLICIES = ("reference", "name-overlap", "random")
"""The reference policies, in the order reports list them (ceiling first)."""

REFUSAL_THOUGHT = "None of the candidate tools fits what the user needs, so I do not call one."
REFUSAL_REPLY = "I'm sorry, none of the tools I have can do that."


class Policy(ABC):
    """A rule-based assistant that picks a tool (`choose`) and lets the scripted teacher ask for
    its missing required arguments and call it (`turn`)."""

    name: str = ""

    def __init__(self, seed: int = 0) -> None:
        from diaforge.data_gen.agents import ScriptedTeacher

        self.seed = seed
        self.teacher = ScriptedTeacher()

    @abstractmethod
    def choose(self, dialogue: Dialogue) -> Tool | None:
        """The tool this policy means to call, given the dialogue so far (ending with a user
        turn); None to call nothing."""

    def rng(self, dialogue: Dialogue) -> random.Random:
        """The generator of the teacher's wording for the next turn of `dialogue`."""
        return random.Random(f"{self.name}:{self.seed}:{dialogue.id}:{len(dialogue.turns)}")

    def turn(self, dialogue: Dialogue) -> Turn:
        """The next assistant turn: a question for missing required arguments, or the call."""
        from diaforge.data_gen.agents import COMPLETION

        tool = self.choose(dialogue)
        if tool is None:
            return Turn(role="assistant", thought=REFUSAL_THOUGHT, content=REFUSAL_REPLY)
        # Every assistant turn of a floor is an argument-completion turn; marking the history so
        # lets the teacher tell its first question from a follow-up.
        history = [
            t.model_copy(update={"phase": COMPLETION}) if t.role == "assistant" else t for t in dialogue.turns
        ]
        return self.complete(dialogue, tool, history)

    def complete(self, dialogue: Dialogue, tool: Tool, history: list[Turn]) -> Turn:
        """The teacher's argument-completion turn for `tool` after `history` (the dialogue's turns,
        each assistant turn marked with the phase it belongs to)."""
        from diaforge.data_gen.agents import COMPLETION, DialogueState

        state = DialogueState(
            gold=tool,
            candidates=list(dialogue.candidate_tools),
            persona=dialogue.persona,
            goal="",  # the teacher reads values from the user turns only: no goal,
            gold_args={},  # and never the gold map
            turns=history,
            phase=COMPLETION,
        )
        return self.teacher.complete(state, self.rng(dialogue))

    def respond(self, dialogue: Dialogue, answered: list[Turn] | None = None) -> str:
        """The next assistant turn as the text a model would write (thought, then reply or calls).
        `answered`: in static mode, the reference dialogue's own assistant turns, which the user
        turns answer (`ReferencePolicy` reads the answers against them; the floors ignore them)."""
        return render_assistant(self.turn(dialogue))


class ReferencePolicy(Policy):
    """The scripted teacher, told the gold tool once its selection is settled (the judge's
    ceiling; see the module docstring)."""

    name = "reference"

    def choose(self, dialogue: Dialogue) -> Tool | None:
        return dialogue.gold_tool

    def respond(self, dialogue: Dialogue, answered: list[Turn] | None = None) -> str:
        """The next turn; in static mode (`answered` given) the user's answers are to the
        reference dialogue's questions, not to this policy's, so the teacher replays the
        conversation with the reference's assistant turns in place of its own: it reads each
        answer against the options the question it answers offered (`ScriptedTeacher.remaining`)."""
        if answered:
            mine = iter(answered)
            turns = [next(mine, t) if t.role == "assistant" else t for t in dialogue.turns]
            dialogue = dialogue.model_copy(update={"turns": turns})
        return render_assistant(self.turn(dialogue))

    def turn(self, dialogue: Dialogue) -> Turn:
        """The teacher's turn: while its selection is not settled, its question about the tools
        still open; then its turn for the gold tool; on a retrieval miss, its miss-mode turn."""
        need = dialogue.withheld_tool
        if dialogue.seed_tool is None and need is not None:
            return self._miss_turn(dialogue, need)
        gold = dialogue.gold_tool
        if gold is None or not dialogue.turns:
            return super().turn(dialogue)
        from diaforge.data_gen.agents import DialogueState

        history = self.selection_history(dialogue)
        state = DialogueState(
            gold=gold,  # read by `complete` only, once the selection is settled
            candidates=list(dialogue.candidate_tools),
            persona=dialogue.persona,
            goal="",
            gold_args={},
            turns=history,
        )
        pool = self.teacher.remaining(state)
        if len(pool) > 1:
            return self.teacher.ask(state, pool, self.rng(dialogue))
        # Settled (the generator checks the selection against the gold tool and drops the
        # selecting call): the teacher, now told the gold tool, asks for its values or calls it.
        return self.complete(dialogue, gold, history)

    def selection_history(self, dialogue: Dialogue) -> list[Turn]:
        """The dialogue so far with each of the policy's own turns marked as the teacher made it: a
        selection question (phase ``tool_selection``) while more than one candidate was open at
        that point (`ScriptedTeacher.remaining`), an argument-completion turn from then on."""
        from diaforge.data_gen.agents import COMPLETION, SELECTION, DialogueState

        gold = dialogue.gold_tool
        history: list[Turn] = []
        selecting = True
        for t in dialogue.turns:
            if t.role == "assistant":
                if selecting:
                    state = DialogueState(
                        gold=gold,
                        candidates=list(dialogue.candidate_tools),
                        persona=dialogue.persona,
                        goal="",
                        gold_args={},
                        turns=history,
                    )
                    selecting = len(self.teacher.remaining(state)) > 1
                t = t.model_copy(update={"phase": SELECTION if selecting else COMPLETION})
            history.append(t)
        return history

    def _miss_turn(self, dialogue: Dialogue, need: Tool) -> Turn:
        from diaforge.data_gen.agents import SELECTION, DialogueState
        from diaforge.data_gen.agents.refusal import miss_turn

        history = [
            t.model_copy(update={"phase": SELECTION}) if t.role == "assistant" else t for t in dialogue.turns
        ]
        state = DialogueState(
            gold=need,  # what the user needs: only which of the user's words are about it is read
            candidates=list(dialogue.candidate_tools),
            persona=dialogue.persona,
            goal="",
            gold_args={},
            turns=history,
            no_tool=True,
        )
        return miss_turn(self.teacher, state, self.rng(dialogue))


def user_stems(dialogue: Dialogue) -> set[str]:
    """Content-word stems of every user turn so far (stopwords dropped)."""
    from diaforge.text import content_stems

    return content_stems(" ".join(t.content for t in dialogue.turns if t.role == "user"))


def name_overlap(tool: Tool, stems: set[str]) -> int:
    """How many distinct stems of `tool`'s name words occur in `stems`."""
    from diaforge.text import name_tokens, stem

    return len({stem(w) for w in name_tokens(tool)} & stems)


class NameOverlapPolicy(Policy):
    """Calls the candidate whose name shares the most words with the user's turns."""

    name = "name-overlap"

    def choose(self, dialogue: Dialogue) -> Tool | None:
        if not dialogue.candidate_tools:
            return None
        stems = user_stems(dialogue)
        # max keeps the first of equal scores: ties go to candidate order.
        return max(dialogue.candidate_tools, key=lambda tool: name_overlap(tool, stems))


class RandomPolicy(Policy):
    """Calls one candidate drawn uniformly at random per dialogue (seed and dialogue id)."""

    name = "random"

    def choose(self, dialogue: Dialogue) -> Tool | None:
        if not dialogue.candidate_tools:
            return None
        return random.Random(f"random:{self.seed}:{dialogue.id}").choice(dialogue.candidate_tools)


_CLASSES: dict[str, type[Policy]] = {
    "reference": ReferencePolicy,
    "name-overlap": NameOverlapPolicy,
    "random": RandomPolicy,
}


def make_policy(name: str, *, seed: int = 0) -> Policy:
    """The reference policy called `name` (one of `POLICIES`)."""
    try:
        return _CLASSES[name](seed=seed)
    except KeyError:
        raise ValueError(f"unknown reference policy {name!r}; choose one of {', '.join(POLICIES)}") from None
