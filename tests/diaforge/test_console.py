"""`diaforge.console`: only a command's result reaches stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _repo import FIXTURES, ROOT

from diaforge.console import EXIT_BROKEN_PIPE, emit, results_only_on_stdout, run_main
from diaforge.data_gen.cli import main


def test_stray_prints_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with results_only_on_stdout():
        print("[INFO] some library talking")
        emit('{"a": 1}')
    out, err = capsys.readouterr()
    assert json.loads(out) == {"a": 1}
    assert "library talking" in err


def test_nesting_keeps_the_real_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with results_only_on_stdout():
        with results_only_on_stdout():
            print("noise")
            emit("inner")
        emit("outer")
    print("after")
    out, err = capsys.readouterr()
    assert out.split() == ["inner", "outer", "after"]
    assert err.split() == ["noise"]


def test_cli_json_survives_a_printing_library(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import diaforge.data_gen.corpus as corpus

    real = corpus.analyze_corpus

    def chatty(*args, **kwargs):
        print("[INFO] Running in WANDB offline mode")
        return real(*args, **kwargs)

    monkeypatch.setattr(corpus, "analyze_corpus", chatty)
    path = FIXTURES / "dialogues_small.jsonl"
    code = main(["analyze-corpus", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert isinstance(json.loads(out), dict)
    assert "WANDB offline" in err


# --------------------------------------------------------------------------------------------
# Broken pipes: every `python -m` entry point ends quietly when its reader goes away
# --------------------------------------------------------------------------------------------


def _closed_reader(args: list[str]) -> subprocess.CompletedProcess:
    """Run `python args...` with stdout into a pipe whose reader has closed before anything is
    written (`| head` that has seen enough), as a shell pipeline does."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the only reader: every write from now on meets EPIPE
    err = proc.stderr.read().decode()
    proc.wait(timeout=300)
    return subprocess.CompletedProcess(args, proc.returncode, "", err)


LOTS = (
    "from diaforge.console import emit, results_only_on_stdout, run_main\n"
    "def main():\n"
    "    with results_only_on_stdout():\n"
    "        for i in range(100000):\n"
    "            emit(f'line {i}')\n"
    "    return 0\n"
    "run_main(main)\n"
)


TOOLDIAL = "tests/fixtures/peers/tooldial"
SCORE = ["next-action", "score", "--labels", "tooldial", "--json"]
SCORE += ["--gold", f"{TOOLDIAL}/action_gold.json", "--pred", f"{TOOLDIAL}/action_pred.json"]


@pytest.mark.parametrize(
    "args",
    [["-c", LOTS], ["-m", "diaforge.eval", *SCORE], ["-m", "diaforge", "eval", *SCORE]],
    ids=["emit", "eval", "diaforge"],
)
def test_broken_pipe_ends_quietly_with_141(args: list[str]) -> None:
    """`python -m diaforge.eval next-action score ... | head`: no traceback, exit 128 + SIGPIPE."""
    proc = _closed_reader(args)
    assert proc.returncode == EXIT_BROKEN_PIPE, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "diaforge.eval", "--help"],
        ["-m", "diaforge.data_gen", "--help"],
        ["-m", "diaforge.train.launch", "--help"],
        ["-m", "diaforge.train.preview", "--help"],
        ["-m", "diaforge.bench.run", "--help"],
        ["-m", "diaforge", "--help"],
        ["train/sft.py", "--help"],
    ],
    ids=[
        "eval",
        "data_gen",
        "diaforge.train.launch",
        "diaforge.train.preview",
        "diaforge.bench.run",
        "diaforge",
        "train/sft.py",
    ],
)
def test_help_into_a_closed_pipe_ends_quietly(args: list[str]) -> None:
    """Help text too (argparse ignores the failed write and exits 0; ours exit 141)."""
    proc = _closed_reader(args)
    assert proc.returncode in (0, EXIT_BROKEN_PIPE), proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr


def test_a_reader_that_reads_a_little_then_closes() -> None:
    """`... | head -n 2`: the lines read are the command's first lines, then a quiet exit."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", LOTS], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    first = [proc.stdout.readline() for _ in range(2)]
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert first == [b"line 0\n", b"line 1\n"]
    assert "Traceback" not in err and "Exception ignored" not in err


def test_run_main_passes_the_status_on(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as exc:
        run_main(lambda: 3)
    assert exc.value.code == 3
