"""Plain English about tools, for the scripted agents and the rule validators.

A tool's *intent* is read from its description (first sentence), not from the first word of its
identifier: "Books a domestic flight for an employee through the agency" gives the verb `book`
and the object `a domestic flight`. Descriptions that open with a noun phrase ("Current exchange
rate between two currencies", "Whether a supplier is blocked") become look-ups. Only when a tool
has no usable description does the name speak, and then without its domain or numeric prefixes
(`fleet_`, `fn_1126_`). Verb lemmas come from `lemminflect`, articles from `inflect`.

On top of intents:

* `option_descriptors` says what separates a group of tools (what is left of their object phrases
  once the words they all share at the start and the end are removed), so a question can offer
  "a domestic flight, an international flight, or a multi-city itinerary" without naming a tool;
* `vague_request` is what a user says first: the gold tool's action at the level its near
  neighbours share ("book a flight"), or only the subject when nothing narrower is shared;
* `names_read_out` and `artefacts` are what the rule validator rejects: a tool identifier or its
  word-for-word humanised form in a message, and template debris ("a of", unfilled braces);
* `PHRASINGS` holds two disjoint banks of wording, `train` for training corpora and `heldout` for
  the evaluation benchmark and its user-proxy, so the benchmark does not repeat training phrasing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from data_gen.schema import Tool
from data_gen.text import (
    STOPWORDS,
    content_stems,
    line_of_business_key,
    name_tokens,
    stem,
    tool_stems,
    words,
)

# --------------------------------------------------------------------------------------------
# English helpers (lemminflect for verbs, inflect for articles and number)
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _inflect_engine():  # noqa: ANN202 - inflect.engine
    import inflect

    return inflect.engine()


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
    """`a` or `an` for a noun phrase (`an hour`, `a user`)."""
    return _inflect_engine().a(phrase).split(" ", 1)[0]


def with_article(phrase: str) -> str:
    """Prefixes `a`/`an` unless the phrase already starts with a determiner or is plural."""
    ws = phrase.split()
    if not ws:
        return phrase
    if ws[0].lower() in DETERMINERS or _is_plural(ws[-1]):
        return phrase
    return f"{article(phrase)} {phrase}"


def _is_plural(word: str) -> bool:
    w = word.lower()
    if not w.endswith("s") or w.endswith(("ss", "us", "is")):
        return False
    return bool(_inflect_engine().singular_noun(w))


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
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-/.]*[A-Za-z0-9]|[A-Za-z0-9]|[,;:()]")


def in_user_voice(text: str) -> str:
    """A phrase from a description (written to the user) as the user says it: `your` -> `my`,
    `you` -> `I`."""
    return re.sub(
        r"\b(your|yours|you|yourself)\b", lambda m: _USER_VOICE[m.group(1).lower()], text, flags=re.IGNORECASE
    )


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    m = re.search(r"(?<=[a-z0-9)])[.!?](?:\s|$)", text)
    return text[: m.start()] if m else text.rstrip(".")


def _tokens(sentence: str) -> list[str]:
    return _TOKEN.findall(sentence)


# Lead-ins that say how to use a tool before saying what it does: "Use this to cancel ...", "This
# tool cancels ...", "Allows you to cancel ...", "A function that returns ...". What follows them
# is read as the description.
_TOOL_WORDS = r"(?:tool|function|endpoint|api|operation|method|action|command|service|utility)"
_LEAD_INS = tuple(
    re.compile(rx, re.IGNORECASE)
    for rx in (
        rf"^(?:please\s+)?(?:use|call|invoke)\s+(?:this|it)(?:\s+{_TOOL_WORDS})?"
        r"(?:\s+(?:when|if)\s+(?:you|the user|a user|users)\s+(?:need|needs|want|wants|wish|wishes)\s+to"
        r"|\s+to|\s+for)\s+",
        rf"^(?:this|the)\s+{_TOOL_WORDS}(?:\s+(?:is used to|is used for|can be used to|can be used for|is for"
        r"|will|can|lets you|allows you to|enables you to|helps you to|helps you|helps to))?\s+",
        rf"^(?:an?\s+)?{_TOOL_WORDS}\s+(?:that|which|to|for|used to|used for)\s+",
        r"^(?:allows|lets|enables|helps)\s+(?:you|users|the user|a user|clients|callers)(?:\s+to)?\s+",
        r"^(?:is\s+)?(?:used|designed|intended)\s+(?:to|for)\s+",
        r"^(?:can be used to|helps to)\s+",
    )
)


def strip_lead_in(sentence: str) -> str:
    """The description's sentence without a lead-in about using the tool ("Use this to cancel an
    order" -> "cancel an order", "This tool returns ..." -> "returns ...")."""
    for _ in range(3):
        for rx in _LEAD_INS:
            m = rx.match(sentence)
            rest = sentence[m.end() :] if m else ""
            toks = _tokens(rest)
            if toks and _opens_with_verb(toks):  # "The service desk queue ..." keeps its words
                sentence = rest
                break
        else:
            return sentence
    return sentence


def _opens_with_verb(tokens: Sequence[str]) -> bool:
    nxt = tokens[1] if len(tokens) > 1 else ""
    return bool(verb_lemma(tokens[0], nxt) or is_base_verb(tokens[0]) or _gerund_base(tokens[0]))


# Verbs whose description means "give me information": a tool that "returns" a rate is one a
# person asks to *get* the rate from (unless the tool is about returning something).
_INFO_VERBS = {"return": "get"}
# Verbs that read a thing out: their object is definite ("get the shipping status").
_LOOKUP_VERB_WORDS = (
    "get fetch retrieve read show view check find look lookup query describe display list search"
)
LOOKUP_VERBS = frozenset(_LOOKUP_VERB_WORDS.split())


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


def _imperative_verb(
    tokens: Sequence[str], name_words: Sequence[str], full_name: Sequence[str] = ()
) -> str | None:
    """The base verb opening an imperative description ("Cancel an order ...", "Retrieve weather
    information ...", "List orders ..."), None when the first word opens a noun phrase instead
    ("Open incidents assigned to you", "Order details of a cart")."""
    first = tokens[0]
    w = first.lower()
    nxt = tokens[1].lower() if len(tokens) > 1 else ""
    if not nxt or not nxt[:1].isalnum():
        return None
    gerund = _gerund_base(w)
    if gerund:
        return gerund if nxt in DETERMINERS and nxt != "that" else None
    if not is_base_verb(w) or (first.isupper() and len(first) > 1):
        return None
    pos = _lemmas(w)
    if (
        nxt in ("or", "and")
        and len(tokens) > 3
        and is_base_verb(tokens[2])
        and ("NOUN" not in pos or tokens[3].lower() in DETERMINERS)
    ):
        return w  # "Add or replace the emergency contact", "Book or cancel a flight"
    if (
        nxt in _PREP_LINKS
        and len(tokens) > 2
        and ("NOUN" not in pos or w in name_words or w in full_name[:1])
        and (tokens[2].lower() in DETERMINERS or is_noun(tokens[2]))
    ):
        return w  # "Search for a book", "Interact with a language model"
    if nxt.endswith("ed") and "NOUN" not in pos and nxt not in _BOUNDARY:
        return w  # "Retrieve detailed information"
    if nxt in _BOUNDARY | {"of"} or nxt in _SUBJECTS - {"that"} or nxt.endswith("ed"):
        return None
    if (nxt in DETERMINERS and nxt != "that") or nxt in _PARTICLES:
        return w
    if "ADJ" in pos:  # "Open incidents assigned to you"
        return None
    first_word = full_name[0] if full_name else ""
    if first_word and first_word != w and is_base_verb(first_word) and "NOUN" in pos:
        return None  # get_commission_statement: "Commission statement of ...", list_x: "Work anniversaries"
    lead = name_words[0] if name_words else ""
    if any(x and (x == w or stem(x) == stem(w)) for x in (lead, first_word)):
        return w
    if "NOUN" not in pos:  # "Retrieve weather information", "Fetch news headlines"
        return w
    if lead and is_base_verb(lead):  # get_order_details: "Order details", list_x: "Leave requests"
        return None
    return w if _is_plural(nxt) and is_noun(nxt) else None


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


# --------------------------------------------------------------------------------------------
# Intents
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Intent:
    """What a tool does, as a verb and the thing it acts on.

    `verb` is a base form (`book`, `look up`), `obj` the object noun phrase (`a domestic flight`),
    `tail` the rest of the first sentence's object (`for an employee through the agency`), `head`
    the object's last noun, `source` where it was read from (`description`, `lookup`, `name`)."""

    verb: str
    obj: str
    tail: str = ""
    head: str = ""
    source: str = "description"
    nouns: tuple[str, ...] = field(default_factory=tuple)
    """Nouns of the object before the head (`training` in `a training request`)."""

    @property
    def phrase(self) -> str:
        return f"{self.verb} {self.obj}".strip()

    @property
    def full_object(self) -> str:
        return f"{self.obj} {self.tail}".strip()


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
        if low in _BOUNDARY and obj and not (coordinate and low in ("and", "or") and len(obj) < 4):
            break
        if low == "of":
            if seen_of or not obj:
                break
            seen_of = True
        elif low == "given" and obj and i + 1 < len(tokens) and tokens[i + 1].lower() in DETERMINERS:
            break  # "the area of a triangle | given its base and height"
        elif low in _CLAUSE_DETERMINERS and obj and _relative_clause_at(tokens, i):
            break  # "the orders a customer placed": a relative clause starts at its subject
        obj.append(t)
        i += 1
    tail: list[str] = []
    while i < len(tokens) and len(tail) < 20 and tokens[i] not in ",;:()":
        tail.append(tokens[i])
        i += 1
    while len(obj) > 1 and _dangling(obj[-1]):
        tail.insert(0, obj.pop())
    return obj, tail


_CLAUSE_VERB_WORDS = "has have had is are was were does did will can may must owns made"
_CLAUSE_VERBS = frozenset(_CLAUSE_VERB_WORDS.split())


def _relative_clause_at(tokens: Sequence[str], i: int) -> bool:
    """Whether the determiner at `i`, right after a noun, opens a relative clause without "that"
    (`the orders | a customer placed`, `a price increase | a supplier has announced`): a verb
    follows its noun within three words. A second object (`send a supplier | the questionnaire`)
    has none."""
    prev = tokens[i - 1].lower() if i > 0 else ""
    pos = set(_lemmas(prev))
    if "NOUN" not in pos or not pos <= {"NOUN", "VERB"}:
        return False
    for t in tokens[i + 1 : i + 4]:
        low = t.lower()
        if t in ",;:()" or low in _BOUNDARY:
            return False
        if low in _CLAUSE_VERBS or (low.endswith("ed") and "NOUN" not in _lemmas(low)):
            return True
    return False


def _dangling(word: str) -> bool:
    """A word an object phrase should not end on: a preposition, an article, a participle or an
    adverb (`assigned`, `currently`, `early`)."""
    w = word.lower()
    if w in _BOUNDARY | {"of"} | DETERMINERS:
        return True
    pos = _lemmas(w)
    return (
        (w.endswith("ed") and "NOUN" not in pos)
        or (bool(pos) and set(pos) <= {"ADV", "ADJ"})
        or w.endswith("ly")
    )


def _lower_obj(ws: Sequence[str]) -> list[str]:
    """Lower-cases ordinary words, keeps acronyms and codes (`IT`, `PO`, `W-2`)."""
    return [w if (w.isupper() and len(w) > 1) or any(c.isdigit() for c in w) else w.lower() for w in ws]


def _noun_info(obj: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    content = [w for w in obj if w.lower() not in DETERMINERS and w.lower() != "of"]
    if "of" in [w.lower() for w in obj]:
        content = [w for w in obj[: [w.lower() for w in obj].index("of")] if w.lower() not in DETERMINERS]
    if not content:
        return "", ()
    head = content[-1]
    nouns = tuple(w for w in content[:-1] if is_noun(w) and "ADJ" not in _lemmas(w) and "-" not in w)
    return head, nouns


def catalogue_prefixes(tools: Sequence[Tool], share: float = 0.2) -> frozenset[str]:
    """Name words that open many names (`fleet`, `trial`, `fn`): a domain prefix, not a verb. A word
    that is also a verb (`get`) counts only when it opens half again as many names."""
    firsts = Counter(name_tokens(t)[0] for t in tools if name_tokens(t))
    n = max(len(tools), 1)
    common = {w for w, c in firsts.items() if c > 1 and c / n >= (share * 1.5 if is_base_verb(w) else share)}
    return frozenset(common | {"fn", "api", "op", "v1", "v2"})


def _name_words(tool: Tool, prefixes: frozenset[str] = frozenset()) -> list[str]:
    ws = [w for w in name_tokens(tool) if not w.isdigit() and w not in prefixes]
    return ws or name_tokens(tool)


def intent_of(tool: Tool, prefixes: frozenset[str] = frozenset()) -> Intent:
    """The tool's intent, from its description when that reads as an action or a look-up."""
    tokens = _tokens(strip_lead_in(first_sentence(tool.description or "")))
    name_ws = _name_words(tool, prefixes)
    if tokens:
        first = tokens[0]
        low = first.lower()
        nxt = tokens[1].lower() if len(tokens) > 1 else ""
        verb = verb_lemma(first, nxt)
        imperative = (
            verb is None and (verb := _imperative_verb(tokens, name_ws, name_tokens(tool))) is not None
        )
        if verb in _INFO_VERBS and verb not in name_ws:  # "Returns the spot rate" -> get the spot rate
            verb = _INFO_VERBS[verb]
        if (
            verb and nxt == "," and "," in tokens[2:8] and "NOUN" not in _lemmas(first)
        ):  # "Approves, in one go, every ..."
            tokens = [first, *tokens[tokens.index(",", 2) + 1 :]]
            nxt = tokens[1].lower() if len(tokens) > 1 else ""
        second = None
        if len(tokens) > 2:
            second = verb_lemma(tokens[2]) or (
                tokens[2].lower() if imperative and is_base_verb(tokens[2]) else None
            )
        if verb and nxt in ("or", "and") and second:
            verb = f"{verb} {nxt} {second}"
            tokens = [first, *tokens[3:]]
            nxt = tokens[1].lower() if len(tokens) > 1 else ""
        linked = imperative and nxt in _PREP_LINKS  # "Search for a book", "Connect to a network"
        adverb = not linked and (nxt.endswith("ly") or set(_lemmas(nxt)) == {"ADV"})
        pronoun = nxt in _SUBJECTS and "NOUN" in _lemmas(first)  # "Contracts you own", not "Assigns you a"
        not_object = (
            (nxt in _BOUNDARY and not linked)
            or (nxt.endswith("ed") and not imperative)
            or pronoun
            or not nxt[:1].isalnum()
        )
        if verb and nxt and not (not_object or adverb):
            start = 1
            if nxt in _PARTICLES or linked:
                verb, start = f"{verb} {nxt}", 2
            if [w.lower() for w in tokens[start : start + 4]] == ["all", "or", "part", "of"]:
                start += 4
            obj, tail = _object_words(tokens, start)
            if obj:
                obj = _lower_obj(obj)
                head, nouns = _noun_info(obj)
                return Intent(verb, " ".join(obj), " ".join(_lower_obj(tail)), head, "description", nouns)
        else:
            verb = None
        if low in _LOOKUP_LEADS:
            rest = " ".join(_lower_obj(tokens[1:14]))
            rest = re.sub(r"\s+([,;:])", r"\1", rest).split(";")[0].rstrip(",:")
            head, nouns = _noun_info(rest.split())
            return Intent(_LOOKUP_LEADS[low], rest, "", head, "lookup", nouns)
        if not verb:
            if len(tokens) > 1 and tokens[1] == "," and "of" in [t.lower() for t in tokens[:14]]:
                upto = [t.lower() for t in tokens].index("of")  # "Parties, term and owner of a contract"
                listed, rest = tokens[:upto], tokens[upto:]
                more, tail = _object_words(rest, 0, coordinate=True)
                obj = [*listed, *more]
            else:
                obj, tail = _object_words(tokens, 0, coordinate=True)
            if obj:
                obj = _lower_obj(obj)
                action = _nominal_action(obj, tail, name_ws)
                if action is not None:
                    return action
                if obj[0].lower() not in DETERMINERS:
                    obj = ["the", *obj]
                head, nouns = _noun_info(obj)
                text = " ".join(obj).replace(" ,", ",")
                return Intent("look up", text, " ".join(_lower_obj(tail)), head, "lookup", nouns)
    ws = name_ws
    if (
        len(ws) > 1
        and is_base_verb(ws[0])
        and "NOUN" not in _lemmas(ws[0])
        and ws[1] not in _BOUNDARY | {"of"}
    ):
        rest = " ".join(ws[1:])
        verb = _INFO_VERBS.get(ws[0], ws[0])
        obj = f"the {rest}" if verb in LOOKUP_VERBS and not _is_plural(ws[-1]) else with_article(rest)
        head, nouns = _noun_info(obj.split())
        return Intent(verb, obj, "", head, "name", nouns)
    if len(ws) > 1 and (verb := deverbal(ws[-1])) and ws[0] not in _BOUNDARY | {"of"}:
        obj = with_article(" ".join(ws[:-1]))  # order_cancellation -> cancel an order
        head, nouns = _noun_info(obj.split())
        return Intent(verb, obj, "", head, "name", nouns)
    obj = "the " + " ".join(ws)
    head, nouns = _noun_info(obj.split())
    return Intent("deal with", obj, "", head, "name", nouns)


def _nominal_action(obj: Sequence[str], tail: Sequence[str], name_ws: Sequence[str]) -> Intent | None:
    """A noun-phrase description whose head is a noun of action the tool's name also says ("Order
    cancellation for unshipped orders" of `cancel_order`, "Creation of a user account" of
    `create_user`) as that action: `cancel an order`, `create a user account`. None otherwise."""
    low = [w.lower() for w in obj]
    cut = low.index("of") if "of" in low else len(low)
    before = [w for w in obj[:cut] if w.lower() not in DETERMINERS]
    if not before:
        return None
    verb = deverbal(before[-1])
    name_stems = {stem(w) for w in name_ws}
    if not verb or stem(verb) not in name_stems or before[-1].lower() in name_ws:
        return None
    rest = list(obj[cut + 1 :]) if cut < len(obj) else before[:-1]
    if not rest:
        return None
    text = " ".join(rest)
    if rest[0].lower() not in DETERMINERS:
        text = with_article(text)
    head, nouns = _noun_info(text.split())
    return Intent(verb, text, " ".join(_lower_obj(tail)), head, "description", nouns)


# --------------------------------------------------------------------------------------------
# What separates a group of tools; what a vague first request sounds like
# --------------------------------------------------------------------------------------------


def _common_prefix(seqs: Sequence[Sequence[str]]) -> int:
    n = 0
    while all(len(s) > n for s in seqs) and len({s[n].lower() for s in seqs}) == 1:
        n += 1
    return n


def distinguishing_clause(tool: Tool, others: Sequence[Tool]) -> str:
    """The stretch of `tool`'s description around the first word none of `others` uses (name or
    description): from the preposition or relative word before it to the next comma, at most a
    dozen words, with a leading third-person verb put in its base form. The fact a person would
    mention to tell the tool apart; empty when there is none."""
    other: set[str] = set()
    for o in others:
        if o.name != tool.name:
            other |= content_stems(o.description) | {stem(w) for w in name_tokens(o)}
    text = " ".join((tool.description or "").split())
    for sentence in re.split(r"(?<=[a-z0-9)])[.;!?](?:\s|$)", text):
        toks = _tokens(sentence)
        for k, t in enumerate(toks):
            if t in ",;:()" or stopword(t) or stem(t) in other or not content_stems(t):
                continue
            start = k
            while start > 0 and k - start < 4 and toks[start - 1] not in ",;:()":
                start -= 1
                if toks[start].lower() in _BOUNDARY | {"of"}:
                    break
            end = k + 1
            while end < len(toks) and end - start < 12 and toks[end] not in ",;:()":
                end += 1
            piece = toks[start:end]
            while len(piece) > 1 and piece[0].lower() in ("or", "and", "but", "so"):
                piece = piece[1:]
            if piece and start == 0:
                lemma = verb_lemma(piece[0], piece[1] if len(piece) > 1 else "")
                piece = [lemma, *piece[1:]] if lemma else piece
            while len(piece) > 1 and piece[-1].lower() in _BOUNDARY | {"of"} | DETERMINERS:
                piece.pop()
            return " ".join(_lower_obj(piece))
    return ""


def _starts_clause(word: str) -> bool:
    """Whether a diff starting with `word` needs the shared words before it to make sense
    (`you did not make`, `that was charged wrongly`, `received in the register`)."""
    w = word.lower()
    pos = set(_lemmas(w))
    return (
        w in _BOUNDARY | {"of", "you", "i", "we", "they", "it", "even", "although", "though", "unless"}
        or w.endswith("ed")
        or (bool(pos) and pos <= {"VERB"})
    )


def option_descriptors(options: Sequence[Tool], prefixes: frozenset[str] = frozenset()) -> dict[str, str]:
    """For each option, the words of its object phrase that set it apart from the others: the
    full objects with the words all options share at their start and end removed (the shared
    start is kept when the rest would not stand alone). When that leaves two options alike (or
    one empty), the option's distinguishing clause is used instead. Written to the user."""
    intents = {o.name: intent_of(o, prefixes) for o in options}
    seqs = {n: i.full_object.split(",")[0].split() for n, i in intents.items()}
    verbs = {i.verb for i in intents.values()}
    lists = list(seqs.values())
    pre = _common_prefix(lists)
    suf = _common_prefix([list(reversed(s)) for s in lists])
    out: dict[str, str] = {}
    for o in options:
        s = seqs[o.name]
        core = s[pre : len(s) - suf] if len(s) - suf > pre else []
        head = intents[o.name].head
        cut = len(s) - suf
        if head and head in s[cut:] and core and head not in core:
            core = core + s[cut : cut + s[cut:].index(head) + 1]  # "a privacy impact assessment"
        if pre and core and _starts_clause(core[0]):
            shared = s[:pre]  # "a hotel room ... as a long stay", "a card transaction you did not make"
            if len(shared) > 6:
                shared = shared[: shared.index(head) + 1] if head in shared[:6] else shared[:3]
            core = [*shared, *core]
        elif pre and core and s[pre - 1].lower() in DETERMINERS:
            core = [s[pre - 1], *core]
        core = core[:14]
        while len(core) > 1 and core[-1].lower() in _BOUNDARY | {"of"} | DETERMINERS:
            core.pop()
        phrase = " ".join(core)
        if intents[o.name].source == "name":
            phrase = ""  # a phrase read off the identifier would read the name out
        elif len(verbs) > 1:
            phrase = f"{intents[o.name].verb} {phrase or intents[o.name].obj}"
        out[o.name] = phrase
    counts = Counter(out.values())
    for o in options:
        d = out[o.name]
        if not d or counts[d] > 1 or len(d.split()) == 1 and d.lower() in DETERMINERS | _BOUNDARY:
            clause = distinguishing_clause(o, options)
            out[o.name] = f"the one {clause}" if clause else intents[o.name].phrase
    return out


def shared_verb(options: Sequence[Tool], prefixes: frozenset[str] = frozenset()) -> str | None:
    verbs = {intent_of(o, prefixes).verb for o in options}
    return verbs.pop() if len(verbs) == 1 else None


def vague_request(gold: Tool, candidates: Sequence[Tool], prefixes: frozenset[str] = frozenset()) -> str:
    """What the user asks for first: a verb phrase that fits the gold tool and at least one other
    candidate, as specific as that allows (`book a flight`, `book something`, `get help with
    travel bookings`)."""
    g = intent_of(gold, prefixes)
    others = [c for c in candidates if c.name != gold.name]
    oi = [intent_of(c, prefixes) for c in others]
    head = g.head.lower()
    verb_s = g.verb.split()[0]

    def covers(words_: Sequence[str]) -> int:
        stems = {stem(w) for w in words_ if w}
        n = 0
        for c, i in zip(others, oi, strict=True):
            pool = content_stems(c.description) | {stem(w) for w in name_tokens(c)} | content_stems(i.phrase)
            pool |= {stem(i.verb.split()[0])}
            n += stems <= pool
        return n

    if head and verb_s and g.source != "name":
        compound = [n.lower() for n in g.nouns[-1:]]
        for ws in ([*compound, head], [head]):
            if covers([verb_s, *ws]):
                obj = " ".join(ws)
                if g.source == "lookup":
                    return f"look up {'the ' + obj}"
                return f"{g.verb} {with_article(obj) if not _is_plural(head) else obj}"
    if verb_s and covers([verb_s]) and g.source != "lookup":
        return f"{g.verb} something"
    topic = subject_of(gold, candidates, prefixes)
    return f"sort out something {topic}"


def subject_of(gold: Tool, candidates: Sequence[Tool], prefixes: frozenset[str] = frozenset()) -> str:
    """A subject the gold tool shares with other candidates (`travel bookings`), else its line of
    business, else its head noun in the plural."""
    heads = Counter()
    for c in candidates:
        h = intent_of(c, prefixes).head.lower()
        if h and h.isalpha():
            heads[stem(h)] += 1
    g = intent_of(gold, prefixes).head.lower()
    shared = [h for h, n in heads.most_common() if n > 1]
    if g and stem(g) in shared:
        return f"about {_plural(g)}"
    lob = str(gold.metadata.get("line_of_business") or "").strip()
    if lob:
        return f"in {lob}"
    if shared:
        return f"about {_plural(shared[0])}"
    return f"about {_plural(g)}" if g else "at work"


def _plural(noun: str) -> str:
    if _is_plural(noun):
        return noun
    return _inflect_engine().plural_noun(noun) or noun


# --------------------------------------------------------------------------------------------
# What the rule validator rejects
# --------------------------------------------------------------------------------------------


def _name_forms(tool: Tool) -> list[str]:
    toks = name_tokens(tool)
    forms = [tool.name.lower()]
    if len(toks) > 1:
        forms.append(" ".join(toks))
    return forms


def names_read_out(text: str, tools: Sequence[Tool]) -> list[str]:
    """The tools whose identifier, or whose name read word for word (`approve internal training
    request`), appears in `text`."""
    low = " ".join(words(text)) if text else ""
    raw = text.lower()
    out = []
    for t in tools:
        forms = _name_forms(t)
        as_identifier = forms[0] in raw and (
            len(name_tokens(t)) > 1 or re.search(rf"\b{re.escape(forms[0])}\b", raw) is not None
        )
        as_words = len(forms) > 1 and re.search(rf"\b{re.escape(forms[1])}\b", low) is not None
        if as_identifier or as_words:
            out.append(t.name)
    return out


_ARTEFACTS = [
    (re.compile(r"\{[A-Za-z_]*\}"), "unfilled template slot"),
    (
        re.compile(r"\b(a|an|the)\s+(a|an|the|of|to|for|with|and|or|in|on|by)\b(?![\w-])", re.I),
        "article before '{2}'",
    ),
    (re.compile(r"\b(to|of|for|with)\s+(to|of|for)\b", re.I), "'{1} {2}'"),
    (re.compile(r"\b(the)\s+(today|tomorrow|yesterday)\b(?!['’]s)", re.I), "'the {2}'"),
    (re.compile(r"\b(\w+)\s+\1\b", re.I), "repeated word '{1}'"),
    (re.compile(r"\b(None|null|undefined|NaN)\b(?! of)"), "placeholder value '{1}'"),
    (re.compile(r"\s[,.;:?!]|[,;:]{2,}|(?<!\.)\.\.(?!\.)"), "stray punctuation"),
]
_ALLOWED_REPEATS = frozenset({"that", "had", "very", "bye", "ha", "no"})


def artefacts(text: str) -> list[str]:
    """Template debris in a message (broken article use, unfilled slots, doubled words, ...)."""
    found = []
    for rx, label in _ARTEFACTS:
        for m in rx.finditer(text):
            if label.startswith("repeated") and (
                m.group(1).lower() in _ALLOWED_REPEATS or m.group(1).isdigit()
            ):
                continue
            groups = [m.group(0), *m.groups()]
            found.append(label.format(*groups))
            break
    return found


def stopword(w: str) -> bool:
    return w.lower() in STOPWORDS


# --------------------------------------------------------------------------------------------
# Phrases a description style leaves behind, and words from another trade
# --------------------------------------------------------------------------------------------

_ARTICLE_WORDS = "a an the my your our their its"
_DET_WORD = re.compile(rf"\b({'|'.join(_ARTICLE_WORDS.split())})\s+([A-Za-z]+)(?:\s+([A-Za-z]+))?", re.I)


def verb_only(word: str) -> bool:
    """A verb in its base form that cannot be a noun or an adjective (`cancel`, `get`, `retrieve`)."""
    pos = _lemmas(word)
    return is_base_verb(word) and set(pos) == {"VERB"} and not word.lower().endswith(("ing", "ed"))


def _verb_phrases(tools: Sequence[Tool]) -> set[str]:
    """The two or three words that open each tool's action (`list the orders`, `change the
    delivery`, `start a return`): a determiner before them marks a verb phrase used as a noun."""
    out: set[str] = set()
    for t in tools:
        i = intent_of(t)
        if i.source == "lookup" or i.verb == "deal with":
            continue
        obj = i.obj.split()
        words_ = [*i.verb.split()[:1], *obj[: 2 if obj and obj[0].lower() in DETERMINERS else 1]]
        if len(words_) >= 2:
            out.add(" ".join(words_).lower())
    return out


def determiner_before_verb(text: str, tools: Sequence[Tool] = ()) -> list[str]:
    """Spans where a determiner stands before a verb phrase ("the cancel an order", "look up the
    get the ...", "the list the orders"): a description written as an order, pasted where a noun
    belongs. A word that is only a verb always counts; one that is also a noun (`list`, `change`)
    counts when the words after it open one of `tools`' actions."""
    phrases = _verb_phrases(tools)
    found: list[str] = []
    for m in _DET_WORD.finditer(text):
        det, word, after = m.group(1), m.group(2), m.group(3) or ""
        if text[m.end(2) : m.end(2) + 1] in "-'’" and m.end(2) < len(text):
            continue  # "a dine-in order", "the play's"
        low = word.lower()
        rest = text[m.end(2) :].lower().split()
        following = " ".join([low, *rest[:2]]).strip(" ,.;:?!")
        nxt = after.lower()
        opens = not after or nxt in DETERMINERS | _PARTICLES | _PREP_LINKS or text[m.end(2) :][:1] in ",.;:?!"
        hit = verb_only(low) and opens
        hit = hit or any(following.startswith(p) for p in phrases if p.split()[0] == low)
        if hit:
            found.append(f"{det} {word} {after}".strip())
    return found


_LOOKUP_WORDS = ("look up", "check", "find", "get", "retrieve", "fetch", "see", "view", "show")
_OPENING_LEAD = r"(?:^|\bto|\bme|\bwe|\bmust|\bgotta|\bplease|:)\s+"


def _verb_words(intent: Intent) -> set[str]:
    v = intent.verb.lower()
    out = {w for w in v.split() if w not in ("or", "and", "up", "out", "with", "whether")}
    if intent.source == "lookup" or v.split()[0] in LOOKUP_VERBS or v == "look up":
        out |= set(_LOOKUP_WORDS)
    return out


def contradicting_verbs(opening: str, gold: Tool, candidates: Sequence[Tool]) -> list[str]:
    """Verbs the user's opening asks for that are not what the gold tool does: another
    candidate's action ("I need to cancel the order" for a re-order) or a look-up ("look up the
    order") for a tool that acts. A vague verb (`sort out`, `deal with`, `help with`) never
    contradicts."""
    prefixes = catalogue_prefixes(candidates, share=0.5)
    own = _verb_words(intent_of(gold, prefixes))
    others: set[str] = set(_LOOKUP_WORDS)
    for c in candidates:
        if c.name != gold.name:
            i = intent_of(c, prefixes)
            if i.verb not in ("deal with", "look up") and i.source != "lookup":
                others.add(i.verb.split()[0].lower())
    others = {v for v in others if v.split()[0] not in own and v not in own}
    found = []
    low = opening.lower()
    for v in sorted(others):
        rx = rf"{_OPENING_LEAD}({re.escape(v)})\s+(?:up\s+)?(?:the|a|an|my|our|some|something|this|these|those|all|every|it)\b"
        if re.search(rx, low):
            found.append(v)
    return found


def catalogue_terms(
    gold: Tool, candidates: Sequence[Tool], prefixes: frozenset[str] = frozenset()
) -> list[str]:
    """Words of the catalogue's own world to use as a user's shop talk when the persona's jargon
    belongs to another line of business: nouns of the gold tool's object that other candidates
    also speak of (`order` among order tools)."""
    g = intent_of(gold, prefixes)
    stems_of = [tool_stems(c) for c in candidates if c.name != gold.name]
    out: list[str] = []
    for w in re.findall(r"[a-z][a-z\-]+", f"{g.full_object} {' '.join(name_tokens(gold))}".lower()):
        if len(w) < 3 or w in DETERMINERS | _BOUNDARY or stopword(w) or not is_noun(w):
            continue
        single = _inflect_engine().singular_noun(w) or w
        if any(stem(single) in s for s in stems_of) and single not in out:
            out.append(single)
    return out


@lru_cache(maxsize=1)
def trade_words() -> dict[str, frozenset[str]]:
    """Shop talk by line of business, from the bundled persona bank: each jargon term and the
    lines of business whose people use it (`CAPA` -> manufacturing, `RMA` -> customer service)."""
    import json
    from importlib import resources

    lines: dict[str, set[str]] = {}
    path = resources.files("data_gen") / "assets" / "personas.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            for term in rec.get("jargon") or ():
                lines.setdefault(term, set()).add(line_of_business_key(rec.get("line_of_business")))
    return {t: frozenset(v) for t, v in lines.items()}


def _term_in(term: str, text: str) -> bool:
    flags = 0 if any(c.isupper() for c in term) else re.IGNORECASE
    return re.search(rf"(?<![\w&/-]){re.escape(term)}(?![\w&/-])", text, flags) is not None


def foreign_trade_words(
    text: str, gold: Tool, candidates: Sequence[Tool], extra: dict[str, frozenset[str]] | None = None
) -> list[str]:
    """Jargon of another line of business in `text`: a term of the persona bank (or `extra`) that
    the gold tool's line of business does not use and no candidate tool's own words contain (an
    online shop never hears about CAPA or the CMDB)."""
    own = line_of_business_key(gold.metadata.get("line_of_business"))
    catalogue = " ".join(
        f"{c.name} {c.description} {' '.join(c.properties)}".replace("_", " ") for c in candidates
    )
    found = []
    for term, lines in {**trade_words(), **(extra or {})}.items():
        if own and own in lines:
            continue
        if _term_in(term, text) and not _term_in(term, catalogue):
            found.append(term)
    return found
