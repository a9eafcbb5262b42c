"""Build the bundled enterprise tool catalogue and persona bank under `data_gen/assets/`.

The content is data, in `data_gen/assets/sources/` (see the README there): the lines of business,
the parameter library, the tool families and singletons of each line, and the ingredients of the
persona bank. This script reads and checks those files (`scripts/assets/`), composes them,
validates every record through the pydantic models of `diaforge.schema`, writes

    data_gen/assets/catalogue.json           all tools
    data_gen/assets/catalogue_train.json     tools of the training lines of business
    data_gen/assets/catalogue_heldout.json   tools of the held-out lines of business
    data_gen/assets/personas.jsonl           one persona per line

and prints summary counts. It is deterministic (fixed seed), so running it twice gives
byte-identical files:

    python -m scripts.build_assets [--sources DIR] [--out DIR]

A malformed source file is one line on stderr naming the file, the entry and the field, exit 2.
The embedding-based near-duplicate share is measured separately by
`scripts/check_near_duplicates.py` (it needs the sentence encoder).
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from diaforge.cliargs import OneLineArgumentParser, output_folder
from diaforge.errors import command_main
from scripts.assets.personas import build_personas
from scripts.assets.sources import LineOfBusiness, load_sources
from scripts.assets.tools import build_tools

#: The checkout these repository tools work on.
ROOT = Path(__file__).resolve().parents[1]
#: Seed of the persona bank's RNG; changing it changes every persona.
SEED = 7305
#: Personas per line of business (held-out lines included).
PERSONAS_PER_LOB = 28
ASSETS = ROOT / "data_gen" / "assets"
SOURCES = ASSETS / "sources"


def _write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def summarise(
    tools: list[dict[str, Any]], personas: list[dict[str, Any]], lines: list[LineOfBusiness]
) -> None:
    """Counts per line of business, split and family size, on stdout."""
    by_lob = Counter(t["metadata"]["line_of_business"] for t in tools)
    by_split = Counter(t["metadata"]["split"] for t in tools)
    families = Counter(t["metadata"]["family"] for t in tools)
    sizes = Counter(families.values())
    with_required = sum(1 for t in tools if t["parameters"]["required"])
    no_params = sum(1 for t in tools if not t["parameters"]["properties"])
    req_counts = Counter(len(t["parameters"]["required"]) for t in tools)
    print(f"tools: {len(tools)} in {len(by_lob)} lines of business, {len(families)} families")
    for line in lines:
        print(f"  {line.name:<28} {by_lob[line.name]:>4}  ({line.split})")
    print(f"split: train {by_split['train']}, heldout {by_split['heldout']}")
    print("family sizes: " + ", ".join(f"{k} x{v}" for k, v in sorted(sizes.items())))
    print(
        f"with required parameters: {with_required} ({with_required / len(tools):.1%}); "
        f"no parameters at all: {no_params}"
    )
    print("required-parameter counts: " + ", ".join(f"{k}: {v}" for k, v in sorted(req_counts.items())))
    per_lob = Counter(p["line_of_business"] for p in personas)
    print(f"personas: {len(personas)} over {len(per_lob)} lines of business")


def build(
    sources: Path, out: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[LineOfBusiness]]:
    """Read the sources, compose and write the four asset files; the tools, personas and lines."""
    src = load_sources(sources)
    tools = build_tools(src.specs, src.parameters, src.lines)
    personas = build_personas(random.Random(SEED), src.lines, src.kits, src.phrasing, PERSONAS_PER_LOB)
    out.mkdir(parents=True, exist_ok=True)
    _write_json(out / "catalogue.json", tools)
    _write_json(out / "catalogue_train.json", [t for t in tools if t["metadata"]["split"] == "train"])
    _write_json(out / "catalogue_heldout.json", [t for t in tools if t["metadata"]["split"] == "heldout"])
    _write_jsonl(out / "personas.jsonl", personas)
    return tools, personas, src.lines


@command_main
def main(argv: list[str] | None = None) -> int:
    parser = OneLineArgumentParser(
        prog="python -m scripts.build_assets",
        description="Build the bundled catalogue and persona bank from their sources.",
    )
    parser.add_argument(
        "--sources",
        type=Path,
        default=SOURCES,
        help=f"folder of the source data files (default: {SOURCES.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--out",
        type=output_folder,
        default=ASSETS,
        help=f"folder the assets are written to (default: {ASSETS.relative_to(ROOT)})",
    )
    args = parser.parse_args(argv)
    tools, personas, lines = build(args.sources, args.out)
    summarise(tools, personas, lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
