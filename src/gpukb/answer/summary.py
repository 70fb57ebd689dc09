"""The decision first: the fastest, the cheapest, the fewest-GPU option and the article's pick, each with
the figure that decides it, and, when nothing fits, the nearest miss per GPU type and the change that
makes it fit.

The models are part of the Answer (answer.summary); `summarize` reads an Answer's options and writes them.
It does not import the Answer's module, so the Answer can hold a Summary without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..core.fmt import Lang, duration, gb, in_lang
from ..core.words import term

# The Answer holds a Summary, so this module names the Answer's types without importing them (imports go one
# way: gpukb.answer.answer -> gpukb.answer.summary): an option is any object with the Option's fields.
Answer = Any
Option = Any

Objective = Literal["speed", "cost", "gpus"]


class Pick(BaseModel):
    """One option the summary names, with one line on the figure that decides it."""

    model_config = ConfigDict(frozen=True)
    gpu: str
    count: int
    why: str
    why_zh: str = Field(default="", exclude=True)

    def text(self, lang: Lang = "en") -> str:
        return in_lang(lang, self.why, self.why_zh)


class Miss(BaseModel):
    """A GPU type that cannot hold the workload: its closest plan and the smallest change found that fits."""

    model_config = ConfigDict(frozen=True)
    gpu: str
    count: int
    per_gpu_bytes: int
    usable_bytes: int
    rule: str  # the rule whose finding rejects that plan
    # the workload fields to change (e.g. {"gpu_count": 16}); empty where no change tried fits this GPU type
    change: dict[str, Any]
    fix: str  # the change in words, or why none was found
    fix_zh: str = Field(default="", exclude=True)

    def text(self, lang: Lang = "en") -> str:
        return in_lang(lang, self.fix, self.fix_zh)


class Summary(BaseModel):
    """The answer in a few lines: what to act on, before the table."""

    model_config = ConfigDict(frozen=True)
    headline: str
    objective: Objective
    fastest: Pick | None = None
    cheapest: Pick | None = None
    fewest_gpus: Pick | None = None
    article_pick: Pick | None = None  # where one of the article's decision-tree branches applies
    deadline_days: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # with a deadline: whether any option meets it (false: every option is late, and the headline says so first)
    deadline_met: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    nothing_fits: bool = False
    nearest_misses: tuple[Miss, ...] = Field(default=(), exclude_if=lambda v: not v)
    headline_zh: str = Field(default="", exclude=True)

    def lines(self, lang: Lang = "en", shown: int = 1000) -> list[str]:
        """The headline, then one line per named option (or per nearest miss, the first `shown` of them), unindented."""
        zh = lang == "zh"
        out = [(self.headline_zh or self.headline) if zh else self.headline]
        labels = LABELS[lang]
        # one option named by several decisions is one line: "fastest and fewest GPUs: ...", its figures once each
        groups: dict[tuple[str, int], list[tuple[str, Pick]]] = {}
        for key in ("fastest", "cheapest", "fewest_gpus"):
            if (pick := getattr(self, key)) is not None:
                groups.setdefault((pick.gpu, pick.count), []).append((key, pick))
        if self.article_pick is not None:
            groups.setdefault(("", 0), []).append(("article_pick", self.article_pick))
        for named in groups.values():
            texts = [p.text(lang) for _, p in named]
            texts = [t for i, t in enumerate(texts)  # a figure another line of the group already says is left out
                     if not any(t in other and (t != other or j < i) for j, other in enumerate(texts) if j != i)]
            words = [labels[key] for key, _ in named]
            said = words[0] if len(words) == 1 else labels["and"].format(
                first=labels["list"].join(words[:-1]), last=words[-1])
            pick = named[0][1]
            out.append(f"{said}{labels['colon']}{pick.count} {labels['x']} {pick.gpu}{labels['dash']}"
                       f"{labels['also'].join(texts)}")
        for miss in self.nearest_misses[:shown]:
            out.append(labels["miss"].format(gpu=miss.gpu, count=miss.count, used=gb(miss.per_gpu_bytes),
                                             usable=gb(miss.usable_bytes), rule=miss.rule, fix=miss.text(lang)))
        if len(self.nearest_misses) > shown:
            out.append(labels["more"].format(n=len(self.nearest_misses) - shown))
        return out


LABELS: dict[Lang, dict[str, str]] = {
    "en": {"fastest": "fastest", "cheapest": "cheapest", "fewest_gpus": "fewest GPUs", "article_pick": "article's pick",
           "miss": "{gpu} (closest plan {count}: {used}/{usable} used/usable per GPU, {rule}) — {fix}",
           "more": "... {n} more GPU types (--json lists all)",
           "colon": ": ", "x": "x", "dash": " — ", "and": "{first} and {last}", "list": ", ", "also": "; "},
    "zh": {"fastest": "最快", "cheapest": "最便宜", "fewest_gpus": "GPU 最少", "article_pick": "文章之选",
           "miss": "{gpu}（最接近的方案：{count} 块 GPU，每块占用 {used} / 可用 {usable}，{rule}）——{fix}",
           "more": "……另有 {n} 种 GPU（--json 列出全部）",
           "colon": "：", "x": "×", "dash": "——", "and": "{first}、{last}", "list": "、", "also": "；"},
}
# What the options are ranked by (ranked_by), as the headline names it
OBJECTIVE_WORDS = {"speed": ("fastest", "最快"), "cost": ("cheapest", "最便宜"), "gpus": ("fewest GPUs", "GPU 最少"),
                   "latency": ("fewest GPUs that meet the latency targets", "满足延迟目标、GPU 最少"),
                   "load": ("fewest GPUs that carry the request rate", "承载请求速率、GPU 最少"),
                   "deadline": ("fewest GPU-hours", "GPU 小时最少"),
                   # training without tokens: no budget to size clusters by, so GPU types compare per GPU
                   "per_gpu": ("most tokens/s per GPU", "每块 GPU 吞吐最高")}


def ranked_by(w: Any, first: Option | None) -> str:
    """What the options were sorted by (gpukb.answer.answer's sort keys), a key of OBJECTIVE_WORDS: the objective,
    except that with latency targets the fewest GPUs that meet them come first, and with a deadline that the first
    option meets, each GPU type is sized to just meet it and the fewest GPU-hours come first."""
    if w.objective in ("cost", "gpus"):
        return str(w.objective)
    if w.task == "inference" and (w.ttft_ms or w.tpot_ms):
        return "latency"
    if w.task == "inference" and getattr(w, "request_rate", None):
        return "load"
    if (w.deadline_days is not None and w.task != "inference" and w.placement != "all" and first is not None
            and first.meets_deadline):
        return "deadline"
    if w.task in ("pretrain", "full_finetune", "lora", "qlora") and not w.tokens:
        return "per_gpu"  # rec.rank.training scores tokens/s per GPU where no tokens are given
    return "speed"


def _tokens(n: float) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if n >= size:
            return f"{n / size:,.3g}{suffix}"
    return f"{n:,.0f}"


def _speed(o: Option, tokens: int | None, lang: Lang) -> str:
    """Tokens/s, and with a token count the time to train them and the GPU-hours."""
    rate = f"{o.tokens_per_s:,.0f} tokens/s" if o.tokens_per_s else ""
    if o.rl is not None:  # RL: the step time, where it goes, and the placement that runs it
        gen = o.rl.phases.get("generation", 0.0) / o.rl.step_time_s if o.rl.step_time_s else 0.0
        if lang == "zh":
            where = {"colocated": "共置", "split": "分离"}.get(o.rl.placement, o.rl.placement)
            return f"{rate}，每步 {o.rl.step_time_s:,.1f} s（生成占 {gen:.0%}，{where}）"
        return f"{rate}, {o.rl.step_time_s:,.1f} s per step ({gen:.0%} generating, {o.rl.placement})"
    if o.time_to_train_s and tokens:
        hours = f"{o.gpu_hours:,.0f}" if o.gpu_hours else "—"
        if lang == "zh":
            return f"{rate}，{_tokens(tokens)} 个 token 需 {duration(o.time_to_train_s, lang)}（{hours} GPU 小时）"
        return f"{rate}: {_tokens(tokens)} tokens in {duration(o.time_to_train_s)} ({hours} GPU-hours)"
    if o.load is not None:  # under load: the percentiles at the rate, and the most its replicas carry
        ttft, tpot = f"{o.load.ttft_p99_s * 1000:,.1f} ms", f"{o.load.tpot_p99_s * 1000:,.1f} ms"
        if lang == "zh":
            return f"首 token 时间 P99 {ttft}，每 token 时间 P99 {tpot}，最多每秒 {o.load.max_rate:,.1f} 个请求"
        return f"TTFT P99 {ttft}, TPOT P99 {tpot}, up to {o.load.max_rate:,.1f} requests/s"
    if o.tpot_s:
        ms = f"{o.tpot_s * 1000:,.1f} ms"
        return f"{rate}，每个输出 token {ms}" if lang == "zh" else f"{rate}, {ms} per output token"
    return rate


def per_million_tokens(o: Option) -> float | None:
    """Dollars per million tokens (generated, or trained): the same order as the cost of a token count."""
    if o.usd_per_million_tokens is not None:
        return o.usd_per_million_tokens
    if o.usd_per_hour and o.tokens_per_s:  # training: rec.cost.training's usd_per_million_tokens
        return o.usd_per_hour / (o.tokens_per_s * 3600) * 1e6
    return None


def _cost(o: Option, tokens: int | None, inference: bool, lang: Lang) -> str:
    hourly = f"${o.usd_per_hour:,.2f}/h" if o.usd_per_hour else ""
    zh = lang == "zh"
    if o.cost_usd and tokens:
        return (f"{_tokens(tokens)} 个 token 共 ${o.cost_usd:,.0f}（{hourly}，{duration(o.time_to_train_s or 0, lang)}）"
                if zh else f"${o.cost_usd:,.0f} for {_tokens(tokens)} tokens ({hourly} for {duration(o.time_to_train_s or 0)})")
    per_million = per_million_tokens(o)
    if per_million is not None:
        what = ("生成" if inference else "训练") if zh else ("generated" if inference else "training")
        if zh:
            return f"每百万{what} token ${per_million:,.2f}（{hourly}）"
        return f"${per_million:,.2f} per million {what} tokens ({hourly})"
    return hourly


def _pick(o: Option, en: str, zh: str) -> Pick:
    return Pick(gpu=o.gpu, count=o.count, why=en, why_zh=zh)


def summarize(answer: Answer, misses: Sequence[Miss] = (), horizon: bool = False, largest_cluster: int = 0) -> Summary:
    """The summary of an Answer whose options are already ranked by its objective; `horizon`: the deadline is
    the pre-training horizon (policy pretrain-horizon), not one the workload gave; options of more GPUs than
    `largest_cluster` (a cluster nobody has built) are named only when there is nothing else."""
    w = answer.workload
    inference = w.task == "inference"
    tokens = w.tokens if not inference else None
    options = [o for o in answer.options if not largest_cluster or o.count <= largest_cluster] or list(answer.options)
    # with a deadline, the decisions are among the options that meet it (8 consumer cards that take 50 years to
    # pre-train are the fewest GPUs, not an answer); the table still lists the rest, marked and ranked last
    deadline = w.deadline_days if not inference else None
    timed = [o for o in options if o.meets_deadline is not None]
    met = any(o.meets_deadline for o in timed) if deadline is not None and timed else None
    options = [o for o in options if o.meets_deadline is not False] or options
    if not options:
        return _nothing_fits(answer, misses)
    fastest = max(options, key=lambda o: (o.score, -o.count, o.gpu == options[0].gpu))
    priced = [o for o in options if per_million_tokens(o) is not None]
    cheapest = min(priced, key=lambda o: (per_million_tokens(o), -o.score, o.count)) if priced else None
    fewest = min(options, key=lambda o: (o.count, -o.score, o.gpu))
    preferred = [o for o in options if o.branch]
    article = max(preferred, key=lambda o: (o.score, -o.count)) if preferred else None

    def speed_line(o: Option) -> Pick:
        return _pick(o, _speed(o, tokens, "en"), _speed(o, tokens, "zh"))

    cheap = None
    if cheapest is not None:
        cheap = _pick(cheapest, _cost(cheapest, tokens, inference, "en"), _cost(cheapest, tokens, inference, "zh"))
    few = _pick(fewest, f"{fewest.count} GPU(s), {gb(fewest.per_gpu_bytes)} of {gb(fewest.usable_bytes)} usable per GPU; "
                        f"{_speed(fewest, tokens, 'en')}",
                f"{fewest.count} 块 GPU，每块占用 {gb(fewest.per_gpu_bytes)}，可用 {gb(fewest.usable_bytes)}；"
                f"{_speed(fewest, tokens, 'zh')}")
    pick = None
    if article is not None:
        slower = (f"; {fastest.score / article.score:,.1f}x slower than {fastest.gpu}"
                  if article is not fastest and article.score and fastest.score > article.score * 1.05 else "")
        slower_zh = (f"；比 {fastest.gpu} 慢 {fastest.score / article.score:,.1f} 倍"
                     if slower else "")
        pick = _pick(article, f"its decision tree ({article.branch}) prefers this card; {_speed(article, tokens, 'en')}"
                              f"{slower}",
                     f"文章的决策树（{article.branch}）优先选择这种卡；{_speed(article, tokens, 'zh')}{slower_zh}")
    first = options[0]
    order = ranked_by(w, first)
    word, word_zh = OBJECTIVE_WORDS[order]
    sized = w.placement != "all"  # placement 'all': the user's gpu_count is the plan, the deadline only judges it
    # latency targets and deadlines: the headline carries the first option's own figures (time per token, GPU-hours)
    named = {"speed": fastest, "per_gpu": None, "cost": cheapest, "gpus": fewest, "latency": None, "load": None,
             "deadline": None}[order]
    reason = named is not None and named.gpu == first.gpu and named.count == first.count
    # the lines below give each named option's figure; the headline says which one ranks first, and why first
    headline = f"first option ({word}): {first.count} x {first.gpu}"
    headline_zh = f"首选方案（{word_zh}）：{first.count} × {first.gpu}"
    if not sized and w.gpu_count and w.global_batch_size and first.count < w.gpu_count \
            and first.strategy.data_parallel * w.micro_batch_size >= w.global_batch_size:
        # the planner's ranks stop at the batch: the rest of the user's GPUs stand idle (still rented)
        headline += (f" busy of the {w.gpu_count} (the global batch of {w.global_batch_size} sequences feeds "
                     f"{first.strategy.data_parallel} data-parallel ranks; the rest stand idle)")
        headline_zh += (f" 在工作，gpu_count 给出的 {w.gpu_count} 块中其余空闲（全局批次 {w.global_batch_size} 条序列只供给 "
                        f"{first.strategy.data_parallel} 个数据并行进程）")
    if not reason:  # ranked first by a figure no line below names (e.g. the fewest GPUs among unpriced options)
        headline += f" — {speed_line(first).why}"
        headline_zh += f"——{speed_line(first).why_zh}"
    if first.usd_per_hour is None:  # a first option without a price says why: no system that runs it has a cited one
        headline += f"; no price: no cited on-demand price for {first.system or first.gpu} or any system that runs this plan"
        headline_zh += f"；没有价格：{first.system or first.gpu} 及其他能运行该方案的系统都没有注明出处的按需价格"
    if met is False and sized:  # every option is late: the headline says so, with the time the first option takes
        which, which_zh = _deadline_words(deadline, horizon)
        headline += f"; no option meets {which} (this one takes {duration(first.time_to_train_s or 0)})"
        headline_zh += _zh("；没有方案能在", which_zh, f"内完成（此方案需 {duration(first.time_to_train_s or 0, 'zh')}）")
    elif deadline is not None:
        late = [o.gpu for o in answer.options if o.time_to_train_s and o.time_to_train_s > deadline * 86400]
        which, which_zh = _deadline_words(deadline, horizon)
        if sized:
            headline += f"; clusters sized to {which}" + (f"; {len(late)} GPU type(s) cannot meet it" if late else "")
            headline_zh += _zh("；集群按", which_zh, "配置") + (f"；{len(late)} 种 GPU 做不到" if late else "")
        elif first.time_to_train_s:  # the user's cluster: whether it meets the deadline, and by how much
            days = (deadline * 86400 - first.time_to_train_s) / 86400
            headline += (f"; gpu_count {w.gpu_count} as given (placement all): {which} "
                         + (f"met with {days:,.1f} days to spare" if days >= 0 else f"missed by {-days:,.1f} days")
                         + (f"; {len(late)} GPU type(s) miss it" if late else ""))
            headline_zh += (_zh(f"；按给定的 gpu_count {w.gpu_count}（placement all）：", which_zh,
                                f"提前 {days:,.1f} 天完成" if days >= 0 else f"超出 {-days:,.1f} 天")
                            + (f"；{len(late)} 种 GPU 无法按期完成" if late else ""))
    return Summary(headline=headline, headline_zh=headline_zh, objective=w.objective, fastest=speed_line(fastest),
                   cheapest=cheap, fewest_gpus=few, article_pick=pick, deadline_days=deadline, deadline_met=met)


def _deadline_words(deadline: float, horizon: bool) -> tuple[str, str]:
    """The deadline the options were sized to, in English and Chinese: the workload's, or the horizon policy's."""
    if horizon:
        return (f"the {deadline:g}-day pre-training horizon (policy pretrain-horizon; deadline_days sets another)",
                f"{deadline:g} 天的预训练期限（策略 pretrain-horizon；可用 deadline_days 另设）")
    return f"deadline_days {deadline:g}", f"deadline_days {deadline:g}"


def _zh(*parts: str) -> str:
    """Chinese parts joined as Chinese is typeset: a space where a Chinese character meets a Latin letter or a
    digit, none beside full-width punctuation ("能在 30 天", "按 deadline_days 30 配置", "：30 天")."""
    text = parts[0]
    for part in parts[1:]:
        if text and part and _latin(text[-1]) != _latin(part[0]) and _cjk(text[-1]) | _cjk(part[0]):
            text += " "
        text += part
    return text


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _cjk(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff"


def _nothing_fits(answer: Answer, misses: Sequence[Miss]) -> Summary:
    w = answer.workload
    within = f" within gpu_count {w.gpu_count}" if w.gpu_count else ""
    fixable = [m for m in misses if m.change]
    hint = f"; e.g. {fixable[0].gpu}: {fixable[0].fix}" if fixable else ""
    hint_zh = f"；例如 {fixable[0].gpu}：{fixable[0].text('zh')}" if fixable else ""
    return Summary(
        headline=f"nothing fits: none of the {len(answer.rejected)} GPU type(s) can run {w.model} ({w.task}){within}{hint}",
        headline_zh=f"放不下：{len(answer.rejected)} 种 GPU 都无法运行 {w.model}（{term('zh', w.task)}"
                    f"{f'，最多 {w.gpu_count} 块 GPU' if w.gpu_count else ''}）{hint_zh}",
        objective=w.objective, nothing_fits=True, nearest_misses=tuple(misses),
        deadline_days=w.deadline_days if w.task != "inference" else None)
