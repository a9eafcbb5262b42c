"""The ConvRel judge (DiaFORGE Appendix C.1): an LLM grades each assistant turn 1-3 for how well it
follows from the conversation before it.

The grades go into `Transcript.convrel`; `diaforge.eval.metrics.conv_rel` maps them to g(1) = 0,
g(2) = 0.5, g(3) = 1 and averages them. With no judge, ConvRel is None ("not computed"), never
faked; a backend error propagates rather than turning into a grade.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Any

from diaforge.eval.transcripts import Transcript, TranscriptTurn

__all__ = ["JUDGE_RUBRIC", "JUDGE_SYSTEM", "ConvRelJudge", "parse_grade"]

JUDGE_SYSTEM = (
    "You are a strict reviewer of enterprise assistant conversations. You read a conversation "
    "between a user and an assistant, then one new assistant message, and you grade only how well "
    "that message follows from the conversation before it. You do not grade politeness, length or "
    "whether a tool call would succeed."
)

JUDGE_RUBRIC = """Grade the assistant message on this scale:
1 = off-topic: it ignores what the user asked or said, changes the subject, repeats a question the user already answered, or contradicts the conversation.
2 = partly relevant: it is about the user's request but misses or misreads part of it (asks for something already given, addresses only part of the request, or adds unrelated content).
3 = fully grounded: it builds directly on the conversation so far, using what the user said, and is the natural next step (a targeted question, a confirmation, or a tool call that matches the request).

Answer with a single line of the form "Score: N" where N is 1, 2 or 3."""

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S)
_LABELLED = re.compile(r"score\W{0,6}(\d+(?:\.\d+)?)", re.I)
_BARE_GRADE = re.compile(r"(?<![\d.])([1-3])(?!\d|\.\d)")


def parse_grade(text: str) -> int | None:
    """The grade in a judge's answer: the number after the word "score" when there is one ("Score:
    3", "score = **2**"; None unless it is exactly 1, 2 or 3, so "Score: 2.5" and "Score: 4" give
    None), else the first standalone digit 1-3 ("I'd give it a 2."); think blocks are ignored."""
    text = _THINK_BLOCK.sub(" ", text or "")
    labelled = _LABELLED.search(text)
    if labelled:
        number = labelled.group(1)
        return int(number) if number in ("1", "2", "3") else None
    bare = _BARE_GRADE.search(text)
    return int(bare.group(1)) if bare else None


def _render_messages(messages: Sequence[dict[str, Any]]) -> str:
    if not messages:
        return "(no earlier messages)"
    return "\n\n".join(f"{str(m.get('role', '')).upper()}: {m.get('content', '')}" for m in messages)


class ConvRelJudge:
    """Grades assistant turns 1-3 for conversation relevancy (Appendix C.1) with an LLM.

    `backend` is any object with ``async chat(messages, *, temperature, max_tokens, seed)``
    returning something with ``.text`` (every `diaforge.llm` backend qualifies). The judge sees the
    prefix visible to the assistant (user turns and the assistant's public turns, never thoughts)
    and the message to grade; a call turn is shown as its JSON call list, a malformed turn as the
    model's raw output. Backend errors propagate: a grade is never made up.
    """

    def __init__(
        self,
        backend: Any,
        *,
        temperature: float = 0.0,
        max_tokens: int = 32,
        seed: int | None = 0,
    ) -> None:
        self.backend = backend
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed

    def messages(self, prefix_messages: Sequence[dict[str, Any]], reply: str) -> list[dict[str, str]]:
        """The chat messages sent to the judge for one assistant message."""
        user = (
            "Conversation so far:\n<conversation>\n"
            f"{_render_messages(prefix_messages)}\n</conversation>\n\n"
            f"Assistant message to grade:\n<message>\n{reply}\n</message>\n\n{JUDGE_RUBRIC}"
        )
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    async def grade(self, prefix_messages: list[dict[str, Any]], reply: str) -> int | None:
        """The grade 1-3 of `reply` given the prefix, or None when the answer holds none."""
        result = await self.backend.chat(
            self.messages(prefix_messages, reply),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        return parse_grade(result.text)

    async def grade_transcript(self, t: Transcript) -> list[int]:
        """Grades of the assistant turns of `t`, in order. A turn whose answer holds no grade is
        left out (ConvRel averages over the graded turns)."""
        grades: list[int] = []
        prefix: list[dict[str, str]] = []
        for turn in t.turns:
            if turn.role == "assistant":
                grade = await self.grade(list(prefix), _shown(turn))
                if grade is not None:
                    grades.append(grade)
            prefix.append({"role": turn.role, "content": _shown(turn)})
        return grades

    async def annotate(self, transcripts: Sequence[Transcript], *, concurrency: int = 4) -> list[Transcript]:
        """Copies of `transcripts` with `convrel` filled, `concurrency` transcripts at a time."""
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(t: Transcript) -> Transcript:
            async with gate:
                return t.model_copy(update={"convrel": await self.grade_transcript(t)})

        return list(await asyncio.gather(*(one(t) for t in transcripts)))


def _shown(turn: TranscriptTurn) -> str:
    """A turn as the judge sees it: user text, public reply, call list as JSON, or raw malformed output."""
    return turn.visible_text()
