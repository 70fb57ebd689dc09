"""The GPU catalog, its capacity-vs-bandwidth chart, and one page per GPU."""

from __future__ import annotations

from ...core.fmt import gb, number
from ...knowledge.kb import KnowledgeBase
from ...knowledge.schema import Gpu
from ..chart import NARROW, WIDE, Point, scatter_svg
from ..links import CHART, GPUS, Context, gpu_page
from ..text import esc, link, table
from .common import bullets, english, h1, source_line


def _tflops(v: float | None) -> str:
    return "—" if not v else f"{v / 1e12:,.0f}"


def _points(kb: KnowledgeBase) -> list[Point]:
    return [Point(g.id, g.memory / 1e9, g.memory_bandwidth / 1e12, g.vendor,
                  f"{g.name}: {g.memory / 1e9:g} GB at {g.memory_bandwidth / 1e12:g} TB/s") for g in kb.gpus.values()]


def _chart_words(zh: bool) -> dict[str, str]:
    if zh:
        return {"title": "显存容量与显存带宽", "x_label": "显存容量，GB（对数坐标）", "y_label": "显存带宽，TB/s（对数坐标）"}
    return {"title": "Memory capacity against memory bandwidth", "x_label": "memory capacity, GB (log scale)",
            "y_label": "memory bandwidth, TB/s (log scale)"}


def gpu_chart(kb: KnowledgeBase, zh: bool = False) -> str:
    """The chart as a standalone SVG file (its own colours for light and dark schemes)."""
    return scatter_svg(_points(kb), **_chart_words(zh))


def inline_chart(kb: KnowledgeBase, zh: bool = False) -> str:
    """The chart inlined in the page, in the page's colours: a wide drawing, and a narrow one for phones
    (the stylesheet shows one of them)."""
    points, words = _points(kb), _chart_words(zh)
    wide = scatter_svg(points, **words, layout=WIDE, standalone=False, css_class="gpukb-chart gpukb-chart-wide")
    narrow = scatter_svg(points, **words, layout=NARROW, standalone=False, css_class="gpukb-chart gpukb-chart-narrow")
    return '<figure class="gpukb-figure">' + (wide + narrow).replace("\n", "") + "</figure>"


def gpus_index(ctx: Context) -> str:
    kb, here = ctx.kb, GPUS
    gpus = sorted(kb.gpus.values(), key=lambda g: (g.vendor, -g.memory, g.id))
    rows = []
    for g in gpus:
        scale_up = (f"{g.scale_up_bandwidth / 1e9:,.0f} × {g.scale_up_domain}"
                    if g.scale_up and g.scale_up_bandwidth else ctx.t("PCIe only", "仅 PCIe"))
        price = f"${g.price.usd:,.0f}" if g.price else "—"
        cloud = g.cloud_price
        rows.append([link(esc(g.name), here, gpu_page(g.id)), esc(ctx.value("vendor", g.vendor)), f"{g.memory / 1e9:g}",
                     f"{g.memory_bandwidth / 1e12:.2f}", _tflops(g.bf16_flops), _tflops(g.fp8_flops), scale_up,
                     f"{g.tdp:,.0f}", price, f"${cloud.usd_per_gpu_hour:,.2f}" if cloud else "—"])
    out = h1(ctx.t("GPU catalog", "GPU 目录"))
    out += [ctx.t(f"{len(gpus)} GPUs, each from its datasheet or whitepaper (sources on its page). Memory in GB (1e9 bytes), "
                  "bandwidth in TB/s, dense tensor TFLOPS without sparsity, scale-up GB/s per direction per GPU "
                  "× the GPUs in one scale-up domain, board power in W, launch or list price in US dollars where a dated "
                  "source gives one (date on the GPU's page), and the lowest dated cloud on-demand price per GPU-hour "
                  "(every price with its date and source on the GPU's page).",
                  f"{len(gpus)} 种 GPU，数据均来自其规格书或白皮书（来源见各自页面）。显存以 GB（1e9 字节）计，带宽以 TB/s 计，"
                  "算力为不含稀疏的稠密张量 TFLOPS，卡间互联为每卡单向 GB/s × 一个互联域内的 GPU 数，功耗以 W 计，"
                  "价格为有日期来源的发布价或标价（美元，日期见 GPU 页面），云价为最低的注明日期的云按需价格"
                  "（美元/GPU 小时；每个价格的日期和来源见 GPU 页面）。"), "",
            inline_chart(kb, ctx.zh), "",
            ctx.t(f"The same chart as a {link('standalone SVG file', here, CHART)}.",
                  f"同一图表的{link('独立 SVG 文件', here, CHART)}。"), "",
            table(["GPU", ctx.t("Vendor", "厂商"), "GB", "TB/s", "BF16", "FP8", ctx.t("Scale-up", "卡间互联"), "W",
                   ctx.t("Price", "价格"), ctx.t("Cloud $/GPU-h", "云价 $/GPU 小时")], rows, "llrrrrrrrr"), ""]
    return "\n".join(out)


def _cloud_prices(ctx: Context, here: str, g: Gpu) -> list[str]:
    """Every dated cloud on-demand price of the GPU, cheapest first, each with its source: what the cost
    figures of the answers (rec.cost.*) are computed from."""
    t = ctx.t
    out = [f"## {t('Cloud prices', '云价格')}", ""]
    if not g.cloud_prices:
        return [*out, t("No dated cloud on-demand price is known for this GPU: its options carry no cost.",
                        "没有这款 GPU 的注明日期的云按需价格：它的方案不带成本。"), ""]
    rows = [[f"${p.usd_per_gpu_hour:,.2f}", esc(p.instance), str(p.gpus_per_instance), f"${p.instance_usd_per_hour:,.2f}",
             english(p.region) if ctx.zh else esc(p.region), esc(p.as_of), ctx.source(here, p.source)]
            for p in sorted(g.cloud_prices, key=lambda p: (p.usd_per_gpu_hour, p.source))]
    return [*out, t("On-demand list prices, cheapest first. Answers use the lowest (GPUs × $/GPU-hour = $/hour; "
                    "per million tokens or to train the tokens from the option's speed).",
                    "按需标价，最便宜的在前。回答采用最低价（GPU 数 × 每 GPU 小时价格 = 每小时价格；"
                    "每百万 token 或训练给定 token 的成本由方案的速度算出）。"), "",
            table([t("$/GPU-hour", "$/GPU 小时"), t("Instance", "实例"), t("GPUs", "卡数"), t("$/instance-hour", "$/实例小时"),
                   t("Region", "地区"), t("As of", "日期"), t("Source", "来源")], rows, "lrrrlll"), ""]


def gpu(ctx: Context, gpu_id: str) -> str:
    kb, here = ctx.kb, gpu_page(gpu_id)
    g = kb.gpus[gpu_id]
    t = ctx.t
    spec = [
        [t("Vendor", "厂商"), esc(ctx.value("vendor", g.vendor))], [t("Architecture", "架构"), esc(g.architecture)],
        [t("Segment", "定位"), esc(ctx.value("segment", g.segment))],
        [t("Form factor", "形态"), esc(ctx.value("form_factor", g.form_factor))],
        [t("Memory", "显存"), f"{gb(g.memory)} {esc(g.memory_type)}"],
        [t("Memory bandwidth", "显存带宽"), f"{g.memory_bandwidth / 1e12:,.2f} TB/s"],
        [t("Dense BF16", "稠密 BF16"), f"{_tflops(g.bf16_flops)} TFLOPS"],
        [t("Dense FP16", "稠密 FP16"), f"{_tflops(g.fp16_flops)} TFLOPS"],
        [t("Dense FP8", "稠密 FP8"), f"{_tflops(g.fp8_flops)} TFLOPS"],
        [t("FP32 (non-tensor)", "FP32（非 Tensor Core）"), f"{_tflops(g.fp32_flops)} TFLOPS"],
        [t("Scale-up link", "卡间互联"), ctx.interconnect(here, g.scale_up)
         + (t(f", {g.scale_up_bandwidth / 1e9:,.0f} GB/s per direction, {g.scale_up_domain} GPUs per domain",
              f"，每方向 {g.scale_up_bandwidth / 1e9:,.0f} GB/s，每个互联域 {g.scale_up_domain} 张卡")
            if g.scale_up_bandwidth else "")],
        [t("Host link", "主机链路"), ctx.interconnect(here, g.pcie)], [t("Board power", "整卡功耗"), f"{g.tdp:,.0f} W"],
        [t("Cooling", "散热"), esc(t(", ", "、").join(ctx.value("cooling", c) for c in g.cooling))],
        [t("As of", "数据日期"), esc(g.as_of)],
        [t("Version", "版本"), str(g.version)],
    ]
    if g.devices > 1 and g.devices_source:  # each die its own device: plans count devices (kb/gpus field devices)
        spec.append([t("Devices", "设备"), t(f"{g.devices} per package, planned as such: {gb(g.memory / g.devices)} each",
                                             f"每个封装 {g.devices} 个，按设备规划：每个 {gb(g.memory / g.devices)}")
                     + f" ({ctx.source(here, g.devices_source)})"])
    if g.segment == "consumer":
        spec.append([t("Plans", "规划"), t("one box of at most 8 cards (policy consumer-nodes)",
                                           "一台机器内最多 8 张卡（策略 consumer-nodes）")])
    if g.memory_bandwidth and g.bf16_flops:
        ridge = f"{g.bf16_flops / g.memory_bandwidth:,.0f} " + t("FLOP/byte", "FLOP/字节")
        spec.append([t("Ridge point (BF16)", "屋脊点（BF16）"), ridge])
    if g.price:
        kind = esc(ctx.value("price_kind", g.price.kind))
        spec.append([t("Price", "价格"), f"${g.price.usd:,.0f} {kind}, {esc(g.price.as_of)} "
                                         f"({ctx.source(here, g.price.source)})"])
    out = h1(g.name, g.id)
    out += [table([t("Specification", "规格"), t("Value", "值")], spec), ""]
    out += _cloud_prices(ctx, here, g)
    if g.notes:
        out += [f"## {t('Notes', '说明')} {{#notes}}", "", ctx.note(here, g), ""]
    out += [f"## {t('Sources', '来源')}", "", bullets(source_line(ctx, here, s) for s in g.sources), "",
            f"## {t('In the scenarios', '在各场景中')}", ""]
    roles = ctx.gpu_roles.get(gpu_id, [])
    if roles:
        rows = []
        for role in roles:
            o = role.option
            if role.rank is None:
                reason = next((f for f in o.findings if f.severity == "error"), None)
                verdict = t("rejected", "被排除") + (t(": ", "：") + esc(reason.text(ctx.lang)) if reason else "")
            else:
                verdict = (t("**recommended**", "**推荐**") if role.rank == 1
                           else t(f"option {role.rank} of {len(role.run.answer.options)}",
                                  f"{len(role.run.answer.options)} 个方案中的第 {role.rank} 个"))
            rows.append([ctx.scenario(here, role.run), verdict, str(o.count), f"{gb(o.per_gpu_bytes)} / {gb(o.usable_bytes)}",
                         number(o.tokens_per_s) if o.tokens_per_s else "—"])
        out += [table([t("Scenario", "场景"), t("Place", "位置"), t("GPUs", "卡数"), t("Memory per GPU", "每卡显存"),
                       t("Tokens/s", "tokens/s")], rows, "llrrr"), ""]
    else:
        out += [t("No scenario considered this GPU.", "没有场景考虑这款 GPU。"), ""]
    return "\n".join(out)
