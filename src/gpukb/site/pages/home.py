"""The home page: it starts from what the reader wants to do, then what the site holds, then how to
use the package (from the README)."""

from __future__ import annotations

import re
from collections import Counter

from ...core.words import term
from ...knowledge.rules import STAGES
from .. import tree as dtree
from ..links import (
    ARTICLE,
    ASK,
    CHANGELOG,
    GPUS,
    GUIDE,
    HOME,
    MODELS,
    REPOSITORY_PAGES,
    RULES,
    SCENARIOS,
    SOURCES,
    TREE,
    Context,
    scenario_page,
)
from ..markdown import repository_markdown, sections
from ..text import code, esc, link, table
from .scenarios import PICKS, render_step

# The reader's entry points: (English, Chinese, what to do, the tasks whose scenarios it lists)
GOALS = (
    ("I want to fine-tune a model", "我想微调模型",
     ("Adapt an existing model to your data: LoRA and QLoRA train small adapters on one card; full fine-tuning "
      "trains every weight and needs far more memory.",
      "用你的数据调整现有模型：LoRA 和 QLoRA 只训练小的适配器，一张卡即可；全参数微调训练所有权重，显存需求大得多。"),
     ("lora", "qlora", "full_finetune")),
    ("I want to post-train a model with RL", "我想用强化学习做后训练",
     ("GRPO and PPO generate their own samples and train on them: the rollout engine's KV cache and the trainer's "
      "optimizer states compete for the same GPUs, and generation or training sets the step time.",
      "GRPO 和 PPO 先生成样本再用它们训练：生成引擎的 KV 缓存与训练端的优化器状态争用同一批 GPU，"
      "生成或训练决定每步时间。"),
     ("grpo", "ppo", "dpo")),
    ("I want to serve a model", "我想部署模型做推理",
     ("Answer requests with a trained model: memory is the weights plus a KV cache that grows with context and "
      "concurrency; speed is set by memory bandwidth.",
      "用训练好的模型响应请求：显存是权重加上随上下文和并发增长的 KV 缓存；速度取决于显存带宽。"),
     ("inference",)),
    ("I want to pre-train a model", "我想从头预训练模型",
     ("Train from scratch on billions of tokens: many GPUs, and the links between them decide how fast.",
      "用数十亿乃至数万亿 token 从头训练：需要很多 GPU，卡间互联决定速度。"),
     ("pretrain",)),
)


def goals(ctx: Context, here: str) -> list[str]:
    out = []
    for en, zh, (what_en, what_zh), tasks in GOALS:
        runs = [r for r in ctx.runs if r.answer.workload.task in tasks]
        out += [f"### {ctx.t(en, zh)}", "", ctx.t(what_en, what_zh), ""]
        items = []
        for run in runs:
            # the decision first: the answer's summary, each named option with the figure that decides it
            s = run.answer.summary
            title = link(esc(ctx.field(run.scenario, 'title')), here, scenario_page(run.scenario.id))
            if s is None or s.nothing_fits:
                items.append(f"- {title} → " + (esc((ctx.zh and s.headline_zh) or s.headline) if s else
                                                ctx.t("no GPU fits", "没有 GPU 放得下")))
                continue
            items.append(f"- {title} → {esc((ctx.zh and s.headline_zh) or s.headline)}")
            for key, en, zh in PICKS:
                pick = getattr(s, key)
                if pick is not None:
                    name = esc(ctx.kb.gpus[pick.gpu].name if pick.gpu in ctx.kb.gpus else pick.gpu)
                    items.append(f"    - {ctx.t(en, zh)}: {pick.count} × {name} — {esc(pick.text(ctx.lang))}")
        out += items or [ctx.t("See the scenarios.", "见场景列表。")]
        out += [""]
    return out


def _blocks(markdown: str, language: str) -> list[str]:
    """The fenced code blocks of one language in a README section, in order."""
    return re.findall(rf"^```{language}\n(.*?)\n```", markdown, re.M | re.S)


def quick_start_zh(found: dict[str, str]) -> list[str]:
    """The README's commands with Chinese words around them (the commands are the README's own, so they stay
    true; their English comments are left out)."""
    shell = _blocks(found.get("Quick start", ""), "bash")
    asks = [b for b in shell if "gpukb ask" in b]
    tests = [b for b in shell if "pytest" in b]
    python = [re.sub(r" *#.*$", "", b, flags=re.M).rstrip() for b in _blocks(found.get("From Python", ""), "python")]
    out = ["## 快速上手", "",
           "需要 Python 3.11 或 3.12，以及 C 编译器和 Python 头文件（规则引擎 durable-rules 只发布源码包，安装时要编译 C 扩展）。"
           "在新机器上安装并提出第一个问题：", ""]
    out += [f"```bash\n{b}\n```" for b in asks] + [""]
    if tests:
        out += ["运行测试：", "", f"```bash\n{tests[0]}\n```", ""]
    if python:
        out += ["## 在 Python 中使用", "", "`gpukb.ask()` 接受字典或 `gpukb.Workload`，返回带完整推理记录的回答；"
                "`answer.explain(lang=\"zh\")` 用中文写出推理过程。", "", f"```python\n{python[0]}\n```", ""]
    return out


def home(ctx: Context, readme: str | None, pages: dict[str, str] | None = None) -> str:
    kb, here, t = ctx.kb, HOME, ctx.t
    intro, found = sections(repository_markdown(readme or "", HOME, pages or REPOSITORY_PAGES))
    verdicts = Counter(c.verdict for c in kb.claims.values())
    stages = Counter(r.stage for r in kb.rules.values())
    out = ["# gpukb", "",
           t("Which GPUs does your LLM workload need, what will hold it back, and what should you do about it? "
             "Start from what you want to do:",
             "你的大模型任务需要什么 GPU？什么会成为瓶颈？该怎么办？从你想做的事开始："), "",
           t(f"**{link('Ask your own question', here, ASK)}**: a model, a task, your GPUs and shapes, answered in the "
             "browser by the engine's own answers, with the command that gives the same answer on your machine.",
             f"**{link('提出你自己的问题', here, ASK)}**：选择模型、任务、GPU 和规模，在浏览器里直接得到推理引擎的回答，"
             "并附上在本机得到同一回答的命令。"), ""]
    out += goals(ctx, here)
    out += [t(f"Not sure? Follow the {link('decision tree', here, TREE)}, the article's own way of choosing, or "
              f"browse the {link('GPU catalog', here, GPUS)} and the {link('models', here, MODELS)}: each model's page "
              "shows the memory every task needs and the GPUs that fit.",
              f"不确定？沿着{link('决策树', here, TREE)}走（原文自己的选型方法），或浏览{link('GPU 目录', here, GPUS)}和"
              f"{link('模型', here, MODELS)}：每个模型页面都列出各任务所需的显存以及放得下的 GPU。"), ""]
    out += [f"## {t('What is in it', '内容一览')}", "", intro if intro and not ctx.zh else
            t(esc(kb.manifest.description),
              "本站是一个可以阅读和核查的知识库：规格书数据、公开的模型配置、定义计算公式的论文，"
              "以及一篇关于选择大模型训练 GPU 的"
              "中文文章中的每一条论断及其判定。前向推理规则把工作负载转化为显存明细、排序后的 GPU 方案、被排除的 GPU 及原因、"
              "发现和对策，每个回答都能追溯到产生它的规则、论断和来源。"), "",
            table([t("Page", "页面"), t("What it holds", "内容")], [
                [link(t("The article", "原文"), here, ARTICLE), t(f"{len(kb.claims)} claims: ", f"{len(kb.claims)} 条论断：")
                 + ", ".join(f"{n} {ctx.verdict_badge(v)}" for v, n in sorted(verdicts.items()))],
                [link(t("Rules", "规则"), here, RULES), t(f"{len(kb.rules)}: ", f"{len(kb.rules)} 条：")
                 + t(", ", "，").join(f"{stages.get(s, 0)} {t(s, term('zh', s))}" for s in STAGES)],
                [link(t("Decision tree", "决策树"), here, TREE),
                 t(f"derived from the {len(dtree.recommendation_rules(kb.rules))} recommendation rules",
                   f"由 {len(dtree.recommendation_rules(kb.rules))} 条推荐规则生成")],
                [link(t("GPU catalog", "GPU 目录"), here, GPUS), t(f"{len(kb.gpus)} GPUs", f"{len(kb.gpus)} 种 GPU")],
                [link(t("Models", "模型"), here, MODELS), t(f"{len(kb.models)} models", f"{len(kb.models)} 个模型")],
                [link(t("Scenarios", "场景"), here, SCENARIOS),
                 t(f"{len(ctx.runs)} workloads answered when this site was built", f"{len(ctx.runs)} 个在构建时回答的工作负载")],
                [link(t("Sources", "来源"), here, SOURCES),
                 t(f"{len(kb.sources)} datasheets, papers and documents", f"{len(kb.sources)} 份规格书、论文和文档")],
            ]), "",
            t(f"Knowledge base version **{code(kb.version)}** — see the {link('changelog', here, CHANGELOG)}. "
              "Every page about an entry is generated from `kb/` and `rules/` when the site is built.",
              f"知识库版本 **{code(kb.version)}**，见{link('变更记录', here, CHANGELOG)}。"
              "每个条目页面都在构建网站时由 `kb/` 和 `rules/` 生成。"), ""]
    if ctx.zh:
        out += quick_start_zh(found)
    else:
        for heading in ("From Python", "Quick start"):
            if heading in found:
                out += [f"## {heading}", "", found[heading], ""]
    out += [f"## {t('How to read a trace', '如何阅读推理记录')}", ""]
    if "Reading a trace" in found and not ctx.zh:
        out += [found["Reading a trace"], ""]
    runs_with_best = [r for r in ctx.runs if r.answer.best is not None]
    if runs_with_best:
        run = runs_with_best[0]
        best = run.answer.best
        assert best is not None
        out += [t(f"Here are the first steps behind the best option of the scenario {ctx.scenario(here, run)}: each shows "
                  "the rule and its stage, the facts it matched, the sentence it wrote, every value with the expression "
                  "that computed it, the article's claims it rests on (quote and verdict) and its sources.",
                  f"下面是场景{ctx.scenario(here, run)}中最优方案背后的前两步：每一步给出规则及其阶段、匹配的事实、"
                  "写下的句子、每个数值及计算它的表达式、依据的原文论断（引文和判定）以及来源。"), ""]
        for step in best.trace[:2]:
            out += [render_step(ctx, here, step, heading_level=4, anchors=False), ""]
        out += [t(f"The {link('scenarios', here, SCENARIOS)} show complete traces.",
                  f"{link('场景', here, SCENARIOS)}页面给出完整的推理记录。"), ""]
    out += [t(f"How an answer is built, how far to trust it and every workload field: the {link('guide', here, GUIDE)}.",
              f"回答如何构建、可信度如何、每个工作负载字段的含义，见{link('使用指南', here, GUIDE)}。"), ""]
    return "\n".join(out)
