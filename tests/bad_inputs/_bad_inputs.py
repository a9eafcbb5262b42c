"""The bad-input table's shared part: what a row is, the inputs rows share, and the check every
row goes through (`check_bad_input`). The rows themselves sit in one file per door beside this one.

Every bad input, door by door: exit code 2, one line on stderr naming the file and the field, no
traceback, nothing half-written (no new file or folder, every earlier file byte for byte as it
was), and the fixed rerun passes. The commands run in-process (`main(argv)`), so the table stays
fast; the training file's last tests run `python -m diaforge.train.launch` and plain `accelerate launch` in a
subprocess.

The fixed rerun is the same door with the case's fix (`Fix`: files rewritten or removed, or another
command line), made quick: one dialogue, no plots or exports, TF-IDF instead of MiniLM, one
benchmark dialogue in static mode. The training doors stop where training would start: the recipe
and the launcher's arguments parsed and checked (`train/sft.py`: and the dialogues loaded and
checked), with accelerate's launch itself stubbed out; `diaforge.train.preview` prints its samples.
The reruns of `diaforge.bench.run`, `diaforge.train.merge` and the demo (`diaforge.pipeline.cli`)
parse their command lines.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _repo import ROOT

# A small catalogue keeps the generation reruns quick (18 tools; k=5 needs 6).
TRAIN = ROOT / "tests" / "fixtures" / "catalogue_fleet_trials.json"
SMALL = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
CAT_OK = TRAIN.read_text(encoding="utf-8")
NON_UTF8 = b"# caf\xe9\nnum_dialogues: 2\n"
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)
FOLDER = None  # a files entry whose content is FOLDER is made as an empty folder
LAUNCH = ["--config_file", "accelerate_configs/cpu.yaml", "train/sft.py"]
# What every door says of an empty or blank output flag or key (`diaforge.hygiene.output_path_problem`).
NO_OUTPUT = "must name a file or folder to write"


@dataclass
class Fix:
    """What a person does after reading the line: rewrite or remove files, or change the command."""

    files: dict[str, bytes | str] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    argv: list[str] | None = None


@dataclass
class Case:
    id: str
    command: str  # data_gen | eval | train | launch | preview | merge | bench | demo
    files: dict[str, bytes | str | None]  # name -> content, written in the case's folder
    argv: list[str]  # {dir} is the case's folder
    needles: tuple[str, ...]  # what the line must hold (the file, the field, the reason)
    max_seconds: float | None = None
    fix: Fix | None = None


DIALOGUES_FIX = Fix({"d.jsonl": SMALL.read_text(encoding="utf-8")})


def attach_fixes(cases: list[Case], fixes: dict[str, Fix]) -> None:
    """Give each case without a fix of its own its fix from `fixes` (by id)."""
    for case in cases:
        case.fix = case.fix or fixes[case.id]


def case_ids(cases: list[Case]) -> list[str]:
    """The test ids of the rows: `door:id`."""
    return [f"{c.command}:{c.id}" for c in cases]


def _main(command: str) -> Callable[[list[str]], int]:
    if command == "data_gen":
        from diaforge.data_gen.cli import main
    elif command == "eval":
        from diaforge.eval.cli import main
    elif command == "launch":
        from diaforge.train.launch import main
    elif command == "bench":
        from diaforge.bench.run import main
    elif command == "preview":
        from diaforge.train.preview import main
    elif command == "merge":
        from diaforge.train.merge import main
    elif command == "demo":
        from diaforge.pipeline.cli import main
    else:
        from diaforge.train.sft import main
    return main


def _snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` with its content's digest (folders: "")."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
        for p in folder.rglob("*")
    }


def _write(folder: Path, files: dict[str, bytes | str | None]) -> None:
    for name, content in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if content is FOLDER:
            target.mkdir(exist_ok=True)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content.replace("{dir}", str(folder)), encoding="utf-8")


def _fast_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """TF-IDF wherever an encoder is asked for: the reruns stay quick and need no MiniLM."""
    import diaforge.data_gen.personas
    import diaforge.data_gen.seed_engine
    import diaforge.similarity

    def tfidf(name: str = "auto") -> object:
        return diaforge.similarity.TfidfEncoder()

    for module in (diaforge.similarity, diaforge.data_gen.seed_engine, diaforge.data_gen.personas):
        monkeypatch.setattr(module, "get_encoder", tfidf)


def _eval_runs(folder: Path) -> None:
    """Two small evaluation runs for the compare and score cases."""
    from diaforge.eval.cli import main

    for name, seed in (("run1", "0"), ("run2", "1")):
        code = main(
            [
                "run",
                "--backend",
                "random",
                "--limit",
                "1",
                "--modes",
                "static",
                "--quiet",
                "--seed",
                seed,
                "--no-tool-limit",
                "1",
                "--out",
                str(folder / name),
            ]
        )
        assert code == 0


def _quick(command: str, argv: list[str]) -> list[str]:
    """A rerun's command line made quick: one dialogue, no plots or exports, no bars."""
    if command == "data_gen" and argv[0] == "generate":
        argv = [*argv, "--num-dialogues", "1", "--no-plots", "--no-export", "--quiet"]
        return argv if "--out" in argv else [*argv, "--out", "{dir}/rerun"]
    if command == "eval" and argv[0] == "run":
        argv = [*argv, "--limit", "1", "--modes", "static", "--quiet"]
        argv = argv if "--no-tool-limit" in argv else [*argv, "--no-tool-limit", "1"]
        return argv if "--out" in argv else [*argv, "--out", "{dir}/rerun"]
    return argv


def _rerun(case: Case, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The case with its fix applied: the door passes (see the module docstring)."""
    fix = case.fix
    assert fix is not None, f"{case.id}: no fix"
    for name in fix.remove:
        (folder / name).unlink()
    _write(folder, fix.files)
    argv = [a.replace("{dir}", str(folder)) for a in _quick(case.command, fix.argv or case.argv)]
    if case.command == "bench":
        from diaforge.bench.run import parse_args

        parse_args(argv)
        return
    if case.command == "merge":
        from diaforge.train.merge import build_parser

        build_parser().parse_args(argv)
        return
    if case.command == "demo":
        from diaforge.pipeline.cli import build_parser as demo_parser

        demo_parser().parse_args(argv)
        return
    if case.command in ("train", "launch"):
        import accelerate.commands.launch

        import diaforge.train.sft

        launched: list[object] = []
        monkeypatch.setattr(accelerate.commands.launch, "launch_command", launched.append)
        from diaforge.train.launch import main

        assert main(argv if case.command == "launch" else [*LAUNCH, *argv]) == 0
        assert launched, "the launcher was not reached"
        if case.command == "train":  # what train/sft.py checks before it loads a model
            args = diaforge.train.sft.parse(argv)[0]
            diaforge.train.sft.load_data(args)
        return
    assert _main(case.command)(argv) == 0, f"{case.id}: the fixed rerun failed"


def check_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One row: the door refuses the input as the module docstring says, then the fixed rerun passes."""
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    _fast_encoder(monkeypatch)
    uses_runs = any("{dir}/run1" in a for a in [*case.argv, *((case.fix.argv or []) if case.fix else [])])
    if uses_runs:
        _eval_runs(tmp_path)
    _write(tmp_path, case.files)
    capsys.readouterr()
    before = _snapshot(tmp_path)
    argv = [a.replace("{dir}", str(tmp_path)) for a in case.argv]
    started = time.perf_counter()
    try:
        code = _main(case.command)(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    seconds = time.perf_counter() - started
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[diaforge]")]
    assert code == 2, err
    assert "Traceback" not in err, err
    assert len(lines) == 1, err
    for needle in case.needles:
        assert needle in lines[0], (needle, lines[0])
    if case.max_seconds is not None:
        assert seconds < case.max_seconds, f"{seconds:.2f}s"
    # Nothing half-written: no new file or folder, and every file there before is as it was.
    assert _snapshot(tmp_path) == before
    _rerun(case, tmp_path, monkeypatch)
