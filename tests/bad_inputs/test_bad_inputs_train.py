"""Bad inputs at the training doors (`train/sft.py` and `python -m diaforge.train.launch`, which checks the
recipe before accelerate starts a process; `python -m diaforge.train.preview` and `python -m
diaforge.train.merge`), as the table in `_bad_inputs.py` checks them; then the same refusals through
the real launcher and plain `accelerate launch` in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _bad_inputs import (
    BOMB,
    DIALOGUES_FIX,
    LAUNCH,
    NO_OUTPUT,
    SMALL,
    Case,
    Fix,
    attach_fixes,
    case_ids,
    check_bad_input,
)
from _repo import ROOT


def _dialogue_calling_unoffered_tool() -> str:
    record = json.loads(SMALL.read_text(encoding="utf-8").splitlines()[0])
    for turn in record["turns"]:
        for call in turn.get("tool_calls") or []:
            call["name"] = "launch_rocket"
    return json.dumps(record) + "\n"


def _recipe(dataset: str, extra: str = "") -> str:
    return (
        f"model_name_or_path: tiny://llama\ndataset_path: {dataset}\noutput_dir: {{dir}}/sft\n"
        f"report_to: none\n{extra}"
    )


RECIPE_OK = _recipe(str(SMALL))
ADAPTER = json.dumps({"base_model_name_or_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "peft_type": "LORA"})

CASES = [
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
    # --- python -m diaforge.train.launch (accelerate launch with the recipe checked first): no process starts
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
    # --- train/sft.py: recipes
    Case(
        "recipe-duplicate-key",
        "train",
        {"r.yaml": RECIPE_OK + "learning_rate: 1.0e-3\nlearning_rate: 2.0e-3\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "line 6", "'learning_rate'", "duplicate key", "line 5"),
        fix=Fix({"r.yaml": RECIPE_OK + "learning_rate: 2.0e-3\n"}),
    ),
    Case(
        "recipe-lora-target-modules-42",
        "train",
        {"r.yaml": RECIPE_OK + "lora_target_modules: 42\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_target_modules", "got 42"),
        fix=Fix({"r.yaml": RECIPE_OK + "lora_target_modules: all-linear\n"}),
    ),
    Case(
        "recipe-lora-modules-to-save-number",
        "train",
        {"r.yaml": RECIPE_OK + "lora_modules_to_save: [1]\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "lora_modules_to_save"),
        fix=Fix({"r.yaml": RECIPE_OK + "lora_modules_to_save: [lm_head]\n"}),
    ),
    Case(
        "recipe-save-steps-0",
        "train",
        {"r.yaml": RECIPE_OK + "save_strategy: steps\nsave_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "save_steps", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "save_strategy: steps\nsave_steps: 10\n"}),
    ),
    Case(
        "recipe-eval-steps-0",
        "train",
        {"r.yaml": RECIPE_OK + "eval_steps: 0\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "eval_steps", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "eval_steps: 10\n"}),
    ),
    Case(
        "recipe-max-length-negative",
        "train",
        {"r.yaml": RECIPE_OK + "max_length: -5\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "max_length", "greater than 0"),
        fix=Fix({"r.yaml": RECIPE_OK + "max_length: 2048\n"}),
    ),
    Case(
        "recipe-logging-steps-negative",
        "train",
        {"r.yaml": RECIPE_OK + "logging_steps: -1\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "logging_steps", "0 or more"),
        fix=Fix({"r.yaml": RECIPE_OK + "logging_steps: 5\n"}),
    ),
    Case(
        "recipe-system-prompt-not-utf8",
        "train",
        {"s.txt": b"caf\xe9", "r.yaml": RECIPE_OK + "system_prompt_file: {dir}/s.txt\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "system_prompt_file", "s.txt", "not UTF-8"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "recipe-system-prompt-missing",
        "train",
        {"r.yaml": RECIPE_OK + "system_prompt_file: {dir}/s.txt\n"},
        ["{dir}/r.yaml"],
        ("r.yaml", "system_prompt_file", "s.txt", "not found"),
        fix=Fix({"s.txt": "You pick tools.\n"}),
    ),
    Case(
        "recipe-dataset-is-a-folder",
        "train",
        {"r.yaml": _recipe("{dir}")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "is a folder", "dialogues.jsonl"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-dataset-is-dev-zero",
        "train",
        {"r.yaml": _recipe("/dev/zero")},
        ["{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "/dev/zero", "not a regular file"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-is-dev-zero",
        "train",
        {},
        ["/dev/zero"],
        ("/dev/zero", "not a regular file"),
        max_seconds=5,
        fix=Fix({"r.yaml": RECIPE_OK}, argv=["{dir}/r.yaml"]),
    ),
    Case(
        "recipe-output-dir-under-proc",
        "train",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", "/proc/diaforge/sft")},
        ["{dir}/r.yaml"],
        ("r.yaml", "/proc/diaforge/sft", "'output_dir'", "cannot create"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-below-a-file",
        "train",
        {"f": "x", "r.yaml": RECIPE_OK.replace("{dir}/sft", "{dir}/f/sft")},
        ["{dir}/r.yaml"],
        ("r.yaml", "f/sft", "'output_dir'", "is a file"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-is-a-file",
        "train",
        {"f": "x", "r.yaml": RECIPE_OK.replace("{dir}/sft", "{dir}/f")},
        ["{dir}/r.yaml"],
        ("r.yaml", "'output_dir'", "not a folder"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-model-is-an-adapter",
        "train",
        {"ad/adapter_config.json": ADAPTER, "r.yaml": RECIPE_OK.replace("tiny://llama", "{dir}/ad")},
        ["{dir}/r.yaml"],
        (
            "r.yaml",
            "model_name_or_path",
            "LoRA adapter",
            "HuggingFaceTB/SmolLM2-135M-Instruct",
            "diaforge.train.merge",
        ),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-override-duplicate-of-a-bad-value",
        "train",
        {"r.yaml": RECIPE_OK},
        ["{dir}/r.yaml", "--max_length", "0"],
        ("r.yaml", "max_length", "greater than 0"),
        fix=Fix(argv=["{dir}/r.yaml", "--max_length", "1024"]),
    ),
    # --- python -m diaforge.train.launch (diaforge train)
    Case(
        "launch-config-file-missing",
        "launch",
        {"r.yaml": RECIPE_OK},
        ["--config_file", "{dir}/nope.yaml", "train/sft.py", "{dir}/r.yaml"],
        ("--config_file", "nope.yaml", "the bundled ones", "cpu"),
        fix=Fix(argv=["--config_file", "cpu", "train/sft.py", "{dir}/r.yaml"]),
    ),
    Case(
        "launch-recipe-duplicate-key",
        "launch",
        {"r.yaml": RECIPE_OK + "seed: 1\nseed: 2\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "'seed'", "duplicate key"),
        fix=Fix({"r.yaml": RECIPE_OK + "seed: 2\n"}),
    ),
    Case(
        "launch-output-dir-under-proc",
        "launch",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", "/proc/diaforge/sft")},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "'output_dir'", "cannot create"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "launch-lora-target-modules-42",
        "launch",
        {"r.yaml": RECIPE_OK + "lora_target_modules: 42\n"},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "lora_target_modules"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "launch-recipe-only-dataset-folder",
        "launch",
        {"r.yaml": _recipe("{dir}")},
        ["--config_file", "cpu", "{dir}/r.yaml"],
        ("r.yaml", "dataset_path", "is a folder"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    # --- every training door: an empty or blank output_dir (or merge's --output) names no folder
    Case(
        "recipe-output-dir-empty",
        "train",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", '""')},
        ["{dir}/r.yaml"],
        ("r.yaml", "output_dir", NO_OUTPUT, "''"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-blank",
        "train",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", '"   "')},
        ["{dir}/r.yaml"],
        ("r.yaml", "output_dir", NO_OUTPUT, "white space"),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "recipe-output-dir-override-empty",
        "train",
        {"r.yaml": RECIPE_OK},
        ["{dir}/r.yaml", "--output_dir", ""],
        ("r.yaml", "output_dir", NO_OUTPUT),
        fix=Fix(argv=["{dir}/r.yaml", "--output_dir", "{dir}/sft"]),
    ),
    Case(
        "launch-output-dir-empty",
        "launch",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", '""')},
        [*LAUNCH, "{dir}/r.yaml"],
        ("r.yaml", "output_dir", NO_OUTPUT),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "launch-output-dir-override-blank",
        "launch",
        {"r.yaml": RECIPE_OK},
        [*LAUNCH, "{dir}/r.yaml", "--output_dir", "  "],
        ("r.yaml", "output_dir", NO_OUTPUT),
        fix=Fix(argv=[*LAUNCH, "{dir}/r.yaml"]),
    ),
    # --- python -m diaforge.train.preview (diaforge preview): its rerun prints one sample
    Case(
        "preview-output-dir-empty",
        "preview",
        {"r.yaml": RECIPE_OK.replace("{dir}/sft", '""')},
        ["{dir}/r.yaml", "--num", "1"],
        ("r.yaml", "output_dir", NO_OUTPUT),
        fix=Fix({"r.yaml": RECIPE_OK}),
    ),
    Case(
        "preview-output-dir-override-blank",
        "preview",
        {"r.yaml": RECIPE_OK},
        ["{dir}/r.yaml", "--num", "1", "--output_dir", " "],
        ("r.yaml", "output_dir", NO_OUTPUT),
        fix=Fix(argv=["{dir}/r.yaml", "--num", "1"]),
    ),
    # --- python -m diaforge.train.merge (diaforge merge): the rerun parses the command line only
    Case(
        "merge-output-empty",
        "merge",
        {},
        ["--adapter", "{dir}/ad", "--output", ""],
        ("argument --output", NO_OUTPUT),
        fix=Fix(argv=["--adapter", "{dir}/ad", "--output", "{dir}/merged"]),
    ),
    Case(
        "merge-output-blank",
        "merge",
        {},
        ["--adapter", "{dir}/ad", "--output", "   "],
        ("argument --output", NO_OUTPUT),
        fix=Fix(argv=["--adapter", "{dir}/ad", "--output", "{dir}/merged"]),
    ),
]

FIXES: dict[str, Fix] = {
    "recipe-epochs-negative": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "recipe-lr-inf": Fix({"r.yaml": RECIPE_OK + "learning_rate: 1.0e-4\n"}),
    "recipe-not-utf8": Fix({"r.yaml": RECIPE_OK}),
    "recipe-alias-bomb": Fix({"r.yaml": RECIPE_OK}),
    "train-call-to-unoffered-tool": DIALOGUES_FIX,
    "recipe-unknown-key": Fix({"r.yaml": RECIPE_OK + "learning_rate: 2.0e-4\n"}),
    "recipe-no-dataset": Fix({"r.yaml": RECIPE_OK}),
    "recipe-dataset-missing": Fix({"nope.jsonl": SMALL.read_text(encoding="utf-8")}),
    "train-dialogues-not-utf8": DIALOGUES_FIX,
    "recipe-yaml-syntax": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "recipe-not-a-mapping": Fix({"r.yaml": RECIPE_OK}),
    "recipe-lora-r-not-a-number": Fix({"r.yaml": RECIPE_OK + "lora_r: 8\n"}),
    "recipe-max-steps-0": Fix({"r.yaml": RECIPE_OK + "max_steps: 1\n"}),
    "recipe-prompt-mode-unknown": Fix({"r.yaml": RECIPE_OK + "prompt_mode: native\n"}),
    "recipe-missing": Fix({"nope.yaml": RECIPE_OK}),
    "recipe-unknown-override": Fix(argv=["{dir}/r.yaml", "--learning_rate", "1e-4"]),
    "train-dialogues-bad-json": DIALOGUES_FIX,
    "train-dialogues-empty": DIALOGUES_FIX,
    "train-model-path-missing": Fix({"r.yaml": RECIPE_OK}),
    "launch-recipe-epochs-negative": Fix({"r.yaml": RECIPE_OK + "num_train_epochs: 1\n"}),
    "launch-override-not-a-number": Fix(argv=[*LAUNCH, "{dir}/r.yaml", "--learning_rate", "1e-4"]),
    "launch-dataset-missing": Fix({"nope.jsonl": SMALL.read_text(encoding="utf-8")}),
    "launch-prefix-shared-flash": Fix(
        {"r.yaml": RECIPE_OK + "slicing: prefix_shared\nattn_implementation: sdpa\n"}
    ),
}
attach_fixes(CASES, FIXES)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_bad_input(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    check_bad_input(case, tmp_path, capsys, monkeypatch)


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
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",  # as `make demo` sets it: accelerate warns about defaults otherwise
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DIAFORGE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "diaforge.train.launch", *LAUNCH, str(tmp_path / "r.yaml")],
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


def test_plain_accelerate_launch_prints_our_line_first(tmp_path: Path) -> None:
    """The README's plain `accelerate launch ... train/sft.py BAD.yaml`: accelerate adds its own
    traceback after the script fails (whatever the script exits with), but the first line is ours.
    `diaforge train` (python -m diaforge.train.launch) prints that line alone: the test above."""
    (tmp_path / "r.yaml").write_text("num_train_epochs: -3\n", encoding="utf-8")
    env = {**os.environ, "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    env.pop("DIAFORGE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "accelerate.commands.launch", *LAUNCH, str(tmp_path / "r.yaml")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0
    assert lines and lines[0].startswith("error: ") and "num_train_epochs" in lines[0], proc.stderr[-2000:]
