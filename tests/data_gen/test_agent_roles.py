"""The role Protocols of `diaforge.data_gen.agents.roles`: every shipped agent plays its role, each role
method takes the calls its driver makes, and a class of one's own plays a role without
subclassing anything."""

from __future__ import annotations

import asyncio
import inspect
import random
from typing import Any

import pytest

from diaforge.data_gen.agents import (
    CritiqueJudge,
    DialogueState,
    LLMJudge,
    LLMTeacher,
    LLMUser,
    LLMVoter,
    RelevancyJudge,
    ScriptedCritique,
    ScriptedRelevancy,
    ScriptedTeacher,
    ScriptedUser,
    ScriptedVoter,
    Teacher,
    User,
    Voter,
    VotingUser,
)
from diaforge.llm.base import ChatResult, Usage
from diaforge.schema import Persona, Tool


class _Backend:
    """Enough of a `ChatBackend` to build the model-played agents (never called here)."""

    name, model = "fake", "none"

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatResult:
        raise AssertionError("not called")

    async def aclose(self) -> None:
        return None


def _agents() -> dict[type, list[Any]]:
    backend = _Backend()
    return {
        User: [
            ScriptedUser(),
            LLMUser(backend),
            VotingUser(ScriptedUser(), ScriptedVoter()),
        ],
        Voter: [ScriptedVoter(), LLMVoter(backend)],
        Teacher: [ScriptedTeacher(), LLMTeacher(backend)],
        RelevancyJudge: [ScriptedRelevancy(), LLMJudge(backend, "relevancy")],
        CritiqueJudge: [ScriptedCritique(), LLMJudge(backend, "critique")],
    }


_CASES = [(role, agent) for role, agents in _agents().items() for agent in agents]


def _role_method(role: type) -> str:
    return next(n for n, v in vars(role).items() if inspect.iscoroutinefunction(v))


@pytest.mark.parametrize(("role", "agent"), _CASES, ids=lambda x: getattr(x, "__name__", type(x).__name__))
def test_every_shipped_agent_plays_its_role(role: type, agent: Any) -> None:
    assert isinstance(agent, role)
    assert isinstance(agent.name, str) and agent.name


@pytest.mark.parametrize(("role", "agent"), _CASES, ids=lambda x: getattr(x, "__name__", type(x).__name__))
def test_the_role_method_takes_the_calls_of_its_protocol(role: type, agent: Any) -> None:
    """What `isinstance` does not check: the agent's coroutine binds every argument of the
    Protocol's, positional ones by position and keyword-only ones by name."""
    name = _role_method(role)
    method = getattr(agent, name)
    assert inspect.iscoroutinefunction(method), name
    wanted = list(inspect.signature(getattr(role, name)).parameters.values())[1:]  # no self
    args = [p.name for p in wanted if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    kwargs = {p.name: None for p in wanted if p.kind is inspect.Parameter.KEYWORD_ONLY}
    inspect.signature(method).bind(*args, **kwargs)


def test_an_agent_is_not_taken_for_another_role() -> None:
    assert not isinstance(ScriptedTeacher(), User)
    assert not isinstance(ScriptedUser(), Teacher)
    assert not isinstance(ScriptedVoter(), User)


def test_a_user_of_ones_own_plays_in_the_voting_user_proxy() -> None:
    class Parrot:
        """A user-proxy that subclasses nothing: it repeats one line."""

        name = "parrot"

        async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]:
            return "I need the quarterly report.", Usage()

    assert isinstance(Parrot(), User)
    tool = Tool(name="get_report", description="Fetches a report.")
    state = DialogueState(
        gold=tool,
        candidates=[tool],
        persona=Persona(id="p", description="An analyst."),
        goal="get the quarterly report",
        gold_args={},
    )
    voting = VotingUser(Parrot(), ScriptedVoter(), n=2, m=1)
    text, _ = asyncio.run(voting.reply(state, random.Random(0)))
    assert text == "I need the quarterly report." and voting.name == "vote(n=2,m=1,parrot,scripted)"
