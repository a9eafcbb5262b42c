"""`--device` of the demo and its curve (`diaforge.pipeline.device`): a GPU trains with single_gpu.yaml and
a GPU recipe and evaluates every model with `--device`; a bad device, the CPU recipe on a GPU and a
GPU torch does not see are refused in one line before anything runs; the curve refuses a corpus too
small for its largest size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import ROOT

import diaforge.pipeline.curve as curve
from diaforge.errors import InputError
from diaforge.pipeline.cli import main
from diaforge.pipeline.demo import DemoConfig, Runner, model_eval_command, plain_config, train_command
from diaforge.pipeline.device import gpu_accelerate_config, gpu_curve_recipe

GPU_RECIPE = ROOT / "recipes" / "smollm2-135m" / "curve-gpu.yaml"


def _option(argv: list, name: str) -> str:
    words = [str(a) for a in argv]
    return words[words.index(name) + 1]


def test_the_gpu_files_are_the_bundled_ones() -> None:
    assert gpu_accelerate_config().resolve() == ROOT / "accelerate_configs" / "single_gpu.yaml"
    assert gpu_curve_recipe().resolve() == GPU_RECIPE


def test_a_gpu_device_trains_with_single_gpu_yaml_and_the_gpu_recipe(tmp_path: Path) -> None:
    cfg = DemoConfig(out=tmp_path, device="cuda", recipe=gpu_curve_recipe())
    cfg.validate()
    command = [str(a) for a in train_command(cfg, tmp_path / "d.jsonl", tmp_path / "sft", 250)]
    assert (
        Path(_option(command, "--config_file")).resolve() == ROOT / "accelerate_configs" / "single_gpu.yaml"
    )
    assert str(GPU_RECIPE) in {str(Path(w).resolve()) for w in command}
    assert _option(command, "--max_dialogues") == "250" and "--gpu_ids" not in command
    one = [
        str(a)
        for a in train_command(DemoConfig(device="cuda:1", recipe=GPU_RECIPE), tmp_path, tmp_path, None)
    ]
    assert _option(one, "--gpu_ids") == "1"  # accelerate sets CUDA_VISIBLE_DEVICES=1
    cpu = [str(a) for a in train_command(DemoConfig(), tmp_path, tmp_path, None)]
    assert Path(_option(cpu, "--config_file")).name == "cpu.yaml" and "--gpu_ids" not in cpu
    assert plain_config(cfg)["device"] == "cuda"


def test_every_model_evaluation_carries_the_device(tmp_path: Path) -> None:
    cfg = DemoConfig(device="cuda:0", recipe=GPU_RECIPE)
    assert _option(model_eval_command(cfg, tmp_path, "base", tmp_path, tmp_path), "--device") == "cuda:0"
    assert (
        _option(model_eval_command(DemoConfig(), tmp_path, "base", tmp_path, tmp_path), "--device") == "cpu"
    )


def test_the_eval_command_line_takes_the_device_the_demo_passes(tmp_path: Path) -> None:
    from diaforge.eval.cli import build_parser

    command = [
        str(a)
        for a in model_eval_command(
            DemoConfig(device="cuda:1", recipe=GPU_RECIPE), tmp_path, "tuned", tmp_path, tmp_path
        )
    ]
    start = command.index("eval") + 1  # diaforge eval run ... or python -m diaforge eval run ...
    args = build_parser("run").parse_args(command[start:])
    assert args.device == "cuda:1" and args.batch_size == 16 and args.limit == 115


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "CUDA", "mps", "", "cuda:0 ", 0])
def test_a_bad_device_is_refused_in_one_line(device: object, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--device must be cpu, cuda or cuda:N, got ") as err:
        DemoConfig(out=tmp_path / "demo", device=device).validate()  # type: ignore[arg-type]
    assert "\n" not in str(err.value)


def test_the_cpu_recipe_is_refused_on_a_gpu(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"demo.yaml: --device cuda: the recipe says use_cpu: true") as err:
        DemoConfig(out=tmp_path, device="cuda").validate()  # the default recipe is the CPU demo's
    assert "curve-gpu.yaml" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo-curve", "--device", "gpu"], "--device must be cpu, cuda or cuda:N, got 'gpu'"),
        (["demo", "--device", "cuda"], "the recipe says use_cpu: true"),
    ],
)
def test_the_command_line_refuses_a_bad_device(argv, message, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing was run or written


def test_a_gpu_torch_does_not_see_is_refused_before_any_stage(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    cfg = DemoConfig(out=tmp_path / "gc", device="cuda", recipe=GPU_RECIPE, dialogues=10)
    with pytest.raises(InputError, match=r"--device cuda: torch sees no CUDA GPU"):
        curve.run_curve(cfg, [5])
    assert not (tmp_path / "gc").exists()


def _fake_stages(monkeypatch: pytest.MonkeyPatch, accepted: int) -> list[list[str]]:
    """Every stage's command recorded instead of run, each writing what its real command writes."""
    commands: list[list[str]] = []

    def run(self: Runner, stage: object, argv: list) -> None:
        words = [str(a) for a in argv]
        commands.append(words)
        if "train" in words:
            sft = Path(_option(words, "--output_dir"))
            sft.mkdir(parents=True)
            for name in ("train_results.json", "config.json"):
                (sft / name).write_text("{}")
            samples = 3 * int(_option(words, "--max_dialogues"))
            summary = {"stats": {"samples": samples}, "train_runtime": 100.0 + samples}
            (sft / "train_summary.json").write_text(json.dumps(summary))
        else:
            out = Path(_option(words, "--out"))
            out.mkdir(parents=True)
            (out / "metrics.json").write_text(json.dumps({"dynamic": {"Acc": 0.25, "FTR": 0.1, "n": 80}}))

    def corpus(runner: Runner, cfg: DemoConfig, data: Path) -> None:
        data.mkdir(parents=True, exist_ok=True)
        (data / "stats.json").write_text(json.dumps({"accepted": accepted}))

    monkeypatch.setattr(Runner, "run", run)
    monkeypatch.setattr(curve, "model_and_corpus", corpus)
    monkeypatch.setattr(curve, "check_device_present", lambda device: None)  # as on a GPU machine
    monkeypatch.setattr(curve, "plot_curve", lambda result, path: None)
    return commands


def test_the_curve_on_a_gpu_trains_with_single_gpu_yaml_and_evaluates_on_the_gpu(
    tmp_path, monkeypatch
) -> None:
    commands = _fake_stages(monkeypatch, accepted=11)
    cfg = DemoConfig(out=tmp_path / "gc", device="cuda", recipe=GPU_RECIPE, dialogues=12, threads=1)
    result = curve.run_curve(cfg, [4, 8])
    trains = [c for c in commands if "train" in c]
    evals = [c for c in commands if "eval" in c]
    assert [_option(c, "--max_dialogues") for c in trains] == ["4", "8"]
    for command in trains:
        assert (
            Path(_option(command, "--config_file")).resolve()
            == ROOT / "accelerate_configs" / "single_gpu.yaml"
        )
        assert str(GPU_RECIPE) in {str(Path(w).resolve()) for w in command}
    assert len(evals) == 2 and all(_option(c, "--device") == "cuda" for c in evals)
    # The curve's points skip the no-tool split, said once.
    assert all(c.count("--no-tool-bench") == 1 and _option(c, "--no-tool-bench") == "none" for c in evals)
    assert [p["dialogues"] for p in result["points"]] == [4, 8] and result["config"]["device"] == "cuda"


def test_a_point_trained_by_an_earlier_run_keeps_its_training_time(tmp_path, monkeypatch) -> None:
    """Adding a size to a curve resumes the points already trained: their training time is the one
    their run measured (the trainer's runtime), not the zero seconds of a skipped stage."""
    commands = _fake_stages(monkeypatch, accepted=11)
    cfg = DemoConfig(out=tmp_path / "c", dialogues=12, threads=1)
    first = curve.run_curve(cfg, [4])
    assert first["points"][0]["train_seconds"] is not None  # measured by this run
    again = curve.run_curve(cfg, [4, 8])
    assert sum("train" in c for c in commands) == 2  # 4 once, then 8
    by_size = {p["dialogues"]: p["train_seconds"] for p in again["points"]}
    assert by_size[4] == 112.0  # 100 + 12 samples: the runtime its summary records


def test_the_curve_refuses_a_corpus_smaller_than_its_largest_size(tmp_path, monkeypatch) -> None:
    commands = _fake_stages(monkeypatch, accepted=7)
    cfg = DemoConfig(out=tmp_path / "gc", dialogues=12, threads=1)
    with pytest.raises(
        InputError, match=r"stats.json: the corpus holds 7 accepted dialogues but --sizes goes up to 8"
    ):
        curve.run_curve(cfg, [4, 8])
    assert commands == []  # nothing trained on a corpus that cannot hold the curve
