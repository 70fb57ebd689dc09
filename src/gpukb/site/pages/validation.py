"""The accuracy page: every published measurement in kb/measurements/ against gpukb's prediction,
as a log–log picture with the ±25% band and a table with the sources, rebuilt from `validate()` on
every build."""

from __future__ import annotations

import math
from statistics import median

from ...core.words import term
from ...estimate.validation import BAND, FOOTPRINTS, KIND_OF, Point, Validation
from ..links import VALIDATION, Context
from ..text import code, esc, html_text, table
from .common import english, h1

# the picture: both axes relative to the median measured value of each point's quantity, so tokens/s,
# bytes and hours share one chart and the diagonal means "predicted = measured"
SIZE, PAD = 560, 56
COLOURS = {"training": "#1f77b4", "decode": "#d62728", "memory": "#2ca02c", "rl": "#9467bd", "energy": "#ff7f0e",
           "load": "#8c564b"}


def _scaled(points: list[Point]) -> list[tuple[float, float, Point]]:
    # only points with a ratio: a wrong measurement (validation marks it invalid) has no logarithm to plot
    shown = [p for p in points if p.ratio is not None and p.predicted is not None]
    medians = {q: median(p.measured for p in shown if p.quantity == q) for q in {p.quantity for p in shown}}
    scaled = [(p.measured / medians[p.quantity], p.predicted / medians[p.quantity], p) for p in shown]
    return [(x, y, p) for x, y, p in scaled if all(math.isfinite(v) and v > 0 for v in (x, y))]


def accuracy_svg(v: Validation, *, title: str, x_label: str, y_label: str) -> str:
    """Predicted against measured on log axes, the ±25% band shaded; every text escaped."""
    scaled = _scaled(v.points)
    if not scaled:
        return ""
    low = math.floor(math.log10(min(min(x, y) for x, y, _ in scaled)))
    high = math.ceil(math.log10(max(max(x, y) for x, y, _ in scaled)))
    high = max(high, low + 1)
    span, plot = high - low, SIZE - 2 * PAD

    def pos(value: float, *, vertical: bool) -> float:
        frac = (math.log10(value) - low) / span
        return PAD + (1 - frac) * plot if vertical else PAD + frac * plot

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {SIZE} {SIZE}" role="img" '
           f'aria-label="{html_text(title)}" font-family="sans-serif" font-size="12" fill="currentColor" '
           f'style="max-width:100%;height:auto">', f"<title>{html_text(title)}</title>"]
    lo, hi = 10.0**low, 10.0**high
    band = [(lo, lo * (1 - BAND)), (hi, hi * (1 - BAND)), (hi, hi * (1 + BAND)), (lo, lo * (1 + BAND))]
    out.append('<polygon fill="currentColor" fill-opacity="0.12" points="'
               + " ".join(f"{pos(x, vertical=False):.1f},{pos(min(max(y, lo), hi), vertical=True):.1f}" for x, y in band)
               + '"/>')
    out.append(f'<line x1="{pos(lo, vertical=False):.1f}" y1="{pos(lo, vertical=True):.1f}" '
               f'x2="{pos(hi, vertical=False):.1f}" y2="{pos(hi, vertical=True):.1f}" stroke="currentColor" '
               'stroke-opacity="0.5" stroke-dasharray="4 3"/>')
    for k in range(low, high + 1):
        tick, label = 10.0**k, f"10^{k}" if abs(k) > 2 else f"{10.0**k:g}"
        x, y = pos(tick, vertical=False), pos(tick, vertical=True)
        out += [f'<line x1="{x:.1f}" y1="{PAD}" x2="{x:.1f}" y2="{SIZE - PAD}" stroke="currentColor" stroke-opacity="0.1"/>',
                f'<line x1="{PAD}" y1="{y:.1f}" x2="{SIZE - PAD}" y2="{y:.1f}" stroke="currentColor" stroke-opacity="0.1"/>',
                f'<text x="{x:.1f}" y="{SIZE - PAD + 16}" text-anchor="middle">{html_text(label)}</text>',
                f'<text x="{PAD - 6}" y="{y + 4:.1f}" text-anchor="end">{html_text(label)}</text>']
    out += [f'<text x="{SIZE / 2}" y="{SIZE - 12}" text-anchor="middle">{html_text(x_label)}</text>',
            f'<text transform="translate(14 {SIZE / 2}) rotate(-90)" text-anchor="middle">{html_text(y_label)}</text>']
    for x, y, p in scaled:
        colour = COLOURS[KIND_OF[p.quantity]]
        cx, cy = pos(min(max(x, lo), hi), vertical=False), pos(min(max(y, lo), hi), vertical=True)
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{colour}" fill-opacity="0.8">'
                   f"<title>{html_text(f'{p.id}: {p.quantity}, predicted / measured = {p.ratio:.2f}')}</title></circle>")
    for i, (kind, colour) in enumerate(COLOURS.items()):
        out.append(f'<circle cx="{PAD + 10}" cy="{PAD + 12 + 16 * i}" r="4" fill="{colour}"/>'
                   f'<text x="{PAD + 20}" y="{PAD + 16 + 16 * i}">{html_text(kind)}</text>')
    out.append("</svg>")
    return "".join(out)


def _number(x: float) -> str:
    return f"{x:,.4g}"


def _bands_section(ctx: Context, v: Validation) -> list[str]:
    """The error bands answers carry, drawn from these points, and their held-out coverage."""
    if v.bands is None:
        return []
    t, cal = ctx.t, v.bands.calibration
    rows = []
    for (field, task, regime), b in sorted(v.bands.table.items()):
        spread = f"{b.ratios[0]:.2f}–{b.ratios[1]:.2f}" if b.banded else t("too few points", "点数不足")
        shown = t(regime, ctx.value("regime", regime)) if regime else t("all", "全部")
        rows.append([code(field), esc(t(task, term("zh", task))), esc(shown), str(b.points), str(b.sources), spread,
                     "—" if b.bias is None else f"{b.bias:.2f}"])
    held = [[code(f), f"{i} / {n}", f"{i / n:.0%}"] for f, (i, n) in cal.checked.items()]
    return [f"## {t('Error bands', '误差范围')} {{#bands}}", "",
            t(f"Each predicted number of an answer carries the {cal.coverage:.0%} central interval of predicted ÷ "
              "measured over the points of its quantity (split-conformal order statistics), and its regime's own "
              "where the regime has enough points, widened to hold 1 so that every band holds its own estimate (the "
              "bias, the median ratio, says which way the points lean); a quantity with too few points has no band. "
              "Calibration: each "
              f"source's points against bands drawn from the other sources only: **{cal.inside} of {cal.total}** "
              f"({cal.share:.1%}) fall inside.",
              f"答案中的每个预测数值都带有其所属量各点的 预测 ÷ 实测 的 {cal.coverage:.0%} 中心区间（分割共形次序统计量），"
              f"点数足够的区间（`regime`）有自己的范围，并扩展到包含 1，使每个范围都包含其估计值"
              f"（偏差即比值的中位数，表明各点偏向哪一侧）；点数不足的量不给范围。校准：每个来源的点用其他来源的点得到的范围检验，"
              f"**{cal.total} 个中有 {cal.inside} 个**（{cal.share:.1%}）落在范围内。"), "",
            table([t("field", "字段"), t("task", "任务"), t("regime", "区间"), t("points", "点数"), t("sources", "来源数"),
                   t("interval", "区间"), t("bias (median)", "偏差（中位数）")], rows, "lllrrrr"), "",
            table([t("field", "字段"), t("held-out points inside", "留出点落在范围内"), t("share", "比例")], held, "lrr"), ""]


def validation(ctx: Context, v: Validation) -> str:
    kb, t, here = ctx.kb, ctx.t, VALIDATION
    o = v.overall
    verdict = t("passes", "通过") if v.passed else t("fails", "未通过")
    out = h1(t("Accuracy against published measurements", "与公开实测数据的对比"))
    f = v.footprints
    out += [t(f"Every point below is a published measurement of a real run (kb/measurements/), predicted by "
              f"`ask()` with the run's setup. Over the performance points: median error **{o.median_error:.1%}**, "
              f"**{o.inside} of {o.points}** points ({o.within_25:.1%}) within ±25%; the gate in the policies {verdict}.",
              f"下列每个点都是真实运行的公开实测值（kb/measurements/），由 `ask()` 按其配置预测。中位误差 "
              f"**{o.median_error:.1%}**（性能点），{o.points} 个点中 **{o.inside} 个**（{o.within_25:.1%}）落在 ±25% 以内；"
              f"策略中的门槛{verdict}。"),
            "", t(f"A run's energy and CO₂ ({', '.join(FOOTPRINTS)}) are derived from the same run's GPU-hours, "
                  f"already a point: they are not in the median, which would count that run again, but gated on "
                  f"their own (policy validation-footprint-within-25): **{f.inside} of {f.points}** within ±25%.",
                  f"训练的能耗与 CO₂（{'、'.join(FOOTPRINTS)}）由同一次运行的 GPU 小时推出，而 GPU 小时已是一个点："
                  f"计入中位误差会重复计算这次运行，因此单独设门槛（策略 validation-footprint-within-25）："
                  f"{f.points} 个中 **{f.inside} 个**落在 ±25% 以内。"),
            "", accuracy_svg(v, title=t("Predicted against measured", "预测值与实测值"),
                             x_label=t("measured ÷ median of its quantity", "实测值 ÷ 同类量的中位数"),
                             y_label=t("predicted ÷ the same", "预测值 ÷ 同一中位数")), "",
            t("The shaded band is ±25%; the dashed line is predicted = measured.",
              "阴影带为 ±25%，虚线表示预测值等于实测值。"), ""]
    rows = [[code(q), str(s.points), f"{s.median_error:.1%}" if math.isfinite(s.median_error) else "∞",
             f"{s.inside} ({s.within_25:.1%})"] for q, s in v.by_quantity.items()]
    out += [table([t("quantity", "量"), t("points", "点数"), t("median error", "中位误差"), t("within ±25%", "±25% 以内")],
                  rows, "lrrr"), ""]
    out += _bands_section(ctx, v)
    point_rows = []
    for p in v.points:
        m = kb.measurements[p.id]
        ratio = t("miss", "无预测") if p.ratio is None else f"{p.ratio:.2f}"
        missed = esc(p.reason) if not ctx.zh else "没有预测：" + english(p.reason)  # the engine's own error, in English
        why = missed if p.ratio is None else ", ".join(ctx.rule(here, r) for r in p.rules)
        point_rows.append([esc(m.title), _number(m.value) + " " + esc(t(m.unit, ctx.value("unit", m.unit))),
                           _number(p.measured), "—" if p.predicted is None else _number(p.predicted), ratio,
                           ctx.source(here, m.source) + " · " + (english(m.locator) if ctx.zh else esc(m.locator)), why])
    out += [f"## {t('Every point', '全部数据点')}", "",
            t("Measured and predicted in the quantity's canonical unit (tokens/s, FLOP/s, hours, seconds, bytes).",
              "实测值与预测值均为该量的标准单位（tokens/s、FLOP/s、小时、秒、字节）。"), "",
            table([t("run", "运行"), t("as published", "原文数值"), t("measured", "实测"), t("predicted", "预测"),
                   t("ratio", "比值"), t("source", "来源"), t("rules", "规则")], point_rows, "lrrrrll"), ""]
    return "\n".join(out)
