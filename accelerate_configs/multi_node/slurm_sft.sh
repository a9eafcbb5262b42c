#!/bin/bash
# Multi-node LoRA SFT under SLURM: one task per node, each running `python -m diaforge.train.launch`
# (accelerate launch, recipe checked first) for its 8 local GPUs; ranks and the rendezvous
# address come from SLURM.
#
#   mkdir -p logs && sbatch accelerate_configs/multi_node/slurm_sft.sh recipes/llama-3.3-70b/sft_zero3.yaml [--key value ...]
#
# DRY_RUN=1 prints, for every node, the environment and the command it would run, and starts
# nothing (tests/train/test_multinode.py runs it with SLURM's variables set by hand).
#
# Adjust --nodes, --gres and the partition to the cluster. The repository must be on a shared
# file system at the same path on every node, with its .venv (or change VENV below).
#SBATCH --job-name=diaforge-sft
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --cpus-per-task=64
#SBATCH --exclusive
#SBATCH --time=24:00:00
#SBATCH --output=logs/%x-%j.out

set -euo pipefail

RECIPE=${1:?usage: sbatch slurm_sft.sh RECIPE.yaml [--key value ...]}
shift
REPO=${SLURM_SUBMIT_DIR:-$(pwd)}
VENV=${VENV:-$REPO/.venv}
CONFIG=${ACCELERATE_CONFIG:-$REPO/accelerate_configs/multi_node/deepspeed_zero3_2x8.yaml}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}

# The recipe and its overrides, quoted for the inner shell.
ARGS=$(printf ' %q' "$RECIPE" "$@")

# (sed, not head: head exits early and, under pipefail, the SIGPIPE of scontrol fails the job)
MAIN_HOST=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)
MAIN_PORT=${MAIN_PORT:-29500}
NUM_PROCESSES=$((SLURM_NNODES * GPUS_PER_NODE))

# Offline nodes: no hub lookups (models must be local folders or in the shared HF cache), W&B
# offline unless WANDB_API_KEY is exported (train/sft.py decides).
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
export NCCL_ASYNC_ERROR_HANDLING=1

mkdir -p "$REPO/logs"
cd "$REPO"

# srun starts one task per node; SLURM_NODEID is the machine rank inside each task.
LAUNCH="'$VENV/bin/python' -m diaforge.train.launch \
    --config_file '$CONFIG' \
    --num_machines $SLURM_NNODES \
    --num_processes $NUM_PROCESSES \
    --machine_rank \$SLURM_NODEID \
    --main_process_ip $MAIN_HOST \
    --main_process_port $MAIN_PORT \
    --rdzv_backend c10d \
    train/sft.py$ARGS"

if [ -n "${DRY_RUN:-}" ]; then
  for ((node = 0; node < SLURM_NNODES; node++)); do
    echo "node $node: HF_HUB_OFFLINE=$HF_HUB_OFFLINE MAIN_HOST=$MAIN_HOST MAIN_PORT=$MAIN_PORT WORLD_SIZE=$NUM_PROCESSES"
    SLURM_NODEID=$node bash -c "set -- $LAUNCH; printf '%q ' \"\$@\"; echo"
  done
  exit 0
fi
srun --kill-on-bad-exit=1 bash -c "$LAUNCH"
