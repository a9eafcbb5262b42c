"""The object phrase of a description: the words a verb acts on, where they end, and their head.

After the verb ("Cancels | an order placed by mistake"), or at the start of a description that
opens with a noun phrase, `_object_words` takes the object and leaves the rest of the clause as
its tail. The object ends at punctuation, at a word after which what follows qualifies the action
(a preposition, "and", "or", "that", "using", ...: `english._BOUNDARY`), at a second "of", at a
relative clause without "that" ("the orders | a customer placed"), at a participle after a noun
("trace IDs | corresponding to") or at a third-person verb ("an agenda item | includes content").
A closed list ("the state, owner and due date of a claim") and two nouns that share an
"of"-phrase ("the status and details of an order") stay whole, and a compound noun is read to its
end. Words an object cannot end on (prepositions, articles, participles, adverbs) go back to the
tail. `_lower_obj` lower-cases what is not a name or a code and mends "a"/"an"; `_noun_info` gives
the head noun (the last word before any "of") and the nouns before it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diaforge.data_gen.phrasing.english import (
    _BOUNDARY,
    _CLAUSE_DETERMINERS,
    DETERMINERS,
    _is_plural,
    _lemmas,
    is_base_verb,
    is_noun,
    verb_lemma,
    with_article,
)
from diaforge.data_gen.phrasing.grammar import (
    CLAUSE_SUBJECTS,
    HANGING,
    PREPOSITIONS,
    TOOL_WORDS,
    _closed_list,
    _list_end,
    bare_head,
    continues_compound,
    count_head,
    is_proper,
    nominal,
    noun_list_end,
    np_end,
    only_third_person_verb,
    relative_clause_at,
    shared_head_list_end,
    word_classes,
)
from diaforge.saying import inflect_engine


def _object_words(
    tokens: list[str], start: int, limit: int = 8, *, coordinate: bool = False
) -> tuple[list[str], list[str]]:
    """The object phrase after a verb (or, with `coordinate`, a noun phrase that may join nouns
    with and/or: `pickup and delivery punctuality`), and the rest of the clause after it."""
    obj: list[str] = []
    i = start
    seen_of = False
    while i < len(tokens) and len(obj) < limit:
        t = tokens[i]
        low = t.lower()
        if t in ",;:()":
            break
        ranged = low in ("to", "-") and obj and obj[-1].isdigit() and i + 1 < len(tokens)
        if ranged and tokens[i + 1].isdigit():
            obj.append(t)  # "a block of 5 | to | 40 rooms": a range, not a preposition
            i += 1
            continue
        if low in _BOUNDARY and obj and not (coordinate and low in ("and", "or") and len(obj) < 4):
            break
        if low == "of":
            if seen_of or not obj:
                break
            seen_of = True
        elif low == "given" and obj and i + 1 < len(tokens) and tokens[i + 1].lower() in DETERMINERS:
            break  # "the area of a triangle | given its base and height"
        elif low in _CLAUSE_DETERMINERS and obj and relative_clause_at(tokens, i):
            break  # "the orders a customer placed": a relative clause starts at its subject
        elif (
            obj
            and not (
                t[:1].isupper() and obj[-1][:1].isupper()
            )  # a name: "a Real Time | Messaging connection"
            and _participle_after(obj[-1], low, tokens[i + 1] if i + 1 < len(tokens) else "")
        ):
            break  # "local events | happening in a place", "trace IDs | corresponding to"
        elif obj and only_third_person_verb(t):
            break  # "an agenda item | includes content"
        elif obj and low in CLAUSE_SUBJECTS and "NOUN" in word_classes(obj[-1]):
            break  # "an appointment | they already have": a relative clause without "that"
        obj.append(t)
        i += 1
    end = _joined_end(tokens, start, i, limit) if obj else i
    if end > i:
        obj, i = list(tokens[start:end]), end
    while obj and i < len(tokens) and len(obj) < limit + 4 and continues_compound(obj[-1], tokens[i]):
        if obj[-1].lower() in DETERMINERS:
            break
        obj.append(tokens[i])  # never "the german bundesliga football | league"
        i += 1
    cut = next((k for k, w in enumerate(obj) if k and w.lower() in TOOL_WORDS), None)
    if cut is not None:  # "Cancel an alarm API that takes ...": the API is no part of the object
        i -= len(obj) - cut
        obj = obj[:cut]
    tail: list[str] = []
    while i < len(tokens) and len(tail) < 20:
        if tokens[i] in ",;:()":
            end = _tail_list_end(tokens, i, tail) if tokens[i] == "," and tail else None
            if end is None:
                break
            # "for one damaged | , stolen or lost cart", "by first name | , last name"
            for t in tokens[i:end]:
                if t == ",":
                    tail[-1] += (
                        ","  # kept on its word: a comma of its own ends a clause (`option_descriptors`)
                    )
                else:
                    tail.append(t)
            i = end
            continue
        tail.append(tokens[i])
        i += 1
    while len(obj) > 1 and _dangling(obj[-1]):
        tail.insert(0, obj.pop())
    return obj, tail


def _bare_adjective(word: str) -> bool:
    """An adjective or participle that no noun follows yet ("damaged", "stolen")."""
    pos = _lemmas(word.lower())
    return bool(pos) and "NOUN" not in pos and bool(set(pos) & {"ADJ", "VERB"}) and _dangling(word)


def _adjective_list_end(tokens: Sequence[str], comma: int) -> int | None:
    """Past the noun a list of adjectives leads to when the comma at `comma` continues one that
    `and`/`or` closes ("one damaged | , stolen or lost collection cart |"); None when it does not."""
    j, closed = comma, False
    while j < len(tokens) and j - comma < 10:
        low = tokens[j].lower()
        if low in ("and", "or"):
            closed = True
        elif tokens[j] != "," and not _bare_adjective(tokens[j]):
            break
        j += 1
    end = np_end(tokens, j) if closed else j
    return end if closed and end > j else None


def _tail_list_end(tokens: Sequence[str], comma: int, tail: Sequence[str]) -> int | None:
    """Past the list a tail's comma continues: adjectives before their noun ("for one damaged |
    , stolen or lost cart"), or noun phrases after the tail's preposition that `and`/`or` closes
    at the clause's end ("by first name | , last name, and zip code."); None when it continues none."""
    if _bare_adjective(tail[-1]):
        return _adjective_list_end(tokens, comma)
    at = max((k for k, w in enumerate(tail) if w.lower() in PREPOSITIONS), default=None)
    if at is None or np_end(tail, at + 1) != len(tail):
        return None
    j = comma
    while j < len(tokens) and tokens[j] == "," and j - comma < 16:
        j += 1
        closed = j < len(tokens) and tokens[j].lower() in ("and", "or")
        end = np_end(tokens, j + closed)
        if end == j + closed:
            return None
        if end < len(tokens) and tokens[end].lower() in ("and", "or"):
            closed, end = True, np_end(tokens, end + 1)  # "first name, last name and zip code"
        if closed:
            return end if end == len(tokens) or not tokens[end][:1].isalnum() else None
        j = end
    return None


def _joined_end(tokens: Sequence[str], start: int, i: int, limit: int) -> int:
    """Past what a list or `and`/`or` joins to the object `tokens[start:i]` ("the current state,
    owner and due date | of a claim", "Air | , hotel and rail spend", "the status and details |
    of an order", "a bulky-waste | or debris pickup"), `i` when nothing joins."""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
    if i < len(tokens) and tokens[i] == "," and _closed_list(tokens, i):
        end = _list_end(tokens, i)
        end = max(np_end(tokens, end + 1), end) if end < len(tokens) else end
        return end if end - start <= limit + 14 else i
    if (
        i < len(tokens)
        and tokens[i] == ","
        and sum(w.lower() not in DETERMINERS for w in tokens[start:i]) == 1
    ):
        end = shared_head_list_end(tokens, i)
        if end > i:
            return end if end - start <= limit + 6 else i
    if i < len(tokens) and tokens[i] == ",":
        end = noun_list_end(tokens, i)  # "the weight | , piece count or freight class | on a shipment"
        return end if end - start <= limit + 4 else i
    if i < len(tokens) and tokens[i].lower() in ("and", "or"):
        end = _shared_of_end(tokens, i)
        if end <= i and nxt and nxt.lower() not in DETERMINERS and not verb_lemma(nxt):
            bare = np_end(tokens, i + 1)  # a head both share
            if bare == i + 2 and bare < len(tokens) and bare_head(tokens, bare):
                bare += 1  # "a design | or bill-of-materials change": a head known only as a verb
            end = bare if bare - (i + 1) >= 2 and bare - start <= limit + 4 else end
        return max(end, i)
    return i


def _shared_of_end(tokens: Sequence[str], conj: int) -> int:
    """Past a second noun that `and`/`or` joins to the object when an `of`-phrase closes both
    ("the status and details | of an order"); `conj` when none does."""
    j = conj + 1
    if j < len(tokens) and tokens[j].lower() in DETERMINERS:
        j += 1
    k = j
    while k < len(tokens) and k - j < 4 and nominal(tokens[k]) and tokens[k].lower() not in _BOUNDARY:
        k += 1
    if k == j or k >= len(tokens) or tokens[k].lower() != "of":
        return conj
    end = np_end(tokens, k + 1)
    return end if end > k + 1 else conj


def _participle_after(prev: str, word: str, nxt: str) -> bool:
    """Whether `word` opens a reduced relative clause after the noun `prev`: a participle after a
    noun ("trace IDs | corresponding to"), an -ing form that is also a noun only after a plural
    ("local events | happening in"; not "a flight booking by its reference")."""
    if not _participle(word, nxt) or "NOUN" not in word_classes(prev) or prev.lower() in DETERMINERS:
        return False
    if word.lower().endswith(("ing", "ed")) and "ADJ" in word_classes(prev) and _bare_noun(nxt):
        return False  # "the current | selling price", "the current | negotiated price": a modifier
    return (
        "NOUN" not in _lemmas(word)
        or _is_plural(prev)
        or (irregular_participle(word) and nxt.lower() in _BOUNDARY)
    )


def _bare_noun(word: str) -> bool:
    low = word.lower()
    return bool(low) and "NOUN" in word_classes(low) and low not in DETERMINERS | _BOUNDARY | PREPOSITIONS


def _participle(word: str, nxt: str = "") -> bool:
    """A verb form that opens a reduced relative clause after a noun (`placed`, `corresponding`,
    and `happening` when a preposition or a determiner follows it)."""
    pos = _lemmas(word)
    verbs = pos.get("VERB")
    if not verbs or verbs[0] == word or not (word.endswith(("ing", "ed")) or irregular_participle(word)):
        return False
    return "NOUN" not in pos or nxt.lower() in _BOUNDARY | DETERMINERS


def irregular_participle(word: str) -> bool:
    """A past form of a verb not made with -ed (`held`, `given`, `sent`, `paid`): the lexicon
    gives it a verb lemma other than itself, and it is no third-person form or gerund."""
    w = word.lower()
    verbs = _lemmas(w).get("VERB")
    return bool(verbs) and w not in verbs and not w.endswith(("s", "ing", "ed")) and w.isalpha()


def _dangling(word: str) -> bool:
    """A word an object phrase should not end on: a preposition, an article, a participle or an
    adverb (`assigned`, `currently`, `early`)."""
    w = word.lower()
    if w in _BOUNDARY | {"of"} | DETERMINERS | HANGING | {"still", "now", "already", "yet", "soon", "today"}:
        return True
    pos = _lemmas(w)
    return (
        ((w.endswith("ed") or irregular_participle(w)) and "NOUN" not in pos)
        or (bool(pos) and set(pos) <= {"ADV", "ADJ"})
        or w.endswith("ly")
    )


def _named_after_preposition(ws: Sequence[str]) -> set[int]:
    """The places of words in a run of two or more capitalised words that follows a preposition
    with no determiner between (`of United States`, `in Active Directory`): a name, as nothing
    else is written that way mid-sentence; after an article the run may be a term written in
    capitals (`a Payroll Calendar`), so it is not kept."""
    kept: set[int] = set()
    k = 1
    while k < len(ws):
        end = k
        while end < len(ws) and ws[end][:1].isupper() and ws[end][1:].islower() and ws[end].isalpha():
            end += 1
        if end - k >= 2 and ws[k - 1].lower() in PREPOSITIONS:
            kept.update(range(k, end))
        k = max(end, k + 1)
    return kept


def _pointing(ws: Sequence[str], k: int) -> bool:
    """Whether "that"/"this" at `k` points at a thing ("of that word"): a singular noun that
    needs a determiner follows it and ends the phrase, so it opens no relative clause."""
    nxt = ws[k + 1] if k + 1 < len(ws) else ""
    after = ws[k + 2].lower() if k + 2 < len(ws) else ""
    return count_head(nxt) and (not after or after in PREPOSITIONS or not after[:1].isalnum())


def _lower_obj(ws: Sequence[str]) -> list[str]:
    """Lower-cases ordinary words, keeps acronyms, codes and names (`IT`, `PO`, `W-2`, `YouTube`,
    `Bundesliga`, `United States` after a preposition), and mends `a`/`an` before the next word
    (`a agenda` -> `an agenda`)."""
    named = _named_after_preposition(ws)
    out = [
        w
        if (w.isupper() and len(w) > 1) or any(c.isdigit() for c in w) or is_proper(w) or k in named
        else w.lower()
        for k, w in enumerate(ws)
    ]
    for k, w in enumerate(out[:-1]):
        if w in ("that", "this") and k and out[k - 1] in PREPOSITIONS and _pointing(out, k):
            w = out[k] = "a"  # "the definition of that word": the word it pointed at is not said
        if w in ("a", "an"):
            out[k] = inflect_engine().a(out[k + 1]).split(" ", 1)[0]
    return out


def _noun_info(obj: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    content = [w for w in obj if w.lower() not in DETERMINERS and w.lower() != "of"]
    if "of" in [w.lower() for w in obj]:
        content = [w for w in obj[: [w.lower() for w in obj].index("of")] if w.lower() not in DETERMINERS]
    if not content:
        return "", ()
    head = content[-1]
    nouns = tuple(w for w in content[:-1] if is_noun(w) and "ADJ" not in _lemmas(w) and "-" not in w)
    return head, nouns


# Verbs whose object comes into being: it takes "a" ("create a user", "add a reviewer"); any other
# verb acts on a thing both sides know ("close the PR", "delete the branch").
_MAKING_WORDS = "create add make generate register submit book schedule start upload post send file raise log draft issue open"
MAKING_VERBS = frozenset(_MAKING_WORDS.split())


def _verb_in_noun_slot(word: str) -> bool:
    """A base form the lexicon knows only as a verb, standing where only a noun can: after the
    opening verb or a preposition of a changelog line (`commit` in "revert commit on branch",
    "tag release from commit")."""
    return (
        word.islower() and word_classes(word) == {"VERB"} and is_base_verb(word) and not word.endswith("ed")
    )


def _bare_phrase_end(words: Sequence[str], start: int, after_to: bool = False) -> int:
    """The index past a noun phrase without a determiner that opens at `start` and needs one
    (`target branch`, `PR`, `commit`), or `start` when none does (`merging`, `branches`,
    `Salesforce`, and after "to" a word that can be a verb: "to close issue")."""
    if start >= len(words) or (after_to and "VERB" in word_classes(words[start])):
        return start
    if _verb_in_noun_slot(words[start]) and not after_to:
        nxt = words[start + 1] if start + 1 < len(words) else ""
        return start + 1 if not nxt[:1].isalnum() or nxt.lower() in PREPOSITIONS else start
    end = start
    while end < len(words) and (
        (nominal(words[end]) and not words[end].endswith("ing")) or _ing_modifier(words, end)
    ):
        end += 1
        if end < len(words) and not continues_compound(words[end - 1], words[end]):
            break
    return end if end > start and count_head(words[end - 1]) else start


def _ing_modifier(words: Sequence[str], k: int) -> bool:
    """Whether the -ing word at `k` modifies a noun after it ("billing address", "shipping
    label"), not a verb form ("without merging")."""
    nxt = words[k + 1] if k + 1 < len(words) else ""
    return words[k].endswith("ing") and not nxt.endswith("ing") and "NOUN" in word_classes(nxt)


def restore_articles(verb: str, obj: Sequence[str], tail: Sequence[str]) -> tuple[list[str], list[str]]:
    """The object and the tail of a sentence that drops its articles (`grammar.telegraphic`) with
    them put back, as a person says it: "merge PR into target branch" -> "merge the PR into the
    target branch", "add reviewer to PR" -> "add a reviewer to the PR". A plural, a mass noun, a
    name, a number or a word that is only a verb keeps its bare form."""
    out = list(obj)
    if out and out[0].lower() not in DETERMINERS and _bare_phrase_end(out, 0) == len(out):
        making = verb.split()[0] in MAKING_VERBS
        out = (with_article(" ".join(out)) if making else f"the {' '.join(out)}").split()
    rest: list[str] = []
    k = 0
    while k < len(tail):
        rest.append(tail[k])
        if tail[k].lower() in PREPOSITIONS and tail[k].lower() not in ("without", "by", "per"):
            end = _bare_phrase_end(tail, k + 1, tail[k].lower() == "to")  # not "by the author"
            if end > k + 1 and not (end < len(tail) and tail[end][:1].isdigit()):  # "to tier 2"
                rest += ["the", *tail[k + 1 : end]]
                k = end
                continue
        k += 1
    return out, rest


# Adjectives a terse sentence writes without the article a person says before them ("Create new
# PO", "Cancel whole order", "Get latest invoice"): the article each takes.
_ARTICLE_BEFORE = {
    **dict.fromkeys(("new", "existing", "single", "specific", "particular", "given"), "a"),
    **dict.fromkeys(("whole", "entire", "latest", "current", "previous", "next", "last", "same"), "the"),
}


def adjective_first_object(obj: Sequence[str]) -> list[str]:
    """An object a terse sentence opens with one of the adjectives `_ARTICLE_BEFORE` names and no
    determiner, before a singular noun that needs one, with its article: "new PO" -> "a new PO",
    "whole order" -> "the whole order". Other objects as they are (a plural, a mass noun, any other
    adjective: "preventive maintenance", "remote access")."""
    article = _ARTICLE_BEFORE.get(obj[0].lower()) if len(obj) > 1 else None
    if article is None or not count_head(obj[-1]):
        return list(obj)
    return (with_article(" ".join(obj)) if article == "a" else f"the {' '.join(obj)}").split()


# Of those, the ones a tail drops the article before ("with same clinician"); "next week" and
# "last month" are said bare.
_TAIL_ADJECTIVES = frozenset({"same", "new", "whole", "entire", "existing", "single"})


def tail_articles(tail: Sequence[str]) -> list[str]:
    """`tail` with the article a terse sentence drops after a preposition before one of the
    adjectives `_TAIL_ADJECTIVES` names ("to another slot with same clinician" -> "with the same
    clinician", "to new owner" -> "to a new owner")."""
    out: list[str] = []
    for k, word in enumerate(tail):
        nxt = tail[k + 1 : k + 3]
        out.append(word)
        if word.lower() in PREPOSITIONS and len(nxt) == 2 and nxt[0].lower() in _TAIL_ADJECTIVES:
            out += adjective_first_object(nxt)[:-2]  # the article alone; the words follow
    return out


def restore_clause_articles(words: Sequence[str]) -> list[str]:
    """`restore_articles` over a stretch of a sentence that drops its articles: the object of a
    verb it opens with ("reopen closed PR" -> "reopen the closed PR") and each noun phrase after a
    preposition ("on branch" -> "on the branch")."""
    if not words:
        return []
    first = words[0]
    if is_base_verb(first) and first.islower():
        end = _bare_phrase_end(words, 1)
        obj, tail = restore_articles(first, words[1:end], words[end:])
        return [first, *obj, *tail]
    return restore_articles("", [], words)[1]


# Verbs that put their object somewhere or in some state, and need that complement said
# (`Intent.phrase`: "set an incident | to resolved"), and the words that end the complement.
PUTTING_VERBS = frozenset({"set", "mark", "move", "switch", "turn", "put", "flag"})
COMPLEMENT_ENDS = frozenset(
    {"with", "by", "for", "and", "or", "when", "if", "so", "because", "on", "in", ","}
)
# Verbs whose object may be a clause of "whether" or "if" ("Check if a date is a holiday").
WHETHER_VERBS = frozenset({"check", "verify", "determine", "confirm", "test", "validate", "see", "find out"})
_FINITE_WORDS = frozenset(
    {"is", "are", "was", "were", "has", "have", "had", "can", "will", "does", "do", "did"}
)


def whether_object(tokens: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    """The clause after "whether" or "if" as a verb's object (`a given date is a public holiday`,
    to its first comma or semicolon), the head of its subject (`date`; "a package | meets ..."
    gives `package`) and the nouns before that head."""
    rest = " ".join(_lower_obj(tokens))
    rest = re.sub(r"\s+([,;:])", r"\1", rest).split(";")[0].split(",")[0].rstrip(",:")
    said = rest.split()
    verb_at = next(
        (k for k in range(2, len(said)) if verb_lemma(said[k]) or said[k] in _FINITE_WORDS), len(said)
    )
    head, nouns = _noun_info(said[:verb_at])
    return rest, head, nouns
