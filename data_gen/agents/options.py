"""Reading a question and its options, shared by the scripted user-proxy and teacher: which
candidates a question offers (`offered_options`, by meaning rather than by name), which an answer
keeps (`narrow`, `plausible`), and how a user says which one it means (`gold_choice`) or restates
its need when none fits (`restated_need`); `still_open` is what an answer leaves open, and
`options_in_thought` which options a question of the scripted teacher offered, from its thought."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from diaforge.data_gen.phrasing import (
    catalogue_prefixes,
    distinguishing_clause,
    in_user_voice,
    intent_of,
    is_base_verb,
    option_descriptors,
    shared_verb,
    verb_lemma,
)
from diaforge.data_gen.phrasing.grammar import np_end, opens_with_verb, tokens
from diaforge.data_gen.phrasing.options import base_after_conjunction
from diaforge.data_gen.phrasing.render import action, choice, option_phrases, sound, with_tool
from diaforge.data_gen.phrasing.summary import summary
from diaforge.schema import Tool
from diaforge.text import KEEP_WORDS, STOPWORDS, content_stems, name_tokens, overlap, stem, words

# Words of a question that say nothing about which option is meant.
_QUESTION_WORDS = frozenset(
    [
        "want",
        "need",
        "mean",
        "should",
        "like",
        "help",
        "which",
        "option",
        "one",
        "kind",
        "type",
        "please",
        "could",
        "would",
        "shall",
        "do",
        "you",
        "me",
        "i",
        "it",
        "is",
        "are",
        "let",
        "know",
        "tell",
        "sure",
        "go",
        "ahead",
        "before",
        "pick",
        "right",
        "action",
        "way",
        "ways",
        "few",
        "possibilities",
        "possibility",
        "applies",
        "matches",
        "match",
        "happy",
        "thing",
        "got",
        "couple",
        "here",
        "there",
    ]
)
_AUXILIARIES = frozenset(
    {"are", "is", "be", "have", "has", "was", "were", "can", "will", "may", "might", "must"}
)
# Stems of function words ("with", "by", "for"): in a tool's name they tell no option apart, and
# a user's "complies with the policy" says nothing for `approve_report_with_exception`.
_FUNCTION_STEMS = frozenset(stem(w) for w in STOPWORDS - KEEP_WORDS)
_OPTION_SPLIT = re.compile(r",|;|:|\?|\bor\b|\beither\b|\bversus\b|\bvs\b\.?|/", re.IGNORECASE)


# A thing a description says the tool goes without ("so no receipts are needed", "without a
# booking"): that word is not one the user would name the tool by.
_WITHOUT = re.compile(r"\b(?:no|without(?:\s+(?:a|an|the|any))?)\s+([a-z][\w-]*)", re.IGNORECASE)


def _tool_stems(tool: Tool) -> set[str]:
    """The stems of a tool's name, of what its description says it does (`phrasing.summary`:
    not "Do not use for searching by name") and of its parameters, less the things the
    description says it goes without (`_WITHOUT`) unless its name says them."""
    said = summary(tool.description or "")
    named = {stem(w) for w in name_tokens(tool)}
    stems = named | content_stems(said)
    for key, spec in tool.properties.items():
        stems |= {stem(w) for w in words(key)} | content_stems(str(spec.get("description", "")))
    return stems - ({stem(m.group(1).lower()) for m in _WITHOUT.finditer(said)} - named)


def _weights(tools: Sequence[Tool]) -> tuple[dict[str, set[str]], dict[str, float]]:
    """Each tool's stems, and a weight per stem: 1 / how many of the tools use it."""
    stems = {t.name: _tool_stems(t) for t in tools}
    df: dict[str, int] = {}
    for ss in stems.values():
        for s in ss:
            df[s] = df.get(s, 0) + 1
    return stems, {s: 1.0 / n for s, n in df.items()}


def _lead_verb(segment: str, stems: dict[str, set[str]]) -> set[str]:
    """The stem of the verb a question segment says in a verb's place (first, or after "to" or
    "I") that some tool has: "create", not "couple" of "a couple of possibilities" nor "direct" of
    "your direct reports"; empty when it says none."""
    ws = words(segment)
    for k, w in enumerate(ws):
        if (
            (k == 0 or ws[k - 1] in ("to", "i"))
            and w not in _QUESTION_WORDS | _AUXILIARIES
            and is_base_verb(w)
            and any(stem(w) in v for v in stems.values())
        ):
            return {stem(w)}
    return set()


def offered_options(question: str, candidates: Sequence[Tool], encoder: Any = None) -> list[Tool]:
    """The candidates a question offers, understood by meaning rather than by name: the question
    is cut into option segments, and each segment goes to the candidate whose name, description
    and parameters it matches best (rarer words count more; with a sentence encoder, cosine
    similarity to the description is added). A segment that matches two candidates about equally
    offers neither; a one-word segment that repeats a word of an earlier one ("a gift" in "log a
    gift or hospitality you received or a gift or hospitality you gave") is a piece of an option
    and offers nothing, and so does a one-word segment whose word two candidates share equally (an
    item of a list inside an option); a word only one candidate has offers it from a segment that
    offered no other."""
    stems, weight = _weights(candidates)
    segments = [s.strip() for s in _OPTION_SPLIT.split(question) if s and s.strip()]
    vecs = None
    if encoder is not None and segments:
        import numpy as np

        vecs = encoder.encode([*segments, *[c.description or c.name for c in candidates]])
        vecs = np.asarray(vecs, dtype=float)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-9
    scores: list[list[float]] = []
    seen: set[str] = set()
    # The verb a question says once for all its options ("Do you want me to create a leave
    # application, a timesheet, or ..."): a later option without a verb of its own has it too.
    shared_verb_stems: set[str] = set()  # that verb, once a segment has said it
    for i, seg in enumerate(segments):
        seg_stems = {stem(w) for w in words(seg) if w not in _QUESTION_WORDS} & (
            content_stems(seg) | {stem(w) for w in words(seg) if len(w) > 2}
        )
        repeat, seen = len(seg_stems) == 1 and seg_stems <= seen, seen | seg_stems
        if repeat:  # a one-word piece that repeats an earlier word ("a gift or hospitality you gave")
            scores.append([0.0] * len(candidates))
            continue
        row = []
        said = seg_stems
        first = words(seg)[:1]
        if not (first and is_base_verb(first[0])):
            said = seg_stems | shared_verb_stems  # "a timesheet" after "create ...": create a timesheet
        if not shared_verb_stems:
            shared_verb_stems = _lead_verb(seg, stems)
        lexicals = [sum(weight[s] for s in said & stems[c.name]) for c in candidates]
        # One word that two tools share equally is an item of a list inside an option ("the
        # parties, term, value, ..."): an encoder's reading of the lone word does not break the tie.
        tied_word = len(seg_stems) == 1 and sorted(lexicals)[-2:] == [max(lexicals)] * 2
        # a bare "a superfund" whose verb the question said once: an encoder reads the noun alone
        # and cannot tell "create" from "update", so it never lifts a tool of another verb
        inherited = said != seg_stems
        for j, lexical in enumerate(lexicals):
            other_verb = inherited and not shared_verb_stems & stems[candidates[j].name]
            judged = vecs is not None and not tied_word and not other_verb
            semantic = float(vecs[i] @ vecs[len(segments) + j]) if judged else 0.0
            row.append(lexical + (semantic if lexical > 0 else 0.0))
        scores.append(row)
    # Each segment offers at most one candidate and each candidate is offered once: the best
    # pairs first, a pair only when its candidate beats every other one, offered or not. A
    # segment whose best match another segment already offers is a piece of that option ("a
    # deal or cooperation" cut at its "or"), not an offer of its runner-up.
    out: list[Tool] = []
    used_seg: set[int] = set()
    pairs = sorted(((v, i, j) for i, row in enumerate(scores) for j, v in enumerate(row)), reverse=True)
    for v, i, j in pairs:
        if v <= 0 or i in used_seg or candidates[j] in out:
            continue
        rivals = [scores[i][k] for k in range(len(candidates)) if k != j]
        if v > max(rivals, default=0.0) + 1e-9:
            out.append(candidates[j])
            used_seg.add(i)
    rest = " ".join(seg for i, seg in enumerate(segments) if i not in used_seg)
    q_stems = {stem(w) for w in words(rest) if w not in _QUESTION_WORDS} & content_stems(rest)
    # A word only one candidate has, in a segment that offered none, offers it ("... or one you gave away").
    for c in candidates:
        if c not in out and any(weight[s] == 1.0 for s in q_stems & stems[c.name]):
            out.append(c)
    return out


_NEGATION = re.compile(r"\b(?:not (?:the|a|an)|rather than|instead of)\b([^.;!?]*)", re.IGNORECASE)
_NONE_FITS = re.compile(
    r"\b(?:none of (?:those|these|them)|neither of|not quite|miss the mark|something else)\b", re.I
)


# The frame a user's pick is said in ("I need the option to ...", "Definitely the one about ...",
# "..., please"): its words are not the user's words for an option, and a description that says
# "needs" or "options" must not win by them.
_PICK_FRAME = re.compile(r"\b(?:i need|it's|it is|definitely|please)\b|\bthe (?:option|one)\b", re.IGNORECASE)


def negated_stems(text: str) -> set[str]:
    out: set[str] = set()
    for m in _NEGATION.finditer(text):
        out |= {stem(w) for w in words(m.group(1))}
    return out


def narrow(options: Sequence[Tool], answer: str) -> list[Tool]:
    """The options an answer points at: those whose distinguishing words (name, description and
    parameters, weighted by rarity within the options) it uses most, minus those it negates.
    Function words are no distinguishing words, even in a name (`_FUNCTION_STEMS`), and the words
    of the frame a pick is said in count for no option (`_PICK_FRAME`)."""
    if _NONE_FITS.search(answer):
        return []
    stems, weight = _weights(options)
    answer = _PICK_FRAME.sub(" ", answer)
    ans = content_stems(answer) | {stem(w) for w in words(answer)}
    neg = negated_stems(answer)
    scored = []
    for o in options:
        own = stems[o.name] - set.intersection(*stems.values()) if len(options) > 1 else stems[o.name]
        own = own - _FUNCTION_STEMS
        if own & neg and not (own & (ans - neg)):
            continue
        scored.append((sum(weight[s] for s in own & (ans - neg)), o))
    if not scored:
        return []
    best = max(s for s, _ in scored)
    tied = [o for s, o in scored if s >= best - 1e-9]
    whole = _named_whole(tied, ans - neg) if len(tied) > 1 else []
    if whole:
        return whole  # "an account" of "delete an account or a bank account": the account alone
    if best == 0:
        return [o for _, o in scored] if len(scored) < len(options) else []
    return tied


def _named_whole(tied: Sequence[Tool], said: set[str]) -> list[Tool]:
    """Among options an answer scores alike, the one it names whole: the only one whose own name
    words (less those all their names share) it says every one of, else the only one whose name
    has no words of its own when it says a word of that name and none of the others' own ("an
    account" of `DeleteAccount` and `DeleteBankAccount`). Empty when neither is one option."""
    names = {o.name: {stem(w) for w in name_tokens(o)} for o in tied}
    shared = set.intersection(*names.values())
    own = {n: ws - shared for n, ws in names.items()}
    whole = [o for o in tied if own[o.name] and own[o.name] <= said]
    if len(whole) == 1:
        return whole
    plain = [o for o in tied if not own[o.name] and names[o.name] & said]
    others_said = any(own[o.name] & said for o in tied)
    return plain if len(plain) == 1 and not others_said else []


def plausible(candidates: Sequence[Tool], text: str) -> list[Tool]:
    """Candidates the user's words support: the best overlap and those close to it."""
    stems = content_stems(text)
    scored = [(overlap(stems, c), i, c) for i, c in enumerate(candidates)]
    best = max(s for s, _, _ in scored)
    if best <= 0:
        return list(candidates)
    return [c for s, _, c in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= 0.75 * best]


def still_open(
    candidates: Sequence[Tool], pool: Sequence[Tool], offered: Sequence[Tool], answer: str
) -> list[Tool]:
    """The tools still open once the user answered a question that offered `offered`, `pool` being
    those open before it: the offered tools the answer points at (`narrow`); when it points at none
    ("none of those"), the candidates the question did not offer that the answer supports
    (`plausible`), or `pool` again when it offered them all. The teacher's replay of its selection
    phase and `diaforge.eval.decisions` both read an answer this way."""
    picked = narrow(offered, answer)
    if picked:
        return picked
    names = {o.name for o in offered}
    rest = [c for c in candidates if c.name not in names]
    return plausible(rest, answer) if rest else list(pool)


def options_in_thought(thought: str | None, candidates: Sequence[Tool]) -> list[Tool] | None:
    """The candidates a question of the scripted teacher offered, as its thought lists them, in
    candidate order: the thought names each option beside its description, ``name: description``
    (the `summary` style) or ``description (name)`` (`lookup`), and names the other open tools
    only in its list of matches. None when the thought names no candidate that way (no thought, or
    a question another model wrote): the caller then falls back on what it knows of the question."""
    if not thought:
        return None
    found = [
        c
        for c in candidates
        if re.search(rf"(?<!\w){re.escape(c.name)}:", thought) or f"({c.name})" in thought
    ]
    return found or None


def prefixes_of(candidates: Sequence[Tool]) -> frozenset[str]:
    return catalogue_prefixes(candidates, share=0.5)


def gold_choice(gold: Tool, options: Sequence[Tool], rng: random.Random) -> str:
    """How the user names what it wants among `options`, in its own words: what sets the gold
    tool's description apart (its object phrase, or a stretch only its description has), or,
    when that does not read well, the plain `fallback_option` ("the option that lists ...")."""
    prefixes = prefixes_of(options)
    return choice(gold, options, _gold_choice(gold, options, prefixes, rng), prefixes)


def _gold_choice(gold: Tool, options: Sequence[Tool], prefixes: frozenset[str], rng: random.Random) -> str:
    descriptor = option_descriptors(options, prefixes).get(gold.name, "")
    clause = distinguishing_clause(gold, options)
    if clause.startswith("of ") and descriptor and not descriptor.startswith("the one"):
        clause = ""  # "the details of a user", never "the one about of a user"
    if clause and (not descriptor or descriptor.startswith("the one") or rng.random() < 0.35):
        first = clause.split()[0]
        if first == "of":
            return in_user_voice(f"the one about {clause[3:]}")
        if is_base_verb(first) and opens_with_verb(tokens(clause), name_tokens(gold)):  # not "to time period"
            return in_user_voice(f"the option to {clause}")
        lead = (
            ""
            if first
            in (
                "with",
                "for",
                "where",
                "that",
                "in",
                "at",
                "as",
                "on",
                "by",
                "from",
            )  # not "the one to a ..."
            else "about "
        )
        words = tokens(clause)
        if not lead or np_end(words, 0) == len(words):
            # "the ones from my team that wait for my approval": a clause whose verb is plural
            # speaks of the gold tool's things in the plural, never "the one ... that wait"
            plural = re.search(r"\b(?:that|which|who) (\w+)", clause)
            one = "the ones" if plural and _plural_verb(plural.group(1)) else "the one"
            return in_user_voice(f"{one} {lead}{clause}")
        # "about" takes a noun phrase, not a sentence: never "the one about the order status will
        # be changed to return requested"; the user says the option as the question offered it.
        offered = option_phrases(options, prefixes)[1][gold.name]
        return in_user_voice(f"the option to {offered}" if is_base_verb(offered.split()[0]) else offered)
    picked = descriptor or intent_of(gold, prefixes).phrase
    noun_phrase = (
        bool(descriptor) and shared_verb(options, prefixes) is not None
    )  # "room availability for ..."
    verb = shared_verb(options, prefixes) if noun_phrase else None
    said = [*verb.split(), *picked.split()] if verb else []
    if said and base_after_conjunction(said) != said:  # "text sentiment ... and returns sentiment scores"
        return in_user_voice("the option to " + " ".join(base_after_conjunction(said)))
    if not noun_phrase and is_base_verb(picked.split()[0]):
        picked = f"the option to {picked}"
    return in_user_voice(picked)


def restated_need(gold: Tool, candidates: Sequence[Tool], rng: random.Random) -> str:
    """The user's need said again, more precisely, without naming a tool."""
    prefixes = prefixes_of(candidates)
    intent = intent_of(gold, prefixes)
    clause = distinguishing_clause(gold, candidates)
    act = action(gold, prefixes, candidates)
    if intent.source != "name":
        text = f"I need to {act}"
        plain = act.startswith("use the option")  # a fallback says the need once, with no clause after
        if (
            clause
            and stem(clause.split()[-1]) not in {stem(w) for w in words(text)}
            and rng.random() < 0.5
            and not plain
        ):
            longer = _need_with_clause(act, clause)
            text = longer if longer and sound(longer, with_tool(gold, candidates)) else text
        return in_user_voice(text) + "."
    about = f"What I need is about {clause.removeprefix('of ')}."  # never "about of additional package"
    said = [w.lower() for w in clause.split()]
    # never "about take", nor "about texts the customer a link": a verb and its object, no topic
    topical = len(said) > 1 and (
        said[0] in ("of", "the", "a", "an")
        or not (is_base_verb(said[0]) or verb_lemma(said[0]) or said[1] in _OBJECT_OPENERS)
    )
    return (
        in_user_voice(about) if topical and sound(about, with_tool(gold, candidates)) else f"I need to {act}."
    )


# Words that let a clause follow the action's object as it is: a preposition ("call off a quantity
# | from an existing agreement"), a relative ("a badge image | that represents ...").
_ATTACHES = frozenset(
    [
        "by",
        "from",
        "over",
        "in",
        "within",
        "for",
        "with",
        "on",
        "at",
        "during",
        "under",
        "of",
        "that",
        "which",
        "who",
        "whose",
        "where",
    ]
)


# Words that open a verb's object right after it ("texts | the customer a link").
_OBJECT_OPENERS = frozenset({"the", "a", "an", "your", "my", "our", "their", "its", "this", "these", "those"})


def _plural_verb(word: str) -> bool:
    """Whether `word` is a present-tense verb said of a plural subject ("wait", "have", "are")."""
    w = word.lower()
    return w in ("are", "were", "have") or (is_base_verb(w) and w != "be" and not w.endswith("ed"))


def _need_with_clause(act: str, clause: str) -> str | None:
    """ "I need to <act>" said with the clause that sets the tool apart, as one sentence, or None
    when the two do not join: the clause opens with the action ("start a return for an order that
    was delivered"), goes on from the action's last words ("look up the help articles" + "help
    articles most viewed by customers" -> "... help articles most viewed by customers"), or
    attaches to its object (`_ATTACHES`; "to" only before a verb: "open a problem record to find
    the root cause"). Never joined by a comma ("delete an account, of the user ..."), a clause
    with a subject of its own ("I get a dedicated truck") or a capital ("If the order ...")."""
    if clause.startswith(f"{act} "):
        return f"I need to {clause}"
    said, more = act.split(), clause.split()
    for k in range(min(len(said), len(more) - 1), 0, -1):
        if [stem(w.lower()) for w in said[-k:]] == [stem(w.lower()) for w in more[:k]]:
            return f"I need to {act} {' '.join(more[k:])}"
    first = more[0]
    if first in _ATTACHES or (first == "to" and len(more) > 1 and is_base_verb(more[1])):
        return f"I need to {act} {clause}"
    return None
