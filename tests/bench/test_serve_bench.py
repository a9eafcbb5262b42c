"""`make bench`'s serve part on a tiny model: `diaforge serve` in this process (no process started),
two held-out requests with their tools at 1 and 2 clients, transformers serve left out; the
rates are positive and the value is the one computed from them."""

from __future__ import annotations

from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.bench.serve import add_serve_args, as_rendered, bench_serve, serve_requests

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


def test_serve_requests_carry_the_opening_turn_and_the_candidates() -> None:
    from diaforge.schema import load_dialogues

    first = load_dialogues(BENCH)[0]
    (body, _) = serve_requests(BENCH, 2, 7)
    assert body["messages"] == [{"role": "user", "content": first.turns[0].content}]
    assert [t["function"]["name"] for t in body["tools"]] == [t.name for t in first.candidate_tools]
    assert body["temperature"] == 0 and body["max_tokens"] == 7


def test_the_baseline_reads_the_prompt_ours_renders(tmp_path: Path) -> None:
    """transformers serve on SmolLM2 drops tools=: the baseline gets the listing in its system
    prompt instead, so both servers read one prompt."""
    bodies = serve_requests(BENCH, 2, 7)
    rendered = as_rendered(tmp_path, bodies)  # no prompt_format.json: the default format (prompt mode)
    for body, out in zip(bodies, rendered, strict=True):
        assert "tools" not in out and out["max_tokens"] == 7 and out["temperature"] == 0
        system, user = out["messages"]
        assert system["role"] == "system" and user == body["messages"][0]
        assert all(t["function"]["name"] in system["content"] for t in body["tools"])


def test_serve_part_on_a_tiny_model(tmp_path: Path) -> None:
    from diaforge.schema import load_dialogues
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(BENCH)[:4] for t in d.turns if t.content]
    model = build_tiny_model(tmp_path / "tiny", texts=texts, seed=4)
    out = bench_serve(
        model, BENCH, num_requests=2, budget=4, concurrency=(1, 2), baseline="none", in_process=True
    )
    ours = out["diaforge"]
    rates = ours["requests_per_s"]
    assert set(rates) == {"1", "2"} and all(r > 0 for r in rates.values())
    assert all(t > 0 for t in ours["tokens_per_s"].values())
    assert all(0 < n <= 2 * 4 for n in ours["completion_tokens"].values())
    assert out["scaling"] == {"2": round(rates["2"] / rates["1"], 3)}
    assert out["value"] == out["scaling"]["2"] > 0
    assert out["transformers"] == {"skipped": "--serve-baseline none"} and out["over_transformers"] is None
    assert all(n > 0 for n in ours["prompt_tokens"].values())
    assert out["requests"] == 2 and "value = diaforge serve's requests/s at 2 over at 1" in out["setup"]


def test_serve_options() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    add_serve_args(parser)
    args = parser.parse_args([])
    assert args.serve_concurrency == (1, 8, 16) and args.serve_baseline == "transformers"
    assert args.serve_requests == 16 and args.serve_budget == 96 and args.serve_model is None
    assert parser.parse_args(["--serve-concurrency", "1,4"]).serve_concurrency == (1, 4)
    for bad in ("8", "0,8", "one,two"):
        with pytest.raises(SystemExit):
            parser.parse_args(["--serve-concurrency", bad])
