"""The table of lint codes: every code gpukb reports, its severity, and whether kb/lint.yaml may allow it.

A Problem with a code missing here cannot be built, so adding a code means adding its row here
(and its check). CONTRIBUTING.md's table of codes is checked against this one by the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Code:
    summary: str  # what is wrong, one line (Markdown), as CONTRIBUTING.md's table shows it
    where: str  # which step reports it: loader, lint, lint `--base`
    severity: Severity = "error"
    allowable: bool = False  # kb/lint.yaml may allow it for one entry, with a reason


# Errors about logic (dead rules, cycles, versions) cannot be allowed: fix them instead.
CODES: dict[str, Code] = {
    "E001": Code("YAML syntax error (or a tag such as `!!python/...`: YAML is loaded safely)", "loader"),
    "E002": Code("a key appears twice in one mapping", "loader"),
    "E003": Code("a file holds something other than an entry or a list of entries", "loader"),
    "E004": Code("no knowledge base: `kb/manifest.yaml` is missing", "loader"),
    "E005": Code("a file is refused: larger than 262,144 bytes, more than 20,000 values, nested more than 32 "
                 "levels, not a regular file (a FIFO, a device), or a symbolic link leading out of the checkout", "loader"),
    "E006": Code("a YAML anchor (`&name`) or alias (`*name`): write the value out", "loader"),
    "E010": Code("a field has a wrong value (type, range, unit, a source without url or path, ...)", "loader"),
    "E011": Code("unknown field (a typo, or a field this kind does not have)", "loader"),
    "E012": Code("a required field is missing (each one is reported)", "loader"),
    "E013": Code("a number that is not finite (`.inf`, `.nan`) or larger than 1e60", "loader"),
    "E014": Code("text holding a control character (escape, bell, carriage return, C1 controls, bidirectional "
                 "overrides): tab and newline only", "loader"),
    "E020": Code("an id is defined twice (the message names the first place)", "loader"),
    "E021": Code("a model's `hf_repo` is another model's too (the message names the other file and line)", "loader"),
    "E030": Code("a reference to an id that does not exist (sources, claims, interconnects, `superseded_by` of the same kind)",
                 "loader"),
    "E040": Code("the source article `kb/article.zh.txt` is missing or not a regular file of the checkout", "lint"),
    "E041": Code("a claim's `quote_zh` is not a verbatim part of the article", "lint"),
    "E050": Code("a model's `params` (or `active_params`) does not match its architecture", "loader"),
    "R001": Code("a rule uses the same alias twice", "loader"),
    "R002": Code("an expression or condition is unsafe or invalid (outside the whitelisted language)", "loader"),
    "R003": Code("a field a fact kind does not have; a field both set and computed; a `let` name that clashes", "loader"),
    "R004": Code("an output lacks a field its kind requires", "loader"),
    "R005": Code("an `explain` template names something the rule does not have, or misuses braces or formats", "loader"),
    "R006": Code("a name that is neither `alias.field` of an earlier pattern nor computed above", "loader"),
    "R007": Code("a `finding` or `severity` literal outside the allowed values", "loader"),
    "R008": Code("a rule outside `rules/<stage>/`, or in the folder of another stage", "loader"),
    "R009": Code("a rule joins more patterns, or its patterns can hold more combinations of facts over the "
                 "catalog, than the policies `rule-join-patterns` and `rule-join-combinations` allow", "loader"),
    "R101": Code("dead rule: a pattern matches a fact kind that no active rule (and not the engine) asserts, "
                 "or only rules that can never fire",
                 "lint"),
    "R102": Code("dead rule: a condition compares a field with a value it never takes — outside the engine's values "
                 "for `workload.task`, `precision`, `optimizer`, `activation_checkpointing`, `model`, `gpu.gpu`, "
                 "`plan.offload`, ..., outside the `finding`/`severity` values, or a value no rule producing that kind "
                 "ever sets",
                 "lint"),
    "R103": Code("rules chain in a cycle: A asserts facts B matches and B (through others) asserts facts A matches; "
                 "the message names the rules",
                 "lint"),
    "S101": Code("a source has no address (`url`, or `path` for a local document)", "lint (the loader refuses it too)"),
    "S102": Code("a source has no date (`as_of`) and `kb/lint.yaml` does not allow it with a reason", "lint", allowable=True),
    "D101": Code("`superseded_by` names a deprecated entry, or the entry itself", "lint"),
    "D102": Code("a deprecated entry names no successor and `kb/lint.yaml` gives no reason", "lint", allowable=True),
    "D103": Code("an entry names a successor but is not deprecated", "lint"),
    "M001": Code("a measurement's workload is not one gpukb can ask (a field, an id, fields that do not fit together, or "
                 "a model neither in the catalog nor a config.json inside the checkout)",
                 "lint"),
    "M002": Code("a measurement's workload lacks its `framework` or what its quantity needs (exactly one GPU type; "
                 "tokens for GPU-hours)",
                 "lint"),
    "M003": Code("a measurement's `flop_per_token` reads a name that is not a workload field", "lint"),
    "Y101": Code("a GPU that no system in `kb/systems` holds: its plans fall back to an assumed 8-GPU node on the "
                 "node-network-bandwidth policy's network and per-GPU prices", "lint", allowable=True),
    "Y102": Code("a system's `fabric` is not a link between the GPUs of one node (an interconnect of kind `scale_up` or "
                 "`host`), or its price quote does not hold the price it states", "lint"),
    "M004": Code("a measurement's value is outside the plausible range of its quantity, or outside what physics allows "
                 "for its GPU and workload (decode faster than the memory bandwidth reads the weights, a time to first "
                 "token shorter than the prompt's compute, peak memory above the GPU's or below the weights)", "lint"),
    "T001": Code("a rule's test failed: it did (not) fire, or computed another value", "lint"),
    "A101": Code("`kb/lint.yaml` is invalid, allows a code that cannot be allowed, or allows the same thing twice", "lint"),
    "L101": Code("an entry lacks one of its two languages: a claim's `title`, `title_zh` or `reason_zh`, a rule's "
                 "`title_zh` or `explain_zh` (which must show the same values as `explain`), a remedy's `title_zh`",
                 "lint"),
    "F101": Code("a claim's figure cannot be computed (its ask fails or names a model neither in the catalog nor a "
                 "config.json inside the checkout, its GPU has no option, its rule does not fire), or "
                 "its reason names a value its figures do not give, or the two languages quote different values",
                 "lint"),
    "F102": Code("a claims file asks for more figures than the policy `claim-figures-per-file` allows, or the knowledge "
                 "base more than `claim-figures-total`: the figures past the cap are not computed", "lint"),
    "W101": Code("warning: a claim is cited by no rule and no policy, so no answer rests on it",
                 "lint", severity="warning", allowable=True),
    "W102": Code("warning: an allowance in `kb/lint.yaml` matches no problem", "lint", severity="warning"),
    "W103": Code("warning: the knowledge base at the `--base` revision does not load; versions were not compared",
                 "lint `--base`", severity="warning"),
    "V100": Code("the `--base` revision cannot be read (not a git checkout, unknown revision)", "lint `--base`"),
    "V101": Code("an entry's content changed since the base but its `version` did not rise", "lint `--base`"),
    "V102": Code("`kb/` or `rules/` changed but the KB version in `kb/manifest.yaml` did not rise, rose less"
                 " than the change calls for, or went down",
                 "lint `--base`"),
    "V103": Code("`CHANGELOG.md` has no entry for the new KB version", "lint `--base`"),
}


def severity(code: str) -> Severity:
    return CODES[code].severity


# The loader's codes in Chinese: what `gpukb ask/explain/list --lang zh` says when the knowledge base under
# --root does not load (the problem's own detail, quoting the file's values, follows it unchanged)
SUMMARY_ZH: dict[str, str] = {
    "E001": "YAML 语法错误（或出现 `!!python/...` 这类标签：YAML 按安全模式读取）",
    "E002": "同一个映射里有重复的键",
    "E003": "文件内容既不是一个条目，也不是条目列表",
    "E004": "找不到知识库：缺少 `kb/manifest.yaml`",
    "E005": "文件被拒绝读取：超过 262,144 字节、超过 20,000 个值、嵌套超过 32 层、不是普通文件，或是指向仓库之外的符号链接",
    "E006": "使用了 YAML 锚点（`&name`）或别名（`*name`）：请把值直接写出来",
    "E010": "字段取值有误（类型、范围、单位，或来源缺少 url 或 path 等）",
    "E011": "未知字段（拼写错误，或这类条目没有这个字段）",
    "E012": "缺少必填字段（每个缺少的字段各报一次）",
    "E013": "数值不是有限数（`.inf`、`.nan`）或大于 1e60",
    "E014": "文本中含有控制字符（转义、响铃、回车、C1 控制字符、双向覆盖符）：只允许制表符和换行",
    "E020": "同一个 id 定义了两次（详情里给出第一次出现的位置）",
    "E021": "模型的 `hf_repo` 已被另一个模型使用（详情里给出那个文件和行）",
    "E030": "引用了不存在的 id（来源、论断、互联方式，或同类条目的 `superseded_by`）",
    "E050": "模型的 `params`（或 `active_params`）与其结构算出的参数量不符",
    "R001": "规则里同一个别名用了两次",
    "R002": "表达式或条件不安全或无效（超出白名单语言）",
    "R003": "事实类型没有这个字段；字段既被赋值又被计算；或 `let` 名称冲突",
    "R004": "输出缺少其类型要求的字段",
    "R005": "`explain` 模板引用了规则中不存在的名字，或花括号、格式写错",
    "R006": "名字既不是前面模式的 `alias.field`，也不是上文算出的值",
    "R007": "`finding` 或 `severity` 的取值不在允许范围内",
    "R008": "规则不在 `rules/<stage>/` 下，或放在了别的阶段的目录里",
    "R009": "规则连接的模式数，或这些模式在目录上可组合的事实数，超过策略 `rule-join-patterns` 和 "
            "`rule-join-combinations` 的上限",
    "S101": "来源没有地址（`url`，本地文档用 `path`）",
}
