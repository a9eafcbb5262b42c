"""Bad inputs at the evaluation's doors (`python -m diaforge.eval run | compare | score | import ...`), as the
table in `_bad_inputs.py` checks them."""

from __future__ import annotations

from pathlib import Path

import pytest
from _bad_inputs import FOLDER, NO_OUTPUT, Case, Fix, attach_fixes, case_ids, check_bad_input
from _repo import ROOT

BENCH_LINES = (ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl").read_text(encoding="utf-8")
BENCH_OK = "".join(BENCH_LINES.splitlines(keepends=True)[:2])
NO_TOOL_LINES = (ROOT / "eval" / "benchmarks" / "diabench_heldout_v1_no_tool.jsonl").read_text(
    encoding="utf-8"
)
NO_TOOL_OK = "".join(NO_TOOL_LINES.splitlines(keepends=True)[:2])
BENCH_FIX = Fix({"b.jsonl": BENCH_OK})
TOOLDIAL = ROOT / "tests" / "fixtures" / "peers" / "tooldial" / "test.json"
DICEBENCH = ROOT / "tests" / "fixtures" / "peers" / "dicebench"


def _run(*extra: str) -> list[str]:
    return ["run", "--backend", "random", "--limit", "1", "--modes", "static", *extra]


def _dicebench(*extra: str) -> list[str]:
    """``dicebench run`` on one round with a reference policy: no model to load."""
    data, tools = DICEBENCH / "round_1.json", DICEBENCH / "tool_docs.json"
    return ["dicebench", "run", "--data", str(data), "--tools", str(tools), "--backend", "random", *extra]


CASES = [
    # --- eval run: flags and files
    Case(
        "eval-limit-0", "eval", {}, ["run", "--backend", "random", "--limit", "0"], ("--limit", "at least 1")
    ),
    Case(
        "eval-limit-negative",
        "eval",
        {},
        ["run", "--backend", "random", "--limit", "-3"],
        ("--limit", "at least 1"),
    ),
    Case(
        "eval-n-voters-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-voters", "0"],
        ("--n-voters", "at least 1"),
    ),
    Case(
        "eval-n-samples-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-samples", "0"],
        ("--n-samples", "at least 1"),
    ),
    Case(
        "eval-t-max-0", "eval", {}, ["run", "--backend", "random", "--t-max", "0"], ("--t-max", "at least 1")
    ),
    Case(
        "eval-repeats-0",
        "eval",
        {},
        ["run", "--backend", "random", "--repeats", "0"],
        ("--repeats", "at least 1"),
    ),
    Case(
        "eval-repeats-negative",
        "eval",
        {},
        ["run", "--backend", "random", "--repeats", "-1"],
        ("--repeats", "at least 1"),
    ),
    Case(
        "eval-repeats-0-in-config",
        "eval",
        {"e.yaml": "backend: random\nrepeats: 0\n"},
        ["run", "--config", "{dir}/e.yaml"],
        ("e.yaml", "'repeats'", "at least 1"),
    ),
    Case(
        "eval-out-is-a-file",
        "eval",
        {"out": "x"},
        ["run", "--backend", "random", "--out", "{dir}/out"],
        ("out", "not a folder"),
    ),
    Case(
        "eval-bench-not-utf8",
        "eval",
        {"b.jsonl": b'{"id": "\xff"}\n'},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "eval-bench-deep-args",
        "eval",
        {"b.jsonl": '{"id": "x", "args": ' + "[" * 300 + "]" * 300 + "}\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "eval-bench-missing",
        "eval",
        {},
        ["run", "--backend", "random", "--bench", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "eval-bench-bad-json",
        "eval",
        {"b.jsonl": "not json\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "eval-batch-size-0",
        "eval",
        {},
        ["run", "--backend", "random", "--batch-size", "0", "--out", "{dir}/run"],
        ("--batch-size", "at least 1"),
    ),
    Case(
        "eval-max-new-tokens-0",
        "eval",
        {},
        ["run", "--backend", "random", "--max-new-tokens", "0", "--out", "{dir}/run"],
        ("--max-new-tokens", "at least 1"),
    ),
    Case(
        "eval-unknown-mode",
        "eval",
        {},
        ["run", "--backend", "random", "--modes", "sideways", "--out", "{dir}/run"],
        ("--modes", "'sideways'"),
    ),
    Case(
        "eval-compare-not-a-run",
        "eval",
        {},
        ["compare", "{dir}/nope1", "{dir}/nope2", "--out", "{dir}/cmp"],
        ("nope1", "metrics.json"),
    ),
    # --- python -m diaforge.eval: the no-tool split
    Case(
        "eval-no-tool-bench-missing",
        "eval",
        {},
        _run("--no-tool-bench", "{dir}/nope.jsonl"),
        ("nope.jsonl", "no such file", "--no-tool-bench"),
        fix=Fix({"nope.jsonl": NO_TOOL_OK}),
    ),
    Case(
        "eval-no-tool-bench-holds-positive-records",
        "eval",
        {"s.jsonl": BENCH_OK},
        _run("--no-tool-bench", "{dir}/s.jsonl"),
        ("s.jsonl", "record '000000-", "not a retrieval miss"),
        fix=Fix({"s.jsonl": NO_TOOL_OK}),
    ),
    Case(
        "eval-bench-is-a-no-tool-split",
        "eval",
        {"b.jsonl": NO_TOOL_OK},
        _run("--bench", "{dir}/b.jsonl"),
        ("b.jsonl", "record '000000-miss-", "--no-tool-bench"),
        fix=BENCH_FIX,
    ),
    Case(
        "eval-no-tool-limit-0",
        "eval",
        {},
        _run("--no-tool-limit", "0"),
        ("--no-tool-limit", "at least 1"),
        fix=Fix(argv=_run("--no-tool-limit", "1")),
    ),
    Case(
        "eval-ground-values-without-constraint",
        "eval",
        {},
        _run("--ground-values", "on"),
        ("--ground-values on", "--constrain-calls on"),
        fix=Fix(argv=_run("--ground-values", "off")),
    ),
    Case(
        "eval-copy-thoughts-without-constraint",
        "eval",
        {},
        _run("--copy-thoughts", "on"),
        ("--copy-thoughts on", "--constrain-calls on"),
        fix=Fix(argv=_run("--copy-thoughts", "off")),
    ),
    Case(
        "eval-decoding-aid-on-a-policy",
        "eval",
        {},
        _run("--constrain-calls", "on", "--copy-thoughts", "on"),
        ("--constrain-calls on, --copy-thoughts on", "random policy decodes nothing"),
        fix=Fix(argv=_run("--constrain-calls", "off")),
    ),
    # --- python -m diaforge.eval
    Case(
        "eval-out-below-a-file",
        "eval",
        {"f": "x"},
        _run("--out", "{dir}/f/run"),
        ("f/run", "'--out'", "is a file"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-out-under-proc",
        "eval",
        {},
        _run("--out", "/proc/diaforge/run"),
        ("/proc/diaforge/run", "'--out'", "cannot create"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-out-under-dev-full",
        "eval",
        {},
        _run("--out", "/dev/full/run"),
        ("/dev/full/run", "'--out'"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-device-cuda-without-cuda",
        "eval",
        {},
        ["run", "--model", "{dir}/model", "--device", "cuda", "--out", "{dir}/run"],
        ("--device cuda", "no CUDA GPU", "--device cpu"),
        max_seconds=10,
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-device-bogus",
        "eval",
        {},
        ["run", "--model", "{dir}/model", "--device", "gpu0", "--out", "{dir}/run"],
        ("--device 'gpu0'", "unknown device"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-bench-is-dev-zero",
        "eval",
        {},
        _run("--bench", "/dev/zero", "--out", "{dir}/run"),
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"b.jsonl": BENCH_OK}, argv=_run("--bench", "{dir}/b.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "eval-bench-is-a-folder",
        "eval",
        {"b": FOLDER},
        _run("--bench", "{dir}/b", "--out", "{dir}/run"),
        ("b", "directory"),
        fix=Fix({"b.jsonl": BENCH_OK}, argv=_run("--bench", "{dir}/b.jsonl", "--out", "{dir}/run")),
    ),
    Case(
        "eval-user-proxy-bogus",
        "eval",
        {},
        _run("--user-proxy", "bogus", "--modes", "dynamic", "--out", "{dir}/run"),
        ("user proxy", "'bogus'"),
        fix=Fix(argv=_run("--user-proxy", "scripted", "--out", "{dir}/run")),
    ),
    Case(
        "eval-score-missing",
        "eval",
        {},
        ["score", "{dir}/t.jsonl"],
        ("t.jsonl", "not found"),
        fix=Fix(argv=["score", "{dir}/run1"]),
    ),
    Case(
        "eval-compare-same-run-twice",
        "eval",
        {},
        ["compare", "{dir}/run1", "{dir}/run1", "--out", "{dir}/cmp"],
        ("run1", "given twice"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    ),
    Case(
        "eval-compare-out-is-a-file",
        "eval",
        {"f": "x"},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/f"],
        ("f", "'--out'", "not a folder"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    ),
    Case(
        "eval-compare-json-is-a-folder",
        "eval",
        {"j": FOLDER},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", "{dir}/j"],
        ("j", "'--json'", "is a folder"),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", "{dir}/j.json"]),
    ),
    Case(
        "eval-import-out-is-a-folder",
        "eval",
        {"o": FOLDER},
        ["import", "tooldial", str(ROOT / "tests/fixtures/peers/tooldial/test.json"), "--out", "{dir}/o"],
        ("o", "'--out'", "is a folder"),
        fix=Fix(
            argv=[
                "import",
                "tooldial",
                str(ROOT / "tests/fixtures/peers/tooldial/test.json"),
                "--out",
                "{dir}/o.jsonl",
            ]
        ),
    ),
    # --- python -m diaforge.eval: an empty or blank output flag or key names no file or folder
    Case(
        "eval-out-empty",
        "eval",
        {},
        _run("--out", ""),
        ("argument --out", NO_OUTPUT, "''"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-out-blank",
        "eval",
        {},
        _run("--out", "  "),
        ("argument --out", NO_OUTPUT, "white space"),
        fix=Fix(argv=_run("--out", "{dir}/run")),
    ),
    Case(
        "eval-config-out-empty",
        "eval",
        {"e.yaml": 'backend: random\nout: ""\n'},
        ["run", "--config", "{dir}/e.yaml"],
        ("e.yaml", "'out'", NO_OUTPUT),
        fix=Fix({"e.yaml": "backend: random\nout: {dir}/run\n"}),
    ),
    Case(
        "eval-compare-out-blank",
        "eval",
        {},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "  "],
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
    ),
    Case(
        "eval-compare-json-empty",
        "eval",
        {},
        ["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", ""],
        ("argument --json", NO_OUTPUT),
        fix=Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp", "--json", "{dir}/j.json"]),
    ),
    Case(
        "eval-import-out-empty",
        "eval",
        {},
        ["import", "tooldial", str(TOOLDIAL), "--out", ""],
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=["import", "tooldial", str(TOOLDIAL), "--out", "{dir}/o.jsonl"]),
    ),
    Case(
        "eval-dicebench-out-blank",
        "eval",
        {},
        _dicebench("--out", "  "),
        ("argument --out", NO_OUTPUT),
        fix=Fix(argv=_dicebench("--out", "{dir}/dice")),
    ),
]

FIXES: dict[str, Fix] = {
    "eval-limit-0": Fix(argv=["run", "--backend", "random", "--limit", "1"]),
    "eval-limit-negative": Fix(argv=["run", "--backend", "random", "--limit", "1"]),
    "eval-n-voters-0": Fix(argv=["run", "--backend", "random", "--n-voters", "1"]),
    "eval-n-samples-0": Fix(argv=["run", "--backend", "random", "--n-samples", "1"]),
    "eval-t-max-0": Fix(argv=["run", "--backend", "random", "--t-max", "2"]),
    "eval-repeats-0": Fix(argv=["run", "--backend", "random", "--repeats", "2"]),
    "eval-repeats-negative": Fix(argv=["run", "--backend", "random", "--repeats", "1"]),
    "eval-repeats-0-in-config": Fix({"e.yaml": "backend: random\nrepeats: 2\n"}),
    "eval-out-is-a-file": Fix(argv=["run", "--backend", "random", "--out", "{dir}/run"]),
    "eval-bench-not-utf8": BENCH_FIX,
    "eval-bench-deep-args": BENCH_FIX,
    "eval-bench-missing": Fix({"nope.jsonl": BENCH_OK}),
    "eval-bench-bad-json": BENCH_FIX,
    "eval-batch-size-0": Fix(argv=["run", "--backend", "random", "--batch-size", "1", "--out", "{dir}/run"]),
    "eval-max-new-tokens-0": Fix(
        argv=["run", "--backend", "random", "--max-new-tokens", "64", "--out", "{dir}/run"]
    ),
    "eval-unknown-mode": Fix(argv=["run", "--backend", "random", "--modes", "static", "--out", "{dir}/run"]),
    "eval-compare-not-a-run": Fix(argv=["compare", "{dir}/run1", "{dir}/run2", "--out", "{dir}/cmp"]),
}
attach_fixes(CASES, FIXES)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_bad_input(case, tmp_path, capsys, monkeypatch)


@pytest.mark.parametrize(
    "argv",
    [
        ["bfcl", "--model", "{dir}/model", "--out", ""],
        ["next-action", "--model", "{dir}/model", "--out", "  "],
        ["turn-level", "--model", "{dir}/model", "--out", ""],
    ],
    ids=["bfcl", "next-action", "turn-level"],
)
def test_a_peer_run_folder_flag_refuses_an_empty_or_blank_value(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The peer commands that need a model to run (so no quick fixed rerun, and no row of the
    table): an empty or blank --out is one line naming the flag and exit 2, before the model is
    looked for, and nothing is written."""
    from diaforge.eval.cli import main

    with pytest.raises(SystemExit) as stop:
        main([a.replace("{dir}", str(tmp_path)) for a in argv])
    lines = capsys.readouterr().err.splitlines()
    assert stop.value.code == 2
    assert len(lines) == 1 and "argument --out" in lines[0] and NO_OUTPUT in lines[0], lines
    assert not list(tmp_path.iterdir())
