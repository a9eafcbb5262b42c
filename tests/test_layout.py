"""The project's layout rules, checked on the source itself (issue 15).

1. Size: no module over `MAX_MODULE_LINES` lines and no function over `MAX_FUNCTION_LINES`,
   unless the module's docstring holds a line starting with ``Size exception:`` that says why.
2. Imports: `eval` and `train` take from `data_gen` only its shared core (`SHARED`), and `eval`
   additionally the user-proxy (`USER_PROXY`); `data_gen` imports neither `train` nor `eval`, and
   `train` does not import `eval`. The README's CONTRIBUTING section states the same rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("data_gen", "train", "eval", "bench", "scripts", "diaforge_cli")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
EXCEPTION_MARK = "Size exception:"

# The modules of data_gen that are shared vocabulary rather than generator internals.
SHARED = (
    "data_gen.schema",
    "data_gen.format",
    "data_gen.errors",
    "data_gen.hygiene",
    "data_gen.text",
    "data_gen.tool_records",
    "data_gen.rng",
    "data_gen.dice",
    "data_gen.similarity",
    "data_gen.cliargs",
    "data_gen.console",
    "data_gen.wandb_offline",
    "data_gen.lineage",
    "data_gen.llm",
)
# The simulated user (and its voter and teacher) that the live evaluation loop talks to.
USER_PROXY = ("data_gen.agents",)


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _has_exception(tree: ast.Module) -> bool:
    doc = ast.get_docstring(tree) or ""
    return any(line.strip().startswith(EXCEPTION_MARK) for line in doc.splitlines())


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _imported(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = module.split(".")[: -node.level or None]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            # `from data_gen import schema` imports the module data_gen.schema
            found += [
                (node.lineno, f"{name}.{a.name}") for a in node.names if name in {"data_gen", "data_gen.llm"}
            ]
    return found


SOURCES = _sources()
IDS = [str(p.relative_to(ROOT)) for p in SOURCES]


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_size_limits(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    if _has_exception(tree):
        return
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines; split it or state a '{EXCEPTION_MARK}'"
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines, line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"


def _violations(module: str, source: str) -> list[str]:
    top = module.split(".")[0]
    bad = []
    for line, name in _imported(ast.parse(source), module):
        target = name.split(".")[0]
        if top == "data_gen" and target in {"train", "eval"}:
            bad.append(f"line {line}: data_gen imports {name}")
        elif top == "train" and target == "eval":
            bad.append(f"line {line}: train imports {name}")
        elif top in {"train", "eval"} and target == "data_gen" and name not in {"data_gen"}:
            allowed = SHARED + (USER_PROXY if top == "eval" else ())
            if not _within(name, allowed):
                bad.append(f"line {line}: {top} imports generator internals {name}")
    return bad


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_import_rule(path: Path) -> None:
    module = _module_name(path)
    bad = _violations(module, path.read_text(encoding="utf-8"))
    assert not bad, f"{module}: " + "; ".join(bad)


def test_rule_checker_catches_violations() -> None:
    """The checker itself: each kind of forbidden import is reported, and allowed ones are not."""
    source = (
        "from data_gen.engine import seeded_rng\n"
        "from data_gen.schema import Tool\n"
        "from data_gen.llm.base import BackendError\n"
        "from data_gen import values\n"
        "import data_gen.agents\n"
        "from eval.metrics import values_match\n"
    )
    assert _violations("eval.probe", source) == [
        "line 1: eval imports generator internals data_gen.engine",
        "line 4: eval imports generator internals data_gen.values",
    ]
    assert _violations("train.probe", source) == [
        "line 1: train imports generator internals data_gen.engine",
        "line 4: train imports generator internals data_gen.values",
        "line 5: train imports generator internals data_gen.agents",
        "line 6: train imports eval.metrics",
    ]
    assert _violations("data_gen.probe", "from train.slicing import SliceConfig\n") == [
        "line 1: data_gen imports train.slicing"
    ]
