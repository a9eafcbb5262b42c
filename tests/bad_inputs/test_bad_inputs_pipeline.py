"""Bad inputs at the demo's doors (`python -m diaforge.pipeline demo | demo-curve`, `diaforge demo`), as
the table in `_bad_inputs.py` checks them (each row holds its own fix; the rerun parses the command
line only, since a demo trains a model)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _bad_inputs import NO_OUTPUT, Case, Fix, case_ids, check_bad_input

CASES = [
    # --- python -m diaforge.pipeline: an empty or blank output folder would be the working folder
    Case(
        "demo-out-empty",
        "demo",
        {},
        ["demo", "--out", ""],
        ("argument --out", NO_OUTPUT, "''"),
        fix=Fix(argv=["demo", "--out", "{dir}/demo"]),
    ),
    Case(
        "demo-model-dir-blank",
        "demo",
        {},
        ["demo", "--out", "{dir}/demo", "--model-dir", "  "],
        ("argument --model-dir", NO_OUTPUT, "white space"),
        fix=Fix(argv=["demo", "--out", "{dir}/demo", "--model-dir", "{dir}/model"]),
    ),
    Case(
        "demo-curve-out-blank",
        "demo",
        {},
        ["demo-curve", "--out", " "],
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=["demo-curve", "--out", "{dir}/curve"]),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_bad_input(case, tmp_path, capsys, monkeypatch)
