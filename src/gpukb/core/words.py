"""The fixed words of gpukb's texts in each language: labels, verdicts, severities, stages, tasks.

Knowledge (titles, reasons, rule sentences) carries its own translations in kb/ and rules/; this
table holds only the words the program itself prints around them.
"""

from __future__ import annotations

from .fmt import Lang

WORDS: dict[Lang, dict[str, str]] = {
    "en": {
        "one_replica": "One replica before sharding: weights {weights}, gradients {gradients}, optimizer {optimizer}, "
                       "activations {activations}, KV cache {kv_cache}, overhead {overhead} = {total} (GB = 1e9 bytes).",
        "assumption": "Assumption: {note}",
        "no_option": "No candidate GPU type can run this workload within the limits given.",
        "best": "Best option: {count} x {gpu} — {strategy}; {per_gpu} of {usable} usable per GPU.",
        "why": "Why:",
        "why_not": "Why not:",
        "findings": "Findings:",
        "remedies": "Remedies:",
        "rests_on": "rests on",
        "refutes": "refutes",
        "sources": "sources",
        "lower_ranked": "Ranked lower:",
        "late": "misses the deadline, which {best} meets",
        "unpriced": "no dated cloud price is known; {best} has one",
        "dearer": "${usd} per million tokens against ${best_usd} on {best}",
        "more_gpu_hours": "{hours} GPU-hours against {best_hours} on {best}, both within the deadline",
        "slower": "{speed} effective tokens/s against {best_speed} on {best}",
        "more_gpus": "needs {count} GPUs against {best_count} for {best}",
        "tie": "as fast as {best} on as many GPUs; tokens/s per dollar, then the id, decide",
        "data_parallel": "data parallel {n}",
        "tensor_parallel": "tensor parallel {n}",
        "pipeline_parallel": "pipeline parallel {n}",
        "expert_parallel": "expert parallel {n}",
        "context_parallel": "context parallel {n}",
        "zero": "ZeRO-{n}",
        "checkpointing": "activation checkpointing",
        "no_recomputation": "no recomputation",
        "offload": "offload {what} to CPU",
        "nodes": "{n} nodes",
        "sep": ", ",
        "colon": ": ",
    },
    "zh": {
        "one_replica": "切分前的一个副本：权重 {weights}，梯度 {gradients}，优化器状态 {optimizer}，激活值 {activations}，"
                       "KV 缓存 {kv_cache}，运行时开销 {overhead}，合计 {total}（GB = 1e9 字节）。",
        "assumption": "假设：{note}",
        "no_option": "在给定的限制内，没有任何候选 GPU 型号能运行该工作负载。",
        "best": "最佳方案：{count} × {gpu}——{strategy}；每块 GPU 占用 {per_gpu}，可用 {usable}。",
        "why": "理由：",
        "why_not": "为什么不选：",
        "findings": "发现：",
        "remedies": "对策：",
        "rests_on": "依据",
        "refutes": "反驳",
        "sources": "来源",
        "lower_ranked": "排名靠后的方案：",
        "late": "赶不上期限，而 {best} 能赶上",
        "unpriced": "没有注明日期的云价格；{best} 有",
        "dearer": "每百万 token ${usd}，{best} 为 ${best_usd}",
        "more_gpu_hours": "需 {hours} GPU 小时，{best} 为 {best_hours}，两者都在期限内",
        "slower": "有效吞吐 {speed} tokens/s，低于 {best} 的 {best_speed}",
        "more_gpus": "需要 {count} 块 GPU，而 {best} 只需 {best_count} 块",
        "tie": "与 {best} 速度相同、GPU 数相同；由每美元 tokens/s 和 id 决定",
        "data_parallel": "数据并行 {n}",
        "tensor_parallel": "张量并行 {n}",
        "pipeline_parallel": "流水线并行 {n}",
        "expert_parallel": "专家并行 {n}",
        "context_parallel": "上下文并行 {n}",
        "zero": "ZeRO-{n}",
        "checkpointing": "激活重计算",
        "no_recomputation": "不重计算",
        "offload": "将{what}卸载到 CPU 内存",
        "nodes": "{n} 个节点",
        "sep": "，",
        "colon": "：",
    },
}

# values the engine uses, as each language names them
TERMS: dict[Lang, dict[str, str]] = {
    "en": {},
    "zh": {
        "supported": "成立", "qualified": "有条件成立", "contradicted": "不成立", "unverifiable": "无法核实",
        "error": "错误", "warning": "警告", "info": "提示",
        "requirements": "需求", "bottlenecks": "瓶颈", "remedies": "对策", "recommendations": "推荐",
        "pretrain": "预训练", "full_finetune": "全量微调", "lora": "LoRA 微调", "qlora": "QLoRA 微调",
        "inference": "推理", "training": "训练", "any": "任意任务",
        "grpo": "GRPO 强化学习", "ppo": "PPO 强化学习", "dpo": "DPO 偏好优化",
        "colocated": "共置", "split": "分离",
    },
}

# Catalog values (a GPU's vendor, segment, form factor and cooling; a source's kind; an entry's status; a
# system's kind) as each language shows them in a sentence or a table. English shows the value itself.
VALUES: dict[Lang, dict[str, dict[str, str]]] = {
    "en": {},
    "zh": {
        "vendor": {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "huawei": "华为"},
        "segment": {"datacenter": "数据中心", "workstation": "工作站", "consumer": "消费级"},
        "form_factor": {"sxm": "SXM", "pcie": "PCIe 板卡", "oam": "OAM", "mezzanine": "夹层卡"},
        "cooling": {"passive": "被动散热", "active": "主动散热（风扇）", "liquid": "液冷"},
        "source_kind": {"datasheet": "数据手册", "paper": "论文", "documentation": "文档", "model_config": "模型配置",
                        "article": "文章", "whitepaper": "白皮书", "spec": "规范", "price_list": "价目表"},
        "status": {"draft": "草稿", "stable": "稳定", "deprecated": "已弃用"},
        "system_kind": {"cloud": "云实例", "server": "服务器", "workstation": "工作站"},
        "price_kind": {"launch_msrp": "首发建议零售价", "list_price": "标价"},
        "claim_kind": {"quantitative": "定量", "qualitative": "定性", "recommendation": "建议"},
        "policy_unit": {"fraction": "比例", "bytes": "字节", "bandwidth": "字节/s", "ratio": "倍数", "tokens": "token 数",
                        "seconds": "s", "count": "个", "gCO2/kWh": "gCO₂/kWh"},
        "link_kind": {"scale_up": "卡间互联", "host": "主机链路", "scale_out": "节点间网络"},
        "mlp": {"gated": "门控（三个矩阵）", "standard": "标准（两个矩阵）"},
        "norm": {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"},
        "position_embeddings": {"rope": "RoPE 旋转位置编码", "learned": "可学习的绝对位置编码"},
        "unit": {"GPU hours": "GPU 小时", "hours": "小时", "seconds": "s", "bytes": "字节"},
        "regime": {"training": "训练", "inference": "推理", "any": "任意", "batched": "批处理", "single": "单请求"},
        "bound": {"compute": "算力受限", "memory": "访存受限", "host": "受主机下发步骤的时间限制"},
        "link": {"the network between nodes": "节点间网络", "the GPU-to-GPU link": "卡间互联", "PCIe": " PCIe 链路"},
        "energy_scope": {"gpu": "GPU 板卡", "node": "整台服务器", "facility": "整个数据中心（按 PUE）"},
        "fact": {"workload": "工作负载", "policy": "策略", "gpu": "GPU", "plan": "方案", "fleet": "候选集", "rl": "RL 运行",
                 "activations": "激活", "kv_cache": "KV 缓存", "adapters": "适配器", "memory": "显存", "finding": "发现",
                 "remedy": "对策", "rl_step": "RL 一步", "comm": "通信", "rank": "排序", "cost": "成本", "energy": "能耗",
                 "capacity": "容量", "preference": "偏好", "estimate": "估算", "model": "模型", "part": "部分"},
        "finding": {"memory_capacity": "显存容量", "memory_bandwidth": "显存带宽", "compute": "算力",
                    "interconnect": "互联", "precision": "精度", "thermal": "散热", "software": "软件栈",
                    "cost": "成本", "latency": "时延", "deadline": "期限", "energy": "能耗", "capacity": "容量"},
    },
}


# The command line's labels (table titles, column headers, hints) in Chinese, keyed by the English ones
LABELS_ZH: dict[str, str] = {
    "One replica, before sharding (GB = 1e9 bytes)": "切分前的一个副本（GB = 1e9 字节）",
    "weights": "权重", "grads": "梯度", "optimizer": "优化器状态", "activations": "激活值", "KV cache": "KV 缓存",
    "overhead": "运行时开销", "total": "合计", "GPU": "GPU", "GPUs": "卡数", "GB/GPU used/usable": "每卡 GB 占用/可用",
    "strategy": "并行策略", "tokens/s": "tokens/s", "time to train": "训练用时", "GPU-h": "GPU 小时",
    "TTFT ms": "首 token 时延 ms",
    "ms/tok": "每 token 时延 ms", "pick": "文章之选", "$/h": "美元/小时", "$/Mtok": "美元/百万 token", "cost": "费用",
    "fastest first": "最快的在前", "fewest GPUs that meet the latency targets first": "满足延迟目标、卡数最少的在前",
    "fewest GPUs that carry the request rate first": "承载请求速率、卡数最少的在前",
    "cheapest first": "最便宜的在前", "fewest GPUs first": "卡数最少的在前",
    "most tokens/s per GPU first": "每块 GPU 吞吐最高的在前",
    "Options, {order}": "可选方案，{order}", "within {days} days, fewest GPU-hours first": "{days} 天内完成，GPU 小时最少的在前",
    "within {days} days, fastest first": "{days} 天内完成，最快的在前",
    "none within {days} days: fastest first": "没有方案能在 {days} 天内完成：最快的在前",
    "Not within {days} days: ": "无法在 {days} 天内完成：",
    "* the article's pick: its decision tree ({branches}) prefers these GPUs; they are marked, not ranked up":
        "* 文章之选：文章的决策树（{branches}）优先推荐这些 GPU；只做标记，不提前排序",
    "Rejected": "被排除的 GPU", "why": "原因", "Findings": "发现", "Remedies": "对策",
    "Run with --explain for the full trace, --json for everything.": "加 --explain 查看完整推理记录，加 --json 查看全部数据。",
    "seq": "序列长度", "grid": "电网",
    "placement": "放置", "s/step": "s/步", "gen/train/other": "生成/训练/其他",
    # gpukb list
    "id": "id", "name": "名称", "memory": "显存", "bandwidth": "显存带宽", "BF16 TFLOPS": "BF16 TFLOPS",
    "$/GPU-h": "$/GPU 小时", "price": "售价", "gpu": "GPU", "P2P": "P2P", "network": "节点间网络",
    "host memory": "主机内存", "$/node-h": "$/节点小时", "params": "参数量", "layers": "层数", "context": "上下文",
    "Hugging Face repository": "Hugging Face 仓库", "yes": "是", "no": "否", "none": "无",
    "GPUs (--gpu ID; GB = 1e9 bytes; BF16 dense; $/GPU-h: lowest dated cloud on-demand price)":
        "GPU（--gpu ID；GB = 1e9 字节；BF16 为稠密算力；$/GPU 小时：有日期的云按需价格中最低者）",
    "Systems (--system ID; network: per node between nodes; $/node-h: lowest price)":
        "系统（--system ID；节点间网络按每节点计；$/节点小时：最低价格）",
    "Models (--model ID or its Hugging Face repository; params in billions, active of total for MoE)":
        "模型（--model ID 或其 Hugging Face 仓库；参数量以十亿（B）计，MoE 模型列出激活参数量与总参数量）",
}


_OFFLOAD: dict[Lang, dict[str, str]] = {
    "en": {"none": "no offload", "optimizer": "optimizer offloaded", "optimizer+params": "optimizer and parameters offloaded"},
    "zh": {"none": "不卸载", "optimizer": "卸载优化器状态", "optimizer+params": "卸载优化器状态和参数"},
}


_RL: dict[Lang, dict[str, str]] = {
    "en": {"colocated": "colocated", "split": "split", "switch": "engine sleep and wake",
           "offload": "weights and optimizer states to host memory and back"},
    "zh": {"generation": "生成", "reference": "参考模型前向", "reward": "奖励模型打分", "critic": "价值模型",
           "training": "训练", "sync": "权重同步", "switch": "生成引擎休眠与唤醒",
           "offload": "权重与优化器状态换出到主机内存再换回",
           "colocated": "共置", "split": "分离部署"},
}


def rl_word(lang: Lang, value: str) -> str:
    """An RL phase or placement (`generation`, `training`, `colocated`, ...) in words."""
    return _RL[lang].get(value, value)


def offload(lang: Lang, value: str) -> str:
    """A plan's `offload` value in words (never the raw value inside a sentence)."""
    return _OFFLOAD[lang].get(value, value)


def label(lang: Lang, text: str, **values: object) -> str:
    """A command-line label in `lang` (the English text is the key), with its values filled in."""
    return (LABELS_ZH.get(text, text) if lang == "zh" else text).format(**values)


def say(lang: Lang, key: str, **values: object) -> str:
    return WORDS[lang][key].format(**values)


def term(lang: Lang, value: str) -> str:
    """An engine value (verdict, severity, stage, task) in `lang`; unchanged where it has no translation."""
    return TERMS[lang].get(value, value)


def value(lang: Lang, field: str, raw: str) -> str:
    """A catalog value of `field` (VALUES' keys: vendor, segment, cooling, source_kind, ...) in `lang`."""
    return VALUES[lang].get(field, {}).get(raw, raw)
