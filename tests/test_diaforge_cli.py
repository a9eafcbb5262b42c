"""The project's doors: the `diaforge` console command, `make help`, the pre-commit hooks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _repo import ROOT

from diaforge.cli import COMMANDS, main


def test_diaforge_lists_its_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("data", "train", "preview", "merge", "eval", "demo", "demo-curve", "bench"):
        assert any(line.startswith(f"  {name} ") for line in out.splitlines()), out


def test_diaforge_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: diaforge" in capsys.readouterr().err
    assert main(["nope"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown command 'nope'")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_diaforge_forwards_to_the_module(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`diaforge X --help` is the help of `python -m X` (their own usage line, exit 0)."""
    saved = sys.argv[:]
    assert main([command, "--help"]) == 0
    assert sys.argv == saved
    assert "usage:" in capsys.readouterr().out


#: A command line per door that asks for help and does no work, and the first line its help prints.
HELP_FROM_ANYWHERE = {
    "train": (["train", "r.yaml", "--help"], "usage: train/sft.py RECIPE.yaml"),
    "train-script": (["train", "train/sft.py", "--help"], "usage: train/sft.py RECIPE.yaml"),
    "preview": (["preview", "--help"], "usage: python -m diaforge.train.preview"),
    "merge": (["merge", "--help"], "usage: train/merge.py"),
    "demo": (["demo", "--help"], "usage: python -m diaforge.pipeline demo"),
    "demo-curve": (["demo-curve", "--help"], "usage: python -m diaforge.pipeline demo-curve"),
}


@pytest.mark.parametrize("name", sorted(HELP_FROM_ANYWHERE))
def test_every_door_answers_from_a_folder_outside_the_checkout(name: str, tmp_path: Path) -> None:
    """`diaforge train RECIPE --help` (no `train/sft.py` to type, none in the working folder),
    `diaforge merge|preview|demo|demo-curve --help`: each prints its module's own help from a
    folder that holds nothing of the project, and writes nothing there. The demo's help names the
    bundled recipe and benchmark, found inside the installed packages."""
    argv, first_line = HELP_FROM_ANYWHERE[name]
    # COLUMNS: argparse wraps the help to the terminal's width, which can split a path at a hyphen.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "COLUMNS": "500"}
    proc = subprocess.run(
        [sys.executable, "-m", "diaforge", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(first_line), proc.stdout[:500]
    assert list(tmp_path.iterdir()) == []
    if name.startswith("demo"):
        for bundled in ("recipes/smollm2-135m/demo.yaml", "eval/benchmarks/diabench_heldout_v1.jsonl"):
            assert f"(default: {ROOT / bundled})" in proc.stdout, proc.stdout


def test_a_bundled_accelerate_config_is_found_by_its_checkout_path_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--config_file` as the README prints it (`accelerate_configs/...`, with a subfolder or
    not), as a file name or a bare name: the bundled file of the installed package."""
    from argparse import Namespace

    from diaforge.train.config import RecipeError
    from diaforge.train.launch import find_config_file

    monkeypatch.chdir(tmp_path)
    bundled = ROOT / "accelerate_configs"
    for given, found in (
        ("accelerate_configs/cpu.yaml", "cpu.yaml"),
        ("cpu.yaml", "cpu.yaml"),
        ("single_gpu", "single_gpu.yaml"),
        ("accelerate_configs/multi_node/deepspeed_zero3_2x8.yaml", "multi_node/deepspeed_zero3_2x8.yaml"),
    ):
        args = Namespace(config_file=given)
        find_config_file(args)
        assert Path(args.config_file).resolve() == bundled / found, given
    with pytest.raises(
        RecipeError, match=r"--config_file /nowhere/cpu.yaml: no such .*the bundled ones: cpu"
    ):
        find_config_file(Namespace(config_file="/nowhere/cpu.yaml"))


def test_diaforge_passes_the_exit_status_on(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "score"]) == 2  # the transcripts argument is missing
    assert "transcripts" in capsys.readouterr().err


def test_python_m_diaforge_cli() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "diaforge", "eval", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "usage: python -m diaforge.eval" in proc.stdout


def test_a_users_eval_or_train_in_the_working_folder_hides_nothing(tmp_path: Path) -> None:
    """A folder holding the user's own `eval.py` and `train/` package: `python -m diaforge.eval` and
    the installed `diaforge eval` both run the project's module (before the stages moved under the
    one name `diaforge`, `python -m eval` there ran the user's file)."""
    script = Path(sys.executable).parent / "diaforge"
    assert script.exists(), f"{script}: the console script is not installed (make setup installs it)"
    (tmp_path / "eval.py").write_text('print("the user\'s own eval.py")\n', encoding="utf-8")
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "__init__.py").write_text('print("the user\'s own train")\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for argv in ([sys.executable, "-m", "diaforge.eval", "--help"], [str(script), "eval", "--help"]):
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "usage: python -m diaforge.eval" in proc.stdout and "the user's own" not in proc.stdout


def test_console_script_is_declared() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '\ndiaforge = "diaforge.cli:cli"\n' in pyproject
    assert set(COMMANDS) == {
        "data",
        "train",
        "preview",
        "merge",
        "eval",
        "serve",
        "demo",
        "demo-curve",
        "bench",
    }
    assert COMMANDS["demo"].module == "diaforge.pipeline" and COMMANDS["demo"].args == ("demo",)


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_help_is_the_default_and_lists_every_target() -> None:
    out = subprocess.run(["make", "-s"], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = [line.split(":")[0] for line in makefile.splitlines() if line[:1].isalpha() and ": " in line]
    targets = [t for t in targets if t.replace("-", "").isalnum() and " " not in t]
    assert targets and out.startswith("usage: make TARGET")
    for target in targets:
        assert any(line.startswith(f"  {target} ") for line in out.splitlines()), (
            f"{target} has no '## ' line"
        )


def test_pre_commit_hooks_are_local() -> None:
    """CI cannot reach GitHub: every hook runs a tool installed by `make setup`."""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [h for repo in config["repos"] for h in repo["hooks"]]
    assert {repo["repo"] for repo in config["repos"]} == {"local"}
    assert {h["language"] for h in hooks} == {"system"}
    assert {h["id"] for h in hooks} == {
        "ruff-check",
        "ruff-format",
        "end-of-file-fixer",
        "check-added-large-files",
        "import-contract",
    }


def test_diaforge_train_recipe_from_any_folder(tmp_path: Path) -> None:
    """`diaforge train RECIPE` in a folder outside the checkout: the training script is found in
    the package, `--config_file cpu` is the bundled accelerate config, the recipe's relative
    dataset path is found beside the recipe, and the outputs land under the working folder; then
    `diaforge preview`, `merge` and `eval run` there on what it made."""
    work = tmp_path / "work"
    (work / "recipes").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "fixtures" / "dialogues_small.jsonl", work / "recipes" / "d.jsonl")
    (work / "recipes" / "r.yaml").write_text(
        "model_name_or_path: tiny://llama\ndataset_path: d.jsonl\noutput_dir: out/sft\nreport_to: none\n"
        "max_steps: 1\nmax_dialogues: 1\nsave_strategy: 'no'\nlogging_steps: 1\n",
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "diaforge", "train", "--config_file", "cpu", "recipes/r.yaml"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (work / "out" / "sft" / "adapter_model.safetensors").is_file()
    assert not (work / "recipes" / "out").exists()

    # The other doors on what the first one made, in the same folder: the samples, the merge, the
    # evaluation of the merged model.
    def door(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "diaforge", *argv],
            cwd=work, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, (argv, done.stderr[-3000:])
        return done

    shown = door("preview", "recipes/r.yaml", "--num", "1", "--no-color")
    assert shown.stdout.startswith("=== dialogue ") and " trained ===" in shown.stdout
    door("merge", "--adapter", "out/sft", "--output", "out/merged", "--quiet")
    assert (work / "out" / "merged" / "model.safetensors").is_file()
    door("eval", "run", "--model", "out/merged", "--limit", "1", "--modes", "static", "--no-tool-bench",
         "none", "--max-new-tokens", "8", "--out", "out/eval", "--quiet")  # fmt: skip
    metrics = json.loads((work / "out" / "eval" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["static"]["n"] == 1 and metrics["checkpoint"]["kind"] == "model"


def test_diaforge_bench_writes_only_under_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`diaforge bench` from another folder: the default results file is under the working
    folder (not the checkout's tracked bench/results.json), and SmolLM2 goes beside --out."""
    from diaforge.bench import inputs as bench_inputs
    from diaforge.bench import run as bench_run

    monkeypatch.chdir(tmp_path)
    args, parts = bench_run.parse_args(["--only", "token_ratio"])
    assert parts == ["token_ratio"]
    assert not Path(args.out).is_absolute() and args.out.startswith("outputs/")
    monkeypatch.setattr(bench_inputs, "SMOLLM2", tmp_path / "absent" / "SmolLM2-135M-Instruct")
    made: list[Path] = []
    import diaforge.llm.smollm2 as smollm2

    monkeypatch.setattr(smollm2, "materialise_smollm2", made.append)
    monkeypatch.setattr(smollm2, "is_materialised", lambda path: False)
    bench_inputs.smollm2_path(tmp_path / "results")
    assert made == [tmp_path / "results" / "models" / "SmolLM2-135M-Instruct"]


def test_diaforge_eval_run_from_any_folder(tmp_path: Path) -> None:
    """`diaforge eval run` in a folder outside the checkout finds the held-out benchmark inside the
    package and writes its run folder under the working folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "diaforge", "eval", "run", "--backend", "reference", "--limit", "2",
         "--modes", "dynamic", "--out", "out/e", "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "out" / "e" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["dynamic"]["Acc"] == 1.0 and metrics["dynamic"]["n"] == 2
    assert (
        Path(metrics["benchmark"]).resolve()
        == (ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl").resolve()
    )
