"""String formats the value generator writes and the schema checker and the extractor recognise.

One place for the shape of each `format` value this package relies on (date, date-time, time,
email, uuid, uri/url): the regexes that find them in text (`FINDERS`, used by extraction) and the
predicates that accept them (`valid_date`, `valid_datetime`, `valid_time`, ...). The schema
checker (`diaforge.data_gen.values.checking`) registers the predicates that `jsonschema`'s own
`FormatChecker` lacks (or checks too loosely) and names each format in its reasons with `LABELS`.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time

DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
DATETIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?")
TIME_RE = re.compile(r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?")
EMAIL_RE = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
URI_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+")

# How a reason names each format the checker checks ("... is not a valid date (YYYY-MM-DD)").
LABELS = {
    "date": "date (YYYY-MM-DD)",
    "date-time": "ISO 8601 date-time",
    "time": "time (HH:MM[:SS])",
    "email": "email address",
    "uuid": "UUID",
    "uri": "URI",
    "url": "URL",
    "ipv4": "IPv4 address",
    "ipv6": "IPv6 address",
}
# The formats the generator draws and the schema checker checks; other formats are not checked
# (a value the generator cannot draw must not make a schema unsatisfiable).
CHECKED = frozenset(LABELS)

# format -> the regex that finds a value of that format in free text (extraction).
FINDERS = {
    "date": DATE_RE,
    "date-time": DATETIME_RE,
    "time": TIME_RE,
    "email": EMAIL_RE,
    "uuid": UUID_RE,
    "uri": URI_RE,
    "url": URI_RE,
}


def valid_date(s: str) -> bool:
    """``YYYY-MM-DD`` naming a real calendar day."""
    if not DATE_RE.fullmatch(s):
        return False
    try:
        date.fromisoformat(s)
    except ValueError:
        return False
    return True


def valid_datetime(s: str) -> bool:
    """An ISO 8601 date-time: ``T``, ``t`` or a space between date and time, seconds and a zone
    (``Z`` or ``+hh:mm``) optional; every field in range."""
    if not DATETIME_RE.fullmatch(s):
        return False
    try:
        datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", s))
    except ValueError:
        return False
    return True


def valid_time(s: str) -> bool:
    """``HH:MM`` with optional seconds, fraction and zone; every field in range."""
    if not TIME_RE.fullmatch(s):
        return False
    try:
        time.fromisoformat(re.sub(r"[Zz]$", "+00:00", s))
    except ValueError:
        return False
    return True


def valid_email(s: str) -> bool:
    """``local@domain.tld`` with no spaces (jsonschema's own check only looks for an ``@``)."""
    return bool(EMAIL_RE.fullmatch(s))


def valid_uri(s: str) -> bool:
    """``scheme://rest`` with no spaces (jsonschema checks URIs only with the `rfc3987` extra)."""
    return bool(URI_RE.fullmatch(s))
