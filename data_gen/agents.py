"""The agents of the dialogue engine: goal writer, user-proxy, assistant teacher and the two
model-judged validators (relevancy, critique), each as a `scripted` rule-based policy and as an
LLM-driven agent behind any `ChatBackend`.

The scripted policies are the embedded default: offline and deterministic for a given random
generator. They are a real policy, not a stand-in:

* the **teacher** sees the candidate tools, never the gold tool, while it selects. It keeps the
  candidates that the user's words support, and when several remain it asks a question that
  describes what separates them (what is left of their descriptions once the shared words go,
  `data_gen.phrasing.option_descriptors`), never a tool name. Once the selection is confirmed it
  knows the gold tool's schema (not its values), reads the values the user has given out of the
  user's words, asks for the missing required ones and calls the tool when none is missing;
* the **user-proxy** knows its goal, the gold tool, the candidates and the gold values. It opens
  with a request that fits the gold tool and its neighbours (`vague_request`), reads a question by
  meaning (`offered_options`), answers from the gold tool's description in its own voice, says
  "none of those" or restates its need when the question does not offer or separate its goal, and
  gives gold values only when asked, sometimes only part of what was asked while many remain.
  Wording comes from a bank (`data_gen.wording`), varied by the persona's tone and jargon. It
  names a tool only after the assistant did.
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
from data_gen.phrasing import (
    cap,
    catalogue_prefixes,
    distinguishing_clause,
    first_sentence,
    in_user_voice,
    intent_of,
    is_base_verb,
    names_read_out,
    option_descriptors,
    shared_verb,
    vague_request,
    with_article,
)
from data_gen.schema import Persona, Tool, ToolCall, Turn, Verdict
from data_gen.text import (
    content_stems,
    humanise_param,
    join_options,
    name_tokens,
    overlap,
    stem,
    tool_stems,
    words,
)
from data_gen.values import extract_value, phrase_values, render_value
from data_gen.wording import DEFAULT_TONE, Wording, wording

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


# Words of a question that say nothing about which option is meant.
_QUESTION_WORDS = frozenset(
    [
        "want",
        "need",
        "mean",
        "should",
        "like",
        "help",
        "which",
        "option",
        "one",
        "kind",
        "type",
        "please",
        "could",
        "would",
        "shall",
        "do",
        "you",
        "me",
        "i",
        "it",
        "is",
        "are",
        "let",
        "know",
        "tell",
        "sure",
        "go",
        "ahead",
        "before",
        "pick",
        "right",
        "action",
        "way",
        "ways",
        "few",
        "possibilities",
        "possibility",
        "applies",
        "matches",
        "match",
        "happy",
        "thing",
        "got",
        "couple",
        "here",
        "there",
    ]
)
_OPTION_SPLIT = re.compile(r",|;|:|\?|\bor\b|\beither\b|\bversus\b|\bvs\b\.?|/", re.IGNORECASE)


def _tool_stems(tool: Tool) -> set[str]:
    stems = tool_stems(tool)
    for key, spec in tool.properties.items():
        stems |= {stem(w) for w in words(key)} | content_stems(str(spec.get("description", "")))
    return stems


def _weights(tools: Sequence[Tool]) -> tuple[dict[str, set[str]], dict[str, float]]:
    """Each tool's stems, and a weight per stem: 1 / how many of the tools use it."""
    stems = {t.name: _tool_stems(t) for t in tools}
    df: dict[str, int] = {}
    for ss in stems.values():
        for s in ss:
            df[s] = df.get(s, 0) + 1
    return stems, {s: 1.0 / n for s, n in df.items()}


def offered_options(question: str, candidates: Sequence[Tool], encoder: Any = None) -> list[Tool]:
    """The candidates a question offers, understood by meaning rather than by name: the question
    is cut into option segments, and each segment goes to the candidate whose name, description
    and parameters it matches best (rarer words count more; with a sentence encoder, cosine
    similarity to the description is added). A segment that matches two candidates about equally
    offers neither."""
    stems, weight = _weights(candidates)
    segments = [s.strip() for s in _OPTION_SPLIT.split(question) if s and s.strip()]
    vecs = None
    if encoder is not None and segments:
        import numpy as np

        vecs = encoder.encode([*segments, *[c.description or c.name for c in candidates]])
        vecs = np.asarray(vecs, dtype=float)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
    scores: list[list[float]] = []
    for i, seg in enumerate(segments):
        seg_stems = {stem(w) for w in words(seg) if w not in _QUESTION_WORDS} & (
            content_stems(seg) | {stem(w) for w in words(seg) if len(w) > 2}
        )
        row = []
        for j, c in enumerate(candidates):
            lexical = sum(weight[s] for s in seg_stems & stems[c.name])
            semantic = float(vecs[i] @ vecs[len(segments) + j]) if vecs is not None else 0.0
            row.append(lexical + (semantic if lexical > 0 else 0.0))
        scores.append(row)
    # Each segment offers at most one candidate and each candidate is offered once: the best
    # remaining pairs first, a pair only when its candidate beats every other remaining one.
    out: list[Tool] = []
    used_seg: set[int] = set()
    pairs = sorted(((v, i, j) for i, row in enumerate(scores) for j, v in enumerate(row)), reverse=True)
    for v, i, j in pairs:
        if v <= 0 or i in used_seg or candidates[j] in out:
            continue
        rivals = [scores[i][k] for k in range(len(candidates)) if k != j and candidates[k] not in out]
        if v > max(rivals, default=0.0) + 1e-9:
            out.append(candidates[j])
            used_seg.add(i)
    q_stems = {stem(w) for w in words(question) if w not in _QUESTION_WORDS} & content_stems(question)
    for c in candidates:  # a word only this candidate has also offers it ("... or one you gave away")
        if c not in out and any(weight[s] == 1.0 for s in q_stems & stems[c.name]):
            out.append(c)
    return out


_NEGATION = re.compile(r"\b(?:not (?:the|a|an)|rather than|instead of)\b([^.;!?]*)", re.IGNORECASE)
_NONE_FITS = re.compile(
    r"\b(?:none of (?:those|these|them)|neither of|not quite|miss the mark|something else)\b", re.I
)


def negated_stems(text: str) -> set[str]:
    out: set[str] = set()
    for m in _NEGATION.finditer(text):
        out |= {stem(w) for w in words(m.group(1))}
    return out


def narrow(options: Sequence[Tool], answer: str) -> list[Tool]:
    """The options an answer points at: those whose distinguishing words (name, description and
    parameters, weighted by rarity within the options) it uses most, minus those it negates."""
    if _NONE_FITS.search(answer):
        return []
    stems, weight = _weights(options)
    ans = content_stems(answer) | {stem(w) for w in words(answer)}
    neg = negated_stems(answer)
    scored = []
    for o in options:
        own = stems[o.name] - set.intersection(*stems.values()) if len(options) > 1 else stems[o.name]
        if own & neg and not (own & (ans - neg)):
            continue
        scored.append((sum(weight[s] for s in own & (ans - neg)), o))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    if best == 0:
        return [o for _, o in scored] if len(scored) < len(options) else []
    return [o for s, o in scored if s >= best - 1e-9]


def plausible(candidates: Sequence[Tool], text: str) -> list[Tool]:
    """Candidates the user's words support: the best overlap and those close to it."""
    stems = content_stems(text)
    scored = [(overlap(stems, c), i, c) for i, c in enumerate(candidates)]
    best = max(s for s, _, _ in scored)
    if best <= 0:
        return list(candidates)
    return [c for s, _, c in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= 0.75 * best]


def prefixes_of(candidates: Sequence[Tool]) -> frozenset[str]:
    return catalogue_prefixes(candidates, share=0.5)


def gold_choice(gold: Tool, options: Sequence[Tool], rng: random.Random) -> str:
    """How the user names what it wants among `options`, in its own words: what sets the gold
    tool's description apart (its object phrase, or a stretch only its description has)."""
    prefixes = prefixes_of(options)
    descriptor = option_descriptors(options, prefixes).get(gold.name, "")
    clause = distinguishing_clause(gold, options)
    if clause and (not descriptor or descriptor.startswith("the one") or rng.random() < 0.35):
        first = clause.split()[0]
        if is_base_verb(first):
            return in_user_voice(f"the option to {clause}")
        lead = (
            ""
            if first in ("with", "for", "where", "that", "in", "at", "as", "on", "by", "from", "to")
            else "about "
        )
        return in_user_voice(f"the one {lead}{clause}")
    choice = descriptor or intent_of(gold, prefixes).phrase
    if is_base_verb(choice.split()[0]):
        choice = f"the option to {choice}"
    return in_user_voice(choice)


def restated_need(gold: Tool, candidates: Sequence[Tool], rng: random.Random) -> str:
    """The user's need said again, more precisely, without naming a tool."""
    prefixes = prefixes_of(candidates)
    intent = intent_of(gold, prefixes)
    clause = distinguishing_clause(gold, candidates)
    if intent.source != "name":
        text = f"I need to {intent.phrase}"
        if clause and stem(clause.split()[-1]) not in {stem(w) for w in words(text)} and rng.random() < 0.5:
            text += f", {clause}"
        return in_user_voice(text) + "."
    return in_user_voice(f"What I need is about {clause}.") if clause else f"I need to {intent.phrase}."


# --------------------------------------------------------------------------------------------
# Scripted goal writer
# --------------------------------------------------------------------------------------------


def scripted_goal(gold: Tool, persona: Persona, gold_args: dict[str, Any]) -> str:
    """A concrete goal the user-proxy pursues, consistent with the persona and the gold values."""
    who = persona.role or "an employee"
    what = intent_of(gold).phrase
    details = ", ".join(f"{humanise_param(k)} {render_value(v)}" for k, v in gold_args.items())
    goal = f"As {with_article(who) if persona.role else who}, I need to {what}."
    return f"{goal} Details: {details}." if details else goal


# --------------------------------------------------------------------------------------------
# Scripted user-proxy
# --------------------------------------------------------------------------------------------

_THANKS = {
    "friendly": " Thanks!",
    "chatty": " Thanks a lot!",
    "formal": " Thank you.",
    "impatient": "",
    "terse": "",
}


def _tone(persona: Persona, bank: Wording) -> str:
    return persona.tone if persona.tone in bank.openings else DEFAULT_TONE


def _asked_values(state: DialogueState, question: str) -> list[str]:
    q = question.lower()
    return [k for k in state.gold.required if humanise_param(k).lower() in q or k.lower() in q]


class ScriptedUser:
    """Rule-based user-proxy (see the module docstring).

    `phrasing` picks the wording bank (`train` for corpora, `heldout` for the benchmark and
    evaluation). `encoder` (optional, a `data_gen.similarity` encoder) lets it read questions by
    meaning as well as by words."""

    name = "scripted"
    volunteer_probability = 0.25

    def __init__(self, *, phrasing: str = "train", encoder: Any = None) -> None:
        self.bank = wording(phrasing)
        self.phrasing = phrasing
        self.encoder = encoder

    async def reply(self, state: DialogueState, rng: random.Random) -> tuple[str, Usage]:
        return self.say(state, rng), Usage()

    def say(self, state: DialogueState, rng: random.Random) -> str:
        """The next user message. A question that asks for the gold tool's arguments gets values;
        one that offers options gets a choice; anything else in the selection phase gets the
        need restated."""
        if not state.turns:
            return self.opening(state, rng)
        question = state.last_assistant.content if state.last_assistant else ""
        if state.phase != SELECTION:
            return self.answer_values(state, question, rng)
        options = offered_options(question, state.candidates, self.encoder)
        if len(options) < 2 and _asked_values(state, question):
            return self.answer_values(state, question, rng)
        return self.answer_selection(state, question, rng, options)

    def opening(self, state: DialogueState, rng: random.Random) -> str:
        gold, persona = state.gold, state.persona
        act = vague_request(gold, state.candidates, prefixes_of(state.candidates))
        template = rng.choice(self.bank.openings[_tone(persona, self.bank)])
        role = f"the {persona.role.lower()}" if persona.role else "someone"
        text = template.format(act=act, Act=cap(act), role=role, department=persona.department or "my team")
        if persona.jargon and rng.random() < 0.3:
            text += " " + rng.choice(self.bank.jargon).format(term=rng.choice(persona.jargon))
        if state.gold_args and rng.random() < self.volunteer_probability:
            key = rng.choice(sorted(state.gold_args))
            text += " " + phrase_values([(humanise_param(key), render_value(state.gold_args[key]))], rng)
        return text

    def answer_selection(
        self, state: DialogueState, question: str, rng: random.Random, options: list[Tool] | None = None
    ) -> str:
        gold = state.gold
        if options is None:
            options = offered_options(question, state.candidates, self.encoder)
        if len(options) >= 2 and gold.name in {o.name for o in options}:
            choice = gold_choice(gold, options, rng)
            return rng.choice(self.bank.pick).format(choice=choice, Choice=cap(choice))
        need = restated_need(gold, state.candidates, rng)
        if len(options) >= 2 or (len(options) == 1 and options[0].name != gold.name):
            return rng.choice(self.bank.none_fits).format(need=need)
        if len(options) == 1:  # a yes/no question about the right option
            return f"Yes: {gold_choice(gold, state.candidates, rng)}."
        return rng.choice(self.bank.restate).format(need=need)

    def answer_values(self, state: DialogueState, question: str, rng: random.Random) -> str:
        gold = state.gold
        said = " ".join(state.user_texts)
        remaining = [k for k in gold.required if not extract_value(said, k, gold.properties[k])[0]]
        asked = [k for k in _asked_values(state, question) if k in remaining]
        if not asked:
            if remaining:  # answer what is still needed rather than stall
                asked = remaining[:1]
            else:
                return rng.choice(self.bank.nothing_more)
        give = asked
        if len(remaining) > 2 and len(asked) > 1:
            give = asked[: rng.randint(1, len(asked) - 1)]
        pairs = [(humanise_param(k), render_value(state.gold_args[k])) for k in give]
        return phrase_values(pairs, rng) + _THANKS.get(_tone(state.persona, self.bank), "")


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
    """Rule-based assistant teacher (see the module docstring). `phrasing` picks the wording bank."""

    name = "scripted"
    max_options = 4

    def __init__(self, *, phrasing: str = "train") -> None:
        self.bank = wording(phrasing)
        self.phrasing = phrasing

    async def act(self, state: DialogueState, rng: random.Random) -> TeacherMove:
        if state.phase == SELECTION:
            return TeacherMove(self.select_or_ask(state, rng))
        return TeacherMove(self.complete(state, rng))

    def _remaining(self, state: DialogueState) -> list[Tool]:
        """Replays the selection phase: plausible candidates after the opening, narrowed by each
        answer to a question of ours (the options a question offered are the first
        `max_options` of the pool at that point)."""
        users = [t for t in state.turns if t.role == "user"]
        pool = plausible(state.candidates, users[0].content)
        pending: list[Tool] | None = None
        for t in state.turns[1:]:
            if t.role == "assistant" and t.phase == SELECTION and not t.tool_calls:
                pending = pool[: self.max_options] if len(pool) > 1 else list(state.candidates)
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
                f"The request points to {chosen.name}: {first_sentence(chosen.description)}. "
                "No other candidate fits what the user said, so I select it."
            )
            return Turn(
                role="assistant", thought=thought, tool_calls=[ToolCall(name=chosen.name)], phase=SELECTION
            )
        options = pool[: self.max_options]
        prefixes = prefixes_of(state.candidates)
        descriptors = option_descriptors(options, prefixes)
        phrases = [descriptors[o.name] for o in options]
        rng.shuffle(phrases)
        verb = shared_verb(options, prefixes)
        if verb and not any(p.startswith("the one ") for p in phrases):
            question = rng.choice(self.bank.ask_shared_verb).format(verb=verb, options=join_options(phrases))
        else:
            phrases = [
                p if not p.startswith("the one ") else f"{intent_of(o, prefixes).phrase} {p[8:]}"
                for o, p in zip(options, [descriptors[o.name] for o in options], strict=True)
            ]
            rng.shuffle(phrases)
            question = rng.choice(self.bank.ask_actions).format(options=join_options(phrases))
        differences = "; ".join(f"{o.name}: {descriptors[o.name]}" for o in options)
        thought = (
            f"Candidates that match the request: {names}. They differ in what they do ({differences}). "
            "I cannot tell which one the user means, so I ask about the difference without naming tools."
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
        templates = self.bank.ask_values if first_ask else self.bank.ask_more
        text = rng.choice(templates).format(
            act=intent_of(gold, prefixes_of(state.candidates)).phrase,
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
