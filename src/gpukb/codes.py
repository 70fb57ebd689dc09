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
    "M001": Code("a measurement's workload is not one gpukb can ask (a field, an id, or fields that do not fit together)",
                 "lint"),
    "M002": Code("a measurement's workload lacks its `framework` or what its quantity needs (exactly one GPU type; "
                 "tokens for GPU-hours)",
                 "lint"),
    "M003": Code("a measurement's `flop_per_token` reads a name that is not a workload field", "lint"),
    "T001": Code("a rule's test failed: it did (not) fire, or computed another value", "lint"),
    "A101": Code("`kb/lint.yaml` is invalid, allows a code that cannot be allowed, or allows the same thing twice", "lint"),
    "L101": Code("an entry lacks one of its two languages: a claim's `title`, `title_zh` or `reason_zh`, a rule's "
                 "`title_zh` or `explain_zh` (which must show the same values as `explain`), a remedy's `title_zh`",
                 "lint"),
    "F101": Code("a claim's figure cannot be computed (its ask fails, its GPU has no option, its rule does not fire), or "
                 "its reason names a value its figures do not give, or the two languages quote different values",
                 "lint"),
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
