"""How a user says values in a sentence: `phrase_values` fills the templates with values as
`diaforge.saying.render_value` writes them.

The scripted user-proxy states the gold values with the templates of `VALUE_PHRASES`; the
scripted assistant reads them back with `diaforge.data_gen.values.extraction.extract_value`. The contract,
held by property tests: for every generated value ``v``,
``extract_value(phrase_with(render_value(v)), name, spec) == (True, v)`` for every template, also
when one sentence carries several parameters.
"""

from __future__ import annotations

import random
import re

from diaforge.text import humanise_param

VALUE_PHRASES: list[str] = [
    "the {name} is {value}",
    "{name}: {value}",
    "use {value} for the {name}",
    "{value} as the {name}",
    "the {name} should be {value}",
    "set the {name} to {value}",
]
"""How a value is said, shared by the scripted user-proxy (which fills them) and the scripted
assistant (which reads them back with `extract_value`). ``{name}`` is `humanise_param` of the key,
``{value}`` is `render_value` of the value."""

# Templates where the value follows the name: the only ones used for open-ended values (lists,
# JSON), which also end their sentence so that their extent is unambiguous.
_FORWARD_PHRASES = [p for p in VALUE_PHRASES if p.index("{name}") < p.index("{value}")]
# A yes or a no is said after its name ("government official: no"), never "no as the government
# official" or "use yes for the flag".
_YES_NO_PHRASES = ["{name}: {value}", "set the {name} to {value}"]
_OPENERS = ("", "", "", "Sure, ", "Okay, ", "Of course, ")
_VALUE_FIRST_LEADS = ("go with ", "please take ", "let's go with ")


def mask_quotes(text: str) -> str:
    """`text` with the inside of every quoted span blanked out (same length), so that names and
    delimiters inside free text are never taken for the sentence's own."""
    return re.sub(
        r'"[^"]*"|“[^”]*”', lambda m: m.group(0)[0] + "\x00" * (len(m.group(0)) - 2) + m.group(0)[-1], text
    )


def _open_ended(rendered: str) -> bool:
    masked = mask_quotes(rendered)
    return bool(re.search(r"[\s,]", masked)) or masked[:1] in ("[", "{")


def _is_plural(human: str) -> bool:
    """Whether a parameter's name takes "are": its head noun is plural ("damaged units"); the
    head of "number of days" is "number", and of "weight in lbs" is "weight": they take "is"."""
    head = re.split(r" (?:of|in|per|for|from|to|on|at|by|with) ", human)[0].split()
    last = head[-1].lower() if head else ""
    return last.endswith("s") and not last.endswith(("ss", "us", "is"))


plural_name = _is_plural


def phrase_values(pairs: list[tuple[str, str]], rng: random.Random, *, reply: bool = True) -> str:
    """One or more sentences that state each ``(parameter, rendered value)`` pair with a template
    of `VALUE_PHRASES` (the parameter is humanised; already humanised names are fine), e.g.
    ``The employee ID is EMP123456, the start date is 2026-02-03 and the reason is "quarterly
    onboarding refresher".``

    Clauses are joined with ``, `` and a final `` and ``. A value that is open-ended (a list or
    JSON) is stated after its name and ends its sentence, so its extent is never ambiguous. A
    reply may open with "Sure, " or "Of course, "; with `reply` false (values volunteered in a
    first message, where nobody asked) it never does.
    """
    closed: list[tuple[str, bool]] = []
    open_: list[tuple[str, bool]] = []
    for name, value in pairs:
        human = name if any(c in name for c in " /-") else humanise_param(name)  # already said
        is_open = _open_ended(value)
        template = rng.choice(_FORWARD_PHRASES if is_open else VALUE_PHRASES)
        template = rng.choice(_YES_NO_PHRASES) if value in ("yes", "no") else template
        if template == "the {name} is {value}" and _is_plural(human):
            template = "the {name} are {value}"
        clause = template.format(name=human, value=value)
        (open_ if is_open else closed).append((clause, template.startswith("{value}")))
    if not closed and not open_:
        return ""
    groups = [closed + open_[:1]] + [[c] for c in open_[1:]]
    sentences = []
    for i, group in enumerate(groups):
        clauses = [c for c, _ in group]
        body = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
        opener = rng.choice(_OPENERS) if i == 0 else ""  # drawn either way: the same draws follow
        opener = opener if reply else ""
        if group[0][1]:  # the sentence would start with the value itself: lead into it
            body = rng.choice(_VALUE_FIRST_LEADS) + body
        sentence = opener + body if opener else body[:1].upper() + body[1:]
        sentences.append(sentence + ".")
    return " ".join(sentences)
