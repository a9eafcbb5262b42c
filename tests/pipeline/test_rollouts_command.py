"""`diaforge data rollouts` on a tiny random model, in process: the run folder, the validators on its
states, the disagreement kinds in ``stats.json``, resume, the leakage check and one-line errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from _repo import ROOT

from diaforge.cli import main as console_main
from diaforge.data_gen.cli import main as data_main
from diaforge.data_gen.validators import format_validator
from diaforge.errors import InputError
from diaforge.eval.disagreements import DISAGREEMENT_KINDS
from diaforge.pipeline.cli import main as rollouts_main
from diaforge.pipeline.rollouts import RolloutsConfig, run_rollouts
from diaforge.schema import load_dialogues

FIXTURE = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
CATALOGUE = ROOT / "data_gen" / "assets" / "catalogue.json"  # both splits: only train tools may appear
QUICK = ["--encoder", "tfidf", "--t-max", "2", "--max-new-tokens", "8", "--n-samples", "1", "--n-voters", "1"]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in load_dialogues(FIXTURE) for t in d.turns if t.content]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts, seed=0)


def _args(model: Path, out: Path, *extra: str) -> list[str]:
    return [
        "rollouts",
        "--model",
        str(model),
        "--out",
        str(out),
        "--catalogue",
        str(CATALOGUE),
        *QUICK,
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("rollouts") / "run"
    assert rollouts_main(_args(tiny_model, out, "--num-dialogues", "2")) == 0
    return out


def test_the_run_folder_holds_paths_states_and_stats(run: Path) -> None:
    stats = json.loads((run / "stats.json").read_text())
    assert list(stats["by_kind"]) == list(DISAGREEMENT_KINDS)
    # A random model writes no turn the teacher would: every turn disagrees, counted by kind.
    assert stats["dialogues"] == 2 and stats["disagreements"] == stats["assistant_turns"] > 0
    assert sum(stats["by_kind"].values()) == stats["disagreements"]
    assert stats["by_kind"]["malformed"] + stats["by_kind"]["truncated"] + stats["by_kind"]["other"] > 0
    paths = load_dialogues(run / "rollouts.jsonl")
    assert {p.provenance.source for p in paths} == {"rollout"}
    assert all(p.provenance.model_extra["rollout_model"] for p in paths)
    states = load_dialogues(run / "dialogues.jsonl")
    rejects = (run / "rejects.jsonl").read_text().splitlines()
    assert (
        len(states) + len(rejects)
        == stats["assistant_turns"]
        == stats["states_accepted"] + stats["states_rejected"]
    )
    assert all(format_validator(s).passed for s in states)
    assert all(s.provenance.verdicts and s.provenance.verdicts[-1].passed for s in states)
    assert (run / "prompt_format.json").is_file() and (run / "preference.jsonl").is_file()
    assert stats["held_out"]["tools_left_out_of_the_pool"] > 0
    held = {t["name"] for t in json.loads(CATALOGUE.read_text()) if t["metadata"]["split"] == "heldout"}
    assert not {t.name for d in [*paths, *states] for t in d.candidate_tools} & held


def test_a_rerun_resumes_and_a_changed_one_is_refused(run: Path, tiny_model: Path) -> None:
    before = (run / "rollouts.jsonl").read_text()
    assert rollouts_main(_args(tiny_model, run, "--num-dialogues", "2")) == 0
    assert (run / "rollouts.jsonl").read_text() == before
    assert json.loads((run / "stats.json").read_text())["run"]["dialogues_this_session"] == 0
    with pytest.raises(InputError, match=r"another configuration \(changed: t_max\)"):
        quick = {"encoder": "tfidf", "max_new_tokens": 8, "n_samples": 1, "n_voters": 1, "num_dialogues": 2}
        config = RolloutsConfig(
            model=str(tiny_model), out=str(run), catalogue=str(CATALOGUE), t_max=3, **quick
        )
        asyncio.run(run_rollouts(config))


def test_bad_input_is_one_line(tiny_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held_only = ROOT / "data_gen" / "assets" / "catalogue_heldout.json"
    code = rollouts_main(
        [
            "rollouts",
            "--model",
            str(tiny_model),
            "--out",
            str(tmp_path / "o"),
            "--catalogue",
            str(held_only),
            *QUICK,
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no tool of split 'train'" in err[0]
    assert rollouts_main(["rollouts", "--out", str(tmp_path / "o")]) == 2
    assert "--model is required" in capsys.readouterr().err


def test_the_console_routes_data_rollouts(capsys: pytest.CaptureFixture[str]) -> None:
    assert console_main(["data", "rollouts", "--help"]) == 0
    assert "--num-dialogues" in capsys.readouterr().out
    assert data_main(["rollouts", "--model", "m"]) == 2
    assert "diaforge data rollouts" in capsys.readouterr().err
