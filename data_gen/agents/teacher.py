"""The assistant teacher: `ScriptedTeacher` (rule-based, see the package docstring) and
`LLMTeacher` (a chat model in the paper's prompt format)."""

from __future__ import annotations

import json
import random
from typing import Any

from diaforge.data_gen.agents.lookup import chosen_option, completion_thought, selection_thought
from diaforge.data_gen.agents.options import options_in_thought, plausible, prefixes_of, still_open
from diaforge.data_gen.agents.refusal import NO_FIT_RULE, miss_turn
from diaforge.data_gen.agents.state import COMPLETION, SELECTION, DialogueState, TeacherMove, clarifying_turn
from diaforge.data_gen.phrasing import first_sentence, option_descriptors
from diaforge.data_gen.phrasing.render import action, option_phrases, param_item, param_noun
from diaforge.data_gen.values import extract_value
from diaforge.data_gen.values.rendering import plural_name
from diaforge.data_gen.wording import REASONING_STYLES, get_wording
from diaforge.format import parse_assistant, render_assistant, system_prompt
from diaforge.llm.base import BackendError, ChatBackend, Usage
from diaforge.schema import Tool, ToolCall, Turn
from diaforge.text import join_options


def value_hint(spec: dict[str, Any]) -> str:
    """A short hint of the expected shape of a value, for the teacher's questions."""
    if spec.get("enum") and len(spec["enum"]) <= 5:
        return "one of " + join_options([str(e) for e in spec["enum"]])
    fmt = spec.get("format")
    if fmt == "date":
        return "YYYY-MM-DD"
    if fmt == "date-time":
        return "date and time"
    return ""


def _param_item(tool: Tool, key: str) -> str:
    return param_item(tool, key, value_hint(tool.properties.get(key, {})))


def _once(phrases: list[str]) -> list[str]:
    """Each phrase once: two tools described alike are one option to a person ("search direct
    flights or search direct flights" is no question)."""
    return list(dict.fromkeys(phrases))


class ScriptedTeacher:
    """Rule-based assistant teacher (see the `diaforge.data_gen.agents` docstring). `wording` names the
    wording bank; `reasoning` the style of its argument-completion thoughts (`summary`, or
    `lookup`: `diaforge.data_gen.agents.lookup`)."""

    name = "scripted"
    max_options = 4

    def __init__(self, *, wording: str = "train", reasoning: str = "summary") -> None:
        if reasoning not in REASONING_STYLES:
            raise ValueError(f"reasoning must be one of {', '.join(REASONING_STYLES)}, got {reasoning!r}")
        self.bank = get_wording(wording)
        self.reasoning = reasoning

    async def act(self, state: DialogueState, rng: random.Random) -> TeacherMove:
        if state.no_tool:  # a retrieval miss: disambiguate, then refuse (never call)
            return TeacherMove(miss_turn(self, state, rng))
        if state.phase == SELECTION:
            return TeacherMove(self.select_or_ask(state, rng))
        return TeacherMove(self.complete(state, rng))

    def remaining(self, state: DialogueState) -> list[Tool]:
        """Replays the selection phase: plausible candidates after the opening, narrowed by each
        answer to a question of ours (`still_open`). The options a question offered are those its
        thought lists (`options_in_thought`: a history written by an earlier teacher, such as a
        benchmark's reference dialogue, may have offered fewer than were open), else the whole pool
        at that point, as `ask` offers them."""
        users = [t for t in state.turns if t.role == "user"]
        pool = plausible(state.candidates, users[0].content)
        pending: list[Tool] | None = None
        for t in state.turns[1:]:
            if t.role == "assistant" and t.phase == SELECTION and not t.tool_calls:
                if len(pool) > 1:
                    pending = options_in_thought(t.thought, state.candidates) or list(pool)
                else:
                    pending = list(state.candidates)
            elif t.role == "user" and pending is not None:
                pool, pending = still_open(state.candidates, pool, pending, t.content), None
        return pool

    def select_or_ask(self, state: DialogueState, rng: random.Random) -> Turn:
        pool = self.remaining(state)
        if len(pool) == 1:
            chosen = pool[0]
            thought = (
                f"The request points to {chosen.name}: {first_sentence(chosen.description)}. "
                "No other candidate fits what the user said, so I select it."
            )
            return Turn(
                role="assistant", thought=thought, tool_calls=[ToolCall(name=chosen.name)], phase=SELECTION
            )
        return self.ask(state, pool, rng)

    def ask(self, state: DialogueState, pool: list[Tool], rng: random.Random) -> Turn:
        """The disambiguating question about every tool of `pool` (two or more), described by what
        separates them, never by name."""
        names = ", ".join(c.name for c in pool)
        options = list(pool)
        prefixes = prefixes_of(state.candidates)
        descriptors = option_descriptors(options, prefixes)
        verb, offered = option_phrases(options, prefixes, state.candidates)
        phrases = [offered[o.name] for o in options]
        rng.shuffle(phrases)
        if verb:
            question = rng.choice(self.bank.ask_shared_verb).format(
                verb=verb, options=join_options(_once(phrases))
            )
        else:
            phrases = [offered[o.name] for o in options]
            rng.shuffle(phrases)
            question = rng.choice(self.bank.ask_actions).format(options=join_options(_once(phrases)))
        differences = "; ".join(f"{o.name}: {descriptors[o.name]}" for o in options)
        thought = (
            f"Candidates that match the request: {names}. They differ in what they do ({differences}). "
            "I cannot tell which one the user means, so I ask about the difference without naming tools."
        )
        if self.reasoning == "lookup":
            thought = selection_thought([o.name for o in options], descriptors)
        return clarifying_turn(thought, question)

    @staticmethod
    def known_values(tool: Tool, said: str) -> dict[str, Any]:
        """The required values of `tool` that `said` (the user's words) gives, read as the teacher
        reads them (`diaforge.data_gen.values.extract_value`), in the order of `tool.required`."""
        known: dict[str, Any] = {}
        for key in tool.required:
            found, value = extract_value(said, key, tool.properties[key])
            if found:
                known[key] = value
        return known

    def complete(self, state: DialogueState, rng: random.Random) -> Turn:
        gold = state.gold
        known = self.known_values(gold, " ".join(state.user_texts))
        missing = [k for k in gold.required if k not in known]
        have = (
            ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in known.items()) or "nothing yet"
        )
        ask = missing[:3]
        lookup = None
        if self.reasoning == "lookup":
            first = not any(t.role == "assistant" and t.phase == COMPLETION for t in state.turns)
            asked = [t.thought or "" for t in state.turns if t.role == "assistant" and t.phase == SELECTION]
            chosen = chosen_option(gold, asked) if first and asked else None
            lookup = completion_thought(gold, known, missing, ask, state.user_texts, chosen)
        if not missing:
            thought = lookup or (
                f"The tool is {gold.name}. Required arguments: {', '.join(gold.required) or 'none'}; "
                f"known: {have}. Nothing is missing, so I call it."
            )
            return Turn(
                role="assistant",
                thought=thought,
                tool_calls=[ToolCall(name=gold.name, args=known)],
                phase=COMPLETION,
                act="function_calling",
                action="call",
            )
        items = join_options([_param_item(gold, k) for k in ask], conj="and")
        first_ask = not any(t.role == "assistant" and t.phase == COMPLETION for t in state.turns)
        templates = self.bank.ask_values if first_ask else self.bank.ask_more
        text = rng.choice(templates).format(
            act=action(gold, prefixes_of(state.candidates), state.candidates),
            items=items,
            them="them" if len(ask) > 1 or plural_name(param_noun(ask[0])) else "it",
            is_are="are"
            if len(ask) > 1 or plural_name(param_noun(ask[0]))
            else "is",  # "the damaged units are"
        )
        thought = lookup or (
            f"The tool is {gold.name}. Required arguments: {', '.join(gold.required)}; known: {have}. "
            f"Missing: {', '.join(missing)}. I ask for {', '.join(ask)} without guessing values."
        )
        return Turn(
            role="assistant",
            thought=thought,
            content=text,
            phase=COMPLETION,
            act="seek_info",
            action="request",
        )


TEACHER_SELECTION_RULES = (
    "Several listed tools may look alike. Until you are sure which one the user needs, ask one short "
    "question that separates the plausible tools by what actually differs between them. When you are "
    "sure, output the call list for that tool (arguments you already know, or {})."
)
TEACHER_COMPLETION_RULES = (
    "The right tool is decided. Ask for the required arguments that are still missing, a few at a time, "
    "using only values the user stated. When every required argument is known, output the call list "
    "with exactly the required arguments."
)


class LLMTeacher:
    """Assistant teacher played by a chat model in the paper's prompt format."""

    def __init__(
        self, backend: ChatBackend, *, temperature: float = 0.3, max_tokens: int = 512, retries: int = 2
    ):
        self.backend, self.temperature, self.max_tokens, self.retries = (
            backend,
            temperature,
            max_tokens,
            retries,
        )
        self.name = f"{backend.name}:{backend.model}"

    async def act(self, state: DialogueState, rng: random.Random) -> TeacherMove:
        if state.phase == SELECTION:
            tools, rules = state.candidates, TEACHER_SELECTION_RULES
            if state.no_tool:  # told, as the scripted teacher is, that the user's need may not be listed
                rules = f"{rules} {NO_FIT_RULE}"
        else:
            tools, rules = [state.gold], TEACHER_COMPLETION_RULES
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(tools, extra_instructions=rules)}
        ]
        for t in state.turns:
            if t.role == "user":
                messages.append({"role": "user", "content": t.content})
            else:
                messages.append({"role": "assistant", "content": render_assistant(t, include_thought=False)})
        usage = Usage()
        reason = "no attempt"
        for _ in range(self.retries + 1):
            result = await self.backend.chat(
                messages, temperature=self.temperature, max_tokens=self.max_tokens, seed=rng.randrange(2**31)
            )
            usage.add(result.usage)
            parsed = parse_assistant(result.text)
            if parsed.kind == "malformed":
                reason = parsed.reason or "malformed"
                continue
            if not parsed.thought:
                reason = "no reasoning trace"
                continue
            if parsed.kind == "tool_calls":
                return TeacherMove(
                    Turn(
                        role="assistant",
                        thought=parsed.thought,
                        tool_calls=parsed.tool_calls,
                        phase=state.phase,
                        act="function_calling",
                        action="call",
                    ),
                    usage,
                )
            asks = "?" in parsed.content
            action = ("clarify" if state.phase == SELECTION else "request") if asks else "response"
            act = "seek_info" if asks else "inform"
            return TeacherMove(
                Turn(
                    role="assistant",
                    thought=parsed.thought,
                    content=parsed.content,
                    phase=state.phase,
                    act=act,
                    action=action,
                ),
                usage,
            )
        raise BackendError(f"teacher output unusable after {self.retries + 1} tries: {reason}")
