"""Reference pages: sources, interconnects, policies, precisions and optimizers; and the pages that
include the repository's own Markdown (the changelog and the contributor guide)."""

from __future__ import annotations

import re
from collections import defaultdict

from ...core.fmt import gb
from ..links import (
    CHANGELOG,
    GLOSSARY,
    INTERCONNECTS,
    POLICIES,
    PRECISIONS,
    REPOSITORY_GUIDE,
    REPOSITORY_PAGES,
    SOURCES,
    SYSTEMS,
    Context,
)
from ..markdown import demote, repository_markdown
from ..text import code, esc, external, link, table, title_text
from .common import english, h1, quoted_en


def sources(ctx: Context) -> str:
    kb, here = ctx.kb, SOURCES
    out = h1(ctx.t("Sources", "来源"))
    out += [ctx.t("Every datasheet, paper, configuration and document the knowledge base cites, with the entries that cite it.",
                  "知识库引用的每一份规格书、论文、配置和文档，以及引用它们的条目。"), ""]
    by_kind: dict[str, list[str]] = defaultdict(list)
    for s in kb.sources.values():
        by_kind[s.kind].append(s.id)
    for kind in sorted(by_kind):
        out += [f"## {esc(ctx.t(kind.replace('_', ' ').capitalize(), ctx.value('source_kind', kind)))} {{#kind-{kind}}}", ""]
        for source_id in sorted(by_kind[kind]):
            s = kb.sources[source_id]
            users = ctx.source_users.get(source_id, [])
            out += [f"### {esc(source_id)} {{#{source_id}}}", "",
                    (external(esc(s.title), s.url) if s.url else f"{esc(s.title)} ({code(s.path)})")
                    + f" — {esc(s.publisher)}" + (f", {esc(s.as_of)}" if s.as_of else ""), ""]
            if users:
                cited = ", ".join(link(code(label), here, page) for page, label in users)
                out += [ctx.t("Cited by ", "引用者：") + cited + ".", ""]
    return "\n".join(out)


def interconnects(ctx: Context) -> str:
    kb = ctx.kb
    out = h1(ctx.t("Interconnects", "互联"))
    out += [ctx.t("Scale-up links between GPUs, host links and scale-out networks. Bandwidth is per direction.",
                  "GPU 之间的卡间互联、主机链路和跨节点网络。带宽均为单向。"), ""]
    for ic in sorted(kb.interconnects.values(), key=lambda i: (i.kind, i.bandwidth, i.id)):
        users = sorted(g.id for g in kb.gpus.values() if ic.id in (g.scale_up, g.pcie))
        out += [f"## {esc(title_text(ic.name))} {{#{ic.id}}}", "",
                f"{code(ic.id)} · {esc(ctx.t(ic.kind.replace('_', ' '), ctx.value('link_kind', ic.kind)))} · "
                f"{ic.bandwidth / 1e9:,.1f} GB/s "
                + ctx.t("per direction", "单向"), "", ctx.t("Quoted: ", "原文：") + quoted_en(ic.quoted), ""]
        if ic.notes:
            out += [ctx.note(INTERCONNECTS, ic, fragment=ic.id), ""]
        out += [ctx.t("Sources: ", "来源：") + ", ".join(ctx.source(INTERCONNECTS, s) for s in ic.sources) + ".", ""]
        if users:
            out += [ctx.t("Used by ", "使用它的 GPU：") + ", ".join(ctx.gpu(INTERCONNECTS, g) for g in users) + ".", ""]
    return "\n".join(out)


def systems(ctx: Context) -> str:
    """The machines plans are laid out on and rented as (kb/systems): one table, then each with its sources."""
    kb, here = ctx.kb, SYSTEMS
    out = h1(ctx.t("Systems", "系统"))
    out += [ctx.t("The nodes, cloud instances, servers and workstations plans run on. A plan takes whole nodes of its "
                  "GPU's system: the network between nodes (per node and direction) and the host memory bound what it "
                  "can do, and its cost is nodes × the node's lowest dated price. A system without a network keeps "
                  "plans to one node.",
                  "方案运行所用的节点、云实例、服务器和工作站。方案按 GPU 所在系统整台租用节点：节点间网络（每节点、单向）"
                  "和主机内存决定它能做什么，成本为节点数 × 该节点已知最低的注明日期价格。没有网络的系统只能单节点运行。"), ""]
    rows = []
    for s in sorted(kb.systems.values(), key=lambda s: (s.gpu, s.kind, s.id)):
        network = f"{s.network_bandwidth * 8 / 1e9:,.0f} Gb/s" if s.network_bandwidth else ctx.t("none", "无")
        price = f"${s.price.usd_per_node_hour:,.2f}" if s.price else "—"
        p2p = "—" if s.peer_to_peer is None else ctx.t("yes", "是") if s.peer_to_peer else ctx.t("no", "否")
        rows.append([link(code(s.id), here, SYSTEMS, s.id), ctx.gpu(here, s.gpu), str(s.gpus_per_node),
                     ctx.interconnect(here, s.fabric), p2p, network, gb(s.host_memory), price])
    out += [table([ctx.t("System", "系统"), "GPU", ctx.t("GPUs/node", "每节点 GPU"), ctx.t("Fabric", "节点内互联"),
                   "P2P", ctx.t("Network", "节点间网络"), ctx.t("Host memory", "主机内存"),
                   ctx.t("$/node-hour", "每节点小时美元")], rows), ""]
    for s in sorted(kb.systems.values(), key=lambda s: s.id):
        out += [f"## {esc(title_text(s.name))} {{#{s.id}}}", "",
                f"{code(s.id)} · {esc(ctx.value('system_kind', s.kind))} · {code(s.provider)}"
                + (f" · {quoted_en(s.network) if ctx.zh else esc(s.network)}" if s.network else ""), ""]
        for price in s.prices:
            out += [f"- ${price.usd_per_node_hour:,.2f} " + ctx.t("per node-hour", "每节点小时")
                    + f", {english(price.region) if ctx.zh else esc(price.region)}, {price.as_of} "
                    f"({ctx.source(here, price.source)}): {quoted_en(price.quote)}"]
        if s.prices:
            out.append("")
        if s.notes:
            out += [ctx.note(here, s, fragment=s.id), ""]
        out += [ctx.t("Sources: ", "来源：") + ", ".join(ctx.source(here, x) for x in s.sources) + ".", ""]
    return "\n".join(out)


def glossary(ctx: Context) -> str:
    """Every concept the answers use (kb/glossary): one section each, titled by its Chinese term on the Chinese
    site, with the other names readers search for it by, so that site search finds the entry from any of them."""
    t = ctx.t
    out = h1(t("Glossary", "术语表"))
    out += [t("The concepts gpukb's answers use, each with the names people search for it by (search finds the entry "
              "from any of them) and the one Chinese term gpukb's Chinese text writes for it.",
              "gpukb 回答中用到的概念，每条列出人们常用的其他叫法（用其中任何一个都能搜到这一条），"
              "以及 gpukb 中文文本统一使用的术语。"), ""]
    terms = sorted(ctx.kb.glossary.values(), key=lambda term: term.en.lower())
    index = [link(esc(term.zh if ctx.zh else term.en), GLOSSARY, GLOSSARY, term.id) for term in terms]
    out += [t("Terms: ", "术语：") + t(", ", "、").join(index), ""]
    for term in terms:
        title, other = (term.zh, term.en) if ctx.zh else (term.en, term.zh)
        names = [n for n in dict.fromkeys([other, *term.aliases]) if n != title]
        out += [f"## {esc(title_text(title))} {{#{term.id}}}", "",
                f"**{t('Also called', '又称')}**{t(': ', '：')}" + t(", ", "、").join(_name(n, ctx.zh) for n in names), "",
                esc(ctx.field(term, "note")), ""]
        avoided = [a for a in term.avoid_zh if a not in term.aliases]
        if avoided:
            out += [t(f"gpukb's Chinese text writes {term.zh}, not ", f"gpukb 的中文文本统一写作“{term.zh}”，不写 ")
                    + t(", ", "、").join(code(a) for a in avoided) + t(".", "。"), ""]
        if term.sources:
            out += [t("Sources: ", "来源：") + t(", ", "、").join(ctx.source(GLOSSARY, s) for s in term.sources)
                    + t(".", "。"), ""]
    out += [t("Kept in ", "定义于 ") + code("kb/glossary/terms.yaml") + t(".", "。"), ""]
    return "\n".join(out)


ENGLISH_OPEN = '<div lang="en" markdown="1">'  # a block of English on a Chinese page, its Markdown rendered


def _name(name: str, zh: bool) -> str:
    """A name readers search by; on the Chinese site one in Latin letters is marked as English."""
    return f'<span lang="en">{esc(name)}</span>' if zh and not _HAN.search(name) else esc(name)


_HAN = re.compile(r"[\u3400-\u9fff]")


def policies(ctx: Context) -> str:
    kb, here = ctx.kb, POLICIES
    out = h1(ctx.t("Policies", "策略假设"))
    out += [ctx.t("Engineering assumptions the engine states rather than hides; every answer that depends on one shows "
                  "it in its trace.", "引擎明确写出而不隐藏的工程假设；每个依赖它们的回答都会在推理记录中列出。"), ""]
    for p in sorted(kb.policies.values(), key=lambda p: p.id):
        unit = ctx.t(f" ({p.unit})", f"（{ctx.value('policy_unit', p.unit)}）")
        value = gb(p.value) if p.unit == "bytes" else f"{p.value:g}{esc(unit)}"
        out += [f"## {esc(title_text(ctx.field(p, 'title')))} {{#{p.id}}}", "", f"{code(p.id)} = **{value}**", "",
                ctx.note(here, p, "reason", p.id), ""]
        if p.claims:
            out += [ctx.t("Claims: ", "论断：") + ", ".join(ctx.claim(here, c) for c in p.claims) + ".", ""]
        out += [ctx.t("Sources: ", "来源：") + ", ".join(ctx.source(here, s) for s in p.sources) + ".", ""]
    return "\n".join(out)


def precisions(ctx: Context) -> str:
    kb, here, t = ctx.kb, PRECISIONS, ctx.t
    dtype_rows = [[code(d.id), esc(d.name), f"{d.bits:g}",
                   (f"{d.training.weight_bytes:g} + {d.training.grad_bytes:g} + {d.training.master_bytes:g}"
                    if d.training else "—"), t("yes", "是") if d.inference else t("no", "否"), code(d.flops_field),
                   ", ".join(ctx.source(here, s) for s in d.sources)] for d in kb.dtypes.values()]
    opt_rows = [[code(o.id), esc(o.name), f"{o.state_bytes:g}", esc(ctx.field(o, "states")),
                 ", ".join(ctx.source(here, s) for s in o.sources)] for o in kb.optimizers.values()]
    out = h1(t("Precisions and optimizers", "精度与优化器"))
    out += [f"## {t('Precisions', '精度')}", "",
            t("Storage bits per parameter; when training, bytes per parameter for weights + gradients + master weights.",
              "每个参数的存储位数；训练时每个参数的权重 + 梯度 + 主权重字节数。"), "",
            table([t("Id", "编号"), t("Name", "名称"), t("Bits", "位数"), t("Training bytes", "训练字节"),
                   t("Inference", "推理"), t("Throughput from", "算力取自"), t("Sources", "来源")], dtype_rows, "llrlcll"), "",
            f"## {t('Optimizers', '优化器')}", "", t("Optimizer state bytes per trainable parameter.",
                                                   "每个可训练参数的优化器状态字节数。"), "",
            table([t("Id", "编号"), t("Name", "名称"), t("State bytes", "状态字节"), t("States", "状态"),
                   t("Sources", "来源")], opt_rows, "llrll"), ""]
    return "\n".join(out)


def changelog(ctx: Context, package_version: str, changelog_md: str | None, pages: dict[str, str] | None = None) -> str:
    kb, t = ctx.kb, ctx.t
    out = h1(t("Changelog", "变更记录"))
    out += [table([t("Property", "属性"), t("Value", "值")], [
                [t("Knowledge base version", "知识库版本"), f"**{code(kb.version)}** (`kb/manifest.yaml`)"],
                [t("Content hash", "内容哈希"), code(kb.content_hash)],
                [t("gpukb package", "gpukb 软件包"), esc(package_version)],
                [t("Entries", "条目"), t(f"{len(kb.claims)} claims, {len(kb.rules)} rules, {len(kb.gpus)} GPUs, "
                                         f"{len(kb.models)} models, {len(kb.sources)} sources",
                                         f"{len(kb.claims)} 条论断，{len(kb.rules)} 条规则，{len(kb.gpus)} 种 GPU，"
                                         f"{len(kb.models)} 个模型，{len(kb.sources)} 个来源")]]), "",
            t("Every entry carries an integer `version` that rises when it changes; traces name rules as `id@version`, "
              "and the content hash (sha256 of `kb/` and `rules/`) pins the exact data an answer came from.",
              "每个条目都有一个整数 `version`，内容变化时递增；推理记录以 `id@version` 指代规则，"
              "内容哈希（`kb/` 和 `rules/` 的 sha256）锁定回答所用的确切数据。"), ""]
    if changelog_md:
        included = demote(re.sub(r"^# .*\n+", "", repository_markdown(changelog_md.strip(), CHANGELOG,
                                                                        pages or REPOSITORY_PAGES)))
        if ctx.zh:  # the repository's record, kept in English: said so, and marked as English
            out += ["以下各版本的变更说明是仓库 `CHANGELOG.md` 的英文原文。", "", ENGLISH_OPEN, "", included, "", "</div>", ""]
        else:
            out += [included, ""]
    else:
        out += [t("No `CHANGELOG.md` at the repository root yet.", "仓库根目录还没有 `CHANGELOG.md`。"), ""]
    return "\n".join(out)


def repository_guide(contributing_md: str, pages: dict[str, str], zh: bool = False) -> str:
    text = repository_markdown(contributing_md.strip(), REPOSITORY_GUIDE, pages)
    if not text.startswith("# "):
        text = "# Contributing\n\n" + text
    if zh:  # the repository's guide, kept in English: said so, and marked as English
        _title, _, rest = text.partition("\n")
        text = (f"# 完整贡献指南（CONTRIBUTING.md）\n\n以下为仓库 `CONTRIBUTING.md` 的英文原文。\n\n{ENGLISH_OPEN}\n{rest}"
                "\n\n</div>")
    return text + "\n"
