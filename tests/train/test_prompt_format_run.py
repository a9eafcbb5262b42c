"""One prompt format from training to evaluation, on one tiny training run:

    python train/sft.py recipes/tiny/sft.yaml --tool_style compact --target_reasoning drop \
        --system_prompt_file FILE --slicing prefix_shared --report_to wandb ...

* `prompt_format.json` lies beside the adapter, in every checkpoint and in the merged model;
* `eval run` on the adapter, on a checkpoint and on the merged model, with no format option,
  feeds the model exactly the token ids training put before the first target;
* an option that contradicts the file wins with a one-line warning naming both values;
* the offline W&B run holds the options in its config and the run files as an artifact;
* W&B lineage: the training run is in the recipe's project, logs the adapter as a ``model``
  artifact, and an offline eval run of the adapter, a checkpoint or the merged model names that
  training run, its group and the data fingerprint.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import ROOT, clean_env
from _train_support import DIALOGUES

SYSTEM = "You are the ACME assistant. Think, then ask or call.\nTools:\n{tools}\n"
OPTIONS = ("prompt_mode", "target_reasoning", "history_reasoning", "tool_style", "slicing", "dataset_path")


def _env(home: Path) -> dict[str, str]:
    # no ~/.netrc and no API key: W&B runs offline into the output folder
    return clean_env(HOME=str(home))


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(adapter folder, merged folder) of a two-step run with a compact tool listing, no thoughts
    in the targets, a custom system prompt and prefix-shared rows."""
    work = tmp_path_factory.mktemp("format-run")
    (work / "home").mkdir()
    (work / "system.txt").write_text(SYSTEM, encoding="utf-8")
    out = work / "run"
    command = [
        sys.executable,
        "train/sft.py",
        "recipes/tiny/sft.yaml",
        "--output_dir",
        str(out),
        "--tool_style",
        "compact",
        "--target_reasoning",
        "drop",
        "--system_prompt_file",
        str(work / "system.txt"),
        "--slicing",
        "prefix_shared",
        "--max_steps",
        "2",
        "--save_strategy",
        "steps",
        "--save_steps",
        "1",
        "--logging_steps",
        "1",
        "--report_to",
        "wandb",
    ]
    env = _env(work / "home")
    proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    merged = work / "merged"
    proc = subprocess.run(
        [sys.executable, "train/merge.py", "--adapter", str(out), "--output", str(merged)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, merged


def test_the_format_travels_with_every_saved_model(trained):
    from diaforge.format import PromptFormat

    out, merged = trained
    recorded = PromptFormat.load(out)
    assert recorded == PromptFormat(
        tool_style="compact", target_reasoning="drop", system_prompt=SYSTEM.strip()
    )
    checkpoints = sorted(out.glob("checkpoint-*"))
    assert [p.name for p in checkpoints] == ["checkpoint-1", "checkpoint-2"]
    for folder in (*checkpoints, merged):
        assert PromptFormat.load(folder) == recorded, folder
    data = json.loads((out / "prompt_format.json").read_text())
    assert data["system_prompt"] == SYSTEM.strip() and len(data["system_prompt_sha256"]) == 64


def _training_prompt_ids(out: Path, dialogue, turn_index: int) -> list[int]:
    """The token ids training put before the target of `turn_index`, rebuilt from the run's
    resolved recipe exactly as train/sft.py slices."""
    from transformers import AutoTokenizer

    from diaforge.train.config import device_defaults, parse_recipe
    from diaforge.train.slicing import SliceConfig, TurnSlicer

    args, training_args, _, _ = parse_recipe(
        [str(out / "recipe_resolved.yaml")], device_defaults=device_defaults(False)
    )
    tokenizer = AutoTokenizer.from_pretrained(out / "tiny-base")
    slicer = TurnSlicer(tokenizer, SliceConfig.from_args(args, max_length=training_args.max_length))
    sample = slicer.encode(dialogue, turn_index)
    return sample["input_ids"][: sample["num_prompt_tokens"]]


def _eval_prompt_ids(model: Path, out_dir: Path, bench: Path, monkeypatch, *extra: str) -> list[list[int]]:
    """`python -m diaforge.eval run --model MODEL` (what `make eval MODEL=...` runs) on one dialogue, static
    only, recording the token ids the hf backend gives the model."""
    from diaforge.eval.cli import main
    from diaforge.llm.hf_backend import HFBackend

    seen: list[list[int]] = []
    encode = HFBackend._encode

    def recording(self, messages, tools):
        ids = encode(self, messages, tools)
        seen.append(ids)
        return ids

    monkeypatch.setattr(HFBackend, "_encode", recording)
    argv = ["run", "--model", str(model), "--bench", str(bench), "--modes", "static"]
    argv += ["--max-new-tokens", "4", "--out", str(out_dir), "--quiet", *extra]
    assert main(argv) == 0
    return seen


@pytest.fixture
def bench(tmp_path):
    from diaforge.jsonl import write_jsonl
    from diaforge.schema import load_dialogues

    path = tmp_path / "bench.jsonl"
    write_jsonl(path, load_dialogues(DIALOGUES)[:1])
    return path


def test_eval_prompts_adapter_checkpoint_and_merged_model_with_the_training_tokens(
    trained, bench, tmp_path, monkeypatch, capsys
):
    from diaforge.schema import load_dialogues

    out, merged = trained
    dialogue = load_dialogues(bench)[0]
    first = dialogue.assistant_turns()[0]
    expected = _training_prompt_ids(out, dialogue, first)
    for model in (out, out / "checkpoint-2", merged):
        capsys.readouterr()
        seen = _eval_prompt_ids(model, tmp_path / model.name, bench, monkeypatch)
        assert seen[0] == expected, model
        assert "warning" not in capsys.readouterr().err
        fmt = json.loads((tmp_path / model.name / "metrics.json").read_text())["prompt_format"]
        assert fmt["source"] == "prompt_format.json" and fmt["file"] == str(model / "prompt_format.json")
        assert fmt["tool_style"] == "compact" and fmt["target_reasoning"] == "drop"
        assert fmt["overridden"] == {}


def test_an_option_that_contradicts_the_file_wins_with_a_warning(
    trained, bench, tmp_path, monkeypatch, capsys
):
    from diaforge.schema import load_dialogues

    out, _ = trained
    dialogue = load_dialogues(bench)[0]
    expected = _training_prompt_ids(out, dialogue, dialogue.assistant_turns()[0])
    capsys.readouterr()
    seen = _eval_prompt_ids(
        out, tmp_path / "json", bench, monkeypatch, "--tool-style", "json", "--prompt-mode", "prompt"
    )
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    # Only the option that differs warns (--prompt-mode prompt agrees with the file), on one line
    # naming both values and the file.
    assert warnings == [
        f"warning: --tool-style 'json' overrides tool_style 'compact' recorded in {out / 'prompt_format.json'}; "
        "the model is prompted differently from how it was trained"
    ]
    assert len(seen[0]) > len(expected)  # the JSON listing is longer than the compact one it trained on
    fmt = json.loads((tmp_path / "json" / "metrics.json").read_text())["prompt_format"]
    assert fmt["tool_style"] == "json" and fmt["overridden"] == {
        "tool_style": {"recorded": "compact", "given": "json"}
    }


def test_offline_wandb_run_has_the_options_and_the_run_files(trained):
    out, _ = trained
    from diaforge.wandb_offline import wait_for_offline_run

    (run_dir,) = out.glob("wandb/offline-run-*")
    run = wait_for_offline_run(run_dir)
    assert run["finished"]
    config = run["config"]
    assert {k: config[k] for k in OPTIONS} == {
        "prompt_mode": "prompt",
        "target_reasoning": "drop",
        "history_reasoning": "strip",
        "tool_style": "compact",
        "slicing": "prefix_shared",
        "dataset_path": ["tests/fixtures/dialogues_small.jsonl"],
    }
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())
    assert config["data_fingerprint"] == fingerprint["fingerprint"]
    run_files = [a for a in run["artifacts"] if a["type"] == "run-files"]
    assert len(run_files) == 1
    assert run_files[0]["files"] == ["data_fingerprint.json", "prompt_format.json", "recipe_resolved.yaml"]
    assert run_files[0]["metadata"]["data_fingerprint"] == fingerprint["fingerprint"]


def test_the_built_in_prompt_is_recorded_with_its_text():
    """Without `system_prompt_file` the recipe's format holds the reference prompt as a template
    (its text and hash go to prompt_format.json), and it renders exactly the messages the built-in
    prompt gives."""
    from diaforge.format import PromptFormat
    from diaforge.schema import Dialogue
    from diaforge.train.config import parse_recipe

    args = parse_recipe([str(ROOT / "recipes" / "tiny" / "sft.yaml")])[0]
    args.system_prompt_file = None
    fmt = args.prompt_format()
    assert "{tools}" in fmt.system_prompt and fmt.as_dict()["system_prompt_sha256"]
    built_in = PromptFormat(
        prompt_mode=fmt.prompt_mode, tool_style=fmt.tool_style, history_reasoning=fmt.history_reasoning,
        target_reasoning=fmt.target_reasoning,
    )  # fmt: skip
    lines = (ROOT / "tests" / "fixtures" / "dialogues_small.jsonl").read_text().splitlines()
    for line in lines[:3]:
        dialogue = Dialogue.model_validate_json(line)
        assert fmt.messages(dialogue) == built_in.messages(dialogue)


@pytest.fixture
def offline_wandb(tmp_path, monkeypatch):
    """No API key, no netrc: `eval run --wandb-project` runs offline into its run folder."""
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR", "WANDB_BASE_URL", "WANDB_RUN_GROUP"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CONFIG", "CACHE", "DATA"):
        monkeypatch.setenv(f"WANDB_{var}_DIR", str(tmp_path / f"wandb_{var.lower()}"))
    monkeypatch.setenv("WANDB_SILENT", "true")


@pytest.mark.filterwarnings("ignore")
def test_eval_names_the_training_run_the_data_and_the_adapter_artifact(
    trained, bench, tmp_path, offline_wandb
):
    from diaforge.eval.cli import main
    from diaforge.wandb_offline import wait_for_offline_run

    out, merged = trained
    (run_dir,) = out.glob("wandb/offline-run-*")
    training = wait_for_offline_run(run_dir)
    run_id = training["run"]["id"]
    assert training["run"]["project"] == "diaforge-tests" == training["config"]["project"]
    assert training["run"]["group"] == out.name
    fingerprint = json.loads((out / "data_fingerprint.json").read_text())["fingerprint"]
    (adapter,) = [a for a in training["artifacts"] if a["type"] == "model"]
    assert adapter["name"] == f"adapter-{run_id}"
    assert {"adapter_model.safetensors", "adapter_config.json", "data_fingerprint.json"} <= set(
        adapter["files"]
    )
    assert "prompt_format.json" in adapter["files"] and "training_run.json" not in adapter["files"]
    assert adapter["metadata"]["data_fingerprint"] == fingerprint and adapter["metadata"]["global_step"] == 2

    artifact_ref = f"diaforge-tests/adapter-{run_id}:latest"
    for model, ref in ((out, artifact_ref), (out / "checkpoint-2", None), (merged, artifact_ref)):
        run_out = tmp_path / model.name
        argv = ["run", "--model", str(model), "--bench", str(bench), "--modes", "static", "--quiet"]
        argv += ["--max-new-tokens", "4", "--out", str(run_out), "--wandb-project", "diaforge-tests"]
        assert main(argv) == 0
        recorded = json.loads((run_out / "metrics.json").read_text())["training"]
        assert recorded["data_fingerprint"] == fingerprint, model
        assert recorded["wandb_run"]["id"] == run_id and recorded["wandb_run"]["mode"] == "offline"
        evaluation = wait_for_offline_run(run_out / "wandb")
        assert evaluation["finished"] and evaluation["run"]["job_type"] == "eval"
        assert evaluation["run"]["group"] == out.name, model
        config = evaluation["config"]
        assert config["training_run_id"] == run_id and config["data_fingerprint"] == fingerprint
        assert config["training_run_path"] == f"diaforge-tests/{run_id}"
        assert config["model_artifact"] == ref, model
