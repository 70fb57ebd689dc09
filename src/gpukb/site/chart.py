"""A labelled scatter plot on log-2 axes, as standalone SVG (no plotting library, no JavaScript)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .text import html_text

WIDTH, HEIGHT = 860, 560
LEFT, RIGHT, TOP, BOTTOM = 80, 180, 50, 60
FONT = 11
CHAR_W = 6.2  # approximate width of one character at FONT px, for label placement
COLOURS = {"nvidia": "#76b900", "amd": "#ed1c24", "intel": "#0071c5"}
OTHER = "#777777"


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


def scatter_svg(points: list[Point], *, title: str, x_label: str, y_label: str) -> str:
    """An SVG document; every piece of text in it is escaped."""
    if not points:
        raise ValueError("no points to plot")
    xs, ys = [p.x for p in points], [p.y for p in points]
    x_ticks, y_ticks = _ticks(min(xs), max(xs)), _ticks(min(ys), max(ys))
    x0, x1 = math.log2(x_ticks[0]), math.log2(x_ticks[-1])
    y0, y1 = math.log2(y_ticks[0]), math.log2(y_ticks[-1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(v: float) -> float:
        return LEFT + (math.log2(v) - x0) / max(x1 - x0, 1e-9) * plot_w

    def py(v: float) -> float:
        return TOP + plot_h - (math.log2(v) - y0) / max(y1 - y0, 1e-9) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{html_text(title)}" font-family="sans-serif" font-size="{FONT}">',
        f"<title>{html_text(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="{TOP - 20}" font-size="15" font-weight="bold">{html_text(title)}</text>',
    ]
    for t in x_ticks:
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{html_text(_fmt(t))}</text>')
    for t in y_ticks:
        y = py(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{html_text(_fmt(t))}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#555555"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 15}" text-anchor="middle">{html_text(x_label)}</text>')
    out.append(f'<text transform="translate(20 {TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f"{html_text(y_label)}</text>")

    placed: list[tuple[float, float, float, float]] = [
        (px(p.x) - 4, py(p.y) - 4, px(p.x) + 4, py(p.y) + 4) for p in points]
    legend_x = WIDTH - RIGHT + 100
    for i, group in enumerate(sorted({p.group for p in points})):
        y = TOP + 10 + 18 * i
        out.append(f'<circle cx="{legend_x}" cy="{y}" r="5" fill="{COLOURS.get(group, OTHER)}"/>')
        out.append(f'<text x="{legend_x + 10}" y="{y + 4}">{html_text(group)}</text>')
        placed.append((legend_x - 6, y - 8, WIDTH, y + 8))

    def free(box: tuple[float, float, float, float]) -> bool:
        a0, b0, a1, b1 = box
        if a0 < LEFT or a1 > WIDTH - 4 or b0 < TOP or b1 > TOP + plot_h:
            return False
        return all(a1 <= c0 or a0 >= c1 or b1 <= d0 or b0 >= d1 for c0, d0, c1, d1 in placed)

    for p in sorted(points, key=lambda p: (p.x, p.y, p.label)):
        cx, cy = px(p.x), py(p.y)
        colour = COLOURS.get(p.group, OTHER)
        tip = f"<title>{html_text(p.tooltip or p.label)}</title>"
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{colour}" stroke="#222222" stroke-width="0.6">'
                   f"{tip}</circle>")
        w = len(p.label) * CHAR_W
        spots = [(cx + 7, cy + 4, "start"), (cx - 7, cy + 4, "end")]
        spots += [(cx + 7, cy + 4 + d, "start") for d in (-12, 12, -24, 24, -36, 36)]
        spots += [(cx - 7, cy + 4 + d, "end") for d in (-12, 12, -24, 24)]
        for tx, ty, where in spots:
            box = (tx, ty - FONT, tx + w, ty + 2) if where == "start" else (tx - w, ty - FONT, tx, ty + 2)
            if free(box):
                placed.append(box)
                out.append(f'<text x="{tx:.1f}" y="{ty:.1f}" text-anchor="{where}">{html_text(p.label)}</text>')
                break
        # a label with no free spot is left out; the point keeps its tooltip and the table lists it
    out.append("</svg>")
    return "\n".join(out) + "\n"
