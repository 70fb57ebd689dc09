"""Small pieces every page family uses. Knowledge-base text always goes through `esc` (or
`title_text` for titles), so it renders as text and never as markup."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ...answer.answer import MEMORY_PARTS, Memory
from ...core.fmt import gb
from ..links import Context
from ..text import code, esc, esc_spaced, external, html_text, title_text


def bullets(items: Iterable[str], empty: str = "None.") -> str:
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) if lines else empty


def h1(text: object, secondary: object | None = None) -> list[str]:
    """The page title, and an id or other secondary name in small type under it."""
    out = [f"# {esc(title_text(text))}", ""]
    if secondary is not None:
        out += [f'<p class="gpukb-id"><code>{esc_spaced(secondary)}</code></p>', ""]
    return out


def bilingual(zh: str, en: str | None) -> str:
    """The Chinese original beside the English translation (stacked on narrow screens); the Chinese site,
    whose readers read the original, shows it alone (`en` None)."""
    if en is None:
        return f'<blockquote lang="zh-Hans"><p>{esc(zh)}</p></blockquote>'
    return ('<div class="gpukb-bilingual">'
            f'<blockquote lang="zh-Hans"><p>{esc(zh)}</p></blockquote>'
            f'<blockquote lang="en"><p>{esc(en)}</p></blockquote></div>')


def english(text: object) -> str:
    """Text as a source or provider writes it, in English, marked as such (a region, a table's locator)."""
    return f'<span lang="en">{esc(text)}</span>'


def quoted_en(text: object) -> str:
    """A source's words quoted as written, marked as English (for readers, screen readers and the Chinese
    site's check for untranslated text: a cited quote stays in its language)."""
    return f'<span lang="en">“{esc(text)}”</span>'


def as_json(value: Any) -> str:
    return code(json.dumps(value, ensure_ascii=False, sort_keys=False, default=str))


def source_line(ctx: Context, here: str, source_id: str) -> str:
    s = ctx.kb.sources.get(source_id)
    if s is None:
        return code(source_id)
    where = external(esc(s.title), s.url) if s.url else f"{esc(s.title)} ({code(s.path)})"
    meta = ctx.t(", ", "，").join(esc(x) for x in (s.publisher, ctx.value("source_kind", s.kind), s.as_of) if x)
    return f"{where} — {meta} · {ctx.source(here, source_id)}"


def gb_exact(n: int | float) -> str:
    """GB in the text, the exact byte count on hover (and for screen readers)."""
    return f'<span class="gpukb-bytes" title="{int(n):,} bytes">{gb(n)}</span>'


PART_NAMES = {
    "weights": ("weights", "权重"), "gradients": ("gradients", "梯度"), "optimizer": ("optimizer states", "优化器状态"),
    "activations": ("activations", "激活"), "kv_cache": ("KV cache", "KV 缓存"), "overhead": ("runtime overhead", "运行时开销"),
}


def part_name(ctx: Context, part: str) -> str:
    en, zh = PART_NAMES.get(part, (part.replace("_", " "), part))
    return ctx.t(en, zh)


def memory_bar(ctx: Context, memory: Memory, usable: int, capacity: int | None = None) -> str:
    """A bar of one GPU's memory: each part a coloured segment, the rest of the usable memory free,
    the reserve hatched. Raw HTML on one line; sizes in the title attributes as exact bytes."""
    whole = max(capacity or usable, memory.total, 1)
    segments = []
    for part in MEMORY_PARTS:
        value = getattr(memory, part)
        if value <= 0:
            continue
        label = f"{part_name(ctx, part)}: {gb(value)} ({value:,} bytes)"
        segments.append(f'<span class="gpukb-bar-{part}" style="width: {100 * value / whole:.2f}%" '
                        f'title="{html_text(label)}"></span>')
    free = max(usable - memory.total, 0)
    if free:
        label = ctx.t("free", "空闲") + f": {gb(free)} ({free:,} bytes)"
        segments.append(f'<span class="gpukb-bar-free" style="width: {100 * free / whole:.2f}%" '
                        f'title="{html_text(label)}"></span>')
    if capacity and capacity > max(usable, memory.total):
        reserve = round(capacity - max(usable, memory.total))
        label = ctx.t("reserve (headroom)", "预留余量") + f": {gb(reserve)} ({reserve:,} bytes)"
        segments.append(f'<span class="gpukb-bar-reserve" style="width: {100 * reserve / whole:.2f}%" '
                        f'title="{html_text(label)}"></span>')
    legend = " ".join(f'<span class="gpukb-key gpukb-bar-{part}"></span>{html_text(part_name(ctx, part))} '
                      f"{gb(getattr(memory, part))}" for part in MEMORY_PARTS if getattr(memory, part) > 0)
    aria = ctx.t("Memory per GPU", "每卡显存") + f": {gb(memory.total)} / {gb(usable)}"
    return (f'<div class="gpukb-bar" role="img" aria-label="{html_text(aria)}">{"".join(segments)}</div>'
            f'<p class="gpukb-legend">{legend}</p>')


__all__ = ["PART_NAMES", "as_json", "bilingual", "bullets", "gb_exact", "h1", "memory_bar", "part_name", "source_line"]
