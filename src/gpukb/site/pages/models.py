"""Models: an index, and one page per model with its memory by task and the GPUs that fit."""

from __future__ import annotations

from ...core.fmt import gb
from ..links import MODELS, Context, model_page
from ..text import esc, link, table, title_text
from .common import bullets, gb_exact, h1, source_line

TASKS = ("pretrain", "full_finetune", "lora", "qlora", "inference")
TASK_NAMES = {"pretrain": ("Pre-training", "预训练"), "full_finetune": ("Full fine-tuning", "全参数微调"),
              "lora": ("LoRA fine-tuning", "LoRA 微调"), "qlora": ("QLoRA fine-tuning", "QLoRA 微调"),
              "inference": ("Inference (serving)", "推理（部署）")}


def task_name(ctx: Context, task: str) -> str:
    en, zh = TASK_NAMES.get(task, (task, task))
    return ctx.t(en, zh)


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """Keys and values (2) for every layer, KV head and head dimension, at 16 bits (2 bytes) by default."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def models_index(ctx: Context) -> str:
    kb, here = ctx.kb, MODELS
    models = sorted(kb.models.values(), key=lambda m: (m.family, m.params, m.id))
    rows = [[link(esc(title_text(m.name)), here, model_page(m.id)), f"{m.params / 1e9:,.2f} B"
             + (ctx.t(f" ({m.active_params / 1e9:,.1f} B active)", f"（激活 {m.active_params / 1e9:,.1f} B）")
                if m.active_params else ""),
             str(m.layers), str(m.hidden_size), f"{m.heads} / {m.kv_heads}", str(m.head_dim), f"{m.context_length:,}",
             f"{kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim):,}"] for m in models]
    out = h1(ctx.t("Models", "模型"))
    out += [ctx.t("Hyper-parameters from each model's published configuration. KV bytes per token are for a 16-bit cache: "
                  "2 (keys and values) × layers × KV heads × head dimension × 2 bytes.",
                  "超参数取自各模型公开的配置文件。每 token 的 KV 字节数按 16 位缓存计算："
                  "2（键和值）× 层数 × KV 头数 × 头维度 × 2 字节。"), "",
            table([ctx.t("Model", "模型"), ctx.t("Parameters", "参数量"), ctx.t("Layers", "层数"), ctx.t("Hidden", "隐藏维度"),
                   ctx.t("Heads / KV heads", "注意力头 / KV 头"), ctx.t("Head dim", "头维度"), ctx.t("Context", "上下文"),
                   ctx.t("KV bytes per token", "每 token KV 字节")], rows, "lrrrrrrr"), ""]
    return "\n".join(out)


def _by_task(ctx: Context, model_id: str) -> list[str]:
    answers = ctx.tasks.get(model_id, {})
    if not answers:
        return []
    here, t = model_page(model_id), ctx.t
    rows = []
    seq_len = None
    for task in TASKS:
        a = answers.get(task)
        if a is None:
            continue
        seq_len = a.workload.seq_len
        best = a.best
        single = [o for o in a.options if o.count == 1]
        rows.append([esc(task_name(ctx, task)), gb_exact(a.memory.total),
                     f"{best.count} × {ctx.gpu_named(here, best.gpu)}" if best else t("none fits", "放不下"),
                     ", ".join(ctx.gpu_named(here, o.gpu) for o in single[:6])
                     + (t(f" and {len(single) - 6} more", f" 等另外 {len(single) - 6} 种") if len(single) > 6 else "")
                     or t("none: it needs several GPUs", "没有：需要多卡")])
    if not rows:
        return []
    return [f"## {t('Memory by task', '各任务的显存需求')} {{#memory-by-task}}", "",
            t(f"What `gpukb.ask()` answers for each task with the defaults: BF16, AdamW for training, a sequence of "
              f"{seq_len:,} tokens, micro-batch 1 (inference: one sequence). Memory is one replica before sharding; "
              "the recommended plan may shard it over several GPUs.",
              f"`gpukb.ask()` 在默认设置下对各任务的回答：BF16，训练用 AdamW，序列长度 {seq_len:,} tokens，微批 1"
              "（推理：单条序列）。显存为切分前的单个副本；推荐方案可能把它切分到多张卡上。"), "",
            table([t("Task", "任务"), t("Memory", "显存"), t("Recommended", "推荐"), t("Fits on one GPU", "单卡放得下")],
                  rows, "lrll"), ""]


def model(ctx: Context, model_id: str) -> str:
    kb, here, t = ctx.kb, model_page(model_id), ctx.t
    m = kb.models[model_id]
    kv = kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim)
    spec = [[t("Family", "系列"), esc(m.family)], [t("Parameters", "参数量"), f"{m.params:,} ({m.params / 1e9:,.2f} B)"]]
    if m.active_params:
        spec.append([t("Active parameters per token", "每 token 激活参数"), f"{m.active_params:,}"])
    if m.moe:
        spec.append([t("Experts", "专家"), t(f"{m.moe.experts}, {m.moe.experts_per_token} per token",
                                             f"{m.moe.experts} 个，每 token {m.moe.experts_per_token} 个")])
    spec += [[t("Layers", "层数"), str(m.layers)], [t("Hidden size", "隐藏维度"), str(m.hidden_size)],
             [t("Attention heads", "注意力头"), str(m.heads)],
             [t("KV heads", "KV 头"), str(m.kv_heads) + (t(" (grouped-query attention)", "（分组查询注意力）")
                                                         if m.kv_heads < m.heads else "")],
             [t("Head dimension", "头维度"), str(m.head_dim)],
             [t("Intermediate size", "中间层维度"), f"{m.intermediate_size:,} "
              + t(f"({esc(m.mlp)} MLP)", f"（MLP：{esc(ctx.value('mlp', m.mlp))}）")],
             [t("Vocabulary", "词表"), f"{m.vocab_size:,}"], [t("Context length", "上下文长度"), f"{m.context_length:,}"],
             [t("Normalisation", "归一化"), esc(ctx.value("norm", m.norm))],
             [t("Position embeddings", "位置编码"), esc(ctx.value("position_embeddings", m.position_embeddings))],
             [t("Tied embeddings", "共享词嵌入"), t(str(m.tied_embeddings).lower(), "是" if m.tied_embeddings else "否")],
             [t("Version", "版本"), str(m.version)]]
    out = h1(m.name, m.id)
    out += _by_task(ctx, model_id)
    out += [f"## {t('Architecture', '架构')}", "", table([t("Hyper-parameter", "超参数"), t("Value", "值")], spec), "",
            f"## {t('KV cache', 'KV 缓存')}", "",
            t(f"2 × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × 2 bytes = **{kv:,} bytes per token** "
              f"at 16 bits; a full {m.context_length:,}-token context holds {gb(kv * m.context_length)} per sequence.",
              f"2 × {m.layers} 层 × {m.kv_heads} 个 KV 头 × {m.head_dim} × 2 字节 = **每 token {kv:,} 字节**（16 位）；"
              f"完整的 {m.context_length:,} token 上下文每条序列占 {gb(kv * m.context_length)}。"), ""]
    if m.notes:
        out += [f"## {t('Notes', '说明')} {{#notes}}", "", ctx.note(here, m), ""]
    out += [f"## {t('Sources', '来源')}", "", bullets(source_line(ctx, here, s) for s in m.sources), "",
            f"## {t('In the scenarios', '在各场景中')}", "",
            bullets((ctx.scenario(here, run) for run in ctx.runs if run.answer.workload.model == model_id),
                    t("No scenario uses this model.", "没有场景使用这个模型。")), ""]
    return "\n".join(out)


__all__ = ["TASKS", "kv_bytes_per_token", "model", "models_index", "task_name"]
