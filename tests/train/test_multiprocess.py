"""Two processes on the CPU, launched as a user launches them:

    python -m diaforge.train.launch --config_file accelerate_configs/X.yaml --num_processes 2 --mixed_precision no \\
        train/sft.py recipes/tiny/sft.yaml --slicing prefix_shared ...

under DDP (gloo), DeepSpeed ZeRO-2 and ZeRO-3 (DeepSpeed's CPU accelerator). For each:

* parity: the loss of every step and the saved adapter match one process with the same global batch
  (gradient accumulation 2), within the tolerances below;
* each rank reads different rows, and the two ranks together read what the one process read, step by step;
* only rank 0 writes files and logs (a checkpoint also holds each rank's own RNG state and, under
  ZeRO, its own optimizer shard: those are the other rank's only writes);
* a run resumed from a checkpoint that two processes wrote ends where the uninterrupted run ended.

What each rank read, wrote and printed is recorded by tests/train/dist_probe/sitecustomize.py.

FSDP2 does not run here: accelerate (1.15) turns FSDP on only for GPU-like devices; on CPU it leaves
FSDP off and trains plain DDP, whatever the config says. torch's own `fully_shard` does run on CPU over
gloo, so the gap is accelerate's; `test_fsdp_config_trains_ddp_on_cpu` pins that behaviour so the
day accelerate changes, the test says so.

Tolerances. Everything is fp32 and the data, seeds and learning-rate schedule are the same; what
differs is the order of the floating-point sums (two ranks' gradients all-reduced, or reduce-scattered
in ZeRO's buckets, instead of accumulated in one process). That is round-off: observed 0 for DDP and
ZeRO-2 and 1e-6 on the loss, 2e-5 on an adapter weight for ZeRO-3. LOSS_TOL = 1e-4 is a hundred times
that and still a hundred times smaller than the smallest change of the loss from one step to the next
here (asserted below), so a wrong global batch, a shifted sample or a lost step cannot pass. The
adapter's tolerance (1e-3 absolute) is a tenth of one optimizer step at the tiny recipe's learning
rate (Adam moves each weight by up to lr = 1e-2 per step).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _repo import ROOT, clean_env

LOSS_TOL = 1e-4
ADAPTER_TOL = 1e-3
PROBE = ROOT / "tests" / "train" / "dist_probe"
STEPS = ("--max_steps", "6", "--save_steps", "3", "--save_total_limit", "4", "--logging_steps", "1")

#: backend -> (accelerate config, accelerate's distributed type, ZeRO stage)
BACKENDS = {
    "ddp": ("accelerate_configs/cpu_ddp.yaml", "DistributedType.MULTI_CPU", None),
    "zero2": ("accelerate_configs/deepspeed_zero2.yaml", "DistributedType.DEEPSPEED", 2),
    "zero3": ("accelerate_configs/deepspeed_zero3.yaml", "DistributedType.DEEPSPEED", 3),
}


def env_with_probe(probe_dir: Path) -> dict[str, str]:
    env = clean_env(PYTHONPATH=os.pathsep.join([str(PROBE), str(ROOT)]), DIAFORGE_PROBE_DIR=str(probe_dir))
    return {k: v for k, v in env.items() if not k.startswith("ACCELERATE_")}


def launch(config: str, output_dir: Path, probe_dir: Path, *extra: str) -> str:
    """Train the tiny recipe with prefix-shared rows through `python -m diaforge.train.launch`."""
    probe_dir.mkdir(parents=True, exist_ok=True)
    two = (
        [] if config == "accelerate_configs/cpu.yaml" else ["--num_processes", "2", "--mixed_precision", "no"]
    )
    command = [
        sys.executable,
        "-m",
        "diaforge.train.launch",
        "--config_file",
        config,
        *two,
        "--num_cpu_threads_per_process",
        "1",
        "train/sft.py",
        "recipes/tiny/sft.yaml",
        "--output_dir",
        str(output_dir),
        "--slicing",
        "prefix_shared",
        *STEPS,
        *extra,
    ]
    proc = subprocess.run(
        command, cwd=ROOT, env=env_with_probe(probe_dir), capture_output=True, text=True, timeout=600
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-5000:]
    return output


def probes(probe_dir: Path) -> dict[str, dict]:
    """The training processes' records by rank ('0' for a single process)."""
    found = {}
    for path in probe_dir.glob("proc-*.json"):
        record = json.loads(path.read_text())
        if record["batches"]:
            found[record["rank"] or "0"] = record
    return found


def losses(output_dir: Path) -> dict[int, float]:
    state = json.loads((output_dir / "trainer_state.json").read_text())
    return {h["step"]: h["loss"] for h in state["log_history"] if "loss" in h}


def adapter(output_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(output_dir / "adapter_model.safetensors"))


def assert_adapters_match(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    worst = max((got[k].float() - want[k].float()).abs().max().item() for k in want)
    assert worst <= ADAPTER_TOL, worst


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """One process, gradient accumulation 2: the same global batch as two processes of one row each."""
    root = tmp_path_factory.mktemp("one")
    launch("accelerate_configs/cpu.yaml", root / "run", root / "probe", "--gradient_accumulation_steps", "2")
    return root / "run", probes(root / "probe")["0"]


def other_rank_may_write(rel: str) -> bool:
    """What a rank other than 0 writes by design: its RNG state and, under ZeRO, its own shards (and the
    checkpoint folders they go in)."""
    name = rel.rsplit("/", 1)[-1]
    return (
        name.startswith("checkpoint-")
        or name.startswith("global_step")
        or name == "rng_state_1.pth"
        or name.startswith("zero_pp_rank_1_")
    )


@pytest.mark.parametrize("backend", list(BACKENDS))
def test_two_processes_match_one(backend, one_process, tmp_path):
    if backend.startswith("zero"):
        import importlib.util

        assert importlib.util.find_spec("deepspeed"), (
            "deepspeed is missing: `make setup` installs it (dev extra)"
        )
    config, distributed_type, zero_stage = BACKENDS[backend]
    ref_dir, ref_probe = one_process
    out = tmp_path / "run"
    launch(config, out, tmp_path / "probe")
    ranks = probes(tmp_path / "probe")

    # The engine is the one asked for, on two processes.
    assert sorted(ranks) == ["0", "1"]
    for record in ranks.values():
        assert record["engine"]["distributed_type"] == distributed_type, record["engine"]
        assert record["engine"]["zero_stage"] == zero_stage and record["engine"]["world_size"] == 2

    # Parity: every step's loss and the adapter.
    want, got = losses(ref_dir), losses(out)
    assert sorted(got) == sorted(want) == [1, 2, 3, 4, 5, 6]
    steps = [want[s] for s in sorted(want)]
    # The tolerance can tell one step from the next.
    assert min(abs(a - b) for a, b in zip(steps, steps[1:], strict=False)) > 100 * LOSS_TOL
    for step in want:
        assert got[step] == pytest.approx(want[step], abs=LOSS_TOL), (step, got, want)
    assert_adapters_match(adapter(out), adapter(ref_dir))

    # Disjoint rows: per step, the two ranks read two different rows, the ones the one process read
    # as its two accumulated micro-batches; each epoch covers every row once.
    def by_step(record):
        table = {}
        for batch in record["batches"]:
            table.setdefault(batch["step"], []).append(batch["input_ids"])
        return table

    rank0, rank1, one = by_step(ranks["0"]), by_step(ranks["1"]), by_step(ref_probe)
    assert sorted(rank0) == sorted(rank1) == sorted(one) == list(range(6))
    for step in range(6):
        assert len(rank0[step]) == len(rank1[step]) == 1 and len(one[step]) == 2
        assert rank0[step] != rank1[step]
        assert sorted(rank0[step] + rank1[step]) == sorted(one[step])
    for epoch in (range(0, 3), range(3, 6)):
        seen = [h for s in epoch for h in rank0[s] + rank1[s]]
        assert len(set(seen)) == len(seen) == 6

    # Only rank 0 writes (but for the other rank's own checkpoint state) and logs.
    def written(record):
        return {
            str(Path(p).relative_to(out))
            for p in record["writes"]
            if Path(p) == out or out in Path(p).parents
        }

    others = written(ranks["1"])
    assert all(other_rank_may_write(p) for p in others), sorted(others)
    assert {p for p in others if p.endswith("rng_state_1.pth")} == {
        "checkpoint-3/rng_state_1.pth",
        "checkpoint-6/rng_state_1.pth",
    }
    mine = written(ranks["0"])
    for name in (
        "adapter_model.safetensors",
        "trainer_state.json",
        "train_summary.json",
        "data_fingerprint.json",
    ):
        assert name in mine
    assert "checkpoint-3/adapter_model.safetensors" in mine
    assert ranks["1"]["log_lines"] == []
    assert any("saved to" in line for line in ranks["0"]["log_lines"])
    assert sum("'loss':" in line for line in ranks["0"]["log_lines"]) == 6

    # Resume: a fresh folder holding only checkpoint-3 (and the tiny base) ends where the
    # uninterrupted run ended, reading the same rows for the steps it has left.
    again = tmp_path / "resumed"
    again.mkdir()
    shutil.copytree(out / "checkpoint-3", again / "checkpoint-3")
    shutil.copytree(out / "tiny-base", again / "tiny-base")
    output = launch(config, again, tmp_path / "probe-resumed")
    assert f"resuming from checkpoint {again / 'checkpoint-3'}" in output
    resumed = losses(again)
    for step in (4, 5, 6):
        assert resumed[step] == pytest.approx(got[step], abs=LOSS_TOL), (step, resumed, got)
    assert_adapters_match(adapter(again), adapter(out))
    later = probes(tmp_path / "probe-resumed")
    assert by_step(later["0"]) == {s: rank0[s] for s in (3, 4, 5)}
    assert by_step(later["1"]) == {s: rank1[s] for s in (3, 4, 5)}


def test_fsdp2_config_trains_ddp_on_cpu(tmp_path):
    """Why no FSDP2 parity test runs on CPU: launched with the FSDP2 config on two CPU processes,
    accelerate stays MULTI_CPU and wraps the model in DDP. If this fails, accelerate has learned FSDP
    on CPU: add fsdp2 to BACKENDS."""
    out = tmp_path / "run"
    launch(
        "accelerate_configs/fsdp2.yaml", out, tmp_path / "probe", "--max_steps", "1", "--save_strategy", "no"
    )
    ranks = probes(tmp_path / "probe")
    assert sorted(ranks) == ["0", "1"]
    engine = ranks["0"]["engine"]
    assert engine["distributed_type"] == "DistributedType.MULTI_CPU", engine
    assert engine["model_class"] == "DistributedDataParallel" and engine["world_size"] == 2
