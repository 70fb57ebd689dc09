"""The first option's latency against the request rate (gpukb.estimate.load.curve): P50 and P99 of the time to the
first token and per output token, the knee (the replicas' capacity) marked; drawn in characters within the
terminal's width (`gpukb ask --plot`), or as SVG (`--plot-svg FILE`, and the site's scenario pages)."""

from __future__ import annotations

import math
from html import escape

from ..core.fmt import Lang
from ..estimate.load import Curve

HEIGHT = 8  # rows of one panel
PANELS = (("ttft", "TTFT", "首 token 时间"), ("tpot", "TPOT", "每 token 时间"))


def _scale(values: list[float]) -> tuple[float, float]:
    """Log10 bounds of the finite, positive values (a decade at least)."""
    finite = [math.log10(v) for v in values if v > 0 and math.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    return (low, high) if high - low >= 1e-9 else (low - 0.5, high + 0.5)


def terminal(c: Curve, width: int, lang: Lang = "en") -> str:
    """Two panels of text, each HEIGHT rows, at most `width` columns: 'o' P50, '*' P99, '|' the knee, '^' the rate
    asked."""
    zh = lang == "zh"
    label_w = 9
    cols = max(16, min(width, 100) - label_w - 1)
    top = c.rates[-1]

    def column(rate: float) -> int:
        return min(cols - 1, max(0, round(rate / top * (cols - 1))))

    lines = [f"{c.gpu} x{c.count}: " + ("延迟与请求速率" if zh else "latency against request rate"),
             "o P50  * P99  | 拐点（队列开始增长）  ^ 所问速率" if zh else
             "o P50  * P99  | knee: the queue grows  ^ rate asked"]
    for key, name, name_zh in PANELS:
        p50, p99 = [v * 1000 for v in getattr(c, f"{key}_p50_s")], [v * 1000 for v in getattr(c, f"{key}_p99_s")]
        low, high = _scale(p50 + p99)
        grid = [[" "] * cols for _ in range(HEIGHT)]
        knee = column(c.knee)
        for row in grid:
            row[knee] = "|"
        for values, mark in ((p50, "o"), (p99, "*")):
            for rate, v in zip(c.rates, values, strict=True):
                if v > 0 and math.isfinite(v):
                    row = HEIGHT - 1 - round((math.log10(v) - low) / (high - low) * (HEIGHT - 1))
                    grid[row][column(rate)] = mark
        lines.append(f"{name_zh if zh else name} (ms)")
        for i, row in enumerate(grid):
            tick = 10 ** (high - (high - low) * i / (HEIGHT - 1))
            label = f"{tick:,.1f}" if i in (0, HEIGHT - 1) else ""
            lines.append(f"{label:>{label_w}}|" + "".join(row))
        axis = [" "] * cols
        if c.asked:
            axis[column(c.asked)] = "^"
        lines.append(" " * label_w + "+" + "".join(axis))
    end = f"{top:,.1f} " + ("个请求/秒" if zh else "requests/s")
    knee_text = (f"拐点 {c.knee:,.1f}" if zh else f"knee {c.knee:,.1f}")
    lines.append(" " * (label_w + 1) + "0" + knee_text.center(max(0, cols - len(end) - 1)) + end)
    return "\n".join(lines)


def svg(c: Curve, lang: Lang = "en") -> str:
    """The same two panels as an SVG document (640 x 420), log-scaled latency against a linear rate."""
    zh = lang == "zh"
    w, h, pad = 640, 420, 56
    panel_h = (h - 3 * pad / 2) / 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{pad}" y="18">{escape(c.gpu)} x{c.count}: '
           f'{"延迟与请求速率" if zh else "latency against request rate"}</text>']
    top = c.rates[-1]

    def x(rate: float) -> float:
        return pad + rate / top * (w - 2 * pad)

    for n, (key, name, name_zh) in enumerate(PANELS):
        y0 = pad / 2 + 12 + n * (panel_h + pad / 2)
        p50, p99 = [v * 1000 for v in getattr(c, f"{key}_p50_s")], [v * 1000 for v in getattr(c, f"{key}_p99_s")]
        low, high = _scale(p50 + p99)

        def y(v: float, y0: float = y0, low: float = low, high: float = high) -> float:
            return y0 + panel_h - (math.log10(v) - low) / (high - low) * panel_h

        out.append(f'<rect x="{pad}" y="{y0:.1f}" width="{w - 2 * pad}" height="{panel_h:.1f}" fill="none" stroke="#999"/>')
        out.append(f'<text x="4" y="{y0 + 12:.1f}">{escape(name_zh if zh else name)} ms</text>')
        out.append(f'<text x="4" y="{y0 + 28:.1f}">{10 ** high:,.1f}</text>'
                   f'<text x="4" y="{y0 + panel_h:.1f}">{10 ** low:,.1f}</text>')
        for values, colour, label in ((p50, "#1f77b4", "P50"), (p99, "#d62728", "P99")):
            points = " ".join(f"{x(r):.1f},{y(v):.1f}" for r, v in zip(c.rates, values, strict=True)
                              if v > 0 and math.isfinite(v))
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2">'
                       f'<title>{label}</title></polyline>')
        out.append(f'<line x1="{x(c.knee):.1f}" y1="{y0:.1f}" x2="{x(c.knee):.1f}" y2="{y0 + panel_h:.1f}" '
                   'stroke="#555" stroke-dasharray="4 3"/>')
    base = h - pad / 2
    knee = f"拐点 {c.knee:,.1f}" if zh else f"knee {c.knee:,.1f}"
    out.append(f'<text x="{x(c.knee):.1f}" y="{base:.1f}" text-anchor="middle">{escape(knee)}</text>')
    out.append(f'<text x="{w - pad}" y="{base + 16:.1f}" text-anchor="end">'
               f'{escape(f"{top:,.1f} " + ("个请求/秒" if zh else "requests/s"))}</text>')
    out.append('<text x="{0}" y="{1:.1f}" fill="#1f77b4">P50</text><text x="{2}" y="{1:.1f}" fill="#d62728">P99</text>'
               .format(pad, base + 16, pad + 40))
    out.append("</svg>")
    return "\n".join(out) + "\n"
