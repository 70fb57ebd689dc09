"""Mutation check: does the suite notice when a line of the code or the knowledge base goes wrong?

Each mutation replaces one exact snippet of one file in a temporary copy of the repository and runs
the part of the suite that should notice it (pytest arguments per mutation). A mutation is
*killed* when a test fails and *survives* when all pass; a survivor is a figure or a rule no test
pins. The copy's `src/` comes first on PYTHONPATH, so the mutated package is the one imported.

    python tools/mutations.py                  # all mutations, one at a time
    python tools/mutations.py fit-boundary     # only those whose id contains the argument
    python tools/mutations.py --list

It exits 1 when a mutation survives or when a snippet is no longer found (the file changed:
update the mutation).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str
    old: str  # must occur exactly once in the file
    new: str
    tests: tuple[str, ...]  # pytest arguments: the files (and -k selections) that should kill it


RULE_TESTS = "tests/test_rule_tests.py"
MUTATIONS = [
    # the utilisation assumed for every training tokens/s and time-to-train figure
    Mutation("policy-mfu-0.44", "kb/policies/policies.yaml", "  value: 0.40\n", "  value: 0.44\n",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("policy-mfu-hopper-0.50", "kb/policies/policies.yaml", "  value: 0.46\n", "  value: 0.50\n",
             (RULE_TESTS, "tests/test_performance.py")),
    # the utilisation carried from the width it was measured at to the model's
    Mutation("policy-elementwise-work-3", "kb/policies/policies.yaml", "  value: 4.4\n", "  value: 3.0\n",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("training-ignores-width", "rules/recommendations/throughput-training.yaml",
             "      utilisation: g.utilisation * width_factor * attention_kernel\n",
             "      utilisation: g.utilisation * attention_kernel\n",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("cdna2-measured-at-4096", "kb/policies/policies.yaml", "  value: 12288\n", "  value: 4096\n",
             ("tests/test_performance.py",)),
    # a decode step is never shorter than the engine's host takes to issue it
    Mutation("policy-decode-step-floor-0.5ms", "kb/policies/policies.yaml", "  value: 1.56e-3\n", "  value: 0.5e-3\n",
             (RULE_TESTS,)),
    # a served context beyond the model's is refused; a config's context includes YaRN's scaling
    Mutation("serving-past-the-context", "src/gpukb/estimate/resolve.py",
             'if not training and given and 0 < arch.get("context_length", 0) < seq_len:',
             'if not training and given and 0 < arch.get("context_length", 0) < seq_len // 2:',
             ("tests/test_serving.py",)),
    Mutation("yarn-scales-max-position", "src/gpukb/knowledge/hfconfig.py",
             'if kind == "yarn" and scaling.get("original_max_position_embeddings") is not None:',
             'if False:', ("tests/test_hfconfig.py",)),
    # the share of a served batch's time that prefill takes, which the bandwidth finding states
    Mutation("prefill-share-of-decode-only", "rules/recommendations/throughput-decode.yaml",
             'prefill_share: "batch_prefill_s / (batch_prefill_s + w.output_len * step_time_s)',
             'prefill_share: "batch_prefill_s / (w.output_len * step_time_s)', (RULE_TESTS,)),
    # gpukb.ask() finds the packaged knowledge base's files once, not on every ask
    Mutation("load-kb-looks-again", "src/gpukb/estimate/packaged.py",
             "    if _packaged is None:\n        with _packaged_lock:\n            if _packaged is None:",
             "    if True:\n        with _packaged_lock:\n            if True:", ("tests/test_ask.py",)),
    # an allocator-counted peak is compared without the runtime overhead (CUDA context, NCCL buffers)
    Mutation("allocator-peak-keeps-overhead", "src/gpukb/estimate/validation.py",
             'allocator = m.memory_counter == "allocator"', "allocator = False", ("tests/test_validate.py",)),
    # an eager stack's host issues every layer's kernels: its launches bound a short step
    Mutation("eager-launches-ignored", "rules/recommendations/throughput-decode.yaml",
             "launch_s: w.layers * w.layer_launch_s", "launch_s: 0",
             ("tests/test_rule_tests.py", "tests/test_framework_speed.py")),
    # a served checkpoint's quantization_config sets the weights' precision (DeepSeek-V3's FP8)
    Mutation("checkpoint-precision-ignored", "src/gpukb/estimate/resolve.py",
             'return quantized.precision, (f"precision not given', 'return w.precision, (f"precision not given',
             ("tests/test_hfconfig.py",)),
    # serving replicas share the requests in flight: each decodes its share, not the whole batch
    Mutation("replicas-each-run-the-batch", "src/gpukb/estimate/planner.py",
             "share = -(-w.batch_size // chosen.dp) if inference else 0", "share = w.batch_size if inference else 0",
             ("tests/test_serving.py", "-k", "replicas_share")),
    # a serving engine's own decode share replaces the policy's where kb/frameworks states one
    Mutation("engine-share-ignored", "rules/recommendations/throughput-decode.yaml",
             "read_rate: p.tp * g.memory_bandwidth * w.decode_bandwidth_utilisation",
             "read_rate: p.tp * g.memory_bandwidth * q.decode_bandwidth_utilisation",
             ("tests/test_rule_tests.py", "tests/test_framework_speed.py")),
    # a prompt's prefill is a weight read plus its arithmetic, not the larger of the two (Splitwise, DistServe)
    Mutation("prefill-takes-the-larger-roof", "rules/recommendations/throughput-decode.yaml",
             'ttft_s: "max(prefill_flops / compute_rate + prefill_weight_bytes / prefill_read_rate',
             'ttft_s: "max(max(prefill_flops / compute_rate, prefill_weight_bytes / prefill_read_rate)',
             ("tests/test_performance.py",)),
    # a decode step's matrix multiplies and attention add, each at its own roof (a roofline per operator)
    Mutation("decode-step-takes-the-larger-total", "rules/recommendations/throughput-decode.yaml",
             'gpu_step_s: matmul_s + attention_s + p.concurrency * elementwise_s + tp_s',
             'gpu_step_s: max((weight_bytes_read + kv_read) / read_rate, flops_per_step / compute_rate) '
             '+ p.concurrency * elementwise_s + tp_s',
             ("tests/test_rule_tests.py",)),
    # a forward pass computes at its matrix multiplies' efficiency, not at a training step's utilisation
    Mutation("forward-pass-at-training-utilisation", "rules/recommendations/throughput-decode.yaml",
             "utilisation: g.utilisation * (1 + g.elementwise_work * g.reference_flops / g.memory_bandwidth "
             "/ g.utilisation_hidden_size)",
             "utilisation: g.utilisation", (RULE_TESTS,)),
    # tensor parallelism splits the heads' and the MLP's element-wise traffic, not the norms'
    Mutation("norms-split-by-tensor-parallel", "rules/recommendations/throughput-decode.yaml",
             "elementwise_bytes: 16 * w.layers * w.hidden_size + (4 * w.layers",
             "elementwise_bytes: (16 * w.layers * w.hidden_size + 4 * w.layers", (RULE_TESTS,)),
    # the matrix multiplies' efficiency comes from the 16-bit rate it was measured at, whatever the precision
    Mutation("efficiency-at-the-precisions-ridge", "src/gpukb/estimate/resolve.py",
             '"reference_flops": _rate(gpu, FLOPS_ORDER["bf16"]) / n,',
             '"reference_flops": flops,', (RULE_TESTS,)),
    # FP8 training doubles the multiplies' rate, not the element-wise work's: the utilisation is carried from
    # the 16-bit ridge it was measured at
    Mutation("fp8-training-doubles-everything", "rules/recommendations/throughput-training.yaml",
             "width_factor: (1 + measured_width / g.utilisation_hidden_size)",
             "width_factor: (1 + elementwise_width / g.utilisation_hidden_size)", (RULE_TESTS, "tests/test_scenarios.py")),
    # Megatron-Core may count the embedding and the loss as layers when it splits a pipeline into chunks
    Mutation("chunks-of-layers-only", "src/gpukb/estimate/resolve.py",
             'if chunks and arch["layers"] % chunks and (arch["layers"] + 2) % chunks:',
             'if chunks and arch["layers"] % chunks:', ("tests/test_performance.py",)),
    # a decode step is memory-bound while its weight reads outlast the multiplies' arithmetic, not by total intensity
    Mutation("decode-bound-by-total-intensity", "rules/recommendations/throughput-decode.yaml",
             "('memory' if weight_bytes_read / read_rate >= matmul_flops / compute_rate else 'compute')",
             "('memory' if intensity < ridge else 'compute')", ("tests/test_rule_tests.py",)),
    # an answer pickles as written (a planner step's sentence is a function)
    Mutation("step-pickles-unwritten", "src/gpukb/engine/trace.py",
             "return {name: getattr(self, name) for name in self.__dataclass_fields__}",
             "return dict(self.__dict__)", ("tests/test_ask.py",)),
    # sweep workers keep freed memory (their environment)
    Mutation("sweep-workers-default-allocator", "src/gpukb/estimate/sweeps.py",
             '_WORKER_ALLOCATOR = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}',
             "_WORKER_ALLOCATOR: dict[str, str] = {}", ("tests/test_sweep.py",)),
    # the one writer: a link at the name is refused, an existing file is never replaced unasked
    Mutation("safewrite-through-links", "src/gpukb/core/safewrite.py",
             "    if stat.S_ISLNK(mode):\n        raise RefusedWrite(",
             "    if False:\n        raise RefusedWrite(", ("tests/hostile/test_hostile_writers.py",)),
    Mutation("safewrite-replaces-silently", "src/gpukb/core/safewrite.py",
             "    if not replace:\n        raise RefusedWrite(\"it exists already\", exists=True)",
             "    if False:\n        raise RefusedWrite(\"it exists already\", exists=True)",
             ("tests/hostile/test_hostile_writers.py",)),
    # a knowledge base's own asks: no download, no file outside the checkout, no exception past lint
    Mutation("sandbox-allows-hub-ids", "src/gpukb/knowledge/sandbox.py",
             'if ref.startswith("hf:"):', 'if ref.startswith("hf:") and False:',
             ("tests/hostile/test_hostile_figures.py",)),
    Mutation("figures-only-workload-errors", "src/gpukb/contrib/figures.py",
             "    except Exception as error:  # a contributor's figure",
             "    except WorkloadError as error:  # a contributor's figure", ("tests/hostile/test_hostile_figures.py",)),
    # the cache copy: its MAC checked before unpickling; exact (module, name) pairs, no dotted names
    Mutation("kbcache-no-mac", "src/gpukb/knowledge/kbcache.py",
             "if len(data) <= _MAC_BYTES or not hmac.compare_digest(data[:_MAC_BYTES], _mac(secret, path, payload)):",
             "if len(data) <= _MAC_BYTES:", ("tests/test_kbcache.py", "tests/hostile/test_hostile_cache.py")),
    Mutation("kbcache-modules-and-dotted-names", "src/gpukb/knowledge/kbcache.py",
             "        if (module, name) not in ALLOWED:\n"
             '            raise pickle.UnpicklingError(f"{module}.{name} is not part of a knowledge base")\n'
             "        return getattr(importlib.import_module(module), name)\n",
             "        if module not in {m for m, _ in ALLOWED}:\n"
             '            raise pickle.UnpicklingError(f"{module}.{name} is not part of a knowledge base")\n'
             "        return super().find_class(module, name)\n", ("tests/hostile/test_hostile_cache.py",)),
    # sweep workers: isolated, their whole input read first, at most one a CPU
    Mutation("sweep-workers-not-isolated", "src/gpukb/estimate/sweeps.py", '[sys.executable, "-I", "-c", _BOOT,',
             '[sys.executable, "-c", _BOOT,', ("tests/hostile/test_hostile_sweeps.py",)),
    Mutation("sweep-worker-reads-as-it-answers", "src/gpukb/estimate/sweeps.py", "    todo = sys.stdin.readlines()\n",
             "    todo = sys.stdin\n", ("tests/hostile/test_hostile_sweeps.py",)),
    Mutation("sweep-processes-uncapped", "src/gpukb/estimate/sweeps.py", "processes = min(processes, cpus(), len(items))",
             "processes = min(processes, len(items))", ("tests/hostile/test_hostile_sweeps.py",)),
    # tensor parallelism's small all-reduces: the measured ring-step latencies over NVLink and PCIe
    Mutation("policy-hop-nvlink-0.6us", "kb/policies/policies.yaml", "  value: 2.0e-6\n", "  value: 0.6e-6\n",
             ("tests/test_performance.py",)),
    Mutation("policy-hop-pcie-1us", "kb/policies/policies.yaml", "  value: 2.7e-6\n", "  value: 1.0e-6\n",
             ("tests/test_performance.py",)),
    Mutation("policy-overhead-1gb", "kb/policies/policies.yaml", "  value: 2 GB\n", "  value: 1 GB\n",
             ("tests/test_planner.py", RULE_TESTS)),
    Mutation("policy-reserve-0.12", "kb/policies/policies.yaml", "  value: 0.10\n", "  value: 0.12\n",
             ("tests/test_planner.py", RULE_TESTS)),
    # expert parallelism: the experts' share it divides, and the all-to-alls it costs
    Mutation("ep-divides-nothing", "src/gpukb/estimate/planner.py", "(1 - 1 / ep))\"", "(1 - 1 / 1))\"",
             ("tests/test_planner.py",)),
    Mutation("ep-all-to-all-one-way", "rules/bottlenecks/interconnect-step.yaml",
             'ep_per_microbatch: "4 * w.moe_layers', 'ep_per_microbatch: "2 * w.moe_layers',
             (RULE_TESTS, "tests/test_planner.py")),
    Mutation("tp-overlap-hides-nothing", "rules/bottlenecks/interconnect-step.yaml",
             "max(0, tp_time_s - compute_time_s) if w.tp_comm_overlap", "tp_time_s if w.tp_comm_overlap",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("offload-ignores-host-memory", "src/gpukb/estimate/planner.py",
             'host = cache.host_split(layout, base) if layout.offload != "none" else None', "host = None",
             ("tests/test_performance.py",)),
    # pure 16-bit training and the optimizer stepped in the backward pass (torchtune's memory savings)
    Mutation("pure-bf16-keeps-master", "src/gpukb/estimate/resolve.py", "if (t and training and not pure16)",
             "if (t and training)", ("tests/test_performance.py",)),
    Mutation("optimizer-in-backward-keeps-all-gradients", "rules/requirements/memory-full.yaml",
             "if w.optimizer_in_backward else w.params", "if False else w.params",
             (RULE_TESTS, "tests/test_performance.py")),
    # context parallelism: the activations it splits and the keys and values it passes
    Mutation("cp-splits-no-activations", "src/gpukb/estimate/planner.py",
             "m.activations) / (tp * cp)", "m.activations) / tp", ("tests/test_performance.py",)),
    Mutation("cp-passes-kv-once", "rules/bottlenecks/interconnect-step.yaml",
             'cp_per_microbatch: "3 * w.layers', 'cp_per_microbatch: "1 * w.layers', ("tests/test_performance.py",)),
    # the interleaved pipeline schedule
    Mutation("interleaving-keeps-the-bubble", "rules/bottlenecks/interconnect-step.yaml",
             "(p.pp - 1) / (ga * w.virtual_pipeline_stages)", "(p.pp - 1) / ga", ("tests/test_performance.py",)),
    # validate: FLOP/s and MFU in the source's own count
    Mutation("validate-in-gpukbs-flop-count", "src/gpukb/estimate/validation.py", "if m.flop_per_token and kb is not None:",
             "if False:", ("tests/test_validate.py",)),
    # serving: capacity, SLA, launch and cost (tests/test_serving.py pins them by hand)
    Mutation("capacity-ignores-overhead", "rules/recommendations/capacity-inference.yaml",
             "free: p.usable_bytes - p.weights - p.overhead", "free: p.usable_bytes - p.weights",
             ("tests/test_serving.py",)),
    Mutation("cost-one-node", "rules/recommendations/cost-training.yaml",
             "usd_per_hour: p.nodes_rented * p.usd_per_node_hour", "usd_per_hour: p.usd_per_node_hour",
             ("tests/test_serving.py",)),
    Mutation("sla-tpot-not-rejecting", "rules/bottlenecks/sla-tpot.yaml",
             "severity: error, rejects: true", "severity: warning", ("tests/test_serving.py",)),
    Mutation("sla-never-raises-tensor-parallel", "src/gpukb/estimate/sla.py", "more[option.gpu] = bigger", "pass",
             ("tests/test_serving.py",)),
    Mutation("kv-cache-held-everywhere", "src/gpukb/estimate/resolve.py",
             "kv_archs is None or gpu.architecture in kv_archs", "True", ("tests/test_serving.py", RULE_TESTS)),
    Mutation("sglang-memory-without-activations", "src/gpukb/answer/launch.py",
             "round(1 - reserve_fraction - activations_share, 4)", "round(1 - reserve_fraction, 4)",
             ("tests/test_serving.py",)),
    Mutation("launch-memory-utilisation", "src/gpukb/answer/launch.py",
             "round(1 - reserve_fraction, 4)", "round(1 - reserve_fraction / 2, 4)", ("tests/test_serving.py",)),
    Mutation("reachable-drops-the-rules-the-task-fires", "src/gpukb/engine/reachable.py", "            if not cond.run(known):",
             "            if cond.run(known):", ("tests/test_engine.py",)),
    Mutation("gate-accepts-no-text", "src/gpukb/engine/reachable.py", "frozenset().union(*(r[common[0]] for r in required))",
             "frozenset()", ("tests/test_engine.py",)),
    Mutation("planner-activations-without-tp", "src/gpukb/estimate/planner.py",
             "m.activations) / (tp * cp)", "m.activations) / cp", ("tests/test_planner.py",)),
    Mutation("planner-fit-boundary", "src/gpukb/estimate/planner.py", "\n    fits = chosen.fits and per_gpu <= limit",
             "\n    fits = chosen.fits and per_gpu < limit", ("tests/test_planner.py",)),
    Mutation("planner-zero-gradients-from-stage-1", "src/gpukb/estimate/planner.py",
             "* {_FULLEST} / (dp * cp if zero_stage >= 2 else 1)\"",
             "* {_FULLEST} / (dp * cp if zero_stage >= 1 else 1)\"", ("tests/test_planner.py",)),
    Mutation("planner-zero-weights-from-stage-2", "src/gpukb/estimate/planner.py",
             "* {_FULLEST} / (dp * cp if zero_stage >= 3 else 1)\"\n",
             "* {_FULLEST} / (dp * cp if zero_stage >= 2 else 1)\"\n", ("tests/test_planner.py",)),
    Mutation("planner-kv-cache-without-pp", "src/gpukb/estimate/planner.py", '"kv_cache": "m.kv_cache / (tp * pp)"',
             '"kv_cache": "m.kv_cache / tp"', ("tests/test_planner.py",)),
    Mutation("interconnect-node-network-share", "rules/bottlenecks/interconnect-step.yaml",
             "(g.node_network_bandwidth / g.gpus_per_node) if spans > 1", "(g.node_network_bandwidth / 1) if spans > 1",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("interconnect-zero3-traffic-1x", "rules/bottlenecks/interconnect-step.yaml",
             "1.5 * ga if p.zero_stage == 3", "1 * ga if p.zero_stage == 3",
             (RULE_TESTS, "tests/test_scenarios.py", "tests/test_performance.py")),
    Mutation("interconnect-no-overlap", "rules/bottlenecks/interconnect-step.yaml",
             "exposed_dp_s: max(0, dp_time_s - hidden_s)", "exposed_dp_s: dp_time_s",
             (RULE_TESTS, "tests/test_performance.py")),
    Mutation("decode-full-bandwidth", "kb/policies/policies.yaml", "  value: 0.69\n", "  value: 1.0\n",
             (RULE_TESTS, "tests/test_ask.py", "tests/test_performance.py")),
    Mutation("rule-kv-cache-one-of-k-and-v", "rules/requirements/kv-cache.yaml",
             "else 2 * w.kv_heads * w.head_dim", "else w.kv_heads * w.head_dim", (RULE_TESTS,)),
    Mutation("rule-memory-without-overhead", "rules/requirements/memory-full.yaml",
             "overhead: p.runtime_overhead", "overhead: 0", (RULE_TESTS,)),
    Mutation("rule-tests-strings-unchecked", "src/gpukb/contrib/ruletests.py", "            if value != expected:",
             "            if False:", (RULE_TESTS,)),
    Mutation("site-escape-without-ampersand", "src/gpukb/site/text.py", '_INLINE = frozenset("\\\\`*_{}[]<>#|&~^")',
             '_INLINE = frozenset("\\\\`*_{}[]<>#|~^")', ("tests/test_site.py", "-k", "escape or hostile or renders")),
    Mutation("site-escape-without-brackets", "src/gpukb/site/text.py", '_INLINE = frozenset("\\\\`*_{}[]<>#|&~^")',
             '_INLINE = frozenset("\\\\`*_{}<>#|&~^")', ("tests/test_site.py", "-k", "escape or hostile or renders")),
    Mutation("expr-unary-operators-unchecked", "src/gpukb/language/expr.py",
             "        if not isinstance(node.op, ast.USub | ast.UAdd | ast.Not):", "        if False:",
             ("tests/test_expr.py",)),
    Mutation("expr-comparisons-unchecked", "src/gpukb/language/expr.py", "            if type(op) not in _CMPOPS:",
             "            if False:", ("tests/test_expr.py",)),
    Mutation("expr-binary-operators-unchecked", "src/gpukb/language/expr.py", "        if type(node.op) not in _BINOPS:",
             "        if False:", ("tests/test_expr.py",)),
    Mutation("expr-keyword-arguments-allowed", "src/gpukb/language/expr.py", "        if node.keywords:", "        if False:",
             ("tests/test_expr.py",)),
    Mutation("expr-underscore-names-allowed", "src/gpukb/language/expr.py",
             'if any(part.startswith("_") for part in name.split(".")):', "if False:", ("tests/test_expr.py",)),
    Mutation("expr-exponent-above-8", "src/gpukb/language/expr.py", "MAX_EXPONENT = 8", "MAX_EXPONENT = 9",
             ("tests/test_expr.py",)),
]


def _copy(dest: Path) -> None:
    """The working tree as git sees it: tracked files and untracked ones that are not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)


def run(mutation: Mutation, timeout: float) -> tuple[str, str, float]:
    """(outcome, detail, seconds): outcome is killed, survived, missing or timeout."""
    with tempfile.TemporaryDirectory(prefix="gpukb-mutant-") as tmp:
        root = Path(tmp)
        _copy(root)
        path = root / mutation.file
        text = path.read_text(encoding="utf-8")
        if text.count(mutation.old) != 1:
            return "missing", f"the snippet occurs {text.count(mutation.old)} times in {mutation.file}", 0.0
        path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")])}
        env.pop("CI", None)  # optional tools (a browser) may be absent here; the mutations do not need them
        command = [sys.executable, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider", *mutation.tests]
        start = time.monotonic()
        try:
            result = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", f"no result in {timeout:.0f} s", time.monotonic() - start
        seconds = time.monotonic() - start
        if result.returncode == 0:
            return "survived", "all selected tests pass", seconds
        failed = re.findall(r"^FAILED (.+?)(?: - .*)?$", result.stdout, re.M)
        if result.returncode == 1 and failed:
            return "killed", failed[0], seconds
        return "killed", f"pytest exit {result.returncode}: {(result.stdout + result.stderr).strip()[-300:]}", seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("select", nargs="*", help="run only mutations whose id contains one of these")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per mutation")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if not args.select or any(s in m.id for s in args.select)]
    if args.list:
        for m in chosen:
            print(f"{m.id}: {m.file}: {m.old.strip()!r} -> {m.new.strip()!r}  [{' '.join(m.tests)}]")
        return 0
    outcomes: dict[str, int] = {}
    for m in chosen:
        outcome, detail, seconds = run(m, args.timeout)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        print(f"{outcome:8} {m.id:40} {seconds:5.1f} s  {detail}", flush=True)
    print(", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())))
    return 0 if set(outcomes) <= {"killed"} else 1


if __name__ == "__main__":
    sys.exit(main())
