"""`data_gen.console`: only a command's result reaches stdout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data_gen.cli import main
from data_gen.console import emit, results_only_on_stdout


def test_stray_prints_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with results_only_on_stdout():
        print("[INFO] some library talking")
        emit('{"a": 1}')
    out, err = capsys.readouterr()
    assert json.loads(out) == {"a": 1}
    assert "library talking" in err


def test_nesting_keeps_the_real_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    with results_only_on_stdout():
        with results_only_on_stdout():
            print("noise")
            emit("inner")
        emit("outer")
    print("after")
    out, err = capsys.readouterr()
    assert out.split() == ["inner", "outer", "after"]
    assert err.split() == ["noise"]


def test_cli_json_survives_a_printing_library(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import data_gen.corpus as corpus

    real = corpus.analyze_corpus

    def chatty(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        print("[INFO] Running in WANDB offline mode")
        return real(*args, **kwargs)

    monkeypatch.setattr(corpus, "analyze_corpus", chatty)
    path = Path(__file__).resolve().parents[1] / "fixtures" / "dialogues_small.jsonl"
    code = main(["analyze-corpus", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert isinstance(json.loads(out), dict)
    assert "WANDB offline" in err
