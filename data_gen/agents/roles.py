"""The roles the dialogue engine and the live evaluation loop drive, as Protocols: what a
user-proxy, a voter, a teacher and the two judges offer, whoever plays them (rules, a chat model,
or your own class). Code that drives a role takes the Protocol, not one of this package's classes.

Every role has a `name` (recorded with the dialogues: `scripted`, or `backend:model`) and one
coroutine that returns its answer with the `Usage` it cost. They are `runtime_checkable`, so
``isinstance(agent, User)`` says whether the methods are there (not whether their signatures fit).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from diaforge.data_gen.agents.state import DialogueState, TeacherMove
from diaforge.llm.base import Usage
from diaforge.schema import Tool, Turn, Verdict


@runtime_checkable
class User(Protocol):
    """The user-proxy: the next user message of a dialogue (`ScriptedUser`, `LLMUser`,
    `VotingUser`)."""

    name: str

    async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]: ...


@runtime_checkable
class Voter(Protocol):
    """A voter of `VotingUser`: the index of the best of the candidate messages it is `shown`
    (`ScriptedVoter`, `LLMVoter`)."""

    name: str

    async def vote(
        self, state: DialogueState, shown: Sequence[str], rng: random.Random
    ) -> tuple[int, Usage]: ...


@runtime_checkable
class Teacher(Protocol):
    """The assistant teacher: the next assistant turn (`ScriptedTeacher`, `LLMTeacher`)."""

    name: str

    async def act(self, state: DialogueState, rng: random.Random) -> TeacherMove: ...


@runtime_checkable
class RelevancyJudge(Protocol):
    """The relevancy validator: whether a finished dialogue is about the gold tool
    (`ScriptedRelevancy`, `LLMJudge(backend, "relevancy")`)."""

    name: str

    async def judge(self, dialogue_turns: list[Turn], gold: Tool, goal: str) -> tuple[Verdict, Usage]: ...


@runtime_checkable
class CritiqueJudge(Protocol):
    """The critique validator: whether a finished dialogue flows as it should; `no_tool` marks a
    retrieval miss (`ScriptedCritique`, `LLMJudge(backend, "critique")`)."""

    name: str

    async def judge(
        self, dialogue_turns: list[Turn], candidates: Sequence[Tool], *, no_tool: bool = False
    ) -> tuple[Verdict, Usage]: ...
