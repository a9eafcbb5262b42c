"""The house in figures: each room's files and lines, the imports between rooms, and the import
cycles between modules (strongly connected components), read from the source with `ast`.

    python -m scripts.house [--root DIR] [--room NAME=PREFIX[,PREFIX...]] ...

A room is a top-level package unless `--room` gathers modules by prefix into a named room (e.g.
`--room core=data_gen.schema,data_gen.format` draws the old core apart from the generator). The
output is a Markdown table of rooms, a table of the imports between rooms (module pairs), and the
cycles.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import tomllib

PACKAGES = ("diaforge", "data_gen", "train", "eval", "pipeline", "bench", "scripts")


def import_names(root: Path) -> dict[str, str]:
    """Folder -> import name for the folders `root`'s pyproject.toml maps (`data_gen` ->
    `diaforge.data_gen`); a folder it does not map is its own import name."""
    path = root / "pyproject.toml"
    config = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    mapped = config.get("tool", {}).get("setuptools", {}).get("package-dir", {})
    return {folder: name for name, folder in mapped.items()}


def modules(root: Path) -> dict[str, Path]:
    """Every module of the project's packages under `root`, by dotted import name."""
    names = import_names(root)
    found = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            parts[0] = names.get(parts[0], parts[0])
            found[".".join(parts)] = path
    return found


def _target(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules `module` imports (any depth in the file, relative imports resolved)."""
    out: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            # `from pkg import sub` imports the module pkg.sub; `from pkg import name`, pkg itself.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for name in names:
            hit = _target(name, known)
            if hit and hit != module:
                out.add(hit)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def room_of(module: str, rooms: dict[str, tuple[str, ...]], stages: tuple[str, ...] = ()) -> str:
    """The room of `module`: the first of `rooms` whose prefix it has, else the folder it lives in
    (`stages` are the import names of the mapped folders: `diaforge.eval.cli` lives in `eval`)."""
    for name, prefixes in rooms.items():
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return name
    for stage in stages:
        if module == stage or module.startswith(stage + "."):
            return stage.rpartition(".")[2]
    return module.split(".")[0]


def picture(root: Path, rooms: dict[str, tuple[str, ...]]) -> str:
    known = modules(root)
    stages = tuple(name for name in import_names(root).values() if "." in name)
    graph = {m: imports(m, p, known) for m, p in known.items()}
    size: Counter[str] = Counter()
    files: Counter[str] = Counter()
    for module, path in known.items():
        room = room_of(module, rooms, stages)
        files[room] += 1
        size[room] += len(path.read_text(encoding="utf-8").splitlines())
    edges: Counter[tuple[str, str]] = Counter()
    for module, targets in graph.items():
        for target in targets:
            a, b = room_of(module, rooms, stages), room_of(target, rooms, stages)
            if a != b:
                edges[a, b] += 1
    lines = ["| room | files | lines |", "| --- | ---: | ---: |"]
    lines += [f"| {r} | {files[r]} | {size[r]:,} |" for r in sorted(size, key=lambda r: -size[r])]
    lines += [f"| all | {sum(files.values())} | {sum(size.values()):,} |", ""]
    lines += ["| from | to | module imports |", "| --- | --- | ---: |"]
    lines += [f"| {a} | {b} | {n} |" for (a, b), n in sorted(edges.items())]
    found = cycles(graph)
    lines += ["", f"import cycles: {len(found)}"]
    lines += [f"- {' <-> '.join(c)}" for c in found]
    return "\n".join(lines) + "\n"


def _room(text: str) -> tuple[str, tuple[str, ...]]:
    name, _, prefixes = text.partition("=")
    if not name or not prefixes:
        raise argparse.ArgumentTypeError(f"--room wants NAME=PREFIX[,PREFIX...], got {text!r}")
    return name, tuple(p for p in prefixes.split(",") if p)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.house", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout to read")
    parser.add_argument("--room", type=_room, action="append", default=[], help="NAME=PREFIX[,PREFIX...]")
    args = parser.parse_args(argv)
    if not (args.root / "pyproject.toml").is_file():
        parser.error(f"{args.root} is not a checkout (no pyproject.toml)")
    sys.stdout.write(picture(args.root, dict(args.room)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
