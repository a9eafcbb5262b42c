"""The one path from a parsed description to the words the scripted agents say .

Every phrase a scripted agent builds from a catalogue goes through here: a tool's action (the
teacher's "To {act}, I need ...", the user's goal and restated need, the refusal's offers), the
options of a disambiguating question, the user's choice among them, and the name of an argument
it asks for. Each is rendered from the parse (`intents`, `options`) and then read back with the
same checks the validator runs (`sound`: no broken phrase of any kind, no template debris, no
determiner before a verb, no tool name, and a last word a phrase may end on). A phrase that fails
falls back to a plain wording that is always correct: "the option that lists the payment runs of
a company code" (as a noun phrase), "use the option that ..." (as a verb phrase), "the value for
within days" (an argument whose name opens with a preposition).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diaforge.data_gen.phrasing.broken import broken_phrases
from diaforge.data_gen.phrasing.checks import artefacts, determiner_before_verb, names_read_out, verb_only
from diaforge.data_gen.phrasing.ends import ends_cleanly
from diaforge.data_gen.phrasing.english import DETERMINERS, _is_plural, _lemmas, is_base_verb
from diaforge.data_gen.phrasing.grammar import (
    CONJUNCTIONS,
    PREPOSITIONS,
    TOOL_WORDS,
    name_verb,
    nominal,
    third_person,
    word_classes,
)
from diaforge.data_gen.phrasing.intents import Intent, catalogue_prefixes, intent_of
from diaforge.data_gen.phrasing.intents import sure as parse_sure
from diaforge.data_gen.phrasing.judging import active_judge, judged
from diaforge.data_gen.phrasing.options import base_after_conjunction, option_descriptors, shared_verb
from diaforge.data_gen.phrasing.readings import MAX_WORDS, readings, unsure
from diaforge.data_gen.phrasing.shorthand import (
    acronym_case,
    keep_case,
    plural_of,
    shorthand_left,
    words_written_out,
)
from diaforge.schema import Tool
from diaforge.text import humanise_param, name_tokens, param_tokens


def sound(phrase: str, tools: Sequence[Tool] = (), *, noun_reading: bool = False) -> bool:
    """Whether a rendered phrase reads as written by a person: none of the validator's findings
    (`broken_phrases`, `artefacts`, `determiner_before_verb`, a tool name read out) and a last
    word a phrase may end on. A phrase that opens with a base verb is read after "to", as the
    templates say it ("to take a query and retrieves ..." is caught). With `noun_reading`, a
    word the tools' descriptions open with as a verb may be read as a noun after a determiner
    ("look up the damage report" for "Damage report for goods ..."): the fluency judge weighs
    that reading against the verb one instead of the rules ruling it out."""
    words = phrase.split()
    said = f"to {phrase}" if words and is_base_verb(words[0]) else phrase
    waived = {"verb_read_as_noun"} if noun_reading else set()
    return bool(
        words
        and ends_cleanly([w.strip(".,;:?!") for w in words])
        and not [k for k, _ in broken_phrases(said, tools) if k not in waived]
        and not artefacts(phrase)
        and (noun_reading or not determiner_before_verb(phrase, tools))
        and not names_read_out(phrase, tools)
        and not shorthand_left(phrase)  # "close PR w/o merging": said aloud, it is "without"
    )


def with_tool(tool: Tool, tools: Sequence[Tool]) -> list[Tool]:
    """`tools`, with `tool` added when it is not among them: a phrase drawn from a tool's own
    description is read against that description too (the tool a user needs in a retrieval miss
    is no candidate, and "a lost corporate card" ends a phrase in its description even where a
    candidate says "a corporate card transaction")."""
    return list(tools) if any(t.name == tool.name for t in tools) else [*tools, tool]


# A last word of a tool's name that says how it acts, not on what, and how it is said after a noun.
_MANNER = {"bulk": "in bulk", "batch": "in a batch", "batches": "in batches"}


def fallback_option(tool: Tool, prefixes: frozenset[str] = frozenset(), tools: Sequence[Tool] = ()) -> str:
    """A plain noun phrase for a tool that is always correct: "the option that lists the payment
    runs of a company code" from its intent, else "the option about <its nouns>". Where another of
    `tools` would be said the same way, the name's words after its first preposition tell them
    apart (`search_rx_by_patient`: "the option about Rxs by patient", `get_rx`: "... about Rxs")."""
    said = _plain_fallback(tool, prefixes, tools)
    toks = name_tokens(tool)
    cut = next((k for k, w in enumerate(toks) if k and w in PREPOSITIONS), len(toks))
    if cut == len(toks):
        return said  # nothing to tell it apart by: the others' fallbacks need not be read
    twin = any(t.name != tool.name and _plain_fallback(t, prefixes, tools) == said for t in tools)
    return f"{said} {' '.join(toks[cut:])}" if twin else said


def _plain_fallback(tool: Tool, prefixes: frozenset[str], tools: Sequence[Tool]) -> str:
    tools = with_tool(tool, tools)
    intent = intent_of(tool, prefixes)
    if intent.source != "name" and intent.obj and parse_sure(intent):
        phrase = f"the option that {third_person(intent.verb)} {intent.obj}"
        if sound(phrase, tools):
            return phrase
    toks = name_tokens(tool)
    cut = next((k for k, w in enumerate(toks) if k and w in PREPOSITIONS), len(toks))  # not "by name"
    said = {w.lower(): w for w in re.findall(r"[A-Za-z][\w-]*", tool.description or "")}
    nouns = [w for w in toks[:cut] if _lemmas(w).keys() & {"NOUN", "ADV"} == {"NOUN"} and w not in TOOL_WORDS]
    if nouns[:1] == toks[:1] and cut > 1 and is_base_verb(toks[0]):
        nouns = nouns[1:]  # `find_vx`: the verb that opens the name is no topic
    # without a dictionary noun, a word no dictionary knows after the first is shorthand for a
    # thing, said as the description writes it (`get_rx`: "the option about Rxs")
    nouns = nouns or [w for w in toks[1:cut] if w.isalpha() and len(w) > 1 and not _lemmas(w)]
    if nouns:  # the last noun only: the name's words in a row would read the name out
        manner = _MANNER.get(nouns[-1]) if len(nouns) > 1 else None
        last = nouns[-2] if manner else nouns[-1]  # "order_extra_linen_bulk": linens, in bulk
        last = plural_of(keep_case(said.get(last, last)))
        return f"the option about {last} {manner}" if manner else f"the option about {last}"
    words = name_tokens(tool)
    if words and word_classes(words[0]) == {"VERB"}:
        return f"the option that {third_person(words[0])}"  # `Translate`: "the option that translates"
    head = intent.head.lower()
    if head.isalpha() and head not in TOOL_WORDS and ("NOUN" in _lemmas(head) or not _lemmas(head)):
        # `Wiki`, "Wikipedia search API ...": the head of what the description names, with the
        # words before it as the description writes them ("Wikipedia searches")
        plural = plural_of(head)
        obj = intent.obj.split()
        at = next((k for k, w in enumerate(obj) if w.lower() == head), 0)
        before = [said.get(w.lower(), w) for w in obj[:at] if w.lower() not in DETERMINERS | TOOL_WORDS]
        return f"the option about {' '.join([*before, plural])}"
    return "the other option"


def action(tool: Tool, prefixes: frozenset[str] = frozenset(), tools: Sequence[Tool] = ()) -> str:
    """What a tool does, as a verb phrase: its intent when that reads well, else "use" and the
    plain noun phrase of `fallback_option`. With a fluency judge in use (`judging.judging_with`),
    the intent and the description's other `readings` that read well by rule are candidates,
    and the judge keeps the one it prefers, or the fallback when it flags every one."""
    tools = with_tool(tool, tools)
    intent = intent_of(tool, prefixes)
    phrase = intent.phrase
    candidates = [phrase] if parse_sure(intent) and sound(phrase, tools) else []
    sure = active_judge() is None or not unsure(tool, prefixes)
    if not sure:  # without a judge, or where the parse is sure, the rule reading alone (as before)
        # the rule reading with its tail too: the other readings run on to the clause's end, and
        # the judge weighs like with like ("find reviews for a specific game" against "look up
        # the find reviews for a specific game", never the bare "find reviews" against that)
        named = _name_object_words(tool)
        whole = _with_tail(intent) if _verb_of(intent.verb) not in named else ""
        if whole and parse_sure(intent) and sound(whole, tools):
            candidates.append(whole)
        candidates += [
            r
            for r in readings(tool, prefixes)
            if r not in candidates and sound(r, tools, noun_reading=True) and _verb_of(r) not in named
        ]
    return judged("action", candidates, f"use {fallback_option(tool, prefixes, tools)}", sure=sure)


def _name_object_words(tool: Tool) -> frozenset[str]:
    """The words of the tool name's object after the name's own verb (`list_my_open_cases`: my,
    open, cases; `get_purchasing_spend_summary`: purchasing, spend, summary), less the verb
    itself: where a description opens with one of them, it names a thing, and a verb reading of
    it ("open cases assigned to you", "spend by category") is not offered."""
    lead = [w.lower() for w in name_tokens(tool)]
    at = next((k for k, w in enumerate(lead) if name_verb(w)), None)
    return frozenset() if at is None else frozenset(lead[at + 1 :]) - {lead[at]}


def _verb_of(phrase: str) -> str:
    return phrase.split()[0].lower() if phrase.split() else ""


def _with_tail(intent: Intent) -> str:
    """The intent's verb phrase and its tail, when it has one and the whole is no longer than a
    reading may be (`readings.MAX_WORDS`, three words more for "look up the", which a verb reading
    of the same clause does without); else empty."""
    whole = f"{intent.phrase} {intent.tail}".strip() if intent.tail else ""
    return whole if len(whole.split()) <= MAX_WORDS + 3 else ""


def action_renderings(tools: Sequence[Tool]) -> list[str]:
    """Every verb phrase `action` may weigh for the tools of a catalogue whose parse is `unsure`
    (the tool's intent, its other readings and its fallback), for a judge to score in full
    batches before a run."""
    prefixes = catalogue_prefixes(tools)
    out: list[str] = []
    for t in tools:
        if unsure(t, prefixes):
            intent = intent_of(t, prefixes)
            out += [
                intent.phrase,
                _with_tail(intent),
                *readings(t, prefixes),
                f"use {fallback_option(t, prefixes, [t])}",
            ]
    return [r for r in dict.fromkeys(out) if r]  # an intent without a tail gives no whole reading


def option_phrases(
    options: Sequence[Tool], prefixes: frozenset[str] = frozenset(), tools: Sequence[Tool] = ()
) -> tuple[str | None, dict[str, str]]:
    """How a question offers each option: `(verb, noun phrases)` when the options share a verb and
    each is told apart by a noun phrase that reads well ("book" + "a domestic flight"), else
    `(None, verb phrases)` ("cancel an order that has not shipped yet"), each verb phrase checked
    and, when it does not read well, the option's `action`."""
    tools = tools or options
    descriptors = option_descriptors(options, prefixes)
    verb = shared_verb(options, prefixes)
    nps: dict[str, str] = {}
    vps: dict[str, str] = {}
    for o in options:
        d = descriptors[o.name]
        intent = intent_of(o, prefixes)
        if d.startswith("the one "):
            clause = d[8:]
            head = clause.split()[0]
            # "the user id parameter ..." runs on, and so does a clause that opens with a verb of its
            # own ("report a broken lamp | report that a lamp is out") or an "of" that names the
            # object's head again ("buy a data package | of additional package")
            again = head == "of" and bool(intent.head) and intent.head.lower() in clause.lower().split()
            joins = (
                head not in DETERMINERS
                and word_classes(head) != {"NOUN"}
                and not is_base_verb(head)
                and not again
            )
            vp = f"{intent.phrase} {clause}" if joins else intent.phrase  # never two phrases run together
        elif verb and d and not d.startswith(f"{verb} "):
            nps[o.name] = d
            vp = f"{verb} {d}"
        else:
            vp = d or intent.phrase
        vp = " ".join(base_after_conjunction(vp.split()))  # "schedule a move-out and stop billing"
        vps[o.name] = judged(
            "option",
            [vp] if parse_sure(intent) and sound(vp, tools) else [],
            action(o, prefixes, tools),
            sure=active_judge() is None or not unsure(o, prefixes),
        )
    if verb and len(nps) == len(options) and all(vps[n] == f"{verb} {d}" for n, d in nps.items()):
        return verb, nps
    return None, vps


def _participle_word(word: str) -> bool:
    verbs = _lemmas(word).get("VERB")
    return bool(verbs) and verbs[0] != word and word.endswith(("ing", "ed"))


def choice(gold: Tool, options: Sequence[Tool], phrase: str, prefixes: frozenset[str] = frozenset()) -> str:
    """The user's words for the option it wants: `phrase` when it reads well, else the plain
    noun phrase of `fallback_option`."""
    return judged(
        "choice",
        [phrase] if sound(phrase, with_tool(gold, options)) else [],
        fallback_option(gold, prefixes, options),
        sure=active_judge() is None or not unsure(gold, prefixes),
    )


_SOURCE = {"from": "source", "to": "target", "since": "start", "until": "end", "till": "end"}
_DATE_SOURCE = {"from": "start", "to": "end", "since": "start", "until": "end", "till": "end"}


# Units a parameter name may end with (`weight_kg`, `timeout_ms`, `price_usd`): said "weight in kg".
_UNIT_WORDS = (
    "kg g mg lb lbs oz km cm mm mi ft yd ml kwh mph kmh ms sec secs mins hrs pct px dpi kb mb gb tb "
    "usd eur gbp jpy chf cad aud inr cny"
)
_UNITS = frozenset(_UNIT_WORDS.split())
_CURRENCIES = frozenset(["usd", "eur", "gbp", "jpy", "chf", "cad", "aud", "inr", "cny"])
_ASIDE = re.compile(r"\s*\(([^()]*)\)")


def param_noun(key: str, spec: dict | None = None) -> str:
    """`_param_noun`, with a unit the name ends with said after "in" (`weight_kg` -> `weight in
    kg`, `weight (kg)` -> `weight in kg`; an aside in brackets that names no unit is dropped) and
    each word the argument's description spells as an acronym in capitals (`pr_number` + "PR
    number." -> `PR number`)."""
    unit = ""
    m = _ASIDE.search(key)
    if m:
        inside = m.group(1).strip().lower()
        unit = inside if inside in _UNITS else ""
        key = _ASIDE.sub("", key).strip() or key
    toks = param_tokens(key)
    if not unit and len(toks) > 1 and toks[-1] in _UNITS:
        unit = toks[-1]
        key = "_".join(toks[:-1])
    noun = words_written_out(_spoken(_param_noun(key, spec)))  # "qty" -> "quantity"
    if unit:
        noun = f"{noun} in {unit.upper() if len(unit) == 3 and unit in _CURRENCIES else unit}"
    return acronym_case(noun, str((spec or {}).get("description") or ""))


def param_spellings(key: str, spec: dict | None = None) -> list[str]:
    """The ways a turn may name the argument `key` (its schema `spec`), longest first: the name
    the scripted agents say (`param_noun`: "the needed-by date", "weight in kg"), the humanised
    name ("needed by") and the key itself. The user-proxy and the when-to-call reader both read
    a question's arguments by these (`names_param`)."""
    names = (param_noun(key, spec), humanise_param(key), key)
    return sorted({n for n in names if n.strip()}, key=len, reverse=True)


def fold(text: str) -> str:
    """Case folded, a hyphen read as a space ("needed-by date" names `needed_by`)."""
    return text.lower().replace("-", " ")


def names_param(text: str, key: str, spec: dict | None = None) -> bool:
    """Whether `text` names the argument `key` by any of its `param_spellings` (case folded,
    hyphens read as spaces)."""
    low = fold(text)
    return any(fold(n) in low for n in param_spellings(key, spec))


_NUMBER_WORDS = frozenset({"no", "nr", "num"})


def _spoken(noun: str) -> str:
    """An argument's name as said aloud: a last word "no"/"num" is "number" (`invoiceNo`), a
    number after a word its own word (`line1` -> "line 1"), a word without vowels an acronym
    (`mrn` -> "MRN")."""
    words = noun.split()
    if len(words) > 1 and words[-1].lower() in _NUMBER_WORDS:
        words[-1] = "number"
    out = []
    for w in words:
        w = re.sub(r"(?<=[a-z]{2})(?=\d+$)", " ", w)  # "line1" -> "line 1"
        if w.isalpha() and w.islower() and 2 <= len(w) <= 5 and not re.search(r"[aeiouy]", w):
            w = w.upper()
        out.append(w)
    return " ".join(out)


def _param_noun(key: str, spec: dict | None = None) -> str:
    """How the scripted agents name an argument: `humanise_param`, unless the name opens with a
    preposition or is a single letter, which no person says after "the": `from_currency` ->
    `source currency`, `to_date` -> `end date`, `within_days` -> `number of days`, `per_page` ->
    `number per page`, `on_off_command` -> `on/off command`, `a` -> `a-value`, `to` ->
    `to-value`, and any other -> `value for after ID`. A flag named by a verb
    (`include_dissent`, a boolean `spec`) is `choice on whether to include dissent`; one named by
    an adjective (`enabled`, `anonymous`) is `enabled flag`."""
    human = humanise_param(key)
    if (spec or {}).get("type") == "boolean" and human.split() and verb_only(human.split()[0]):
        return f"choice on whether to {human}"  # never "the include dissent", "What is whether to ..."
    toks = param_tokens(key)
    flag = (spec or {}).get("type") == "boolean" and len(toks) == 1
    classes = word_classes(toks[0]) if toks else frozenset()
    if flag and "NOUN" not in classes and ("ADJ" in classes or toks[0].endswith("ed")):
        return f"{human} flag"  # `enabled`, `anonymous`: never "What is the enabled?"
    if not toks:
        return human
    words = human.split()
    first = toks[0]
    if len(toks) > 1 and toks[-1] in PREPOSITIONS and first not in PREPOSITIONS:
        text = f"{(spec or {}).get('description') or ''} {(spec or {}).get('format') or ''}".lower()
        kind = "date" if re.search(r"\b(?:date|day|yyyy)", text) else "value"
        return f"{'-'.join(words)} {kind}"  # `available_from`: "the available-from date", never "... from?"
    if len(toks) == 1 and (len(first) == 1 or first in PREPOSITIONS | CONJUNCTIONS | DETERMINERS):
        return f"{human}-value"  # "the a-value", "the to-value": never "the a", "the to"
    if first not in PREPOSITIONS:
        return human
    rest = words[1:]
    if len(toks) > 2 and toks[1] in PREPOSITIONS:
        return " ".join([f"{first}/{toks[1]}", *words[2:]])  # on_off_command -> on/off command
    if rest and first in _SOURCE and nominal(rest[-1]):
        date = rest[-1].lower() in ("date", "time", "datetime", "timestamp", "day", "year", "month")
        return " ".join([(_DATE_SOURCE if date else _SOURCE)[first], *rest])
    if rest and first == "within" and _is_plural(rest[-1]):
        return f"number of {' '.join(rest)}"
    if rest and first == "per":
        return f"number per {' '.join(rest)}"
    return f"value for {human}"


def param_item(tool: Tool, key: str, hint: str = "") -> str:
    """An argument as the teacher asks for it: "the cost center ID", "the start date
    (YYYY-MM-DD)", "the choice on whether to include dissent" (a flag named by a verb)."""
    return f"the {param_noun(key, tool.properties.get(key))}{f' ({hint})' if hint else ''}"


__all__ = [
    "action",
    "action_renderings",
    "choice",
    "fallback_option",
    "option_phrases",
    "param_item",
    "param_noun",
    "sound",
    "with_tool",
]
