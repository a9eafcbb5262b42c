"""A tool's intent, read from its description: the verb and the thing it acts on.

The first sentence is read after any lead-in about using the tool ("Use this to", "This tool",
"Allows you to"). A third-person verb ("Books a domestic flight ...") or an imperative ("Cancel an
order ...") gives an action and its object; a question word ("Whether a supplier is blocked") or a
noun phrase ("Current exchange rate between two currencies") gives a look-up, unless the noun
phrase names the action the tool's name says ("Order cancellation ..." of `cancel_order`). Only
when the description says neither does the name speak, without its domain or numeric prefixes.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from diaforge.data_gen.phrasing.anchors import anchored, shares_name
from diaforge.data_gen.phrasing.english import (
    _BOUNDARY,
    _LOOKUP_LEADS,
    _PARTICLES,
    _PREP_LINKS,
    _SUBJECTS,
    DETERMINERS,
    _gerund_base,
    _is_plural,
    _lemmas,
    _tokens,
    deverbal,
    first_sentence,
    is_base_verb,
    is_noun,
    verb_lemma,
    with_article,
)
from diaforge.data_gen.phrasing.gate import participle_head, statement, stray_verb, sure
from diaforge.data_gen.phrasing.grammar import (
    PREPOSITIONS,
    TOOL_WORDS,
    VERB_LINKS,
    bare_compound,
    changelog,
    count_head,
    np_end,
    opens_with_verb,
)
from diaforge.data_gen.phrasing.leadins import strip_lead_in
from diaforge.data_gen.phrasing.objects import (
    COMPLEMENT_ENDS,
    MAKING_VERBS,
    PUTTING_VERBS,
    WHETHER_VERBS,
    _dangling,
    _lower_obj,
    _noun_info,
    _object_words,
    adjective_first_object,
    restore_articles,
    tail_articles,
    whether_object,
)
from diaforge.data_gen.phrasing.shorthand import plain_description
from diaforge.schema import Tool
from diaforge.text import name_tokens, stem

# Verbs whose description means "give me information": a tool that "returns" a rate is one a
# person asks to *get* the rate from (unless the tool is about returning something).
_INFO_VERBS = {"return": "get"}
# Verbs whose object a description may open with a stray "for" ("Retrieves for a payslip").
_FOR_DROPPING = frozenset({"get", "retrieve", "fetch", "read", "show", "view", "display", "obtain"})
# Verbs that read a thing out: their object is definite ("get the shipping status").
_LOOKUP_VERB_WORDS = (
    "get fetch retrieve read show view check find look lookup query describe display list search"
)
LOOKUP_VERBS = frozenset(_LOOKUP_VERB_WORDS.split())
_CRUD_VERBS = frozenset({"create", "update", "delete", "cancel", "add", "remove"})


def _imperative_verb(
    tokens: Sequence[str], name_words: Sequence[str], full_name: Sequence[str] = ()
) -> str | None:
    """The base verb opening an imperative description ("Cancel an order ...", "Retrieve weather
    information ...", "List orders ..."), None when the first word opens a noun phrase instead
    ("Open incidents assigned to you", "Order details of a cart")."""
    first = tokens[0]
    w = first.lower()
    nxt = tokens[1].lower() if len(tokens) > 1 else ""
    if not nxt or not nxt[:1].isalnum() or (bare_compound(tokens) and full_name[:1] != [w]):
        return None  # "Damage report for goods ...": a noun compound, not an order (unless named so)
    gerund = _gerund_base(w)
    if not gerund and w.endswith("ing") and nxt in DETERMINERS and nxt != "that":
        gerund = (_lemmas(w).get("VERB") or (None,))[0]  # "opening a bank account" (after "API for")
    if gerund:
        return gerund if nxt in DETERMINERS and nxt != "that" else None
    if not is_base_verb(w) or (first.isupper() and len(first) > 1):
        return None
    if first[:1].isupper() and tokens[1][:1].isupper() and not tokens[1].isupper() and nxt not in DETERMINERS:
        return None  # a name in title case: "Object Detection API that detects objects"
    if opens_with_verb(tokens, full_name or name_words):
        return w
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
    lead = name_words[0] if name_words else ""
    named = {*name_words, *full_name}
    if w in LOOKUP_VERBS and LOOKUP_VERBS & named and w not in named:
        return w  # `get_rides`: "Find ride from source ...", one look-up said with another verb
    if first_word and first_word != w and is_base_verb(first_word) and "NOUN" in pos:
        return None  # get_commission_statement: "Commission statement of ...", list_x: "Work anniversaries"
    if any(x and (x == w or stem(x) == stem(w)) for x in (lead, first_word)):
        return w
    if "NOUN" not in pos:  # "Retrieve weather information", "Fetch news headlines"
        return w
    if lead and is_base_verb(lead):  # get_order_details: "Order details", list_x: "Leave requests"
        return None
    return w if _is_plural(nxt) and is_noun(nxt) else None


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
        """The verb and its object, with the complement a verb of putting needs ("set an incident
        | to resolved", "mark a ticket | as done"): without it the verb says nothing."""
        tail = self.tail.split()
        if self.verb in PUTTING_VERBS and len(tail) > 1 and tail[0] in ("to", "as", "into"):
            end = next((k for k, w in enumerate(tail[1:], 1) if w in COMPLEMENT_ENDS), len(tail))
            if end <= (6 if tail[0] == "into" else 4):  # "turn a booking | into a confirmed charter"
                return f"{self.verb} {self.obj} {' '.join(tail[:end])}".strip()
        return f"{self.verb} {self.obj}".strip()

    @property
    def full_object(self) -> str:
        return f"{self.obj} {self.tail}".strip()


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
    """The tool's intent, from its description when that reads as an action or a look-up: its
    first sentence, or the second when the first only says what parameters the tool takes
    ("An API that takes one parameter - 'video'. This API returns a description of the video").
    After a lead-in that ends with "to" ("API to search places ..."), the first word is a verb.
    A first sentence that states something (`_statement`) but reads as a look-up yields to an
    action the second opens with, unless that only reads a thing out ("Participants may leave at
    any time. Withdraws a participant": background; "Pay slips of an employee. Scores ...": not).
    Cached by the name and the description: the agents ask it many times a turn."""
    return _intent_cached(tool.name, tool.description or "", prefixes)


@functools.lru_cache(maxsize=65536)
def _intent_cached(name: str, description: str, prefixes: frozenset[str]) -> Intent:
    tool = Tool(name=name, description=description)
    name_ws = _name_words(tool, prefixes)
    background = None  # a statement read as a look-up yields to an action said after it (`intent_of`)
    deferred = None  # a first sentence that shares no word with the name: a side effect said first?
    sentences = [anchored(s, name_ws) for s in _sentences(plain_description(tool.description or ""))[:2]]
    for n, sentence in enumerate(sentences):
        for clause in _clauses(sentence) if background is None else [sentence]:
            intent = _clause_intent(clause, name_ws, tool)
            words = {w.lower() for w in intent.obj.split()} if intent is not None else set()
            if intent is None or words & _PARAMETER_WORDS or not sure(intent):
                continue
            if background is None and n == 0 and intent.verb == "look up" and statement(sentence):
                background = intent
            elif background is None or (
                intent.source != "lookup" and intent.verb.split()[0] not in LOOKUP_VERBS
            ):
                if n == 0 and len(sentences) > 1 and background is None and not _shares_name(intent, name_ws):
                    deferred = intent  # "Takes up to an hour to show. Adds one DNS record ...": the second
                    break
                looks = intent.source == "lookup" or intent.verb.split()[0] in LOOKUP_VERBS
                if deferred is not None and (looks or not _shares_name(intent, name_ws)):
                    intent = deferred  # the second must act and say the name: never "look up the ..."
                return _outranked(intent, name_ws, description)
    if deferred is not None:
        return _outranked(deferred, name_ws, description)
    return _outranked(background, name_ws, description) if background else _name_intent(name_ws)


def _shares_name(intent: Intent, name_ws: list[str]) -> bool:
    """Whether the reading says a word of the tool's name (`anchors.shares_name`)."""
    return shares_name(f"{intent.verb} {intent.obj} {intent.tail}".split(), name_ws)


def _outranked(intent: Intent, name_ws: list[str], description: str) -> Intent:
    """The name's reading (of a short name that opens with a verb that acts) instead of a reading
    that shares no word with the name ("keep your number" of `suspend_line`), or instead of a noun
    phrase looked up where the description says that verb ("A cancelled lesson ...", "Action:
    raise") or the word can only be a verb (`reschedule_lesson`): "look up" would say the opposite.
    Never where the description uses the word as a noun (`report_history`, "History of reports")."""
    first = name_ws[0] if len(name_ws) > 1 else ""
    acts = len(name_ws) < 4 and _name_opens_with_verb(name_ws) and first not in LOOKUP_VERBS | {"get"}
    if intent.source != "name" and acts and not _shares_name(intent, name_ws):
        return named if sure(named := _name_intent(name_ws)) else intent
    if intent.verb != "look up" or not is_base_verb(first) or name_ws[1] in LOOKUP_VERBS | _NAME_ORDERS:
        return intent  # `vet_find_patient`: "vet" is a prefix, "find" the verb
    if first in LOOKUP_VERBS or first in _INFO_VERBS or first in _INFO_VERBS.values():
        return intent
    raw = description.split()
    words = [w.lower().strip(",.;:()") for w in raw]
    forms = [
        k for k, w in enumerate(words) if stem(w) == stem(first) or first in (_lemmas(w).get("VERB") or ())
    ]
    # the verb said: a participle or gerund ("a cancelled lesson", "Buying of a package"), or the word
    # alone after a label ("Action: raise")
    said = [
        k
        for k in forms
        if words[k] != first and words[k].endswith(("ed", "en", "ing")) or k and raw[k - 1].endswith(":")
    ]
    if len(said) < len(forms):
        return intent  # the description says the word as a noun ("History of reports", "a warehouse")
    if not said and "NOUN" in _lemmas(first):
        return intent  # `warehouse_pick_list`: nothing says the tool warehouses anything
    named = _name_intent(name_ws, verb_first=True)
    return named if sure(named) else intent


def _clauses(sentence: str) -> list[str]:
    """The sentence, then what follows each "and" + a third-person verb in it ("API that takes
    a 'query' parameter as input | and retrieves the definition of that word")."""
    out = [sentence]
    for m in re.finditer(r"\b(?:and|then)\s+(?=([a-z]+s)\b)", sentence):
        if verb_lemma(m.group(1)):
            out.append(sentence[m.end() :])
    return out


def _clause_intent(sentence: str, name_ws: list[str], tool: Tool) -> Intent | None:
    """`_description_intent` of one clause after its lead-in; after a lead-in that ends with
    "to" or "for" ("API to search places ...", "API for searching items ...") its first word is
    read as a verb."""
    stripped = strip_lead_in(sentence)
    tokens = _tokens(stripped)
    if not tokens:
        return None
    lead = sentence[: len(sentence) - len(stripped)]
    if not (stripped != sentence and re.search(r"\b(?:to|for)\s*$", lead, re.I)):
        return _description_intent(tokens, name_ws, tool)
    first = tokens[0].lower()
    if first.endswith("ing") and (verbs := _lemmas(first).get("VERB")):
        tokens = [verbs[0], *tokens[1:]]  # "searching items" -> search items
    probe = tool.model_copy(update={"name": f"{tokens[0].lower()}_{tool.name}"})
    intent = _description_intent(tokens, name_ws, probe)
    # the verb after "to" read as a noun ("to search by address" -> "look up the search"): no reading
    return None if intent and intent.source == "lookup" and intent.head == tokens[0].lower() else intent


_INDEFINITE_WORDS = (
    "everyone everybody everything anyone anybody anything someone somebody something nobody nothing"
)
_INDEFINITES = frozenset(_INDEFINITE_WORDS.split())
_PARAMETER_WORDS = frozenset({"parameter", "parameters", "argument", "arguments", "input", "inputs"})


def _sentences(text: str) -> list[str]:
    """The sentences of a description (a full stop after a closing quote ends one too)."""
    text = " ".join(text.split())
    parts = re.split(r"(?<=[A-Za-z0-9)'’\"])(?<!\.[A-Z])[.!?](?:\s+|$)", text)  # never after "U.S"
    return [p.strip() for p in parts if p.strip()] or [first_sentence(text)]


def _description_intent(tokens: list[str], name_ws: list[str], tool: Tool) -> Intent | None:
    """What the description's first sentence says: an action and its object, a look-up led by a
    question word, or a noun phrase to look up. None when it says none of these (the name speaks)."""
    low = tokens[0].lower()
    intent, verb, tokens = _action_intent(tokens, name_ws, tool)
    if intent is not None:
        return intent
    if low in _LOOKUP_LEADS:
        rest = " ".join(_lower_obj(tokens[1:14]))
        rest = re.sub(r"\s+([,;:])", r"\1", rest).split(";")[0].split(",")[0].rstrip(",:")
        head, nouns = _noun_info(rest.split())
        return Intent(_LOOKUP_LEADS[low], rest, "", head, "lookup", nouns)
    if not verb:
        return _noun_phrase_intent(tokens, name_ws)
    return None


def _opening_verb(tokens: list[str], name_ws: list[str], tool: Tool) -> tuple[str | None, bool, list[str]]:
    """The verb opening the sentence (third person or imperative, `book or cancel` for two joined
    by or/and), whether it is an imperative, and the tokens with a parenthetical after the verb or
    the second verb of the pair removed."""
    first = tokens[0]
    nxt = tokens[1].lower() if len(tokens) > 1 else ""
    verb = verb_lemma(first, nxt)
    imperative = verb is None and (verb := _imperative_verb(tokens, name_ws, name_tokens(tool))) is not None
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
    return verb, imperative, tokens


def _action_intent(
    tokens: list[str], name_ws: list[str], tool: Tool
) -> tuple[Intent | None, str | None, list[str]]:
    """The action the sentence opens with and its object; else None. Also the verb (None when
    what follows it is no object) and the tokens as `_opening_verb` left them."""
    verb, imperative, tokens = _opening_verb(tokens, name_ws, tool)
    first = tokens[0]
    nxt = tokens[1].lower() if len(tokens) > 1 else ""
    if verb in _FOR_DROPPING and nxt == "for" and len(tokens) > 2:
        tokens = [first, *tokens[2:]]  # "Retrieves for a payslip by ..." -> retrieve a payslip
        nxt = tokens[1].lower()
    parsed = opens_with_verb(tokens, name_tokens(tool)) and nxt[:1].isalnum() and nxt not in _BOUNDARY
    linked = nxt in _PREP_LINKS and (imperative or (verb, nxt) in VERB_LINKS)  # "Search for a book"
    adverb = not linked and (nxt.endswith("ly") or set(_lemmas(nxt)) == {"ADV"})
    pronoun = nxt in _SUBJECTS and "NOUN" in _lemmas(first)  # "Contracts you own", not "Assigns you a"
    not_object = (
        (nxt in _BOUNDARY and not linked)
        or (nxt.endswith("ed") and not imperative)
        or pronoun
        or not nxt[:1].isalnum()
    )
    if parsed:
        not_object = adverb = False  # "Fetches detailed information on a case"
    checking = verb or (first.lower() if first.lower() in WHETHER_VERBS else None)
    if checking in WHETHER_VERBS and nxt in ("whether", "if") and len(tokens) > 3:
        # "Check if a given date is a public holiday": the clause is the object, as after "Whether"
        rest, head, nouns = whether_object(tokens[2:15])
        return Intent(f"{checking} whether", rest, "", head, "lookup", nouns), checking, tokens
    if not (verb and nxt and not (not_object or adverb)):
        return None, None, tokens
    start = 1
    bound = nxt == "up" and [w.lower() for w in tokens[2:3]] == ["to"]  # "Renews up to 50 domains": a bound
    if (nxt in _PARTICLES and not bound) or linked:
        verb, start = f"{verb} {nxt}", 2
    if [w.lower() for w in tokens[start : start + 4]] == ["all", "or", "part", "of"]:
        start += 4
    obj, tail = _object_words(tokens, start + 2 if bound else start)
    if bound and obj:
        obj = [*tokens[start : start + 2], *obj]  # the bound stays with its object: "up to 50 domains"
    if obj and obj[0].lower() in TOOL_WORDS:
        return None, None, tokens  # "Translate API that takes ...": the API is no object
    if obj:
        obj = _lower_obj(obj)
        if obj[0].lower() not in DETERMINERS and tail and tail[0].lower() in TOOL_WORDS:
            bare = " ".join(obj)  # "Get user token API ..." -> get the user token
            obj = (f"the {bare}" if verb.split()[0] in LOOKUP_VERBS else with_article(bare)).split()
        elif changelog(tokens):  # "merge PR into target branch" -> merge the PR into the target branch
            obj, tail = restore_articles(verb, obj, tail)
        elif obj[0].lower() not in DETERMINERS and _relative_after(tail) and count_head(obj[-1]):
            obj = ["the", *obj]  # "Reorder threshold below which ..." -> reorder the threshold below which
        else:
            obj, tail = adjective_first_object(obj), tail_articles(tail)  # "Create new PO" -> a new PO
        head, nouns = _noun_info(obj)
        text = " ".join(obj).replace(" ,", ",")
        cut = next((k for k, w in enumerate(tail) if w.lower() in TOOL_WORDS), None)
        if cut is not None:
            tail = tail[:cut]  # "... API that takes two parameters": about the tool, not what it does
            while tail and _dangling(tail[-1]):
                tail.pop()
        stray = stray_verb(tail)
        if stray == 0 and not imperative and _bare_subject(first, obj):
            return None, None, tokens  # "Cases | nobody | has picked up": a plural noun, its clause
        if stray is not None:  # "a draft refund | not submitted", "... id | includes the tenancy"
            tail = tail[:stray]
            while tail and _dangling(tail[-1]):
                tail.pop()
        intent = Intent(verb, text, " ".join(_lower_obj(tail)), head, "description", nouns)
        return intent, verb, tokens
    return None, verb, tokens


def _bare_subject(first: str, obj: Sequence[str]) -> bool:
    """Whether an opening word read as a verb is a plural noun whose clause follows without "that":
    its "object" has no determiner and a finite verb comes right after it, so it is that clause's
    subject ("Orders | customers | have placed"), not what the verb acts on ("Checks | the balance |
    is positive" keeps its verb)."""
    low = first.lower()
    return bool(obj) and obj[0].lower() not in DETERMINERS and _is_plural(low) and is_noun(low)


def _noun_phrase_intent(tokens: list[str], name_ws: list[str]) -> Intent | None:
    """A description that opens with a noun phrase: the action it names (`_nominal_action`), else
    a look-up of the phrase. None when no object phrase opens it."""
    if len(tokens) > 1 and tokens[1] == "," and "of" in [t.lower() for t in tokens[:14]]:
        upto = [t.lower() for t in tokens].index("of")  # "Parties, term and owner of a contract"
        end = np_end(tokens, 0, limit=24)
        if end > upto:
            obj, tail = list(tokens[:end]), _object_words(tokens, end)[1]
        else:
            listed, rest = tokens[:upto], tokens[upto:]
            more, tail = _object_words(rest, 0, coordinate=True)
            obj = [*listed, *more]
    else:
        obj, tail = _object_words(tokens, 0, coordinate=True)
    if not obj:
        return None
    obj = _lower_obj(obj)
    action = _nominal_action(obj, tail, name_ws)
    if action is not None:
        return action
    if obj[0] == tokens[0] and not any(c.isupper() for c in obj[0][1:]):
        obj = [obj[0].lower(), *obj[1:]]  # the description's first word: "Nonconformance reports"
    made = _made(tokens)  # "A request to move stock ..., created in draft": create a request
    if obj[0].lower() not in DETERMINERS | _INDEFINITES and obj[0][-2:] not in ("'s", "’s"):  # "Today's menu"
        obj = with_article(" ".join(obj)).split() if made else ["the", *obj]  # never "the everyone"
    head, nouns = _noun_info(obj)
    text = " ".join(obj).replace(" ,", ",")
    if made:
        return Intent(made, text, " ".join(_lower_obj(tail)), head, "description", nouns)
    if tail and tail[0].lower() in TOOL_WORDS:  # "Smart home query API that takes ..." names a tool
        text = f"{text} {tail[0] if tail[0].isupper() else tail[0].lower()}"
        return Intent("use", text, " ".join(_lower_obj(tail[1:])), head, "description", nouns)
    return Intent("look up", text, " ".join(_lower_obj(tail)), head, "lookup", nouns)


def _relative_after(tail: Sequence[str]) -> bool:
    """Whether an object's tail opens a relative clause ("| below which a suggestion is raised",
    "| that holds the total"): an object it restricts takes "the"."""
    low = [w.lower() for w in tail[:2]]
    return bool(low) and (
        low[0] in ("which", "that", "whose") or (low[0] in PREPOSITIONS and low[1:] == ["which"])
    )


def _made(tokens: Sequence[str]) -> str | None:
    """The verb of a participle of making that follows a noun phrase's first comma ("A request to
    move stock between two warehouses, created in draft" -> `create`), else None."""
    k = next((i for i, t in enumerate(tokens) if t in ",;:()"), -1)  # the first clause break only
    word = tokens[k + 1].lower() if 0 <= k < len(tokens) - 1 and tokens[k] == "," else ""
    verbs = _lemmas(word).get("VERB") if word.endswith("ed") else None
    return verbs[0] if verbs and verbs[0] in MAKING_VERBS else None


# Words a tool's name ends with that say how it acts, not on what: said after the object.
_NAME_MANNERS = {"bulk": "in bulk", "batch": "in a batch", "async": "", "v1": "", "v2": "", "v3": ""}


def _name_opens_with_verb(ws: Sequence[str]) -> bool:
    """Whether a name's first word is its verb: one only a verb (`approve_leave`), or one that can
    be a noun too before a plural or with a preposition after it (`record_vaccinations`,
    `find_patient_by_name`; not `order_history`, and not `reject_sample`, which stays unsure)."""
    if len(ws) < 2 or ws[1] in _BOUNDARY | {"of"} or not is_base_verb(ws[0]):
        return False
    if "NOUN" not in _lemmas(ws[0]):
        return True
    if len(ws) > 2 and participle_head(ws[1]):
        return True  # `report_missed_collection`: a participle before a noun is no noun compound's
    return ws[0] in _NAME_ORDERS or _is_plural(ws[1]) or any(w in PREPOSITIONS for w in ws[2:])


# Words a name opens with that are its verb though they can be nouns (never `order`, `report`).
_NAME_ORDER_WORDS = "get list set search check find update add show view run open close query"
_NAME_ORDERS = frozenset(_NAME_ORDER_WORDS.split())


def _name_intent(ws: list[str], *, verb_first: bool = False) -> Intent:
    """The intent the tool's name words say, when its description says none (or nothing the
    confidence gate, `sure`, lets through): `reject_sample` -> reject a sample,
    `find_patient_by_name` -> find the patient (by name), `record_vaccinations_bulk` -> record
    vaccinations (in bulk); with `verb_first`, the first word is the verb whatever else it can be."""
    at = next((k for k, w in enumerate(ws[1:-1], 1) if w in LOOKUP_VERBS | _CRUD_VERBS), 0)
    ws = list(ws[at:])  # `solar_get_production`: what stands before the name's verb is a prefix
    manner = _NAME_MANNERS.get(ws[-1]) if len(ws) > 2 else None
    if manner is not None:
        ws = ws[:-1]
    if verb_first or _name_opens_with_verb(ws):
        cut = next((k for k, w in enumerate(ws) if k > 1 and w in PREPOSITIONS), len(ws))
        rest = " ".join(ws[1:cut])
        verb = _INFO_VERBS.get(ws[0], ws[0])
        obj = f"the {rest}" if verb in LOOKUP_VERBS and not _is_plural(ws[cut - 1]) else with_article(rest)
        head, nouns = _noun_info(obj.split())
        tail = " ".join([*ws[cut:], *([manner] if manner else [])])
        return Intent(verb, obj, tail, head, "name", nouns)
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
