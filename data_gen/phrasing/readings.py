"""Other readings of a description, for where the parse is unsure.

`intents.intent_of` commits to one reading of a description's opening. Where that opening can be
read two ways (a word that is a verb or a noun: "List", "Reports", "Notes", "Backup"; a
third-person opening: "Returns whether a unit is vacant"; a clause the object is cut from: "Puts
a sales order on delivery hold"), `readings` offers the other verb phrases a person could say,
each a candidate the fluency judge (`judging`) ranks against the rule reading and the fallback.
They are only candidates: each still passes `render.sound` before the judge sees it.
"""

from __future__ import annotations

import functools
import re

from diaforge.data_gen.phrasing.english import _PARTICLES, DETERMINERS, _lemmas, first_sentence, is_base_verb
from diaforge.data_gen.phrasing.grammar import changelog, tokens, word_classes
from diaforge.data_gen.phrasing.intents import _name_intent, _name_words, intent_of, strip_lead_in, sure
from diaforge.data_gen.phrasing.options import base_after_conjunction
from diaforge.data_gen.phrasing.shorthand import plain_description
from diaforge.schema import Tool
from diaforge.text import name_tokens

MAX_WORDS = 12
"""Longest reading offered: a verb phrase longer than this is no way a person names an action."""

_CLAUSE_END = re.compile(r"\s*(?:[.;:(\[]|,|\s-\s|\s–\s|\bso that\b|\bwhich\b|\bbut\b)")
_WHETHER = re.compile(r"^(?:returns|tells|says|shows|indicates|checks)\s+(whether|if)\s+", re.I)
_GIVES = re.compile(r"^(?:returns|gives|provides|yields)\s+", re.I)


def _clause(text: str) -> str:
    """The text up to its first clause break (a stop, a semicolon, a comma, a bracket, "which")."""
    m = _CLAUSE_END.search(text)
    return (text[: m.start()] if m else text).strip()


def _verb_base(word: str) -> str | None:
    """The base form of `word` read as a verb ("Lists" -> list, "List" -> list), None when it
    cannot be one (or is a participle: "Scheduled" opens a noun phrase)."""
    low = word.lower()
    verbs = _lemmas(low).get("VERB")
    if not verbs or low.endswith(("ed", "ing")):
        return None
    return verbs[0]


def readings(tool: Tool, prefixes: frozenset[str] = frozenset()) -> list[str]:
    """Verb phrases a description's first clause can be read as, beside the rule parse's: the
    opening word as a verb ("Reports scrapped quantity ..." -> "report scrapped quantity on a
    production order"), "whether" after a verb of saying as "check whether" ("Returns whether a
    unit is vacant" -> "check whether a unit is vacant"), a verb of giving as "get" ("Returns the
    current gas price" -> "get the current gas price"). Where the name alone speaks, its other
    reading: `schedule_inspection` is "schedule an inspection" as well as "inspect a schedule".
    Each is at most `MAX_WORDS` words, in the description's words; none when the description is
    empty."""
    ws = _name_words(tool, prefixes)
    intent = intent_of(tool, prefixes)
    if intent.source == "name" and is_base_verb(ws[0]):
        other = _name_intent(ws, verb_first=True)
        named = [other.phrase] if sure(other) and other.phrase != intent.phrase else []
        return named + [r for r in _description_readings(tool) if r not in named]
    return _description_readings(tool)


def _description_readings(tool: Tool) -> list[str]:
    sentence = strip_lead_in(first_sentence(plain_description(tool.description or "")).strip())
    clause = _clause(sentence)
    words = clause.split()
    if len(words) < 2:
        return []
    out: list[str] = []
    m = _WHETHER.match(clause)
    if m:
        out.append(f"check {m.group(1).lower()} {clause[m.end() :]}")
    elif _GIVES.match(clause):
        out.append(f"get {_GIVES.sub('', clause, count=1)}")
    base = _verb_base(words[0])
    second = words[1].strip(",.;:").lower()
    classes = word_classes(second)
    bare_singular = (
        "NOUN" in classes
        and classes <= {"NOUN", "VERB"}
        and not second.endswith("s")
        and not words[1].isupper()
    )  # "close PR w/o merging": an acronym is a name, the verb reading stands
    first = words[0].lower()
    # A base form that is also a noun is read as a verb only where the tool's name opens with it
    # ("browse_attractions"), never "help articles most viewed ..." for
    # get_knowledge_base_top_articles; and never before a bare singular noun ("credit limit").
    named = first in name_tokens(tool)[:2]
    # ... unless an adjective follows it, which no noun takes after it ("Clear old or read notifications")
    adjective_next = "ADJ" in classes and not bare_singular
    verb_reading = base is not None and (
        base != first or named or "NOUN" not in word_classes(first) or adjective_next
    )
    if verb_reading and not m and not (bare_singular and base == first):
        out.append(" ".join([base, *words[1:]]))
    if _noun_compound(words):  # "Damage report for goods ...": the noun reading, looked up
        out.append(f"look up the {words[0].lower()} {' '.join(words[1:])}")
        out.append(f"look up the {words[0].lower()} {words[1]}")  # the compound alone
    # each also without a second thing joined by "and" ("... whether a unit is vacant | and the first date")
    out += [r.split(" and ")[0] for r in out if " and " in r and len(r.split(" and ")[0].split()) > 2]
    out = [" ".join(base_after_conjunction(r.split())) for r in out]  # "... and stop billing"
    return [r for r in dict.fromkeys(out) if len(r.split()) <= MAX_WORDS]


def unsure(tool: Tool, prefixes: frozenset[str] = frozenset()) -> bool:
    """`_unsure`, cached by the tool's name and description (the agents ask it every turn)."""
    return _unsure_cached(tool.name, tool.description or "", prefixes)


@functools.lru_cache(maxsize=65536)
def _unsure_cached(name: str, description: str, prefixes: frozenset[str]) -> bool:
    return _unsure(Tool(name=name, description=description), prefixes)


def _unsure(tool: Tool, prefixes: frozenset[str] = frozenset()) -> bool:
    """Whether the parse of a tool's description may have read it wrong, so that its renderings
    go to the fluency judge: a noun-phrase reading ("look up the ...") of a description whose
    first word can be a verb ("List", "Reports", "Backup", "Browse"), an opening of saying or
    giving ("Returns whether ...", "Returns the ..."), or a phrase read from the tool's name.
    Where none holds, the rule rendering stands unjudged: a language model on a CPU costs about a
    fifth of a second a sentence."""
    sentence = strip_lead_in(first_sentence(plain_description(tool.description or "")).strip())
    words = sentence.split()
    intent = intent_of(tool, prefixes)
    if not words or intent.source == "name":
        return True
    if _WHETHER.match(sentence) or _GIVES.match(sentence):
        return True
    if _noun_compound(words) and not intent.phrase.startswith("look up "):
        return True  # "Damage report for ...", "Pick list for ...": read as "damage report"
    return intent.phrase.startswith("look up ") and "VERB" in word_classes(words[0].strip(",.;:"))


def _noun_compound(words: list[str]) -> bool:
    """Whether a description opens with a word that is a verb and a noun followed by a noun, no
    determiner between ("Damage report", "Pick list", "Reorder threshold"): a noun compound as
    often as an order. Not in a changelog line, where the order is sure ("close PR without
    merging", "tag release from commit": `grammar.changelog`)."""
    if len(words) < 2 or words[1].lower() in DETERMINERS or changelog(tokens(" ".join(words))):
        return False
    first, second = (w.strip(",.;:").lower() for w in words[:2])
    base = _verb_base(first)
    return (
        base == first  # a base form: "Starts onboarding" is a verb in the third person
        and {"VERB", "NOUN"} <= word_classes(first)
        and "NOUN" in word_classes(second)
        and second not in DETERMINERS
        and second not in _PARTICLES  # "Give back the balance": a verb and its particle
    )


__all__ = ["MAX_WORDS", "readings", "unsure"]
