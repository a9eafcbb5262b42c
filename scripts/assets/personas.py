"""Compose the persona bank from its ingredients (`personas.yaml`, `persona_phrasing.yaml`).

Each line of business gets `per_line` personas: roles round-robin, then seniority, tone, duty,
company, region, pain, years, sentence template and jargon drawn from one seeded RNG, in a fixed
order; a description already used is drawn again. The bank interleaves the lines (one persona of
each line in turn), so any prefix of it covers every line. The RNG draws depend on the order of
every list in the sources: reordering one changes the bank.
"""

from __future__ import annotations

import random
from typing import Any

from diaforge.schema import Persona
from scripts.assets.sources import LineOfBusiness, PersonaKit, Phrasing

# Roles whose first word takes "an" though it starts with a consonant letter (read as initials).
AN_PREFIXES = ("FP&A", "HR ", "SAP", "IT ", "EHS")


def article(word: str) -> str:
    """The indefinite article for a role title."""
    return "an" if word[:1].lower() in "aeio" or word.startswith(AN_PREFIXES) else "a"


def _draw(rng: random.Random, kit: PersonaKit, phrasing: Phrasing, role_index: int, industries: list[str]):
    """One persona's fields and its description, drawn in the bank's fixed order."""
    role = kit.roles[role_index % len(kit.roles)]
    seniority = rng.choice(role.seniorities)
    tone = rng.choice(sorted(phrasing.tones))
    duty = rng.choice(role.duties)
    title = role.title
    fields = {
        "role": title,
        "Role": title[:1].upper() + title[1:],
        "a": article(title),
        "A": article(title).capitalize(),
        "company": f"{rng.choice(phrasing.company_sizes)} {rng.choice(industries)}",
        "region": rng.choice(phrasing.regions),
        "duty": duty,
        "Duty": duty[:1].upper() + duty[1:],
        "pain": rng.choice(kit.pains),
        "years": str(rng.randint(*phrasing.years_by_seniority[seniority])),
        "tone_habit": phrasing.tones[tone],
    }
    description = rng.choice(phrasing.templates).format(**fields)
    return {
        "description": description,
        "role": title,
        "department": role.department,
        "seniority": seniority,
        "tone": tone,
    }


def _for_line(
    rng: random.Random, lob: str, kit: PersonaKit, phrasing: Phrasing, per_line: int, seen: set[str]
) -> list[dict[str, Any]]:
    """`per_line` personas of one line of business, with descriptions unique across the bank."""
    industries = list(phrasing.goods_industries)
    if not kit.goods_industries_only:
        industries += phrasing.service_industries
    out: list[dict[str, Any]] = []
    while len(out) < per_line:
        drawn = _draw(rng, kit, phrasing, len(out), industries)
        if drawn["description"] in seen:
            continue
        seen.add(drawn["description"])
        out.append(
            {
                "description": drawn["description"],
                "role": drawn["role"],
                "department": drawn["department"],
                "line_of_business": lob,
                "seniority": drawn["seniority"],
                "tone": drawn["tone"],
                "jargon": rng.sample(kit.jargon, rng.randint(2, 4)),
            }
        )
    return out


def build_personas(
    rng: random.Random,
    lines: list[LineOfBusiness],
    kits: dict[str, PersonaKit],
    phrasing: Phrasing,
    per_line: int,
) -> list[dict[str, Any]]:
    """The persona bank: `per_line` personas per line of business, interleaved over the lines."""
    seen: set[str] = set()
    per_lob = {
        line.name: _for_line(rng, line.name, kits[line.name], phrasing, per_line, seen) for line in lines
    }
    personas: list[dict[str, Any]] = []
    for i in range(per_line):
        for line in lines:
            record = {"id": f"p{len(personas) + 1:04d}", **per_lob[line.name][i]}
            personas.append(Persona.model_validate(record).model_dump(mode="json"))
    return personas
