"""W&B never blocks training: a key set and no network means offline, with one warning, in seconds."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from diaforge.train.tracking import configure_wandb


def test_key_without_network_falls_back_to_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    for var in ("WANDB_MODE", "WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    args = SimpleNamespace(wandb_project="p", wandb_entity=None, wandb_tags=None)
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        mode = configure_wandb(args, tmp_path)
    assert time.perf_counter() - started < 5
    assert mode == "offline"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()


def test_explicit_mode_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    args = SimpleNamespace(wandb_project=None, wandb_entity=None, wandb_tags=None)
    assert configure_wandb(args, tmp_path) == "disabled"
