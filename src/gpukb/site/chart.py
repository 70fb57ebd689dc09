"""A labelled scatter plot on log-2 axes, as SVG (no plotting library, no JavaScript).

Text, axes and grid are drawn in `currentColor`, so an SVG inlined in a page takes the page's text
colour in light and dark mode; a standalone file carries its own colours for both schemes. Labels
never overlap each other, a point or the legend: a label with no free spot is left out (its point
keeps a tooltip, and the page's table lists every GPU).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .text import esc_spaced, html_text

FONT = 11
CHAR_W = 6.4  # an upper bound on one character's width at FONT px, for label placement
COLOURS = {"nvidia": "#5f9e00", "amd": "#e0301e", "intel": "#2a7fd4"}
OTHER = "#8a8a8a"


@dataclass(frozen=True)
class Layout:
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    legend_right: bool  # the legend beside the plot (wide) or above it (narrow)


WIDE = Layout(860, 560, 80, 180, 50, 60, True)
NARROW = Layout(380, 480, 46, 12, 66, 52, False)  # a phone's width: drawn at about 1:1


@dataclass(frozen=True)
class Point:
    label: str
    x: float
    y: float
    group: str
    tooltip: str = ""


def _ticks(low: float, high: float) -> list[float]:
    return [2.0**e for e in range(math.floor(math.log2(low)), math.ceil(math.log2(high)) + 1)]


def _fmt(v: float) -> str:
    return f"{v:g}"


_STANDALONE_STYLE = ("<style>svg{color:#1f1f1f}@media (prefers-color-scheme: dark)"
                     "{svg{color:#e2e4e9;background:#1e2129}}</style>")


def scatter_svg(points: list[Point], *, title: str, x_label: str, y_label: str, layout: Layout = WIDE,
                standalone: bool = True, css_class: str = "") -> str:
    """An SVG element (with its XML namespace, so it is also a standalone document); all text escaped."""
    if not points:
        raise ValueError("no points to plot")
    L = layout
    xs, ys = [p.x for p in points], [p.y for p in points]
    x_ticks, y_ticks = _ticks(min(xs), max(xs)), _ticks(min(ys), max(ys))
    x0, x1 = math.log2(x_ticks[0]), math.log2(x_ticks[-1])
    y0, y1 = math.log2(y_ticks[0]), math.log2(y_ticks[-1])
    plot_w, plot_h = L.width - L.left - L.right, L.height - L.top - L.bottom

    def px(v: float) -> float:
        return L.left + (math.log2(v) - x0) / max(x1 - x0, 1e-9) * plot_w

    def py(v: float) -> float:
        return L.top + plot_h - (math.log2(v) - y0) / max(y1 - y0, 1e-9) * plot_h

    size = f'width="{L.width}" height="{L.height}" ' if standalone else ""
    cls = f' class="{html_text(css_class)}"' if css_class else ""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {L.width} {L.height}" {size}role="img"{cls} '
        f'aria-label="{html_text(title)}" font-family="sans-serif" font-size="{FONT}" fill="currentColor">',
        f"<title>{esc_spaced(title)}</title>",
    ]
    if standalone:
        out.append(_STANDALONE_STYLE)
    out.append(f'<text x="{8 if not L.legend_right else L.left}" y="18" font-size="14" font-weight="bold">'
               f"{esc_spaced(title)}</text>")
    for t in x_ticks:
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{L.top}" x2="{x:.1f}" y2="{L.top + plot_h}" stroke="currentColor" '
                   'stroke-opacity="0.15"/>')
        out.append(f'<text x="{x:.1f}" y="{L.top + plot_h + 16}" text-anchor="middle">{esc_spaced(_fmt(t))}</text>')
    for t in y_ticks:
        y = py(t)
        out.append(f'<line x1="{L.left}" y1="{y:.1f}" x2="{L.left + plot_w}" y2="{y:.1f}" stroke="currentColor" '
                   'stroke-opacity="0.15"/>')
        out.append(f'<text x="{L.left - 6}" y="{y + 4:.1f}" text-anchor="end">{esc_spaced(_fmt(t))}</text>')
    out.append(f'<rect x="{L.left}" y="{L.top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="currentColor" '
               'stroke-opacity="0.6"/>')
    out.append(f'<text x="{L.left + plot_w / 2:.1f}" y="{L.height - 12}" text-anchor="middle">{esc_spaced(x_label)}</text>')
    out.append(f'<text transform="translate(14 {L.top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{esc_spaced(y_label)}</text>")

    placed: list[tuple[float, float, float, float]] = [
        (px(p.x) - 5, py(p.y) - 5, px(p.x) + 5, py(p.y) + 5) for p in points]
    groups = sorted({p.group for p in points})
    for i, group in enumerate(groups):
        if L.legend_right:
            x, y = L.width - L.right + 100, L.top + 10 + 18 * i
        else:
            x, y = 14 + 90 * i, 40
        out.append(f'<circle cx="{x}" cy="{y}" r="5" fill="{COLOURS.get(group, OTHER)}"/>')
        out.append(f'<text x="{x + 10}" y="{y + 4}">{esc_spaced(group)}</text>')

    def free(box: tuple[float, float, float, float]) -> bool:
        a0, b0, a1, b1 = box
        if a0 < L.left + 1 or a1 > L.left + plot_w - 1 or b0 < L.top + 1 or b1 > L.top + plot_h - 1:
            return False
        return all(a1 <= c0 or a0 >= c1 or b1 <= d0 or b0 >= d1 for c0, d0, c1, d1 in placed)

    for p in sorted(points, key=lambda p: (p.x, p.y, p.label)):
        cx, cy = px(p.x), py(p.y)
        colour = COLOURS.get(p.group, OTHER)
        tip = f"<title>{esc_spaced(p.tooltip or p.label)}</title>"
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{colour}" stroke="currentColor" '
                   f'stroke-width="0.6">{tip}</circle>')
        w = len(p.label) * CHAR_W
        spots = [(cx + 7, cy + 4, "start"), (cx - 7, cy + 4, "end")]
        spots += [(cx + 7, cy + 4 + d, "start") for d in (-12, 12, -24, 24, -36, 36)]
        spots += [(cx - 7, cy + 4 + d, "end") for d in (-12, 12, -24, 24)]
        for tx, ty, where in spots:
            box = (tx, ty - FONT, tx + w, ty + 3) if where == "start" else (tx - w, ty - FONT, tx, ty + 3)
            if free(box):
                placed.append(box)
                out.append(f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{where}">{esc_spaced(p.label)}</text>')
                break
    out.append("</svg>")
    return "\n".join(out) + "\n"


def label_boxes(svg: str) -> list[tuple[float, float, float, float]]:
    """The boxes this module reserved for the point labels of an SVG it drew (for tests)."""
    boxes = []
    for x, y, anchor, text in re.findall(r'<text x="([\d.]+)" y="([\d.]+)" text-anchor="(start|end)">([^<]*)</text>', svg):
        w = len(text) * CHAR_W
        x0 = float(x) if anchor == "start" else float(x) - w
        boxes.append((x0, float(y) - FONT, x0 + w, float(y) + 3))
    return boxes
