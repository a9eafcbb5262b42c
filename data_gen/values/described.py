"""What a parameter's description shows: a written example or a spelled-out format, and fresh
values of that shape.

Catalogues often say more in prose than in the schema: "Employee id, e.g. EMP004217.", "Posting
month as YYYY-MM.", "Phone number in E.164 format.". `description_example` finds a written example
and `spelled_format` a spelled-out format; `shaped` and `spelled` draw fresh values of that shape
(never the example itself). The generator keeps such a value only when it passes the whole schema
(see `ValueGenerator._string`): enum, pattern, format and bounds are stronger than prose.

They draw from any `PrimitiveDraws`, in practice `diaforge.data_gen.values.names.Draws`, which in turn
draws identifiers of the shape a description shows with `shaped`: the Protocol keeps the import
one-way (names -> described).
"""

from __future__ import annotations

import contextlib
import random
import re
import string
import uuid
from collections.abc import Iterator
from datetime import date, datetime, timezone
from typing import Any, Protocol

from diaforge.data_gen.values import formats
from diaforge.data_gen.values.vocabulary import (
    AIRPORTS,
    COUNTRY_CODES,
    COUNTRY_CODES3,
    CURRENCIES,
    E164_COUNTRIES,
    KNOWN_EXTS,
    LANGUAGES,
    VOCAB_BY_LEN,
    WORDS,
)
from diaforge.schema import Persona
from diaforge.text import param_tokens


class PrimitiveDraws(Protocol):
    """The draws `shaped` and `spelled` build on: the source of randomness, the reference day, a
    day for a date parameter, a person's name and a value of a JSON Schema `format`."""

    rng: random.Random
    today: date

    def day_for(self, name: str) -> date: ...

    def person(self) -> tuple[str, str]: ...

    def formatted(self, fmt: str, name: str, persona: Persona | None) -> str: ...


# A marker that introduces an example, then the example: quoted ('...', "...", “...”, `...`) or
# a bare run up to whitespace, a comma, a semicolon or a bracket.
_EXAMPLE_MARKER = (
    r"(?:\be\.\s?g\b\.?|\beg\.|\bfor\s+(?:example|instance)\b|\bexamples?\b|\bex\.|"
    r"\bsuch\s+as\b|\blike\b)"
)
_EXAMPLE_RE = re.compile(
    _EXAMPLE_MARKER + r"\s*[:,]?\s*"
    r"(?:'([^'\s]+)'|\"([^\"\s]+)\"|“([^”\s]+)”|`([^`\s]+)`|([^\s,;()\[\]'\"“”`]+))",
    re.IGNORECASE,
)
# An identifier written anywhere in an identifier's description ("... the request (TR-12345)").
_LOOSE_ID_RE = re.compile(r"(?<![\w-])([A-Z]{1,6}[-_/]?\d{3,10})(?![\w-])")
_SEPARATED = re.compile(r"[A-Za-z0-9][-_/.:\\@#+][A-Za-z0-9]")


def _code_like(token: str, *, strict: bool = False) -> bool:
    """Whether `token` reads as a code whose shape is worth copying (``EMP004217``, ``FRA``,
    ``2025-03``, ``@jane_doe``) rather than a plain word (``printers``, ``Excel``). `strict`
    (for "like"/"such as", which also introduce prose) wants a digit or an inner separator."""
    if len(token) < 2 or (
        re.fullmatch(r"[a-z]{2,}(?:-[a-z]{2,})+", token)
        and all(re.search(r"[aeiouy]", p) for p in token.split("-"))
    ):
        return False  # "entry-level", "real-time": a word written with a hyphen ("svc-backup" is a code)
    if re.search(r"\d", token) or _SEPARATED.search(token) or token[0] in "@#+\\":
        return True
    return not strict and len(re.findall(r"[A-Z]", token)) >= 2


def _examples(description: str) -> Iterator[tuple[str, bool, str]]:
    """Each example the description writes after an example lead, in order: its text (quoted as
    written, bare without trailing punctuation), whether it was quoted, and the match's opening
    words in lower case ("e.g.", "like", "such as")."""
    for m in _EXAMPLE_RE.finditer(description or ""):
        quoted = next((g for g in m.groups()[:4] if g), None)
        text = quoted if quoted is not None else m.group(5).rstrip(".:!?")
        yield text, quoted is not None, m.group(0).lower()


def prose_example(description: str) -> str | None:
    """The first plain word the description gives as an example ("The event in plain words, e.g.
    pneumonia." -> ``pneumonia``): what `description_example` passes over as no shape, but which
    still says what kind of value is meant. None when there is none."""
    for text, _quoted, lead in _examples(description):
        word = text.rstrip(".:!?")
        if re.fullmatch(r"[a-z][a-z'-]{2,}", word) and not lead.startswith("like"):
            return word
    return None


def named_example(description: str) -> str | None:
    """The first example the description gives when it is one capitalised word, a name of a
    service, a brand or a place ("Taxi service platform (e.g. 'Uber')" -> ``Uber``). None
    otherwise (a code, an acronym, several words, a lower-case word)."""
    for text, _quoted, lead in _examples(description):
        word = text.rstrip(".:!?")
        if re.fullmatch(r"[A-Z][a-z]{2,}[A-Za-z]*", word) and not lead.startswith("like"):
            return word
        return None
    return None


def description_example(description: str, *, identifier: bool = False) -> str | None:
    """The first code-like example the description writes after "e.g.", "for example",
    "such as", "like", ... (quoted or bare, trailing punctuation dropped); for an `identifier`,
    also a bare ``ABC-12345`` anywhere. None when there is none: free-text examples
    ("e.g. 'industry = retail AND country = FR'", "e.g. Koeln Hbf") give no shape."""
    for token, quoted, lead in _examples(description):
        if _code_like(token, strict=not quoted and lead.startswith(("like", "such"))):
            return token
    if identifier:
        loose = _LOOSE_ID_RE.search(description or "")
        if loose:
            return loose.group(1)
    return None


# A description about a telephone number (looked for ahead, anywhere in it).
_PHONE_CONTEXT = r"(?=.*\b(?:phone|telephone|mobile|msisdn|subscriber|number)\b)"
# Spelled-out formats, most specific first: (regex on the description, kind).
_SPELLED_FORMATS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rx, re.IGNORECASE), kind)
    for rx, kind in (
        (r"\bYYYY-MM-DD[T ]hh:mm", "date-time"),
        (r"\bYYYY-MM-DD\b", "date"),
        (r"\bYYYYMMDD\b", "compact-date"),
        (r"\bDD/MM/YYYY\b", "dd/mm/yyyy"),
        (r"\bMM/DD/YYYY\b", "mm/dd/yyyy"),
        (r"\bYYYY-Q[n1-4]\b", "year-quarter"),
        (r"\bYYYY-MM\b", "year-month"),
        (r"\bMM-DD\b", "mm-dd"),
        (r"\bhh:mm:ss\b", "time-hms"),
        (r"\bhh:mm\b", "time-hm"),
        (r"\bISO[\s-]?8601\b(?=.*\b(?:time\s?zone|offset|utc)\b)", "date-time-tz"),
        (r"\bISO[\s-]?8601\s+date\b(?![\s-]?time)", "date"),
        (r"\bISO[\s-]?8601\b", "date-time"),
        (r"\bISO\s+date[\s-]?time\b|\bISO\s+timestamp\b", "date-time"),
        (r"\bISO\s+date\b", "date"),
        (r"\bISO[\s-]?4217\b|\bcurrency\s+code\b", "currency"),
        (r"\bISO[\s-]?3166(?:-1)?\s+alpha[\s-]?3\b|\bthree-letter\s+country\s+code\b", "country-alpha3"),
        (r"\bISO[\s-]?3166\b|\btwo-letter\s+country\s+code\b", "country-alpha2"),
        (r"\bISO[\s-]?639\b", "language"),
        (r"\bE\.?164\b", "e164"),
        # a telephone number "in international format", with or without its "+"
        (
            rf"^{_PHONE_CONTEXT}.*?\binternational\s+format\b.*\bwithout\s+(?:the\s+|a\s+)?(?:plus|\+)",
            "e164-digits",
        ),
        (rf"^{_PHONE_CONTEXT}.*?\binternational\s+format\b", "e164"),
        (r"\b(?:UUID|GUID)\b", "uuid"),
    )
)


def schema_example(spec: dict[str, Any]) -> str | None:
    """The first string of the schema's own examples (JSON Schema ``examples``, OpenAPI
    ``example``) that is code-like (`_code_like`) or all digits: a shape to draw fresh values of,
    as for one the description shows. None when there is none."""
    shown = spec.get("examples")
    candidates = list(shown) if isinstance(shown, list) else []
    if "example" in spec:
        candidates.append(spec["example"])
    for value in candidates:
        if isinstance(value, str) and (value.isdigit() and len(value) > 1 or _code_like(value, strict=True)):
            return value
    return None


def listed_examples(spec: dict[str, Any]) -> list[str]:
    """The schema's own string examples when it lists two or more (``["@", "www", "mail"]``): a
    set of values to choose from where they show no shape to draw (`schema_example`). Empty
    otherwise: one example alone would be drawn every time."""
    shown = spec.get("examples")
    words = [v for v in shown if isinstance(v, str) and v.strip()] if isinstance(shown, list) else []
    return words if len(words) > 1 else []


def spelled_format(description: str) -> str | None:
    """The kind of the first spelled-out format the description names (``YYYY-MM-DD`` ->
    ``date``, ``ISO 4217 currency code`` -> ``currency``, ``E.164`` -> ``e164``, ...), or None."""
    for rx, kind in _SPELLED_FORMATS:
        if rx.search(description or ""):
            return kind
    return None


def _example_runs(example: str) -> list[str]:
    """``EVT-2025-HAM`` -> ``[EVT, -, 2025, -, HAM]``: runs of digits, capitalised words
    (``Date`` in ``/Date(1547164800000+0000)/``), capitals, small letters and everything else."""
    return re.findall(r"\d+|[A-Z][a-z]+|[A-Z]+|[a-z]+|[^A-Za-z0-9]+", example)


def _is_literal_run(runs: list[str], i: int) -> bool:
    """Whether run `i` of an example is kept as written: leading letters followed by more
    (``EMP`` in ``EMP004217``, ``PO`` in ``PO-2024-0042``, ``fs`` in ``\\\\fs01\\finance``) or a
    one-letter capital marker before digits (``Q`` in ``2025-Q2``)."""
    run = runs[i]
    nxt = runs[i + 1] if i + 1 < len(runs) else ""
    prev = runs[i - 1] if i else ""
    if run.isalpha() and i == 0 and nxt and not nxt.isalpha():
        return True
    if run[0].isupper() and run[1:].islower():
        return True  # a capitalised word is the format's own ("Date" in /Date(...)/), not a code
    if run.isalpha() and nxt.isdigit() and not any(r.isalnum() for r in runs[:i]):
        return True  # the first letters after leading symbols: "fs" in \\fs01\finance
    return run.isupper() and len(run) == 1 and nxt.isdigit() and not prev.isalnum()


_CURRENT_YEAR_RE = re.compile(r"(?:19|20)\d\d")
# The JSON date of WCF and ASP.NET services (Xero's API among them): "/Date(1547164800000+0000)/".
_WCF_DATE = re.compile(r"/Date\(\d{9,13}([+-]\d{4})?\)/")


def shaped(
    draws: PrimitiveDraws, example: str, name: str, description: str, *, keep: float = 0.0
) -> str | None:
    """A fresh value with the shape of `example`, never `example` itself (None when the
    example has nothing to vary, e.g. it is all literal prefix).

    Examples that are dates, date-times, months (``2025-03``), times, WCF JSON dates
    (``/Date(1547164800000+0000)/``), UUIDs or email addresses are drawn as such (a date by the parameter's name, a date-time with the
    example's precision and zone suffix). Anything else keeps its leading letters when more
    follows (``EMP`` in ``EMP004217``, ``PO`` in ``PO-2024-0042``), its separators, letter
    case, leading zeros and a one-letter marker before digits (``Q`` in ``2025-Q2``), and
    draws the rest: a year for ``19xx``/``20xx``, a date for a ``YYYYMMDD`` run, fresh digits
    (first significant one non-zero), capitals (a currency, country or airport code where
    the name or description says so) and small letters (a word of the same length where
    there is one) of the same length. With `keep`, each of those parts is kept as written
    with that probability (the value as a whole still differs from the example).
    """
    for _ in range(10):
        value = _shape_once(draws, example, name, description, keep)
        if value is None or value != example:
            return value
    return None


def _shape_once(draws: PrimitiveDraws, example: str, name: str, description: str, keep: float) -> str | None:
    """One draw of `shaped` (it may equal the example; the caller draws again)."""
    rng = draws.rng
    if formats.valid_date(example):
        return draws.day_for(name).isoformat()
    if formats.valid_datetime(example):
        day = draws.day_for(name)
        stamp = f"{day.isoformat()}{example[10]}{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
        clock = re.match(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(?:\.\d+)?)?", example)
        if clock is not None and clock.group(1):
            stamp += ":00"
        return stamp + example[clock.end() :] if clock is not None else stamp
    if re.fullmatch(r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])", example):
        return draws.day_for(name).isoformat()[:7]
    if re.fullmatch(r"(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d)?", example):
        hm = f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
        return hm + ":00" if len(example) == 8 else hm
    wcf = _WCF_DATE.fullmatch(example)
    if wcf:  # milliseconds since 1970 and an optional zone offset, kept as written
        day = draws.day_for(name)
        noon = datetime(day.year, day.month, day.day, 12, tzinfo=timezone.utc)
        return f"/Date({int(noon.timestamp()) * 1000}{wcf.group(1) or ''})/"
    if re.fullmatch(r"(?:\d{1,3}\.){3}\d{1,3}", example):  # an IPv4 address: four octets, each below 256
        return (
            f"{rng.choice((10, 172, 192))}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        )
    named_file = re.fullmatch(r"([\w-]+)\.([A-Za-z0-9]{2,5})", example)
    if (
        named_file and named_file.group(2).lower() in KNOWN_EXTS
    ):  # "image.png": a fresh name, the same kind of file
        return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}.{named_file.group(2)}"
    if formats.UUID_RE.fullmatch(example):
        fresh = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        return fresh.upper() if example.isupper() else fresh
    if formats.EMAIL_RE.fullmatch(example):
        first, last = draws.person()
        return f"{first.lower()}.{last.lower()}@{example.split('@', 1)[1]}"
    runs = _example_runs(example)
    context = set(param_tokens(name)) | set(param_tokens(description))
    out: list[str] = []
    for i, run in enumerate(runs):
        if not run.isalnum() or _is_literal_run(runs, i):
            out.append(run)  # separators, symbols, literal prefixes and markers
        elif keep and rng.random() < keep:
            out.append(run)
        elif run.isdigit():
            out.append(_digits_like(draws, run, name))
        elif run.isupper():
            out.append(_capitals_like(draws, run, example, context))
        elif run.islower():
            words = VOCAB_BY_LEN.get(len(run), ())
            if words and rng.random() < 0.8:
                out.append(rng.choice(words))
            else:
                out.append("".join(rng.choice(string.ascii_lowercase) for _ in run))
        else:
            out.append(run)
    varies = any(r.isalnum() and not _is_literal_run(runs, i) for i, r in enumerate(runs))
    return "".join(out) if varies else None


def _digits_like(draws: PrimitiveDraws, run: str, name: str) -> str:
    """Fresh digits for a digit run: a year near today, a ``YYYYMMDD`` date, else as many digits
    with the same leading zeros."""
    rng = draws.rng
    if len(run) == 4 and _CURRENT_YEAR_RE.fullmatch(run):
        return str(rng.randint(draws.today.year - 1, draws.today.year + 1))
    if len(run) == 8 and _CURRENT_YEAR_RE.fullmatch(run[:4]):
        with contextlib.suppress(ValueError):
            date(int(run[:4]), int(run[4:6]), int(run[6:]))
            return draws.day_for(name).strftime("%Y%m%d")
    zeros = len(run) - len(run.lstrip("0"))
    if zeros == len(run):  # all zeros: only the last place varies
        return run[:-1] + str(rng.randint(1, 9))
    rest = "".join(rng.choice(string.digits) for _ in range(len(run) - zeros - 1))
    return "0" * zeros + str(rng.randint(1, 9)) + rest


def _capitals_like(draws: PrimitiveDraws, run: str, example: str, context: set[str]) -> str:
    """Fresh capitals for a capital run: a real currency, airport or country code where the whole
    example is one and the name or description says which, else random letters."""
    rng = draws.rng
    pool: tuple[str, ...] | list[str] = ()
    if run == example:  # the whole value is a code: a real one where the context says which
        if len(run) == 3 and context & {"currency", "4217"}:
            pool = CURRENCIES
        elif len(run) == 3 and context & {"airport", "iata"}:
            pool = AIRPORTS
        elif len(run) == 2 and context & {"country", "nationality", "3166"}:
            pool = COUNTRY_CODES
        elif len(run) == 3 and context & {"country", "nationality", "3166"}:
            pool = COUNTRY_CODES3
    choices = [c for c in pool if c != run]
    if choices:
        return rng.choice(choices)
    return "".join(rng.choice(string.ascii_uppercase) for _ in run)


def spelled(draws: PrimitiveDraws, kind: str, name: str, persona: Persona | None) -> str:
    """A value of a spelled-out format kind (see `_SPELLED_FORMATS`)."""
    rng = draws.rng
    day = draws.day_for(name)
    hm = f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
    if kind == "date":
        return day.isoformat()
    if kind == "date-time":
        return f"{day.isoformat()}T{hm}:00"
    if kind == "date-time-tz":
        return f"{day.isoformat()}T{hm}:00{rng.choice(('Z', '+01:00', '+02:00', '-05:00', '+00:00'))}"
    if kind == "compact-date":
        return day.strftime("%Y%m%d")
    if kind == "mm-dd":
        return day.strftime("%m-%d")
    if kind == "dd/mm/yyyy":
        return day.strftime("%d/%m/%Y")
    if kind == "mm/dd/yyyy":
        return day.strftime("%m/%d/%Y")
    if kind == "year-month":
        return day.isoformat()[:7]
    if kind == "year-quarter":
        return f"{day.year}-Q{(day.month - 1) // 3 + 1}"
    if kind == "time-hms":
        return f"{hm}:00"
    if kind == "time-hm":
        return hm
    if kind == "currency":
        return rng.choice(CURRENCIES)
    if kind == "country-alpha2":
        return rng.choice(COUNTRY_CODES)
    if kind == "country-alpha3":
        return rng.choice(COUNTRY_CODES3)
    if kind == "language":
        return rng.choice(LANGUAGES)
    if kind == "e164-digits":
        return spelled(draws, "e164", name, persona)[1:]
    if kind == "e164":
        country = rng.choice(E164_COUNTRIES)
        national = str(rng.randint(1, 9)) + "".join(rng.choice(string.digits) for _ in range(9))
        return f"+{country}{national}"
    if kind == "uuid":
        return draws.formatted("uuid", name, persona)
    raise ValueError(f"unknown spelled-out format kind {kind!r}")
