"""English word helpers for reading tool descriptions: verb lemmas (`lemminflect`), articles and
number (`inflect`), the closed word classes the readers stop on, and a first sentence in tokens."""

from __future__ import annotations

import re
from functools import lru_cache

from diaforge.saying import inflect_engine
from diaforge.text import STOPWORDS


@lru_cache(maxsize=4096)
def _lemmas(word: str) -> dict[str, tuple[str, ...]]:
    from lemminflect import getAllLemmas

    return dict(getAllLemmas(word.lower()))


def verb_lemma(word: str, following: str = "") -> str | None:
    """The base form of a third-person verb (`Books` -> `book`), None if `word` is not one. A word
    the lexicon does not know (`Unsubscribes`) counts as a verb when a determiner follows it."""
    w = word.lower()
    if not w.endswith("s") or len(w) < 4:
        return None
    known = _lemmas(w)
    lemmas = known.get("VERB")
    if lemmas and lemmas[0] != w:
        return lemmas[0]
    if not known and following.lower() in DETERMINERS:
        return w[:-2] if w.endswith(("ches", "shes", "sses", "xes")) else w[:-1]
    return None


def is_base_verb(word: str) -> bool:
    """Whether `word` is a verb in its base form (`book`, `approve`)."""
    lemmas = _lemmas(word).get("VERB")
    return bool(lemmas) and lemmas[0] == word.lower()


def is_noun(word: str) -> bool:
    return "NOUN" in _lemmas(word)


def article(phrase: str) -> str:
    """`a` or `an` for a noun phrase (`an hour`, `a user`, `an SKU`: an acronym by the sound of
    its first letter)."""
    first = phrase.split(" ", 1)[0]
    if 1 < len(first) <= 5 and first.isalpha() and first.isupper():
        return "an" if first[0] in "AEFHILMNORSX" else "a"
    return inflect_engine().a(phrase).split(" ", 1)[0]


def with_article(phrase: str) -> str:
    """Prefixes `a`/`an` unless the phrase already starts with a determiner or a question word
    ("why", "how"), is plural, or ends on a noun that takes no article (`data`, `information`)."""
    ws = phrase.split()
    if not ws:
        return phrase
    if ws[0].lower() in DETERMINERS or _is_plural(ws[-1]) or ws[-1].lower() in MASS_NOUNS:
        return phrase
    if ws[0].lower() in ("why", "how", "what", "when", "where", "whether"):
        return phrase  # "logs why": a clause, never "a why"
    return f"{article(phrase)} {phrase}"


# Nouns that take no `a`/`an` and no plural: "update the information", never "an information".
_MASS_NOUN_WORDS = (
    "information data advice feedback equipment software hardware furniture luggage baggage news "
    "research evidence knowledge weather traffic metadata homework money music health progress "
    "guidance assistance support storage mail clothing content presence absence compliance maintenance "
    "insurance testing onboarding availability"
)
MASS_NOUNS = frozenset(_MASS_NOUN_WORDS.split())


def _is_plural(word: str) -> bool:
    w = word.lower()
    if w in MASS_NOUNS:
        return False
    if not w.endswith("s") or w.endswith(("ss", "us", "is")):
        return False
    return bool(inflect_engine().singular_noun(w))


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


DETERMINERS = frozenset(
    [
        "a",
        "an",
        "the",
        "one",
        "each",
        "every",
        "all",
        "any",
        "some",
        "several",
        "multiple",
        "many",
        "two",
        "three",
        "four",
        "five",
        "your",
        "my",
        "our",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "another",
    ]
)
# Words after which an object phrase stops: what follows qualifies the action, it is not the thing acted on.
_BOUNDARY_WORDS = (
    "for through from to in on at with by via so when where while before after under against into "
    "within without that which who whose and or as using across between during until unless if once "
    "than because including except whether over"
)
_BOUNDARY = frozenset(_BOUNDARY_WORDS.split())
_PREP_LINKS = frozenset({"for", "with", "to", "about", "on", "into", "from"})
_CLAUSE_DETERMINERS = frozenset({"a", "an", "the", "my", "your", "our", "their", "this", "these", "those"})
_PARTICLES = frozenset({"up", "out", "off", "back", "down"})
_SUBJECTS = frozenset({"you", "i", "we", "they", "he", "she", "it", "that", "which", "whose", "who"})
_LOOKUP_LEADS = {
    "whether": "check whether",
    "who": "find out who",
    "which": "find out which",
    "where": "find out where",
    "when": "find out when",
    "how": "find out how",
    "what": "find out what",
}
_USER_VOICE = {"your": "my", "yours": "mine", "you": "I", "yourself": "myself"}
_TOKEN = re.compile(
    r"(?:[A-Z]\.){2,}(?![A-Za-z])|[A-Z]+&[A-Z]+|[A-Za-z0-9][A-Za-z0-9'’\-/.]*[A-Za-z0-9]|[A-Za-z0-9]|[,;:()]"
)


def in_user_voice(text: str) -> str:
    """A phrase from a description (written to the user) as the user says it: `your` -> `my`,
    `you` -> `I` where a verb follows ("so you get a price" -> "so I get a price"), else `me`
    ("reports directly to me", "tells me which lifts are open", "enroll me in the program")."""
    text = re.sub(r"\b(to|for|with|by|from|about|of|at|on|than)\s+you\b", r"\1 me", text, flags=re.IGNORECASE)
    for you, me in _YOU_AGREEING.items():
        text = re.sub(rf"\b{you}\b", me, text.replace("’", "'"), flags=re.IGNORECASE)
    text = re.sub(
        r"(?:\b([A-Za-z]+)\s+)?\byou\b(?=(\s+[A-Za-z]+)?)",
        lambda m: (f"{m.group(1)} " if m.group(1) else "") + _you(m.group(1), m.group(2)),
        text,
        flags=re.IGNORECASE,
    )
    return re.sub(
        r"\b(your|yours|you|yourself)\b", lambda m: _USER_VOICE[m.group(1).lower()], text, flags=re.IGNORECASE
    )


def _you(before: str | None, after: str | None) -> str:
    """ "you" in the user's mouth: "me" after a verb whose object it is ("tell you which", "lets you
    choose", "show you exactly"), else "I" ("so you get", "a price you pay", "orders you placed")."""
    prev, nxt = (before or "").lower(), (after or "").strip().lower()
    if not prev or "VERB" not in _lemmas(prev):
        return "I" if nxt else "me"
    verb_after = bool(nxt) and ("VERB" in _lemmas(nxt) or nxt.endswith("ed") or nxt in _MODAL_WORDS)
    return "I" if "NOUN" in _lemmas(prev) and verb_after else "me"


_MODAL_WORDS = frozenset(["can", "could", "will", "would", "may", "might", "must", "shall", "should"])
# "you" with the verb it agrees with, in the user's mouth.
_YOU_AGREEING = {
    "you are": "I am",
    "you were": "I was",
    "you're": "I'm",
    "you've": "I've",
    "you'll": "I'll",
    "you'd": "I'd",
}


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.search(r"(?<=[a-z0-9)])[.!?](?:\s|$)", text)
    return text[: m.start()] if m else text.rstrip(".")


def _tokens(sentence: str) -> list[str]:
    return _TOKEN.findall(sentence)


def _gerund_base(word: str) -> str | None:
    """The base verb of a gerund that cannot be a noun (`cancelling` -> `cancel`), else None."""
    w = word.lower()
    if not w.endswith("ing") or len(w) < 6:
        return None
    known = _lemmas(w)
    verbs = known.get("VERB")
    if verbs and "NOUN" not in known and "ADJ" not in known:
        return verbs[0]
    return None


_NOMINAL_SUFFIXES = (
    ("lation", ""),  # cancellation -> cancel
    ("ation", "e"),  # creation -> create
    ("ation", ""),  # confirmation -> confirm
    ("ition", "e"),  # definition -> define
    ("ion", "e"),  # deletion -> delete
    ("ion", ""),  # correction -> correct
    ("ment", ""),  # payment -> pay
    ("al", "e"),  # approval -> approve, removal -> remove
    ("al", ""),  # renewal -> renew
    ("ure", "e"),  # closure -> close
    ("y", ""),  # delivery -> deliver
)


def deverbal(noun: str) -> str | None:
    """The verb a noun of action is made from by a suffix (`cancellation` -> `cancel`, `approval`
    -> `approve`, `payment` -> `pay`), None when it is not one (`order`, `status`)."""
    w = noun.lower()
    for suffix, repl in _NOMINAL_SUFFIXES:
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            cand = w[: -len(suffix)] + repl
            if is_base_verb(cand):
                return cand
    return None


def stopword(w: str) -> bool:
    return w.lower() in STOPWORDS
