"""Phrases no person writes, read with the parse of `diaforge.data_gen.phrasing.grammar`.

`broken_phrases(text, tools)` gives `(kind, evidence)` for each kind found in a message; the
candidate tools let it read what a description's words were before a renderer cut or pasted them.
The kinds, each with the shape it comes from:

* `verb_read_as_noun`: a determiner before a description's opening verb and the word after it
  ("look up the list open purchase requisitions", "look up the retrieves for a payslip"), or
  before an acronym that an article follows (shorthand for a verb: "look up the RTS an unclaimed
  fill");
* `preposition_as_noun`: a determiner before a preposition, the parameter name that opens with
  one (`within_days`: "What is the within days?", `on_off_command`: "the on off command");
* `verb_agreement`: a verb in the third person where the base form belongs ("cancel a shipment
  before pickup and notifies the carrier", "to retrieves");
* `cut_phrase`: a phrase that stops before its end: on a word that opens an example ("a safety
  incident such, I need"), a determiner, a preposition, "the same", a participle ("based",
  "corresponding"), or inside a noun compound of a description ("by unique employee?" for "by
  unique employee id");
* `lost_object`: a description's list cut at its first comma ("get the current state" for
  "Returns the current state, owner and due date of a claim");
* `run_on`: two sentences of a description run together without their full stop ("two
  parameters keyword this API returns");
* `mass_noun_article`: `a`/`an` before a noun that takes none ("update an information"), or its
  plural ("datas");
* `tool_talk`: the words that name the tool taken for what it acts on ("cancel an api", "about
  apis") or a lead-in left in a clause ("this function flips an image");
* `lowercased_name`: a name a description capitalises written in lower case ("the german
  bundesliga", "from youtube").

Quoted values and JSON are left out: they are data, not phrasing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from diaforge.data_gen.phrasing.ends import stranded_preposition
from diaforge.data_gen.phrasing.english import DETERMINERS, MASS_NOUNS, first_sentence, is_base_verb
from diaforge.data_gen.phrasing.grammar import (
    PREPOSITIONS,
    TOOL_WORDS,
    continues_compound,
    is_proper,
    nominal,
    only_third_person_verb,
    opens_with_verb,
    third_person_lemma,
    tokens,
    word_classes,
)
from diaforge.data_gen.phrasing.options import base_after_conjunction
from diaforge.data_gen.phrasing.shorthand import plain_description
from diaforge.schema import Tool
from diaforge.text import humanise_param, name_tokens

_ABBREVIATIONS = frozenset(
    {"etc", "e.g", "i.e", "vs", "approx", "inc", "ltd", "co", "no", "dr", "mr", "mrs", "st"}
)

KINDS = (
    "verb_read_as_noun",
    "preposition_as_noun",
    "verb_agreement",
    "cut_phrase",
    "lost_object",
    "run_on",
    "mass_noun_article",
    "tool_talk",
    "lowercased_name",
)
_DET = r"(?:the|a|an|my|your|our|their|its)"
# Prepositions that are never adjectives ("an outside counsel", "the above list" are English).
_NOUNLESS = PREPOSITIONS - {"as", "than", "outside", "inside", "above", "below", "beneath", "beside", "near"}
_NOUNLESS -= {"off", "out", "over", "up", "down", "throughout", "beyond", "behind", "under"}
# Pronouns that never follow a determiner ("look up the we'll move your line"); never "it" (the IT team).
_SUBJECT_PRONOUNS = r"(?:we|you|they|he|she|i)(?:['’](?:ll|re|ve|m|d))?"
_PREP_AS_NOUN = re.compile(
    rf"\b{_DET}\s+(?:({'|'.join(sorted(_NOUNLESS))})\b(?![-'’/])(?!\s+(?:diem|annum|capita|cent)\b)"
    rf"|{_SUBJECT_PRONOUNS}(?![\w-]))",
    re.I,
)
_BASE_CONTEXT = re.compile(
    r"(?:\b(?:to|should i|shall i|can you|could you|will you|would you|please|i can|i will|i'll|let me)|:)"
    r"\s+(\w+)",
    re.I,
)
_TO_VERB = re.compile(r"\bto\s+([a-z]+s)\b", re.I)
_AND_VERB = re.compile(r"\b(?:and|or)\s+([a-z]+s)\s+([a-z]+)\b", re.I)
_END = r"(?=\s*[,;:?!]|\.(?:\s|$)|\s+or\b|\s*$)"
_HANGING_END = re.compile(
    rf"\b(such as|such|e\.g\.?|i\.e\.?|including|namely|the same|based|based on|corresponding|according to|"
    rf"given|using|named|regarding|than|whether|of|for|with|from|into|via|per|the|a|an|and|"
    rf"(?:a|an|the)\s+[a-z]+ed){_END}",
    re.I,
)
_RELATIVE_END = re.compile(rf",\s*(?:that|which|who)\s+([a-z]+s){_END}", re.I)
_EXAMPLE_END = re.compile(rf"\b(?:such as|including|e\.g\.?)\s+([a-z]+){_END}", re.I)
_ADJECTIVE_END = re.compile(rf"\b(?:a|an|the)\s+([a-z]+){_END}", re.I)
_MASS = re.compile(
    rf"\b(?:a|an)\s+({'|'.join(sorted(MASS_NOUNS))}){_END}|\b(informations|datas|advices|feedbacks|equipments|softwares|furnitures|evidences|knowledges)\b",
    re.I,
)
_TOOL_OBJECT = re.compile(rf"\b(?:a|an|the|some|about)\s+(api|apis|endpoint|endpoints)\b{_END}", re.I)
_LEAD_IN = re.compile(r"\b(?:this|the)\s+(?:api|function|tool|endpoint|method)\s+([a-z]+s)\b", re.I)
# Talk about the tool's parameters: "API that takes two parameters", "the keyword parameter refers to".
_PARAMETER_TALK = re.compile(
    r"\b(?:api|endpoint|function)s?\s+(?:that|which)\s+takes\b|\btakes?\s+(?:\w+\s+){0,2}parameters?\b"
    r"|\bparameters?\s+(?:refers|specifies|determines|is used|represents)\b",
    re.I,
)
# An acronym between a determiner and an article: written for a verb ("the RTS an unclaimed fill").
_ACRONYM_VERB = re.compile(r"\b(?:[Tt]he|[Aa]n?)\s+[A-Z]{2,6}\s+(?:a|an|the)\s")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|\[[^\]]*\]|\{[^}]*\}')


def _plain(text: str) -> str:
    """The message without quoted values and JSON (data, not phrasing)."""
    return _QUOTED.sub("VALUE", text)


def _text_kinds(text: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if m := _ACRONYM_VERB.search(text):
        found.append(("verb_read_as_noun", m.group(0).strip()))
    m = _PREP_AS_NOUN.search(text)
    if m:
        found.append(("preposition_as_noun", m.group(0)))
    agreement = _agreement(text)
    if agreement:
        found.append(("verb_agreement", agreement))
    m = _HANGING_END.search(text)
    if m and stranded_preposition(text[: m.end()].split()):
        m = None  # "the card it was taken from": the clause's head is the preposition's object
    if m and not _question_end(text, m):
        found.append(("cut_phrase", text[max(0, m.start() - 20) : m.end()].strip()))
    elif rel := next((r for r in _RELATIVE_END.finditer(text) if third_person_lemma(r.group(1))), None):
        found.append(("cut_phrase", rel.group(0)))  # "book a hotel, that takes."
    elif ex := next(
        (e for e in _EXAMPLE_END.finditer(text) if word_classes(e.group(1)) <= {"ADJ", "ADV"}), None
    ):
        found.append(("cut_phrase", ex.group(0)))  # "based on factors such as daily."
    elif adj := next((a for a in _ADJECTIVE_END.finditer(text) if word_classes(a.group(1)) == {"ADJ"}), None):
        found.append(("cut_phrase", adj.group(0)))  # "a certain?", "What is the anonymous?"
    m = _MASS.search(text)
    if m:
        found.append(("mass_noun_article", m.group(0)))
    m = _TOOL_OBJECT.search(text) or _PARAMETER_TALK.search(text)
    lead = _LEAD_IN.search(text)
    if m or (lead and third_person_lemma(lead.group(1))):
        found.append(("tool_talk", (m or lead).group(0)))  # type: ignore[union-attr]
    return found


def _question_end(text: str, m: re.Match[str]) -> bool:
    """A preposition that ends a question on purpose ("What is it for?") is no cut."""
    return m.group(1).lower() in ("for", "with", "from") and text[m.end() : m.end() + 2].strip()[:1] == "?"


def _agreement(text: str) -> str:
    for m in _TO_VERB.finditer(text):
        if only_third_person_verb(m.group(1)):
            return m.group(0)
    for m in _AND_VERB.finditer(text):
        word = m.group(1)
        if third_person_lemma(word) is None or "VERB" not in word_classes(word):
            continue
        nxt = m.group(2).lower()
        before = text[: m.start()]
        clause = re.split(r"[.;!?]|, (?:or|and) |\bor\b|:", before)[-1]
        if nxt not in DETERMINERS | {"it", "them"} and "NOUN" in word_classes(word):
            # maybe a plural noun ("or reports from your team"), unless an order's second verb
            # before its bare object ("analyze text using VADER and returns sentiment scores")
            lead = _BASE_CONTEXT.search(clause)
            said = [*clause[lead.start(1) if lead else 0 :].split(), *text[m.start() : m.end() + 40].split()]
            if said and word not in base_after_conjunction(said):
                return m.group(0)
            continue
        base = _BASE_CONTEXT.search(clause)
        opener = clause.split()[0] if clause.split() else ""  # "..., or check the flights ... and returns"
        if (base and third_person_lemma(base.group(1)) is None) or (opener and is_base_verb(opener)):
            return m.group(0)
    return ""


class _Features:
    """What a tool's description lets the checks see: its opening verb and the word after it,
    noun compounds and where each may end, the last words before a list's first comma, the words
    either side of each full stop, and the names it capitalises."""

    def __init__(self, tool: Tool) -> None:
        desc = plain_description(tool.description or "")
        self.ends: set[str] = set()
        from diaforge.data_gen.phrasing.intents import strip_lead_in

        first = tokens(strip_lead_in(first_sentence(desc)))
        self.opening = ""
        if len(first) > 1 and opens_with_verb(first, name_tokens(tool)):
            self.opening = f"{first[0]} {first[1]}".lower()
        self.cuts: set[tuple[str, str]] = set()
        self.lists: set[tuple[str, str]] = set()
        self.joins: set[str] = set()
        self.names: set[str] = set()
        for sentence in re.split(r"(?<=[A-Za-z0-9)'’\"])[.!?](?:\s|$)", desc):
            toks = tokens(sentence)
            self._compounds(toks)
            self._lists(toks)
            for k, t in enumerate(toks):
                if is_proper(t, sentence_start=k == 0) and not re.fullmatch(r"[A-Z]+s", t):
                    self.names.add(t)
        self.lower = set(re.findall(r"(?<![\w-])[a-z][\w-]*", desc))
        for m in re.finditer(r"(?<![\w.])([A-Za-z][\w-]{2,})['’\"”)]*[.!?]\s+['\"“(]*([A-Za-z][\w-]*)", desc):
            if m.group(1).lower() not in _ABBREVIATIONS:
                self.joins.add(f"{m.group(1)} {m.group(2)}".lower())
        self.params = {humanise_param(key).lower() for key in tool.properties}
        lob = str(tool.metadata.get("line_of_business") or "").lower().replace("&", "and").split()
        if len(lob) > 1:
            self.ends.add(" ".join(lob[-2:]))  # "something in travel and expense"
        self.bigrams: set[str] = set()
        for clause in re.split(r"[.!?;:,()]+(?:\s|$)|['’\"”]\W", desc.lower()):
            ws = re.findall(r"[a-z0-9][\w-]*", clause)
            self.bigrams |= {f"{a} {b}" for a, b in zip(ws, ws[1:], strict=False)}

    def _compounds(self, toks: Sequence[str]) -> None:
        for i in range(len(toks)):
            if not nominal(toks[i]) or toks[i].lower() in TOOL_WORDS:
                continue
            gram = " ".join(t.lower() for t in toks[max(0, i - 1) : i + 1])
            nxt = toks[i + 1] if i + 1 < len(toks) else ""
            if continues_compound(toks[i], nxt) and " " in gram:
                self.cuts.add((gram, nxt.lower()))
            else:
                self.ends.add(gram)

    def _lists(self, toks: Sequence[str]) -> None:
        """The list that is the opening verb's object ("Returns the current state, owner ...")."""
        from diaforge.data_gen.phrasing.grammar import _closed_list
        from diaforge.data_gen.phrasing.objects import _shared_of_end

        for i, t in enumerate(toks):
            if i and not (toks[i].lower() in DETERMINERS or nominal(toks[i])):
                joined = t.lower() in ("and", "or") and _shared_of_end(toks, i) > i
                if i + 1 < len(toks) and ((t == "," and _closed_list(toks, i)) or joined):
                    gram = " ".join(w.lower() for w in toks[max(0, i - 2) : i])  # "Parties, term and ..."
                    self.lists.add((gram, toks[i + 1].lower()))
                return


@lru_cache(maxsize=4096)
def _features(name: str, description: str, keys: tuple[str, ...], lob: str) -> _Features:
    params = {"type": "object", "properties": {k: {"type": "string"} for k in keys}}
    metadata = {"line_of_business": lob}
    return _Features(Tool(name=name, description=description, parameters=params, metadata=metadata))


def broken_phrases(text: str, tools: Sequence[Tool] = ()) -> list[tuple[str, str]]:
    """`(kind, evidence)` for each kind of broken phrase in `text` (module docstring), the first
    of each kind."""
    plain = _plain(text or "")
    if not plain.strip():
        return []
    found = _text_kinds(plain)
    low = plain.lower()
    feats = [
        _features(
            t.name, t.description or "", tuple(t.properties), str(t.metadata.get("line_of_business") or "")
        )
        for t in tools
    ]
    ends = set().union(*(f.ends for f in feats)) if feats else set()
    params = set().union(*(f.params for f in feats)) if feats else set()
    bigrams = set().union(*(f.bigrams for f in feats)) if feats else set()
    kinds = {k for k, _ in found}
    for f in feats:
        if "verb_read_as_noun" not in kinds and f.opening:
            m = re.search(rf"\b{_DET}\s+{re.escape(f.opening)}\b", low)
            if m:
                found.append(("verb_read_as_noun", m.group(0)))
                kinds.add("verb_read_as_noun")
        if "cut_phrase" not in kinds:
            for gram, nxt in f.cuts:
                if gram in ends or any(gram == p or gram.endswith(f" {p}") for p in params):
                    continue  # a phrase ends there elsewhere, or it names an argument
                m = re.search(rf"\b{re.escape(gram)}{_END}", low)
                if m:
                    found.append(("cut_phrase", f"{gram} (| {nxt})"))
                    kinds.add("cut_phrase")
                    break
        if "lost_object" not in kinds:
            for gram, nxt in f.lists:
                lead = (
                    "" if " " in gram else r"\bthe\s+"
                )  # one word: as an offered object ("the parties, or")
                m = re.search(
                    rf"{lead}\b{re.escape(gram)}\b(?!,?\s+(?:(?:and|or)\s+)?{re.escape(nxt)}\b)(?=\s*[,?.!]|\s+(?:or|and)\b)"
                    + ("" if " " in gram else r"(?<=\w)(?=,|\s+or\b)"),
                    low,
                )
                if m:
                    found.append(("lost_object", f"{gram} (| , {nxt} ...)"))
                    kinds.add("lost_object")
                    break
        if "run_on" not in kinds:
            for join in f.joins - bigrams:
                if re.search(rf"\b{re.escape(join)}\b", low):
                    found.append(("run_on", join))
                    kinds.add("run_on")
                    break
    lower = set().union(*(f.lower for f in feats)) if feats else set()
    lower |= {w for p in params for w in p.split()}  # an argument's name is a label, said as named
    for name in sorted(set().union(*(f.names for f in feats)) if feats else ()):
        low_name = name.lower()
        if low_name not in lower and re.search(rf"(?<![\w-]){re.escape(low_name)}(?![\w-])", plain):
            found.append(("lowercased_name", low_name))
            break
    return found
