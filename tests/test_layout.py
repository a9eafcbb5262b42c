"""The repository's shape, held as tests.

1. Size: no module over 600 lines and no function over 80, unless the module's docstring states a
   line starting with "Size exception:" and why.
2. Imports: the contract in pyproject.toml's `[tool.importlinter]` (the core `diaforge` at the
   bottom, `data_gen` and `train` beside each other, `eval` above them reaching into the generator
   only for the simulated user and what it is made of, the harnesses and the demo pipeline on top),
   checked transitively by `lint-imports`; every module of the generator is either one evaluation
   may import or one the contract forbids it; and no module imports another top-level package's
   private (underscore) names.
3. The walk: what one ``eval run`` and one ``diaforge train`` import at the top stays out of the
   parts they do not use (the peer benchmarks' commands, the DPO stage, preference rows, the W&B
   helpers when no W&B run is asked for); `diaforge.format` loads each submodule on first use.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from _repo import ROOT

from scripts.lint_imports import lint_imports, module_name, package_dirs

PACKAGES = ("diaforge", "data_gen", "train", "eval", "bench", "scripts", "pipeline")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
EXCEPTION_MARK = "Size exception:"


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _module_name(path: Path) -> str:
    return module_name(path, ROOT)


STAGES = tuple(sorted((name for name in package_dirs(ROOT) if "." in name), key=len, reverse=True))
"""The stages' import names (`diaforge.data_gen`, ...): each is a package of its own for these checks."""


def _package_of(module: str) -> str | None:
    """The package `module` belongs to for the private-name rule: a stage, the core `diaforge`, or
    `scripts`; None for a module outside the project."""
    for stage in STAGES:
        if module == stage or module.startswith(stage + "."):
            return stage
    top = module.split(".")[0]
    return top if top in ("diaforge", "scripts") else None


def _has_exception(tree: ast.Module) -> bool:
    doc = ast.get_docstring(tree) or ""
    return any(line.strip().startswith(EXCEPTION_MARK) for line in doc.splitlines())


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


def private_imports(module: str, source: str) -> list[str]:
    """`from X import _name` where X lies in another top-level package than `module`."""
    own = _package_of(module)
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            other = _package_of(node.module)
            if other is None or other == own:
                continue
            bad += [
                f"line {node.lineno}: {node.module}.{a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return bad


@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_no_private_names_across_packages(path: Path) -> None:
    bad = private_imports(_module_name(path), path.read_text(encoding="utf-8"))
    assert not bad, f"{_module_name(path)} imports another package's private names: " + "; ".join(bad)


def test_private_import_checker() -> None:
    source = (
        "from diaforge.phrasing import _engine\nfrom diaforge.eval._x import y\n"
        "from diaforge.eval.runner import _own\nfrom os import _exit\n"
    )
    assert private_imports("diaforge.eval.cli", source) == ["line 1: diaforge.phrasing._engine"]
    assert private_imports("diaforge.train.sft", source) == [
        "line 1: diaforge.phrasing._engine",
        "line 3: diaforge.eval.runner._own",
    ]
    assert private_imports("diaforge.schema", "from diaforge.text import _x\n") == []


def _lint_imports(cwd: Path, config: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "lint-imports is not installed (the dev extra pins import-linter)"
    return subprocess.run(
        [exe, str(config), "--no-cache"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(cwd)},
        capture_output=True,
        text=True,
        check=False,
    )


EVAL_MAY_IMPORT = {"agents", "phrasing", "values", "personas", "wording"}
"""The parts of the generator evaluation imports: the agents and what they are made of."""


def _eval_forbidden(config: dict) -> list[str]:
    (contract,) = [c for c in config["contracts"] if c.get("source_modules") == ["diaforge.eval"]]
    assert "ignore_imports" not in contract  # the contract states the hop; it hides no edge
    return contract["forbidden_modules"]


def test_every_generator_module_is_sanctioned_or_forbidden_to_eval() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    forbidden = {m.removeprefix("diaforge.data_gen.") for m in _eval_forbidden(config)}
    parts = {p.stem for p in (ROOT / "data_gen").glob("*.py") if p.stem not in ("__init__", "__main__")}
    parts |= {p.name for p in (ROOT / "data_gen").iterdir() if (p / "__init__.py").is_file()}
    assert not forbidden & EVAL_MAY_IMPORT
    assert parts == forbidden | EVAL_MAY_IMPORT, "classify a new generator module in pyproject.toml"


def _core_layer(config: dict) -> list[str]:
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    return [m.strip() for m in layers[-1].split(":")]


@pytest.mark.slow(reason="runs lint-imports on a staged copy of the sources")
def test_import_contract_holds() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_the_core_layer_names_every_module_of_the_core() -> None:
    """The bottom layer lists the core's modules one by one (the stages live under `diaforge` too);
    a new core module left out of it would escape the contract."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    core = {
        f"diaforge.{p.stem if p.suffix == '.py' else p.name}"
        for p in (ROOT / "diaforge").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    assert set(_core_layer(config)) == core


@pytest.mark.parametrize(
    ("importer", "line", "contract"),
    [
        ("diaforge/schema.py", "import diaforge.data_gen.engine", "the core below the stages"),
        ("diaforge/data_gen/engine.py", "import diaforge.train.sft", "the core below the stages"),
        ("diaforge/train/sft.py", "import diaforge.eval.cli", "the core below the stages"),
        ("diaforge/text.py", "import diaforge.data_gen.values", "the core below the stages"),
        (
            "diaforge/eval/cli.py",
            "import diaforge.data_gen.engine",
            "evaluation imports of the generator only",
        ),
        (
            "diaforge/eval/cli.py",
            "import diaforge.data_gen.gen_config",
            "evaluation imports of the generator only",
        ),
        # Transitive: eval -> data_gen.agents.user -> data_gen.validators.
        (
            "diaforge/data_gen/agents/user.py",
            "import diaforge.data_gen.validators",
            "evaluation imports of the generator only",
        ),
        ("diaforge/eval/cli.py", "import diaforge.pipeline.demo", "the core below the stages"),
        # names draws identifiers with described's `shaped`: described may not import names back.
        (
            "diaforge/data_gen/values/described.py",
            "import diaforge.data_gen.values.names",
            "the modules of each package",
        ),
    ],
)
def test_import_contract_catches(tmp_path: Path, importer: str, line: str, contract: str) -> None:
    """Our own contracts, on a miniature of the tree (laid out by import name, as the wheel and
    `scripts.lint_imports` lay it out) with one forbidden import added, are broken."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    forbidden = [m.replace(".", "/") + ".py" for m in _eval_forbidden(config)]
    core = [m.replace(".", "/") + ".py" for m in _core_layer(config)]
    for module in (
        *forbidden,
        *core,
        "diaforge/data_gen/engine.py",
        "diaforge/data_gen/values/names.py",
        "diaforge/data_gen/values/described.py",
        "diaforge/data_gen/agents/user.py",
        "diaforge/train/sft.py",
        "diaforge/eval/cli.py",
        "diaforge/bench/run.py",
        "scripts/build.py",
        "diaforge/pipeline/demo.py",
    ):
        path = tmp_path / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
        for folder in path.relative_to(tmp_path).parents[:-1]:
            (tmp_path / folder / "__init__.py").touch()
    sanctioned = (
        "import diaforge.data_gen.agents\nimport diaforge.data_gen.agents.user\nimport diaforge.text\n"
    )
    (tmp_path / "diaforge/eval/cli.py").write_text(sanctioned)
    (tmp_path / "diaforge/data_gen/values/names.py").write_text("import diaforge.data_gen.values.described\n")
    clean = tmp_path / importer
    before = clean.read_text()
    clean.write_text(before + line + "\n")
    lines = [f"root_packages = {config['root_packages']!r}".replace("'", '"')]
    text = "[tool.importlinter]\n" + "\n".join(lines) + "\n"
    for c in config["contracts"]:
        text += "\n[[tool.importlinter.contracts]]\n" + "".join(
            f"{k} = {v!r}\n".replace("'", '"') for k, v in c.items()
        )
    (tmp_path / "pyproject.toml").write_text(text)
    result = _lint_imports(tmp_path, tmp_path / "pyproject.toml")
    assert result.returncode == 1, result.stdout
    broken = [ln for ln in result.stdout.splitlines() if " BROKEN" in ln]
    assert any(ln.startswith(contract) for ln in broken), result.stdout
    clean.write_text(before)
    assert _lint_imports(tmp_path, tmp_path / "pyproject.toml").returncode == 0


#: Entry points of one `eval run` and one SFT `diaforge train` (launcher and script), and the
#: modules none of them may import before a run asks for them.
WALK_ENTRIES = (
    "diaforge.eval.cli",
    "diaforge.eval.evaluation",
    "diaforge.eval.runner",
    "diaforge.eval.report",
    "diaforge.train.launch",
    "diaforge.train.sft",
)
OUTSIDE_THE_WALK = (
    "diaforge.eval.cli_peers",
    "diaforge.train.dpo_config",
    "diaforge.format.preference",
    "diaforge.format.trl_rows",
    "diaforge.wandb_offline",
)


def test_a_run_imports_none_of_what_it_does_not_use() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for name in {WALK_ENTRIES!r}: importlib.import_module(name)\n"
        "import diaforge.eval.cli\n"
        "diaforge.eval.cli.build_parser('run')\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    assert "diaforge.eval.report" in loaded and "diaforge.train.sft" in loaded
    assert not loaded.intersection(OUTSIDE_THE_WALK), sorted(loaded.intersection(OUTSIDE_THE_WALK))


def test_the_format_package_names_each_submodule_that_defines_a_name() -> None:
    import importlib

    import diaforge.format as fmt

    assert set(fmt.__all__) == set(fmt._SUBMODULE)
    for name, module in fmt._SUBMODULE.items():
        defining = importlib.import_module(f"diaforge.format.{module}")
        assert getattr(fmt, name) is getattr(defining, name), name
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        fmt.not_a_name  # noqa: B018
