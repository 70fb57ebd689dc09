"""The engine's facts carry exactly the fields the rule checker believes they do."""

from gpukb.answer.workload import Workload
from gpukb.engine.trace import Collector
from gpukb.estimate.planner import PlanCache, plan_gpu
from gpukb.estimate.resolve import gpu_fact, policy_fact, resolve
from gpukb.language.facts import ENGINE_KINDS

META = {"kind", "fid", "by"}


def test_engine_facts_match_their_declared_fields(kb):
    for task in ("full_finetune", "inference"):
        resolved, wfact = resolve(kb, Workload(model="llama-2-7b", task=task))
        assert set(wfact) == ENGINE_KINDS["workload"]
        assert set(policy_fact(kb)) == ENGINE_KINDS["policy"]
        gpu = gpu_fact(kb, kb.gpus["h100-sxm-80gb"], resolved.precision)
        assert set(gpu) == ENGINE_KINDS["gpu"]
        c = Collector(kb)
        answer = kb.ask({"model": "llama-2-7b", "task": task, "gpus": ["h100-sxm-80gb"]})
        memory = next(s for s in answer.trace if s.rule.startswith("req.memory."))
        fields = {v["name"]: v["value"] for v in memory.values}
        plan = plan_gpu(c, resolved, c.new_fact("workload", wfact, 0), c.new_fact("policy", policy_fact(kb), 0),
                        c.new_fact("memory", fields, 0), c.new_fact("gpu", gpu, 0), PlanCache())
        assert set(plan) - META == ENGINE_KINDS["plan"]
