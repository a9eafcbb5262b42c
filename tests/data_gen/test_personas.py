"""Persona sampling: top-k by similarity, restricted to the tool's line of business when it can be."""

from __future__ import annotations

import random

import pytest

from diaforge.data_gen.personas import PersonaSampler, same_line_of_business
from diaforge.schema import Persona, Tool
from diaforge.similarity import get_encoder


def _persona(pid: str, text: str, lob: str | None) -> Persona:
    return Persona(id=pid, description=text, line_of_business=lob)


# Finance personas whose text is about travel (so similarity alone would pick them for a travel
# tool), travel personas whose text is about ledgers, and a few without a line of business.
BANK = [
    _persona("fin-1", "Books flights, hotels and travel bookings for the whole finance team.", "finance"),
    _persona("fin-2", "Travel coordinator in accounting who books flights and trains weekly.", "finance"),
    _persona("fin-3", "Controller who books hotel stays and travel for auditors.", "Finance"),
    _persona("trv-1", "Reconciles the general ledger and posts journal entries.", "Travel & Expense"),
    _persona("trv-2", "Closes the books at month end and reviews accruals.", "travel and expense"),
    _persona("none-1", "Books flights and hotels for executives.", None),
    _persona("none-2", "Runs the warehouse night shift.", None),
]


def _tool(name: str, description: str, lob: str | None) -> Tool:
    return Tool(
        name=name,
        description=description,
        parameters={"type": "object", "properties": {}, "required": []},
        metadata={"line_of_business": lob} if lob else {},
    )


TRAVEL_TOOL = _tool("book_flight", "Books a flight and hotel for a business trip.", "travel and expense")


@pytest.fixture(scope="module")
def sampler() -> PersonaSampler:
    return PersonaSampler(BANK, get_encoder("tfidf"), top_k=4)


def test_same_line_of_business_ignores_case_and_punctuation() -> None:
    assert same_line_of_business("Travel & Expense", "travel and expense")
    assert same_line_of_business(" Finance ", "finance")
    assert not same_line_of_business("finance", "procurement")
    assert not same_line_of_business(None, None)
    assert not same_line_of_business("", "")


def test_draws_stay_inside_the_line_of_business(sampler: PersonaSampler) -> None:
    # The line holds 2 personas, fewer than top_k=4: the pool must not be topped up from other
    # lines, although the finance personas' texts are closer to a travel tool.
    assert {p.id for p in sampler.pool(TRAVEL_TOOL)} == {"trv-1", "trv-2"}
    drawn = {sampler.sample(TRAVEL_TOOL, random.Random(seed)).id for seed in range(60)}
    assert drawn == {"trv-1", "trv-2"}  # both drawn: randomised, and only these


def test_top_k_by_similarity_within_the_line(sampler: PersonaSampler) -> None:
    tool = _tool("book_travel", "Books flights and hotels for finance travel.", "finance")
    narrow = PersonaSampler(BANK, get_encoder("tfidf"), top_k=2)
    pool = narrow.pool(tool)
    assert len(pool) == 2 and all(p.line_of_business.lower() == "finance" for p in pool)
    ranked_finance = [p.id for p, _ in narrow.ranked(tool) if (p.line_of_business or "").lower() == "finance"]
    assert [p.id for p in pool] == ranked_finance[:2] == ["fin-1", "fin-2"]  # fin-3 is less similar


@pytest.mark.parametrize(
    "tool",
    [
        _tool("book_flight", "Books a flight and hotel for a business trip.", None),  # no metadata
        _tool("book_flight", "Books a flight and hotel for a business trip.", "aviation"),  # not in bank
    ],
)
def test_falls_back_to_the_whole_bank(sampler: PersonaSampler, tool: Tool) -> None:
    pool = sampler.pool(tool)
    ranked = [p for p, _ in sampler.ranked(tool)]
    assert pool == ranked[:4]
    # Without a usable line, similarity decides: the travel-booking texts come first.
    assert {p.id for p in pool} >= {"fin-1", "none-1"}
    drawn = {sampler.sample(tool, random.Random(seed)).id for seed in range(60)}
    assert drawn <= {p.id for p in pool} and len(drawn) > 1


def test_engine_draws_personas_from_the_line_of_business(tmp_path) -> None:
    from diaforge.data_gen.gen_config import GenerationConfig
    from diaforge.data_gen.seed_engine import Engine

    personas = tmp_path / "personas.jsonl"
    personas.write_text("\n".join(p.model_dump_json() for p in BANK) + "\n", encoding="utf-8")
    tools = [
        TRAVEL_TOOL,
        _tool("post_journal", "Posts a journal entry to the general ledger.", "finance"),
        _tool("ship_goods", "Ships goods from the warehouse to a customer.", None),
    ]
    cfg = GenerationConfig(personas=str(personas), encoder="tfidf", persona_top_k=3, k=1)
    engine = Engine(cfg, tools=tools)
    rng = random.Random(0)
    assert {engine._persona(TRAVEL_TOOL, rng).id for _ in range(40)} == {"trv-1", "trv-2"}
    assert {engine._persona(tools[1], rng).id for _ in range(40)} <= {"fin-1", "fin-2", "fin-3"}
    assert len({engine._persona(tools[2], rng).id for _ in range(40)}) == 3  # whole bank, top 3
