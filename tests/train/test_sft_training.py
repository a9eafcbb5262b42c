"""End to end on the tiny model through the real command line (`accelerate launch`, recipe checked
first):

    python -m diaforge.train.launch --config_file accelerate_configs/cpu.yaml train/sft.py recipes/tiny/sft.yaml

the loss falls, the adapter reloads on its base, merging gives the same greedy output, a killed
run resumes from its last checkpoint, and W&B runs offline into the output folder."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _repo import ROOT, clean_env
from _train_support import DIALOGUES


def launch_command(output_dir: Path, *overrides: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "diaforge.train.launch",
        "--config_file",
        "accelerate_configs/cpu.yaml",
        "--num_cpu_threads_per_process",
        "1",  # a model this small runs fastest on one thread, and far slower on a busy machine with two
        "train/sft.py",
        "recipes/tiny/sft.yaml",
        "--output_dir",
        str(output_dir),
        *overrides,
    ]


def run(output_dir: Path, *overrides: str, env: dict[str, str] | None = None, launcher: bool = True) -> str:
    """Train through `python -m diaforge.train.launch` (or, with launcher=False, `python train/sft.py`: the same
    script without the launcher's own start-up)."""
    command = launch_command(output_dir, *overrides)
    if not launcher:
        command = [sys.executable, *command[command.index("train/sft.py") :]]
    proc = subprocess.run(
        command,
        cwd=ROOT,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def greedy(model, tokenizer, prompts, n=12):
    import torch

    outs = []
    with torch.no_grad():
        for text in prompts:
            ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
            out = model.generate(
                **ids, max_new_tokens=n, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
            outs.append(out[0, ids["input_ids"].shape[1] :].tolist())
    return outs


def last_logits(model, tokenizer, text):
    import torch

    with torch.no_grad():
        ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
        return model(**ids).logits[0, -1]


def test_train_reload_and_merge(tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from diaforge.schema import load_dialogues
    from diaforge.train.config import device_defaults, parse_recipe
    from diaforge.train.slicing import TurnSlicer

    out = tmp_path / "run"
    run(out, "--max_steps", "24", "--logging_steps", "2", "--save_strategy", "no")

    # The loss falls.
    state = json.loads((out / "trainer_state.json").read_text())
    losses = [h["loss"] for h in state["log_history"] if "loss" in h]
    assert state["global_step"] == 24 and len(losses) >= 10
    assert statistics.fmean(losses[-3:]) < statistics.fmean(losses[:3]) - 0.2, losses

    # What was saved: adapter, tokenizer with chat template, resolved recipe, data fingerprint.
    for name in (
        "adapter_config.json",
        "adapter_model.safetensors",
        "tokenizer.json",
        "chat_template.jinja",
        "recipe_resolved.yaml",
        "data_fingerprint.json",
    ):
        assert (out / name).is_file(), name
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())
    assert fingerprint["dataset_files"][0]["sha256"] == hashlib.sha256(DIALOGUES.read_bytes()).hexdigest()
    assert fingerprint["samples"] == 19 and fingerprint["slicing"]["history_reasoning"] == "strip"
    assert len(fingerprint["fingerprint"]) == 64 and len(fingerprint["samples_sha256"]) == 64
    resolved = parse_recipe([str(out / "recipe_resolved.yaml")], device_defaults=device_defaults(False))
    assert resolved[1].max_steps == 24 and resolved[2].model_name_or_path == str(out / "tiny-base")

    # The adapter reloads on its recorded base and changes the model.
    base_path = json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert base_path == str(out / "tiny-base")
    tokenizer = AutoTokenizer.from_pretrained(out)
    assert tokenizer.response_template["fields"]["tool_calls"]["transform_each"]  # stock engines parse it
    dialogue = load_dialogues(DIALOGUES)[1]
    slicer = TurnSlicer(tokenizer)
    prompts = [
        tokenizer.apply_chat_template(
            slicer.prompt_messages(dialogue, i), tokenize=False, add_generation_prompt=True
        )
        for i in dialogue.assistant_turns()[:2]
    ]
    base = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32).eval()
    base_logits = last_logits(base, tokenizer, prompts[0])
    adapted = PeftModel.from_pretrained(base, str(out)).eval()
    adapted_logits = last_logits(adapted, tokenizer, prompts[0])
    assert not torch.allclose(base_logits, adapted_logits, atol=1e-3)
    adapted_out = greedy(adapted, tokenizer, prompts)

    # Merging gives the same model.
    merged_dir = tmp_path / "merged"
    proc = subprocess.run(
        [sys.executable, "train/merge.py", "--adapter", str(out), "--output", str(merged_dir)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (merged_dir / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(merged_dir, dtype=torch.float32).eval()
    merged_tokenizer = AutoTokenizer.from_pretrained(merged_dir)
    assert merged_tokenizer.chat_template == tokenizer.chat_template
    assert merged_tokenizer.response_template == tokenizer.response_template
    assert torch.allclose(last_logits(merged, tokenizer, prompts[0]), adapted_logits, atol=1e-4)
    assert greedy(merged, tokenizer, prompts) == adapted_out


def complete_checkpoints(out: Path) -> list[Path]:
    found = [p for p in out.glob("checkpoint-*") if (p / "trainer_state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def test_killed_run_resumes_from_its_last_checkpoint(tmp_path):
    out = tmp_path / "run"
    overrides = ("--max_steps", "60", "--save_steps", "5", "--save_total_limit", "3", "--logging_steps", "5")
    log = (tmp_path / "first.log").open("w")
    proc = subprocess.Popen(
        launch_command(out, *overrides),
        cwd=ROOT,
        env=clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the kill reaches the training process too
    )
    try:
        deadline = time.monotonic() + 300
        while not complete_checkpoints(out):
            assert proc.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 300 s"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    resumable = complete_checkpoints(out)[-1]
    step = json.loads((resumable / "trainer_state.json").read_text())["global_step"]
    assert 5 <= step < 60
    assert not (out / "adapter_model.safetensors").exists()  # it never finished

    output = run(out, *overrides)
    assert f"resuming from checkpoint {resumable}" in output
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == 60
    assert (out / "adapter_model.safetensors").is_file()


@pytest.mark.filterwarnings("ignore")
def test_wandb_runs_offline_into_the_output_folder(tmp_path):
    out = tmp_path / "run"
    home = tmp_path / "home"  # no ~/.netrc, no API key: offline
    home.mkdir()
    overrides = ("--report_to", "wandb", "--max_steps", "2", "--save_strategy", "no", "--logging_steps", "1")
    proc = subprocess.run(
        launch_command(out, *overrides),
        cwd=ROOT,
        env=clean_env(HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "wandb runs offline" in proc.stderr
    runs = list(out.rglob("offline-run-*"))
    assert runs, sorted(str(p.relative_to(out)) for p in out.rglob("*"))[:50]
    # Results alone on stdout: one line, no colour codes; the loss logs, the trainer's metrics and
    # wandb's footer are on stderr.
    assert proc.stdout.splitlines() == [proc.stdout.strip()]
    assert proc.stdout.startswith(f"trained {out.resolve()}: global step 2, train loss ")
    assert "\x1b[" not in proc.stdout and "\x1b[" not in proc.stderr
    assert "'loss':" in proc.stderr and "wandb sync" in proc.stderr
