"""Values drawn for what a parameter's name and description call for (issue 52, item 3): a pet's
name is a pet's, a surname a surname, a postcode British, an identifier or a digit string where
the description's head says so, a listed choice one of the list; a string nothing calls for is a
generic draw, counted."""

from __future__ import annotations

import random
import re

import pytest

from diaforge.data_gen.values.generator import ValueGenerator
from diaforge.data_gen.values.vocabulary import FIRST_NAMES, LAST_NAMES, PET_NAMES


def _draws(name: str, description: str, n: int = 6) -> list[str]:
    gen = ValueGenerator(random.Random(3))
    return [gen.value_for(name, {"type": "string", "description": description}) for _ in range(n)]


def test_an_animals_name_is_a_pets_name() -> None:
    assert set(_draws("pet_name", "Name as registered.")) <= set(PET_NAMES)
    assert set(_draws("patient_name", "The animal's name on file.")) <= set(PET_NAMES)


def test_a_surname_is_one_word_of_a_persons_name() -> None:
    assert set(_draws("holder_surname", "Family name.")) <= set(LAST_NAMES)
    assert set(_draws("guest_forename", "")) <= set(FIRST_NAMES)


def test_a_postcode_is_british_and_a_zip_american() -> None:
    assert all(
        re.fullmatch(r"[A-Z]{1,2}\d{1,2}[A-Z]? \d[A-Z]{2}", v)
        for v in _draws("postcode", "Billing postcode.")
    )
    assert all(re.fullmatch(r"\d{5}", v) for v in _draws("zip", "Zip code."))


@pytest.mark.parametrize(
    ("name", "description", "shape"),
    [
        ("subject_mrn", "Medical record number of the subject.", r"[A-Z]+-?\d{4,6}"),
        ("tube", "The tube barcode, 10 digits.", r"\d{10}"),
        ("card_tail", "last 4 digits of the card", r"\d{4}"),
    ],
)
def test_the_descriptions_head_names_the_kind(name: str, description: str, shape: str) -> None:
    assert all(re.fullmatch(shape, v) for v in _draws(name, description))


def test_a_person_the_description_names_gets_a_persons_name() -> None:
    assert all(len(v.split()) == 2 for v in _draws("signed_off_by", "Staff member who signed the form."))


def test_a_choice_spelled_in_prose_or_backticks_is_said_as_written() -> None:
    assert set(_draws("route", "How to send it: post, courier or pickup.")) <= {"post", "courier", "pickup"}
    assert set(_draws("stage", "New stage, e.g. `awaiting_parts` or `closed`.")) <= {
        "awaiting_parts",
        "closed",
    }


def test_a_note_is_free_text_whoever_it_is_for() -> None:
    assert all(len(v.split()) > 2 for v in _draws("reviewer_note", "Optional note for the reviewer."))


def test_a_string_nothing_calls_for_is_a_counted_generic_draw() -> None:
    gen = ValueGenerator(random.Random(3))
    gen.value_for("frobnication", {"type": "string", "description": "The frobnication."})
    assert gen.generic_draws == 1


def test_a_number_in_international_format_is_a_telephone_number() -> None:
    plus = _draws("line", "The caller's mobile number, in international format.")
    assert all(re.fullmatch(r"\+\d{8,15}", v) for v in plus)
    bare = _draws("line", "Subscriber number in international format, without the plus sign.")
    assert all(re.fullmatch(r"\d{8,15}", v) for v in bare)
    # a date in international format stays a date
    assert all(
        re.fullmatch(r"\d{4}-\d{2}-\d{2}", v)
        for v in _draws("sail_on", "Date in international format, YYYY-MM-DD.")
    )


def test_the_schemas_own_examples_give_the_shape() -> None:
    gen = ValueGenerator(random.Random(5))
    coded = [gen.value_for("berth", {"type": "string", "examples": ["PNT-07-B"]}) for _ in range(6)]
    assert all(re.fullmatch(r"PNT-\d{2}-[A-Z]", v) for v in coded) and "PNT-07-B" not in coded
    digits = [gen.value_for("tag", {"type": "string", "example": "004471"}) for _ in range(6)]
    assert all(re.fullmatch(r"00\d{4}", v) for v in digits)


def test_the_name_says_a_place_before_the_description_names_a_person() -> None:
    # the description speaks of a customer, but the value is where to collect from
    said = _draws("collect_address", "As a customer, I say where the van should collect from.")
    assert all(re.fullmatch(r"\d+ [A-Z][a-z]+ [A-Z][a-z]+", v) for v in said)


def test_a_plain_example_word_says_the_kind_of_value() -> None:
    from diaforge.data_gen.values.vocabulary import MEDICAL_TERMS

    assert set(_draws("what_happened", "What the crew reported, in plain words, e.g. nausea.")) <= set(
        MEDICAL_TERMS
    )
    assert set(_draws("hazard", "The hazard seen, for example driftwood.")) == {"driftwood"}


def test_formats_and_providers_said_in_other_words() -> None:
    assert all(
        re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", v)
        for v in _draws("sail_start", "Start, as an ISO date-time.")
    )
    assert all(re.fullmatch(r"\d{13}", v) for v in _draws("barcode", "The 13-digit barcode on the crate."))
    names = _draws("insurer_name", "Who covers the boat.")
    from diaforge.data_gen.values.vocabulary import COMPANIES

    assert set(names) <= set(COMPANIES)


def _is_person(value: str) -> bool:
    first, _, last = value.partition(" ")
    return first in FIRST_NAMES and last in LAST_NAMES


def test_a_secret_is_never_the_name_of_the_person_it_belongs_to() -> None:
    """ "The member sign-in token" and "The rider's passcode to log in" mention a person, but their
    head is a secret: a token of hexadecimal digits, a password of words and digits."""
    tokens = _draws("session_token", "The member sign-in token.")
    assert all(re.fullmatch(r"[0-9a-f]{24}", v) for v in tokens), tokens
    codes = _draws("rider_passcode", "The rider passcode to log in.")
    assert all(re.fullmatch(r"[A-Z][a-z]+\d\d[A-Z][a-z]+", v) for v in codes), codes


def test_a_person_word_before_or_after_the_head_does_not_make_a_person() -> None:
    # the head is "phrase" ("entered by the member" comes after it) and "badge" ("member" before it)
    assert not any(_is_person(v) for v in _draws("lookup_phrase", "The search phrase entered by the member."))
    assert not any(_is_person(v) for v in _draws("badge", "The member badge colour."))
    # a person head still is one
    assert all(_is_person(v) for v in _draws("signer", "Colleague who countersigns the form."))


def test_the_name_of_a_thing_names_that_thing() -> None:
    """ "kiln_name" is a kiln's name ("Cedar Kiln"), never a person's; "glazier_name" and a
    description that says a person ("Full name of ...") stay a person's."""
    kilns = _draws("kiln_name", "Name of the kiln to fire.")
    assert all(v.endswith(" Kiln") and not _is_person(v) for v in kilns), kilns
    assert all(_is_person(v) for v in _draws("glazier_name", "Full name of the glazier on shift."))
    assert all(_is_person(v) for v in _draws("dentist_name", "Name of the dentist."))


def test_a_day_in_mm_dd_is_a_real_day_and_a_web_address_example_gives_an_address() -> None:
    """ "MM-DD format (e.g. '04-15')" is a month and a day ("09-68" is neither); an example that
    is a web address gives a web address, never its words shuffled ("https://zoe.ledger.zoe")."""
    from datetime import date

    for v in _draws("firing_day", "Day of the firing in MM-DD format (e.g. '04-15').", n=12):
        month, day = (int(x) for x in v.split("-"))
        date(2026, month, day)  # raises on "09-68"
    assert all(
        re.fullmatch(r"https://[a-z0-9.-]+\.[a-z]{2,}(/\S*)?", v)
        for v in _draws("shop_page", "Page to open (e.g. 'https://www.kilnworks.org').")
    )


@pytest.mark.parametrize(
    ("name", "description", "shape"),
    [
        (
            "kiln_ip",
            "The IPv4 address of the kiln controller (e.g., '192.168.1.1').",
            r"(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)",
        ),
        ("photo_file", "File to save the glaze photo to, such as 'vase.png'.", r"[a-z]+_[a-z]+\.png"),
        ("glaze_log_path", "Path to the JSON log of the firing.", r"data/[a-z]+/[a-z]+_[a-z]+\.json"),
        ("tasting_dish", "The dish served at the studio opening.", r"[A-Za-z ]+"),
        ("key", "The key the studio's opening tune is played in.", r"[A-G](?:-flat)? (?:major|minor)"),
        ("county", "The county the studio is registered in.", r"[A-Z][a-z]+ County"),
    ],
)
def test_values_of_kinds_a_description_names_fit_and_are_read_back(
    name: str, description: str, shape: str
) -> None:
    from diaforge.data_gen.values import extract_value, phrase_values, render_value

    spec = {"type": "string", "description": description}
    for seed, value in enumerate(_draws(name, description)):
        assert re.fullmatch(shape, value), value
        said = phrase_values([(name, render_value(value))], random.Random(seed))
        assert extract_value(said, name, spec) == (True, value), said


def test_the_two_ends_of_a_move_differ() -> None:
    """A glaze moved "from_kiln" "to_kiln", a price "source_currency" to "target_currency": never
    the same value at both ends."""
    from diaforge.schema import Tool

    code = {"type": "string", "enum": ["K1", "K2"]}
    money = {"type": "string", "description": "ISO 4217 currency code."}
    props = {"from_kiln": code, "to_kiln": code, "source_currency": money, "target_currency": money}
    tool = Tool(
        name="move_glaze_batch",
        description="Moves a glaze batch between kilns.",
        parameters={"type": "object", "properties": props, "required": list(props)},
    )
    for seed in range(60):
        args = ValueGenerator(random.Random(seed)).gold_args(tool)
        assert args["from_kiln"] != args["to_kiln"], args
        assert args["source_currency"] != args["target_currency"], args


def test_an_end_comes_after_its_start_in_nested_objects_and_wcf_dates() -> None:
    from diaforge.schema import Tool

    stamp = {"type": "string", "example": "/Date(1547164800000+0000)/"}
    shift = {
        "type": "object",
        "properties": {"StartDate": stamp, "EndDate": stamp},
        "required": ["StartDate", "EndDate"],
    }
    tool = Tool(
        name="create_kiln_rota",
        description="Creates a kiln rota.",
        parameters={
            "type": "object",
            "properties": {"shifts": {"type": "array", "items": shift, "minItems": 3}},
            "required": ["shifts"],
        },
    )
    for seed in range(30):
        for item in ValueGenerator(random.Random(seed)).gold_args(tool)["shifts"]:
            start, end = (int(re.search(r"\((-?\d+)", item[k]).group(1)) for k in ("StartDate", "EndDate"))
            assert end >= start, item  # the same day is a range too


def test_numbered_address_lines_are_a_street_then_a_unit() -> None:
    first = _draws("kiln_address1", "The first line of the studio's address, such as '12 Clay Lane'.")
    assert all(re.fullmatch(r"\d+ [A-Z][\w ]+", v) for v in first), first
    second = _draws("kiln_address2", "The second line of the studio's address, such as 'Unit 3' or ''.")
    assert all(re.fullmatch(r"(Apt|Suite|Unit|Floor) \d+", v) for v in second), second
    named = _draws("kiln_address2", "Extra address details.")  # the name alone says the second line
    assert all(re.fullmatch(r"(Apt|Suite|Unit|Floor) \d+", v) for v in named), named


def test_a_count_of_bags_or_travellers_is_a_few() -> None:
    gen = ValueGenerator(random.Random(3))
    for name in ("total_baggages", "nonfree_bags", "adults"):
        spec = {"type": "integer", "description": "How many are included."}
        drawn = [gen.value_for(name, spec) for _ in range(8)]
        assert all(1 <= v <= 10 for v in drawn), (name, drawn)


def test_a_service_named_by_example_is_a_sample_brand_never_a_word_token() -> None:
    from diaforge.data_gen.values.vocabulary import BRANDS, CITIES

    drawn = _draws("firing_platform", "Kiln firing platform (e.g. 'Skutt').")
    assert drawn and all(v in BRANDS for v in drawn), drawn
    assert all(v in CITIES for v in _draws("meeting_spot", "Where the potters meet (e.g. 'Berlin').")), (
        "a place"
    )


def test_a_number_its_description_says_counts_things_is_a_few() -> None:
    gen = ValueGenerator(random.Random(5))
    for description in ("Number of glazes in the firing.", "How many kilns to book."):
        drawn = [gen.value_for("glazes", {"type": "integer", "description": description}) for _ in range(8)]
        assert all(1 <= v <= 10 for v in drawn), (description, drawn)


def test_a_pattern_that_only_lists_characters_leaves_the_value_to_the_name() -> None:
    gen = ValueGenerator(random.Random(2))
    spec = {
        "type": "string",
        "pattern": "^[a-z0-9_-]{2,50}$",
        "description": "glaze_source value, e.g. newsletter.",
    }
    drawn = [gen.value_for("glaze_source", spec) for _ in range(6)]
    assert all(re.fullmatch(r"[a-z][a-z_-]+", v) for v in drawn), drawn


def test_a_hyphenated_word_given_as_an_example_is_said_as_a_word_never_reshaped() -> None:
    drawn = _draws(
        "skill_level", "The level of skill needed for the class (e.g. entry-level, mid-level, senior-level)."
    )
    assert all(v in ("entry-level", "mid-level", "senior-level") for v in drawn), drawn
