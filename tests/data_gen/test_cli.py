"""`python -m diaforge.data_gen analyze` and `generate --backend hf` as a user runs them."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import ROOT

SMOLLM2 = ROOT / "outputs" / "models" / "SmolLM2-135M-Instruct"


def _py(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "diaforge.data_gen", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_analyze_bundled_catalogue_json() -> None:
    proc = _py("analyze", "--catalogue", "data_gen/assets/catalogue.json", "--json")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    for key in (
        "num_tools",
        "tools_with_near_duplicate",
        "num_near_duplicate_pairs",
        "mean_topk_similarity",
        "share_with_required_params",
        "pairs",
    ):
        assert key in stats
    assert stats["num_tools"] >= 400
    assert stats["tools_with_near_duplicate"] >= 0.30
    assert stats["num_near_duplicate_pairs"] == len(stats["pairs"])
    assert all(p["score"] >= 0.70 for p in stats["pairs"])
    summary = _py(
        "analyze", "--catalogue", "data_gen/assets/catalogue_heldout.json", "--threshold", "0.8", "--k", "3"
    )
    assert summary.returncode == 0 and "near-duplicate pairs" in summary.stdout


BAD = {
    "truncated.json": ('[{"name": "a", "description": "x", "parameters": {"type": "object"', "line 1"),
    "noname.json": ('[{"description": "x", "parameters": {}}]', "'name'"),
    "dupes.json": (
        '[{"name": "a", "parameters": {}}, {"name": "a", "parameters": {}}]',
        "duplicate tool name 'a'",
    ),
    "params.json": ('[{"name": "a", "parameters": [1, 2]}]', "'parameters'"),
    "type.json": (
        '[{"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "money"}}}}]',
        "money",
    ),
    "empty.json": ("", "no tools"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_analyze_bad_input_is_one_line_exit_2(tmp_path: Path, name: str) -> None:
    text, needle = BAD[name]
    path = tmp_path / name
    path.write_text(text)
    proc = _py("analyze", "--catalogue", str(path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and needle in lines[0]
    assert "Traceback" not in proc.stderr


def test_analyze_missing_file(tmp_path: Path) -> None:
    proc = _py("analyze", "--catalogue", str(tmp_path / "nope.json"))
    assert proc.returncode == 2 and "nope.json" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_generate_with_the_hf_backend_on_smollm2(tmp_path: Path) -> None:
    """Every role played by SmolLM2 through the hf backend: quality aside, every seed ends accepted
    or rejected with a reason."""
    from diaforge.llm.smollm2 import materialise_smollm2

    materialise_smollm2(SMOLLM2)
    cfg = tmp_path / "hf.yaml"
    cfg.write_text(
        f"backend: hf\nmodel: {SMOLLM2}\nt_max: 2\nmax_attempts: 1\n"
        "roles:\n  assistant: {max_tokens: 64}\n  user: {max_tokens: 32}\n"
        "  relevancy: {max_tokens: 16}\n  critique: {max_tokens: 16}\n"
    )
    out = tmp_path / "run"
    proc = _py("generate", "--catalogue", "data_gen/assets/catalogue_train.json", "--out", str(out), "--num-dialogues", "2",
               "--config", str(cfg), "--quiet", "--no-plots", "--no-export", timeout=1500)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    accepted = [json.loads(x) for x in (out / "dialogues.jsonl").read_text().splitlines() if x]
    rejects = [json.loads(x) for x in (out / "rejects.jsonl").read_text().splitlines() if x]
    ended = sorted(
        [d["provenance"]["seed_index"] for d in accepted] + [r["seed_index"] for r in rejects if r["final"]]
    )
    assert ended == [0, 1]
    assert all(r["reason"] for r in rejects)
    for d in accepted:
        assert d["provenance"]["models"]["assistant"].startswith("hf:")


# --------------------------------------------------------------------------------------------
# The doors: every option of every subcommand has help and shows its default
# --------------------------------------------------------------------------------------------


def _walk(parser: argparse.ArgumentParser, path: str = "python -m diaforge.data_gen"):
    """(command path, parser) for the parser and every subcommand below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, f"{path} {name}")


def test_every_option_has_help_and_shows_its_default() -> None:
    from diaforge.cliargs import DefaultsHelpFormatter
    from diaforge.data_gen.cli import build_parser

    missing_help, missing_default, commands = [], [], 0
    for path, parser in _walk(build_parser()):
        commands += 1
        formatter = DefaultsHelpFormatter(path)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            name = "/".join(action.option_strings) or action.dest
            if not (action.help or "").strip():
                missing_help.append(f"{path} {name}")
            elif (
                action.option_strings
                and not action.required
                and "default" not in formatter._get_help_string(action)
            ):
                missing_default.append(f"{path} {name}")
    assert commands == 10  # the top level and its nine subcommands (rollouts among them)
    assert not missing_help, f"options without help: {missing_help}"
    assert not missing_default, f"options whose default is not shown: {missing_default}"


def test_generate_help_shows_the_config_defaults() -> None:
    proc = _py("generate", "--help", timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    for shown in (
        "--num-dialogues NUM_DIALOGUES Seeds to run. Seeds cycle through the catalogue's tools in a "
        "shuffled order (default: 100)",
        "--k K Distractors per candidate pool (the paper's k=5) (default: 5)",
        "--backend {scripted,openai,hf} scripted (offline rule-based agents), openai or hf (default: scripted)",
        "--no-plots turn off plots (on by default): write the corpus plots (plots/*.png).",
        "a flag given here overrides its key",
    ):
        assert shown in text, shown


def test_bad_flag_is_still_one_line() -> None:
    proc = _py("generate", "--k", "five", timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: python -m diaforge.data_gen generate: argument --k: expected a whole number, got 'five' (see --help)"
    ]
