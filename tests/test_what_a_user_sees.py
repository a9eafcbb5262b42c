"""What a user sees (issue 25, item 8): a bar on every long step, bars that end at 100 %, `--quiet`
quiet, results alone on stdout.

Bars meant for a person (shown only when stderr is a terminal) are checked under a
pseudo-terminal, as a person would see them; the same commands with stderr into a file stay quiet.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from _repo import ROOT, clean_env

CATALOGUE = ROOT / "tests" / "fixtures" / "catalogue_fleet_trials.json"  # 18 tools


def on_terminal(args: list[str], timeout: float = 300) -> tuple[int, str, str]:
    """Run `python args...` with stderr on a pseudo-terminal 120 columns wide (a real terminal's
    size: tqdm draws nothing on one of width 0) and stdout into a pipe. Returns (exit code, stdout,
    what the terminal showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, env=clean_env(), stdin=slave, stdout=subprocess.PIPE, stderr=slave
    )
    os.close(slave)
    shown = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every holder of the terminal's other end has closed it
            break
        if not chunk:
            break
        shown.append(chunk)
    os.close(master)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=timeout), out, b"".join(shown).decode(errors="replace")


def renderings(text: str, desc: str) -> list[str]:
    """Every drawing of the bar named `desc`, in order (tqdm redraws a bar after a carriage return)."""
    return [part.strip() for part in re.split(r"\r\n|\r|\n", text) if part.startswith(f"{desc}:")]


def final_count(text: str, desc: str) -> tuple[int, int, str]:
    """(n, total, whole drawing) of the last drawing of the bar named `desc`."""
    last = renderings(text, desc)[-1]
    n, total = re.search(r"\| *(\d+)/(\d+) ", last).groups()
    return int(n), int(total), last


# --------------------------------------------------------------------------------------------
# A bar on the long steps
# --------------------------------------------------------------------------------------------


ENCODE_MANY = (
    "from diaforge.similarity import MiniLMEncoder\n"
    "vectors = MiniLMEncoder().encode([f'tool number {i} does thing {i % 7}' for i in range(300)])\n"
    "print(vectors.shape)\n"
)


def test_embedding_a_catalogue_counts_its_batches_on_a_terminal_and_not_in_a_log() -> None:
    """Embedding hundreds of texts (`analyze`, the generator's catalogue and personas) takes tens
    of seconds: on a terminal the encoder's batches are counted (300 texts, 5 batches of 64); into
    a log, nothing but the result."""
    code, out, shown = on_terminal(["-c", ENCODE_MANY])
    assert code == 0, shown
    assert out == "(300, 384)\n"
    n, total, last = final_count(shown, "Batches")
    assert (n, total) == (5, 5) and "100%" in last, shown
    assert "Loading weights" not in shown  # the encoder's own loading bar stands for it

    logged = subprocess.run(
        [sys.executable, "-c", ENCODE_MANY],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert logged.returncode == 0 and logged.stdout == out
    assert logged.stderr == ""


@pytest.fixture(scope="module")
def tiny_adapter(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A LoRA adapter on a tiny base built on the spot, with its tokenizer."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from diaforge.train.modeling import build_tiny_model

    tmp = tmp_path_factory.mktemp("tiny")
    base = build_tiny_model(tmp / "base", texts=["a small corpus to train a tokenizer on"] * 4, seed=0)
    peft = get_peft_model(
        AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=4, target_modules="all-linear")
    )
    peft.save_pretrained(tmp / "adapter")
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp / "adapter")
    return tmp / "adapter"


def test_merge_counts_its_steps_and_prints_its_result_alone(tiny_adapter: Path, tmp_path: Path) -> None:
    out = tmp_path / "merged"
    code, stdout, shown = on_terminal(
        ["train/merge.py", "--adapter", str(tiny_adapter), "--output", str(out)]
    )
    assert code == 0, shown
    assert stdout == f"merged model saved to {out}\n"
    steps = " ".join(renderings(shown, "merge"))
    for step in ("importing torch", "loading the base", "merging the adapter", "saving to"):
        assert step in steps, shown
    n, total, last = final_count(shown, "merge")
    assert (n, total) == (4, 4) and last.endswith("done]"), last
    assert "Loading weights" not in shown and "Writing model shards" not in shown  # ours stands for them
    assert (out / "config.json").is_file()


# --------------------------------------------------------------------------------------------
# Evaluation: bars that end at 100 %
# --------------------------------------------------------------------------------------------


@pytest.mark.slow(reason="reads MiniLM from disk")
@pytest.mark.filterwarnings("ignore")
def test_eval_bars_end_at_100_percent_when_dialogues_end_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bars count turns; a dialogue that ends early with a call takes its remaining turns off
    the total, so each bar ends full with no ETA left (they used to stop at 27 % and 50 %)."""
    from diaforge.eval.cli import main

    limit, t_max = 6, 10
    argv = [
        "run",
        "--backend",
        "random",
        "--limit",
        str(limit),
        "--t-max",
        str(t_max),
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    shown = capsys.readouterr().err
    for desc in ("static", "dynamic"):
        n, total, last = final_count(shown, desc)
        assert n == total and "100%" in last, last
    _, dynamic_total, _ = final_count(shown, "dynamic")
    assert dynamic_total < limit * t_max  # some dialogues did end early: the total shrank
    first_total = int(re.search(r"/(\d+) ", renderings(shown, "dynamic")[0]).group(1))
    assert first_total == limit * t_max


# --------------------------------------------------------------------------------------------
# --quiet is quiet
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        [
            "-m",
            "diaforge.eval",
            "run",
            "--backend",
            "random",
            "--limit",
            "2",
            "--t-max",
            "2",
            "--quiet",
            "--out",
        ],
        [
            "-m",
            "diaforge.data_gen",
            "generate",
            "--catalogue",
            str(CATALOGUE),
            "--num-dialogues",
            "2",
            "--quiet",
            "--out",
        ],
    ],
    ids=["eval run", "generate"],
)
def test_quiet_prints_the_result_and_nothing_else(args: list[str], tmp_path: Path) -> None:
    """No bar of ours and none of the libraries' ("Loading weights" of the sentence encoder,
    "Saving the dataset" of the HF export): stderr stays empty, stdout holds the result."""
    proc = subprocess.run(
        [sys.executable, *args, str(tmp_path / "out")],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert str(tmp_path / "out") in proc.stdout.splitlines()[-1]


# --------------------------------------------------------------------------------------------
# Results alone on stdout
# --------------------------------------------------------------------------------------------


def test_the_launcher_keeps_library_lines_off_stdout(tmp_path: Path) -> None:
    """Checking the recipe imports TRL, which announces "[INFO] Running in WANDB offline mode" with
    `print` when WANDB_MODE=offline: that line goes to stderr, with the error. (A training run's
    own stdout is checked in tests/train/test_sft_training.py: one result line.)"""
    missing = tmp_path / "missing.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "diaforge.train.launch",
            "--config_file",
            "accelerate_configs/cpu.yaml",
            "train/sft.py",
        ]
        + ["recipes/tiny/sft.yaml", "--dataset_path", str(missing), "--output_dir", str(tmp_path / "out")],
        cwd=ROOT,
        env={**clean_env(), "WANDB_MODE": "offline"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert f"dataset_path: {missing}: file not found" in proc.stderr
