"""How a value and a number are said in English, for every stage: `render_value` (the form
the scripted user-proxy states and the DICE-Bench scorer matches), the connector words a bare
string may not equal (`RESERVED`), and the shared `inflect` engine.

It lives in the core because the generator (which phrases values) and the scorers (which look for
them in text) must agree on one rendering.
"""

from __future__ import annotations

import json
import math
import re
from datetime import date, datetime, time
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import inflect


@lru_cache(maxsize=1)
def inflect_engine() -> inflect.engine:
    """One `inflect` engine for the process (it is slow to build; imported on first use)."""
    import inflect

    return inflect.engine()


# Strings equal to one of these are quoted so that they never read as part of the sentence.
RESERVED = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "is",
        "are",
        "as",
        "for",
        "use",
        "to",
        "of",
        "set",
        "should",
        "be",
        "none",
        "null",
        "with",
        "go",
        "take",
        "please",
        "my",
        "our",
        "yes",
        "no",
        "true",
        "false",
    ]
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
