"""Hostile knowledge bases: what a stranger's pull request could put in kb/ or rules/.

Each case is a minimal checkout (a manifest plus the files below) and the located error it must
give: (code, file, line). The base texts are valid, so each case's error is its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MANIFEST = "name: gpukb\nversion: 0.1.0\ndescription: hostile\n"

GPU = """\
id: rtx-a5000-24gb
version: 1
name: NVIDIA RTX A5000 24GB
vendor: nvidia
segment: workstation
architecture: Ampere
form_factor: pcie
memory: 24 GB
memory_type: GDDR6
memory_bandwidth: 768 GB/s
bf16_flops: 111.1 TFLOPS
fp16_flops: 111.1 TFLOPS
fp8_flops: null
fp32_flops: 27.8 TFLOPS
scale_up: null
scale_up_bandwidth: null
scale_up_domain: 1
pcie: pcie-4-x16
tdp: 230 W
cooling: [active]
as_of: 2021-04-12
sources: [nvidia-rtx-a5000-page]
notes: fine
"""

SOURCE = """\
- id: nvidia-rtx-a5000-page
  version: 1
  title: NVIDIA RTX A5000 product page
  publisher: NVIDIA
  kind: datasheet
  url: https://www.nvidia.com/en-us/design-visualization/rtx-a5000/
  as_of: 2021-04-12
"""

RULE = """\
id: req.hostile
version: 1
stage: bottlenecks
title: A rule
when:
  - as: w
    kind: workload
then:
  - kind: finding
    set: {finding: compute, severity: info, gpu: ''}
    compute:
      value: w.params * 2
      limit: w.layers
explain: '{value}'
"""

GPU_FILE = "kb/gpus/rtx-a5000-24gb.yaml"
SOURCE_FILE = "kb/sources/hardware.yaml"
RULE_FILE = "rules/bottlenecks/hostile.yaml"


def gpu(**lines: str) -> str:
    """The GPU with some of its lines replaced (`field=text`), keeping every line where it was."""
    out = []
    for line in GPU.splitlines():
        key = line.split(":", 1)[0]
        out.append(f"{key}: {lines[key]}" if key in lines else line)
    return "\n".join(out) + "\n"


def rule(expression: str) -> str:
    return RULE.replace("w.params * 2", expression)


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, bytes | str]
    code: str
    file: str
    line: int
    links: dict[str, str] = field(default_factory=dict)  # path -> target outside the checkout


def _gpu_case(case: str, code: str, **lines: str) -> Case:
    text = gpu(**lines)
    return Case(case, {GPU_FILE: text}, code, GPU_FILE, line_of(text, f"{next(iter(lines))}:"))


def _rule_case(name: str, expression: str) -> Case:
    text = rule(expression)
    return Case(name, {RULE_FILE: text}, "R002", RULE_FILE, line_of(text, "value:"))


_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
_CONFUSABLE_ID = "rtx-а5000-24gb"  # the 'а' is Cyrillic
_CRLF = gpu(tdp="'230 horsepower'").replace("\n", "\r\n")
_BOM = "\ufeff" + gpu(vendor="nvidla")
_DEEP_RULE = RULE.replace("    set: {finding: compute, severity: info, gpu: ''}",
                          "    set: {finding: compute, severity: info, gpu: ''}\n    set: {finding: thermal}")

CASES: list[Case] = [
    # YAML: expansion, recursion, size
    Case("billion-laughs", {GPU_FILE: _LAUGHS}, "E006", GPU_FILE, 1),
    Case("self-referencing-alias", {GPU_FILE: "a: &a [*a]\n"}, "E006", GPU_FILE, 1),
    Case("anchor-alone", {GPU_FILE: gpu(notes="&note fine")}, "E006", GPU_FILE, line_of(GPU, "notes:")),
    Case("merge-key", {GPU_FILE: "base: &b {vendor: nvidia}\nother:\n  <<: *b\n"}, "E006", GPU_FILE, 1),
    Case("deep-flow-nesting", {GPU_FILE: "[" * 5000 + "]" * 5000}, "E005", GPU_FILE, 1),
    Case("deep-block-nesting", {GPU_FILE: "".join("  " * i + f"k{i}:\n" for i in range(60)) + "  " * 60 + "x\n"},
         "E005", GPU_FILE, 32),
    Case("huge-list", {GPU_FILE: "[" + ",".join(["1"] * 30_000) + "]\n"}, "E005", GPU_FILE, 1),
    Case("huge-mapping", {GPU_FILE: "".join(f"k{i}: 1\n" for i in range(25_000))}, "E005", GPU_FILE, 10_000),
    Case("file-too-large", {GPU_FILE: GPU + "# padding\n" * 30_000}, "E005", GPU_FILE, 1),
    Case("enormous-string", {GPU_FILE: gpu(notes="x" * 300_000)}, "E005", GPU_FILE, 1),
    Case("thousands-of-digits", {GPU_FILE: gpu(scale_up_domain="9" * 4000)}, "E013", GPU_FILE, line_of(GPU, "scale_up_domain")),
    Case("symlink-out-of-checkout", {}, "E005", "kb/gpus/passwd.yaml", 1, links={"kb/gpus/passwd.yaml": "file"}),
    Case("linked-folder-out-of-checkout", {}, "E005", "kb/gpus/elsewhere", 1, links={"kb/gpus/elsewhere": "folder"}),
    Case("python-tag", {GPU_FILE: "!!python/object/apply:os.system ['true']\n"}, "E001", GPU_FILE, 1),
    Case("two-documents", {GPU_FILE: GPU + "---\n" + GPU}, "E001", GPU_FILE, line_of(GPU, "notes:") + 1),
    Case("unhashable-key", {GPU_FILE: "? [a, b]\n: 1\n"}, "E001", GPU_FILE, 1),
    # encodings and line ends
    Case("not-utf8", {GPU_FILE: GPU.encode("utf-8").replace(b"Ampere", b"Amp\xe8re")}, "E001", GPU_FILE, 1),
    Case("utf16-with-bom", {GPU_FILE: GPU.encode("utf-16")}, "E001", GPU_FILE, 1),
    Case("utf8-bom-keeps-lines", {GPU_FILE: _BOM}, "E010", GPU_FILE, line_of(GPU, "vendor:")),
    Case("crlf-keeps-lines", {GPU_FILE: _CRLF}, "E010", GPU_FILE, line_of(GPU, "tdp:")),
    # values
    Case("inf-flops", {GPU_FILE: gpu(bf16_flops=".inf")}, "E013", GPU_FILE, line_of(GPU, "bf16_flops")),
    _gpu_case("nan-memory", "E013", memory=".nan"),
    _gpu_case("overflowing-unit", "E010", memory="1e400 GB"),
    _gpu_case("boolean-as-number", "E010", scale_up_domain="true"),
    _gpu_case("boolean-version", "E010", version="true"),
    _gpu_case("confusable-id", "E010", id=_CONFUSABLE_ID),
    _gpu_case("zero-width-id", "E010", id="rtx-a5000\u200b-24gb"),
    _gpu_case("subnormal-memory", "E010", memory="5e-324"),
    _gpu_case("subnormal-bandwidth-with-unit", "E010", memory_bandwidth="'1e-310 TB/s'"),
    _gpu_case("memory-of-an-exabyte", "E010", memory="'1000 PB'"),
    _gpu_case("flops-of-a-calculator", "E010", bf16_flops="'1 KFLOPS'"),
    _gpu_case("gigawatt-card", "E010", tdp="'1000000 KW'"),
    _gpu_case("boolean-power", "E010", tdp="true"),
    # names that print alike
    _gpu_case("zero-width-space-in-name", "E010", name='"NVIDIA RTX A5000\\u200b 24GB"'),
    _gpu_case("line-separator-in-name", "E010", name='"NVIDIA RTX A5000\\u2028 24GB"'),
    _gpu_case("right-to-left-mark-in-name", "E010", name='"NVIDIA RTX A5000\\u200f 24GB"'),
    _gpu_case("byte-order-mark-in-name", "E010", name='"NVIDIA RTX A5000\\ufeff 24GB"'),
    _gpu_case("zero-width-joiner-in-architecture", "E010", architecture='"Amp\\u200dere"'),
    # text that reaches a terminal
    _gpu_case("terminal-title-escape", "E014", name='"A5000\\e]0;pwned\\a"'),
    _gpu_case("c1-control", "E014", name='"A5000\\x9b2J"'),
    _gpu_case("bidi-override", "E014", notes='"fine\\u202eenif"'),
    _gpu_case("carriage-return", "E014", notes='"fine\\roverwritten"'),
    # links
    Case("javascript-url", {SOURCE_FILE: SOURCE.replace("https://www.nvidia.com/en-us/design-visualization/rtx-a5000/",
                                                        "javascript:alert(document.domain)")},
         "E010", SOURCE_FILE, line_of(SOURCE, "url:")),
    Case("data-url", {SOURCE_FILE: SOURCE.replace("https://www.nvidia.com/en-us/design-visualization/rtx-a5000/",
                                                  "data:text/html,<script>alert(1)</script>")},
         "E010", SOURCE_FILE, line_of(SOURCE, "url:")),
    # structure
    Case("duplicate-key-at-depth", {RULE_FILE: _DEEP_RULE}, "E002", RULE_FILE, line_of(_DEEP_RULE, "set: {finding: thermal}")),
    Case("inf-literal-in-rule", {RULE_FILE: RULE.replace("severity: info,", "severity: info, limit: .inf,")},
         "E013", RULE_FILE, line_of(RULE, "set:")),
    # expressions
    _rule_case("round-digits", "round(7, -300000000)"),
    _rule_case("power-tower", "(" * 12 + "7" + "**8)" * 12),
    _rule_case("deep-unary-minus", "-" * 1990 + "7"),
    _rule_case("deep-parentheses", "(" * 1000 + "7" + ")" * 1000),
    _rule_case("huge-constant", "w.params * 1e400"),
    _rule_case("dunder-escape", "w.__class__"),
    _rule_case("call-outside-whitelist", "__import__('os').system('true')"),
]
