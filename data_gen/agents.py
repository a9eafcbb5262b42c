"""The agents of the dialogue engine: goal writer, user-proxy, assistant teacher and the two
model-judged validators (relevancy, critique), each as a `scripted` rule-based policy and as an
LLM-driven agent behind any `ChatBackend`.

The scripted policies are the embedded default: offline and deterministic for a given random
generator. They are a real policy, not a stand-in:

* the **teacher** sees the candidate tools, never the gold tool, while it selects. It keeps the
  candidates that the user's words support, and when several remain it asks a question built
  from what actually tells them apart (the words of their names and descriptions that the others
  lack). Once the selection is confirmed it knows the gold tool's schema (not its values), reads
  the values the user has given out of the user's words, asks for the missing required ones and
  calls the tool when none is missing;
* the **user-proxy** knows its goal, the gold tool, the candidates and the gold values. It opens
  vaguely with the words the gold tool shares with its near-duplicates, answers a disambiguating
  question with the gold tool's distinguishing features, and gives gold values only when asked,
  sometimes only part of what was asked while many remain. Phrasing varies with templates and the
  persona's tone and jargon. It never names a tool.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from data_gen.format import parse_assistant, render_assistant, system_prompt
from data_gen.llm.base import BackendError, ChatBackend, Usage
from data_gen.schema import Persona, Tool, ToolCall, Turn, Verdict
from data_gen.text import (
    content_stems,
    distinguishing_description_words,
    distinguishing_name_words,
    humanise_name,
    join_options,
    name_tokens,
    overlap,
    shared_name_words,
    stem,
    tool_stems,
    words,
)
from data_gen.values import extract_value, humanise_param, phrase_values, render_value

SELECTION, COMPLETION = "tool_selection", "argument_completion"


@dataclass
class DialogueState:
    """Everything a dialogue in progress knows. Agents read the parts their role may see."""

    gold: Tool
    candidates: list[Tool]
    persona: Persona
    goal: str
    gold_args: dict[str, Any]
    turns: list[Turn] = field(default_factory=list)
    phase: str = SELECTION

    @property
    def user_texts(self) -> list[str]:
        return [t.content for t in self.turns if t.role == "user"]

    @property
    def last_assistant(self) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.role == "assistant"), None)


@dataclass
class TeacherMove:
    """The teacher's next assistant turn. In the selection phase a turn with a tool call is a
    selection: the engine checks it against the gold tool and drops it."""

    turn: Turn
    usage: Usage = field(default_factory=Usage)


# --------------------------------------------------------------------------------------------
# Shared helpers of the scripted policies
# --------------------------------------------------------------------------------------------

VERBS_LOOKUP = {"get", "list", "search", "find", "fetch", "query", "check", "view", "show", "lookup", "read"}


def siblings(tool: Tool, candidates: Sequence[Tool]) -> list[Tool]:
    """Candidates whose names share at least half of `tool`'s name words (its near family)."""
    own = {stem(w) for w in name_tokens(tool)}
    out = []
    for c in candidates:
        if c.name == tool.name:
            continue
        other = {stem(w) for w in name_tokens(c)}
        if len(own & other) * 2 >= len(own):
            out.append(c)
    return out


def action_phrase(name_words: Sequence[str]) -> str:
    """Turns name words into a verb phrase a person would say: `get invoice status` ->
    `look up the invoice status`, `approve training request` -> `approve a training request`."""
    ws = list(name_words)
    if not ws:
        return "sort something out"
    verb, rest = ws[0], ws[1:]
    if not rest:
        return verb
    obj = " ".join(rest)
    if verb in VERBS_LOOKUP:
        return f"look up the {obj}"
    article = "" if rest[-1].endswith("s") or rest[0] in ("all", "my", "our") else "a "
    return f"{verb} {article}{obj}"


def option_phrase(tool: Tool, group: Sequence[Tool]) -> str:
    """How the teacher names one option in a disambiguating question: the humanised name, with
    its distinguishing description words when the name alone does not set it apart."""
    human = humanise_name(tool)
    if distinguishing_name_words(tool, group):
        return human
    extra = distinguishing_description_words(tool, group, limit=2)
    return f"{human} ({' '.join(extra)})" if extra else human


def mentioned_options(question: str, candidates: Sequence[Tool]) -> list[Tool]:
    """The candidates a disambiguating question offers, recognised by their humanised names."""
    q = question.lower()
    return [c for c in candidates if humanise_name(c) in q]


_NEGATION = re.compile(r"\b(?:not|no|rather than|instead of|never)\b([^.;!?]*)", re.IGNORECASE)


def negated_stems(text: str) -> set[str]:
    out: set[str] = set()
    for m in _NEGATION.finditer(text):
        out |= {stem(w) for w in words(m.group(1))}
    return out


def narrow(options: Sequence[Tool], answer: str) -> list[Tool]:
    """The options an answer points at: those whose distinguishing words it uses most, minus
    those it negates."""
    ans = content_stems(answer) | {stem(w) for w in words(answer)}
    neg = negated_stems(answer)
    scored = []
    for o in options:
        marks = {stem(w) for w in distinguishing_name_words(o, options)}
        marks |= {stem(w) for w in distinguishing_description_words(o, options)}
        if marks & neg:
            continue
        scored.append((len(marks & (ans - neg)), o))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    if best == 0:
        return [o for _, o in scored] if len(scored) < len(options) else []
    return [o for s, o in scored if s == best]


def plausible(candidates: Sequence[Tool], text: str) -> list[Tool]:
    """Candidates the user's words support: the best overlap and those close to it."""
    stems = content_stems(text)
    scored = [(overlap(stems, c), i, c) for i, c in enumerate(candidates)]
    best = max(s for s, _, _ in scored)
    if best <= 0:
        return list(candidates)
    return [c for s, _, c in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= 0.75 * best]


# --------------------------------------------------------------------------------------------
# Scripted goal writer
# --------------------------------------------------------------------------------------------


def scripted_goal(gold: Tool, persona: Persona, gold_args: dict[str, Any]) -> str:
    """A concrete goal the user-proxy pursues, consistent with the persona and the gold values."""
    who = persona.role or "an employee"
    what = action_phrase(name_tokens(gold))
    first = gold.description.split(". ")[0].rstrip(".")
    details = ", ".join(f"{humanise_param(k)} {render_value(v)}" for k, v in gold_args.items())
    goal = f"As {who}, {what}: {first[:1].lower() + first[1:]}."
    return f"{goal} Details: {details}." if details else goal


# --------------------------------------------------------------------------------------------
# Scripted user-proxy
# --------------------------------------------------------------------------------------------

_OPENINGS = {
    "terse": ["Need to {act}.", "{Act}, please.", "I have to {act}. Can you do that?"],
    "formal": [
        "Good morning. I would like to {act}.",
        "Hello, I need assistance: I have to {act}.",
        "I am writing because I need to {act}.",
    ],
    "friendly": [
        "Hi there! Could you help me {act}?",
        "Hey, hope you're well. I'd like to {act}.",
        "Hi! Quick one: I need to {act}.",
    ],
    "impatient": [
        "I need to {act} today, can you sort it out?",
        "Can we {act} right away? This is urgent.",
        "I've been trying to {act} all morning. Help?",
    ],
    "chatty": [
        "Hi, so I'm {role_a} in {department} and I need to {act} for something coming up.",
        "Morning! Long week already. Anyway, I need to {act}.",
        "Hello! I was told you could help me {act}, so here I am.",
    ],
    "precise": [
        "Request: {act}.",
        "I need to {act}. Tell me what you need from me.",
        "Please help me {act}.",
    ],
}
_DEFAULT_TONE = "friendly"
_PICK = [
    "The {mark} one.",
    "I mean the {mark} one.",
    "It's the {mark} one{because}.",
    "{Mark}{because}.",
    "Definitely {mark}{because}.",
]
_PICK_DEFAULT = [
    "Just the plain {core}, not {others}.",
    "The standard {core}, not {others}.",
]
_NONE_FITS = ["None of those, really. I need to {act}.", "Not quite. What I need is to {act}."]
_THANKS = {
    "friendly": " Thanks!",
    "chatty": " Thanks a lot!",
    "formal": " Thank you.",
    "impatient": "",
    "terse": "",
}


def _tone(persona: Persona) -> str:
    return persona.tone if persona.tone in _OPENINGS else _DEFAULT_TONE


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


class ScriptedUser:
    """Rule-based user-proxy (see the module docstring)."""

    name = "scripted"
    volunteer_probability = 0.25

    async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]:
        return self.say(state, rng), Usage()

    def say(self, state: DialogueState, rng: random.Random) -> str:
        """The next user message. What it answers follows from the assistant's last message: a
        question offering candidate actions gets a selection answer, one asking for the gold
        tool's arguments gets values; otherwise the phase decides."""
        if not state.turns:
            return self.opening(state, rng)
        question = state.last_assistant.content if state.last_assistant else ""
        q = question.lower()
        asks_values = any(humanise_param(k).lower() in q for k in state.gold.required)
        if mentioned_options(question, state.candidates) and not asks_values:
            return self.answer_selection(state, question, rng)
        if asks_values or state.phase != SELECTION:
            return self.answer_values(state, question, rng)
        return self.answer_selection(state, question, rng)

    def opening(self, state: DialogueState, rng: random.Random) -> str:
        gold, persona = state.gold, state.persona
        family = siblings(gold, state.candidates)
        core = shared_name_words([gold, *family]) if family else name_tokens(gold)[1:] or name_tokens(gold)
        if family and len(core) < 2:
            marks = {stem(w) for w in distinguishing_name_words(gold, family)}
            core = [w for w in name_tokens(gold) if stem(w) not in marks]
        if family:
            act = action_phrase(core)
        else:
            act = f"sort something out with the {self.topic(gold, state.candidates)}"
        template = rng.choice(_OPENINGS[_tone(persona)])
        role_a = f"the {persona.role.lower()}" if persona.role else "on the team"
        text = template.format(
            act=act, Act=_cap(act), role_a=role_a, department=persona.department or "my team"
        )
        if persona.jargon and rng.random() < 0.3:
            text += f" It's part of our {rng.choice(persona.jargon)} work."
        if state.gold_args and rng.random() < self.volunteer_probability:
            key = rng.choice(sorted(state.gold_args))
            text += " " + phrase_values([(humanise_param(key), render_value(state.gold_args[key]))], rng)
        return text

    @staticmethod
    def topic(gold: Tool, candidates: Sequence[Tool]) -> str:
        """The gold tool's name word that most other candidates also talk about: a topic that
        does not give away which action is wanted."""
        others = [c for c in candidates if c.name != gold.name]
        nouns = name_tokens(gold)[1:] or name_tokens(gold)
        stems = [tool_stems(o) for o in others]
        return max(nouns, key=lambda w: (sum(stem(w) in s for s in stems), nouns.index(w)))

    def answer_selection(self, state: DialogueState, question: str, rng: random.Random) -> str:
        gold = state.gold
        options = mentioned_options(question, state.candidates)
        if gold.name not in {o.name for o in options}:
            return rng.choice(_NONE_FITS).format(act=action_phrase(name_tokens(gold)))
        marks = distinguishing_name_words(gold, options)
        desc = distinguishing_description_words(gold, options, limit=2)
        because = f", {' '.join(desc)}" if desc and rng.random() < 0.5 else ""
        if marks:
            mark = " ".join(marks)
            return rng.choice(_PICK).format(mark=mark, Mark=_cap(mark), because=because)
        others = [o for o in options if o.name != gold.name]
        other_marks = sorted({w for o in others for w in distinguishing_name_words(o, options)})
        if desc:
            return f"The one for {' '.join(desc)}, not {' or '.join(other_marks) or 'the others'}."
        core = " ".join(shared_name_words(options)) or humanise_name(gold)
        return rng.choice(_PICK_DEFAULT).format(core=core, others=" or ".join(other_marks) or "the others")

    def answer_values(self, state: DialogueState, question: str, rng: random.Random) -> str:
        gold = state.gold
        q = question.lower()
        said = " ".join(state.user_texts)
        remaining = [k for k in gold.required if not extract_value(said, k, gold.properties[k])[0]]
        asked = [k for k in remaining if humanise_param(k).lower() in q or k.lower() in q]
        if not asked:
            if remaining:  # answer what is still needed rather than stall
                asked = remaining[:1]
            else:
                return "That's everything I have. Please go ahead."
        give = asked
        if len(remaining) > 2 and len(asked) > 1:
            give = asked[: rng.randint(1, len(asked) - 1)]
        pairs = [(humanise_param(k), render_value(state.gold_args[k])) for k in give]
        return phrase_values(pairs, rng) + _THANKS.get(_tone(state.persona), "")


# --------------------------------------------------------------------------------------------
# Multi-sample voting user-proxy (DiaFORGE Appendix C.3)
# --------------------------------------------------------------------------------------------


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
        if not any(c.name.lower() in low for c in state.candidates):
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
                "content": f"Conversation so far:\n{_transcript(state.turns)}\n\nCandidates:\n{listing}",
            },
        ]
        result = await self.backend.chat(messages, temperature=0.0, max_tokens=8, seed=rng.randrange(2**31))
        found = re.search(r"\d+", result.text)
        pick = int(found.group()) - 1 if found else 0
        return (pick if 0 <= pick < len(shown) else 0), result.usage


class VotingUser:
    """n candidate utterances from a user-proxy, m voters each seeing its own random permutation,
    votes mapped back to the original indices and pooled by the mode (n=3, m=3 by default)."""

    def __init__(self, user, voter, *, n: int = 3, m: int = 3) -> None:  # noqa: ANN001
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


# --------------------------------------------------------------------------------------------
# Scripted teacher
# --------------------------------------------------------------------------------------------

_ASK_OPTIONS = [
    "Several actions could fit. Do you want to {options}?",
    "Just to pick the right one: should I {options}?",
    "I can help with that. Which do you mean: {options}?",
    "To make sure I do the right thing, do you need to {options}?",
]
_ASK_VALUES = [
    "Got it. To {act}, I need {items}. Could you share {them}?",
    "Understood. Could you give me {items}?",
    "Sure. What {is_are} {items}?",
    "I can do that. I still need {items}; could you provide {them}?",
]
_ASK_MORE = ["Thanks. What {is_are} {items}?", "Thank you. Could you also give me {items}?"]


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
    hint = value_hint(tool.properties.get(key, {}))
    return f"the {humanise_param(key)}{f' ({hint})' if hint else ''}"


class ScriptedTeacher:
    """Rule-based assistant teacher (see the module docstring)."""

    name = "scripted"
    max_options = 4

    async def act(self, state: DialogueState, rng: random.Random) -> TeacherMove:
        if state.phase == SELECTION:
            return TeacherMove(self.select_or_ask(state, rng))
        return TeacherMove(self.complete(state, rng))

    def _remaining(self, state: DialogueState) -> list[Tool]:
        """Replays the selection phase: plausible candidates after the opening, narrowed by each
        answer to a question of ours."""
        users = [t for t in state.turns if t.role == "user"]
        pool = plausible(state.candidates, users[0].content)
        pending: list[Tool] | None = None
        for t in state.turns[1:]:
            if t.role == "assistant" and t.phase == SELECTION and not t.tool_calls:
                pending = mentioned_options(t.content, state.candidates) or pool
            elif t.role == "user" and pending is not None:
                picked = narrow(pending, t.content)
                if not picked:  # "none of those": look again at the rest
                    rest = [c for c in state.candidates if c.name not in {p.name for p in pending}]
                    picked = plausible(rest, t.content) if rest else pool
                pool, pending = picked, None
        return pool

    def select_or_ask(self, state: DialogueState, rng: random.Random) -> Turn:
        pool = self._remaining(state)
        names = ", ".join(c.name for c in pool)
        if len(pool) == 1:
            chosen = pool[0]
            thought = (
                f"The request points to {chosen.name}: {chosen.description.split('. ')[0].rstrip('.')}. "
                "No other candidate fits what the user said, so I select it."
            )
            return Turn(
                role="assistant", thought=thought, tool_calls=[ToolCall(name=chosen.name)], phase=SELECTION
            )
        options = pool[: self.max_options]
        marks = {o.name: distinguishing_name_words(o, options) for o in options}
        differences = "; ".join(f"{o.name}: {' '.join(marks[o.name]) or 'the general case'}" for o in options)
        phrases = [option_phrase(o, options) for o in options]
        rng.shuffle(phrases)
        question = rng.choice(_ASK_OPTIONS).format(options=join_options(phrases))
        thought = (
            f"Candidates that match the request: {names}. They differ in {differences}. "
            "I cannot tell which one the user means, so I ask a question that separates them."
        )
        return Turn(
            role="assistant",
            thought=thought,
            content=question,
            phase=SELECTION,
            act="seek_info",
            action="clarify",
        )

    def complete(self, state: DialogueState, rng: random.Random) -> Turn:
        gold = state.gold
        said = " ".join(state.user_texts)
        known: dict[str, Any] = {}
        for key in gold.required:
            found, value = extract_value(said, key, gold.properties[key])
            if found:
                known[key] = value
        missing = [k for k in gold.required if k not in known]
        have = (
            ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in known.items()) or "nothing yet"
        )
        if not missing:
            thought = (
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
        ask = missing[:3]
        items = join_options([_param_item(gold, k) for k in ask], conj="and")
        first_ask = not any(t.role == "assistant" and t.phase == COMPLETION for t in state.turns)
        templates = _ASK_VALUES if first_ask else _ASK_MORE
        text = rng.choice(templates).format(
            act=action_phrase(name_tokens(gold)),
            items=items,
            them="them" if len(ask) > 1 else "it",
            is_are="are" if len(ask) > 1 else "is",
        )
        thought = (
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


# --------------------------------------------------------------------------------------------
# Scripted validators (relevancy and critique)
# --------------------------------------------------------------------------------------------


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

    async def judge(self, dialogue_turns: list[Turn], candidates: Sequence[Tool]) -> tuple[Verdict, Usage]:
        seen_completion = False
        for i, t in enumerate(dialogue_turns):
            if t.role == "user":
                low = t.content.lower()
                named = [c.name for c in candidates if c.name.lower() in low]
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


# --------------------------------------------------------------------------------------------
# LLM-driven agents
# --------------------------------------------------------------------------------------------

USER_SYSTEM = """You play a person at work who is chatting with an AI assistant. Stay in character.

Who you are: {persona}
What you want: {goal}
The action you need is this one (never say its name): {gold_name}: {gold_desc}
Other actions the assistant might confuse it with (never say their names): {distractors}
The exact values you will give when asked (never invent others): {values}

How to talk:
- {phase_rule}
- Answer only what the assistant asked; do not volunteer extra details.
- When asked for several values and more than two are still missing, you may give only some of them.
- Write one or two short sentences, in your own voice. Never mention tool or function names.
- Output only what you say, nothing else."""

_USER_PHASE = {
    SELECTION: "Start vague: say what you want in words that could fit several of the actions above, "
    "then answer the assistant's questions about which one you mean.",
    COMPLETION: "The assistant knows which action you need. Give the values it asks for.",
}

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


def _transcript(turns: Sequence[Turn]) -> str:
    lines = []
    for t in turns:
        if t.role == "user":
            lines.append(f"USER: {t.content}")
        elif t.tool_calls:
            calls = [{"name": c.name, "args": c.args} for c in t.tool_calls]
            lines.append(f"ASSISTANT CALLS: {json.dumps(calls, ensure_ascii=False)}")
        else:
            lines.append(f"ASSISTANT: {t.content}")
    return "\n".join(lines)


class LLMUser:
    """User-proxy played by a chat model (roles flipped: the model writes the user's lines)."""

    def __init__(self, backend: ChatBackend, *, temperature: float = 0.8, max_tokens: int = 160) -> None:
        self.backend, self.temperature, self.max_tokens = backend, temperature, max_tokens
        self.name = f"{backend.name}:{backend.model}"

    async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]:
        system = USER_SYSTEM.format(
            persona=state.persona.description,
            goal=state.goal,
            gold_name=state.gold.name,
            gold_desc=state.gold.description,
            distractors="; ".join(
                f"{c.name}: {c.description}" for c in state.candidates if c.name != state.gold.name
            ),
            values=json.dumps(state.gold_args, ensure_ascii=False) if state.gold_args else "none needed",
            phase_rule=_USER_PHASE[state.phase],
        )
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for t in state.turns:
            if t.role == "user":
                messages.append({"role": "assistant", "content": t.content})
            else:
                messages.append({"role": "user", "content": t.content or "(the assistant is working on it)"})
        if len(messages) == 1:
            messages.append({"role": "user", "content": "(The assistant is waiting for your first message.)"})
        result = await self.backend.chat(
            messages, temperature=self.temperature, max_tokens=self.max_tokens, seed=rng.randrange(2**31)
        )
        text = result.text.strip().strip('"').strip()
        for c in state.candidates:  # a user never names a tool
            text = re.sub(re.escape(c.name), "that", text, flags=re.IGNORECASE)
        if not text:
            raise BackendError("the user-proxy model returned an empty message")
        return text, result.usage


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
            {"role": "user", "content": _transcript(turns)},
        ]
        result = await self.backend.chat(messages, temperature=0.0, max_tokens=self.max_tokens, seed=0)
        ok, reason = parse_judgement(result.text)
        return Verdict(validator=self.kind, passed=ok, reason=reason), result.usage

    async def judge(self, dialogue_turns: list[Turn], *args: Any) -> tuple[Verdict, Usage]:
        if self.kind == "relevancy":
            gold: Tool = args[0]
            return await self._ask(
                RELEVANCY_TASK.format(tool=json.dumps(gold.spec(), ensure_ascii=False)), dialogue_turns
            )
        return await self._ask(CRITIQUE_TASK, dialogue_turns)


GOAL_SYSTEM = (
    "Write the goal of an enterprise employee who needs the tool below, in one sentence, first person, "
    "consistent with who they are and with the given values. Output only the sentence."
)


async def llm_goal(
    backend: ChatBackend, gold: Tool, persona: Persona, gold_args: dict, rng: random.Random
) -> tuple[str, Usage]:
    messages = [
        {"role": "system", "content": GOAL_SYSTEM},
        {
            "role": "user",
            "content": f"Person: {persona.description}\nTool: {gold.name}: {gold.description}\n"
            f"Values: {json.dumps(gold_args, ensure_ascii=False)}",
        },
    ]
    result = await backend.chat(messages, temperature=0.7, max_tokens=120, seed=rng.randrange(2**31))
    text = result.text.strip()
    return (text or scripted_goal(gold, persona, gold_args)), result.usage


VALUES_SYSTEM = (
    "Invent realistic values for the required arguments of the tool below, fitting the person who will "
    "use it. Follow each parameter's type, enum, pattern and format exactly. Reply with only a JSON object "
    "mapping each required argument to its value."
)


async def llm_values(
    backend: ChatBackend, gold: Tool, persona: Persona, rng: random.Random
) -> tuple[dict | None, Usage]:
    """Gold values from a model, or None when its answer does not fit the schema (the caller
    falls back to the typed generator)."""
    from data_gen.values import check_arguments

    props = {k: gold.properties[k] for k in gold.required}
    messages = [
        {"role": "system", "content": VALUES_SYSTEM},
        {
            "role": "user",
            "content": f"Person: {persona.description}\nTool: {gold.name}: {gold.description}\n"
            f"Required parameters: {json.dumps(props, ensure_ascii=False)}",
        },
    ]
    result = await backend.chat(messages, temperature=0.9, max_tokens=300, seed=rng.randrange(2**31))
    text = result.text
    start, end = text.find("{"), text.rfind("}")
    try:
        obj = json.loads(text[start : end + 1]) if start >= 0 else None
    except (json.JSONDecodeError, RecursionError):
        obj = None
    if not isinstance(obj, dict) or check_arguments(gold, obj):
        return None, result.usage
    return obj, result.usage
