"""The bad-input table as a whole: large, one id per row, a fix for every row."""

from __future__ import annotations

import test_bad_inputs_bench
import test_bad_inputs_data_gen
import test_bad_inputs_eval
import test_bad_inputs_pipeline
import test_bad_inputs_train

CASES = [
    *test_bad_inputs_data_gen.CASES,
    *test_bad_inputs_eval.CASES,
    *test_bad_inputs_train.CASES,
    *test_bad_inputs_bench.CASES,
    *test_bad_inputs_pipeline.CASES,
]


def test_the_table_is_large_and_every_case_has_a_fix() -> None:
    assert len(CASES) >= 120, len(CASES)
    assert len({c.id for c in CASES}) == len(CASES)
    assert all(c.fix is not None for c in CASES)
