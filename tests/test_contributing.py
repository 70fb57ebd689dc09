"""Adding knowledge needs no code: one YAML file, and ask(), `gpukb explain` and lint pick it up.
Deprecated entries stay loadable and documented, but a deprecated rule never fires."""

from pathlib import Path

from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.checks import check_dead_rules, check_deprecations, load_allowances
from gpukb.contrib.entry_text import describe_entry as describe
from gpukb.contrib.lint import lint
from kbfiles import edit_entry

runner = CliRunner()

NEW_GPU = """\
# yaml-language-server: $schema=../schema/gpu.schema.json
id: x9000-sxm-512gb
version: 1
status: draft
name: Hypothetical X9000 SXM 512GB
vendor: nvidia
segment: datacenter
architecture: Hypothetical
form_factor: sxm
memory: 512 GB
memory_type: HBM4
memory_bandwidth: 40 TB/s
bf16_flops: 5000 TFLOPS
fp16_flops: 5000 TFLOPS
fp8_flops: 10000 TFLOPS
fp32_flops: 200 TFLOPS
scale_up: nvlink-4
scale_up_bandwidth: 450 GB/s
scale_up_domain: 8
pcie: pcie-5-x16
tdp: 1000 W
cooling: [liquid]
as_of: 2026-01-01
sources: [nvidia-h100-datasheet]
price: null
notes: A made-up GPU, faster than any in the catalog, to show that one YAML file is all a new GPU needs.
"""

WORKLOAD = {"model": "llama-2-7b", "task": "inference"}


NEW_SYSTEM = """\
id: x9000-node
version: 1
status: draft
name: Hypothetical X9000 node
kind: server
provider: generic
gpu: x9000-sxm-512gb
gpus_per_node: 8
fabric: nvlink-5
peer_to_peer: true
network_bandwidth: 3200 Gb/s
host_memory: 4 TB
as_of: 2026-01-01
sources: [nvidia-h100-datasheet]
"""


def test_a_new_gpu_is_one_yaml_file_and_becomes_the_best_option(checkout: Path):
    before = gpukb.load_kb(checkout).ask(WORKLOAD)
    assert before.best is not None and before.best.gpu != "x9000-sxm-512gb"

    (checkout / "kb" / "gpus" / "x9000-sxm-512gb.yaml").write_text(NEW_GPU, encoding="utf-8")
    # and the machine it comes in: plans are laid out on systems (lint Y101 without one)
    (checkout / "kb" / "systems" / "x9000-node.yaml").write_text(NEW_SYSTEM, encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    assert kb.gpus["x9000-sxm-512gb"].memory_bytes == 512e9
    answer = kb.ask(WORKLOAD)  # the whole catalog, the new GPU included
    assert answer.best is not None and answer.best.gpu == "x9000-sxm-512gb"
    assert answer.best.tokens_per_s > before.best.tokens_per_s
    assert "x9000-sxm-512gb" in answer.explain()

    shown = runner.invoke(app, ["explain", "x9000-sxm-512gb", "--root", str(checkout)])
    assert shown.exit_code == 0, shown.output
    assert "gpu x9000-sxm-512gb v1 [draft] — kb/gpus/x9000-sxm-512gb.yaml:2" in shown.output
    assert "memory: 512.0 GB HBM4 at 40.00 TB/s" in shown.output

    result = lint(checkout)
    assert not [p for p in result.problems if p.file == "kb/gpus/x9000-sxm-512gb.yaml"], result.problems

    from gpukb.site import generate  # the documentation site's page generator

    site = generate(checkout, Path(__file__).parent / "data" / "scenarios.yaml")
    page = next(text for path, text in site.pages.items() if path.endswith("x9000-sxm-512gb.md"))
    assert "Hypothetical X9000 SXM 512GB" in page


def test_a_deprecated_rule_stays_loadable_and_documented_but_never_fires(checkout: Path):
    workload = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]}
    fired = gpukb.load_kb(checkout).ask(workload)
    assert any(s.rule.startswith("remedy.lora@") for s in fired.trace)
    assert "lora" in {r.id for r in fired.remedies}

    def deprecate(rule: dict) -> None:
        rule["status"] = "deprecated"
        rule["superseded_by"] = "remedy.qlora"
        rule["version"] += 1

    edit_entry(checkout, "remedy.lora", deprecate)
    kb = gpukb.load_kb(checkout)
    assert kb.rules["remedy.lora"].status == "deprecated"  # still loaded
    assert "remedy.lora" not in {c.rule.id for c in kb.active_rules}
    answer = kb.ask(workload)
    assert not any(s.rule.startswith("remedy.lora@") for s in answer.trace)
    assert "lora" not in {r.id for r in answer.remedies}
    assert "qlora" in {r.id for r in answer.remedies}  # its successor still fires

    text = describe(kb, "remedy.lora")
    assert text is not None and text.startswith(f"rule remedy.lora v{kb.rules['remedy.lora'].version} [deprecated]")
    assert check_deprecations(kb, load_allowances(checkout)[0]) == [] and check_dead_rules(kb) == []
    assert not [p for p in lint(checkout).errors if "remedy.lora" in p.message or p.file.endswith("lora.yaml")]
