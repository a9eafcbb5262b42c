"""Plain English about tools, for the scripted agents and the rule validators.

A tool's *intent* is read from its description (first sentence), not from the first word of its
identifier: "Books a domestic flight for an employee through the agency" gives the verb `book`
and the object `a domestic flight`. Descriptions that open with a noun phrase ("Current exchange
rate between two currencies", "Whether a supplier is blocked") become look-ups. Only when a tool
has no usable description does the name speak, and then without its domain or numeric prefixes
(`fleet_`, `fn_1126_`). Verb lemmas come from `lemminflect`, articles from `inflect`.

The package, in reading order (each module imports only those before it):

* `english`: word helpers (verb lemmas, articles, number) and the closed word classes;
* `summary`: what a description says the tool does, and nothing else: the first paragraph
  without markup, docstring sections, bullets, tags, routes, instructions about using the tool
  and preambles ("Use this tool to", "Is used to", "Allows the caller to"), a gerund opening in
  the imperative ("Fetching invoices" -> "fetch invoices");
* `shorthand`: what the parse reads of a description: asides in brackets removed, common
  abbreviations written out ("w/o" -> without, "e.g." -> for example), an arrow a clause break;
  an acronym's case and plural ("PR" -> "PRs");
* `grammar`: the parse the rest renders from: a word's classes from the `lemminflect`
  lexicon and closed classes, whether a description opens with a verb (a noun compound such as
  "Damage report for ..." does not; a changelog line such as "close PR without merging" does),
  where a noun phrase ends;
* `ends`: `ends_cleanly`, where a phrase may end (never on a word that wants what a cut took:
  "options to include", "contributed to within", "based on his");
* `objects`: the object phrase after a verb (where it ends, its head noun), and the articles a
  changelog line drops said again ("merge PR into target branch" -> "merge the PR into the
  target branch");
* `anchors`: the tool's name as evidence in a sentence: a light verb gives way to the noun of
  action the name says ("Initiates the tender of ..." -> "tender ..."), a means clause is the
  action when only it shares a word with the name;
* `leadins`: `strip_lead_in`, a clause without a lead-in about using the tool ("This tool
  returns ...", "API to search places ...") where a verb follows it;
* `intents`: `intent_of`, a tool's verb and object, from any description style;
* `options`: `option_descriptors` says what separates a group of tools (what is left of their
  object phrases once the words they all share at the start and the end are removed), so a
  question can offer "a domestic flight, an international flight, or a multi-city itinerary"
  without naming a tool; `vague_request` is what a user says first: the gold tool's action at
  the level its near neighbours share ("book a flight"), or only the subject when nothing
  narrower is shared;
* `checks`: what the rule validator rejects: a tool identifier or its word-for-word humanised
  form in a message (`names_read_out`), template debris such as "a of" or unfilled braces
  (`artefacts`), and the words a description style or another trade leaves behind;
* `broken`: `broken_phrases`, the nine kinds of phrase no person writes, read with the parse;
* `judging`: the kinds of phrase a fluency judge reads, the sentence each is read in, the judge in
  use for a run (none by default) and the log of what it flagged in one dialogue;
* `readings`: the other verb phrases an unsure description can be read as ("Returns whether ..."
  -> "check whether ...", "Damage report ..." -> "look up the damage report");
* `render`: the one path every phrase of the scripted agents takes, checked with `broken` and the
  checks above, ranked by the fluency judge where the parse is unsure, with a plain fallback
  ("the option that lists ...", "the number of days").

The wording banks (`train` for training corpora, `heldout` for the evaluation benchmark and its
user-proxy, with no template in common) are in `diaforge.data_gen.wording`.
"""

from __future__ import annotations

from diaforge.data_gen.phrasing.checks import (
    artefacts,
    catalogue_terms,
    contradicting_verbs,
    determiner_before_verb,
    foreign_trade_words,
    names_read_out,
    trade_words,
    verb_only,
)
from diaforge.data_gen.phrasing.english import (
    DETERMINERS,
    article,
    cap,
    deverbal,
    first_sentence,
    in_user_voice,
    is_base_verb,
    is_noun,
    stopword,
    verb_lemma,
    with_article,
)
from diaforge.data_gen.phrasing.intents import (
    LOOKUP_VERBS,
    Intent,
    catalogue_prefixes,
    intent_of,
    strip_lead_in,
)
from diaforge.data_gen.phrasing.options import (
    distinguishing_clause,
    option_descriptors,
    shared_verb,
    subject_of,
    vague_request,
)

__all__ = [
    "DETERMINERS",
    "LOOKUP_VERBS",
    "Intent",
    "article",
    "artefacts",
    "cap",
    "catalogue_prefixes",
    "catalogue_terms",
    "contradicting_verbs",
    "determiner_before_verb",
    "deverbal",
    "distinguishing_clause",
    "first_sentence",
    "foreign_trade_words",
    "in_user_voice",
    "intent_of",
    "is_base_verb",
    "is_noun",
    "names_read_out",
    "option_descriptors",
    "shared_verb",
    "stopword",
    "strip_lead_in",
    "subject_of",
    "trade_words",
    "vague_request",
    "verb_lemma",
    "verb_only",
    "with_article",
]
