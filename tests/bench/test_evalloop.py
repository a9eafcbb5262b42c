"""`make bench`'s evaluation parts on a tiny model. eval_loop: the three loops run, the cached loop
repeats the one-at-a-time loop's replies, and the loop stop keeps every turn's kind and every score.
eval_batching: chunked and continuous batching give the same transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.bench.evalloop import bench_eval_batching, bench_eval_loop

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


@pytest.mark.slow(reason="evaluates a tiny model on the benchmark")
def test_eval_loop_part_on_a_tiny_model(tmp_path: Path) -> None:
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(BENCH)[:10] for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny", texts=texts, seed=1)
    out = bench_eval_loop(ROOT, model, BENCH, num_dialogues=2, t_max=2, budget=64)
    assert out["value"] > 0
    assert set(out["seconds"]) == {"one_at_a_time", "cached", "cached_loop_stop"}
    assert out["cached_replies_identical_to_one_at_a_time"] is True
    assert out["loop_stop_turn_kinds_identical"] is True
    assert out["loop_stop_scores_identical"] is True
    # The loop stop only ever shortens replies.
    assert out["generated_characters"]["cached_loop_stop"] <= out["generated_characters"]["cached"]


@pytest.mark.slow(reason="evaluates a tiny model on the benchmark")
def test_eval_batching_part_on_a_tiny_model(tmp_path: Path) -> None:
    """Chunks of 8 and continuous batching of 8 and 16 rows, the cache written in place or
    concatenated, give the same transcripts."""
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(BENCH)[:10] for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny", texts=texts, seed=2)
    out = bench_eval_batching(model, BENCH, num_dialogues=10, t_max=2, budget=24)
    assert set(out["seconds"]) == {"chunks_8", "continuous_8", "continuous_16_concat", "continuous_16"}
    assert out["in_place_over_concat"] > 0
    assert out["value"] > 0 and out["assistant_turns"] >= 10
    assert out["dialogues_with_identical_transcripts"] == dict.fromkeys(out["seconds"], 10)
    assert all(out["scores_identical"].values())


@pytest.mark.slow(reason="evaluates a tiny model on the benchmark twice")
def test_eval_speculation_part_on_a_tiny_model(tmp_path: Path) -> None:
    """With every aid on, speculation leaves every transcript as it was, in fewer forward passes
    (a tiny model trained on nothing repeats itself, so lookups hit)."""
    from diaforge.bench.speculation import bench_eval_speculation
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(BENCH)[:10] for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny", texts=texts, seed=3)
    out = bench_eval_speculation(
        model, BENCH, num_dialogues=4, t_max=2, budget=48, speculate=4, modes=("static", "dynamic")
    )
    assert out["identical_transcripts"] == out["transcripts"] == 8  # static and dynamic
    assert out["scores_identical"] is True
    assert out["accepted_tokens"] > 0 and sum(out["accepted_by_span"].values()) == out["accepted_tokens"]
    assert out["forward_passes"]["speculated"] < out["forward_passes"]["plain"]
    assert 0 < out["value"] < 1
    assert out["replay"]["matches_run"] is True  # the replay of the plain run counts the passes
    for part in ("decode_seconds", "prefill_seconds"):
        assert all(0 < out[part][n] <= out["seconds"][n] for n in ("plain", "speculated"))
    cost = out["pass_cost"]
    assert set(cost["seconds_by_width"]) == {"1", "2", "3", "5", "9"} and cost["per_column_s"] is not None
