"""The trade-off plot of the paper's Figure 3: x = 1 − TAR, y = Acc, one point per run, its colour
and marker size growing with FTR.

Made to be read: the legend (the kinds of point and a key to marker size) sits below the axes,
never over a point (a failing model lands at the lower left, where a legend inside the axes would
sit); each label is placed beside its marker where it covers no marker and no other label; the
number of dialogues behind each point is shown (in the title when every point has the same).
`tradeoff_figure` draws on the Agg canvas directly, so pyplot's global state is never touched.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from diaforge.eval.tables import DOWN, UP, mode_metrics

#: The FTR values the marker-size key shows.
SIZE_KEY = (0.0, 0.5, 1.0)
LABEL_FONT = 8
LABEL_GAP_PT = 3.0  # between a marker's edge and its label


def marker_size(ftr: float) -> float:
    """Marker area (points²) for a false tool-call rate: grows with FTR, capped at FTR 2."""
    return 60 + 900 * min(max(ftr, 0.0), 2.0)


def _plot_metrics(metrics: Mapping[str, Any]) -> tuple[str | None, Mapping[str, Any]]:
    """(mode, flat metrics) of a point: dynamic if present, else static; a flat dict as is."""
    if "Acc" in metrics:
        return None, metrics
    for mode in ("dynamic", "static"):
        m = mode_metrics(metrics, mode)
        if m is not None:
            return mode, m
    raise ValueError("metrics hold neither 'static' nor 'dynamic' results")


def plot_tradeoff(
    points: Sequence[tuple[str, Mapping[str, Any]]],
    path: str | Path,
    *,
    floors: Collection[str] = (),
) -> Path:
    """`tradeoff_figure` saved as a PNG at `path`."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tradeoff_figure(points, floors=floors).savefig(out, format="png", bbox_inches="tight")
    return out


def tradeoff_figure(points: Sequence[tuple[str, Mapping[str, Any]]], *, floors: Collection[str] = ()) -> Any:
    """Figure 3 for (label, metrics) pairs. Metrics are a ``metrics.json``-like dict (dynamic used if
    present, else static, marked "(static)" when the plot mixes modes) or one mode's flat dict.
    Points whose label is in `floors` (reference policies) are drawn as squares with a dashed edge,
    the models as circles. Returns the matplotlib `Figure` (on an Agg canvas)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    resolved = [(label, *_plot_metrics(metrics)) for label, metrics in points]
    modes = {mode for _, mode, _ in resolved}
    xs = [1.0 - float(m["TAR"]) for _, _, m in resolved]
    ys = [float(m["Acc"]) for _, _, m in resolved]
    ftr = [float(m["FTR"]) for _, _, m in resolved]
    ns = [m.get("n") for _, _, m in resolved]
    is_floor = [label in floors for label, _, _ in resolved]

    fig = Figure(figsize=(7.2, 6.6), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    scatter = _scatter(ax, xs, ys, ftr, is_floor)
    fig.colorbar(scatter, ax=ax, label=f"FTR ({DOWN}): colour and marker size")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(f"1 − TAR ({UP})")
    ax.set_ylabel(f"Acc ({UP})")
    ax.set_title(_title(modes, ns), fontsize=11)
    ax.grid(True, linestyle="--", alpha=0.4)
    _legend(ax, any(is_floor))
    same_n = len(set(ns)) == 1
    texts = [
        _label_text(label, mode, modes, None if same_n else n)
        for (label, mode, _), n in zip(resolved, ns, strict=True)
    ]
    place_labels(fig, ax, texts, xs, ys, [marker_size(f) for f in ftr])
    return fig


def _title(modes: set, ns: list) -> str:
    which = "dynamic" if modes == {"dynamic"} else "static" if modes == {"static"} else None
    title = (
        f"Tool-call trade-offs ({which} evaluation)"
        if which
        else "Tool-call trade-offs (dynamic evaluation where run, else static)"
    )
    if len(set(ns)) == 1 and ns[0] is not None:
        title += f"\nn = {ns[0]} dialogue{'s' if ns[0] != 1 else ''}" + (" per point" if len(ns) > 1 else "")
    return title


def _label_text(label: str, mode: str | None, modes: set, n: int | None) -> str:
    text = f"{label} (static)" if mode == "static" and len(modes) > 1 else label
    return f"{text}, n={n}" if n is not None else text


def _scatter(ax: Any, xs: list[float], ys: list[float], ftr: list[float], is_floor: list[bool]) -> Any:
    """The points: models as circles, reference policies as dashed squares; size and colour by FTR.
    Larger markers are drawn first, so a small one on the same spot stays in sight. Returns one
    drawn collection (for the colour bar)."""
    from matplotlib.colors import Normalize

    norm = Normalize(vmin=0.0, vmax=max([1.0, *ftr]))
    scatter = None
    for layer, i in enumerate(sorted(range(len(xs)), key=lambda i: -ftr[i])):
        scatter = ax.scatter(
            [xs[i]],
            [ys[i]],
            s=[marker_size(ftr[i])],
            c=[ftr[i]],
            cmap="plasma",
            norm=norm,
            alpha=0.8,
            marker="s" if is_floor[i] else "o",
            edgecolors="black",
            linestyles="dashed" if is_floor[i] else "solid",
            zorder=3 + layer / (len(xs) + 1),
        )
    return scatter


def _legend(ax: Any, has_floors: bool) -> None:
    """Below the axes: the kinds of point (when reference policies are drawn), and a key to marker
    size in FTR."""
    from matplotlib.lines import Line2D

    def handle(marker: str, size: float, style: str = "solid") -> Line2D:
        return Line2D(
            [],
            [],
            linestyle="none",
            marker=marker,
            markersize=math.sqrt(size),
            markerfacecolor="#d9d9d9",
            markeredgecolor="black",
            fillstyle="full",
        )

    common = {"frameon": False, "fontsize": LABEL_FONT, "handletextpad": 0.5, "borderaxespad": 0.0}
    if has_floors:
        kinds = ax.legend(
            [handle("o", marker_size(0.0)), handle("s", marker_size(0.0))],
            ["model", "reference policy (no model)"],
            loc="upper left",
            bbox_to_anchor=(0.0, -0.12),
            **common,
        )
        ax.add_artist(kinds)
    widest = math.sqrt(marker_size(max(SIZE_KEY))) / LABEL_FONT  # the handle box fits the largest marker
    ax.legend(
        [handle("o", marker_size(v)) for v in SIZE_KEY],
        [f"{v:g}" for v in SIZE_KEY],
        title="FTR (marker size)",
        title_fontsize=LABEL_FONT,
        loc="upper right" if has_floors else "upper center",
        bbox_to_anchor=(1.0, -0.12) if has_floors else (0.5, -0.12),
        ncol=len(SIZE_KEY),
        handlelength=widest,
        handleheight=widest,
        columnspacing=1.0,
        **common,
    )


def place_labels(
    fig: Any, ax: Any, texts: Sequence[str], xs: Sequence[float], ys: Sequence[float], sizes: Sequence[float]
) -> list[Any]:
    """Label each point beside its marker (area `sizes`, points²): to its right, left, above or
    below, or a little further down or up, else further out with a leader line, at the first place
    that stays in the axes and covers no marker and no label already placed (the first place when
    none is free). Returns the annotations."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72.0
    frame = ax.get_window_extent(renderer)
    centres = [ax.transData.transform((x, y)) for x, y in zip(xs, ys, strict=True)]
    markers = [
        Bbox.from_extents(cx - r, cy - r, cx + r, cy + r)
        for (cx, cy), r in ((c, math.sqrt(s) / 2 * px_per_pt) for c, s in zip(centres, sizes, strict=True))
    ]
    placed: list[Any] = []
    annotations = []
    for text, x, y, size in zip(texts, xs, ys, sizes, strict=True):
        chosen = None
        gap = math.sqrt(size) / 2 + LABEL_GAP_PT
        for spot, (dx, dy, ha, va) in enumerate(_spots(gap)):
            far = spot >= 4  # not beside the marker: a leader line to the point
            ann = ax.annotate(
                text,
                (x, y),
                xytext=(dx, dy),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=LABEL_FONT,
                zorder=5,  # over the markers: a leader line crossing a large one stays in sight
                arrowprops={"arrowstyle": "-", "color": "0.2", "linewidth": 0.7} if far else None,
            )
            ann.update_positions(renderer)
            box = Text.get_window_extent(ann, renderer)  # the words, without the leader line
            free = frame.containsx(box.x0) and frame.containsx(box.x1) and frame.containsy(box.y0)
            free = free and frame.containsy(box.y1) and not any(box.overlaps(b) for b in (*markers, *placed))
            if free or chosen is None:
                if chosen is not None:
                    chosen[0].remove()
                chosen = (ann, box)
                if free:
                    break
            else:
                ann.remove()
        placed.append(chosen[1])
        annotations.append(chosen[0])
    return annotations


def _spots(gap: float) -> list[tuple[float, float, str, str]]:
    """Label offsets (points) and alignments around a marker whose edge is `gap` from its centre:
    the first four beside it; the others, a little further up or down, then further out in eight
    directions, are drawn with a leader line (`place_labels`)."""
    line = LABEL_FONT * 1.4
    spots = [(gap, 0.0, "left", "center"), (-gap, 0.0, "right", "center")]
    spots += [(0.0, gap, "center", "bottom"), (0.0, -gap, "center", "top")]
    for k in (1, 2, 3):
        for dy in (-k * line, k * line):
            spots += [(gap + line, dy, "left", "center"), (-gap - line, dy, "right", "center")]
    for reach in (20.0, 40.0, 60.0, 90.0):
        for ux, uy in ((1, 1), (1, 0), (1, -1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1)):
            ha = "left" if ux > 0 else "right" if ux < 0 else "center"
            va = "bottom" if uy > 0 else "top" if uy < 0 else "center"
            spots.append(((gap + reach) * ux, (gap + reach) * uy, ha, va))
    return spots
