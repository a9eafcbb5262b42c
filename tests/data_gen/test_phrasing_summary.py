"""The structural summary of a description (`phrasing.summary`), the parse's confidence gate
(`intents.sure`) and the plain wordings they fall back to: one test per shape class, each written
in words no catalogue we measure uses, so that a test passes for the shape and not the words."""

from __future__ import annotations

import pytest

from diaforge.data_gen.phrasing import intent_of
from diaforge.data_gen.phrasing.intents import stray_verb, sure
from diaforge.data_gen.phrasing.options import option_descriptors
from diaforge.data_gen.phrasing.render import action, fallback_option, option_phrases
from diaforge.data_gen.phrasing.shorthand import plain_description
from diaforge.data_gen.phrasing.summary import imperative, summary
from diaforge.schema import Tool


def _tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # a docstring: the summary line, never its sections
        (
            "Archive a project by its key.\n\nArgs:\n    key: The project key.\n\nReturns:\n    None.",
            "Archive a project by its key.",
        ),
        (
            "Archive a project by its key. Args: key: the key. Returns: nothing.",
            "Archive a project by its key.",
        ),
        # markdown: emphasis and backticks go, bullets and an example line are cut
        (
            "**Archives** a `project` by key.\n- keeps its history\n\nExample: `archive(key=1)`",
            "Archives a project by key.",
        ),
        ("## Archive\nArchives a [project](https://x.test/p) by key.", "Archive Archives a project by key."),
        # HTML, an HTTP route, a tag
        ("<p>Deletes a <b>webhook</b>.</p><p>Needs admin rights.</p>", "Deletes a webhook."),
        ("POST /v1/webhooks - Creates a webhook subscription.", "Creates a webhook subscription."),
        ("[DEPRECATED] Lists the legacy exports.", "Lists the legacy exports."),
        ("Deprecated: lists the legacy exports.", "lists the legacy exports."),
    ],
)
def test_summary_keeps_what_the_tool_does_and_drops_the_structure(description: str, expected: str) -> None:
    assert summary(description) == expected


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        ("Use this tool to archive a project.", "To archive a project."),
        ("Call this to archive a project.", "To archive a project."),
        ("Use this when the customer wants to cancel a subscription.", "Cancel a subscription."),
        ("This function will rotate the signing keys.", "Rotate the signing keys."),
        ("This endpoint returns the open shifts.", "To return the open shifts."),
        ("Is used to archive a project.", "To archive a project."),
        ("Can be used for archiving projects in bulk.", "To archive projects in bulk."),
        ("Allows the caller to export a payroll report.", "To export a payroll report."),
        ("Lets an operator pause a nightly job.", "To pause a nightly job."),
        ("Responsible for sending invoices to a customer.", "Send invoices to a customer."),
        ("Helper that renames a shared folder.", "Rename a shared folder."),
        ("Will queue a reindex of the catalogue.", "To queue a reindex of the catalogue."),
        # the tool's own name in title case, with its acronym, before "API to" / "API for"
        (
            "Tide Table Lookup (TTL) API to fetch the high tides of a harbour.",
            "Fetch the high tides of a harbour.",
        ),
        ("Berth Planner service for reserving a berth at a quay.", "To reserve a berth at a quay."),
        # words in lower case before the tool word are no name: "Add an API for ..." acts on the API
        ("Register a new API for monitoring.", "Register a new API for monitoring."),
    ],
)
def test_a_preamble_goes_and_what_follows_is_an_order(description: str, expected: str) -> None:
    assert summary(description) == expected


@pytest.mark.parametrize(
    "description",
    [
        "Use this when the customer knows the order number but not the account.",
        "Call this when the same dose was given to several patients at once.",
        "Is used when a parcel cannot be delivered.",
        "Do not use for deleting projects.",
        "For a whole fleet, call fleet_bulk_archive instead.",
    ],
)
def test_a_sentence_about_using_the_tool_says_nothing_it_does(description: str) -> None:
    assert summary(description) == ""


def test_a_usage_sentence_after_the_summary_is_dropped() -> None:
    assert summary("Archive a project. Do not use for deleting projects.") == "Archive a project."


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Cancelling a subscription at period end", "cancel a subscription at period end"),
        ("Re-sending a receipt", "re-send a receipt"),
        ("Batch-approving timesheets for a team", "approve timesheets for a team in a batch"),
        ("Listing all open tickets", "list all open tickets"),
        ("Renewing member cards; needs approved payment", "renew member cards; needs approved payment"),
        ("Building permits issued this year", "Building permits issued this year"),
    ],
)
def test_a_gerund_opening_is_an_order(sentence: str, expected: str) -> None:
    assert imperative(sentence) == expected


def test_a_dash_remark_is_a_clause_of_its_own() -> None:
    tool = _tool("ops_create_export", "Creating an export — not started yet.")
    assert intent_of(tool).phrase == "create an export"
    assert (
        "not" not in option_descriptors([tool, _tool("ops_delete_export", "Deletes an export.")])[tool.name]
    )


def test_a_bulleted_remark_is_not_glued_to_the_object() -> None:
    tool = _tool("wh_get", "**Gets** a warehouse by its `code`.\n\n- includes the stock levels\n")
    assert intent_of(tool).tail == "by its code"


@pytest.mark.parametrize(
    ("words", "index"),
    [
        (["by", "its", "code", "includes", "the", "stock"], 3),
        (["not", "started", "yet"], 0),
        (["that", "is", "still", "a", "draft"], None),
        (["they", "already", "have"], 0),
        (["you", "already", "have"], None),
    ],
)
def test_a_stray_finite_verb_is_found_outside_a_clause_of_its_own(
    words: list[str], index: int | None
) -> None:
    assert stray_verb(words) == index


@pytest.mark.parametrize(
    ("name", "description", "absent"),
    [
        ("ops_escalate_ticket", "The dispatcher is paged automatically.", " is"),
        ("ops_sync_ledger", "Syncing ledger entries.", "the syncing"),
        ("ops_purge_cache", "Can be used when the cache is stale.", "can"),
        ("ops_rotate_keys", "Use this when the user reports a leaked key.", "use this"),
    ],
)
def test_a_reading_the_gate_does_not_trust_is_never_said(name: str, description: str, absent: str) -> None:
    tool = _tool(name, description)
    said = action(tool, tools=[tool])
    assert absent not in said.lower()
    assert absent not in fallback_option(tool, tools=[tool]).lower()


def test_the_gate_keeps_a_clause_that_is_the_object() -> None:
    assert sure(intent_of(_tool("unit_vacancy", "Whether a unit is vacant.")))
    assert not sure(intent_of(_tool("ops_x", "")).__class__("look up", "the requester is", source="lookup"))


def test_an_irregular_participle_ends_the_object() -> None:
    tool = _tool("clinic_record_dose", "Record a single dose given during a visit.")
    assert intent_of(tool).phrase == "record a single dose"


@pytest.mark.parametrize(
    ("name", "expected", "tail"),
    [
        ("shop_find_invoice_by_number", "find the invoice", "by number"),
        ("shop_archive_orders_bulk", "archive orders", "in bulk"),
        ("shop_reject_return", "deal with the reject return", ""),  # unsure: the action falls back
    ],
)
def test_a_name_speaks_when_the_description_says_nothing(name: str, expected: str, tail: str) -> None:
    tool = _tool(name, "Use this when the customer asks about it.")
    intent = intent_of(tool, frozenset({"shop"}))
    assert (intent.phrase, intent.tail) == (expected, tail)
    if intent.verb == "deal with":
        assert action(tool, frozenset({"shop"}), [tool]).startswith("use the option about ")


def test_an_argument_name_that_ends_on_a_preposition_says_what_it_is() -> None:
    from diaforge.data_gen.phrasing.render import param_noun

    assert (
        param_noun("available_from", {"description": "First day it can be let (YYYY-MM-DD)."})
        == "available-from date"
    )
    assert param_noun("opted_in", {"type": "string"}) == "opted-in value"


@pytest.mark.parametrize(
    ("name", "description", "phrase"),
    [
        ("QueryPlaces", "API to search places based on the given keywords.", "search places"),
        ("think", "Use the tool to think about something.", "think about something"),
        (
            "get_top_articles",
            "Help articles most viewed by customers this week.",
            "look up the help articles",
        ),
        (
            "list_recurring_templates",
            "Recurring journal entry templates defined for your company codes.",
            "look up the recurring journal entry",
        ),
    ],
)
def test_a_preamble_is_read_only_where_it_is_one(name: str, description: str, phrase: str) -> None:
    """ "API to search" keeps its order though "search" can be a noun; "Help articles" is no
    "helps"; a gerund before a noun phrase that a participle closes is no order."""
    assert intent_of(_tool(name, description)).phrase == phrase


@pytest.mark.parametrize(
    ("description", "tail"),
    [
        (
            "Records a price increase a supplier has announced for a material.",
            "a supplier has announced for a material",
        ),
        (
            "Books an accrual for expenses incurred but not yet invoiced.",
            "for expenses incurred but not yet invoiced",
        ),
    ],
)
def test_a_tail_keeps_a_clause_of_its_own(description: str, tail: str) -> None:
    assert intent_of(_tool("fi_x", description)).tail == tail


@pytest.mark.parametrize(
    ("description", "phrase"),
    [
        (
            "Remaining life of the cutting tools and moulds used at a work center.",
            "look up the remaining life of the cutting tools",
        ),
        (
            "Your upcoming meeting room reservations, with building and time.",
            "look up your upcoming meeting room reservations",
        ),
    ],
)
def test_an_adjective_in_ing_opens_a_noun_phrase_the_gate_keeps(description: str, phrase: str) -> None:
    assert intent_of(_tool("fac_x", description)).phrase == phrase


@pytest.mark.parametrize(
    ("key", "said"),
    [("invoiceNo", "invoice number"), ("addressLine1", "address line 1"), ("subject_mrn", "subject MRN")],
)
def test_an_argument_name_is_said_aloud(key: str, said: str) -> None:
    from diaforge.data_gen.phrasing.render import param_noun

    assert param_noun(key, {"type": "string"}) == said


def test_a_tail_that_opens_with_a_pronoun_nothing_names_is_dropped() -> None:
    tool = _tool(
        "desk_move", "Use this when the owner wants to move a booking they already hold to another day."
    )
    assert (intent_of(tool).phrase, intent_of(tool).tail) == ("move a booking", "")


def test_the_validator_reads_what_a_tool_does_not_its_usage_notes() -> None:
    """A word the other tool's description uses only to say when not to use it ("Do not use to
    move an appointment") still tells the gold tool apart (`validators`, `unsettled_choice`)."""
    from diaforge.data_gen import validators

    move = _tool("vet_move", "Use this when the owner wants to move an appointment.")
    book = _tool("vet_book", "Call this to book an appointment. Do not use to move an appointment.")
    assert "move" in validators._said_stems(move) - validators._said_stems(book)


def test_options_read_from_names_share_their_verb_and_the_user_picks_a_noun_phrase() -> None:
    import random

    from diaforge.data_gen.agents.options import gold_choice
    from diaforge.data_gen.phrasing.render import option_phrases

    one = _tool("vet_record_dose", "Record a single dose given during a visit.")
    bulk = _tool(
        "vet_record_doses_bulk", "Call this when the same dose was given to several animals at once."
    )
    assert option_phrases([one, bulk], frozenset({"vet"}))[1]["vet_record_doses_bulk"] == "doses in bulk"
    assert gold_choice(bulk, [one, bulk], random.Random(0)) == "doses in bulk"


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # an operation's own identifier before a dash or a colon
        ("ArchiveVault - moves a vault into cold storage.", "moves a vault into cold storage."),
        ("vault.archive: Moves a vault into cold storage.", "Moves a vault into cold storage."),
        ("archive_vault - moves a vault into cold storage.", "moves a vault into cold storage."),
        # a question to the reader, a labelled remark and a shouted one say nothing the tool does
        ("Vault full? Moves a vault into cold storage.", "Moves a vault into cold storage."),
        (
            "Moves a vault into cold storage. NOTE: the vault is locked first.",
            "Moves a vault into cold storage.",
        ),
        ("Moves a vault into cold storage. KEYS ARE NEVER COPIED.", "Moves a vault into cold storage."),
        # a condition or a setting before the verb
        ("If a vault has been idle for a year, moves it into cold storage.", "Moves it into cold storage."),
        ("For auditors only: unseals a vault for one day.", "Unseals a vault for one day."),
        (
            "When the owner has left, on request, moves a vault into cold storage.",
            "Moves a vault into cold storage.",
        ),
        # a comma after a list is no setting's end: "ledgers and" holds no verb
        ("For vaults, ledgers and keys, lists the owners.", "Lists the owners."),
        # "this" and a verb before its object
        ("This seals a vault for good.", "To seal a vault for good."),
    ],
)
def test_summary_finds_the_sentence_and_the_verb_that_say_what_the_tool_does(
    description: str, expected: str
) -> None:
    assert summary(description) == expected


def test_a_lone_question_is_kept_when_nothing_else_is_said() -> None:
    assert summary("Is the vault sealed?") == "Is the vault sealed."


@pytest.mark.parametrize(
    ("name", "description", "phrase"),
    [
        # a first sentence of background yields to the action the second opens with
        ("seal_vault", "Vaults may be reopened within a week. Seals a vault for good.", "seal a vault"),
        ("seal_vault", "Each vault keeps a ledger of its keys. Seals a vault for good.", "seal a vault"),
        ("seal_vault", "Old vaults become read-only after a year. Seals a vault for good.", "seal a vault"),
        # a noun phrase first stays the look-up: the second sentence is about it
        (
            "get_vault_audit",
            "Audit trail of one vault. Lists who opened it and when.",
            "look up the audit trail",
        ),
        (
            "get_vault_ledger",
            "Key ledger for one vault. Scores each key by its age.",
            "look up the key ledger",
        ),
    ],
)
def test_background_before_the_action_is_not_the_action(name: str, description: str, phrase: str) -> None:
    assert action(_tool(name, description)).startswith(phrase)


@pytest.mark.parametrize(
    ("name", "description", "absent"),
    [
        # the object opens with a pronoun whose thing was in a cut condition
        ("renew_vault_lease", "If a lease is nearly over, extends its term by a year.", "its term"),
        # a clause read as a noun phrase
        ("seal_vault", "Whenever a vault is full of keys.", "the whenever"),
    ],
)
def test_the_gate_refuses_a_reading_that_names_nothing_said(name: str, description: str, absent: str) -> None:
    assert absent not in action(_tool(name, description))


@pytest.mark.parametrize(
    ("name", "description", "phrase"),
    [
        # a list of adjectives before its noun stays whole in the option
        (
            "swap_lamp",
            "Swaps one cracked, dim or flickering street lamp for a new one.",
            "cracked, dim or flickering street lamp",
        ),
        # a head two modifiers share: "a kerb-side or garden collection", never "a kerb-side"
        (
            "book_collection",
            "Books a kerb-side or garden collection for one house.",
            "book a kerb-side or garden collection",
        ),
        # JSDoc tags are no part of what the tool does
        (
            "dim_lamp",
            "Dims one street lamp at night. @param {string} lampId the lamp. @returns {Job} the job.",
            "dim one street lamp",
        ),
        # a verb and its that-clause: the name speaks, never "look up the notes that ..."
        ("report_broken_lamp", "Reports that one lamp on a street is broken.", "report a broken lamp"),
    ],
)
def test_lists_shared_heads_tags_and_clauses_are_read_whole(name: str, description: str, phrase: str) -> None:
    tool = _tool(name, description)
    said = (
        action(tool)
        + " | "
        + " | ".join(option_phrases([tool, _tool("other_tool", "Paints a fence.")])[1].values())
    )
    assert phrase in said and "@param" not in said


def test_a_relative_clause_after_a_plural_stays_a_look_up() -> None:
    # "Lamps that ..." is a noun phrase with a relative clause, not a verb and its clause
    assert action(_tool("list_dark_lamps", "Lamps that stay dark after dusk, by street.")).startswith(
        "look up the lamps"
    )


def test_an_option_cut_to_length_never_ends_inside_a_clause_or_before_its_particle() -> None:
    shift = _tool(
        "shift_berth",
        "Shifts a moored boat over to another berth on the far pontoon whenever the first one floods at a spring tide.",
    )
    drop = _tool(
        "drop_mooring", "Drops a mooring before the harbour crew has hauled it in, so that no fee is charged."
    )
    book = _tool("book_berth", "Books a visitor berth for one night.")
    said = option_phrases([shift, drop, book])[1]
    # the clause a cut would leave without its verb goes whole; a particle after "it" stays
    assert said["shift_berth"] == "shift a moored boat over to another berth on the far pontoon"
    assert said["drop_mooring"] == "drop a mooring before the harbour crew has hauled it in"


@pytest.mark.parametrize(
    ("name", "description", "wrong", "head"),
    [
        # a plural noun, then its clause without "that": the clause's subject is no object, and
        # the phrase ends on the plural noun itself
        (
            "list_unread_letters",
            "Letters nobody has opened yet in a parish office, oldest first.",
            "letter nobody",
            "letters",
        ),
        ("list_missed_buses", "Buses riders have reported late this week, by route.", "bus riders", "buses"),
    ],
)
def test_a_plural_noun_and_its_clause_without_that_is_no_verb(
    name: str, description: str, wrong: str, head: str
) -> None:
    said = action(_tool(name, description))
    assert wrong not in said and said.split()[-1] == head
    # a verb whose object has a determiner keeps its verb ("Checks | the tide | is ...")
    assert action(_tool("check_tide", "Checks the tide is low before a launch.")).startswith("check the tide")


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # a user story: the role and the modal go, and the benefit clause is no object
        (
            "As a warden, I can lock one gate at dusk, so that nobody walks in.",
            "To lock one gate at dusk, so that nobody walks in.",
        ),
        ("As an owner, we want to renew a berth for a year.", "Renew a berth for a year."),
        # the story's speaker is the user, so the description speaks to them
        (
            "As a harbour clerk, I can hold a berth near my office until I am back from lunch.",
            "To hold a berth near your office until you are back from lunch.",
        ),
        (
            "As tenants, we want to report a leak in our flat, so that it is fixed.",
            "To report a leak in your flat, so that it is fixed.",
        ),
        # a company's "we" is not the user: its "our" stays
        (
            "We weigh our catch at the quay and send you the slip.",
            "Weigh our catch at the quay and send you the slip.",
        ),
        # labelled fields that name the verb and its object
        ("Action: lock. Object: one gate of a park. Effect: the gate shuts.", "Lock one gate of a park."),
    ],
)
def test_stories_and_labelled_fields_say_their_action(description: str, expected: str) -> None:
    assert summary(description).startswith(expected)


@pytest.mark.parametrize(
    ("name", "description", "phrase"),
    [
        # what the tool makes, named as a thing, under a name that opens with the verb
        ("lock_gate", "A locked gate with its keys returned to the warden's box.", "lock a gate"),
        ("reschedule_berth", "The same berth moved to a new week at no charge.", "reschedule a berth"),
        ("buy_seat_pass", "Buying of one extra seat pass for the season.", "buy a seat pass"),
        # a verb only as a noun in the description: the look-up stands
        ("report_history", "History of reports filed against one berth.", "look up the history of reports"),
        ("warden_rota", "Rota of the wardens of one park.", "look up the rota"),
    ],
)
def test_an_outcome_named_as_a_thing_is_done_by_the_names_verb(
    name: str, description: str, phrase: str
) -> None:
    assert action(_tool(name, description)).startswith(phrase)


def test_the_clause_a_user_picks_keeps_a_list_of_adjectives_whole() -> None:
    from diaforge.data_gen.phrasing.options import distinguishing_clause

    cover = _tool(
        "refill_cover", "Orders a refill for one torn, faded or missing seat cover. The old one is kept."
    )
    swap = _tool("swap_seat", "Swaps a seat for a wider one of the same colour.")
    assert distinguishing_clause(cover, [cover, swap]).endswith("one torn, faded or missing seat cover")


@pytest.mark.parametrize(
    ("written", "said"),
    [
        # "you" after a verb whose object it is: "me"
        ("tell you which gates are shut", "tell me which gates are shut"),
        ("enrol you in your parish scheme", "enrol me in my parish scheme"),
        ("show you exactly how far your boat went", "show me exactly how far my boat went"),
        ("lets you choose a mooring", "lets me choose a mooring"),
        # "you" as a subject: "I", and the verb agrees
        ("so you get a berth by noon", "so I get a berth by noon"),
        ("a fee you pay at the gate", "a fee I pay at the gate"),
        ("so you are never charged twice", "so I am never charged twice"),
        ("works for you", "works for me"),
    ],
)
def test_a_description_in_the_users_mouth(written: str, said: str) -> None:
    from diaforge.data_gen.phrasing.english import in_user_voice

    assert in_user_voice(written) == said


def test_a_user_storys_first_person_is_you_to_the_user_and_i_in_their_mouth() -> None:
    from diaforge.data_gen.phrasing.english import in_user_voice

    berth = _tool(
        "hold_berth", "As a harbour clerk, I can hold a berth near my office until I am back from lunch."
    )
    buoy = _tool("hold_buoy", "As a harbour clerk, I can hold a mooring buoy for a visiting yacht.")
    offered = option_phrases([berth, buoy])[1]["hold_berth"]
    assert offered == "a berth near your office until you are back from lunch"
    assert in_user_voice(offered) == "a berth near my office until I am back from lunch"


def test_options_that_differ_after_a_shared_preposition_keep_what_the_verb_acts_on() -> None:
    # "book a club squad" would book the squad, not the lane
    squad = _tool("book_lane", "Books one swimming lane for a club squad on a weekday morning.")
    lesson = _tool("book_lesson_lane", "Books one swimming lane for a private lesson with a coach.")
    verb, offered = option_phrases([squad, lesson])
    assert verb == "book"
    assert offered["book_lane"] == "one swimming lane for a club squad on a weekday morning"
    assert offered["book_lesson_lane"] == "one swimming lane for a private lesson with a coach"


def test_a_preposition_stranded_by_a_clause_without_that_ends_the_phrase() -> None:
    from diaforge.data_gen.phrasing.broken import broken_phrases

    card = _tool("refund_card", "Refunds a payment to the card it was taken from.")
    wallet = _tool("refund_wallet", "Refunds a payment to a store wallet.")
    assert option_phrases([card, wallet])[1]["refund_card"] == "a payment to the card it was taken from"
    assert not broken_phrases("Should I refund a payment to the card it was taken from?")
    assert broken_phrases("I need to refund a payment to the card from.")  # a preposition without its object


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # a department label before a verb goes; one before a noun phrase stays
        ("Moorings: lets out one berth for a night.", "Lets out one berth for a night."),
        ("[Chandlery] sells one coil of rope.", "sells one coil of rope."),
        ("Returns: the berth's balance.", "Returns: the berth's balance."),
        # a phrase that names a thing before its colon is no label, nor one before a dash
        (
            "One view of a berth: open fees, tides and contacts.",
            "One view of a berth: open fees, tides and contacts.",
        ),
        ("Your boat profile: seat and sail preferences.", "Your boat profile: seat and sail preferences."),
        # what the agent is told to do is no part of what the tool does
        (
            "You should call this when a skipper asks for a berth. You must check the tide table first.",
            "",
        ),
        # "2 p.m." ends no sentence
        (
            "Lets out one berth; berths let after 2 p.m. start the next day.",
            "Lets out one berth; berths let after 2 p.m. start the next day.",
        ),
    ],
)
def test_labels_and_orders_to_the_agent_are_not_the_action(description: str, expected: str) -> None:
    assert summary(description) == expected


def test_a_clause_whose_subject_is_a_noun_is_kept_whole_and_a_second_verb_ends_the_option() -> None:
    hire = _tool(
        "hire_kayak",
        "Will hire out one kayak at the jetty the paddler is waiting at and start the hire clock.",
    )
    store = _tool("store_kayak", "Will store one kayak in the boathouse for the winter.")
    offered = option_phrases([hire, store])[1]
    assert offered["hire_kayak"] == "hire out one kayak at the jetty the paddler is waiting at"
    # the clause's verb in the third person ("the paddler waits at") keeps it whole too
    hire = _tool("hire_kayak", "Will hire out one kayak at the jetty the paddler waits at.")
    offered = option_phrases([hire, store])[1]
    assert offered["hire_kayak"] == "hire out one kayak at the jetty the paddler waits at"


def test_the_plain_wording_of_a_bulk_tool_says_what_it_acts_on_and_how() -> None:
    one = _tool("order_spare_rope", "You should call this when a boat needs rope.")
    many = _tool("order_spare_rope_bulk", "You should call this when a fleet needs rope.")
    assert fallback_option(one) == "the option about ropes"
    assert fallback_option(many) == "the option about ropes in bulk"


def test_an_option_keeps_the_head_it_shares_and_a_pronoun_after_a_preposition() -> None:
    shift = _tool("shift_berthing", "Shifts the date or length of an existing berthing.")
    drop = _tool("drop_berthing", "Drops a berthing.")
    assert (
        option_phrases([shift, drop])[1]["shift_berthing"]
        == "shift the date or length of an existing berthing"
    )
    move = _tool(
        "move_fee", "Moves a fee that is already billed from one tab to another, for example a crew tab."
    )
    add = _tool("add_fee", "Adds one fee to a tab.")
    assert (
        option_phrases([move, add])[1]["move_fee"]
        == "move a fee that is already billed from one tab to another"
    )


def test_a_number_range_stays_in_the_object() -> None:
    assert (
        action(_tool("hold_moorings", "Holds a row of 3 to 12 moorings for a regatta."))
        == "hold a row of 3 to 12 moorings"
    )


def test_a_coordinated_noun_or_participle_at_the_cut_stays() -> None:
    # "or values", "or consumed" are no second verb: nothing after them is their object
    held = _tool("hold_crate", "Puts a crate on hold at the quay so it cannot be loaded or shipped.")
    free = _tool("free_crate", "Frees a crate from a hold.")
    assert option_phrases([held, free])[1]["hold_crate"].endswith("so it cannot be loaded or shipped")


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        (
            "A telescope slot is reserved for the observer on the chosen night.",
            "Reserve a telescope slot for the observer on the chosen night.",
        ),
        # a first word that can be a verb is a noun before "are": nothing else makes it a sentence
        (
            "Survey plates from every night are listed for a star, newest first.",
            "List survey plates from every night for a star, newest first.",
        ),
        ("The dome log is then archived by night.", "Archive the dome log by night."),
        # a condition, not an act; a subject with a clause or an adverb; a second predicate
        ("Payment is required.", "Payment is required."),
        ("Only the observers you name are invited.", "Only the observers you name are invited."),
        ("Returns whether a dome is open.", "Returns whether a dome is open."),
        (
            "The credit stays saved and is given back later.",
            "The credit stays saved and is given back later.",
        ),
        # a passive after the first sentence is a side effect the tool has
        (
            "Books a dome. The observer is notified by email.",
            "Books a dome. The observer is notified by email.",
        ),
    ],
)
def test_a_passive_first_sentence_is_an_order_in_the_active(description: str, expected: str) -> None:
    assert summary(description) == expected


def test_a_passive_description_gives_the_action_its_verb() -> None:
    slot = _tool("reserve_slot", "A telescope slot is reserved for the observer on the chosen night.")
    assert action(slot).startswith("reserve a telescope slot")
    plates = _tool(
        "search_plates", "Survey plates are searched by star name when the catalogue number is unknown."
    )
    assert action(plates).startswith("search survey plates")


def test_the_quoted_names_of_the_tools_parameters_are_not_read_as_its_words() -> None:
    said = summary("Returns open berths based on the search parameters - 'quay', 'length_m', and 'draft'.")
    assert said == "Returns open berths based on the search parameters."
    assert summary('Finds a pilot by the fields: "licence" or "port".') == "Finds a pilot by the fields."
    # a quoted value that is no list of names after such a word stays
    assert summary("Marks a berth as 'closed' for the night.") == "Marks a berth as 'closed' for the night."


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        # a purpose said as a fragment, and a second gerund with its object
        ("In order to move a kennel stay to later dates.", "To move a kennel stay to later dates."),
        (
            "For cancelling a kennel stay and refunding it, minus the fee.",
            "Cancel a kennel stay and refund it, minus the fee.",
        ),
        # a contract's duty, after a setting too; a second duty in the same sentence
        (
            "Upon receipt of a valid request, the Kennel shall issue a receipt to the Owner.",
            "To issue a receipt to the Owner.",
        ),
        (
            "The Kennel shall release the Dog to the Owner and shall thereupon close the Stay.",
            "To release the Dog to the Owner and close the Stay.",
        ),
        # a tool said by its difference from another
        ("Like the kennel list, but sorts by arrival date.", "To sort by arrival date."),
        ("Like cancel_stay, except the deposit is kept.", "Like cancel_stay, except the deposit is kept."),
    ],
)
def test_a_purpose_a_duty_and_a_difference_give_the_action(description: str, expected: str) -> None:
    assert summary(description) == expected


def test_chat_spelling_is_written_out_in_lower_case_only() -> None:
    said = plain_description("grabs the stay so u can chase it when u dont have the ref")
    assert said == "grabs the stay so you can chase it when you don't have the reference"
    assert "U.S." in plain_description("Lists kennels in the U.S. by state.")
