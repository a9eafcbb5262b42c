"""`python -m eval demo` / `demo-curve`: the gain test, the report, the curve plot, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from data_gen.errors import InputError
from eval.demo import DemoConfig, gain_summary, plot_curve, render_gain, run_curve


def _runs(tuned: float, base: float, floor: float, ftr_tuned: float, ftr_base: float) -> dict:
    def run(acc: float, ftr: float) -> dict:
        return {"static": {"Acc": acc, "FTR": ftr}, "dynamic": {"Acc": acc, "FTR": ftr}}

    return {"base": run(base, ftr_base), "tuned": run(tuned, ftr_tuned), "name-overlap": run(floor, 0.3)}


def test_gain_is_measured_against_the_base_and_the_name_overlap_floor():
    gain = gain_summary(_runs(tuned=0.55, base=0.05, floor=0.375, ftr_tuned=0.1, ftr_base=0.2))
    dyn = gain["dynamic"]
    assert dyn["tuned_Acc"] == 0.55
    assert dyn["over_base_pp"] == 50.0
    assert dyn["over_name_overlap_pp"] == 17.5
    assert dyn["FTR_not_above_base"] is True
    worse = gain_summary(_runs(tuned=0.2, base=0.0, floor=0.375, ftr_tuned=0.3, ftr_base=0.0))["static"]
    assert worse["over_name_overlap_pp"] == -17.5 and worse["FTR_not_above_base"] is False
    table = render_gain(gain)
    assert "+50.0 pp" in table and "+17.5 pp" in table


def test_a_missing_run_gives_no_number_rather_than_a_made_up_one():
    runs = _runs(tuned=0.5, base=0.0, floor=0.4, ftr_tuned=0.1, ftr_base=0.0)
    del runs["name-overlap"]
    gain = gain_summary(runs)["dynamic"]
    assert gain["over_name_overlap_pp"] is None and gain["over_base_pp"] == 50.0
    assert "n/a" in render_gain(gain_summary(runs))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"limit": 0}, "--limit"),
        ({"t_max": True}, "--t-max"),
        ({"recipe": Path("no/such/recipe.yaml")}, "--recipe"),
        ({"floors": ("reference", "oracle")}, "oracle"),
    ],
)
def test_bad_settings_are_refused_before_anything_runs(tmp_path, change, message):
    cfg = DemoConfig(out=tmp_path / "demo", **change)
    with pytest.raises(InputError, match=message):
        cfg.validate()
    assert not (tmp_path / "demo").exists()


def test_curve_sizes_must_fit_the_corpus(tmp_path):
    with pytest.raises(InputError, match="--sizes"):
        run_curve(DemoConfig(out=tmp_path, dialogues=50), [25, 100])
    with pytest.raises(InputError, match="--sizes"):
        run_curve(DemoConfig(out=tmp_path), [0, 10])


def test_curve_plot_is_written(tmp_path):
    result = {
        "points": [
            {"dialogues": 25, "samples": 70, "dynamic": {"Acc": 0.05, "FTR": 0.3}},
            {"dialogues": 50, "samples": 140, "dynamic": {"Acc": 0.1, "FTR": 0.25}},
        ],
        "references": {"base": {"Acc": 0.0}, "name-overlap": {"Acc": 0.375}},
    }
    path = tmp_path / "curve.png"
    plot_curve(result, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
