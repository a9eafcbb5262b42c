"""Shorthand in a description, written out before the parse reads it; and the case of acronyms.

A description written in a hurry carries what no person says aloud: asides in brackets ("Cancels
a shipment (only before pickup) and ..."), abbreviations ("close PR w/o merging", "e.g.", "qty",
"approx"), an arrow for "and then" ("revert commit on branch -> new PR"). `plain_description` is
the text the parse reads: asides removed, the common abbreviations written out, an arrow a clause
break. An abbreviation it does not know stays, and `shorthand_left` finds it in a rendered phrase
so that the renderer says its plain fallback instead. An acronym keeps its case and takes a
lower-case plural (`keep_case`, `plural_of`: "PR" -> "PRs", never "prs" or "PRS").
"""

from __future__ import annotations

import re

from diaforge.data_gen.phrasing.english import DETERMINERS, MASS_NOUNS, _is_plural, _lemmas, is_base_verb
from diaforge.data_gen.phrasing.summary import summary
from diaforge.saying import inflect_engine

# Abbreviations a description may use, written out. A trailing full stop is optional.
_WRITTEN_OUT = {
    "w/o": "without",
    "w/": "with",
    "b/w": "between",
    "b/c": "because",
    "e.g.": "for example",
    "eg.": "for example",
    "i.e.": "that is",
    "ie.": "that is",
    "approx.": "approximately",
    "incl.": "including",
    "excl.": "excluding",
    "qty": "quantity",
    "qtys": "quantities",
    "amt": "amount",
    "avg": "average",
    "msg": "message",
    "msgs": "messages",
    "acct": "account",
    "accts": "accounts",
    "addr": "address",
    "dept": "department",
    "depts": "departments",
    "desc": "description",
    "pls": "please",
    "resp": "response",
    "yr": "year",
    "yrs": "years",
    "hr": "hour",
    "hrs": "hours",
    "mins": "minutes",
    "wk": "week",
    "wks": "weeks",
    "chg": "change",
    "cust": "customer",
    "custs": "customers",
    "mgr": "manager",
    "mgrs": "managers",
    "pmt": "payment",
    "pmts": "payments",
    "txn": "transaction",
    "txns": "transactions",
    "appt": "appointment",
    "appts": "appointments",
    "svc": "service",
    "svcs": "services",
    "grp": "group",
    "grps": "groups",
    "std": "standard",
    "pw": "password",
    "pwd": "password",
    "req'd": "required",
    "w/in": "within",
    "ref": "reference",
    "refs": "references",
}
# Abbreviations whose meaning depends on the domain ("req": a request or a requirement, "pt": a
# patient or a point, "avail": availability or available): never written out, and a phrase that
# still holds one is said by its plain fallback.
_AMBIGUOUS = frozenset({"req", "reqs", "pt", "pts", "avail", "unavail", "conf", "priv", "eng", "del", "opt"})


def _pattern(key: str) -> str:
    if key.endswith("."):
        return re.escape(key[:-1]) + r"\.?"  # "e.g." and "e.g", "approx." and "approx"
    return re.escape(key) + ("" if key.endswith("/") else r"\b")


_ABBREVIATION = re.compile(
    r"(?<![\w/])("
    + "|".join(_pattern(k) for k in sorted(_WRITTEN_OUT, key=len, reverse=True))
    + r")(?![\w/])",
    re.I,
)
_ETC = re.compile(r",?\s*\betc\b\.?", re.I)
# Chat spelling, in lower case only ("so u can chase it", "when u dont have the reference"; never
# the "U" of "U.S.").
_CHAT = {"u": "you", "ur": "your", "dont": "don't", "doesnt": "doesn't", "cant": "can't", "isnt": "isn't"}
_CHAT_WORD = re.compile(rf"(?<![\w'.])({'|'.join(_CHAT)})(?![\w'.])")
# Symbols written for words: "1 SKU @ 1 DC", "qty & UoM", "ref #", "# of seats", "+/- 30 min", "~15 mins".
_SYMBOLS = (
    (re.compile(r"\s+@\s+"), " at "),
    (re.compile(r"\s+&\s+"), " and "),
    (re.compile(r"(?<=\w)\s+#(?=[\s,.;:)]|$)"), " number"),
    (re.compile(r"(?<![\w#])#\s+(?=of\b)"), "number "),
    (re.compile(r"\+/-\s*"), "plus or minus "),
    (re.compile(r"(?<![\w~])~\s*(?=\d)"), "about "),
)
# Words joined by slashes as alternatives ("Amend/update", "short/damaged/wrong items"): words of
# three letters or more, none in capitals ("TCP/IP", "PICKED/LOADED" are names), and not part of a
# path or an address ("example.com/path").
_ALTERNATIVES = re.compile(r"(?<![\w/.:])([A-Za-z][a-z]{2,}(?:/[a-z]{3,})+)(?![\w/])")
_ARROW = re.compile(r"\s*(?:->|=>|→)\s*")
_ASIDE = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\])")
# An abbreviation still in a phrase: a word of one or two letters around a slash ("w/o", "n/a",
# "b/w"; not "and/or", "on/off"), or one of the words `_WRITTEN_OUT` knows, or one it does not
# but that no phrase says aloud.
_SLASHED = re.compile(r"(?<![\w/])[a-z]{1,2}/[a-z]{0,2}(?![\w/])", re.I)
_LEFT = frozenset(
    {k.rstrip(".") for k in _WRITTEN_OUT}
    | {"etc", "n/a", "approx", "incl", "excl", "e.g", "i.e"}
    | _AMBIGUOUS
)


def _alternatives(m: re.Match[str]) -> str:
    """Verbs joined by slashes that open a clause, joined by "or" as said ("Amend/update an open
    PO" -> "Amend or update an open PO", "add/remove lines" -> "add or remove lines"), which the
    parse reads as one verb phrase. One of them must be only a verb, or a determiner must follow
    ("Book/schedule a new appointment"): "Truck/route ETA" and "Stock/avail check" are nouns.
    Other slashed words read as written ("a lockout/tagout permit", "a date/time")."""
    words = m.group(1).split("/")
    before = m.string[: m.start()].rstrip()
    after = m.string[m.end() :].split()
    opens = not before or before[-1] in ".;:!?"
    object_next = bool(after) and after[0].lower() in DETERMINERS
    only_verb = any(_lemmas(w.lower()).keys() == {"VERB"} for w in words)
    verbs = all(is_base_verb(w.lower()) for w in words) and (object_next or only_verb)
    return " or ".join(words) if opens and verbs else m.group(0)


def _written_out(m: re.Match[str]) -> str:
    word = m.group(1)
    if word.isalpha() and word.isupper() and len(word) > 1:
        return word  # in capitals it is a name: "an HR case", "the STD form", never "an Hour case"
    key = next(k for k in _WRITTEN_OUT if k.rstrip(".") == word.lower().rstrip("."))
    out = _WRITTEN_OUT[key]
    return out[:1].upper() + out[1:] if word[:1].isupper() else out


def plain_description(text: str) -> str:
    """`text` as the parse reads it: its `summary.summary` (what it says the tool does, without
    markup, sections, preambles and instructions), asides in brackets removed ("Cancels a shipment (only before
    pickup) and refunds ..." -> "Cancels a shipment and refunds ..."), an arrow a clause break
    ("revert commit on branch -> new PR" -> "revert commit on branch; new PR"), "etc." dropped and
    the common abbreviations written out ("w/o" -> without, "e.g." -> for example, "qty" ->
    quantity)."""
    out = summary(text or "")
    if not out:
        return ""
    for _ in range(3):  # nested asides: "(a fee (if any) may apply)"
        out = _ASIDE.sub("", out)
    out = _ARROW.sub("; ", out)
    out = _ETC.sub("", out)
    out = _ABBREVIATION.sub(_written_out, out)
    out = _CHAT_WORD.sub(lambda m: _CHAT[m.group(1)], out)
    for rx, said in _SYMBOLS:
        out = rx.sub(said, out)
    out = _ALTERNATIVES.sub(_alternatives, out)
    return re.sub(r"\s+([,;.])", r"\1", " ".join(out.split()))


def words_written_out(phrase: str) -> str:
    """`phrase` with each word that is a plain abbreviation `_WRITTEN_OUT` knows written out, as
    an argument's name is said ("qty" -> "quantity", "appt ref" -> "appointment reference");
    shorthand with a slash or a full stop ("w/", "e.g.") never stands in a name."""
    words = phrase.split(" ")
    return " ".join(_WRITTEN_OUT[w] if w in _WRITTEN_OUT and w not in _NOT_IN_NAMES else w for w in words)


# Abbreviations a name writes in lower case for something else: `hr_partner` is human resources,
# `std_rate` may be standard or a deviation; units (`timeout_mins`) are said by `param_noun`.
_NOT_IN_NAMES = frozenset({"hr", "hrs", "mins", "wk", "wks", "yr", "yrs", "std"})


# Words of three letters or more without a vowel that are said as written: units, file types and
# sounds. Any other such word is shorthand ("srch", "xfr", "Bkng"), whatever the domain.
_SAID_WITHOUT_VOWELS_WORDS = (
    "nth hmm shh psst tsk brr grr mph kph rpm bpm fps bps kbps mbps gbps ppm ppb lbs kwh mwh tsp tbsp cwt pdf png"
    " jpg svg gbp html xml sql css mp3 mp4 cvv dns"
)
_SAID_WITHOUT_VOWELS = frozenset(_SAID_WITHOUT_VOWELS_WORDS.split())


def _vowelless(word: str) -> bool:
    """Whether `word` is shorthand written without its vowels: three letters or more, none of them
    a vowel or "y", and not in capitals (an acronym is a name: "NDC", "SKU")."""
    core = word.rstrip(".")
    return (
        len(core) >= 3
        and core.isalpha()
        and not is_acronym(core)
        and not re.search(r"[aeiouyAEIOUY]", core)
        and core.lower() not in _SAID_WITHOUT_VOWELS
    )


def shorthand_left(phrase: str) -> str:
    """The first abbreviation a rendered phrase still holds ("w/o", "n/a", "qty", "srch"), "" when
    none."""
    m = _SLASHED.search(phrase)
    if m:
        return m.group(0)
    for word in re.findall(r"[A-Za-z][A-Za-z./]*", phrase):
        if word.lower().rstrip(".") in _LEFT or any(part.lower() in _AMBIGUOUS for part in word.split("/")):
            return word  # "avail" also inside "stock/avail"
        if _vowelless(word):
            return word
    return ""


def is_acronym(word: str) -> bool:
    """A word a description spells in capitals (`PR`, `SKU`, `PRs`, `SKUs`), not a one-letter word."""
    core = word[:-1] if word.endswith("s") and len(word) > 2 else word
    core = core.replace("&", "") if re.fullmatch(r"[A-Z]+&[A-Z]+", core) else core  # "S&OP", "R&D"
    return len(core) > 1 and core.isalpha() and core.isupper()


def _short_name(word: str) -> bool:
    """A short capitalised word no dictionary knows (`Rx`, `Dx`): shorthand kept as written, like
    an acronym, never lower-cased into a word nobody writes ("rxes")."""
    core = word[:-1] if word.endswith("s") and len(word) > 2 else word
    return 1 < len(core) <= 3 and core.isalpha() and core[0].isupper() and not _lemmas(core.lower())


def keep_case(word: str) -> str:
    """`word` lower-cased, unless it is an acronym (`PR`, `PRs` stay as written) or a short name
    no dictionary knows (`Rx`)."""
    return word if is_acronym(word) or _short_name(word) else word.lower()


def plural_of(noun: str) -> str:
    """The plural a person writes: `PR` -> `PRs`, `Rx` -> `Rxs`, `report` -> `reports`; a plural or a mass noun
    as it is."""
    if is_acronym(noun) or _short_name(noun):
        return noun if noun.endswith("s") else f"{noun}s"
    if _is_plural(noun) or noun.lower() in MASS_NOUNS:
        return noun
    return inflect_engine().plural_noun(noun) or noun


def acronym_case(name: str, text: str) -> str:
    """An argument's name with each word that `text` (its description) spells as an acronym in
    capitals: `pr number` + "PR number." -> `PR number`, `commit sha` + "Commit SHA." -> `commit
    SHA`. A description written all in capitals says nothing about case."""
    caps = {
        w for w in re.findall(r"(?<![\w-])[A-Z]{2,6}s?(?![\w-])", text or "") if is_acronym(w)
    }  # not SITE-044
    if not caps or not re.search(r"[a-z]", text):
        return name
    by_lower = {w.lower(): w for w in caps}
    return " ".join(by_lower.get(w.lower(), w) if w.islower() else w for w in name.split())


__all__ = [
    "acronym_case",
    "is_acronym",
    "keep_case",
    "plain_description",
    "plural_of",
    "shorthand_left",
    "words_written_out",
]
