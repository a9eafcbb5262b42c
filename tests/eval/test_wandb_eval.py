"""`eval run` and `eval compare` with --wandb-project, offline (no API key): the run config holds
the settings and the prompt format, the artifacts hold the run's files."""

from __future__ import annotations

import json

import pytest

from diaforge.eval.cli import main
from diaforge.wandb_offline import wait_for_offline_run


@pytest.fixture
def offline(tmp_path, monkeypatch):
    for var in ("WANDB_API_KEY", "WANDB_MODE", "WANDB_DIR", "WANDB_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.netrc: no credentials
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb_config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "wandb_cache"))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb_data"))
    monkeypatch.setenv("WANDB_SILENT", "true")


@pytest.mark.slow(reason="reads MiniLM from disk")
@pytest.mark.filterwarnings("ignore")
def test_eval_run_and_compare_log_settings_and_files(offline, tmp_path):
    runs = []
    for policy in ("reference", "random"):
        out = tmp_path / policy
        argv = ["run", "--backend", policy, "--limit", "2", "--t-max", "3", "--out", str(out), "--quiet"]
        argv += ["--tool-style", "compact", "--wandb-project", "diaforge-tests", "--wandb-tags", "t1"]
        assert main(argv) == 0
        runs.append(out)
        metrics = json.loads((out / "metrics.json").read_text())
        assert metrics["prompt_format"]["tool_style"] == "compact"
        assert metrics["prompt_format"]["source"] == "options"
        run = wait_for_offline_run(out / "wandb")
        assert run["finished"]
        config = run["config"]
        assert config["backend"] == policy and config["modes"] == ["static", "dynamic"]
        assert config["tool_style"] == "compact" and config["prompt_mode"] == "prompt"
        assert config["t_max"] == 3 and config["limit"] == 2 and config["benchmark"]
        assert config["prompt_format"]["history_reasoning"] == "strip"
        (artifact,) = [a for a in run["artifacts"] if a["type"] == "eval-run"]
        assert artifact["files"] == ["metrics.json", "report.md", "tradeoff.png", "transcripts.jsonl"]
        assert any(a["type"] == "run_table" for a in run["artifacts"])  # the transcripts table

    out = tmp_path / "compare"
    assert main(["compare", *map(str, runs), "--out", str(out), "--wandb-project", "diaforge-tests"]) == 0
    run = wait_for_offline_run(out / "wandb")
    assert run["finished"]
    assert set(run["config"]["runs"]) == {"reference", "random"}
    assert run["config"]["prompt_formats"]["reference"]["tool_style"] == "compact"
    (artifact,) = [a for a in run["artifacts"] if a["type"] == "compare"]
    assert artifact["files"] == ["comparison.md", "comparison.png"]
