"""BFCL's categories, their sizes in the released wheel, and where their data files are.

`SINGLE_TURN` holds BFCL's 13 single-turn categories and `MULTI_TURN` its four multi-turn ones
(`DOCUMENTED_COUNTS`); `CATEGORIES`, the default of ``python -m diaforge.eval bfcl``, is the five of the
DiaFORGE parity check. The counts are asserted in the tests against the installed wheel.
"""

from __future__ import annotations

import re
from pathlib import Path

from diaforge.errors import InputError

__all__ = [
    "ALL_CATEGORIES",
    "CATEGORIES",
    "DOCUMENTED_COUNTS",
    "IRRELEVANCE",
    "MULTI_TURN",
    "NO_ANSWER_FILE",
    "RELEVANCE",
    "SINGLE_TURN",
    "bfcl_data_dir",
    "category_file",
    "category_of",
    "language_of",
]

CATEGORIES = ("multiple", "live_multiple", "irrelevance", "live_irrelevance", "multi_turn_miss_param")
"""The BFCL categories of the parity check (DiaFORGE Appendix C.6): the default set."""

SINGLE_TURN = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
"""BFCL's single-turn categories (``SINGLE_TURN_CATEGORY`` of bfcl-eval: non-live, then live)."""

MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
"""BFCL's multi-turn categories (``multi_turn_composite`` is unreleased there too)."""

ALL_CATEGORIES = SINGLE_TURN + MULTI_TURN
"""Every category `load_bfcl` and ``python -m diaforge.eval bfcl --categories`` accept."""

DOCUMENTED_COUNTS = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
}
"""Entries per category in ``bfcl-eval==2026.3.23`` (checked against the wheel in the tests)."""

IRRELEVANCE = ("irrelevance", "live_irrelevance")
RELEVANCE = ("live_relevance",)
NO_ANSWER_FILE = IRRELEVANCE + RELEVANCE


def language_of(category: str) -> str:
    """``java``, ``javascript`` or ``python``: the language BFCL checks a category's calls in."""
    if category.endswith("javascript"):
        return "javascript"
    if category.endswith("java"):
        return "java"
    return "python"


def bfcl_data_dir(path: str | Path | None = None) -> Path:
    """The BFCL data folder: `path` when given, else ``bfcl_eval/data`` of the installed wheel."""
    if path is not None:
        p = Path(path)
        if not p.is_dir():
            raise InputError("BFCL data folder not found", path=p)
        return p
    import importlib.util

    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            "bfcl-eval is not installed: run `pip install --no-deps bfcl-eval==2026.3.23` "
            "(its data is read from the wheel), or pass a BFCL data folder"
        )
    p = Path(next(iter(spec.submodule_search_locations))) / "data"
    if not p.is_dir():
        raise InputError("the installed bfcl-eval has no data folder", path=p)
    return p


def category_file(folder: Path, category: str) -> Path:
    """The newest ``BFCL_v<N>_<category>.json`` of `folder`."""
    pattern = re.compile(rf"BFCL_v(\d+)_{re.escape(category)}\.json")
    found = sorted(
        (int(m.group(1)), p) for p in folder.glob("BFCL_v*.json") if (m := pattern.fullmatch(p.name))
    )
    if not found:
        raise InputError(f"no BFCL_v*_{category}.json file", path=folder)
    return found[-1][1]


def category_of(path: str | Path) -> str | None:
    """The category named by a BFCL file name (``BFCL_v4_live_multiple.json`` -> live_multiple)."""
    m = re.fullmatch(r"BFCL_v\d+_(.+)\.json", Path(path).name)
    return m.group(1) if m else None
