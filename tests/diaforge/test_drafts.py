"""How wide a speculative pass is: `DraftWidth` weighs the tokens rows are expected to keep against
the columns a pass feeds."""

from __future__ import annotations

from diaforge.llm.drafts import PASS_OVERHEAD, DraftWidth


def test_columns_that_cost_nothing_take_every_draft_whole():
    width = DraftWidth(overhead=1e9)
    assert width.width([0, 1], [[4, 5, 6], [7]]) == 4  # the row's token and the longest draft


def test_costly_columns_and_rows_that_refuse_drafts_mean_no_draft():
    width = DraftWidth(overhead=4.0)
    for _ in range(6):  # each row kept none of the four tokens it was offered
        width.verified(0, 4, 0)
        width.verified(1, 4, 0)
    assert width.width([0, 1], [[4, 5, 6, 7], [8, 9, 10, 11]]) == 1


def test_rows_that_keep_their_drafts_are_fed_wider_than_rows_that_do_not():
    keeps, refuses = DraftWidth(overhead=16.0), DraftWidth(overhead=16.0)
    for _ in range(6):
        keeps.verified(0, 4, 4)
        refuses.verified(0, 4, 1)
    drafts = [[1, 2, 3, 4, 5, 6, 7, 8]]
    assert keeps.width([0], drafts) > refuses.width([0], drafts) >= 1
    assert keeps.expected(0, 3) > refuses.expected(0, 3) > 1.0


def test_one_long_draft_among_many_empty_rows_is_not_worth_a_wide_pass_on_a_cpu():
    """Every row pays the pass's width: a single row's draft must carry the others' padding."""
    width = DraftWidth.for_device("cpu")
    assert width.overhead == PASS_OVERHEAD["cpu"]
    for _ in range(6):
        width.verified(0, 8, 8)
    rows = list(range(16))
    assert width.width(rows, [[1] * 8] + [[]] * 15) == 1
    assert DraftWidth.for_device("cuda").width(rows, [[1] * 8] + [[]] * 15) > 1


def test_a_row_that_ended_is_forgotten():
    width = DraftWidth(overhead=8.0)
    width.verified(3, 4, 4)
    assert width.expected(3, 2) > DraftWidth(overhead=8.0).expected(3, 2)
    width.forget(3)
    assert width.expected(3, 2) == DraftWidth(overhead=8.0).expected(3, 2)


def test_a_row_passed_over_is_tried_again_later():
    """A row that refused its drafts is not fed any while its record says so, but each pass without
    a draft wears its record down, until a draft is worth a try again."""
    width = DraftWidth(overhead=4.0)
    for _ in range(6):
        width.verified(0, 4, 0)
    draft = [[1, 2, 3, 4]]
    passes = 0
    while width.width([0], draft) == 1:
        passes += 1
        assert passes < 100
    assert passes > 0
