"""Name-based rules: what a parameter's name says its value looks like.

`Draws` holds the source of randomness and the reference day, and draws the primitive values
every part of the generator shares (a day, a person, a company, an email address, a URL, a word
token, a value of a JSON Schema `format`). `Draws.by_name` is the heuristic the generator falls
back to when the schema and the description say nothing more: ``*_id`` -> an identifier with a
prefix, ``currency`` -> an ISO 4217 code, ``reason`` -> a line of free text, ``start_date`` -> a
weekday ahead, and so on. `number_hint` is the same idea for numbers.
"""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from datetime import date, timedelta
from typing import Any

from diaforge.data_gen.values.described import description_example, named_example, prose_example, shaped
from diaforge.data_gen.values.vocabulary import (
    ANIMAL_WORDS,
    BRANDS,
    CITIES,
    COMPANIES,
    COMPANY_WORDS,
    COUNTIES,
    COUNTRIES,
    COUNTRY_CODES,
    COURSES,
    CURRENCIES,
    DEPARTMENTS,
    FILE_EXTS,
    FIRST_NAMES,
    FOOD_WORDS,
    FOODS,
    FREE_TEXT,
    FREE_TEXT_WORDS,
    FUTURE_DATE_WORDS,
    ID_PREFIXES,
    ID_WORDS,
    JOB_TITLES,
    KNOWN_EXTS,
    LANGUAGES,
    LAST_NAMES,
    LOCALES,
    MEDICAL_CONTEXT,
    MEDICAL_TERMS,
    MEDICAL_WORDS,
    MONEY_WORDS,
    MUSIC_CONTEXT,
    MUSIC_KEYS,
    OFFICES,
    PAST_DATE_WORDS,
    PERCENT_WORDS,
    PERSON_HEADS,
    PERSON_NAME_WORDS,
    PERSON_WORDS,
    PET_NAMES,
    PRIORITIES,
    PRODUCTS,
    PROJECTS,
    QUANTITY_WORDS,
    REGIONS,
    SECRET_WORDS,
    SPECIALTIES,
    STATUSES,
    STREETS,
    TEAMS,
    TIMEZONES,
    TITLE_WORDS,
    TITLES,
    UNITS,
    WORDS,
)
from diaforge.schema import Persona
from diaforge.text import param_tokens

DEFAULT_TODAY = date(2026, 1, 15)
#: Heads of a name or a description that make a value an identifier ("Barcode of the sample").
_ID_HEADS = frozenset(ID_WORDS | {"barcode", "serial", "mrn", "isbn", "iban", "uuid"})
#: A closed list of values a description spells out after a colon ("...: sms, email or phone_call").
_PROSE_CHOICES = re.compile(r":\s*([a-z][\w-]*(?:,\s*[a-z][\w-]*)*,?\s+or\s+[a-z][\w-]*)\s*(?:[.;]|$)")
#: The first half of UK postcodes ("M14 5RT"): a `postcode` is the British word.
UK_OUTWARD = ("M14", "LS6", "SW1A", "EH3", "B15", "CF10", "BS8", "G12", "NE1", "OX2", "CB2", "L17")


class Draws:
    """Primitive draws and the name-based rules, all from one `rng` (so a seeded generator
    reproduces its values exactly).

    Args:
        rng: the source of randomness.
        today: the reference day for dates (see `day_for`).
    """

    def __init__(self, rng: random.Random, today: date = DEFAULT_TODAY) -> None:
        self.rng = rng
        self.today = today
        self.word_tokens = 0
        """How many word tokens were drawn (the last resort, `word_token`)."""

    def formatted(self, fmt: str, name: str, persona: Persona | None) -> str:
        """A value of a JSON Schema `format` (`formats.CHECKED`); a word token for others."""
        rng = self.rng
        if fmt == "date":
            return self.day_for(name).isoformat()
        if fmt == "date-time":
            day = self.day_for(name)
            minute = rng.choice((0, 15, 30, 45))
            return f"{day.isoformat()}T{rng.randint(8, 17):02d}:{minute:02d}:00"
        if fmt == "time":
            return f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}:00"
        if fmt == "email":
            return self.email(persona)
        if fmt == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if fmt in ("uri", "url"):
            return self.url()
        if fmt == "ipv4":
            return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if fmt == "ipv6":
            return "fd00::" + ":".join(f"{rng.randint(1, 0xFFFF):x}" for _ in range(3))
        return self.word_token()

    def day_for(self, name: str) -> date:
        """A weekday for a date parameter: a birth date 25-60 years back, a past-looking name
        (``invoice_date``) up to 60 days before `today`, a future-looking one (``start_date``) up to
        120 days after, anything else from 30 days before to 90 after."""
        rng = self.rng
        tokens = set(param_tokens(name))
        if tokens & {"birth", "dob", "birthday"}:
            return self.today - timedelta(days=rng.randint(25 * 365, 60 * 365))
        if tokens & PAST_DATE_WORDS:
            day = self.today - timedelta(days=rng.randint(1, 60))
            while day.weekday() >= 5:
                day -= timedelta(days=1)
            return day
        if tokens & FUTURE_DATE_WORDS:
            day = self.today + timedelta(days=rng.randint(1, 120))
        else:
            day = self.today + timedelta(days=rng.randint(-30, 90))
        while day.weekday() >= 5:
            day += timedelta(days=1)
        return day

    def person(self) -> tuple[str, str]:
        """A (first name, last name) pair."""
        return self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)

    def company(self, persona: Persona | None) -> str:
        """A company: the persona's own (fixed by its id), else any."""
        if persona is not None:  # the persona always works at the same (fictitious) company
            digest = hashlib.sha256(persona.id.encode("utf-8")).digest()
            return COMPANIES[digest[0] % len(COMPANIES)]
        return self.rng.choice(COMPANIES)

    def email(self, persona: Persona | None) -> str:
        """``first.last@company.example.com`` at the persona's company."""
        first, last = self.person()
        slug = re.sub(r"[^a-z0-9]", "", self.company(persona).split()[0].lower())
        return f"{first.lower()}.{last.lower()}@{slug}.example.com"

    def url(self) -> str:
        """An intranet URL under ``example.com``."""
        return f"https://intranet.example.com/{self.rng.choice(WORDS)}/{self.rng.randint(100, 99999)}"

    def branch(self) -> str:
        """A git branch: ``main``, ``release/2.4`` or ``feature/cedar-onyx``."""
        rng = self.rng
        shape = rng.random()
        if shape < 0.2:
            return rng.choice(("main", "develop"))
        if shape < 0.4:
            return f"release/{rng.randint(1, 5)}.{rng.randint(0, 12)}"
        return f"{rng.choice(('feature', 'fix'))}/{rng.choice(WORDS)}-{rng.choice(WORDS)}"

    def word_token(self) -> str:
        """The last resort: ``cedar``, ``cedar-onyx`` or ``cedar-42`` (counted in `word_tokens`)."""
        self.word_tokens += 1
        rng = self.rng
        first = rng.choice(WORDS)
        shape = rng.random()
        if shape < 0.4:
            return first
        if shape < 0.7:
            return f"{first}-{rng.choice(WORDS)}"
        return f"{first}-{rng.randint(10, 99)}"

    def secret(self, tokens: set[str]) -> str:
        """A password (``Cedar47Harbor``) or a token (24 hexadecimal digits)."""
        rng = self.rng
        if tokens & {"password", "passcode", "passphrase", "pwd"}:
            return f"{rng.choice(WORDS).capitalize()}{rng.randint(10, 99)}{rng.choice(WORDS).capitalize()}"
        return "".join(rng.choice("0123456789abcdef") for _ in range(24))

    def identifier(self, tokens: list[str], description: str) -> str:
        """An identifier: the shape the description shows, else a prefix from the words before
        ``_id`` (``EMP-48213`` for ``employee_id``) and 4-6 digits."""
        rng = self.rng
        example = description_example(description, identifier=True)
        fresh = shaped(self, example, " ".join(tokens), description) if example else None
        if fresh is not None:  # the shape the description shows, e.g. "e.g. TR-12345"
            return fresh
        head = [t for t in tokens if t not in ID_WORDS] or ["ref"]
        prefix = ID_PREFIXES.get(" ".join(head[-2:])) or ID_PREFIXES.get(head[-1])
        if prefix is None:
            prefix = "".join(t[0] for t in head[-3:]).upper() if len(head) > 1 else head[-1][:3].upper()
        width = rng.randint(4, 6)
        number = str(rng.randint(10 ** (width - 1), 10**width - 1))
        return f"{prefix}{rng.choice(('-', '', '-'))}{number}"

    def by_name(self, name: str, spec: dict[str, Any], persona: Persona | None) -> str:
        """A string for parameter `name` by what its words say: contact details, codes (currency,
        country, cost center, zip, language, locale, time zone), URLs, identifiers, dates and
        times first, then the topic (`_by_topic`)."""
        rng = self.rng
        toks = [re.sub(r"(?<=[a-z]{3})\d$", "", t) for t in param_tokens(name)]  # "address1": an address
        ts = set(toks)
        last = toks[-1] if toks else ""
        description = str(spec.get("description") or "")
        if "address" in ts and (name.endswith("2") or "second line" in description.lower()):
            return f"{rng.choice(('Apt', 'Suite', 'Unit', 'Floor'))} {rng.randint(1, 40)}"  # "address2"

        if ts & {"email", "mail", "emails", "upn"}:  # a user principal name is written as an address
            return self.email(persona)
        phone = next(
            (k for k, t in enumerate(toks) if t in ("phone", "mobile", "telephone", "tel", "fax")), None
        )
        if phone is not None and toks[phone + 1 : phone + 2] in ([], ["number"], ["no"], ["num"]):
            return f"+1-555-01{rng.randint(0, 99):02d}"  # not `mobile_app_id`: an app's identifier
        if "currency" in ts:
            return rng.choice(CURRENCIES)
        if "country" in ts:
            return rng.choice(COUNTRY_CODES if ts & ID_WORDS or "iso" in ts else COUNTRIES)
        if "cost" in ts and ts & {"center", "centre"}:
            return f"CC-{rng.randint(1000, 9999)}"
        if "postcode" in ts or ("post" in ts and "code" in ts):  # the British word: a UK postcode
            return f"{rng.choice(UK_OUTWARD)} {rng.randint(1, 9)}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}"
        if ts & {"zip", "postal"}:
            return f"{rng.randint(10000, 99999)}"
        if ts & {"language", "lang"}:
            return rng.choice(LANGUAGES)
        if "locale" in ts:
            return rng.choice(LOCALES)
        if ts & {"timezone", "tz"} or ("time" in ts and "zone" in ts):
            return rng.choice(TIMEZONES)
        if ts & {"url", "link", "website", "uri", "endpoint", "homepage"}:
            return self.url()
        if last == "key" and MUSIC_CONTEXT.search(description):  # "The key of the melody": C major
            return rng.choice(MUSIC_KEYS)
        if last == "path" or ts & {"filepath", "filename"}:  # "Path to the CSV dataset file"
            ext = next((e for e in re.findall(r"[a-z0-9]+", description.lower()) if e in KNOWN_EXTS), "csv")
            folder = "" if "name" in last or last == "filename" else f"data/{rng.choice(WORDS)}/"
            return f"{folder}{rng.choice(WORDS)}_{rng.choice(WORDS)}.{ext}"
        if ts & SECRET_WORDS and last not in ID_WORDS:  # "user_token": a secret, never the user's name
            return self.secret(ts)
        if last in ID_WORDS or ts & {"sku"}:
            return self.identifier(toks, description)
        if last in ("date", "day", "dob") or "birthday" in ts:
            return self.day_for(name).isoformat()
        if last in ("datetime", "timestamp", "at"):
            return self.formatted("date-time", name, persona)
        if last == "time":
            return f"{rng.randint(8, 17):02d}:{rng.choice((0, 15, 30, 45)):02d}"
        if ts & {"event", "term", "reaction", "condition"} and MEDICAL_CONTEXT.search(description):
            return rng.choice(MEDICAL_TERMS)  # "event_term: MedDRA preferred term": a clinical term
        if last in FREE_TEXT_WORDS:  # "approver_note": a note, whoever it is for
            return rng.choice(FREE_TEXT)
        if last in _PLACE_HEADS:  # "pickup_address": an address whoever the description names
            return self._by_topic(ts, persona, description)
        by_description = self._by_description(toks, description)
        if by_description is not None:
            return by_description
        return self._by_topic(ts, persona, description)

    def _by_description(self, toks: list[str], description: str) -> str | None:
        """A value of the kind the description's opening names, where the name says none: a
        digit string of the length it gives ("The tube barcode, 12 digits."), an identifier when
        its head is a number or a code ("Medical record number of the patient ..."), a street
        address when it is an address ("Delivery addr."), a person's
        name when it is a person ("Staff member who signed for the rack."). None otherwise."""
        m = re.search(r"\b(\d{1,2})[\s-]*digits?\b", description)  # "12 digits", "the 13-digit ISBN"
        if m and 3 <= int(m.group(1)) <= 20:
            return "".join(self.rng.choice("0123456789") for _ in range(int(m.group(1))))
        words = re.findall(r"[A-Za-z']+", description.split(",")[0].split(".")[0].lower())
        head = words[
            : next((k for k, w in enumerate(words) if w in _CUTS or _post_modifier(words, k)), len(words))
        ]
        opening = re.findall(r"[A-Za-z']+", re.split(r"[(,.;:]", description, maxsplit=1)[0].lower())
        opening = opening[: next((k for k, w in enumerate(opening) if w in _CUTS), len(opening))]
        if (
            opening and opening[-1] in ("address", "addr") and "email" not in opening
        ):  # "Delivery addr (home)."
            return f"{self.rng.randint(1, 400)} {self.rng.choice(STREETS)}"
        listed = _PROSE_CHOICES.search(description)
        if listed:  # "How to reach the owner: sms, email or phone_call."
            return self.rng.choice(re.split(r",\s*|\s+or\s+", listed.group(1).strip()))
        if (head and head[-1] in _ID_HEADS) or (toks and toks[-1] in _ID_HEADS):
            return self.identifier(toks, description)
        # the head noun names a person ("Staff member | who ..."), not a word before it ("The user
        # authentication token") nor after it ("The keyword search term | entered by the user")
        if (set(head[-1:]) | set(words[len(head) : len(head) + 1])) & (
            PERSON_HEADS | PERSON_WORDS
        ) and "name" not in toks:
            return " ".join(self.person())
        return None

    def _by_topic(self, ts: set[str], persona: Persona | None, description: str = "") -> str:
        """What the name is about (a person, a place, free text, a product, ...), else a word
        token."""
        rng = self.rng
        if ts & {"surname", "lastname"}:
            return self.person()[1]  # "owner_surname": never a full name
        if ts & {"forename", "firstname"}:
            return self.person()[0]
        if "name" in ts or ts & {"username", "login", "handle"}:
            return self._named_thing(ts, persona, description)
        if ts & PERSON_WORDS:
            return " ".join(self.person())
        if ts & FOOD_WORDS:  # "food_item": a dish, never a product of the office
            return rng.choice(FOODS)
        if "county" in ts:
            return rng.choice(COUNTIES)
        if ts & {"department", "dept", "division"}:
            if persona is not None and persona.department:
                return persona.department
            return rng.choice(DEPARTMENTS)
        if ts & {"city", "destination", "origin"}:
            return rng.choice(CITIES)
        if ts & {"location", "office", "site", "venue", "building"}:
            return rng.choice(CITIES + list(OFFICES))
        if "address" in ts:
            return f"{rng.randint(1, 400)} {rng.choice(STREETS)}"
        if "region" in ts:
            return rng.choice(REGIONS)
        if ts & FREE_TEXT_WORDS:
            return rng.choice(FREE_TEXT)
        if ts & TITLE_WORDS:
            return rng.choice(TITLES)
        if "project" in ts:
            return rng.choice(PROJECTS)
        if ts & {"team", "group", "squad"}:
            return rng.choice(TEAMS)
        if ts & {"product", "item", "equipment", "hardware", "device"}:
            return rng.choice(PRODUCTS)
        if ts & {"course", "training", "program", "programme", "certification"}:
            return rng.choice(COURSES)
        if ts & {"role", "position", "job"}:
            return rng.choice(JOB_TITLES)
        if "branch" in ts:
            return self.branch()
        if ts & {"sha", "commit", "hash", "digest"}:  # "commit_sha": hexadecimal, never a word
            return "".join(rng.choice("0123456789abcdef") for _ in range(rng.choice((7, 12, 40))))
        if ts & MEDICAL_WORDS:  # "symptom", "adverse_reaction": a clinical term, never a word token
            return rng.choice(MEDICAL_TERMS)
        if ts & {"specialty", "speciality"}:
            return rng.choice(SPECIALTIES)
        if ts & COMPANY_WORDS:
            return self.company(persona) if "employer" in ts else rng.choice(COMPANIES)
        if ts & {"status", "state"}:
            return rng.choice(STATUSES)
        if ts & {"priority", "severity", "urgency"}:
            return rng.choice(PRIORITIES)
        if ts & {"unit", "uom"}:
            return rng.choice(UNITS)
        if ts & {"version", "release"}:
            return f"{rng.randint(1, 5)}.{rng.randint(0, 12)}.{rng.randint(0, 9)}"
        if ts & {"ip"}:
            return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        if ts & {"file", "filename", "attachment", "document"}:
            return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{self.today.year}.{rng.choice(FILE_EXTS)}"
        if ts & {"line", "business", "lob"} and persona is not None and persona.line_of_business:
            return persona.line_of_business
        shown = prose_example(description)
        if shown is not None:  # "e.g. pneumonia": a word of the bank it belongs to, else the word itself
            bank = next((b for b in _BANKS if shown in b), (shown,))
            return rng.choice(bank)
        named = named_example(description)
        if named is not None:  # "e.g. 'Uber'": a place of its bank, else a sample brand, never a word token
            return rng.choice(next((b for b in _BANKS if named in b), BRANDS))
        return self.word_token()

    def _named_thing(self, ts: set[str], persona: Persona | None, description: str = "") -> str:
        """The value of a ``*_name``: a user name, a first or last name, a company, a project, a
        file, ... or a person's full name."""
        rng = self.rng
        first, last = self.person()
        if ts & {"username", "login", "handle"} or ("user" in ts and "name" in ts):
            return f"{first[0].lower()}{last.lower()}{rng.choice(('', str(rng.randint(1, 99))))}"
        if "first" in ts or "given" in ts:
            return first
        if "last" in ts or "family" in ts or "surname" in ts:
            return last
        if ts & COMPANY_WORDS:
            return self.company(persona) if "employer" in ts else rng.choice(COMPANIES)
        if ts & FOOD_WORDS:
            return rng.choice(FOODS)
        if "project" in ts:
            return rng.choice(PROJECTS)
        if ts & {"team", "group"}:
            return rng.choice(TEAMS)
        if ts & {"file", "document", "attachment"}:
            return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}_{self.today.year}.{rng.choice(FILE_EXTS)}"
        if ts & {"product", "item"}:
            return rng.choice(PRODUCTS)
        if ts & {"course", "training"}:
            return rng.choice(COURSES)
        if "branch" in ts:  # "branch_name": a git branch, never a person's name
            return self.branch()
        if ts & {"street", "road"}:  # "street_name": a street, never a person's name
            return rng.choice(STREETS)
        if ts & {"premises", "shop", "store", "restaurant", "pub", "venue", "business"}:
            return rng.choice(COMPANIES)  # a place of business, never a person's name
        if ts & {"role", "position", "job"}:  # "role_name": a role, never a person's name
            return rng.choice(JOB_TITLES)
        if ts & {"department", "dept"}:
            return (
                persona.department if persona is not None and persona.department else rng.choice(DEPARTMENTS)
            )
        if ts & {"city"}:
            return rng.choice(CITIES)
        if ts & {"event", "meeting"}:
            return rng.choice(TITLES)
        if ts & ANIMAL_WORDS or set(re.findall(r"[a-z]+", description.lower())) & ANIMAL_WORDS:
            return rng.choice(PET_NAMES)  # "pet_name", "The animal's name": never a person's
        thing = sorted((t for t in ts - {"name", "names"} if t.isalpha()), key=lambda w: (-len(w), w))
        if thing and not ts & (PERSON_NAME_WORDS | PERSON_WORDS) and not _PERSON_SAID.search(description):
            # "exam_name", "hotel_name": the name of a thing, never a person's ("Cedar Hotel")
            return f"{rng.choice(WORDS).capitalize()} {thing[0].capitalize()}"
        return f"{first} {last}"


# Vocabularies a plain example word may belong to (`_by_topic`): a value is drawn from its bank.
_BANKS = (
    MEDICAL_TERMS,
    SPECIALTIES,
    CITIES,
    DEPARTMENTS,
    PRODUCTS,
    COURSES,
    JOB_TITLES,
    TEAMS,
    PROJECTS,
    STATUSES,
)
# The last word of a parameter's name that says it is a place, before anything its description says.
# Words that end the head of a description's opening ("Medical record number | of the patient").
_CUTS = frozenset({"of", "for", "to", "in", "on", "who", "that", "by", "with", "from", "at", "about"})


def _post_modifier(words: list[str], k: int) -> bool:
    """Whether word `k` is a participle after a noun, which ends the head ("the term | entered by
    the user"), unlike one after an article ("the assigned reviewer")."""
    return k > 1 and words[k].endswith("ed") and words[k - 1] not in ("the", "a", "an", "this", "each")


# A description that says the name is a person's ("Full name of ...", "Person who ...").
_PERSON_SAID = re.compile(r"\b(?:full name|person|who|whom|his|her|their)\b", re.IGNORECASE)
_PLACE_HEADS = frozenset({"address", "city", "street", "region", "location", "venue"})


def number_hint(tokens: set[str], today: date) -> tuple[str, tuple[float, float]]:
    """(kind, usual range) of a number by the words of its name: money, a percentage, an
    identifier, a year, a count of some unit, or plain; the schema's bounds still win."""
    if tokens & {"hourly", "daily", "nightly"} and tokens & {"rate", "cost", "price"}:
        return "money", (25, 400)
    if tokens & PERCENT_WORDS:
        return "percent", (0, 100)
    if tokens & MONEY_WORDS and not (tokens & QUANTITY_WORDS and tokens & MONEY_WORDS <= {"total"}):
        return "money", (50, 5000)  # not "total_baggages": a total of things counted
    if tokens & ID_WORDS and not tokens & {"of"}:
        return "id", (10000, 999999)
    if "year" in tokens:
        return "year", (today.year - 1, today.year + 1)
    if "month" in tokens:
        return "count", (1, 12)
    if "day" in tokens:
        return "count", (1, 28)
    if "hour" in tokens:
        return "count", (8, 18)
    if tokens & {"minutes", "duration", "minute"}:
        return "count", (15, 240)
    if tokens & {"age"}:
        return "count", (22, 65)
    if tokens & {"priority", "level", "severity", "rating", "score", "tier", "grade", "stars"}:
        return "count", (1, 5)
    if tokens & {"limit", "size", "page", "top", "max", "results", "per"}:
        return "count", (10, 100)
    if tokens & QUANTITY_WORDS or tokens & {"number", "num"}:
        return "count", (1, 10)
    return "plain", (1, 100)
