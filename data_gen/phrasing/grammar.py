"""The part of speech of a word in a description, and where a noun phrase may end.

The tagger is rule-based: a word's possible classes come from the `lemminflect` lexicon (the UPOS
classes it can take: `list` -> NOUN or VERB, `retrieves` -> VERB only, `information` -> NOUN) and
from closed classes this module lists (prepositions, conjunctions, the words that name a tool);
a word the lexicon does not know is a noun (`payslip`, `superfund`, `W-2`), or a proper noun
when a description writes it with a capital mid-sentence (`Bundesliga`, `YouTube`). Context
decides the rest: a description's first word is a verb when it can be one and what follows it
opens an object, and a noun phrase runs from its determiner over its modifiers to its head, then
over `of` and a second noun phrase, and over a list joined by commas and a final `and`/`or` when
an `of`-phrase completes the list ("the current state, owner and due date of a claim"). Two
shapes decide an opening word that can be a verb or a noun without the tool's name: a compound
with a singular head and no determiner, in a sentence that writes its articles elsewhere, is a
noun phrase ("Damage report for goods received broken": `bare_compound`); in a changelog line
(lower case, no articles: `changelog`) a bare object after it makes it a verb ("close PR without
merging").

The renderers cut descriptions only where `np_end` says a noun phrase ends (never after a
modifier whose head follows: "a unique employee | id"), and the checks (`diaforge.data_gen.phrasing.broken`)
read dialogue text with the same classes. Measured against the alternatives in the README
("Description styles"): the lexicon covers the descriptions' first words and parameter heads of
the five public catalogues the scripts measure, so no statistical tagger is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from diaforge.data_gen.phrasing.english import (
    _BOUNDARY,
    DETERMINERS,
    MASS_NOUNS,
    _is_plural,
    _lemmas,
)
from diaforge.data_gen.phrasing.shorthand import is_acronym

_PREPOSITION_WORDS = (
    "about above across after against along among around as at before behind below beneath beside "
    "between beyond by despite during except for from in inside into near of off on onto out outside "
    "over per since than through throughout till to toward towards under until unto up upon via with "
    "within without"
)
PREPOSITIONS = frozenset(_PREPOSITION_WORDS.split())
CONJUNCTIONS = frozenset({"and", "or", "but", "nor"})
PRONOUNS = frozenset({"i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them"})
RELATIVES = frozenset({"that", "which", "who", "whom", "whose", "where", "when", "while", "whether", "if"})
# Words that can open a clause as its subject, so that after a noun they start a relative clause
# without "that" ("an appointment | they already have", "letters | nobody has opened").
_CLAUSE_SUBJECT_WORDS = "i you we they he she nobody someone everyone anyone somebody everybody"
CLAUSE_SUBJECTS = frozenset(_CLAUSE_SUBJECT_WORDS.split())
# Words that name the tool itself rather than what it acts on ("Cancel an alarm API that ...").
TOOL_WORDS = frozenset({"api", "apis", "endpoint", "endpoints"})
# Words that open an example or a qualification; a phrase never ends on them ("an incident such").
_HANGING_WORDS = "such e.g e.g. i.e i.e. including namely especially particularly like etc"
HANGING = frozenset(_HANGING_WORDS.split())
# A verb and the preposition that opens its object ("Search for local events", "Subscribe to").
_VERB_LINKS = (
    "search:for look:for check:for scan:for apply:for ask:for pay:for wait:for vote:for register:for "
    "subscribe:to connect:to reply:to respond:to switch:to listen:to upgrade:to opt:in log:in sign:up "
    "search:by filter:by"
)
VERB_LINKS = frozenset(tuple(p.split(":")) for p in _VERB_LINKS.split())
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-/.]*[A-Za-z0-9]|[A-Za-z0-9]|[,;:()]")


def tokens(text: str) -> list[str]:
    """Words and the punctuation that ends a phrase (`,;:()`), in order."""
    return _TOKEN.findall(text)


@lru_cache(maxsize=16384)
def word_classes(word: str) -> frozenset[str]:
    """The classes a word can take: UPOS names from the lexicon (NOUN, VERB, ADJ, ADV, ...), DET,
    ADP (a preposition), CCONJ, PRON, or NUM; a word the lexicon does not know is a NOUN."""
    w = word.lower().strip("'’")
    if not w:
        return frozenset()
    if not w[:1].isalnum():
        return frozenset({"PUNCT"})
    if w in DETERMINERS:
        return frozenset({"DET"})
    if w in PREPOSITIONS:
        return frozenset({"ADP"})
    if w in CONJUNCTIONS:
        return frozenset({"CCONJ"})
    if w in PRONOUNS:
        return frozenset({"PRON"})
    if w.isdigit():
        return frozenset({"NUM"})
    if any(c.isdigit() for c in w) or "-" in w or "/" in w:
        return frozenset({"NOUN"})
    known = frozenset(_lemmas(w))
    return known or frozenset({"NOUN"})


def _inside_classes(word: str) -> frozenset[str]:
    """`word_classes` inside a phrase, with the nouns the lexicon lists only as verbs ("integration
    logs for a team"; a description that opens with "Logs" still orders)."""
    return word_classes(word) | ({"NOUN"} if word.lower() in ("log", "logs") else set())


def third_person_lemma(word: str) -> str | None:
    """The base form of a third-person verb (`notifies` -> `notify`, `records` -> `record`), None
    when `word` is not one."""
    w = word.lower()
    if not w.endswith("s") or len(w) < 3:
        return None
    verbs = _lemmas(w).get("VERB")
    return verbs[0] if verbs and verbs[0] != w else None


def only_third_person_verb(word: str) -> bool:
    """A third-person verb that cannot be a plural noun (`notifies`, `retrieves`, not `records`)."""
    return third_person_lemma(word) is not None and "NOUN" not in _inside_classes(word)


_CLAUSE_VERB_WORDS = "has have had is are was were does did will can may must owns made"
_CLAUSE_VERBS = frozenset(_CLAUSE_VERB_WORDS.split())


# Words that open a clause of their own, never a noun a clause could be said of.
_CLAUSE_WORDS = frozenset(
    {"whether", "if", "that", "which", "who", "whom", "what", "when", "where", "how", "why"}
)


# Of those, the ones that open a clause about a place, a time, a manner or a condition: their
# clause holds no object for a preposition at its end to have left behind.
_ADVERB_CLAUSE_WORDS = frozenset({"whether", "if", "when", "where", "how", "why"})


def relative_clause_at(tokens: Sequence[str], i: int) -> bool:
    """Whether the determiner at `i`, right after a noun, opens a relative clause without "that"
    (`the orders | a customer placed`, `a price increase | a supplier has announced`): a verb
    follows its noun within three words (`the station | the rider stands at`). A second object
    (`send a supplier | the questionnaire`) has none."""
    prev = tokens[i - 1].lower() if i > 0 else ""
    pos = set(_lemmas(prev))
    if "NOUN" not in pos or not pos <= {"NOUN", "VERB"} or prev in _CLAUSE_WORDS | _BOUNDARY:
        return False  # the lexicon files "whether" and "if" as nouns
    for t in tokens[i + 1 : i + 4]:
        low = t.lower()
        if t in ",;:()" or low in _BOUNDARY:
            return False
        if (
            low in _CLAUSE_VERBS
            or only_third_person_verb(low)
            or (low.endswith("ed") and "NOUN" not in _lemmas(low))
        ):
            return True
    return False


def third_person(verb: str) -> str:
    """`list` -> `lists`, `look up` -> `looks up`, `add or replace` -> `adds or replaces`."""
    from lemminflect import getInflection

    out = []
    for i, w in enumerate(verb.split()):
        if i == 0 or (out and out[-1] in ("or", "and")):
            forms = getInflection(w, "VBZ")
            out.append(forms[0] if forms else w + "s")
        else:
            out.append(w)
    return " ".join(out)


def is_proper(word: str, sentence_start: bool = False) -> bool:
    """A word a description writes as a name: capitalised mid-sentence and unknown to the
    lexicon (`Bundesliga`), or with a capital after its first letter (`YouTube`, `TikTok`)."""
    if not word[:1].isupper() or word.isupper() or word_classes(word) & {"DET", "ADP", "CCONJ", "PRON"}:
        return False
    if any(c.isupper() for c in word[1:]) and any(c.islower() for c in word):
        return True
    return not sentence_start and word.isalpha() and not _lemmas(word.lower())


def nominal(word: str) -> bool:
    """Whether `word` can stand in a noun phrase as a modifier or its head (a noun, an adjective,
    a number, a name)."""
    classes = word_classes(word)
    return bool(classes & {"NOUN", "ADJ", "NUM", "PROPN"}) and not classes & {"DET", "ADP", "CCONJ", "PRON"}


def continues_compound(word: str, nxt: str) -> bool:
    """Whether a noun phrase that reached `word` goes on with `nxt` (`unique employee` -> `id`,
    `to-do` -> `list`): `nxt` is a noun that is not also a verb form, a participle or an adverb
    reading after a plural head."""
    if not nxt or not nxt[:1].isalnum():
        return False
    low = nxt.lower()
    if low in RELATIVES or low in HANGING or low in TOOL_WORDS or low in _BOUNDARY or low in CLAUSE_SUBJECTS:
        return False  # "a legal hold | once a matter is opened", "letters | nobody has opened"
    classes = _inside_classes(nxt)
    if "NOUN" not in classes or classes & {"DET", "ADP", "CCONJ", "PRON"}:
        return False
    verbs = _lemmas(low).get("VERB")
    if verbs and verbs[0] != low and (not low.endswith("s") or "NOUN" not in classes):
        return False  # a participle or a verb: "trace IDs | corresponding", "an item | includes"
    # a verb after a plural head: "the orders | lists", "items | need", "users | share"
    return not (_plural_like(word) and (third_person_lemma(low) or "VERB" in classes))


def _plural_like(word: str) -> bool:
    w = word.lower()
    return w.endswith("s") and not w.endswith(("ss", "us", "is")) and "NOUN" in word_classes(w)


def np_end(toks: Sequence[str], start: int, limit: int = 16) -> int:
    """The index just past the noun phrase that opens at `start`, or `start` when none does: a
    determiner, modifiers and the head; `of` and one more noun phrase; a list "A, B and C" when
    an `of`-phrase or a shared head closes it. Never past `limit` words; a phrase the limit would
    cut before its head ends at `start` (no phrase) rather than mid-compound."""
    i = start
    n = len(toks)
    if i < n and toks[i].lower() in DETERMINERS:
        i += 1
    head = i
    while i < n and nominal(toks[i]) and toks[i].lower() not in TOOL_WORDS:
        i += 1
        if i < n and not continues_compound(toks[i - 1], toks[i]) and not _adjective_before(toks, i):
            break
    if i == head:
        return start
    if i < n and _postpositive(toks, i) and _after_noun(toks[i - 1]):
        i += 1  # "accounts payable", "the funds available."
    end = i
    if end < n and toks[end] == "," and _closed_list(toks, end):
        end = _list_end(toks, end)
    if end < n and toks[end].lower() == "of":
        sub = np_end(toks, end + 1, limit)
        if sub > end + 1:
            end = sub
    return end if end - start <= limit else start


def _postpositive(toks: Sequence[str], i: int) -> bool:
    """Whether `toks[i]`, right after a head noun, is an adjective in -able/-ible that ends its
    clause, and so belongs to the phrase ("accounts payable", "the funds available")."""
    word = toks[i].lower()
    ends = i + 1 == len(toks) or not toks[i + 1][:1].isalnum()
    return ends and word.endswith(("able", "ible")) and word_classes(word) == {"ADJ"}


def _after_noun(word: str) -> bool:
    return word.lower() not in DETERMINERS and "NOUN" in word_classes(word)


def _adjective_before(toks: Sequence[str], i: int) -> bool:
    """Whether the word before `i` is an adjective (not a noun) and `i` is nominal: "current |
    state", "new | items"."""
    prev = word_classes(toks[i - 1])
    return "ADJ" in prev and "NOUN" not in prev and nominal(toks[i])


def _closed_list(toks: Sequence[str], comma: int) -> bool:
    """Whether the comma at `comma` joins a list that `and`/`or` closes and an `of`/`for` phrase
    follows ("state, owner and due date of a claim")."""
    j = comma
    seen_conj = False
    while j < len(toks) and j - comma < 14:
        low = toks[j].lower()
        if low in CONJUNCTIONS:
            seen_conj = True
        elif low in ("of", "for") and seen_conj:
            return True
        elif toks[j] in ";:()" or (low in PREPOSITIONS and low not in ("of", "for")) or low in RELATIVES:
            return False
        j += 1
    return False


def shared_head_list_end(toks: Sequence[str], comma: int) -> int:
    """Past a list of one-word items whose last item names the head they share ("Air | , hotel
    and rail spend": spend on air, on hotels and on rail), `comma` when the comma opens no such
    list. The items after the comma are single nominal words, and the last, after `and`/`or`, is
    a bare compound of two or more."""
    j = comma
    while j < len(toks) and toks[j] == ",":
        nxt = toks[j + 1] if j + 1 < len(toks) else ""
        if not nominal(nxt) or nxt.lower() in CONJUNCTIONS:
            return comma
        j += 2
    if j >= len(toks) or toks[j].lower() not in ("and", "or"):
        return comma
    k = j + 1
    while k < len(toks) and nominal(toks[k]) and toks[k].lower() not in TOOL_WORDS:
        k += 1
    if k < len(toks) and k > j + 1 and bare_head(toks, k):
        k += 1  # "rail | spend": a head the lexicon knows only as a verb, in its base form
    return k if k - (j + 1) >= 2 else comma


def noun_list_end(toks: Sequence[str], comma: int, longest: int = 3) -> int:
    """Past a list of short noun phrases that `and`/`or` closes after the object before `comma`
    ("the weight | , piece count or freight class | on a shipment"), `comma` when the comma opens
    no such list: each item is one to `longest` nominal words, none a verb in the third person
    ("an invoice, sends it ..." is a second clause), and the list ends the clause or meets a
    preposition."""

    def item_end(j: int) -> int:
        k = j
        while k < len(toks) and k - j < longest and nominal(toks[k]) and toks[k].lower() not in CONJUNCTIONS:
            if third_person_lemma(toks[k]):
                return j  # "sends", "reports": a verb as likely as a plural noun
            k += 1
        return k

    j = comma
    while j < len(toks) and toks[j] == ",":
        end = item_end(j + 1)
        if end == j + 1:
            return comma
        j = end
    if j >= len(toks) or toks[j].lower() not in ("and", "or"):
        return comma
    end = item_end(j + 1)
    if end == j + 1 or (
        end < len(toks) and toks[end].lower() not in PREPOSITIONS and toks[end] not in ",.;:"
    ):
        return comma
    return end


def bare_head(toks: Sequence[str], k: int) -> bool:
    """Whether `toks[k]`, after a noun, is a head noun the lexicon knows only as a verb ("spend",
    "buy"): a verb's base form that ends the phrase, before a preposition, a stop or nothing."""
    verbs = _lemmas(toks[k].lower()).get("VERB", ())
    nxt = toks[k + 1].lower() if k + 1 < len(toks) else ""
    return toks[k].lower() in verbs and (not nxt or nxt in PREPOSITIONS or not nxt[:1].isalnum())


def _list_end(toks: Sequence[str], comma: int) -> int:
    j = comma
    while j < len(toks) and toks[j].lower() not in ("of", "for"):
        j += 1
    return j


# Words that open a clause of their own (never a noun phrase): a cut after one of them leaves the
# clause without its verb ("when the first | one breaks down"), so a trimmed phrase loses it whole.
CLAUSE_OPENERS = frozenset(
    {"when", "whenever", "while", "unless", "because", "although", "though", "whereas", "if", "once", "so"}
)
# Words that open either a clause or a prepositional phrase ("before a driver has ...", "before noon").
TIME_LINKS = frozenset({"before", "after", "until", "till", "since"})


# Words a tool name opens with as its verb (`list_orders`, `book_ticket`), besides words that are
# only verbs.
_NAME_VERB_WORDS = (
    "get list set search check update order book find add remove create delete make run show view "
    "return process record schedule request report track transfer move copy open close query"
)
_NAME_VERBS = frozenset(_NAME_VERB_WORDS.split())


def name_verb(word: str) -> bool:
    """Whether a tool name's word reads as its verb."""
    w = word.lower()
    return w in _NAME_VERBS or word_classes(w) == {"VERB"}


_ARTICLES = frozenset({"a", "an", "the"})


def telegraphic(toks: Sequence[str]) -> bool:
    """Whether a sentence drops its articles, as notes and changelogs do ("merge PR into target
    branch", "delete branch. protected branches refused"): two words or more, none a, an, the."""
    return len(toks) > 1 and not any(t.lower() in _ARTICLES for t in toks)


def changelog(toks: Sequence[str]) -> bool:
    """Whether a sentence is written as a changelog line: in lower case from its first letter and
    without articles ("merge PR into target branch"). Only there are the articles it drops said
    again; a capitalised sentence without one is often plain English ("Headcount by department")."""
    return telegraphic(toks) and toks[0][:1].islower()


def _bare_object(toks: Sequence[str]) -> bool:
    """Whether, in a sentence that drops its articles, the second word opens an object without
    one: an acronym ("close PR without merging"), or, in a sentence written in lower case from
    its first letter, a noun or an adjective ("reopen closed PR", "delete branch")."""
    if not telegraphic(toks) or not toks[1][:1].isalnum():
        return False
    if is_acronym(toks[1]):
        return True
    classes = word_classes(toks[1])
    return toks[0][:1].islower() and nominal(toks[1]) and not classes & {"DET", "ADP", "CCONJ", "PRON"}


def count_head(word: str) -> bool:
    """Whether a noun phrase headed by `word` needs a determiner: a singular noun that is not a
    mass noun, a name or a number (`branch`, `PR`; not `branches`, `information`, `Salesforce`)."""
    if is_acronym(word):
        return not word.endswith("s")
    if not word.isalpha() or not word.islower() or word in MASS_NOUNS or _is_plural(word):
        return False
    return "NOUN" in word_classes(word)


def bare_compound(toks: Sequence[str]) -> bool:
    """Whether a sentence opens with a noun compound whose first word can also be an order
    ("Damage report for goods received broken", "Pick list for an outbound order"): a base form
    that is a noun too and no verb a tool name opens with (`list`, `order`, `book`: `name_verb`),
    then nouns without a determiner to a singular head that needs one, then a preposition, a
    relative word or a stop, in a sentence that writes its articles elsewhere. An order there
    would have said "Pick a list"; a sentence that drops its articles says nothing
    (`telegraphic`)."""
    if len(toks) < 3 or not toks[0].isalpha():
        return False
    w = toks[0].lower()
    if not {"VERB", "NOUN"} <= word_classes(w) or name_verb(w) or (_lemmas(w).get("VERB") or ("",))[0] != w:
        return False
    end = 2
    while end < len(toks) and continues_compound(toks[end - 1], toks[end]):
        end += 1
    head, nxt = toks[end - 1], (toks[end].lower() if end < len(toks) else "")
    if not count_head(head) or is_acronym(head) or not all(nominal(t) for t in toks[1:end]):
        return False
    ends = nxt in PREPOSITIONS | RELATIVES or not nxt[:1].isalnum()
    return ends and nxt not in DETERMINERS and any(t.lower() in _ARTICLES for t in toks[end:])


def _name_verb_is(lead: Sequence[str], w: str, base: str) -> bool | None:
    """Whether a tool name's first verb is `w` (True), another verb (False), or it has none (None).
    A gerund of another verb reads as a modifier ("cooking" in `cooking_conversion.convert`)."""
    for x in lead:
        if x in (w, base) or (_lemmas(x).get("VERB") or ("",))[0] == base:
            return True
        if name_verb(x) and not x.endswith("ing"):
            return False
    return None


def _says_names_object(lead: Sequence[str], toks: Sequence[str]) -> bool:
    """Whether the description's words after its first are the tool name's words after its verb
    (`request_emergency_services`: "Contact | emergency services ..."): the first word is then
    another verb for the name's action, not a noun ("Order details" for `get_order_details` is
    not: "details" alone does not say "order details")."""
    at = next((k for k, x in enumerate(lead) if name_verb(x)), None)
    obj = list(lead[at + 1 :]) if at is not None else []
    said = [t.lower() for t in toks[1 : 1 + len(obj)]]
    return len(obj) > 0 and said == obj


def opens_with_verb(toks: Sequence[str], name_words: Sequence[str] = ()) -> bool:
    """Whether a description sentence opens with a verb. A word the lexicon knows only as a verb
    always does; one that is also a noun does when what follows opens an object (a determiner,
    an adjective, a particle: "Look up", its usual preposition: "Search for", a second verb:
    "Reserve or book"), or, as a third-person form, a noun ("Searches payroll employees"; not
    "Contracts you own", "Contracts that expire soon"). Otherwise the tool's name decides: its
    first verb is this word (`concert.book_ticket`: "Book concert tickets"), or it has none
    (`uber.ride`: "Find ride from source"); a name whose verb is another word makes the opening a
    noun phrase (`get_order_details`: "Order details of a cart"). A participle ("Estimated CO2
    emissions") or a name in title case ("Object Detection API") opens a noun phrase."""
    if len(toks) < 2:
        return False
    first, second = toks[0], toks[1]
    w, nxt = first.lower(), second.lower()
    classes = word_classes(w)
    if "VERB" not in classes or (first.isupper() and len(first) > 1):
        return False
    lead = [x.lower() for x in name_words]
    verbs = _lemmas(w).get("VERB") or (w,)
    if _name_verb_is(lead, w, verbs[0]) is False and _says_names_object(lead, toks):
        return True  # `request_emergency_services`: "Contact | emergency services about ...", another verb
    if bare_compound(toks):
        return False  # "Damage report for goods received broken"
    if first[:1].isupper() and second[:1].isupper() and not second.isupper() and nxt not in DETERMINERS:
        return False  # "Object Detection API", "Document Question Answering"
    verbs = _lemmas(w).get("VERB") or (w,)
    base = verbs[0]
    nxt_classes = word_classes(nxt)
    if (
        base != w
        and not third_person_lemma(w)
        and "NOUN" not in classes
        or w.endswith(("ed", "en"))
        and base != w
    ):
        return nxt in DETERMINERS - {"that", "this", "these", "those"} and w.endswith("ing")
    if classes == {"VERB"} or (third_person_lemma(w) and "NOUN" not in classes):
        return True  # "Retrieves ...", "Notifies ...", "Detect ..."
    opens = nxt in DETERMINERS - {"that", "this", "these", "those"} or nxt in ("up", "out", "off", "down")
    if opens or (base, nxt) in VERB_LINKS:
        return True
    if nxt in ("or", "and") and len(toks) > 2 and "VERB" in word_classes(toks[2]):
        return True  # "Reserve or book a cinema ticket"
    if nxt in PREPOSITIONS or nxt_classes & {"PRON", "CCONJ", "PUNCT"}:
        return False  # "Balance of a general ledger account", "Contracts you own"
    if third_person_lemma(w):
        return bool(nxt_classes & {"NOUN", "ADJ", "NUM"})  # "Searches payroll employees"
    if "ADJ" in nxt_classes and "NOUN" not in nxt_classes and "ADJ" not in classes:
        return True  # "List open purchase requisitions"; not "Open incidents assigned to you"
    named = _name_verb_is(lead, w, base)  # the name's first verb, or this word before any verb of it
    if named is not False and _bare_object(toks):
        return True  # "close PR without merging", "reopen closed PR"
    if "ADJ" in classes and named is not True:
        return False  # "Smart home query API", "Open incidents assigned to you"; not `recording_audio`
    return bool(lead) if named is None else named
