"""What the rule validator rejects in a message, and the words of a catalogue's own trade.

A tool identifier or its word-for-word humanised form (`names_read_out`), template debris such as
"a of" or unfilled braces (`artefacts`), a determiner before a verb phrase left by a description
written as an order (`determiner_before_verb`), an opening that asks for another tool's action
(`contradicting_verbs`), and jargon of another line of business (`foreign_trade_words`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from diaforge.data_gen.phrasing.english import (
    _BOUNDARY,
    _PARTICLES,
    _PREP_LINKS,
    DETERMINERS,
    _lemmas,
    is_base_verb,
    is_noun,
    stopword,
)
from diaforge.data_gen.phrasing.intents import LOOKUP_VERBS, Intent, catalogue_prefixes, intent_of
from diaforge.saying import inflect_engine
from diaforge.schema import Tool
from diaforge.text import humanise_param, line_of_business_key, name_tokens, stem, tool_stems, words


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
        re.compile(r"\b(a|an|the)\s+(a|an|the|of|to|for|with|and|or|in|on|by)\b(?![\w/-])", re.I),
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
    params = {humanise_param(k).lower() for t in tools for k in t.properties}  # one-word names: "the temp"
    nouns = _nouns_in(tuple(tools))
    found: list[str] = []
    for m in _DET_WORD.finditer(text):
        det, word, after = m.group(1), m.group(2), m.group(3) or ""
        if text[m.end(2) : m.end(2) + 1] in "-'’" and m.end(2) < len(text):
            continue  # "a dine-in order", "the play's"
        low = word.lower()
        if low in params:
            continue  # an argument's name ("set the temp to 23")
        rest = text[m.end(2) :].lower().split()
        following = " ".join([low, *rest[:2]]).strip(" ,.;:?!")
        nxt = after.lower()
        opens = not after or nxt in DETERMINERS | _PARTICLES | _PREP_LINKS or text[m.end(2) :][:1] in ",.;:?!"
        hit = verb_only(low) and opens and not (low in nouns and nxt not in DETERMINERS)
        hit = hit or any(following.startswith(p) for p in phrases if p.split()[0] == low)
        if hit:
            found.append(f"{det} {word} {after}".strip())
    return found


def _nouns_in(tools: tuple[Tool, ...]) -> frozenset[str]:
    """Words the lexicon knows only as verbs that `tools` use as nouns: before another word of a
    parameter name (`commit_sha`), or after a preposition other than "to" in a description ("tag
    release from commit"). "revert the commit" is then no determiner before a verb."""
    out: set[str] = set()
    for t in tools:
        for key in t.properties:
            out |= set(humanise_param(key).lower().split()[:-1])
        toks = re.findall(r"[A-Za-z][\w-]*", (t.description or "").lower())
        out |= {b for a, b in zip(toks, toks[1:], strict=False) if a in _NOUN_PREPOSITIONS}
    return frozenset(w for w in out if verb_only(w))


_NOUN_PREPOSITIONS = frozenset({"from", "on", "of", "into", "onto", "per", "with", "without", "by", "at"})
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
    also speak of (`order` among order tools); never a word any candidate's description opens
    with as its verb (`update`, `take`), a word about the tool itself (`api`, `parameter`) or one
    too plain to be shop talk (`details`, `list`, `name`)."""
    g = intent_of(gold, prefixes)
    stems_of = [tool_stems(c) for c in candidates if c.name != gold.name]
    verbs = {intent_of(c, prefixes).verb.split()[0] for c in candidates}
    verbs |= {w for w in name_tokens(gold) if "VERB" in _lemmas(w)}  # `tourist_attraction.find`
    out: list[str] = []
    for w in re.findall(r"[a-z][a-z\-]+", f"{g.obj} {' '.join(name_tokens(gold))}".lower()):
        if len(w) < 3 or w in DETERMINERS | _BOUNDARY | _PLAIN_WORDS or stopword(w) or not is_noun(w):
            continue
        if "ADV" in _lemmas(w):
            continue  # "today", "tomorrow": no shop talk
        if w in verbs or (inflect_engine().singular_noun(w) or w) in verbs:
            continue
        single = inflect_engine().singular_noun(w) or w
        if any(stem(single) in s for s in stems_of) and single not in out:
            out.append(single)
    return out


_PLAIN_WORD_LIST = (
    "detail details information data list lists parameter parameters name names id ids status value values "
    "type types option options result results api apis function functions endpoint endpoints method item "
    "items thing things record records number numbers request requests response time date today"
)
_PLAIN_WORDS = frozenset(_PLAIN_WORD_LIST.split())


@lru_cache(maxsize=1)
def trade_words() -> dict[str, frozenset[str]]:
    """Shop talk by line of business, from the bundled persona bank: each jargon term and the
    lines of business whose people use it (`CAPA` -> manufacturing, `RMA` -> customer service)."""
    import json
    from importlib import resources

    lines: dict[str, set[str]] = {}
    path = resources.files("diaforge.data_gen") / "assets" / "personas.jsonl"
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
