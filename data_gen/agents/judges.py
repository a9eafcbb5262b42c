"""The two model-judged validators, relevancy and critique: `ScriptedRelevancy` and
`ScriptedCritique` (rule-based), and `LLMJudge` (a chat model replying with a JSON verdict)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from diaforge.data_gen.agents.state import COMPLETION, SELECTION, transcript
from diaforge.data_gen.phrasing import names_read_out
from diaforge.llm.base import ChatBackend, Usage
from diaforge.schema import Tool, Turn, Verdict
from diaforge.text import content_stems, name_tokens, stem


class ScriptedRelevancy:
    """Rule-based relevancy check: the user side of the dialogue must talk about the gold tool's
    subject (its name or description words) and the final call must be to it."""

    name = "scripted"

    async def judge(self, dialogue_turns: list[Turn], gold: Tool, goal: str) -> tuple[Verdict, Usage]:
        user_text = " ".join(t.content for t in dialogue_turns if t.role == "user")
        shared = content_stems(user_text) & (
            {stem(w) for w in name_tokens(gold)} | content_stems(gold.description)
        )
        if not shared:
            return Verdict(
                validator="relevancy", passed=False, reason="user turns never touch the gold tool's subject"
            ), Usage()
        return Verdict(
            validator="relevancy", passed=True, reason=f"shared terms: {', '.join(sorted(shared)[:5])}"
        ), Usage()


class ScriptedCritique:
    """Rule-based critique of the flow: selection turns come before completion turns, the user
    never names a candidate tool, every question asks something, and turn acts agree with turn
    content."""

    name = "scripted"

    async def judge(
        self, dialogue_turns: list[Turn], candidates: Sequence[Tool], *, no_tool: bool = False
    ) -> tuple[Verdict, Usage]:
        """The checks above; `no_tool` (a retrieval miss) changes none of them: the no-tool
        validator has already checked the refusal."""
        seen_completion = False
        for i, t in enumerate(dialogue_turns):
            if t.role == "user":
                named = names_read_out(t.content, candidates)
                if named:
                    return self._fail(f"turn {i}: the user names tool {named[0]}")
                continue
            if t.phase == COMPLETION:
                seen_completion = True
            elif t.phase == SELECTION and seen_completion:
                return self._fail(f"turn {i}: tool selection after argument completion began")
            if not t.tool_calls and "?" not in t.content and t.act == "seek_info":
                return self._fail(f"turn {i}: a seek_info turn asks no question")
            if t.tool_calls and t.act not in (None, "function_calling"):
                return self._fail(f"turn {i}: a turn with a tool call is labelled {t.act}")
        return Verdict(
            validator="critique", passed=True, reason="two-phase flow and roles respected"
        ), Usage()

    @staticmethod
    def _fail(reason: str) -> tuple[Verdict, Usage]:
        return Verdict(validator="critique", passed=False, reason=reason), Usage()


JUDGE_SYSTEM = """You review a synthetic conversation between a user and an AI assistant that calls enterprise tools.
{task}
Reply with only a JSON object: {{"valid": true or false, "reason": "one short sentence"}}."""

RELEVANCY_TASK = (
    "Decide whether the conversation is about the target tool below: the user's requests must fit "
    "what the tool does, and nothing in it may be off-topic.\nTarget tool: {tool}"
)
CRITIQUE_TASK = (
    "Decide whether the conversation flows well: the user starts vaguely and answers only what is "
    "asked, the assistant first works out which tool is meant and then collects the missing "
    "arguments, both stay in their roles, no one invents values, and the user never names a tool."
)

CRITIQUE_NO_TOOL_TASK = (
    "Decide whether the conversation flows well: the user starts vaguely and answers only what is "
    "asked; the action the user needs is not among the assistant's tools, so the assistant works out "
    "what the user means and, once the user's answers rule out every tool it has, says plainly that "
    "none of them can do it, without calling a tool or asking for arguments; both stay in their roles "
    "and the user never names a tool."
)


def parse_judgement(text: str) -> tuple[bool, str]:
    """Reads `{"valid": bool, "reason": str}` from a judge's reply (first JSON object in it)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return False, "judge reply holds no JSON object"
    try:
        obj = json.loads(text[start : end + 1])
    except (json.JSONDecodeError, RecursionError):
        return False, "judge reply is not valid JSON"
    if not isinstance(obj, dict) or not isinstance(obj.get("valid"), bool):
        return False, "judge reply lacks a boolean 'valid'"
    return obj["valid"], str(obj.get("reason", ""))[:300]


class LLMJudge:
    """Relevancy or critique validator played by a chat model."""

    def __init__(self, backend: ChatBackend, kind: str, *, max_tokens: int = 200) -> None:
        if kind not in ("relevancy", "critique"):
            raise ValueError(f"unknown judge kind {kind!r}")
        self.backend, self.kind, self.max_tokens = backend, kind, max_tokens
        self.name = f"{backend.name}:{backend.model}"

    async def _ask(self, task: str, turns: Sequence[Turn]) -> tuple[Verdict, Usage]:
        messages = [
            {"role": "system", "content": JUDGE_SYSTEM.format(task=task)},
            {"role": "user", "content": transcript(turns)},
        ]
        result = await self.backend.chat(messages, temperature=0.0, max_tokens=self.max_tokens, seed=0)
        ok, reason = parse_judgement(result.text)
        return Verdict(validator=self.kind, passed=ok, reason=reason), result.usage

    async def judge(
        self, dialogue_turns: list[Turn], *args: Any, no_tool: bool = False
    ) -> tuple[Verdict, Usage]:
        """Relevancy: `args` is (gold tool, goal). Critique: `args` is (candidates,), and `no_tool`
        marks a retrieval miss, judged by the flow that ends in a refusal."""
        if self.kind == "relevancy":
            gold: Tool = args[0]
            return await self._ask(
                RELEVANCY_TASK.format(tool=json.dumps(gold.spec(), ensure_ascii=False)), dialogue_turns
            )
        return await self._ask(CRITIQUE_NO_TOOL_TASK if no_tool else CRITIQUE_TASK, dialogue_turns)
