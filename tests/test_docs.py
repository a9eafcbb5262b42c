"""The documentation, held as tests.

1. The site (mkdocs.yml, docs/) builds with `mkdocs build --strict`: a broken link, a missing anchor,
   a page left out of the navigation or a bad config fails. MkDocs comes with the `dev` extra, so a
   missing MkDocs fails here too rather than skipping.
2. The README stays a front door: at most 200 lines.
3. Text a user reads (the README, the pages, the recipe READMEs and recipe files, the benchmark
   README) names no session and no issue number: it says what a thing does.
4. The module map of docs/architecture.md names every module and subpackage of every package, and
   every file it names exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import ROOT

DOCS = ROOT / "docs"
PACKAGES = ("diaforge", "data_gen", "train", "eval", "pipeline", "scripts", "bench")
README_MAX_LINES = 200
HISTORY = re.compile(r"session [0-9]|issue [0-9]|issue #?[0-9]|sessions? (that|which) ", re.IGNORECASE)


def _user_text_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "recipes" / "README.md", ROOT / "bench" / "README.md"]
    files += sorted(DOCS.rglob("*.md"))
    files += sorted((ROOT / "recipes").rglob("*.yaml"))
    return files


def test_site_builds_strictly(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml")]
    proc = subprocess.run(
        [*cmd, "--site-dir", str(site)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    # One page per file of docs/, and the metrics page carries the value-matching table.
    for page in DOCS.glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"{page.name} was not built"
    metrics = (site / "metrics" / "index.html").read_text(encoding="utf-8")
    assert 'id="value-matching"' in metrics and "<table>" in metrics


def test_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md: {len(lines)} lines; move reference text to docs/"


@pytest.mark.parametrize("path", _user_text_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_user_text_names_no_session_or_issue(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # Lines are joined so that a phrase wrapped over two lines is found too.
    flat = re.sub(r"\s+", " ", text)
    found = [m.group(0) for m in HISTORY.finditer(flat)]
    assert not found, (
        f"{path.relative_to(ROOT)}: {found}; say what the thing does (history belongs in git log)"
    )


def _map_blocks() -> dict[str, str]:
    """The module map of docs/architecture.md, as the text under each top-level `name/` entry."""
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The map", 1)[1]
    block = section.split("```", 2)[1]
    blocks: dict[str, list[str]] = {}
    current = None
    for line in block.splitlines():
        head = re.match(r"^([a-z_]+)/", line)
        if head:
            current = head.group(1)
            blocks[current] = [line[head.end() :]]
        elif current is not None:
            blocks[current].append(line)
    return {name: "\n".join(lines) for name, lines in blocks.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_map_names_every_module(package: str) -> None:
    block = _map_blocks()[package]
    root = ROOT / package
    modules = [p.name for p in root.glob("*.py") if p.stem not in ("__init__", "__main__")]
    subpackages = [f"{p.name}/" for p in root.iterdir() if p.is_dir() and any(p.glob("*.py"))]
    missing = [
        name for name in modules + subpackages if not re.search(rf"(?<![\w/]){re.escape(name)}", block)
    ]
    assert not missing, f"docs/architecture.md, the map of {package}/: {missing} not named"


@pytest.mark.parametrize("package", PACKAGES)
def test_map_names_only_what_exists(package: str) -> None:
    block = _map_blocks()[package]
    root = ROOT / package
    # A name inside a longer path (`data_gen/assets/sources/`) is a path from the root, not this package's.
    named = re.findall(r"(?<![\w/.])([a-z_0-9]+\.py|[a-z_0-9]+/)(?![\w])", block)
    stale = [name for name in named if not any(root.rglob(name.rstrip("/")))]
    assert not stale, f"docs/architecture.md, the map of {package}/: {stale} do not exist"
