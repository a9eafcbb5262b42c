"""scripts/house.py and scripts/eval_walk.py: the figures of the house (issue 27) are computed,
not asserted: rooms, the imports between them and the cycles on a miniature tree, and the walk of
one `eval run` of the reference policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _repo import ROOT

from scripts import eval_walk, house

LAYOUT = """[tool.setuptools]
package-dir = { "diaforge" = "diaforge", "diaforge.data_gen" = "data_gen", "diaforge.eval" = "eval" }
"""


def _tree(root: Path, files: dict[str, str]) -> None:
    (root / "pyproject.toml").write_text(LAYOUT)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_cycles_are_the_strongly_connected_components() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": {"e"}, "g": {"g"}}
    assert sorted(house.cycles(graph)) == [["a", "b", "c"], ["e", "f"]]


def test_picture_counts_rooms_edges_and_cycles(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "diaforge/__init__.py": "",
            "diaforge/schema.py": "X = 1\n",
            "data_gen/__init__.py": "",
            "data_gen/engine.py": "from diaforge.schema import X\nfrom diaforge.data_gen import values\n",
            "data_gen/values/__init__.py": "",
            "data_gen/values/names.py": "from diaforge.data_gen.values import described\n",
            "data_gen/values/described.py": "def f():\n    from diaforge.data_gen.values.names import g\n",
            "eval/__init__.py": "",
            "eval/cli.py": "import diaforge.schema\nimport diaforge.data_gen.engine\n",
        },
    )
    text = house.picture(tmp_path, {})
    assert "| data_gen | 5 | 5 |" in text
    assert "| eval | data_gen | 1 |" in text and "| eval | diaforge | 1 |" in text
    assert "| data_gen | diaforge | 1 |" in text
    assert "import cycles: 1\n- diaforge.data_gen.values.described <-> diaforge.data_gen.values.names" in text
    # A room drawn by prefix takes its modules out of their package's room.
    apart = house.picture(tmp_path, {"values": ("diaforge.data_gen.values",)})
    assert "| data_gen | values | 1 |" in apart


def test_room_option_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        house.main(["--room", "nameonly"])
    assert exc.value.code == 2
    assert "NAME=PREFIX" in capsys.readouterr().err


@pytest.mark.slow(reason="traces every call of an eval run that reads MiniLM from disk")
def test_walk_of_an_eval_run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = ["--", "--backend", "reference", "--limit", "1", "--modes", "static", "--no-tool-bench", "none"]
    assert eval_walk.main(["--orchestration", "eval/cli.py", *args, "--quiet"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])
    assert report["orchestration"] == ["eval/cli.py"]
    assert report["returns"] > 0 and report["files_entered_count"] == len(report["files_entered"])
    assert "eval/cli.py" not in report["files_entered"]
    assert report["files_entered_any_depth"] > report["files_entered_count"]
