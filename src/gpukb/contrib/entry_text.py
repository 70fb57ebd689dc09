"""`gpukb explain ID...`: one knowledge-base entry as readable YAML, with where it comes from.

The first line names the kind, id, version, status and file; what follows is YAML (numbers in
SI or with their unit spelled out, no Python reprs), so it can be read, grepped or parsed.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..core.fmt import Lang, bandwidth, flops, gb
from ..core.words import term
from ..knowledge.kb import KnowledgeBase
from . import figures

# `gpukb explain --lang zh`: the names of the fields, and of the kinds and statuses in the first line
KEYS_ZH = {
    "stage": "阶段", "title": "标题", "when": "条件", "then": "结论", "explain": "说明", "claims": "论断",
    "sources": "来源", "tests": "测试", "section": "章节", "kind": "类型", "quote": "原文", "verdict": "判定",
    "reason": "理由", "evidence": "证据", "cited by rules": "引用它的规则", "name": "名称", "memory": "显存",
    "dense tensor throughput": "稠密 Tensor Core 算力", "scale-up": "卡间互联", "host link": "主机链路", "power": "功耗",
    "cooling": "散热", "price": "价格", "cloud prices (USD per GPU-hour, on demand)": "云上按需价格（美元/GPU 小时）",
    "as of": "截至", "notes": "说明", "parameters": "参数量", "architecture": "结构",
    "KV cache per token (16-bit)": "每个 token 的 KV 缓存（16 位）", "context length": "上下文长度",
    "Hugging Face repository": "Hugging Face 仓库", "superseded by": "由其取代", "workload": "工作负载", "source": "来源",
    "en": "英文", "zh": "中文", "avoid_zh": "避免", "note": "说明", "value": "取值", "unit": "单位", "quantity": "量",
    "setup": "设置", "locator": "出处", "unstated": "未说明", "publisher": "发布者", "url": "网址", "path": "路径",
    "bits": "位数", "training": "训练", "inference": "推理", "flops_field": "算力字段", "state_bytes": "状态字节数",
    "states": "状态", "bandwidth": "带宽", "quoted": "原文", "english": "英文",
}
KINDS_ZH = {"rule": "规则", "claim": "论断", "gpu": "GPU", "model": "模型", "source": "来源", "policy": "策略假设",
            "measurement": "实测", "interconnect": "互联", "dtype": "精度", "optimizer": "优化器", "term": "术语",
            "framework": "框架", "system": "系统"}
STATUS_ZH = {"stable": "稳定", "draft": "草案", "deprecated": "已弃用"}
KIND_OF_CLAIM_ZH = {"quantitative": "定量", "qualitative": "定性", "recommendation": "建议"}


def _yaml(data: dict[str, Any]) -> list[str]:
    """Readable YAML in block style, long text folded near 100 columns."""
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=100, default_flow_style=False)
    return text.rstrip("\n").splitlines()


def _plain(value: Any) -> Any:
    """A field's value as YAML data: models as mappings without empty fields, dates as text."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v not in (None, "", [], {})}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, int | float | bool | str):
        return value
    return str(value)


def _sources(kb: KnowledgeBase, ids: list[str]) -> list[str]:
    lines = []
    for sid in ids:
        s = kb.sources[sid]
        dated = f", {s.as_of}" if s.as_of else ""
        lines.append(f"{sid}: {s.title} ({s.publisher}{dated}) {s.url or s.path}")
    return lines


def _rule(kb: KnowledgeBase, entry: Any, lang: Lang = "en") -> dict[str, Any]:
    if lang == "zh":
        cited = [f"{'反驳' if kb.claims[c].verdict == 'contradicted' else '依据'} {c} [{term('zh', kb.claims[c].verdict)}] "
                 f"「{kb.claims[c].quote_zh}」" for c in entry.claims]
        return {"stage": term("zh", entry.stage), "title": entry.title_zh or entry.title,
                "when": [_plain(p) for p in entry.when], "then": [_plain(o) for o in entry.then],
                "explain": entry.explain_zh or entry.explain, "claims": cited, "sources": _sources(kb, entry.sources),
                "tests": [_plain(t) for t in entry.tests]}
    return {
        "stage": entry.stage, "title": entry.title, "title_zh": entry.title_zh,
        "when": [_plain(p) for p in entry.when],
        "then": [_plain(o) for o in entry.then],
        "explain": entry.explain, "explain_zh": entry.explain_zh,
        "claims": [f"{c} [{kb.claims[c].verdict}] 「{kb.claims[c].quote_zh}」" for c in entry.claims],
        "sources": _sources(kb, entry.sources),
        "tests": [_plain(t) for t in entry.tests],
    }


def _claim(kb: KnowledgeBase, entry_id: str, entry: Any, lang: Lang = "en") -> dict[str, Any]:
    citing = sorted(r.id for r in kb.rules.values() if entry_id in r.claims)
    if lang == "zh":
        return {"title": entry.title_zh or entry.title, "section": entry.section,
                "kind": KIND_OF_CLAIM_ZH.get(entry.kind, entry.kind), "quote": f"「{entry.quote_zh}」",
                "verdict": term("zh", entry.verdict), "reason": figures.shown(kb, entry, "zh"),
                "evidence": _sources(kb, entry.evidence), "cited by rules": "，".join(citing) or "无"}
    return {
        "title": entry.title, "title_zh": entry.title_zh,
        "section": f"{entry.section} ({entry.section_en})", "kind": entry.kind,
        "quote": f"「{entry.quote_zh}」", "english": entry.text_en,
        "verdict": entry.verdict, "reason": figures.shown(kb, entry, "en"), "reason_zh": figures.shown(kb, entry, "zh"),
        "evidence": _sources(kb, entry.evidence),
        "cited by rules": ", ".join(citing) or "none",
    }


def _gpu(kb: KnowledgeBase, entry: Any, lang: Lang = "en") -> dict[str, Any]:
    rates = (("bf16", entry.bf16_flops), ("fp16", entry.fp16_flops), ("fp8", entry.fp8_flops), ("fp32", entry.fp32_flops))
    scale_up = entry.scale_up or ("无" if lang == "zh" else "none")
    if entry.scale_up_bandwidth:
        scale_up += (f"，单向 {bandwidth(entry.scale_up_bandwidth)}，{entry.scale_up_domain} 块 GPU" if lang == "zh" else
                     f" {bandwidth(entry.scale_up_bandwidth)} per direction, {entry.scale_up_domain} GPUs")
    if lang == "zh":
        return {"name": f"{entry.name}（{entry.vendor}，{entry.architecture}，{entry.form_factor}，{entry.segment}）",
                "memory": f"{gb(entry.memory)} {entry.memory_type}，带宽 {bandwidth(entry.memory_bandwidth)}",
                "dense tensor throughput": "，".join(f"{name} {flops(v)}" for name, v in rates if v),
                "scale-up": scale_up, "host link": entry.pcie, "power": f"{entry.tdp:.0f} W", "cooling": list(entry.cooling),
                "price": _plain(entry.price) if entry.price else "无",
                "cloud prices (USD per GPU-hour, on demand)": [
                    f"{p.usd_per_gpu_hour:g}（{p.instance}，{p.region}，{p.as_of}，{p.source}）" for p in entry.cloud_prices
                ] or "无",
                "as of": str(entry.as_of), "sources": _sources(kb, entry.sources)}
    return {
        "name": f"{entry.name} ({entry.vendor}, {entry.architecture}, {entry.form_factor}, {entry.segment})",
        "memory": f"{gb(entry.memory)} {entry.memory_type} at {bandwidth(entry.memory_bandwidth)}",
        "dense tensor throughput": ", ".join(f"{name} {flops(v)}" for name, v in rates if v),
        "scale-up": scale_up,
        "host link": entry.pcie, "power": f"{entry.tdp:.0f} W", "cooling": list(entry.cooling),
        "price": _plain(entry.price) if entry.price else "none",
        "cloud prices (USD per GPU-hour, on demand)": [
            f"{p.usd_per_gpu_hour:g} — {p.instance}, {p.region}, {p.as_of} ({p.source})" for p in entry.cloud_prices
        ] or "none",
        "as of": str(entry.as_of), "notes": entry.notes,
        "sources": _sources(kb, entry.sources),
    }


def _model(kb: KnowledgeBase, entry: Any, lang: Lang = "en") -> dict[str, Any]:
    if lang == "zh":
        active = f"（激活 {entry.active_params:,}）" if entry.active_params else ""
        return {"name": entry.name, "parameters": f"{entry.params:,}{active}",
                "architecture": f"{entry.layers} 层，隐藏维度 {entry.hidden_size}，{entry.heads} 个注意力头"
                                f"（KV 头 {entry.kv_heads}），头维度 {entry.head_dim}，"
                                f"中间维度 {entry.intermediate_size}，词表 {entry.vocab_size}",
                "KV cache per token (16-bit)": f"{2 * entry.layers * entry.kv_heads * entry.head_dim * 2:,} 字节",
                "context length": entry.context_length, "Hugging Face repository": entry.hf_repo or "无",
                "sources": _sources(kb, entry.sources)}
    active = f" ({entry.active_params:,} active)" if entry.active_params else ""
    return {
        "name": entry.name, "parameters": f"{entry.params:,}{active}",
        "architecture": f"{entry.layers} layers, hidden {entry.hidden_size}, {entry.heads} heads ({entry.kv_heads} KV), "
                        f"head dim {entry.head_dim}, intermediate {entry.intermediate_size}, vocab {entry.vocab_size}",
        "KV cache per token (16-bit)": f"{2 * entry.layers * entry.kv_heads * entry.head_dim * 2:,} bytes",
        "context length": entry.context_length,
        "Hugging Face repository": entry.hf_repo or "none",
        "sources": _sources(kb, entry.sources),
    }


def describe_entry(kb: KnowledgeBase, entry_id: str, lang: Lang = "en") -> str | None:
    """The entry with this id as a header line and readable YAML in `lang`; None if no entry has the id."""
    found = kb.lookup(entry_id)
    if found is None:
        return None
    spec, entry = found
    kind = spec.singular
    where = kb.locations.get((spec.name, entry_id))
    label, status = kind, entry.status
    if lang == "zh":
        label, status = KINDS_ZH.get(kind, kind), STATUS_ZH.get(entry.status, entry.status)
    head = f"{label} {entry_id} v{entry.version} [{status}]" + (f" — {where[0]}:{where[1]}" if where else "")
    if kind == "rule":
        body = _rule(kb, entry, lang)
    elif kind == "claim":
        body = _claim(kb, entry_id, entry, lang)
    elif kind == "gpu":
        body = _gpu(kb, entry, lang)
    elif kind == "model":
        body = _model(kb, entry, lang)
    else:
        # an unset field (a framework term it states none for) is left out, not printed as "None"
        body = {name: _plain(value) for name in spec.shown if (value := getattr(entry, name)) is not None}
        if kind == "measurement":
            body["workload"] = _plain(entry.workload)
            body["source"] = _sources(kb, [entry.source])
        elif kind != "source":
            body["sources"] = _sources(kb, getattr(entry, "sources", []))
        if kind == "system":  # quantities with their units, as the YAML writes them
            body["network_bandwidth"] = (f"{entry.network_bandwidth * 8 / 1e9:,.0f} Gb/s ({bandwidth(entry.network_bandwidth)})"
                                         if entry.network_bandwidth else None)
            body["host_memory"] = gb(entry.host_memory)
    if entry.superseded_by:
        body["superseded by"] = entry.superseded_by
    body = {k: v for k, v in body.items() if v not in (None, "", [], {})}
    if lang == "zh":
        body = {KEYS_ZH.get(k, k): v for k, v in body.items()}
    return "\n".join([head, *_yaml(body)])
