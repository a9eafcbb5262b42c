"""The labels that reach the model inside TRL's SFTTrainer are the slicer's, unchanged, and the
one-line errors of train/sft.py."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _repo import ROOT
from _train_support import DIALOGUES

TINY = str(ROOT / "recipes" / "tiny" / "sft.yaml")


@pytest.fixture
def one_thread():
    """A tiny model trains fastest on one thread (and far slower with two on a busy machine)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_labels_reaching_the_model_are_the_slicers(tmp_path, monkeypatch, one_thread):
    from diaforge.train import sft
    from diaforge.train.loss_positions import TrainedPositionsLoss
    from diaforge.train.modeling import load_tokenizer
    from diaforge.train.slicing import SliceConfig, TurnSlicer

    seen = []
    original = TrainedPositionsLoss.compute_loss

    def recording_compute_loss(self, model, inputs, *args, **kwargs):
        seen.append({k: inputs[k].detach().clone() for k in ("input_ids", "labels", "attention_mask")})
        return original(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(TrainedPositionsLoss, "compute_loss", recording_compute_loss)
    out = tmp_path / "run"
    result = sft.run(
        [
            TINY,
            "--output_dir",
            str(out),
            "--max_steps",
            "3",
            "--per_device_train_batch_size",
            "3",  # padded batches
            "--save_strategy",
            "no",
            "--logging_steps",
            "1",
            "--history_reasoning",
            "keep",
        ]
    )
    assert result["global_step"] == 3 and len(seen) == 3

    from diaforge.schema import load_dialogues

    tokenizer = load_tokenizer(str(out / "tiny-base"))
    samples, _ = TurnSlicer(tokenizer, SliceConfig.of(history_reasoning="keep", max_length=2048)).slice_all(
        load_dialogues(DIALOGUES)
    )
    by_ids = {tuple(s["input_ids"]): s for s in samples}
    rows = 0
    for batch in seen:
        for ids, labels, mask in zip(
            batch["input_ids"], batch["labels"], batch["attention_mask"], strict=True
        ):
            n = int(mask.sum())
            sample = by_ids[tuple(ids[:n].tolist())]  # every row is one of our samples, in full
            assert labels[:n].tolist() == sample["labels"]
            assert (labels[n:] == -100).all()
            rows += 1
    assert rows == 9
    assert (out / "adapter_config.json").is_file()


def run_main(argv, capsys):
    from diaforge.train import sft

    code = sft.main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def test_unknown_key_is_one_line(tmp_path, capsys):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text((ROOT / "recipes/tiny/sft.yaml").read_text() + "foo: bar\n")
    code, err = run_main([str(recipe)], capsys)
    assert code == 2
    assert err == [f"error: {recipe}: unknown key 'foo'"]


def test_malformed_dataset_line_names_file_and_line(tmp_path, capsys):
    data = tmp_path / "dialogues.jsonl"
    lines = DIALOGUES.read_text().splitlines()
    lines[2] = lines[2].replace('"role": "user"', '"role": "customer"', 1)
    data.write_text("\n".join(lines) + "\n")
    code, err = run_main([TINY, "--dataset_path", str(data), "--output_dir", str(tmp_path / "o")], capsys)
    assert code == 2 and len(err) == 1
    assert err[0].startswith(f"error: {data}, line 3, field 'turns.0.role'")

    data.write_text(lines[0] + "\n{not json\n")
    code, err = run_main([TINY, "--dataset_path", str(data), "--output_dir", str(tmp_path / "o")], capsys)
    assert code == 2 and err == [
        f"error: {data}, line 2: invalid JSON (Expecting property name enclosed in double quotes at column 2)"
    ]


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("outputs/models/does-not-exist", "no such folder, and not a hub id (owner/name)"),
        ("nobody-here/not-a-cached-model", "not in the local Hugging Face cache and HF_HUB_OFFLINE=1"),
        ("tiny://gpt", "unknown tiny model"),
    ],
)
def test_bad_model_path_is_one_line(tmp_path, capsys, monkeypatch, model, message):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, err = run_main([TINY, "--model_name_or_path", model, "--output_dir", str(tmp_path / "o")], capsys)
    assert code == 2 and len(err) == 1
    assert err[0] == f"error: model_name_or_path '{model}': {message}" or (
        err[0].startswith(f"error: model_name_or_path '{model}'") and message in err[0]
    )


def test_script_errors_without_traceback(tmp_path):
    """The real command line: one line on stderr, exit code 2, no traceback (and the script
    finds the repository's packages when it runs from train/)."""
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text((ROOT / "recipes/tiny/sft.yaml").read_text() + "foo: 1\n")
    proc = subprocess.run(
        [sys.executable, "train/sft.py", str(recipe)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == f"error: {recipe}: unknown key 'foo'"
