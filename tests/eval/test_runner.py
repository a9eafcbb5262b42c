"""End-to-end evaluation of a tiny model built on the spot: static and dynamic runs, adapter vs
merged parity, the served-model path, and one-line errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from _repo import ROOT

from diaforge.eval.cli import main as eval_main
from diaforge.eval.metrics import METRIC_KEYS
from diaforge.jsonl import write_jsonl
from diaforge.schema import load_dialogues
from diaforge.train.modeling import build_tiny_model

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"


@pytest.fixture(scope="module")
def small_bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bench = load_dialogues(BENCH)[:4]
    path = tmp_path_factory.mktemp("bench") / "bench.jsonl"
    write_jsonl(path, bench)
    return path


@pytest.fixture(scope="module")
def tiny_checkpoints(tmp_path_factory: pytest.TempPathFactory, small_bench: Path) -> dict[str, Path]:
    """A tiny base, a LoRA adapter on it with non-zero weights, and the merged model."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = tmp_path_factory.mktemp("tiny")
    texts = [t.content for d in load_dialogues(small_bench) for t in d.turns if t.content]
    base = build_tiny_model(tmp / "base", texts=texts, seed=0)
    model = AutoModelForCausalLM.from_pretrained(base)
    peft = get_peft_model(
        model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    )
    torch.manual_seed(0)
    adapter = tmp / "adapter"
    peft.save_pretrained(adapter)
    AutoTokenizer.from_pretrained(base).save_pretrained(adapter)
    merged = tmp / "merged"
    peft.merge_and_unload().save_pretrained(merged)
    AutoTokenizer.from_pretrained(base).save_pretrained(merged)
    return {"base": base, "adapter": adapter, "merged": merged}


def _run(model: Path, bench: Path, out: Path, *extra: str) -> dict:
    code = eval_main(
        ["run", "--model", str(model), "--bench", str(bench), "--out", str(out), "--quiet",
         "--max-new-tokens", "12", "--t-max", "3", "--batch-size", "4", *extra]
    )  # fmt: skip
    assert code == 0
    return json.loads((out / "metrics.json").read_text())


def test_static_and_dynamic_runs_write_every_output(
    tiny_checkpoints, small_bench: Path, tmp_path: Path
) -> None:
    metrics = _run(tiny_checkpoints["base"], small_bench, tmp_path / "run")
    for mode in ("static", "dynamic"):
        for key in ("n", *METRIC_KEYS):
            assert key in metrics[mode]
        assert metrics[mode]["n"] == 4
        assert metrics[mode]["ConvRel"] is None  # no judge offline: not computed, not faked
    assert metrics["checkpoint"]["kind"] == "model"
    transcripts = [
        json.loads(line) for line in (tmp_path / "run" / "transcripts.jsonl").read_text().splitlines()
    ]
    assert {t["mode"] for t in transcripts} == {"static", "dynamic"}
    for t in transcripts:
        assert t["turns"][0]["role"] == "user"
        if t["mode"] == "dynamic":
            assert len([x for x in t["turns"] if x["role"] == "assistant"]) <= 3
    static = [t for t in transcripts if t["mode"] == "static"]
    bench = {d.id: d for d in load_dialogues(small_bench)}
    for t in static:  # static replays the reference's user turns
        ref_users = [x.content for x in bench[t["id"]].turns if x.role == "user"]
        users = [x["content"] for x in t["turns"] if x["role"] == "user"]
        assert users == ref_users[: len(users)]
    assert (tmp_path / "run" / "report.md").read_text().count("|") > 20
    assert (tmp_path / "run" / "tradeoff.png").read_bytes()[:4] == b"\x89PNG"
    # `score` recomputes the same numbers with no model.
    rescored = subprocess.run(
        [sys.executable, "-m", "diaforge.eval", "score", str(tmp_path / "run" / "transcripts.jsonl")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert rescored.returncode == 0, rescored.stderr
    assert json.loads(rescored.stdout)["static"] == metrics["static"]
    assert json.loads(rescored.stdout)["dynamic"] == metrics["dynamic"]


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_adapter_on_its_base_equals_the_merged_model(
    tiny_checkpoints, small_bench: Path, tmp_path: Path
) -> None:
    _run(tiny_checkpoints["adapter"], small_bench, tmp_path / "adapter")
    _run(tiny_checkpoints["merged"], small_bench, tmp_path / "merged")
    _run(tiny_checkpoints["base"], small_bench, tmp_path / "base", "--modes", "static")

    def raws(run: Path) -> list[str]:
        out = []
        for line in (run / "transcripts.jsonl").read_text().splitlines():
            t = json.loads(line)
            out += [x["raw"] for x in t["turns"] if x["role"] == "assistant"]
        return out

    meta = json.loads((tmp_path / "adapter" / "metrics.json").read_text())
    assert meta["checkpoint"]["kind"] == "adapter"
    assert raws(tmp_path / "adapter") == raws(tmp_path / "merged")
    # The adapter really changes the model (otherwise the parity above proves nothing).
    static_adapter = [r for r in raws(tmp_path / "adapter")][: len(raws(tmp_path / "base"))]
    assert static_adapter != raws(tmp_path / "base")


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_compare_runs(tiny_checkpoints, small_bench: Path, tmp_path: Path) -> None:
    _run(tiny_checkpoints["base"], small_bench, tmp_path / "a", "--modes", "static", "--label", "base")
    _run(tiny_checkpoints["merged"], small_bench, tmp_path / "b", "--modes", "static", "--label", "merged")
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "cmp")]
    assert eval_main([*args, "--json", str(tmp_path / "cmp" / "report.json")]) == 0
    report = json.loads((tmp_path / "cmp" / "report.json").read_text())
    assert set(report) == {"base", "merged"} and "static" in report["base"]
    table = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "base" in table and "merged" in table
    assert (tmp_path / "cmp" / "comparison.png").exists()


@pytest.mark.slow(reason="reads MiniLM from disk")
def test_served_model_through_the_openai_backend(small_bench: Path, tmp_path: Path) -> None:
    """A served model that always calls the first listed candidate with no arguments: the runner
    must stop at that call and score it (right tool with no required args, or a false positive)."""
    import re

    from diaforge.bench.fake_server import FaultyOpenAIServer

    def responder(request: dict) -> str:
        first = re.search(r'"name": "(\w+)"', request["messages"][0]["content"]).group(1)
        return f'<think>Pick the first.</think>\n[{{"name": "{first}", "args": {{}}}}]'

    with FaultyOpenAIServer(responder, fault_plan={0: "500"}) as server:
        metrics = _run(
            Path("served-model"),
            small_bench,
            tmp_path / "served",
            "--backend",
            "openai",
            "--base-url",
            server.base_url,
        )
    bench = load_dialogues(small_bench)
    first_is_gold_without_args = [d.candidate_tools[0].name == d.seed_tool and not d.gold_args for d in bench]
    assert metrics["static"]["TAR"] == 0.0
    assert metrics["static"]["Acc"] == pytest.approx(sum(first_is_gold_without_args) / len(bench))
    expected_ftr = sum(d.candidate_tools[0].name != d.seed_tool for d in bench) / len(bench)
    assert metrics["dynamic"]["FTR"] == pytest.approx(expected_ftr)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "diaforge.eval", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_missing_model_path_is_one_line(tmp_path: Path) -> None:
    proc = _cli("run", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "model path not found" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_benchmark_record_is_one_line(tiny_checkpoints, small_bench: Path, tmp_path: Path) -> None:
    lines = small_bench.read_text().splitlines()
    record = json.loads(lines[1])
    record["turns"][0]["role"] = "narrator"
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    proc = _cli(
        "run", "--model", str(tiny_checkpoints["base"]), "--bench", str(bad), "--out", str(tmp_path / "o")
    )
    assert proc.returncode == 2, proc.stderr
    msg = proc.stderr.strip().splitlines()
    assert len(msg) == 1 and "line 2" in msg[0] and "turns.0.role" in msg[0]


def test_unreachable_server_is_one_line(tmp_path: Path) -> None:
    proc = _cli(
        "run",
        "--model",
        "m",
        "--backend",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--out",
        str(tmp_path / "o"),
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "cannot reach" in proc.stderr


def test_adapter_with_missing_base_is_one_line(tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "/gone/base"}))
    proc = _cli("run", "--model", str(adapter), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "/gone/base" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_voting_user_pools_by_mode() -> None:
    from diaforge.data_gen.agents import ScriptedUser, ScriptedVoter, VotingUser
    from diaforge.data_gen.agents.voting import mode_pool

    assert mode_pool([2, 0, 2]) == 2
    assert mode_pool([1, 0, 2]) == 0  # all tied: smallest index
    d = load_dialogues(BENCH)[0]
    from diaforge.data_gen.agents import DialogueState

    state = DialogueState(
        gold=d.gold_tool, candidates=d.candidate_tools, persona=d.persona, goal=d.goal, gold_args=d.gold_args
    )
    import random

    user = VotingUser(ScriptedUser(), ScriptedVoter(), n=3, m=3)
    a, _ = asyncio.run(user.reply(state, random.Random(1)))
    b, _ = asyncio.run(user.reply(state, random.Random(1)))
    assert a == b and a


def test_dynamic_repeats_redraw_only_the_users_wording() -> None:
    """`DynamicConfig.repeats`: every dialogue once per repeat, repeat 0 first, the user-proxy's
    generator keyed as without repeats in repeat 0 and with the repeat's number after it."""
    import random

    from diaforge.eval.models import ModelSpec, ModelUnderTest
    from diaforge.eval.runner import DynamicConfig, run_dynamic, run_static
    from diaforge.llm.base import Usage
    from diaforge.rng import seeded_rng

    class DrawingUser:
        """Says the first number its generator draws, so each user turn shows its seed."""

        name = "drawing"

        async def reply(self, state, rng: random.Random) -> tuple[str, Usage]:
            return f"draw {rng.random()!r}", Usage()

    bench = load_dialogues(BENCH)[:2]
    model = ModelUnderTest(ModelSpec(model="reference", backend="reference"))
    near_dup = {d.id: False for d in bench}
    cfg = DynamicConfig(t_max=2, seed=3, repeats=3)
    out = asyncio.run(run_dynamic(model, bench, near_dup, DrawingUser(), cfg, progress=False))
    assert [(t.id, t.repeat) for t in out] == [(d.id, r) for r in range(3) for d in bench]
    for t in out:
        users = [turn.content for turn in t.turns if turn.role == "user"]
        keys = [
            (3, t.id, step) if t.repeat == 0 else (3, t.id, step, "repeat", t.repeat)
            for step in range(len(users))
        ]
        assert users and users == [f"draw {seeded_rng(*key).random()!r}" for key in keys]
    once = asyncio.run(
        run_dynamic(model, bench, near_dup, DrawingUser(), DynamicConfig(t_max=2, seed=3), progress=False)
    )
    assert [t.model_dump() for t in once] == [t.model_dump() for t in out[:2]]
    static = asyncio.run(run_static(model, bench, near_dup, progress=False))
    assert [t.repeat for t in static] == [0, 0]  # static mode has no repeats
