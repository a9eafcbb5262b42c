"""The confidence gate of the description parse (`sure`): whether a reading of a description can be
said as it is, and the tests it is built from: a finite verb stranded in an object's tail
(`stray_verb`), a sentence that states something rather than naming a thing (`statement`), a
clause with a subject of its own after a verb (`that_clause`), a participle for a head
(`participle_head`). Each is a test of structure (word classes, the place of a word), never of the
words of one catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from diaforge.data_gen.phrasing.english import (
    _LOOKUP_LEADS,
    DETERMINERS,
    _is_plural,
    _lemmas,
    is_base_verb,
    is_noun,
    verb_lemma,
)
from diaforge.data_gen.phrasing.grammar import (
    CLAUSE_SUBJECTS,
    RELATIVES,
    TOOL_WORDS,
    only_third_person_verb,
    relative_clause_at,
)
from diaforge.data_gen.phrasing.objects import irregular_participle


class Reading(Protocol):
    """What the gate reads of a reading (`intents.Intent` is one)."""

    verb: str
    obj: str
    tail: str
    source: str


__all__ = ["participle_head", "statement", "stray_verb", "sure", "that_clause"]


def statement(sentence: str) -> bool:
    """Whether a sentence read as a noun phrase says something of it ("Participants may leave
    ...", "Each protocol allows ...", "Serious adverse events fall under ..."): it holds a copula,
    an auxiliary or a modal, a verb only in the third person, a plural noun and then a verb, or a
    third-person verb between a noun and a determiner."""
    ws = [w.lower().strip(",;:") for w in sentence.split()]
    if any(w in _FINITE or only_third_person_verb(w) for w in ws):
        return True
    for a, b, c in zip(ws, ws[1:], [*ws[2:], ""], strict=False):
        if _is_plural(a) and is_base_verb(b) and not is_noun(b):
            return True  # "participants come in"
        if a not in DETERMINERS and c in DETERMINERS and verb_lemma(b, c):
            return True  # "each vault keeps a ledger", not "the customer orders list"
    return False


# Words that make what holds them a clause, not a verb and its object: a copula, an auxiliary, a
# modal, a negation ("the requester is notified", "can be used", "a draft refund not submitted").
_FINITE_WORDS = (
    "is are was were be been being am can could may might must shall should will would do does did has "
    "have had not cannot can't won't isn't aren't doesn't don't wasn't"
)
_FINITE = frozenset(_FINITE_WORDS.split())
_WH_WORDS = frozenset({"what", "how", "which", "who", "where", "when", "why"})
# Words after which a clause may hold its own verb ("a claim | that is still a draft").
_SUBORDINATORS = (
    RELATIVES
    | {"what", "how", "why"}
    | frozenset({"because", "unless", "once", "until", "so", "as", "than", "since", "after", "before"})
)
# Pronouns that stand for a thing said before: an object they open names nothing said in its sentence.
_UNNAMED = frozenset({"its", "their", "them", "it", "his", "her", "they"})
# Words that open a clause, never a noun phrase.
_OPENERS = _SUBORDINATORS | frozenset({"if", "when", "whenever", "where", "while", "whether", "although"})
# Objects that name the tool or nothing: "use this tool", "call it".
_EMPTY_HEADS = TOOL_WORDS | frozenset({"this", "it", "that", "tool", "tools", "function", "helper", "one"})


def stray_verb(words: Sequence[str]) -> int | None:
    """The index of the first word of `words` (an object's tail) that is a finite verb of no
    clause of its own: a copula, an auxiliary, a modal, "not" or a verb only in the third person
    before any relative or subordinating word ("by its property id | includes the current
    tenancy", "a draft refund | not submitted"); None when there is none."""
    if words and words[0].lower() in DETERMINERS:
        return None  # "a price increase | a supplier has announced": a relative clause
    if words and words[0].lower() in ("they", "he", "she"):
        return 0  # "an appointment | they already have": a pronoun nothing said names
    for k, w in enumerate(words):
        low = w.lower()
        if low in _SUBORDINATORS or low in CLAUSE_SUBJECTS:
            return None  # "an appointment | they already have": a relative clause without "that"
        if (
            low == "it"
            and k
            and is_noun(words[k - 1].lower())
            and words[k + 1 : k + 2]
            and (words[k + 1].lower() in _FINITE)
        ):
            return None  # "the card | it was taken from": "it" opens the clause as its subject
        if (
            (low in _FINITE or only_third_person_verb(low))
            and k >= 3
            and words[k - 2].lower() in DETERMINERS
            and relative_clause_at(words, k - 2)
        ):
            return None  # "at the station | the rider is standing at": a clause without "that"
        if k and words[k - 1].lower() == "to":
            continue  # "a credential to be used": an infinitive
        if (low in _FINITE and (low != "not" or k == 0)) or only_third_person_verb(low):
            return k  # "not" only where it opens the tail: "incurred but not yet invoiced" stays
    return None


def participle_head(word: str) -> bool:
    w = word.lower()
    pos = _lemmas(w)
    return "NOUN" not in pos and (w.endswith("ed") and "VERB" in pos or irregular_participle(w))


def sure(intent: Reading) -> bool:
    """Whether a reading of a description can be said as it is, the confidence gate every
    description intent passes before it is used (else the next clause, else the tool's name):
    an object, a verb that is no modal or auxiliary ("can be"), no finite verb inside the object
    ("look up the requester is"), and for a noun phrase looked up, a head that is no verb form
    ("look up the syncing ledger entries") and no clause said of it ("the requester | is
    notified")."""
    obj = intent.obj.split()
    verb = intent.verb.split()[0].lower() if intent.verb else ""
    if not obj or verb in _FINITE or all(w.lower() in _EMPTY_HEADS | DETERMINERS for w in obj):
        return False  # "use this tool", "use the tool"; not "search for hacking tools"
    if intent.verb in _LOOKUP_LEADS.values() or intent.verb.endswith(" whether"):
        return True  # "check whether a unit is vacant": the clause is the object
    if any(w.lower() in _FINITE for w in obj) or obj[0].lower() in _UNNAMED:
        return False  # "extend its due date": "its" stood for a thing a cut clause named
    if not intent.tail and obj[0].lower() in _WH_WORDS and not any(verb_lemma(w) for w in obj[1:]):
        return False  # "see what your monthly bill | would be": a clause cut before its verb
    if intent.source == "lookup" and any(w in ("it", "them") for w in obj[1:]):
        return False  # "look up the book it": an order and its pronoun read as a noun phrase
    if (
        intent.source == "lookup"
        and obj[0].lower() in DETERMINERS
        and obj[1:2]
        and obj[1].lower() in _OPENERS
    ):
        return False  # "look up the if a member wants ...": a clause read as a noun phrase
    first = next((w for w in obj if w.lower() not in DETERMINERS), "")
    pos = _lemmas(first.rpartition("-")[2].lower())
    if intent.source == "name":  # "deal with the reject sample": a verb read as a noun, or not
        return intent.verb != "deal with" or "VERB" not in pos
    if intent.source != "lookup":
        return True
    if first.lower().endswith("ing") and not pos:
        return False  # an -ing word the lexicon does not know ("the syncing ledger entries"): an order
    if participle_head(obj[-1]):
        return False  # "mould used": no thing to act on
    tail = [w.lower() for w in intent.tail.split()[:2]]
    if len(obj) == 2 and verb_lemma(obj[1]) and that_clause(tail):
        return False  # "Reports that a cart was missed": a verb and its clause, not "the reports"
    return not (tail and tail[0] in _FINITE)  # "the requester | is notified"


def that_clause(words: Sequence[str]) -> bool:
    """Whether `words` open a clause with a subject of its own ("that one cart was missed",
    "which competitor is in a deal", "whether ..."), not a relative clause ("that expire")."""
    if not words or words[0] not in ("that", "which", "whether", "if", "how", "when", "why", "what"):
        return False
    if words[0] not in ("that", "which"):
        return True
    nxt = words[1] if len(words) > 1 else ""
    return bool(nxt) and not (nxt in _FINITE or verb_lemma(nxt) or is_base_verb(nxt) or nxt.endswith("ly"))
