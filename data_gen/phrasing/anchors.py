"""The tool's name as evidence of which words of a sentence say what the tool does.

A description may say the action in other words than its opening verb: after a light verb that
only starts it ("Initiates the tender of a draft bill of lading" of `tender_shipment`: the tool
tenders), or in a means clause after a benefit ("Keep the good times rolling by moving the
check-out date of a stay" of `extend_boarding_stay`: the tool moves the date). `anchored`
rewrites such a sentence so that it opens with that action, and only where the name says so: the
words the name shares with the sentence decide, never a list of one catalogue's words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diaforge.data_gen.phrasing.english import _lemmas, deverbal
from diaforge.data_gen.phrasing.grammar import third_person
from diaforge.text import stem

# Verbs that only start, carry out or ask for an action named by the noun after them.
_LIGHT = (
    r"(?:initiates|initiate|performs|perform|starts|start|triggers|trigger|requests|request|submits|submit)"
)
_LIGHT_OPENING = re.compile(
    rf"^({_LIGHT})\s+(?:the|a|an)\s+([a-z]+)\s+of\s+(?=(?:the|a|an|one|every|each)\s)", re.I
)
_MEANS = re.compile(r"\bby\s+([a-z]+ing)\s+(?=\S)", re.I)


def _stems(words: Sequence[str]) -> list[str]:
    return [stem(w.lower().strip(",.;:()")) for w in words if len(w) > 2]


def shares_name(words: Sequence[str], name_ws: Sequence[str]) -> bool:
    """Whether `words` say a word of the tool's name (by stem, or by the same first five letters:
    "reminds" and `reminder`, "adjusts" and `adjustment`): what a tool does usually does; a
    warning or a benefit said first usually does not."""
    said, named = _stems(words), _stems(name_ws)
    return any(a == b or len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5] for a in said for b in named)


def _verb_of_noun(noun: str) -> str | None:
    """The verb a noun of action says: by its suffix (`cancellation` -> cancel) or as itself
    (`tender`, `transfer`: the noun is the verb's own form)."""
    return deverbal(noun) or (noun.lower() if "VERB" in _lemmas(noun.lower()) else None)


def anchored(sentence: str, name_ws: Sequence[str]) -> str:
    """`sentence` opening with the action the tool's name says (module docstring), else as it is:
    "Initiates the tender of a draft bill ..." -> "Tenders a draft bill ..." where the name says
    `tender` and not the light verb, before a determiner (never "Requests a power of attorney");
    "Keep the good times rolling by moving the check-out date ..." -> "Moves the
    check-out date ..." where the words before "by" share nothing with the name and the means
    clause does."""
    m = _LIGHT_OPENING.match(sentence)
    light_named = m is not None and shares_name([m.group(1)], name_ws)  # `request_power_of_attorney`
    if m and not light_named and (verb := _verb_of_noun(m.group(2))) and stem(verb) in _stems(name_ws):
        rest = sentence[m.end() :]
        return f"{third_person(verb).capitalize()} {rest}"
    m = _MEANS.search(sentence)
    if m is None:
        return sentence
    before, rest = sentence[: m.start()].split(), sentence[m.end() :]
    base = (_lemmas(m.group(1).lower()).get("VERB") or [None])[0]
    if not base or base == m.group(1).lower() or shares_name(before, name_ws):
        return sentence
    if not shares_name([base, *rest.split()], name_ws):
        return sentence
    return f"{third_person(base).capitalize()} {rest}"


__all__ = ["anchored", "shares_name"]
