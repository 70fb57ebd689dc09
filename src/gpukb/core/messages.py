"""What gpukb tells a user about input it cannot answer, by message id, in English and Chinese.

One table so each error reads the same in both languages and a translation is never scattered across
the raise sites: a raise site names a message id and its values (`Message`), and the text is written in
the reader's language when it is shown. Field names, ids and commands stay as written in both (they are
what the user types); the Chinese uses the glossary's terms (kb/glossary, tests/test_glossary.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .fmt import Lang

MESSAGES: dict[str, tuple[str, str]] = {
    # workload.py: the fields one at a time, then how they fit together
    "whole_number": ("expected a whole number, got {value}", "需要整数，收到的是 {value}"),
    "not_a_number": ("expected a number, got {value}", "需要数值，收到的是 {value}"),
    "out_of_range": ("{value:g} is outside the plausible range, {low:g} to {high:g}",
                     "{value:g} 不在合理范围之内（{low:g} 到 {high:g}）"),
    "count_unreadable": ("cannot read {value!r} as a whole number: write e.g. 4096, '4k' (4,000), '4Ki' (4,096), "
                         "'7B' or '70e9'",
                         "无法把 {value!r} 读成整数：请写成 4096、'4k'（4,000）、'4Ki'（4,096）、'7B' 或 '70e9' 这样的形式"),
    "count_not_whole": ("{value!r} is not a whole number", "{value!r} 不是整数"),
    "count_too_large": ("{value!r} is too large to be a count", "{value!r} 太大，不能作为数量"),
    "too_many_gpu_ids": ("more than {limit:,} GPU ids (the catalog has far fewer; `gpu_count` is how many to use)",
                         "GPU id 超过 {limit:,} 个（目录里远没有这么多型号；要用几块 GPU 请写在 `gpu_count`）"),
    "not_a_workload": ("expected a dict or gpukb.Workload, got {type}", "需要 dict 或 gpukb.Workload，收到的是 {type}"),
    "unknown_field": ("unknown field (fields: {fields})", "未知字段（可用的字段：{fields}）"),
    # probe.py: runs the probe cannot make
    "probe_framework": ("framework: the probe runs the eager Transformers stack (hf) only, not {framework}",
                        "framework：探测只运行 Transformers 的 eager 技术栈（hf），不运行 {framework}"),
    "probe_qlora": ("task: qlora needs bitsandbytes' 4-bit kernels, which the probe does not use; probe lora",
                    "task：qlora 需要 bitsandbytes 的 4 位核函数，探测不使用它；请改测 lora"),
    "probe_optimizer": ("optimizer: {optimizer} is not in torch.optim; probe adamw, sgd or sgd_momentum",
                        "optimizer：{optimizer} 不在 torch.optim 中；请改测 adamw、sgd 或 sgd_momentum"),
    "probe_no_fit": ("would not fit one {gpu}: {why}; shrink it with --layers N",
                     "一块 {gpu} 放不下：{why}；请用 --layers N 缩小"),
    "probe_needs_more": ("would not fit one {gpu} without offload or more GPUs ({count} GPU(s), offload {offload}); "
                         "shrink it with --layers N, or run it anyway with --force",
                         "不卸载、不加 GPU 时一块 {gpu} 放不下（{count} 块 GPU，offload {offload}）；请用 --layers N "
                         "缩小，或用 --force 照样运行"),
    "probe_no_torch": ("PyTorch is not installed: pip install 'gpukb[probe]'",
                       "没有安装 PyTorch：请运行 pip install 'gpukb[probe]'"),
    "probe_no_cuda": ("device: cuda asked for, but PyTorch sees no CUDA device",
                      "device：要求使用 cuda，但 PyTorch 看不到 CUDA 设备"),
    "probe_unknown_gpu": ("device: {name} is not in kb/gpus, so gpukb has no prediction for it",
                          "device：{name} 不在 kb/gpus 中，gpukb 无法给出预测"),
    "probe_cpu_ram": ("would not fit: the run needs about {need:,.1f} GB, more than {share:.0%} of this machine's "
                      "{ram:,.1f} GB; use --tiny or --layers",
                      "放不下：运行约需 {need:,.1f} GB，超过本机 {ram:,.1f} GB 内存的 {share:.0%}；请用 --tiny 或 --layers"),
    "probe_oom": ("out of memory on {where} at {peak:,.1f} GB allocated: the run does not fit (gpukb predicted "
                  "{predicted:,.1f} GB allocated)",
                  "{where} 显存不足，已分配 {peak:,.1f} GB 时失败：运行放不下（gpukb 预测已分配 {predicted:,.1f} GB）"),
    "probe_out": ("--out {path}: {why}", "--out {path}：{why}"),
    "rl_role": ("{detail} (the {role} of the RL run, asked as {task})",
                "{detail}（强化学习任务中的 {role}，按 {task} 任务计算）"),
    "rl_only": ("only for RL post-training (task grpo, ppo or dpo)", "只用于强化学习后训练（task grpo、ppo 或 dpo）"),
    "rl_excluded": ("not used for task {task} (an RL step's sequences are prompt_len + response_len long and its batch "
                    "is rollout_batch x samples_per_prompt); remove it",
                    "task {task} 不用这个字段（强化学习每步的序列长为 prompt_len + response_len，批量为 rollout_batch × "
                    "samples_per_prompt）；请删掉"),
    "rl_no_cost": ("RL runs are ranked by speed or gpus; each option states what a step costs (usd_per_step), "
                   "but they are not ranked by it",
                   "强化学习任务只按速度或 GPU 数排序；每个方案给出每步的费用（usd_per_step），但不按它排序"),
    "rl_needed": ("needed for task {task}", "task {task} 需要这个字段"),
    "rl_needed_also": ("needed for task {task}, as are {others}", "task {task} 需要这个字段，还需要 {others}"),
    "rl_group_size": ("needed for grpo (the group size: responses per prompt)",
                      "grpo 需要这个字段（组大小：每个提示词生成的回答数）"),
    "rl_dpo_generates_nothing": ("dpo learns from fixed preference pairs and generates nothing; remove it",
                                 "dpo 从固定的偏好数据对学习，不做生成；请删掉"),
    "rl_critic_ppo_only": ("only ppo trains a critic; remove it", "只有 ppo 训练价值模型（critic）；请删掉"),
    "rl_mean_too_long": ("{mean} is longer than response_len {longest}, the longest a response may be",
                         "{mean} 比 response_len {longest}（回答的最大长度）还长"),
    "rl_step_too_large": ("{given} make {sequences:,} sequences per step, more than the {limit:,} a training step "
                          "may hold", "{given} 每步共 {sequences:,} 条序列，超过一个训练步最多容纳的 {limit:,} 条"),
    "rl_rollout_too_large": ("{given} make {sequences:,} sequences per step, more than the {limit:,} one batch of the "
                             "rollout engine may hold", "{given} 每步共 {sequences:,} 条序列，超过生成引擎一批最多容纳的 "
                             "{limit:,} 条"),
    "rl_sequence_too_long": ("prompt_len + response_len make {tokens:,} tokens per sequence, more than the {limit:,} "
                             "a sequence may have", "prompt_len + response_len 每条序列共 {tokens:,} 个 token，"
                             "超过序列长度上限 {limit:,}"),
    "rl_no_reference": ("reference_model is 'none'", "reference_model 为 'none'"),
    "rl_no_reward_model": ("no reward_model given (the reward is rule-based)", "没有给出 reward_model（奖励由规则计算）"),
    "rl_trained_role_quantized": ("{precision} is for inference only; the {role} is trained",
                                  "{precision} 只用于推理；{role} 是要训练的"),
    "rl_split_needs_two": ("a split placement needs GPUs for the trainer and the rollout engine (2 or more)",
                           "分离部署需要分别给训练端和采样（rollout）引擎 GPU（至少 2 块）"),
    "rl_micro_batch_divides": ("{micro_batch_size} does not divide the step's {sequences} sequences",
                               "{micro_batch_size} 不能整除每步的 {sequences} 条序列"),
    "rl_global_batch_divides": ("{global_batch_size} sequences per optimizer step must divide the step's {sequences} "
                                "sequences and be a multiple of micro_batch_size {micro_batch_size}",
                                "每次优化器更新的 {global_batch_size} 条序列必须能整除每步的 {sequences} 条序列，"
                                "且是 micro_batch_size {micro_batch_size} 的整数倍"),
    "model_or_params": ("give either model (a catalog id) or params (with its architecture), not both or neither",
                        "model（目录中的模型 id）与 params（连同模型结构）必须给出其一，且只能给一个"),
    "not_for_inference": ("not used for inference; remove it", "推理不用这个字段；请删掉"),
    "precision_inference_only": ("{precision} is for inference only; for 4-bit fine-tuning use task 'qlora'",
                                 "{precision} 只用于推理；4 位微调请用 task 'qlora'"),
    "batch_size_training": ("inference concurrency; for training use micro_batch_size",
                            "这是推理的并发请求数；训练请用 micro_batch_size"),
    "inference_only_load": ("only for inference under load (task inference with request_rate)",
                            "只用于负载下的推理（task 为 inference 并给出 request_rate）"),
    "plot_needs_rate": ("--plot and --plot-svg draw latency against the request rate: give --request-rate",
                        "--plot 和 --plot-svg 画的是延迟随请求速率的变化：请给出 --request-rate"),
    "load_needs_rate": ("only with request_rate (requests per second)", "需要同时给出 request_rate（每秒请求数）"),
    "load_needs_lengths": ("request_rate needs prompt_len and output_len (each request's lengths, or their means)",
                           "给出 request_rate 时必须同时给出 prompt_len 和 output_len（每个请求的长度或其均值）"),
    "load_excludes": ("not used with request_rate: under load the engine sets the concurrency; use {instead}",
                      "给出 request_rate 时不用这个字段：负载下的并发由引擎决定；请改用 {instead}"),
    "load_p99_below_p50": ("the P99 target {p99:g} ms is below the P50 target {p50:g} ms",
                           "P99 目标 {p99:g} ms 低于 P50 目标 {p50:g} ms"),
    "inference_only": ("only for inference; for training use seq_len", "只用于推理；训练请用 seq_len"),
    "global_batch_multiple": ("{global_batch_size} is not a multiple of micro_batch_size {micro_batch_size}",
                              "{global_batch_size} 不是 micro_batch_size {micro_batch_size} 的整数倍"),
    "lora_rank_task": ("only for task lora or qlora", "只用于 task lora 或 qlora"),
    "offload_needs_zero3": ("parameter offload needs zero_stage 3 (ZeRO-Infinity)",
                            "把参数卸载到 CPU 内存需要 zero_stage 3（ZeRO-Infinity）"),
    "no_offload_with": ("not combined with CPU offload here; drop one of them",
                        "这里不能与卸载到 CPU 内存同时使用；请去掉其中一个"),
    "context_parallel_divides": ("{context_parallel} does not divide seq_len {seq_len}",
                                 "{context_parallel} 不能整除 seq_len {seq_len}"),
    "deadline_needs_tokens": ("sizes the cluster that trains `tokens` in time; give tokens too",
                              "用来确定按期训练完 `tokens` 所需的集群规模；请同时给出 tokens"),
    "virtual_stages_need_pipeline": ("interleaves the stages of a pipeline; give pipeline_parallel of 2 or more with it",
                                     "用于交错排布流水线的各级；请同时给出不小于 2 的 pipeline_parallel"),
    "backward_step_task": ("only for full training (full_finetune or pretrain); an adapter's gradients are too small "
                           "to matter", "只用于全量训练（full_finetune 或 pretrain）；适配器的梯度很小，不值得这样做"),
    "backward_step_accumulation": ("every micro-batch is its own optimizer step, so gradients cannot accumulate to a "
                                   "global_batch_size; remove one of them",
                                   "每个微批次各做一次优化器更新，梯度无法累积到 global_batch_size；请去掉其中一个"),
    "expert_parallel_task": ("only for full training (full_finetune or pretrain) of a mixture-of-experts model",
                             "只用于混合专家模型的全量训练（full_finetune 或 pretrain）"),
    "flash_version_needs_flash": ("a FlashAttention generation, but flash_attention is false; remove one of them",
                                  "flash_attention 为 false 时不用 FlashAttention，也就没有版本之分；请去掉其中一个"),
    "mlp_from_model": ("comes from the catalog model; give it only with params", "由目录中的模型决定；只在给出 params 时填写"),
    "placement_needs_count": ("'all' uses exactly gpu_count GPUs; give gpu_count",
                              "'all' 表示正好使用 gpu_count 块 GPU；请给出 gpu_count"),
    "gpu_count_too_few": ("{gpu_count} is fewer than tensor_parallel x pipeline_parallel x expert_parallel x "
                          "context_parallel = {needed}",
                          "{gpu_count} 小于 tensor_parallel × pipeline_parallel × expert_parallel × context_parallel = "
                          "{needed}"),
    # resolve.py and hub.py: the workload against the catalog
    "from_the_model": ("comes from the model '{model}'; to describe your own architecture give params instead of model",
                       "由模型 '{model}' 决定；要描述自己的模型结构，请给出 params 而不是 model"),
    "adapters_not_sized": ("{task} adapters are not sized for {model}'s architecture (multi-head latent attention or "
                           "shared experts) yet; ask full_finetune or inference",
                           "gpukb 还不能按 {model} 的结构（多头潜在注意力或共享专家）估算 {task} 适配器；"
                           "请改问 full_finetune 或 inference"),
    "custom_needs": ("needed with params (activation and KV-cache memory depend on it); give {missing} or use a "
                     "catalog model id", "给出 params 时必须提供（激活值和 KV 缓存占用的显存取决于它）；请给出 {missing}，"
                                         "或改用目录中的模型 id"),
    "heads_divide": ("hidden_size {hidden_size} is not a multiple of heads {heads}",
                     "hidden_size {hidden_size} 不是 heads {heads} 的整数倍"),
    "kv_heads_divide": ("heads {heads} is not a multiple of kv_heads {kv_heads}",
                        "heads {heads} 不是 kv_heads {kv_heads} 的整数倍"),
    "params_mismatch": ("{params:,} is not within a factor {tolerance:g} of the {derived:,} parameters the given "
                        "dimensions hold; check params and the dimensions",
                        "{params:,} 与给定维度算出的 {derived:,} 个参数相差超过 {tolerance:g} 倍；请检查 params 和各个维度"),
    "model_deprecated": ("'{model}' is deprecated and has left the catalog{instead}", "'{model}' 已弃用，已移出目录{instead}"),
    "use_instead": ("; use {model}", "；请改用 {model}"),
    "model_ref_too_long": ("a catalog id or a path of at most {limit} characters, not {length:,}",
                           "应为目录中的 id 或不超过 {limit} 个字符的路径，这里有 {length:,} 个字符"),
    "not_a_repository": ("'{ref}' is neither a catalog model's Hugging Face repository nor a config.json here{hint} "
                         "(hf:{ref} downloads its config.json: pip install 'gpukb[hub]'; `gpukb list models` shows the "
                         "catalog)", "'{ref}' 既不是目录中模型的 Hugging Face 仓库，也不是本地的 config.json{hint}"
                                     "（hf:{ref} 会下载它的 config.json：pip install 'gpukb[hub]'；"
                                     "`gpukb list models` 列出目录）"),
    "unknown_model": ("unknown model '{ref}'{hint} (give a catalog id or the path to a Hugging Face config.json; "
                      "`gpukb list models` shows the catalog)",
                      "未知模型 '{ref}'{hint}（请给出目录中的 id 或 Hugging Face config.json 的路径；"
                      "`gpukb list models` 列出目录）"),
    "unknown_gpu": ("unknown GPU '{gpu}'{hint} (`gpukb list gpus` shows the catalog)",
                    "未知 GPU '{gpu}'{hint}（`gpukb list gpus` 列出目录）"),
    "unknown_system": ("unknown system '{system}'{hint} (`gpukb list systems` shows the catalog)",
                       "未知系统 '{system}'{hint}（`gpukb list systems` 列出目录）"),
    "system_listed_twice": ("'{system}' is listed twice: systems names the machines a plan may run on, each once",
                            "'{system}' 列出了两次：systems 列的是方案可用的机器，每种只写一次"),
    "systems_hold_none": ("none of these systems holds a GPU of gpus ({gpus}): name systems of those GPUs, or leave "
                          "one of the two out",
                          "这些系统都不含 gpus 中的 GPU（{gpus}）：请写这些 GPU 的系统，或去掉两者之一"),
    "gpu_listed_twice": ("'{gpu}' is listed {times} times: gpus names the GPU types to compare, each once; for {times} "
                         "GPUs of one type give gpu_count: {times}",
                         "'{gpu}' 列出了 {times} 次：gpus 列的是要比较的 GPU 型号，每种只写一次；"
                         "要用 {times} 块同型号 GPU，请写 gpu_count: {times}"),
    "stages_need_layers": ("{stages} stages for {layers} layers: a stage needs at least one layer",
                           "{layers} 层分成 {stages} 级：每级至少要有一层"),
    "chunks_need_layers": ("{layers} layers do not split into {stages} stages x {chunks} chunks of whole layers, even "
                           "with the embedding and the loss counted as a layer each",
                           "{layers} 层无法按整层切成 {stages} 级 × {chunks} 块，即使把嵌入层和损失各算作一层也不行"),
    "rank_over_width": ("{rank} exceeds the hidden size {hidden_size}: an adapter's rank is at most the width it adapts",
                        "{rank} 超过隐藏层宽度 {hidden_size}：适配器的秩不能超过它所适配的宽度"),
    "tp_heads": ("{tp} does not divide the {heads} attention heads", "{tp} 不能整除 {heads} 个注意力头"),
    "ep_experts": ("{ep} does not divide the {experts} routed experts", "{ep} 不能整除 {experts} 个路由专家"),
    "ep_dense": ("the model has no routed experts to split (not a mixture of experts)",
                 "该模型没有可切分的路由专家（不是混合专家模型）"),
    "not_training_precision": ("{precision} is not a training precision", "{precision} 不能用于训练"),
    "seq_shorter": ("{seq_len} is shorter than prompt_len + output_len", "{seq_len} 小于 prompt_len + output_len"),
    "context_too_long": ("a {seq_len:,}-token context is longer than {model}'s {context:,} (max_position_embeddings, "
                         "with any RoPE scaling): serving engines refuse it; for a RoPE-scaled model give its config.json",
                         "{seq_len:,} 个 token 的上下文超过 {model} 的 {context:,}（max_position_embeddings，"
                         "已计入 RoPE 缩放）：推理引擎会拒绝；经过 RoPE 缩放的模型请给出它的 config.json"),
    "unknown_framework": ("'{framework}' is not in kb/frameworks{hint}", "'{framework}' 不在 kb/frameworks 中{hint}"),
    "framework_task": ("{framework} does not run task {task}; frameworks for it: {runs}",
                       "{framework} 不支持 task {task}；支持它的框架：{runs}"),
    "hub_repo_format": ("hf:{repo}: expected hf:ORG/NAME, e.g. hf:meta-llama/Llama-3.1-8B",
                        "hf:{repo}：应写成 hf:ORG/NAME，例如 hf:meta-llama/Llama-3.1-8B"),
    "hub_extra": ("hf:{repo}: reading a model from the Hugging Face Hub needs the hub extra: pip install 'gpukb[hub]'",
                  "hf:{repo}：从 Hugging Face Hub 读取模型需要安装 hub 扩展：pip install 'gpukb[hub]'"),
    "hub_download": ("hf:{repo}: cannot download config.json ({detail})", "hf:{repo}：无法下载 config.json（{detail}）"),
    # hfconfig.py: a config.json, by file and key
    "no_such_file": ("cannot read it: no such file", "无法读取：没有这个文件"),
    "not_a_file": ("{kind}, not a regular file", "{kind}，不是普通文件"),
    "config_error": ("{path}: {key}: {detail}", "{path}：{key}：{detail}"),
    "config_missing": ("missing; a '{model_type}' config needs it", "缺失；'{model_type}' 的配置需要它"),
    "config_integer": ("must be an integer, got {value!r}", "必须是整数，这里是 {value!r}"),
    "config_between": ("must be between {minimum} and {maximum:,}, got {value}",
                       "必须在 {minimum} 到 {maximum:,} 之间，这里是 {value}"),
    "config_bool": ("must be true or false, got {value!r}", "必须是 true 或 false，这里是 {value!r}"),
    "config_kv_heads": ("{kv_heads} does not divide num_attention_heads {heads}",
                        "{kv_heads} 不能整除 num_attention_heads {heads}"),
    "config_heads": ("{heads} does not divide hidden_size {hidden}", "{heads} 不能整除 hidden_size {hidden}"),
    "config_object": ("must be an object, got {value!r}", "必须是对象（JSON object），这里是 {value!r}"),
    "config_factor": ("factor must be a number from 1 to 1024, got {value!r}",
                      "factor 必须是 1 到 1024 之间的数，这里是 {value!r}"),
    "config_original": ("original_max_position_embeddings must be an integer from 1 to {maximum:,}, got {value!r}",
                        "original_max_position_embeddings 必须是 1 到 {maximum:,} 之间的整数，这里是 {value!r}"),
    "config_biases": ("{attention} with mlp_bias {mlp}: biases on only one of attention and MLP are not supported",
                      "{attention}，而 mlp_bias 为 {mlp}：不支持只在注意力层或只在 MLP 上加偏置"),
    "config_chosen": ("{chosen} exceeds the {experts} experts of {experts_key}",
                      "{chosen} 超过 {experts_key} 给出的 {experts} 个专家"),
    "config_layer_types": ("must list one attention type per layer ({layers})",
                           "必须为每一层列出一种注意力类型（共 {layers} 层）"),
    "config_moe_freq": ("only MoE in every layer after the first dense ones is supported",
                        "只支持前若干层为稠密层、其后每层都是 MoE 的结构"),
    "config_dense": ("{dense} leaves no MoE layer of {layers}", "{dense} 使 {layers} 层中没有一层是 MoE 层"),
    "config_neox_bias": ("GPT-NeoX without biases is not supported", "不支持没有偏置的 GPT-NeoX"),
    "config_too_large": ("larger than {limit:,} bytes; not a model config", "超过 {limit:,} 字节；不是模型配置文件"),
    "config_not_json": ("not valid JSON ({detail})", "不是有效的 JSON（{detail}）"),
    "config_not_object": ("must hold a JSON object", "内容必须是一个 JSON 对象"),
    "config_type_missing": ("missing", "缺失"),
    "config_quant_method": ("'{method}' is not a weight format gpukb can size; known: {known}; give precision to size it "
                            "anyway", "无法确定 '{method}' 的权重格式；已知的有：{known}；可用 precision 指定精度"),
    "config_quant_bits": ("{method} with {bits!r}-bit weights has no gpukb precision (4 or 8 bits)",
                          "{method} 的 {bits!r} 位权重没有对应的 gpukb 精度（4 位或 8 位）"),
    "config_type": ("'{model_type}' is not supported", "不支持 '{model_type}'"),
    "config_supported": ("{got}; supported: {families}", "{got}；支持的有：{families}"),
    "config_params": ("the architecture has {total:,} parameters, beyond any published model",
                      "该结构有 {total:,} 个参数，超过任何已发布的模型"),
    "did_you_mean": ("; did you mean {ids}?", "；是否想写 {ids}？"),
    # the knowledge base or the engine failed while answering: not the workload's fault
    "kb_defect": ("knowledge-base defect: {detail}", "知识库缺陷：{detail}"),
    "no_active_rule": ("rules/ has no active rule that an ask with {given} can fire",
                       "rules/ 中没有一条有效规则能被 {given} 的询问触发"),
    "ruleset_refused": ("durable-rules refused the rules an ask with task {task!r} can fire: {detail}",
                        "durable-rules 拒绝了 task 为 {task!r} 的询问可触发的规则：{detail}"),
    "framework_defaults": ("kb/frameworks/ names {count} defaults for task {task}, not one: {chosen}",
                           "kb/frameworks/ 为 task {task} 指定了 {count} 个默认框架，应当只有一个：{chosen}"),
    "policies_missing": ("kb/policies/ lacks the policies {missing}", "kb/policies/ 缺少策略 {missing}"),
    "engine_failed": ("{detail}", "规则引擎运行出错（这是 gpukb 的缺陷，请报告）：{detail}"),
    # the loader: what is wrong with a field of kb/ or rules/ (the file, line and field are said before it)
    "kb_unknown_field": ("unknown field", "未知字段（拼写错误，或这类条目没有这个字段）"),
    "kb_missing_field": ("required field is missing", "缺少必填字段"),
    # the command line's own errors
    "error": ("error: {detail}", "错误：{detail}"),
    "launch_failed": ("--launch: {why}", "--launch：{why}"),
    "launch_no_fp8_kv": ("{engine} has no int8 KV cache and keeps a 1-byte one as FP8, which this GPU has no FP8 for; "
                         "use kv_cache_precision bf16 or fp16",
                         "{engine} 没有 int8 KV 缓存，1 字节的 KV 缓存按 FP8 存放，而这块 GPU 不支持 FP8；"
                         "请用 kv_cache_precision bf16 或 fp16"),
    "launch_sglang_quantized": ("sglang has no in-flight {precision} flag for a 16-bit checkpoint; use vllm or a "
                                "pre-quantized checkpoint",
                                "sglang 没有把 16 位检查点在加载时量化为 {precision} 的参数；请用 vllm 或预先量化好的检查点"),
    "trace_needs_json": ("--trace goes with --json (--explain prints the reasoning as text)",
                         "--trace 需与 --json 同用（--explain 以文字列出推理过程）"),
    "launch_training": ("no command line for training (framework {framework}): gpukb writes the serving engines' "
                        "(vllm, sglang, tensorrt-llm, llama.cpp) for inference; the plan's layout is in the answer",
                        "训练（框架 {framework}）没有启动命令：gpukb 只为推理写出服务引擎（vllm、sglang、tensorrt-llm、"
                        "llama.cpp）的命令；方案的并行布局见回答"),
    "launch_no_engine": ("no command line for framework {framework}; gpukb writes one for {engines}: "
                         "give --framework with one of them",
                         "框架 {framework} 没有启动命令；gpukb 只为 {engines} 写出命令，请用 --framework 选其中之一"),
    "launch_llama_cpp": ("llama.cpp has no GGUF format gpukb can write for {precision} weights with a {kv} KV cache "
                         "(it converts a 16-bit checkpoint to bf16, fp16, fp32, Q8_0 or Q4_0 and keeps a 1-byte KV "
                         "cache as q8_0); use vllm or sglang",
                         "gpukb 无法为 {precision} 权重、{kv} KV 缓存写出 llama.cpp 的 GGUF 格式（它把 16 位检查点"
                         "转成 bf16、fp16、fp32、Q8_0 或 Q4_0，1 字节 KV 缓存存为 q8_0）；请用 vllm 或 sglang"),
    "launch_needs_inference": ("launch settings are for inference with a catalog model or a config.json",
                               "启动命令只用于目录中的模型或 config.json 的推理"),
    "unknown_entry": ("no rule, claim, GPU, model or source has the id '{entry}'{hint}",
                      "没有哪条规则、论断、GPU、模型或来源的 id 是 '{entry}'{hint}"),
    "other_version": ("\n# note: you asked for v{asked}; this knowledge base has v{has} "
                      "(`gpukb impact --base REV` shows what changed)",
                      "\n# 注意：你要的是 v{asked}；这个知识库里是 v{has}（`gpukb impact --base REV` 列出改动）"),
    # (the English command line prints the problems alone, one a line, as scripts and editors read them)
    "kb_invalid": ("the knowledge base (kb/ or rules/) is invalid: {count} problem(s)",
                   "知识库（kb/ 或 rules/）无效，共 {count} 处问题："),
}

# Pydantic's own checks of one field, by its error type: the English is pydantic's message, the Chinese ours
PYDANTIC_ZH: dict[str, str] = {
    "missing": "缺少这个必填字段",
    "greater_than": "必须大于 {gt}",
    "greater_than_equal": "必须不小于 {ge}",
    "less_than": "必须小于 {lt}",
    "less_than_equal": "必须不大于 {le}",
    "int_parsing": "需要整数", "int_type": "需要整数", "int_from_float": "需要整数，不能有小数部分",
    "float_parsing": "需要数字", "float_type": "需要数字", "finite_number": "需要有限的数字",
    "bool_parsing": "需要 true 或 false", "bool_type": "需要 true 或 false",
    "string_type": "需要字符串", "list_type": "需要列表", "dict_type": "需要映射（dict）",
    "literal_error": "只能是 {expected} 之一",
    "too_short": "至少需要 {min_length} 项", "too_long": "最多 {max_length} 项",
    "invalid_value": "取值无效（{type}）",  # a check without its own Chinese: the kind of error, by its id
}

_LIST_SEP: dict[Lang, str] = {"en": ", ", "zh": "、"}
_FIELD_SEP: dict[Lang, str] = {"en": ": ", "zh": "："}


@dataclass(frozen=True)
class Message:
    """A message id and its values: nested messages and lists are written in the same language."""

    key: str
    values: Mapping[str, Any] = field(default_factory=dict)
    en: str | None = None  # an English text kept as another library wrote it (pydantic's)

    def text(self, lang: Lang = "en") -> str:
        if lang == "en" and self.en is not None:
            return self.en
        en, zh = MESSAGES.get(self.key) or ("", PYDANTIC_ZH[self.key])
        return (zh if lang == "zh" else en).format(**{k: _value(v, lang) for k, v in self.values.items()})

    def __str__(self) -> str:
        return self.text("en")


def message(message_id: str, /, **values: Any) -> Message:
    if message_id not in MESSAGES:
        raise KeyError(f"message id {message_id} is not in gpukb.core.messages.MESSAGES")
    return Message(message_id, values)


def _value(value: Any, lang: Lang) -> Any:
    if isinstance(value, Message):
        return value.text(lang)
    if isinstance(value, list | tuple):
        return _LIST_SEP[lang].join(str(_value(v, lang)) for v in value)
    return value


def with_field(name: str, text: str, lang: Lang = "en") -> str:
    """`field: text`, the separator as each language writes it."""
    return f"{name}{_FIELD_SEP[lang]}{text}"


def pydantic_message(error: Mapping[str, Any]) -> Message:
    """One pydantic error as a Message: its English text as pydantic wrote it, its Chinese from PYDANTIC_ZH."""
    en = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] not in PYDANTIC_ZH:
        return Message("invalid_value", {"type": error["type"]}, en=en)
    values = dict(error.get("ctx") or {})
    if "expected" in values:  # "'a', 'b' or 'c'" -> 'a'、'b'、'c'
        values["expected"] = str(values["expected"]).replace("' or '", "', '").replace("', '", "'、'")
    return Message(error["type"], values, en=en)

