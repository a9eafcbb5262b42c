"""Lead-ins that say how to use a tool before what it does, and the sentence without them.

"Use this to cancel an order", "This tool cancels ...", "Allows you to cancel ...", "A function that
returns ...": `strip_lead_in` gives what follows such a lead-in where a verb opens it, and the
sentence as written where none does ("The service desk queue ..." keeps its words). `summary`
removes most preambles before the parse; these are the ones the parse still meets in a clause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from diaforge.data_gen.phrasing.english import _gerund_base, _lemmas, _tokens, is_base_verb, verb_lemma

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
        r"|will|can|lets you|allows you to|enables you to|helps you to|helps you|helps to|for|to|that|which"
        r"|allows users to|lets users|enables users to))?\s+",
        rf"^(?:this is\s+)?(?:an?\s+)?{_TOOL_WORDS}\s+(?:that|which|to|for|used to|used for)\s+",
        # "lets you export", "helps users find"; "allows" and "enables" take "to" ("Enables a user group" acts)
        r"^(?:lets|helps)\s+(?:you|users|the user|a user|clients|callers)(?:\s+to)?\s+",
        r"^(?:allows|enables)\s+(?:you|users|the user|a user|clients|callers)\s+to\s+",
        r"^(?:is\s+)?(?:used|designed|intended)\s+(?:to|for)\s+",
        r"^(?:can be used to|helps to|represents an? (?:request|call) to|does (?:two|three|four) things\s*:(?:\s*\(?[a1][).])?)\s*",
        r"^to\s+",  # what `summary` leaves of a preamble before a word that can be a noun
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
            gerund = bool(toks) and toks[0].lower().endswith("ing") and "VERB" in _lemmas(toks[0].lower())
            if toks and (_opens_with_verb(toks) or (gerund and m.group(0).lower().rstrip().endswith("for"))):
                # "The service desk queue ..." keeps its words; "API for opening a ..." loses its lead-in
                sentence = rest
                break
        else:
            return sentence
    return sentence


def _opens_with_verb(tokens: Sequence[str]) -> bool:
    nxt = tokens[1] if len(tokens) > 1 else ""
    return bool(verb_lemma(tokens[0], nxt) or is_base_verb(tokens[0]) or _gerund_base(tokens[0]))


__all__ = ["strip_lead_in"]
