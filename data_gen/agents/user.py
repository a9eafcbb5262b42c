"""The user-proxy: `ScriptedUser` (rule-based, see the package docstring) and `LLMUser` (a chat
model playing the user, roles flipped)."""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING, Any

from diaforge.data_gen.agents.options import gold_choice, offered_options, prefixes_of, restated_need
from diaforge.data_gen.agents.state import COMPLETION, SELECTION, DialogueState
from diaforge.data_gen.personas import same_line_of_business
from diaforge.data_gen.phrasing import cap, catalogue_terms, subject_of, vague_request
from diaforge.data_gen.phrasing.render import names_param, param_noun, sound, with_tool
from diaforge.data_gen.values import extract_value, phrase_values, render_value
from diaforge.data_gen.wording import DEFAULT_TONE, Wording, get_wording
from diaforge.llm.base import BackendError, ChatBackend, Usage
from diaforge.schema import Persona, Tool
from diaforge.text import content_stems, tool_stems

if TYPE_CHECKING:  # numpy is imported only when an encoder is used
    from diaforge.similarity import Encoder

_THANKS = {
    "friendly": " Thanks!",
    "chatty": " Thanks a lot!",
    "formal": " Thank you.",
    "impatient": "",
    "terse": "",
}


def _tone(persona: Persona, bank: Wording) -> str:
    return persona.tone if persona.tone in bank.openings else DEFAULT_TONE


# How a question that offers a choice asks ("Should I ...", "which is it: ... or ...?"): one that
# names an argument there ("modify a bank account or a password?") still asks for a pick.
_CHOICE = re.compile(r"\b(?:which is it|should i|do you want me to|would you like me to)\b[^?]*\bor\b", re.I)


def _asked_values(state: DialogueState, question: str) -> list[str]:
    # by every spelling the teacher may use ("the needed-by date" asks for `needed_by`)
    return [k for k in state.gold.required if names_param(question, k, state.gold.properties.get(k))]


def _persona_fits(persona: Persona, gold: Tool, candidates: list[Tool]) -> bool:
    """Whether the persona's trade is the tool's: the same line of business, or (for a tool that
    declares none) a role whose words the candidate tools use (a returns coordinator among
    refund tools)."""
    if same_line_of_business(persona.line_of_business, gold.metadata.get("line_of_business")):
        return True
    if gold.metadata.get("line_of_business") or not persona.role:
        return False
    words_ = set().union(*(tool_stems(c) for c in candidates))
    return bool(content_stems(persona.role) & words_)


def shop_talk(persona: Persona, gold: Tool, candidates: list[Tool], prefixes: frozenset[str]) -> list[str]:
    """The terms a user may drop as jargon: the persona's own when its line of business is the
    tool's, else those of its terms the catalogue itself uses, else words of the catalogue
    (`order` among order tools)."""
    if same_line_of_business(persona.line_of_business, gold.metadata.get("line_of_business")):
        return list(persona.jargon)
    text = " ".join(f"{c.description} {' '.join(c.properties)}" for c in candidates)
    own = [t for t in persona.jargon if re.search(rf"(?<![\w-]){re.escape(t)}(?![\w-])", text)]
    return own or catalogue_terms(gold, candidates, prefixes)


class ScriptedUser:
    """Rule-based user-proxy (see the `diaforge.data_gen.agents` docstring).

    `wording` names the wording bank (`train` for corpora, `heldout` for the benchmark and
    evaluation). `encoder` (optional, a `diaforge.similarity` encoder) lets it read questions by
    meaning as well as by words."""

    name = "scripted"
    volunteer_probability = 0.25

    def __init__(self, *, wording: str = "train", encoder: Encoder | None = None) -> None:
        self.bank = get_wording(wording)
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
        chooses = state.gold in options and _CHOICE.search(question) is not None
        if len(options) < 2 and not chooses and _asked_values(state, question):
            return self.answer_values(state, question, rng)  # not "modify a bank account or a password?"
        return self.answer_selection(state, question, rng, options)

    def opening(self, state: DialogueState, rng: random.Random) -> str:
        gold, persona = state.gold, state.persona
        prefixes = prefixes_of(state.candidates)
        act = vague_request(gold, state.candidates, prefixes)
        if not sound(act, with_tool(gold, state.candidates)):
            act = f"sort out something {subject_of(gold, state.candidates, prefixes)}"
        templates = self.bank.openings[_tone(persona, self.bank)]
        if not _persona_fits(persona, gold, state.candidates):  # no "I'm the buyer in Purchasing" in a shop
            templates = (
                tuple(t for t in templates if "{role}" not in t and "{department}" not in t) or templates
            )
        template = rng.choice(templates)
        role = f"the {persona.role.lower()}" if persona.role else "someone"
        text = template.format(act=act, Act=cap(act), role=role, department=persona.department or "my team")
        terms = shop_talk(persona, gold, state.candidates, prefixes)
        if terms and rng.random() < 0.3:
            text += " " + rng.choice(self.bank.jargon).format(term=rng.choice(terms))
        if state.gold_args and rng.random() < self.volunteer_probability:
            key = rng.choice(sorted(state.gold_args))
            noun = param_noun(key, gold.properties.get(key))
            text += " " + phrase_values([(noun, render_value(state.gold_args[key]))], rng, reply=False)
        return text

    def answer_selection(
        self, state: DialogueState, question: str, rng: random.Random, options: list[Tool] | None = None
    ) -> str:
        gold = state.gold
        if options is None:
            options = offered_options(question, state.candidates, self.encoder)
        if gold.name in {o.name for o in options} and (len(options) >= 2 or _CHOICE.search(question)):
            choice = gold_choice(gold, options if len(options) >= 2 else state.candidates, rng)
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
        pairs = [(param_noun(k, gold.properties.get(k)), render_value(state.gold_args[k])) for k in give]
        return phrase_values(pairs, rng) + _THANKS.get(_tone(state.persona, self.bank), "")


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
