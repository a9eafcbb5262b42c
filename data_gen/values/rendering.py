"""How a user says a value in a sentence: `render_value` and `phrase_values`.

The scripted user-proxy states the gold values with the templates of `VALUE_PHRASES`; the
scripted assistant reads them back with `data_gen.values.extraction.extract_value`. The contract,
held by property tests: for every generated value ``v``,
``extract_value(phrase_with(render_value(v)), name, spec) == (True, v)`` for every template, also
when one sentence carries several parameters.
"""

from __future__ import annotations

import json
import math
import random
import re
from datetime import date, datetime, time
from typing import Any

from data_gen.text import humanise_param
from data_gen.values.vocabulary import word_list

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
_OPENERS = ("", "", "", "Sure, ", "Okay, ", "Of course, ")
_VALUE_FIRST_LEADS = ("go with ", "please take ", "let's go with ")

# Strings equal to one of these are quoted so that they never read as part of the sentence.
RESERVED = frozenset(
    word_list(
        "the a an and or is are as for use to of set should be none null with go take please my our yes "
        "no true false"
    )
)
# Connector words that end a list read from text (the yes/no/none words may be list items).
LIST_STOP = RESERVED - {"yes", "no", "true", "false", "none", "null"}


def _needs_quotes(s: str) -> bool:
    return (
        not s
        or bool(re.search(r"[\s,;]", s))
        or s[0] in "\"“'([{"
        or s[-1] in ".!?;:)"
        or s.lower() in RESERVED
    )


def render_value(value: Any) -> str:
    """How a user says `value` in a sentence.

    Strings as they are, except strings a reader could not delimit (with spaces or commas, ending
    in punctuation, or equal to a connector word), which are wrapped in double quotes; integral
    floats without ``.0`` (other floats by their shortest round-trip repr); booleans as yes/no;
    dates as ISO; lists of scalars as ``a, b and c`` (an empty list as ``none``); objects and
    lists holding containers as compact JSON.
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    if isinstance(value, (date, datetime, time)):
        return value.isoformat()
    if isinstance(value, str):
        return f'"{value}"' if _needs_quotes(value) else value
    if isinstance(value, (list, tuple)):
        if any(isinstance(v, (list, tuple, dict)) for v in value):
            return json.dumps(list(value), ensure_ascii=False, separators=(",", ":"))
        if not value:
            return "none"
        parts = [render_value(v) for v in value]
        return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


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
    last = human.split()[-1].lower() if human.split() else ""
    return last.endswith("s") and not last.endswith("ss")


def phrase_values(pairs: list[tuple[str, str]], rng: random.Random) -> str:
    """One or more sentences that state each ``(parameter, rendered value)`` pair with a template
    of `VALUE_PHRASES` (the parameter is humanised; already humanised names are fine), e.g.
    ``The employee ID is EMP123456, the start date is 2026-02-03 and the reason is "quarterly
    onboarding refresher".``

    Clauses are joined with ``, `` and a final `` and ``. A value that is open-ended (a list or
    JSON) is stated after its name and ends its sentence, so its extent is never ambiguous.
    """
    closed: list[tuple[str, bool]] = []
    open_: list[tuple[str, bool]] = []
    for name, value in pairs:
        human = humanise_param(name)
        is_open = _open_ended(value)
        template = rng.choice(_FORWARD_PHRASES if is_open else VALUE_PHRASES)
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
        opener = rng.choice(_OPENERS) if i == 0 else ""
        if group[0][1]:  # the sentence would start with the value itself: lead into it
            body = rng.choice(_VALUE_FIRST_LEADS) + body
        sentence = opener + body if opener else body[:1].upper() + body[1:]
        sentences.append(sentence + ".")
    return " ".join(sentences)
