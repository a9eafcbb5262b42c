"""Where a phrase may end: never on a word that wants what a cut took from it.

`ends_cleanly` is the test every renderer's cut passes ("a phrase cannot stop on a determiner, a
preposition, a verb's helper or a participle that wants its object"); `stranded_preposition` tells
the preposition that closes a relative clause without "that" ("the card it was taken from"), which
ends a phrase well, from one that lost its object.
"""

from __future__ import annotations

from collections.abc import Sequence

from diaforge.data_gen.phrasing.english import DETERMINERS, is_base_verb
from diaforge.data_gen.phrasing.grammar import (
    _ADVERB_CLAUSE_WORDS,
    CLAUSE_SUBJECTS,
    CONJUNCTIONS,
    HANGING,
    PREPOSITIONS,
    RELATIVES,
    _after_noun,
    _postpositive,
    third_person_lemma,
    word_classes,
)

# Modal verbs, and a verb's helpers: after a relative word, they show it is the clause's subject
# ("freight that must arrive").
_MODALS = frozenset({"must", "can", "could", "should", "would", "will", "shall", "may", "might"})
_HELPERS = _MODALS | {"has", "have", "had", "is", "are", "was", "were", "does", "do", "did"}
_FINDING_OUT_WORDS = "determine decide check see find ensure verify know learn assess evaluate identify"
_FINDING_OUT = frozenset(_FINDING_OUT_WORDS.split())  # they want what they find out ("to determine if")
# Words a phrase cannot stop on: "that already | exists", "the same | product type", and a verb's
# helpers without the verb ("a shipment that has already | been", "that must").
_OPEN_END_WORDS = "same given e i already still yet not no only just also his been being most least current"
_OPEN_ENDS = _MODALS | frozenset(_OPEN_END_WORDS.split())
# Participles that want what follows them ("based on", "using a", "corresponding to").
_WANTS_OBJECT_WORDS = (
    "based using including corresponding regarding concerning following containing matching according "
    "named related compared divided multiplied consisting depending located associated"
)
_WANTS_OBJECT = frozenset(_WANTS_OBJECT_WORDS.split())


_COPULA_WORDS = "is are was were be been being becomes become remains remain stays stay"
_COPULAS = frozenset(_COPULA_WORDS.split())


def ends_cleanly(words: Sequence[str]) -> bool:
    """Whether a phrase may end on its last word: not a determiner, a preposition, a conjunction,
    a word that opens an example ("such", "including"), "same", or a participle that wants an
    object ("based", "given", "using", "corresponding")."""
    if not words:
        return False
    last = words[-1].lower().strip(".,;:")
    if (
        last in _PARTICLES_AFTER_OBJECT
        and len(words) > 2
        and words[-2].lower() in _OBJECT_PRONOUNS
        and "VERB" in word_classes(words[-3])
    ):
        return True  # a particle after its verb's pronoun object: "picked it up", "hand them over"
    if last in ("another", "others") and len(words) > 1 and words[-2].lower() in PREPOSITIONS:
        return True  # a pronoun, not a determiner: "from one folio to another"
    if _wants_more(words[-2].lower() if len(words) > 2 else "", last):
        return False  # "contributed to | within", "options to include", "text into spoken | audio"
    if last in PREPOSITIONS and stranded_preposition(words):
        return True  # "the card it was taken from": the clause's head is the preposition's object
    if last in DETERMINERS | PREPOSITIONS | CONJUNCTIONS | HANGING | RELATIVES | _OPEN_ENDS:
        return False
    if len(words) > 1 and words[-2].lower() in RELATIVES and third_person_lemma(last):
        return False  # a relative clause without its object: ", that takes"
    if (
        len(words) > 2
        and words[-2].lower() == "and"
        and last.endswith(("ed", "en"))
        and word_classes(last) == {"VERB"}
    ):
        # a second predicate cut from its complement: "... on behalf of the customer and added";
        # after a participle or an adjective it is a pair ("orders cancelled and refunded")
        return bool(word_classes(words[-3].lower().strip(",;:")) & {"VERB", "ADJ"})
    if word_classes(last) == {"ADJ"}:
        if len(words) > 1 and words[-2].lower() in _COPULAS:
            return True  # a predicate adjective: "whether a unit is vacant"
        # an adjective without its noun: "a certain", "a specific"; one in -able/-ible after its
        # noun ends the phrase ("accounts payable")
        return (
            len(words) > 1 and _postpositive([*words[:-1], last], len(words) - 1) and _after_noun(words[-2])
        )
    return last not in _WANTS_OBJECT  # "based", "using", "corresponding"; "filed earlier" ends well


def _wants_more(before: str, last: str) -> bool:
    """Whether a last word wants what a cut took: a preposition's object after another preposition,
    a base verb's object after "to" (one of finding out always), a participle's noun after "into"."""
    classes = word_classes(last)
    if last in PREPOSITIONS:
        return before in PREPOSITIONS - {"up", "out", "off", "in"}
    if before == "to":
        return last in _FINDING_OUT or (classes == {"VERB"} and is_base_verb(last))
    participle = "VERB" in classes and "NOUN" not in classes and not is_base_verb(last) and last[-3:] != "ing"
    return before in ("into", "with", "in", "of", "for") and participle


def stranded_preposition(words: Sequence[str]) -> bool:
    """Whether the preposition ending `words` closes a relative clause without "that" whose subject
    is a pronoun after a noun ("the card | it was taken | from", "the berth | you paid | for"):
    the noun before the pronoun is the preposition's object, so nothing is missing."""
    low = [w.lower() for w in words]
    for j in range(max(1, len(low) - 7), len(low) - 2):
        subject = 1 if low[j] in CLAUSE_SUBJECTS or low[j] == "it" else 0
        if low[j] in RELATIVES and low[j + 1] in _HELPERS:
            continue  # "freight | that must arrive | at": the relative word is the subject itself
        if not subject and low[j] in DETERMINERS and j + 3 < len(low) and "NOUN" in word_classes(low[j + 1]):
            subject = 2  # "the station | the rider is standing | at"
        # "what the authority is asking | for" is whole; "where they can follow the status | of" is cut
        if (
            subject
            and "NOUN" in word_classes(low[j - 1])
            and low[j - 1] not in DETERMINERS | _ADVERB_CLAUSE_WORDS
            and (j < 2 or low[j - 2] != "to")  # "to track | a vulnerability identified | in": a verb's object
        ):
            nxt = low[j + subject]
            return nxt in _COPULAS or nxt in ("has", "have", "had") or "VERB" in word_classes(nxt)
    return False


# Pronouns that stand as a verb's object between the verb and its particle ("picked it up").
_OBJECT_PRONOUNS = frozenset({"it", "them", "him", "her", "me", "us", "you"})
# Particles that may end a phrase after such an object ("picked it up"), unlike "send it | to".
_PARTICLES_AFTER_OBJECT = frozenset(
    {"up", "down", "out", "off", "over", "back", "away", "in", "on", "through"}
)


__all__ = ["ends_cleanly", "stranded_preposition"]
