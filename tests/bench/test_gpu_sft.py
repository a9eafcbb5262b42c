"""bench/gpu_sft.py on a CPU with the tiny shape: the GPU throughput script runs end to end and its
accounting of samples and tokens is right."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import FIXTURES

from diaforge.bench import gpu_sft
from diaforge.schema import load_dialogues
from diaforge.train.modeling import build_tiny_tokenizer
from diaforge.train.slicing import SliceConfig, TurnSlicer, dialogue_texts

FIXTURE = FIXTURES / "dialogues_small.jsonl"


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tok")
    build_tiny_tokenizer(dialogue_texts(load_dialogues(FIXTURE))).save_pretrained(path)
    return path


def _args(tokenizer_dir: Path, out: Path, *extra: str) -> list[str]:
    return [
        "--shape",
        "tiny",
        "--corpus",
        str(FIXTURE),
        "--tokenizer",
        str(tokenizer_dir),
        "--max-length",
        "2048",
        "--batch-size",
        "4",
        "--out",
        str(out),
        *extra,
    ]


@pytest.mark.slow(reason="trains a tiny model")
def test_a_whole_epoch_covers_every_sample_once_in_both_modes(tokenizer_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = gpu_sft.run(_args(tokenizer_dir, out, "--steps", "1000", "--warmup", "0"))
    assert json.loads(out.read_text()) == json.loads(json.dumps(result))

    from transformers import AutoTokenizer

    samples, _ = TurnSlicer(
        AutoTokenizer.from_pretrained(tokenizer_dir), SliceConfig.of(max_length=2048)
    ).slice_all(load_dialogues(FIXTURE))
    naive_tokens = sum(len(s["input_ids"]) for s in samples)
    base, ours = result["modes"]["baseline"], result["modes"]["prefix_shared"]
    for mode in (base, ours):
        assert mode["samples"] == len(samples)
        assert mode["naive_tokens"] == naive_tokens
        assert mode["mean_loss"] > 0 and mode["seconds"] > 0
    # The baseline processes each sample's own tokens; prefix-shared processes each shared prefix
    # once, so fewer tokens for the same samples.
    assert base["tokens"] == naive_tokens
    assert ours["tokens"] < naive_tokens
    assert base["steps"] == -(-len(samples) // 4)
    assert result["speedup_naive_tokens_per_s"] == pytest.approx(
        ours["naive_tokens_per_s"] / base["naive_tokens_per_s"], rel=1e-2
    )
    assert base["mfu"] is None  # no known peak on a CPU


@pytest.mark.slow(reason="trains a tiny model")
def test_mfu_from_a_given_peak(tokenizer_dir: Path, tmp_path: Path) -> None:
    result = gpu_sft.run(
        _args(tokenizer_dir, tmp_path / "r.json", "--steps", "2", "--warmup", "0", "--peak-tflops", "1")
    )
    linear = result["setup"]["linear_parameters"]
    for mode in result["modes"].values():
        assert mode["steps"] == 2
        assert mode["mfu"] == pytest.approx(6 * linear * mode["tokens_per_s"] / 1e12, abs=1e-4)


@pytest.mark.slow(reason="trains a tiny model")
def test_too_few_rows_for_the_warmup_is_one_clear_error(tokenizer_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no timed steps"):
        gpu_sft.run(_args(tokenizer_dir, tmp_path / "r.json", "--warmup", "1000"))


def test_the_defaults_fit_an_80_gb_gpu_by_the_planner() -> None:
    """The old defaults (batch 8 x 4,096, no checkpointing) ran out of memory on an H100; the
    defaults now are TRL's (checkpointing on), which the planner fits in 80 GB in both modes."""
    from diaforge.train.plan import USABLE

    planned = gpu_sft.planned_peaks(gpu_sft.build_parser().parse_args([]))
    assert planned == {
        "baseline": pytest.approx(57.0, abs=0.1),
        "prefix_shared": pytest.approx(12.7, abs=0.1),
    }
    assert max(planned.values()) <= USABLE * 79.6
    old = gpu_sft.planned_peaks(gpu_sft.build_parser().parse_args(["--no-gradient-checkpointing"]))
    assert old["baseline"] > 79.6
    assert gpu_sft.planned_peaks(gpu_sft.build_parser().parse_args(["--shape", "tiny"])) is None
