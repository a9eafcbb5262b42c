"""The trade-off plot can be read: the legend and the size key sit below the axes (never over the
lower left, where failing models land), no label covers a marker or another label, and n is shown.
Checked on the drawn figure itself, on the demo's five runs and on a crowded plot."""

from __future__ import annotations

import math

import pytest
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from diaforge.eval.tradeoff_plot import SIZE_KEY, plot_tradeoff, tradeoff_figure

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def point(acc: float, tar: float, ftr: float, n: int = 40) -> dict:
    return {"dynamic": {"Acc": acc, "TAR": tar, "FTR": ftr, "n": n}}


# The demo's five runs (outputs/demo/report.json) ...
DEMO = [
    ("base", point(0.0, 1.0, 0.0)),
    ("tuned", point(0.1, 0.275, 0.45)),
    ("name-overlap (floor)", point(0.375, 0.35, 0.25)),
    ("random (floor)", point(0.1, 0.625, 0.25)),
    ("reference (ceiling)", point(1.0, 0.0, 0.0)),
]
FLOORS = {"name-overlap (floor)", "random (floor)", "reference (ceiling)"}
# ... and a crowded plot: failing models at the lower left, a huge marker over a small one, two
# runs on one spot, a long label at the right edge, mixed modes and sizes.
CROWDED = [
    ("base", point(0.0, 1.0, 0.0)),
    ("fails-everything", point(0.0, 1.0, 1.6)),
    ("asks-forever", point(0.02, 0.97, 0.1, n=12)),
    ("tuned-a", point(0.1, 0.275, 0.45)),
    ("tuned-b", point(0.1, 0.275, 0.45)),
    ("tuned-static", {"static": {"Acc": 0.05, "TAR": 0.4, "FTR": 0.3, "n": 40}}),
    ("a-model-with-a-rather-long-name", point(0.97, 0.02, 0.0)),
]


def marker_boxes(fig, ax) -> list[Bbox]:
    """The drawn markers' boxes on the canvas, from the figure's own collections."""
    boxes = []
    for collection in ax.collections:
        for (x, y), size in zip(collection.get_offsets(), collection.get_sizes(), strict=True):
            cx, cy = ax.transData.transform((x, y))
            r = math.sqrt(size) / 2 * fig.dpi / 72
            boxes.append(Bbox.from_extents(cx - r, cy - r, cx + r, cy + r))
    return boxes


@pytest.mark.parametrize(("points", "floors"), [(DEMO, FLOORS), (CROWDED, set())], ids=["demo", "crowded"])
def test_labels_cover_no_marker_and_no_label(points, floors) -> None:
    fig = tradeoff_figure(points, floors=floors)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    fig.canvas.draw()
    labels = [(t.get_text(), Text.get_window_extent(t, renderer)) for t in ax.texts]  # the words
    assert len(labels) == len(points)
    markers = marker_boxes(fig, ax)
    assert len(markers) == len(points)
    for i, (text, box) in enumerate(labels):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, text
        assert not any(box.overlaps(m) for m in markers), f"{text!r} covers a marker"
        assert not any(box.overlaps(other) for _, other in labels[:i]), f"{text!r} covers a label"


@pytest.mark.parametrize(("points", "floors"), [(DEMO, FLOORS), (CROWDED, set())], ids=["demo", "crowded"])
def test_legends_sit_below_the_axes(points, floors) -> None:
    fig = tradeoff_figure(points, floors=floors)
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    legends = fig.findobj(Legend)
    assert len(legends) == (2 if floors else 1)
    for legend in legends:
        assert legend.get_window_extent(renderer).y1 < frame.y0  # below the axes, over no point
    (size_key,) = [lg for lg in legends if lg.get_title().get_text() == "FTR (marker size)"]
    assert [t.get_text() for t in size_key.get_texts()] == [f"{v:g}" for v in SIZE_KEY]
    if floors:
        (kinds,) = [lg for lg in legends if lg is not size_key]
        assert [t.get_text() for t in kinds.get_texts()] == ["model", "reference policy (no model)"]


def test_n_is_shown() -> None:
    # Every point over the same n: once, in the title.
    fig = tradeoff_figure(DEMO, floors=FLOORS)
    assert fig.axes[0].get_title().endswith("n = 40 dialogues per point")
    assert all(", n=" not in t.get_text() for t in fig.axes[0].texts)
    # Different n: beside each label; a mixed-mode plot marks the static point.
    texts = {t.get_text() for t in tradeoff_figure(CROWDED).axes[0].texts}
    assert {"asks-forever, n=12", "tuned-static (static), n=40", "base, n=40"} <= texts


def test_small_markers_are_drawn_over_large_ones(tmp_path) -> None:
    fig = tradeoff_figure(CROWDED)
    ax = fig.axes[0]
    order = sorted(ax.collections, key=lambda c: c.get_zorder())
    sizes = [float(c.get_sizes()[0]) for c in order]
    assert sizes == sorted(sizes, reverse=True)  # the last drawn (on top) is the smallest
    assert plot_tradeoff(CROWDED, tmp_path / "p.png").read_bytes()[:8] == PNG_MAGIC
