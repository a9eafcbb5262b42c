"""`python -m diaforge.train.preview`, the tiny model builder, model path checks and merge errors."""

from __future__ import annotations

import filecmp
import subprocess
import sys

import pytest
from _repo import ROOT

TINY = str(ROOT / "recipes" / "tiny" / "sft.yaml")


def test_inspect_prints_samples_with_the_trained_span_marked(tmp_path, capsys):
    from diaforge.train.preview import main

    code = main(
        [TINY, "--num", "2", "--no-color", "--output_dir", str(tmp_path / "o"), "--history_reasoning", "keep"]
    )
    out = capsys.readouterr().out
    assert code == 0
    headers = [line for line in out.splitlines() if line.startswith("=== dialogue")]
    assert len(headers) == 2
    assert headers[0].startswith("=== dialogue fx-001 turn 1: ") and "prompt +" in headers[0]
    # The trained span: the first target, its thought included, ends with the end-of-turn token.
    first = out.split(headers[1])[0]
    span = first[first.index(">>>") + 3 : first.index("<<<")]
    assert span.startswith("<think>\nSeveral tools act on training requests") and span.endswith("<|im_end|>")
    assert first[: first.index(">>>")].rstrip().endswith("<|im_start|>assistant")
    assert "19 samples from 6 dialogues" in out
    assert "'history_reasoning': 'keep'" in out


def test_inspect_one_dialogue_and_errors(tmp_path, capsys):
    from diaforge.train.preview import main

    assert main([TINY, "--dialogue", "fx-004", "--num", "9", "--output_dir", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert out.count("=== dialogue fx-004") == 2 and "fx-001" not in out.split("tokenizer:")[0]
    assert (
        main([TINY, "--num", "1", "--prompt-chars", "40", "--no-color", "--output_dir", str(tmp_path / "o")])
        == 0
    )
    out = capsys.readouterr().out
    assert "characters ...]" in out and "Available tools" not in out
    assert main([TINY, "--dialogue", "nope", "--output_dir", str(tmp_path / "o")]) == 2
    assert "no samples of dialogue 'nope'" in capsys.readouterr().err
    assert main([TINY, "--nonsense_key", "1"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown option '--nonsense_key' (not a recipe key)"


def test_inspect_as_a_module(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "diaforge.train.preview",
            TINY,
            "--num",
            "1",
            "--output_dir",
            str(tmp_path / "o"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("=== dialogue") == 1 and ">>><think>" in proc.stdout


def test_tiny_model_is_deterministic_and_loads(tmp_path, dialogues):
    from transformers import AutoModelForCausalLM

    from diaforge.train.modeling import build_tiny_model, load_tokenizer, resolve_model_path
    from diaforge.train.slicing import dialogue_texts

    texts = dialogue_texts(dialogues)
    a = build_tiny_model(tmp_path / "a", texts=texts, seed=3)
    b = build_tiny_model(tmp_path / "b", texts=texts, seed=3)
    for name in ("model.safetensors", "tokenizer.json", "config.json", "chat_template.jinja"):
        assert filecmp.cmp(a / name, b / name, shallow=False), name
    tok = load_tokenizer(str(a))
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|pad|>"
    text = "<|im_start|>user\nDie Rechnung von Müller GmbH – 4,80 €<|im_end|>\n"
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text  # byte-level: exact
    model = AutoModelForCausalLM.from_pretrained(a)
    assert model.config.num_hidden_layers == 2 and model.config.hidden_size == 64
    # tiny://llama resolves into <output_dir>/tiny-base and is reused afterwards.
    path = resolve_model_path("tiny://llama", output_dir=tmp_path / "run", texts=texts, seed=3)
    assert path == str((tmp_path / "run" / "tiny-base").resolve())
    stamp = (tmp_path / "run" / "tiny-base" / "model.safetensors").stat().st_mtime_ns
    assert resolve_model_path("tiny://llama", output_dir=tmp_path / "run", texts=[], seed=9) == path
    assert (tmp_path / "run" / "tiny-base" / "model.safetensors").stat().st_mtime_ns == stamp


def test_model_path_checks(tmp_path, monkeypatch):
    from diaforge.train.modeling import ModelPathError, check_model_path, looks_like_hub_id

    assert looks_like_hub_id("meta-llama/Llama-3.2-3B-Instruct")
    assert looks_like_hub_id("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    for name in (
        "outputs/models/SmolLM2-135M-Instruct",
        "./model",
        "/abs/model",
        "gpt2",
        "a/b.yaml",
        "../x/y",
    ):
        assert not looks_like_hub_id(name), name
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelPathError, match="folder has no config.json"):
        check_model_path(str(empty))
    (tmp_path / "file.bin").write_text("x")
    with pytest.raises(ModelPathError, match="is a file"):
        check_model_path(str(tmp_path / "file.bin"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelPathError, match="HF_HUB_OFFLINE=1"):
        check_model_path("meta-llama/Llama-3.2-3B-Instruct-not-cached")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert check_model_path("meta-llama/Llama-3.2-3B-Instruct") == "meta-llama/Llama-3.2-3B-Instruct"


def test_quantised_loading_needs_a_gpu():
    from diaforge.train.config import device_defaults, parse_recipe
    from diaforge.train.modeling import ModelPathError, model_init_kwargs

    _, training, model, _ = parse_recipe(
        [TINY, "--load_in_8bit", "true"], device_defaults=device_defaults(False)
    )
    with pytest.raises(ModelPathError, match="need a CUDA GPU"):
        model_init_kwargs(model, training, on_gpu=False)


def test_merge_errors_are_one_line(tmp_path, capsys):
    from diaforge.train.merge import main

    assert main(["--adapter", str(tmp_path), "--output", str(tmp_path / "m")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {tmp_path}: no adapter_config.json (not a LoRA adapter folder)"
    )
    (tmp_path / "adapter_config.json").write_text('{"base_model_name_or_path": "outputs/models/gone"}')
    assert main(["--adapter", str(tmp_path), "--output", str(tmp_path / "m")]) == 2
    assert "model_name_or_path 'outputs/models/gone': no such folder" in capsys.readouterr().err


def test_resume_picks_the_last_complete_checkpoint(tmp_path, caplog):
    from types import SimpleNamespace

    from diaforge.train.tracking import resume_checkpoint

    out = tmp_path / "run"
    for step, complete in ((5, True), (10, True), (15, False)):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        if complete:
            (folder / "trainer_state.json").write_text("{}")
    training = SimpleNamespace(resume_from_checkpoint=None)

    def args(**kw):
        return SimpleNamespace(**{"resume": True, "overwrite_output_dir": False, **kw})

    assert resume_checkpoint(args(), training, out, main_process=True) == str(out / "checkpoint-10")
    assert "skipping incomplete checkpoint" in caplog.text  # checkpoint-15 was cut short
    assert resume_checkpoint(args(resume=False), training, out, main_process=True) is None
    explicit = SimpleNamespace(resume_from_checkpoint=str(out / "checkpoint-5"))
    assert resume_checkpoint(args(), explicit, out, main_process=True) == str(out / "checkpoint-5")
    assert resume_checkpoint(args(overwrite_output_dir=True), training, out, main_process=True) is None
    assert not list(out.glob("checkpoint-*"))
    assert resume_checkpoint(args(), training, tmp_path / "missing", main_process=True) is None
