"""The multi-sample voting user-proxy (DiaFORGE Appendix C.3): `VotingUser` draws n candidate
utterances from a user-proxy and lets m voters (`ScriptedVoter` or `LLMVoter`) pick, pooled by
the mode (`mode_pool`)."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence

from diaforge.data_gen.agents.roles import User, Voter
from diaforge.data_gen.agents.state import DialogueState, transcript
from diaforge.data_gen.phrasing import names_read_out
from diaforge.llm.base import ChatBackend, Usage
from diaforge.text import humanise_param


def mode_pool(votes: Sequence[int]) -> int:
    """The most frequent vote; ties go to the smallest index (deterministic pooling)."""
    counts: dict[int, int] = {}
    for v in votes:
        counts[v] = counts.get(v, 0) + 1
    return min(counts, key=lambda v: (-counts[v], v))


class ScriptedVoter:
    """Rule-based voter: scores each candidate utterance (no tool names, no values outside the gold
    map, answers what was asked, not empty) and picks the best; ties go to the one shown first, so
    the permutation each voter sees matters, as with a model voter."""

    name = "scripted"

    @staticmethod
    def score(state: DialogueState, text: str) -> int:
        low = text.lower()
        score = 0
        said = " ".join(t.content for t in state.turns if t.role == "assistant")
        prompted = set(names_read_out(said, state.candidates))
        if not set(names_read_out(text, state.candidates)) - prompted:
            score += 4
        gold_text = json.dumps(state.gold_args, ensure_ascii=False)
        ids = re.findall(r"\b[A-Z]{2,}-?[0-9]{3,}\b", text)
        if all(i in gold_text for i in ids):
            score += 2
        question = (state.last_assistant.content if state.last_assistant else "").lower()
        asked = [k for k in state.gold.required if humanise_param(k).lower() in question]
        score += sum(humanise_param(k).lower() in low for k in asked)
        return score + (1 if text.strip() else -10)

    async def vote(self, state: DialogueState, shown: Sequence[str], rng: random.Random) -> tuple[int, Usage]:
        scores = [self.score(state, t) for t in shown]
        return max(range(len(shown)), key=lambda i: (scores[i], -i)), Usage()


VOTER_SYSTEM = """You help simulate a user talking to an AI assistant at work.
The user: {persona}
The user's goal: {goal}
Below are candidate next messages for the user. Pick the one that best continues the conversation in
character: it answers what the assistant asked, invents no values, and never names a tool.
Reply with only the number of the best candidate."""


class LLMVoter:
    """Voter played by a chat model."""

    def __init__(self, backend: ChatBackend) -> None:
        self.backend = backend
        self.name = f"{backend.name}:{backend.model}"

    async def vote(self, state: DialogueState, shown: Sequence[str], rng: random.Random) -> tuple[int, Usage]:
        listing = "\n".join(f"{i + 1}. {t}" for i, t in enumerate(shown))
        messages = [
            {
                "role": "system",
                "content": VOTER_SYSTEM.format(persona=state.persona.description, goal=state.goal),
            },
            {
                "role": "user",
                "content": f"Conversation so far:\n{transcript(state.turns)}\n\nCandidates:\n{listing}",
            },
        ]
        result = await self.backend.chat(messages, temperature=0.0, max_tokens=8, seed=rng.randrange(2**31))
        found = re.search(r"\d+", result.text)
        pick = int(found.group()) - 1 if found else 0
        return (pick if 0 <= pick < len(shown) else 0), result.usage


class VotingUser:
    """n candidate utterances from a user-proxy, m voters each seeing its own random permutation,
    votes mapped back to the original indices and pooled by the mode (n=3, m=3 by default)."""

    def __init__(self, user: User, voter: Voter, *, n: int = 3, m: int = 3) -> None:
        if n < 1 or m < 1:
            raise ValueError("n and m must be at least 1")
        self.user, self.voter, self.n, self.m = user, voter, n, m
        self.name = f"vote(n={n},m={m},{user.name},{voter.name})"

    async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]:
        usage = Usage()
        candidates = []
        for _ in range(self.n):
            text, u = await self.user.reply(state, random.Random(rng.randrange(2**63)))
            usage.add(u)
            candidates.append(text)
        if self.n == 1:
            return candidates[0], usage
        votes = []
        for _ in range(self.m):
            perm = list(range(self.n))
            rng.shuffle(perm)
            pick, u = await self.voter.vote(state, [candidates[i] for i in perm], rng)
            usage.add(u)
            votes.append(perm[pick])
        return candidates[mode_pool(votes)], usage
