"""The repository under test and the environment its tests share.

`ROOT` is the repository's root folder (the parent of `tests/`), `FIXTURES` the hand-written inputs
under `tests/fixtures/`. `OFFLINE` is the environment every test runs in (set by `tests/conftest.py`
before any test module is imported, so in-process code and every command a test starts see it): no
model hub (`HF_HUB_OFFLINE`, `TRANSFORMERS_OFFLINE`) and W&B writing only to disk (`WANDB_MODE`).
`clean_env` is the environment for a command a test starts and inspects as a person would see it.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "offline"}


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the switches that turn library progress bars off (an
    in-process `--quiet` test sets them) and without any W&B setting, on one thread, offline; then
    `extra` on top (e.g. `HOME=...`, `WANDB_MODE="offline"`)."""
    env = {k: v for k, v in os.environ.items() if "PROGRESS_BARS" not in k and not k.startswith("WANDB_")}
    env.update(
        OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"
    )
    env.update(extra)
    return env
