"""Every bad input: exit code 2, one line on stderr naming the file and the field, no traceback,
nothing half-written. The commands run in-process (`main(argv)`), so the table stays fast; the
last test runs `python -m train.launch` (accelerate launch) in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "data_gen" / "assets" / "catalogue_train.json"
SMALL = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
NON_UTF8 = b"# caf\xe9\nnum_dialogues: 2\n"
BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


@dataclass
class Case:
    id: str
    command: str  # data_gen | eval | train
    files: dict[str, bytes | str]  # name -> content, written in the case's folder
    argv: list[str]  # {dir} is the case's folder
    needles: tuple[str, ...]  # what the line must hold (the file, the field, the reason)
    max_seconds: float | None = None


def _dialogue_calling_unoffered_tool() -> str:
    record = json.loads(SMALL.read_text(encoding="utf-8").splitlines()[0])
    for turn in record["turns"]:
        for call in turn.get("tool_calls") or []:
            call["name"] = "launch_rocket"
    return json.dumps(record) + "\n"


def _recipe(dataset: str) -> str:
    return f"model_name_or_path: tiny://llama\ndataset_path: {dataset}\noutput_dir: {{dir}}/sft\nreport_to: none\n"


LAUNCH = ["--config_file", "accelerate_configs/cpu.yaml", "train/sft.py"]


def _cfg(text: str) -> str:
    return f"catalogue: {TRAIN}\nnum_dialogues: 2\n{text}"


CASES = [
    # --- data_gen generate: configs
    Case(
        "config-not-utf8",
        "data_gen",
        {"c.yaml": NON_UTF8},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "line 1", "not UTF-8"),
    ),
    Case(
        "config-concurrency-lots",
        "data_gen",
        {"c.yaml": _cfg("concurrency: lots\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'concurrency'", "integer"),
    ),
    Case(
        "config-k-2.7-before-encoder",
        "data_gen",
        {"c.yaml": _cfg("k: 2.7\nencoder: minilm\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'k'", "integer"),
        max_seconds=5,
    ),
    Case(
        "config-inf",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: 1.0e+999}}\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "roles.user.temperature", "finite"),
    ),
    Case(
        "config-alias-bomb",
        "data_gen",
        {"c.yaml": BOMB},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "config-too-deep",
        "data_gen",
        {"c.yaml": "a: " + "[" * 100_000},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml",),
    ),
    Case(
        "config-unknown-encoder",
        "data_gen",
        {"c.yaml": _cfg("encoder: bert\n")},
        ["generate", "--config", "{dir}/c.yaml"],
        ("c.yaml", "'encoder'"),
    ),
    Case(
        "config-unknown-key",
        "data_gen",
        {"c.yaml": _cfg("bogus_key: 1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 'bogus_key'"),
    ),
    Case(
        "config-yaml-syntax",
        "data_gen",
        {"c.yaml": _cfg("roles: [1\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "invalid YAML"),
    ),
    Case(
        "config-not-a-mapping",
        "data_gen",
        {"c.yaml": "- a\n- b\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "mapping"),
    ),
    Case(
        "config-num-dialogues-negative",
        "data_gen",
        {"c.yaml": f"catalogue: {TRAIN}\nnum_dialogues: -2\n"},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'num_dialogues'", "at least 1"),
    ),
    Case(
        "config-t-max-0",
        "data_gen",
        {"c.yaml": _cfg("t_max: 0\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'t_max'", "at least 1"),
    ),
    Case(
        "config-temperature-not-a-number",
        "data_gen",
        {"c.yaml": _cfg("roles: {user: {temperature: hot}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "roles.user.temperature", "number"),
    ),
    Case(
        "config-k-five",
        "data_gen",
        {"c.yaml": _cfg("k: five\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'k'", "must be an integer, got 'five'"),
    ),
    Case(
        "config-validators-string-no",
        "data_gen",
        {"c.yaml": _cfg('validators: "no"\n')},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'validators'", "must be true or false, got 'no'"),
    ),
    Case(
        "config-unknown-key-suggested",
        "data_gen",
        {"c.yaml": _cfg("t_mx: 4\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "unknown config key 't_mx'", "did you mean 't_max'"),
    ),
    Case(
        "config-role-setting-wrong-type",
        "data_gen",
        {"c.yaml": _cfg("roles: {critique: {max_retries: [1]}}\n")},
        ["generate", "--config", "{dir}/c.yaml", "--out", "{dir}/run"],
        ("c.yaml", "'roles.critique.max_retries'", "must be an integer, got list"),
    ),
    Case(
        "config-missing",
        "data_gen",
        {},
        ["generate", "--config", "{dir}/missing.yaml", "--out", "{dir}/run"],
        ("missing.yaml", "not found"),
    ),
    # --- data_gen generate: flags and files
    Case(
        "out-is-a-file",
        "data_gen",
        {"out": "x"},
        ["generate", "--catalogue", str(TRAIN), "--out", "{dir}/out", "--num-dialogues", "1", "--quiet"],
        ("out", "not a folder"),
    ),
    Case(
        "num-dialogues-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--num-dialogues", "0"],
        ("--num-dialogues", "at least 1"),
    ),
    Case(
        "k-not-a-number",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--k", "2.7"],
        ("--k", "whole number"),
    ),
    Case(
        "concurrency-0",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--concurrency", "0", "--out", "{dir}/run"],
        ("--concurrency", "at least 1"),
    ),
    Case(
        "shard-index-out-of-range",
        "data_gen",
        {},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--num-shards",
            "2",
            "--shard-index",
            "5",
            "--out",
            "{dir}/run",
        ],
        ("shard_index", "[0, 1]"),
    ),
    Case(
        "catalogue-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", "{dir}/missing.json", "--out", "{dir}/run"],
        ("missing.json", "does not exist"),
    ),
    Case(
        "catalogue-empty",
        "data_gen",
        {"cat.json": ""},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "empty"),
    ),
    Case(
        "catalogue-bad-json",
        "data_gen",
        {"cat.json": "{not json"},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "line 1", "invalid JSON"),
    ),
    Case(
        "catalogue-tool-without-name",
        "data_gen",
        {"cat.json": '[{"description": "no name"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "record 1", "'name'"),
    ),
    Case(
        "personas-missing",
        "data_gen",
        {},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "personas-bad-json",
        "data_gen",
        {"p.jsonl": "not json\n"},
        ["generate", "--catalogue", str(TRAIN), "--personas", "{dir}/p.jsonl", "--out", "{dir}/run"],
        ("p.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-bad-json",
        "data_gen",
        {"d.jsonl": "not json\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "dialogues-missing-field",
        "data_gen",
        {"d.jsonl": '{"id": "x"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'seed_tool'"),
    ),
    Case(
        "catalogue-nested-100000",
        "data_gen",
        {"cat.json": "[" * 100_000},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "nested deeper"),
    ),
    Case(
        "catalogue-not-utf8",
        "data_gen",
        {"cat.json": b'[{"name": "caf\xe9"}]'},
        ["generate", "--catalogue", "{dir}/cat.json", "--out", "{dir}/run"],
        ("cat.json", "UTF-8"),
    ),
    Case(
        "catalogue-inf",
        "data_gen",
        {
            "cat.json": '[{"name": "a", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "number", "maximum": 1e999}}}}]'
        },
        ["analyze", "--catalogue", "{dir}/cat.json"],
        ("cat.json", "finite"),
    ),
    Case(
        "catalogue-yaml-alias-bomb",
        "data_gen",
        {"cat.yaml": BOMB},
        ["analyze", "--catalogue", "{dir}/cat.yaml"],
        ("cat.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "personas-not-utf8",
        "data_gen",
        {"p.jsonl": b'{"id": "p", "description": "caf\xe9"}\n'},
        [
            "generate",
            "--catalogue",
            str(TRAIN),
            "--personas",
            "{dir}/p.jsonl",
            "--out",
            "{dir}/run",
            "--encoder-free",
        ],
        ("p.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-not-utf8",
        "data_gen",
        {"d.jsonl": b'{"id": "\xff"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "dialogues-nested-100000",
        "data_gen",
        {"d.jsonl": "[" * 100_000 + "\n"},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "dialogues-surrogate",
        "data_gen",
        {"d.jsonl": '{"id": "\\ud83d"}\n'},
        ["analyze-corpus", "{dir}/d.jsonl"],
        ("d.jsonl", "line 1", "'id'", "surrogate"),
    ),
    # --- eval run: flags and files
    Case(
        "eval-limit-0", "eval", {}, ["run", "--backend", "random", "--limit", "0"], ("--limit", "at least 1")
    ),
    Case(
        "eval-limit-negative",
        "eval",
        {},
        ["run", "--backend", "random", "--limit", "-3"],
        ("--limit", "at least 1"),
    ),
    Case(
        "eval-n-voters-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-voters", "0"],
        ("--n-voters", "at least 1"),
    ),
    Case(
        "eval-n-samples-0",
        "eval",
        {},
        ["run", "--backend", "random", "--n-samples", "0"],
        ("--n-samples", "at least 1"),
    ),
    Case(
        "eval-t-max-0", "eval", {}, ["run", "--backend", "random", "--t-max", "0"], ("--t-max", "at least 1")
    ),
    Case(
        "eval-out-is-a-file",
        "eval",
        {"out": "x"},
        ["run", "--backend", "random", "--out", "{dir}/out"],
        ("out", "not a folder"),
    ),
    Case(
        "eval-bench-not-utf8",
        "eval",
        {"b.jsonl": b'{"id": "\xff"}\n'},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "eval-bench-deep-args",
        "eval",
        {"b.jsonl": '{"id": "x", "args": ' + "[" * 300 + "]" * 300 + "}\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "nested deeper"),
    ),
    Case(
        "eval-bench-missing",
        "eval",
        {},
        ["run", "--backend", "random", "--bench", "{dir}/nope.jsonl", "--out", "{dir}/run"],
        ("nope.jsonl", "not found"),
    ),
    Case(
        "eval-bench-bad-json",
        "eval",
        {"b.jsonl": "not json\n"},
        ["run", "--backend", "random", "--bench", "{dir}/b.jsonl", "--out", "{dir}/run"],
        ("b.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "eval-batch-size-0",
        "eval",
        {},
        ["run", "--backend", "random", "--batch-size", "0", "--out", "{dir}/run"],
        ("--batch-size", "at least 1"),
    ),
    Case(
        "eval-max-new-tokens-0",
        "eval",
        {},
        ["run", "--backend", "random", "--max-new-tokens", "0", "--out", "{dir}/run"],
        ("--max-new-tokens", "at least 1"),
    ),
    Case(
        "eval-unknown-mode",
        "eval",
        {},
        ["run", "--backend", "random", "--modes", "sideways", "--out", "{dir}/run"],
        ("--modes", "'sideways'"),
    ),
    Case(
        "eval-compare-not-a-run",
        "eval",
        {},
        ["compare", "{dir}/nope1", "{dir}/nope2", "--out", "{dir}/cmp"],
        ("nope1", "metrics.json"),
    ),
    # --- train/sft.py: recipes and data
    Case(
        "recipe-epochs-negative",
        "train",
        {"r.yaml": "num_train_epochs: -3\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "num_train_epochs", "greater than 0"),
    ),
    Case(
        "recipe-lr-inf",
        "train",
        {"r.yaml": "learning_rate: 1.0e999\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "learning_rate", "finite"),
    ),
    Case(
        "recipe-not-utf8",
        "train",
        {"r.yaml": b"# caf\xe9\nnum_train_epochs: 1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "line 1", "UTF-8"),
    ),
    Case(
        "recipe-alias-bomb",
        "train",
        {"r.yaml": BOMB},
        ["{dir}/r.yaml"],
        ("r.yaml", "alias bomb"),
        max_seconds=1,
    ),
    Case(
        "train-call-to-unoffered-tool",
        "train",
        {
            "d.jsonl": _dialogue_calling_unoffered_tool(),
            "r.yaml": "model_name_or_path: tiny://llama\ndataset_path: {dir}/d.jsonl\noutput_dir: {dir}/sft\nreport_to: none\n",
        },
        ["{dir}/r.yaml"],
        ("d.jsonl", "tool_calls", "launch_rocket", "candidate_tools"),
    ),
    Case(
        "recipe-unknown-key",
        "train",
        {"r.yaml": "learning_rat: 2.0e-4\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "unknown key 'learning_rat'"),
    ),
    Case(
        "recipe-no-dataset",
        "train",
        {"r.yaml": "output_dir: {dir}/sft\nreport_to: none\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "not set"),
    ),
    Case(
        "recipe-dataset-missing",
        "train",
        {"r.yaml": _recipe("{dir}/nope.jsonl")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "nope.jsonl", "not found"),
    ),
    Case(
        "train-dialogues-not-utf8",
        "train",
        {"d.jsonl": b'{"id": "\xff"}\n', "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "line 1", "UTF-8"),
    ),
    Case(
        "recipe-yaml-syntax",
        "train",
        {"r.yaml": "num_train_epochs: [1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml:2",),
    ),
    Case(
        "recipe-not-a-mapping",
        "train",
        {"r.yaml": "- 1\n- 2\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "mapping"),
    ),
    Case(
        "recipe-lora-r-not-a-number",
        "train",
        {"r.yaml": "lora_r: many\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_r", "'many'"),
    ),
    Case(
        "recipe-max-steps-0",
        "train",
        {"r.yaml": "max_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "max_steps"),
    ),
    Case(
        "recipe-prompt-mode-unknown",
        "train",
        {"r.yaml": "prompt_mode: sideways\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "prompt_mode", "'sideways'"),
    ),
    Case("recipe-missing", "train", {}, ["{dir}/nope.yaml"], ("nope.yaml", "not found")),
    Case(
        "recipe-unknown-override",
        "train",
        {"r.yaml": _recipe(str(SMALL))},
        ["{dir}/r.yaml", "--bogus_flag", "1"],
        ("--bogus_flag", "not a recipe key"),
    ),
    Case(
        "train-dialogues-bad-json",
        "train",
        {"d.jsonl": "not json\n", "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "line 1", "invalid JSON"),
    ),
    Case(
        "train-dialogues-empty",
        "train",
        {"d.jsonl": "", "r.yaml": _recipe("{dir}/d.jsonl")},
        ["{dir}/r.yaml"],
        ("d.jsonl", "no records"),
    ),
    Case(
        "train-model-path-missing",
        "train",
        {"r.yaml": _recipe(str(SMALL)).replace("tiny://llama", "{dir}/nomodel")},
        ["{dir}/r.yaml"],
        ("model_name_or_path", "nomodel", "no such folder"),
    ),
    # --- python -m train.launch (accelerate launch with the recipe checked first): no process starts
    Case(
        "launch-recipe-epochs-negative",
        "launch",
        {"r.yaml": "num_train_epochs: -3\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "num_train_epochs", "greater than 0"),
    ),
    Case(
        "launch-override-not-a-number",
        "launch",
        {"r.yaml": _recipe(str(SMALL))},
        [*LAUNCH, "{dir}/r.yaml", "--learning_rate", "fast"],
        ("r.yaml", "learning_rate", "fast"),
    ),
    Case(
        "launch-dataset-missing",
        "launch",
        {"r.yaml": _recipe("{dir}/nope.jsonl")},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "nope.jsonl", "not found"),
    ),
    Case(
        "launch-prefix-shared-flash",
        "launch",
        {"r.yaml": _recipe(str(SMALL)) + "slicing: prefix_shared\nattn_implementation: flash_attention_2\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "prefix_shared", "attn_implementation"),
    ),
]


def _main(command: str) -> Callable[[list[str]], int]:
    if command == "data_gen":
        from data_gen.cli import main
    elif command == "eval":
        from eval.cli import main
    elif command == "launch":
        from train.launch import main
    else:
        from train.sft import main
    return main


def _snapshot(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    for name, content in case.files.items():
        target = tmp_path / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content.replace("{dir}", str(tmp_path)), encoding="utf-8")
    before = _snapshot(tmp_path)
    argv = [a.replace("{dir}", str(tmp_path)) for a in case.argv if a != "--encoder-free"]
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
    left = _snapshot(tmp_path) - before
    assert not any(p.endswith(".tmp") for p in left), left
    assert not any(
        p.endswith(("dialogues.jsonl", "transcripts.jsonl", "adapter_model.safetensors")) for p in left
    ), left


@pytest.mark.parametrize(
    ("where", "files", "needles"),
    [
        # caught by the launcher before any process starts
        ("launcher", {"r.yaml": "num_train_epochs: -3\n"}, ("r.yaml", "num_train_epochs")),
        # caught by train/sft.py in the process accelerate started: its exit code comes through
        (
            "script",
            {"d.jsonl": _dialogue_calling_unoffered_tool(), "r.yaml": _recipe("{dir}/d.jsonl")},
            ("d.jsonl", "launch_rocket", "candidate_tools"),
        ),
    ],
)
def test_sft_error_under_accelerate_launch_is_one_line(
    tmp_path: Path, where: str, files: dict[str, str], needles: tuple[str, ...]
) -> None:
    """The real launcher in a subprocess: exit 2, one line, no accelerate traceback. (Plain
    `accelerate launch` raises its own CalledProcessError whatever the script exits with.)"""
    for name, content in files.items():
        (tmp_path / name).write_text(content.replace("{dir}", str(tmp_path)), encoding="utf-8")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",  # as `make demo` sets it: accelerate warns about defaults otherwise
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DIAFORGE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "train.launch", *LAUNCH, str(tmp_path / "r.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[diaforge]")]
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    # no output folder, nothing half-written
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(files)
