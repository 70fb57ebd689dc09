"""The ask page: a form answered in the browser (site/docs/javascripts/ask.js) from the answers of the
build-time grid (gpukb.site.askdata). This module writes the page and its index: the form's choices
and every word the script shows, in the page's language, so the script itself holds no text."""

from __future__ import annotations

from typing import Any

from ...answer.workload import Workload
from .. import askgrid
from ..askdata import Asked, data_path, json_text
from ..links import ASK, Context
from ..text import code, esc, table
from .common import h1
from .models import task_name

INDEX = "ask/data/index.json"
TRAINING = ("pretrain", "full_finetune", "lora", "qlora")
# field -> (English label, Chinese label, input kind, the tasks that take it)
FORM: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "gpus": ("GPU type", "GPU 型号", "gpu", askgrid.TASKS),
    "systems": ("System (a server or cloud instance)", "整机或云实例", "system", askgrid.TASKS),
    "gpu_count": ("At most this many GPUs", "最多可用 GPU 数", "number", askgrid.TASKS),
    "seq_len": ("Sequence length (tokens)", "序列长度（token）", "number", askgrid.TASKS),
    "micro_batch_size": ("Micro-batch per GPU", "每卡微批大小", "number", TRAINING),
    "batch_size": ("Concurrent requests", "并发请求数", "number", ("inference",)),
    "tokens": ("Training tokens (e.g. 1T)", "训练 token 数（如 1T）", "size", TRAINING),
    "deadline_days": ("Deadline (days, with tokens)", "期限（天，需给出训练 token 数）", "number", TRAINING),
    "ttft_ms": ("Time-to-first-token target (ms)", "首 token 时延目标（ms）", "number", ("inference",)),
    "tpot_ms": ("Time-per-output-token target (ms)", "每个输出 token 用时目标（ms）", "number", ("inference",)),
    "framework": ("Framework", "框架", "framework", askgrid.TASKS),
    "objective": ("Rank the options by", "方案排序依据", "objective", askgrid.TASKS),
}
OBJECTIVE_NAMES = {"speed": ("speed", "速度"), "cost": ("cost", "成本"), "gpus": ("fewest GPUs", "GPU 最少")}
# A pasted config.json is found in the catalog by its architecture: each figure under the first of these keys
# it holds (Transformers' name, then GPT-2's and others'; a multimodal config's text_config first). Without a
# KV-head count, every head is one; without an expert count, the MLP is dense. The context length only tells
# apart catalog models of one architecture (Llama 3 and 3.1).
CONFIG_KEYS: dict[str, list[str]] = {
    "hidden_size": ["hidden_size", "n_embd", "d_model"],
    "layers": ["num_hidden_layers", "n_layer", "num_layers"],
    "heads": ["num_attention_heads", "n_head"],
    "kv_heads": ["num_key_value_heads", "multi_query_group_num"],
    "vocab_size": ["vocab_size"],
    "experts": ["num_local_experts", "n_routed_experts", "num_experts"],
    "context_length": ["max_position_embeddings", "n_positions", "seq_length"],
}


def architecture(model: Any) -> list[int]:
    """A catalog model's figures, in the order of CONFIG_KEYS."""
    return [model.hidden_size, model.layers, model.heads, model.kv_heads, model.vocab_size,
            model.moe.experts if model.moe else 1, model.context_length]


def _ui(ctx: Context) -> dict[str, str]:
    """The script's words; {name} marks a value it fills in."""
    t = ctx.t
    return {
        "model": t("Model", "模型"), "task": t("Task", "任务"), "any": t("any", "任意"), "default": t("default", "默认"),
        "default_value": t("default: {value}", "默认：{value}"), "ask": t("Answer", "回答"),
        "loading": t("Loading the answers…", "正在加载预先计算的回答……"),
        "load_failed": t("The precomputed answers could not be loaded ({error}).", "无法加载预先计算的回答（{error}）。"),
        "outside": t("This question is outside the grid answered when the site was built. The command below asks it:",
                     "这个问题不在构建本站时预先计算的范围内。用下面的命令可以在本地提问："),
        "refused": t("The engine refuses this question:", "引擎拒绝了这个问题："),
        "memory": t("Memory: {memory} for one replica before sharding. {total} GPU types can run it, {rejected} cannot.",
                    "显存：切分前单个副本 {memory}。{total} 种 GPU 可以运行，{rejected} 种不能。"),
        "options": t("First options", "前几个方案"), "warnings": t("Warnings on the first option", "首选方案的警告"),
        "none_fits": t("No option: nothing fits within the limits given.", "没有方案：在给定的限制内放不下。"),
        "rented": t("on {system}", "租用 {system}"),
        "trace": t("The whole reasoning, step by step: the scenario's trace", "完整的推理记录：该场景的推理步骤页"),
        "scenario": t("the scenario's page", "场景页"),
        "explain": t("The whole reasoning, step by step: add --explain to the command.",
                     "完整的推理记录：在命令后加上 --explain。"),
        "command": t("The command that gives this answer (and takes every other field of the workload):",
                     "给出这个回答的命令（还可加上工作负载的其他字段）："),
        "share": t("This page's address holds the question: share it to share the answer.",
                   "本页地址包含这个问题，分享地址即可分享回答。"),
        "ignored": t("Not a workload field, left out: {names}", "不是工作负载字段，已忽略：{names}"),
        "error": t("error", "错误"), "warning": t("warning", "警告"),
        "paste": t("Or paste a model's config.json (from its Hugging Face repository)",
                   "或者粘贴模型的 config.json（在其 Hugging Face 仓库中）"),
        "find": t("Find its model", "查找对应模型"),
        "matched": t("This config.json has the architecture of {model}: its answers follow.",
                     "这个 config.json 的架构与 {model} 相同，下面是它的回答。"),
        "unmatched": t("This config.json has the architecture of no catalog model (hidden size, layers, heads, KV heads, "
                       "vocabulary, experts), so no answer was computed for it. Save it as config.json and ask on "
                       "your machine:",
                       "目录中没有与这个 config.json 架构相同的模型（隐藏层维度、层数、注意力头数、KV 头数、词表、专家数），"
                       "因此没有预先计算的回答。把它保存为 config.json，在本机提问："),
        "bad_config": t("This is not a config.json ({error}).", "这不是一个 config.json（{error}）。"),
    }


def index(ctx: Context, asked: list[Asked]) -> str:
    """The page's index (ask/data/index.json): the choices, the labels, and what the grid holds."""
    kb, zh = ctx.kb, ctx.zh
    models = sorted({a.model for a in asked}, key=lambda m: (kb.models[m].family, kb.models[m].params, m))
    suggest: dict[str, set[str]] = {}
    for task in askgrid.TASKS:
        for question in askgrid.grid(kb, task):
            for name, value in question.items():
                suggest.setdefault(name, set()).add(askgrid.value_text(value))
    fields: list[dict[str, Any]] = [
        {"name": name, "label": zh_label if zh else en_label, "kind": kind, "tasks": list(tasks),
         "suggest": sorted(suggest.get(name, ()), key=lambda v: (len(v), v)) if kind in ("number", "size") else []}
        for name, (en_label, zh_label, kind, tasks) in FORM.items()]
    data: dict[str, Any] = {
        "lang": ctx.lang, "ui": _ui(ctx),
        "models": [[m, kb.models[m].name] for m in models],
        "tasks": [[task, task_name(ctx, task)] for task in askgrid.TASKS],
        "gpus": [[g.id, g.name] for g in sorted(kb.gpus.values(), key=lambda g: (g.vendor, -g.memory, g.id))
                 if askgrid.SLUG.match(g.id)],
        "systems": [[s.id, s.name] for s in sorted(kb.systems.values(), key=lambda s: s.id) if askgrid.SLUG.match(s.id)],
        "frameworks": {task: askgrid.frameworks(kb, task) for task in askgrid.TASKS},
        "objectives": [[o, OBJECTIVE_NAMES[o][zh]] for o in askgrid.OBJECTIVES],
        "fields": fields, "order": list(askgrid.FIELDS), "lists": list(askgrid.LIST_FIELDS),
        "workload": sorted(Workload.model_fields),
        "config_keys": list(CONFIG_KEYS.values()),
        "architectures": {m: architecture(kb.models[m]) for m in models},
    }
    return json_text(data)


def _grid_table(ctx: Context) -> list[str]:
    """What the grid holds per task: each block's fields and values ('—' is the default)."""
    rows = []
    for task in askgrid.TASKS:
        for block in askgrid.BLOCKS[task]:
            rows.append([esc(task_name(ctx, task)), "; ".join(
                f"{code(name)} " + ", ".join("—" if v is None else code(askgrid.value_text(v)) for v in values)
                for name, values in block.items())])
        rows.append([esc(task_name(ctx, task)), f"{code('framework')} " + ctx.t("each one that runs the task",
                                                                                "每个支持该任务的框架")])
    return [table([ctx.t("Task", "任务"), ctx.t("Questions (every combination of a row's values)",
                                               "问题（每行取值的所有组合）")], rows, "ll"), ""]


def page(ctx: Context, asked: list[Asked]) -> str:
    t = ctx.t
    answers = sum(len(a.answers) for a in asked)
    no_script = t("The form needs JavaScript. Without it, ask on the command line: gpukb ask --help.",
                  "表单需要 JavaScript。没有它时，请在命令行提问：gpukb ask --help。")
    out = ["---", "gpukb_ask: true", "---", "", *h1(t("Ask", "提问"))]
    out += [t("Pick a model and a task, and as much of the rest as you know: the answer below is the engine's own, "
              "computed when this site was built, with the command that gives it on your machine.",
              "选择模型和任务，其余能填多少填多少：下面的回答来自推理引擎本身，在构建本站时算好；"
              "同时给出在本机得到同一回答的命令。"), "",
            '<div id="gpukb-ask" class="gpukb-ask" data-index="data/index.json" markdown="0">'
            f'<p class="gpukb-ask-status">{esc(no_script)}</p></div>', "",
            f"## {t('What is answered here', '这里能回答什么')} {{#grid}}", "",
            t(f"{answers:,} questions over {len({a.model for a in asked})} catalog models, answered by `ask()` at build "
              "time; any other question, the page gives as a `gpukb ask` command. A field left out takes the engine's "
              "default, which the answer states.",
              f"目录中 {len({a.model for a in asked})} 个模型的 {answers:,} 个问题，在构建时由 `ask()` 回答；"
              "其他问题，本页给出对应的 `gpukb ask` 命令。未填写的字段取引擎的默认值，回答里会写明。"), "",
            *_grid_table(ctx)]
    return "\n".join(out)


def files(ctx: Context, asked: list[Asked]) -> dict[str, str]:
    """The page, its index and one data file per model and task, docs-relative."""
    out = {ASK: page(ctx, asked), INDEX: index(ctx, asked)}
    out.update({data_path(a.model, a.task): a.file(ctx.lang) for a in asked})
    return out
