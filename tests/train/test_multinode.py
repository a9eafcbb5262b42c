"""The SLURM script on paper: with SLURM's variables set by hand and DRY_RUN=1, every node gets the
command accelerate needs (machine rank, main address, world size) for the 2 x 8 GPU ZeRO-3 config, and
accelerate turns it into the torchrun rendezvous of a 16-process job."""

from __future__ import annotations

import os
import shlex
import subprocess

from _repo import ROOT

SCRIPT = ROOT / "accelerate_configs" / "multi_node" / "slurm_sft.sh"


def dry_run(tmp_path, *args: str) -> list[list[str]]:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text("#!/bin/bash\necho gpu-a\necho gpu-b\n")
    (fake / "scontrol").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{fake}{os.pathsep}{os.environ['PATH']}",
        "DRY_RUN": "1",
        "SLURM_JOB_NODELIST": "gpu-[a-b]",
        "SLURM_NNODES": "2",
        "SLURM_SUBMIT_DIR": str(ROOT),
    }
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[::2]] == ["node 0", "node 1"]
    assert all("WORLD_SIZE=16" in line and "MAIN_HOST=gpu-a" in line for line in lines[::2])
    return [shlex.split(line) for line in lines[1::2]]


def test_every_node_gets_its_rank_and_the_main_address(tmp_path):
    import torch.distributed.run as distrib_run
    from accelerate.commands.launch import _filter_args, _validate_launch_command, launch_command_parser
    from accelerate.utils.launch import prepare_deepspeed_cmd_env

    commands = dry_run(tmp_path, "recipes/llama-3.3-70b/sft_zero3.yaml", "--run_name", "two words")
    for rank, command in enumerate(commands):
        assert command[1:3] == ["-m", "diaforge.train.launch"]
        args = launch_command_parser().parse_args(command[3:])
        assert args.training_script == "train/sft.py"
        assert args.training_script_args == [
            "recipes/llama-3.3-70b/sft_zero3.yaml",
            "--run_name",
            "two words",
        ]
        args, defaults, _ = _validate_launch_command(args)
        # What `accelerate launch` sets next, on its way to the DeepSpeed launcher.
        fields = list(defaults.deepspeed_config) + ["mixed_precision"]
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        assert args.use_deepspeed and args.zero_stage == 3
        assert (args.num_machines, args.num_processes, args.machine_rank) == (2, 16, rank)
        assert (args.main_process_ip, args.main_process_port) == ("gpu-a", 29500)
        cmd, env = prepare_deepspeed_cmd_env(args)
        assert cmd is None  # the standard launcher: torchrun in this process, with these arguments
        assert env["ACCELERATE_USE_DEEPSPEED"] == "true" and env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == "3"
        run = _filter_args(
            args,
            distrib_run.get_args_parser(),
            ["--training_script", args.training_script, "--training_script_args", args.training_script_args],
        )
        assert (run.nnodes, run.node_rank, run.nproc_per_node) == ("2", rank, "8"), run
        assert run.rdzv_endpoint == "gpu-a:29500" and run.rdzv_backend == "c10d"
