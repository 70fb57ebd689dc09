"""`gpukb explain ID`: a readable account of one knowledge-base entry and where it comes from."""

from __future__ import annotations

from .fmt import bandwidth as fmt_bandwidth
from .fmt import flops as fmt_flops
from .fmt import gb
from .kb import KnowledgeBase


def _sources(kb: KnowledgeBase, ids: list[str]) -> list[str]:
    lines = []
    for sid in ids:
        s = kb.sources[sid]
        lines.append(f"  - {sid}: {s.title} ({s.publisher}{', ' + str(s.as_of) if s.as_of else ''}) {s.url or s.path}")
    return lines


def describe(kb: KnowledgeBase, entry_id: str) -> str | None:
    found = kb.lookup(entry_id)
    if found is None:
        return None
    spec, entry = found
    kind = spec.singular
    where = kb.locations.get((spec.name, entry_id))
    head = f"{kind} {entry_id} v{entry.version} [{entry.status}]" + (f" — {where[0]}:{where[1]}" if where else "")
    lines = [head]
    if kind == "rule":
        lines += [f"stage: {entry.stage}", f"title: {entry.title}", "when:"]
        for p in entry.when:
            lines.append(f"  {p.alias}: a {p.kind} fact" + (f" where {p.if_}" if p.if_ else ""))
        lines.append("then:")
        for o in entry.then:
            lines.append(f"  assert a {o.kind} fact")
            lines += [f"    {k} = {v!r}" for k, v in o.set.items()]
            lines += [f"    {k} = {v}" for k, v in {**o.let, **o.compute}.items()]
        lines.append(f"explain: {entry.explain}")
        lines.append("claims:")
        lines += [f"  - {c} [{kb.claims[c].verdict}] 「{kb.claims[c].quote_zh}」" for c in entry.claims]
        lines.append("sources:")
        lines += _sources(kb, entry.sources)
        lines.append("tests:")
        lines += [f"  - {t.name}: {t.workload} → fires={t.expect.fires} {t.expect.values or ''}" for t in entry.tests]
    elif kind == "claim":
        lines += [f"section: {entry.section} ({entry.section_en}), {entry.kind}", f"quote: 「{entry.quote_zh}」",
                  f"english: {entry.text_en}", f"verdict: {entry.verdict}", f"reason: {entry.reason}", "evidence:"]
        lines += _sources(kb, entry.evidence)
        citing = sorted(r.id for r in kb.rules.values() if entry_id in r.claims)
        lines.append(f"cited by rules: {', '.join(citing) or 'none'}")
    elif kind == "gpu":
        lines += [
            f"{entry.name} ({entry.vendor}, {entry.architecture}, {entry.form_factor}, {entry.segment})",
            f"memory: {gb(entry.memory)} {entry.memory_type} at {fmt_bandwidth(entry.memory_bandwidth)}",
            "dense tensor throughput: " + ", ".join(
                f"{name} {fmt_flops(v)}" for name, v in (("bf16", entry.bf16_flops), ("fp16", entry.fp16_flops),
                                                        ("fp8", entry.fp8_flops), ("fp32", entry.fp32_flops)) if v),
            f"scale-up: {entry.scale_up or 'none'}"
            + (f" {fmt_bandwidth(entry.scale_up_bandwidth)} per direction, {entry.scale_up_domain} GPUs"
               if entry.scale_up_bandwidth else ""),
            f"host link: {entry.pcie}; power {entry.tdp:.0f} W; cooling {', '.join(entry.cooling)}",
            f"as of {entry.as_of}; notes: {entry.notes}", "sources:",
        ]
        lines += _sources(kb, entry.sources)
    elif kind == "model":
        active = f" ({entry.active_params:,} active)" if entry.active_params else ""
        lines += [f"{entry.name}: {entry.params:,} parameters{active}",
                  f"{entry.layers} layers, hidden {entry.hidden_size}, {entry.heads} heads ({entry.kv_heads} KV), "
                  f"head dim {entry.head_dim}, intermediate {entry.intermediate_size}, vocab {entry.vocab_size}",
                  f"KV cache per token (16-bit): {2 * entry.layers * entry.kv_heads * entry.head_dim * 2:,} bytes",
                  "sources:"]
        lines += _sources(kb, entry.sources)
    elif kind == "source":
        lines += [f"{entry.title} — {entry.publisher} ({entry.kind}, {entry.as_of}) {entry.url or entry.path}"]
    else:
        lines += [f"{name}: {getattr(entry, name)}" for name in spec.shown if getattr(entry, name) not in (None, "", [])]
        if kind == "measurement":
            lines += [f"workload: {entry.workload}", "source:"] + _sources(kb, [entry.source])
        else:
            lines += ["sources:"] + _sources(kb, getattr(entry, "sources", []))
    return "\n".join(lines)
