"""What separates a group of tools, and what a vague first request for one of them sounds like.

`option_descriptors` gives each option the words of its object phrase that the others do not
share, so a question can offer "a domestic flight, an international flight, or a multi-city
itinerary" without naming a tool; `vague_request` is the gold tool's action at the level its near
neighbours share ("book a flight"), or only the subject when nothing narrower is shared.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from diaforge.data_gen.phrasing.ends import ends_cleanly, stranded_preposition
from diaforge.data_gen.phrasing.english import (
    _BOUNDARY,
    _CLAUSE_DETERMINERS,
    _PARTICLES,
    DETERMINERS,
    _is_plural,
    _lemmas,
    _tokens,
    is_base_verb,
    stopword,
    verb_lemma,
    with_article,
)
from diaforge.data_gen.phrasing.grammar import (
    CLAUSE_OPENERS,
    CLAUSE_SUBJECTS,
    HANGING,
    PREPOSITIONS,
    RELATIVES,
    TIME_LINKS,
    TOOL_WORDS,
    changelog,
    continues_compound,
    count_head,
    nominal,
    np_end,
    relative_clause_at,
    third_person_lemma,
    word_classes,
)
from diaforge.data_gen.phrasing.intents import intent_of, stray_verb, strip_lead_in
from diaforge.data_gen.phrasing.objects import (
    _adjective_list_end,
    _bare_adjective,
    _lower_obj,
    restore_clause_articles,
    tail_articles,
)
from diaforge.data_gen.phrasing.shorthand import keep_case, plain_description, plural_of
from diaforge.schema import Tool
from diaforge.text import content_stems, name_tokens, stem


def _after_preposition(words: Sequence[str], at: int) -> bool:
    """Whether `words[at:]` is the object of a preposition that the words before `at` end with,
    perhaps with its determiner ("one request for | a common area", "one request for a | common
    area")."""
    k = at - 1
    if k > 0 and words[k].lower() in DETERMINERS:
        k -= 1
    return k > 0 and words[k].lower() in PREPOSITIONS


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
    text = plain_description(tool.description or "")
    for sentence in re.split(r"(?<=[A-Za-z0-9)'’\"])[.;!?](?:\s|$)", text):
        toks = _tokens(strip_lead_in(sentence.strip()))
        for k, t in enumerate(toks):
            if t in ",;:()" or stopword(t) or stem(t) in other or not content_stems(t):
                continue
            start = k
            while start > 0 and k - start < 4 and toks[start - 1] not in ",;:()":
                start -= 1
                if toks[start].lower() in _BOUNDARY | {"of"}:
                    break
            end = k + 1
            while end < len(toks) and toks[end] not in ",;:()":
                end += 1
                if end < len(toks) and toks[end] == "," and _bare_adjective(toks[end - 1]):
                    end = _adjective_list_end(toks, end) or end  # "one damaged | , stolen or lost cart"
            piece = toks[start:end]
            while len(piece) > 1 and piece[0].lower() in ("or", "and", "but", "so"):
                piece = piece[1:]
            if piece and start == 0:
                lemma = verb_lemma(piece[0], piece[1] if len(piece) > 1 else "")
                piece = [lemma, *piece[1:]] if lemma else piece
                if lemma:
                    piece = base_after_conjunction(piece)  # "take ... and retrieve the definition"
            cut = next((k for k, w in enumerate(piece) if w.lower() in TOOL_WORDS | _PARAMETER_TALK), None)
            piece = trim_phrase(piece[:cut] if cut is not None else piece, 12)
            if changelog(toks):  # "reopen closed PR" -> reopen the closed PR
                piece = restore_clause_articles(_lower_obj(piece))
            piece = tail_articles(piece)  # "to another slot with same clinician" -> with the same clinician
            while len(piece) > 1 and piece[-1].lower() in _BOUNDARY | {"of"} | DETERMINERS:
                if piece[-1].lower() in PREPOSITIONS - {"of"} and stranded_preposition(piece):
                    break  # "the station the rider is standing at": the clause's own preposition
                piece.pop()
            checked = piece[1:] if start == 0 and piece and is_base_verb(piece[0]) else piece
            if stray_verb(checked) is not None:
                return ""  # "the requester is notified automatically" is a sentence, not a clause
            return " ".join(_lower_obj(piece)).replace(" ,", ",")
    return ""


# Words that talk about the tool's own parameters, not about what it does.
_PARAMETER_TALK = frozenset({"parameter", "parameters", "argument", "arguments"})


def _before_second_verb(words: Sequence[str]) -> list[str]:
    """The words before an and/or that joins a third-person verb (the noun phrase an option is
    offered by ends there)."""
    for k in range(1, len(words) - 2):
        verb, nxt = words[k + 1], words[k + 2].lower()
        joins_verb = (
            words[k].lower() in ("and", "or")
            and (third_person_lemma(verb) or is_base_verb(verb))
            and "VERB" in word_classes(verb)
        )
        if joins_verb and (nxt in DETERMINERS | {"it", "them"} or "NOUN" not in word_classes(verb)):
            return list(words[:k])  # not "the status and details | of an order"
    return list(words)


# Words a verb's object may open with that are no determiner: "and deletes it", "and records why".
_OBJECT_WORDS = frozenset({"it", "them", "why", "how", "what", "when", "where", "whether", "who"})


def base_after_conjunction(words: Sequence[str]) -> list[str]:
    """A second verb joined by and/or put in its base form, as the first one was."""
    out = list(words)
    for k in range(1, len(out) - 1):
        lemma = third_person_lemma(out[k + 1]) if out[k].lower() in ("and", "or") else None
        if not lemma:
            continue
        after = out[k + 2].lower() if out[k + 2 : k + 3] else ""
        gerund = after.endswith("ing") and "VERB" in word_classes(after)  # "and stops | billing"
        # in an order whose object phrase has closed (a preposition or a participle since the verb), a
        # bare noun after it is its object: "analyze text using VADER and returns | sentiment scores"
        # (or an adjective follows it: "... number and returns | relevant information"); a participle
        # after it only where a noun follows ("and releases | reserved stock", not "moulds | used at")
        closed = any(w.lower() in PREPOSITIONS or w.lower().endswith("ing") for w in out[1:k])
        classes = word_classes(after)
        modifier = not after.endswith("ed") or "NOUN" in word_classes(out[k + 3] if out[k + 3 :] else "")
        bare = (closed and bool(classes & {"NOUN", "ADJ"}) and modifier) or classes == {"ADJ"}
        if after in DETERMINERS | _OBJECT_WORDS or gerund or (bare and is_base_verb(out[0].lower())):
            out[k + 1] = lemma
    return out


def _wants_rest(core: Sequence[str], nxt: str) -> bool:
    """Whether the shared words cut from an option's end were part of its clause: the option
    would end on a preposition or a relative word, or on a verb whose object they are."""
    last = core[-1].lower()
    if last in _BOUNDARY | {"of"} | RELATIVES:
        return True
    verb = third_person_lemma(last) or (last if word_classes(last) == {"VERB"} else None)
    return verb is not None and nxt.lower() in DETERMINERS


def _modifier_end(word: str) -> bool:
    """Whether an option cut before a shared head would end on a word that wants that noun: a
    determiner or an adjective ("an existing | booking", "the same | day")."""
    w = word.lower()
    classes = word_classes(w)
    return w in DETERMINERS or ("ADJ" in classes and "NOUN" not in classes)


def _head_word(word: str) -> bool:
    """Whether `word`, after a modifier, can be the head it wants: a word, not a determiner, a
    preposition or a conjunction ("an existing | berthing")."""
    w = word.lower()
    return w[:1].isalnum() and w not in DETERMINERS | PREPOSITIONS | {"and", "or", "but"}


def _compound_rest(words: Sequence[str], cut: int) -> list[str]:
    """The words from `cut` that finish the noun compound a cut split."""
    end = cut
    while end < len(words) and (end == cut or continues_compound(words[end - 1], words[end])):
        end += 1
    return list(words[cut:end])


def _phrase_start(words: Sequence[str], pre: int) -> list[str]:
    """The shared words before `pre` that belong to the noun phrase the option's words end:
    back over modifiers to its determiner (`a pay` before `run`)."""
    k = pre
    while k > 0 and nominal(words[k - 1]) and words[k - 1].lower() not in _BOUNDARY | {"of"}:
        k -= 1
    if k > 0 and words[k - 1].lower() in DETERMINERS:
        k -= 1
    if k > 0 and words[k - 1].lower() in PREPOSITIONS and k + 4 >= pre:
        k = 0  # "a quantity from | an existing | value ...": the phrase is a preposition's object, said whole
    return list(words[k:pre])


def trim_phrase(words: Sequence[str], limit: int) -> list[str]:
    """At most `limit` words, cut back to where a phrase may end: not inside a noun compound,
    not on a determiner, a preposition, "such" or a participle (`ends.ends_cleanly`)."""
    out = list(words[:limit])
    rest = list(words[limit:])
    if rest and len(rest) <= 2 and all(w.lower().strip(".,;:") in PREPOSITIONS | _PARTICLES for w in rest):
        return list(words)  # "... that a batch job signs | in with": the clause's own last words
    if rest and rest[0].lower() in PREPOSITIONS and stranded_preposition([*out, rest[0]]):
        out.append(rest.pop(0))  # "the station the rider is standing | at": the clause's own last word
    if rest:  # a cut inside an example or a clause loses it whole ("such as daily | driving")
        whole = [*out, *rest]
        opened = [
            k
            for k, w in enumerate(out)
            if k > 1
            and (
                _opens_cut_part(w, out[k + 1 : k + 2])
                # "the meal | it is | associated with": a clause whose subject is a pronoun
                or (
                    (w.lower() in CLAUSE_SUBJECTS or w.lower() == "it")
                    and "NOUN" in word_classes(out[k - 1].lower())
                    # a noun, not a verb before its object ("turn | it into ...")
                    and ("VERB" not in word_classes(out[k - 1].lower()) or out[k - 2].lower() in DETERMINERS)
                    and not any(stranded_preposition(out[:j]) for j in range(k + 2, len(out) + 1))
                )
                # "that purchasing has | to resolve", "that the studio | has ...": a relative
                # clause whose verb lost its "to", or that the cut left without a verb
                or (
                    w.lower() in ("that", "which", "who")
                    and (
                        _verb_cut_from_its_to(out, rest)
                        or not any("VERB" in word_classes(x.lower()) for x in out[k + 1 :])
                    )
                )
                # "the station | the rider is", unless the clause ends whole: "the rider is standing at"
                or (
                    w.lower() in _CLAUSE_DETERMINERS
                    and relative_clause_at(whole, k)
                    and not any(stranded_preposition(out[:j]) for j in range(k + 3, len(out) + 1))
                )
            )
        ]
        if opened:
            rest = out[opened[-1] :] + rest
            out = out[: opened[-1]]
    if rest and out[-1].lower() in ("and", "or"):
        rest.insert(0, out.pop())
    shared = len(rest) > 2 and rest[0].lower() in ("and", "or") and "ADJ" in word_classes(rest[1].lower())
    if shared and "ADJ" in word_classes(out[-1].lower()):
        # "under set initial | and final conditions": a modifier cut from the head it shares goes
        # with its phrase, from the preposition that opens it
        at = max((k for k in range(len(out)) if out[k].lower() in PREPOSITIONS), default=0)
        if at > 1:
            rest[:0] = out[at:]
            del out[at:]
    conj = next((k for k, w in enumerate(rest[:4]) if w.lower() in ("and", "or")), None)
    if conj is not None and any(w.endswith(",") for w in out[-6:]):  # "of kilns, glazes | and hours"
        last = np_end(rest, conj + 1)
        if conj + 1 < last <= 5 and (last == len(rest) or not rest[last][:1].isalnum()):
            out += rest[:last]  # a list cut before its last item: when a few words end it, they are said
            del rest[:last]
    _back_to_clean_end(out, rest)
    commas = [k for k, w in enumerate(out) if w.endswith(",")]
    if commas and any(w.lower() in ("and", "or") for w in rest[:4]):
        at = max((k for k in range(commas[-1]) if out[k].lower() in PREPOSITIONS), default=0)
        if at > 1:  # else the list goes whole, from the preposition that opens it
            rest[:0] = out[at:]
            del out[at:]
            _back_to_clean_end(out, rest)
    if rest and rest[0].lower() == "of" and count_head(out[-1]):
        k = len(out)  # "based on number | of bedrooms, ...": a bare head cut from its "of" goes whole
        while k > 1 and nominal(out[k - 1]) and out[k - 1].lower() not in DETERMINERS:
            k -= 1
        if 1 < k < len(out) and out[k - 1].lower() in PREPOSITIONS:
            rest[:0] = out[k - 1 :]
            del out[k - 1 :]
            _back_to_clean_end(out, rest)
    return out


def _back_to_clean_end(out: list[str], rest: list[str]) -> None:
    """Moves words from the end of `out` to the front of `rest` until `out` may end there."""
    while (
        len(out) > 1
        and (
            not ends_cleanly(out)
            or (rest and continues_compound(out[-1], rest[0]))
            or out[-1].endswith(",")
            or _verb_cut_from_its_to(out, rest)
            # "to track | a vulnerability": an infinitive cut from its object
            or (
                len(out) > 2
                and out[-2].lower() == "to"
                and is_base_verb(out[-1].lower())
                and rest[:1] != []
                and rest[0].lower() in DETERMINERS
            )
        )
    ):
        rest.insert(0, out.pop())


def _verb_cut_from_its_to(out: Sequence[str], rest: Sequence[str]) -> bool:
    """Whether the cut falls inside a verb and its infinitive ("has | to resolve", "has to |
    resolve", "needs | to approve"): the verb says nothing without it."""
    joined = [w.lower() for w in (*out[-2:], *rest[:2])]
    at = len(out[-2:])  # where the cut falls in `joined`
    return any(
        joined[i + 1] == "to"
        and "VERB" in word_classes(joined[i])
        and is_base_verb(joined[i + 2])
        and i < at <= i + 2
        for i in range(len(joined) - 2)
    )


def _opens_cut_part(word: str, after: Sequence[str]) -> bool:
    """Whether `word` opens an example or a clause that a cut after it would leave unfinished
    ("such as daily | driving", "when the first | one breaks down", "before a driver | has picked
    it up"); a time word only where a determiner or a pronoun follows it (not "before noon")."""
    w = word.lower()
    if w in HANGING or w == "such" or w in CLAUSE_OPENERS:
        return True
    nxt = after[0].lower() if after else ""
    return w in TIME_LINKS and (nxt in DETERMINERS or nxt in CLAUSE_SUBJECTS or nxt == "it")


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
    # to the tail's clause comma (a token of its own; a list's comma is kept on its word)
    seqs = {n: f"{i.obj} {i.tail.split(' ,')[0]}".split() for n, i in intents.items()}
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
        end = cut
        if head and head in s[cut:] and core and head not in core:
            end = cut + s[cut:].index(head) + 1
            core = core + s[cut:end]  # "a privacy impact assessment"
        if core and end < len(s) and continues_compound(core[-1], s[end]):
            core = core + _compound_rest(s, end)  # "an existing to-do | list", "unique employee | id"
        elif core and end < len(s) and _modifier_end(core[-1]) and _head_word(s[end]):
            core = core + _compound_rest(s, end)  # "of an existing | booking": the head both share
        elif core and end < len(s) and _wants_rest(core, s[end]):
            core = (
                core + s[end:]
            )  # "that complies with | the travel policy", "even though it breaks | the ..."
        if pre and core and (_starts_clause(core[0]) or _after_preposition(s, pre)):
            # after a shared preposition the rest is its object, not the verb's: "raise one request
            # for | a common area", never "raise a common area"
            shared = s[:pre]  # "a hotel room ... as a long stay", "a card transaction you did not make"
            if len(shared) > 6:
                shared = shared[: shared.index(head) + 1] if head in shared[:6] else shared[:3]
            if len(core) == 1 and s[pre - 1].lower() in _BOUNDARY and shared[-1] != s[pre - 1]:
                shared = [*shared, s[pre - 1]]  # "the completion status | for you", not "... status you"
            elif len(shared) < pre and _after_preposition(s, pre):
                link = s[pre - 2 : pre] if s[pre - 1].lower() in DETERMINERS else s[pre - 1 : pre]
                shared = [*shared, *link]  # "the completion status | for | each of your reports"
            core = [*shared, *core]
        elif pre and core and s[pre - 1].lower() in DETERMINERS:
            core = [s[pre - 1], *core]
        elif pre and core and nominal(s[pre - 1]) and nominal(core[0]):
            core = [*_phrase_start(s, pre), *core]  # "a pay | run", "a pay | item"
        if len(verbs) > 1 and pre and core and core[0] != s[0]:
            core = list(s)  # another verb needs the whole object: not "modify a pending order" for items
        if len(verbs) == 1:
            core = _before_second_verb(core)  # "text sentiment using VADER | and returns scores"
        whole, core = core, trim_phrase(core, 14)
        after = whole[len(core)].lower() if len(whole) > len(core) else ""
        if len(core) > 3 and core[-2].lower() in ("and", "or") and after in DETERMINERS | {"it", "them"}:
            core = core[:-2]  # the cut left a second verb without its object: "... rate | and emails | the"
        phrase = " ".join(core)
        if intents[o.name].source == "name":
            phrase = ""  # a phrase read off the identifier would read the name out
        elif len(verbs) > 1:
            phrase = f"{intents[o.name].verb} {phrase or intents[o.name].obj}"
            phrase = " ".join(base_after_conjunction(phrase.split()))  # "... and notify the carrier"
        out[o.name] = phrase
    counts = Counter(out.values())
    for o in options:
        d = out[o.name]
        if not d or counts[d] > 1 or len(d.split()) == 1 and d.lower() in DETERMINERS | _BOUNDARY:
            clause = distinguishing_clause(o, options)
            i = intents[o.name]  # from a name: its words after the object tell it apart ("by name")
            said = i.obj if len(verbs) == 1 else i.phrase  # after a shared verb, the object only
            named = f"{said} {i.tail}".strip() if i.source == "name" else i.phrase
            out[o.name] = f"the one {clause}" if clause else named
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
    head = keep_case(g.head)  # "PR", never "pr"
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
        compound = [keep_case(n) for n in g.nouns[-1:]]
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
    said: dict[str, str] = {}  # a stem as a head is written ("PR", "report")
    for c in candidates:
        h = keep_case(intent_of(c, prefixes).head)
        if h and h.isalpha() and h.lower() not in TOOL_WORDS:
            heads[stem(h.lower())] += 1
            said.setdefault(stem(h.lower()), h)
    g = keep_case(intent_of(gold, prefixes).head).split("/")[0]  # "return/collection": returns
    g = "" if g.lower() in TOOL_WORDS else g
    shared = [h for h, n in heads.most_common() if n > 1]
    if g and stem(g.lower()) in shared:
        return f"about {plural_of(g)}"
    lob = str(gold.metadata.get("line_of_business") or "").strip()
    if lob:
        return f"in {lob}"
    if shared:
        return f"about {plural_of(said[shared[0]])}"
    return f"about {plural_of(g)}" if g else "at work"
