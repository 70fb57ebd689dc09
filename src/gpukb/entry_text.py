"""`gpukb explain ID...`: one knowledge-base entry as readable YAML, with where it comes from.

The first line names the kind, id, version, status and file; what follows is YAML (numbers in
SI or with their unit spelled out, no Python reprs), so it can be read, grepped or parsed.
"""

from __future__ import annotations

from typing import Any

import yaml

from . import figures
from .fmt import bandwidth, flops, gb
from .kb import KnowledgeBase


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


def _rule(kb: KnowledgeBase, entry: Any) -> dict[str, Any]:
    return {
        "stage": entry.stage, "title": entry.title, "title_zh": entry.title_zh,
        "when": [_plain(p) for p in entry.when],
        "then": [_plain(o) for o in entry.then],
        "explain": entry.explain, "explain_zh": entry.explain_zh,
        "claims": [f"{c} [{kb.claims[c].verdict}] 「{kb.claims[c].quote_zh}」" for c in entry.claims],
        "sources": _sources(kb, entry.sources),
        "tests": [_plain(t) for t in entry.tests],
    }


def _claim(kb: KnowledgeBase, entry_id: str, entry: Any) -> dict[str, Any]:
    citing = sorted(r.id for r in kb.rules.values() if entry_id in r.claims)
    return {
        "title": entry.title, "title_zh": entry.title_zh,
        "section": f"{entry.section} ({entry.section_en})", "kind": entry.kind,
        "quote": f"「{entry.quote_zh}」", "english": entry.text_en,
        "verdict": entry.verdict, "reason": figures.shown(kb, entry, "en"), "reason_zh": figures.shown(kb, entry, "zh"),
        "evidence": _sources(kb, entry.evidence),
        "cited by rules": ", ".join(citing) or "none",
    }


def _gpu(kb: KnowledgeBase, entry: Any) -> dict[str, Any]:
    rates = (("bf16", entry.bf16_flops), ("fp16", entry.fp16_flops), ("fp8", entry.fp8_flops), ("fp32", entry.fp32_flops))
    scale_up = entry.scale_up or "none"
    if entry.scale_up_bandwidth:
        scale_up += f" {bandwidth(entry.scale_up_bandwidth)} per direction, {entry.scale_up_domain} GPUs"
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


def _model(kb: KnowledgeBase, entry: Any) -> dict[str, Any]:
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


def describe_entry(kb: KnowledgeBase, entry_id: str) -> str | None:
    """The entry with this id as a header line and readable YAML; None if no entry has the id."""
    found = kb.lookup(entry_id)
    if found is None:
        return None
    spec, entry = found
    kind = spec.singular
    where = kb.locations.get((spec.name, entry_id))
    head = f"{kind} {entry_id} v{entry.version} [{entry.status}]" + (f" — {where[0]}:{where[1]}" if where else "")
    if kind == "rule":
        body = _rule(kb, entry)
    elif kind == "claim":
        body = _claim(kb, entry_id, entry)
    elif kind == "gpu":
        body = _gpu(kb, entry)
    elif kind == "model":
        body = _model(kb, entry)
    else:
        body = {name: _plain(getattr(entry, name)) for name in spec.shown}
        if kind == "measurement":
            body["workload"] = _plain(entry.workload)
            body["source"] = _sources(kb, [entry.source])
        elif kind != "source":
            body["sources"] = _sources(kb, getattr(entry, "sources", []))
    if entry.superseded_by:
        body["superseded by"] = entry.superseded_by
    body = {k: v for k, v in body.items() if v not in (None, "", [], {})}
    return "\n".join([head, *_yaml(body)])
