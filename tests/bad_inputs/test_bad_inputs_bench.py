"""Bad inputs at the benchmark harness's door (`python -m diaforge.bench.run`), as the table in
`_bad_inputs.py` checks them (each row holds its own fix)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _bad_inputs import FOLDER, NO_OUTPUT, Case, Fix, case_ids, check_bad_input

CASES = [
    # --- python -m diaforge.bench.run (diaforge bench): the rerun parses the command line only
    Case(
        "bench-out-is-a-folder",
        "bench",
        {"o": FOLDER},
        ["--only", "token_ratio", "--out", "{dir}/o"],
        ("o", "'--out'", "is a folder"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/o.json"]),
    ),
    Case(
        "bench-out-under-dev-full",
        "bench",
        {},
        ["--only", "token_ratio", "--out", "/dev/full/r.json"],
        ("'--out'", "/dev/full"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
    Case(
        "bench-out-empty",
        "bench",
        {},
        ["--only", "token_ratio", "--out", ""],
        ("argument --out", NO_OUTPUT, "''"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
    Case(
        "bench-out-blank",
        "bench",
        {},
        ["--only", "token_ratio", "--out", "  "],
        ("argument --out", NO_OUTPUT, "white space"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
    Case(
        "bench-unknown-part",
        "bench",
        {},
        ["--only", "speed", "--out", "{dir}/r.json"],
        ("unknown part", "speed"),
        fix=Fix(argv=["--only", "token_ratio", "--out", "{dir}/r.json"]),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_bad_input(case, tmp_path, capsys, monkeypatch)
