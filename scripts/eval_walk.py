"""The walk of one `eval run`: which of the project's files its orchestration enters, and from how
many call sites, traced with `sys.setprofile` (a figure to compare before and after a refactoring).

    python -m scripts.eval_walk [--entry diaforge.eval.cli] [--orchestration eval/cli.py,...] -- RUN ARGS

It calls `ENTRY.main(["run", *RUN ARGS, "--out", TMP])` under a profiler that records every call
from one project file into another. The orchestration is the set of files that hold the run's
step list (`--orchestration`); the figures are the distinct files its functions call into
("entered") and the distinct cross-file call sites in it ("returns": each is a place the reader
leaves the step list and comes back). Also printed: the files entered at any depth.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

PACKAGES = ("diaforge", "data_gen", "train", "eval", "pipeline")


def _project_file(filename: str, root: Path) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(root)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts and rel.parts[0] in PACKAGES else None


def trace(entry: str, argv: list[str], root: Path) -> tuple[set[str], set[tuple[str, int, str]]]:
    """Run `entry.main(argv)` and return (files entered, cross-file call sites)."""
    entered: set[str] = set()
    sites: set[tuple[str, int, str]] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _project_file(frame.f_code.co_filename, root)
        if callee is None:
            return
        entered.add(callee)
        back = frame.f_back
        caller = _project_file(back.f_code.co_filename, root) if back else None
        if back is not None and caller is not None and caller != callee:
            sites.add((caller, back.f_lineno, callee))

    module = importlib.import_module(entry)
    sys.setprofile(profile)
    try:
        module.main(argv)
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
    return entered, sites


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.eval_walk", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entry", default="diaforge.eval.cli", help="module whose main() runs the command")
    parser.add_argument(
        "--orchestration", default="eval/cli.py", help="comma-separated files holding the run's step list"
    )
    parser.add_argument("run_args", nargs=argparse.REMAINDER, help="the arguments of `eval run` after --")
    args = parser.parse_args(argv)
    run_args = [a for a in args.run_args if a != "--"]
    root = Path.cwd().resolve()
    steps = set(args.orchestration.split(","))
    with tempfile.TemporaryDirectory() as out:
        entered, sites = trace(args.entry, ["run", *run_args, "--out", out], root)
    own = {s for s in sites if s[0] in steps}
    report = {
        "orchestration": sorted(steps),
        "files_entered": sorted({s[2] for s in own} - steps),
        "returns": len(own),
        "files_entered_any_depth": len(entered),
    }
    report["files_entered_count"] = len(report["files_entered"])
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
