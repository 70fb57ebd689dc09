"""RL post-training (grpo, ppo, dpo): the models of one run, placed together, and the time of one step.

An RL run holds several models: the policy (trained), a frozen reference, a reward model (none for a
rule-based reward), a critic for PPO (trained), and for GRPO and PPO a rollout engine that generates
the step's responses with the policy's weights. Each is asked as the job it is, through the same rules
and planner as any other ask: a trained role as full training of sequences prompt_len + response_len
long, a frozen role as the serving of one micro-batch (its weights and forward activations; its KV
cache dropped, as a forward pass without generation keeps none), the rollout as serving the step's
rollout_batch x samples_per_prompt sequences. Their replicas are then placed on each GPU type:

- colocated (verl's hybrid engine, OpenRLHF's colocation): every model sharded over the same GPUs with
  the trainer's layout (ZeRO-3 / FSDP unless pinned); the phases take turns, so a GPU holds the trained
  models' resident states (weights, optimizer states) and, in turn, one role's training transients
  (gradients, activations), a frozen role's weights and forward activations (offloaded to the host
  between its passes), or the rollout engine's weights and KV cache, which is freed before the optimizer
  runs (the engine sleeps, and wakes for the next step with the new weights reloaded);
- split: the rollout engine on GPUs of its own (the serving planner's fewest for the whole batch), the
  other models colocated on the trainer's.

The per-GPU memory of each role is the planner's own PARTS expressions (planner.PlanCache) over that
role's replica; the phase times are the rules' own estimates, rescaled to the GPUs that run them: the
decode rule's steps for generation, its responses' lengths spread between their mean and cap and decoded
with continuous batching until the longest ends (rl_lengths); training throughput for the trained roles
and, as forward passes on the same engine, for the log-prob and scoring passes; per step besides, the
weights reloaded into the engine, a colocated engine's sleep and wake, and the frozen models' offload.
The step time, the bounding phase and its remedies are rules (rules/*/rl-*.yaml) over the `rl` facts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..answer.answer import Answer, Memory, Option, RlEstimate, Strategy, _improves, _lineage, _remedy, build_answer
from ..answer.workload import ResolvedWorkload, Workload
from ..core.errors import WorkloadError
from ..core.messages import message
from ..core.words import rl_word, term
from ..engine.engine import ENGINE
from ..engine.trace import Collector, Value
from ..knowledge.citations import cited
from . import rl_lengths
from .planner import NO_LIMIT, NODE_SIZE, TP_SIZES, USABLE, Layout, PlanCache, _linear, stage_imbalance
from .resolve import default_framework, gpu_fact, policy_fact, workload_fact
from .systems import rental

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

SubAsk = Callable[[dict[str, Any]], Answer]
TRAINED, FROZEN = ("policy", "critic"), ("reference", "reward")
ROLES = (*TRAINED, *FROZEN, "rollout")
PHASES = ("generation", "reference", "reward", "critic", "training", "sync", "switch", "offload")
MAX_SEQS = "rl-rollout-max-seqs"  # the policy: the sequences a rollout engine's scheduler runs at once
LOAD_RATE = "rl-weight-load-rate"  # the policy: bytes a second a refit loads into each engine GPU
SWITCH = "rl-engine-switch-time"  # the policy: a colocated engine's sleep and wake each step, besides its weights
HOST = "rl-rollout-host-per-sequence"  # the policy: a rollout engine's serial host work per running sequence a step
HOST_STEP = "rl-rollout-host-per-step"  # the policy: a rollout engine's fixed serial host work each step
# the policies: how many times a step moves each kind of state between GPU and host memory (NeMo RL's Megatron backend)
WEIGHT_MOVES, SWAP_MOVES = "rl-trainer-weight-moves", "rl-reference-swap-moves"
OPTIMIZER_MOVES, ENGINE_MOVES = "rl-optimizer-moves", "rl-engine-weight-moves"
MOVES = (WEIGHT_MOVES, SWAP_MOVES, OPTIMIZER_MOVES, ENGINE_MOVES)
# the trainer whose RL step moves its states to the host and splits its pipeline stages evenly (NeMo RL's backend)
MEGATRON = "megatron"
# The fields of a workload that describe the policy's model (copied to its sub-asks)
_MODEL_FIELDS = ("model", "params", "layers", "hidden_size", "heads", "kv_heads", "vocab_size", "intermediate_size", "mlp")
SOURCES = ["sheng-2024-hybridflow", "hu-2024-openrlhf", "shao-2024-deepseekmath-grpo", "rajbhandari-2020-zero"]
CLAIMS = ["art.kv.training-no-cache", "art.capacity.redundancy"]
# A forward pass is 2·N·D of a training step's 6·N·D FLOP (kaplan-2020-scaling-laws): the policy's
# old log-probabilities and the critic's values are one forward pass each over the step's tokens
FORWARD_SHARE = 2 / 6


def sequences(w: Workload | ResolvedWorkload) -> int:
    """Sequences per step: prompts x samples (dpo: a chosen and a rejected response per pair)."""
    assert w.rollout_batch is not None
    return w.rollout_batch * (2 if w.task == "dpo" else (w.samples_per_prompt or 1))


def role_workloads(w: Workload, framework: str | None = None) -> dict[str, dict[str, Any]]:
    """The sub-asks: one workload per model of the run, as the job each is; the trained roles on `framework`
    (the workload's, else the RL task's default)."""
    assert w.prompt_len is not None and w.response_len is not None
    seq = w.prompt_len + w.response_len
    model = {k: getattr(w, k) for k in _MODEL_FIELDS if getattr(w, k) is not None}
    common = {k: getattr(w, k) for k in ("gpus", "gpu_count") if getattr(w, k) is not None}
    pins = {k: getattr(w, k) for k in ("zero_stage", "tensor_parallel", "pipeline_parallel", "activation_checkpointing")
            if getattr(w, k) is not None}
    train = {"task": "full_finetune", "seq_len": seq, "micro_batch_size": w.micro_batch_size,
             "global_batch_size": sequences(w), "flash_attention": w.flash_attention, "master_weights": w.master_weights,
             **({"flash_attention_version": w.flash_attention_version} if w.flash_attention else {}),
             **pins, **common, **({"optimizer": w.optimizer} if w.optimizer else {}),
             **({"framework": framework or w.framework} if framework or w.framework else {})}
    jobs: dict[str, dict[str, Any]] = {"policy": {**model, **train, "precision": w.precision}}

    def frozen(ref: str | None, precision: str | None) -> dict[str, Any]:
        which = model if ref is None else {"model": ref}
        # one micro-batch of whole sequences, scored in one forward pass (its prefill and a single token)
        return {**which, "task": "inference", "precision": precision or w.precision, "batch_size": w.micro_batch_size,
                "prompt_len": seq - 1, "output_len": 1, **common}

    if w.reference_model != "none":
        jobs["reference"] = frozen(w.reference_model, w.reference_precision)
    if w.reward_model not in (None, "none"):
        jobs["reward"] = frozen(w.reward_model, w.reward_precision)
    if w.task == "ppo":
        critic = model if w.critic_model is None else {"model": w.critic_model}
        jobs["critic"] = {**critic, **train, "precision": w.critic_precision or w.precision}
    if w.task != "dpo":
        jobs["rollout"] = {**model, "task": "inference", "precision": w.precision if w.precision != "fp32" else "bf16",
                           "batch_size": sequences(w), "prompt_len": w.prompt_len, "output_len": w.response_len,
                           **({"kv_cache_precision": w.kv_cache_precision} if w.kv_cache_precision else {}),
                           **({"tensor_parallel": w.rollout_tensor_parallel} if w.rollout_tensor_parallel else {}),
                           **common}
    return jobs


def _option(answer: Answer, gpu: str) -> Option | None:
    return next((o for o in (*answer.options, *answer.rejected) if o.gpu == gpu), None)


def _per_gpu_linear(cache: PlanCache, layout: Layout, memory: dict[str, Any],
                    wfact: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Each part's per-GPU bytes as (A, B) with bytes = A + B/dp, from the planner's own expressions."""
    base = {"m": memory, "w": wfact}
    one, two = cache.parts_of(layout, 1, base), cache.parts_of(layout, 2, base)
    return {name: _linear(one[name], two[name]) for name in one}


def _least_dp(terms: list[tuple[float, float]], usable: float) -> int | None:
    """The fewest data-parallel ranks at which A + B/dp (the sum of `terms`) fits in `usable`."""
    a, b = sum(t[0] for t in terms), sum(t[1] for t in terms)
    if a >= usable:
        return None
    return 1 if b <= 0 else max(1, math.ceil(b / (usable - a)))


def _at(term: tuple[float, float], dp: int) -> float:
    return term[0] + term[1] / dp


class Roles:
    """The sub-answers of one RL ask and each role's replica, read by the placement of every GPU type."""

    def __init__(self, answers: dict[str, Answer]) -> None:
        self.answers = answers
        self.caches = {role: PlanCache() for role in answers}
        self.replicas: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for role, answer in answers.items():
            assert answer._replica is not None
            memory, wfact = answer._replica
            if role in FROZEN:  # a forward pass over whole sequences keeps no KV cache
                memory = {**memory, "kv_cache": 0.0, "activations_checkpointed": memory["activations"]}
            self.replicas[role] = (memory, wfact)

    def parts(self, role: str, layout: Layout) -> dict[str, tuple[float, float]]:
        memory, wfact = self.replicas[role]
        return _per_gpu_linear(self.caches[role], layout, memory, wfact)


def _phase_terms(parts: dict[str, dict[str, tuple[float, float]]], overhead: float,
                 rollout: tuple[float, float] | None) -> dict[str, list[tuple[float, float]]]:
    """Per phase, the (A, B) terms whose sum is a GPU's bytes in it (bytes = A + B/dp); 'resident' is what
    stays through every phase: the trained roles' weights and optimizer states. The frozen roles' weights are
    on the GPU for their own forward pass only, offloaded to the host between steps (verl's GRPO examples set
    ref.fsdp_config.param_offload; OpenRLHF's --ref_reward_offload), the time it takes counted as 'offload'."""
    resident = [parts[r][k] for r in parts if r in TRAINED for k in ("weights", "optimizer")]
    base = [*resident, (overhead, 0.0)]
    phases = {"resident": base}
    phases |= {f"train_{r}": [*base, parts[r]["gradients"], parts[r]["activations"]] for r in parts if r in TRAINED}
    phases |= {f"forward_{r}": [*base, parts[r]["weights"], parts[r]["activations"]] for r in parts if r in FROZEN}
    if rollout is not None:
        phases["rollout"] = [*base, rollout]
    return phases


# a search's choice: ((trainer GPUs, waves of generation, rollout tp), data-parallel size, layout, rollout tp)
_Best = tuple[tuple[int, int, int], int, Layout, int]


@dataclass(frozen=True)
class _TrainerSearch:
    """What the search for the fewest trainer GPUs of one GPU type and placement ranges over."""

    w: ResolvedWorkload
    roles: Roles
    trained: list[str]
    placement: str
    node: int
    usable: float
    overhead: float
    rollout_memory: dict[str, Any] | None
    rollout_fits: bool
    sequences: int
    max_seqs: int

    @property
    def zeros(self) -> list[int]:  # FSDP full sharding: verl's and OpenRLHF's default
        return [self.w.zero_stage] if self.w.zero_stage is not None else [3]

    @property
    def checkpointing(self) -> list[bool]:
        return [self.w.activation_checkpointing] if self.w.activation_checkpointing is not None else [False, True]

    def stripped(self, layout: Layout) -> dict[str, dict[str, float]]:
        """Each role's parts without its own runtime overhead: the GPU's is counted once, in the phase."""
        return {r: {k: v for k, v in self.roles.parts(r, layout).items() if k not in ("overhead", "kv_cache")}
                for r in self.trained}

    def fewest(self, bound: int, exact: bool) -> _Best | None:
        """The fewest trainer GPUs within `bound`; `exact`: placement 'all', the trainer gets every GPU of the bound."""
        w, node = self.w, self.node
        best: _Best | None = None
        for zero in self.zeros:
            for ckpt in self.checkpointing:
                layout = Layout(w.tensor_parallel or 1, w.pipeline_parallel or 1, zero, ckpt, "none")
                parts = self.stripped(layout)
                rollout_tps: list[int | None] = [None]
                if self.placement == "colocated" and self.rollout_memory is not None:  # the run's own size, if stated
                    rollout_tps = [w.rollout_tensor_parallel] if w.rollout_tensor_parallel else \
                        [t for t in TP_SIZES if t <= node and w.heads % t == 0]
                for rtp in rollout_tps:
                    # an engine needs its share of the weights and room for at least one sequence's KV cache
                    least_rollout = None if rtp is None else _engine_bytes(self.rollout_memory, rtp, 1, self.sequences)
                    phases = _phase_terms(parts, self.overhead, None if least_rollout is None else (least_rollout, 0.0))
                    least = [_least_dp(terms, self.usable) for terms in phases.values()]
                    if any(d is None for d in least):
                        continue
                    count = max(d for d in least if d is not None) * layout.group
                    if rtp is not None:
                        count = max(count, rtp)
                        if w.rollout_tensor_parallel:  # a stated size: whole engines, however many nodes each spans
                            count = -(-count // rtp) * rtp
                    count = count if count <= node else node * math.ceil(count / node)
                    count = -(-count // layout.group) * layout.group
                    if not self.rollout_fits or count > bound or (rtp is not None and count % rtp):
                        continue
                    if exact:  # exactly gpu_count GPUs: the trainer gets what the rollout engine leaves
                        if bound < count or bound % layout.group or (rtp is not None and bound % rtp):
                            continue
                        count = bound
                    waves = 0 if rtp is None else _engines(phases, count // layout.group, self.usable,
                                                           self.rollout_memory, rtp, count, self.sequences,
                                                           self.max_seqs)[1]
                    key = (count, waves, rtp or 0)  # the fewest GPUs, then the fewest waves, then the smaller tp
                    if best is None or key < best[0]:
                        best = (key, count // layout.group, layout, rtp or 0)
        return best

    def needed(self, reserved: int, fallback: int) -> int:
        """The GPUs trainer and rollout engine need together with no bound: what a miss on the count names."""
        unbounded = self.fewest(NO_LIMIT, False) if self.rollout_fits else None
        return reserved + (unbounded[0][0] if unbounded else fallback)


def _gpu_box(gpu: dict[str, Any], policy: dict[str, Any]) -> int:
    """The most GPUs a plan may span: one node of a system with no network between nodes; where no system holds
    the GPU, one box of consumer cards."""
    if gpu["system"]:
        return NO_LIMIT if gpu["scales_out"] else gpu["gpus_per_node"]
    return NODE_SIZE * int(policy["consumer_nodes"]) if gpu["consumer"] else NO_LIMIT


def place(kb: KnowledgeBase, w: ResolvedWorkload, roles: Roles, gpu: dict[str, Any], policy: dict[str, Any],
          placement: str) -> dict[str, Any] | None:
    """One GPU type's RL plan under one placement: GPU counts, memory per role and per phase, fits. In parts: the
    search for the fewest trainer GPUs (_TrainerSearch), the closest miss when none fits, the memory of the choice
    (_plan_memory)."""
    usable = float(USABLE.evaluate({"g": gpu, "p": policy}))
    node, box = gpu["gpus_per_node"], _gpu_box(gpu, policy)
    limit = min(w.gpu_count or NO_LIMIT, box)
    rollout_answer = roles.answers.get("rollout")
    rollout_opt = _option(rollout_answer, gpu["gpu"]) if rollout_answer else None
    # split: the serving planner's fewest GPUs that hold the whole batch; none within gpu_count is a miss
    rollout_fits = placement != "split" or rollout_answer is None or (rollout_opt is not None and rollout_opt.fits)
    search = _TrainerSearch(
        w, roles, [r for r in roles.replicas if r in (*TRAINED, *FROZEN)], placement, node, usable,
        policy["runtime_overhead"], roles.replicas["rollout"][0] if "rollout" in roles.replicas else None,
        rollout_fits, sequences(w), int(kb.policy(MAX_SEQS)))
    # split: the rollout engine's GPUs come out of the GPUs allowed; the trainer has the rest
    reserved = rollout_opt.count if placement == "split" and rollout_opt is not None else 0
    trainer_limit = limit - reserved if limit < NO_LIMIT else NO_LIMIT
    best = search.fewest(trainer_limit, w.placement == "all")
    fits = best is not None
    # what a miss is short of: memory per GPU on the GPUs allowed, or GPUs (the trainer and the rollout engine
    # together need more than are allowed, though each GPU would hold its share)
    needed = 0
    if best is None:  # the closest miss: the last layout tried on one node, or on the GPUs allowed
        layout = Layout(w.tensor_parallel or 1, w.pipeline_parallel or 1, search.zeros[-1], search.checkpointing[-1],
                        "none")
        count = min(trainer_limit, node) if w.gpu_count is None or limit == box else trainer_limit
        if count < layout.group:  # the rollout engine leaves the trainer no GPU: the count is what does not fit
            needed = search.needed(reserved, layout.group)
            count = layout.group
        count = max(count // layout.group, 1) * layout.group
        rtp = w.rollout_tensor_parallel or max([t for t in TP_SIZES if t <= min(count, node) and w.heads % t == 0] or [1])
        best = ((count, 0, rtp), count // layout.group, layout, rtp)
    (count, _, _), dp, layout, rtp = best
    memory = _plan_memory(search, rollout_opt, count, dp, layout, rtp)
    if not fits and not needed and memory["per_gpu_bytes"] <= usable and limit < NO_LIMIT:
        # a miss whose peak fits: what fails is the count (the search's own bound, e.g. a tensor-parallel size
        # that does not divide the GPUs left), so the rejection names GPUs, not memory
        needed = search.needed(reserved, count + layout.group)
    rollout_gpus = memory["rollout_gpus"]
    return {"gpu": gpu["gpu"], "placement": placement, "count": min(count + rollout_gpus, limit) if needed else
            count + rollout_gpus, "trainer_gpus": count, "dp": dp, "tp": layout.tp, "pp": layout.pp,
            "zero_stage": layout.zero_stage, "checkpointing": layout.checkpointing, **memory, "usable_bytes": usable,
            "fits": fits and memory["per_gpu_bytes"] <= usable, "limit": limit if limit < NO_LIMIT else 0,
            "needed_gpus": needed}


def _plan_memory(search: _TrainerSearch, rollout_opt: Option | None, count: int, dp: int, layout: Layout,
                 rtp: int) -> dict[str, Any]:
    """The chosen plan's memory: per role, the rollout engine's batch and waves (colocated: in the memory the
    trainer's phases leave; split: the serving planner's own GPUs), and the peak of a GPU over the phases."""
    trained, overhead = search.trained, search.overhead
    stripped = search.stripped(layout)
    parts = {r: {k: _at(v, dp) for k, v in stripped[r].items()} for r in trained}
    by_role = {r: sum(v for k, v in parts[r].items() if r in TRAINED or k in ("weights", "activations")) for r in trained}
    rollout_gpus, engine_batch, waves, rollout_term = 0, 0, 0, None
    if search.rollout_memory is not None:
        assert rollout_opt is not None
        if search.placement == "colocated":
            engine_batch, waves = _engines(_phase_terms(stripped, overhead, None), dp, search.usable,
                                           search.rollout_memory, rtp, count, search.sequences, search.max_seqs)
            engine_batch = max(engine_batch, 1)
            by_role["rollout"] = _engine_bytes(search.rollout_memory, rtp, engine_batch, search.sequences)
            rollout_term = (by_role["rollout"], 0.0)
        else:
            rollout_gpus = rollout_opt.count
            rtp = rollout_opt.strategy.tensor_parallel
            engine_batch, waves = search.sequences, 1
            by_role["rollout"] = rollout_opt.per_gpu_bytes - overhead
    phases = _phase_terms(stripped, overhead, rollout_term)
    peak = max(sum(_at(t, dp) for t in terms) for terms in phases.values())
    if rollout_gpus and rollout_opt is not None:
        peak = max(peak, rollout_opt.per_gpu_bytes)
    return {"rollout_gpus": rollout_gpus, "rollout_tp": rtp, "engine_batch": engine_batch, "waves": waves,
            "per_gpu_bytes": peak, "memory_by_role": by_role, "parts": parts}


def _engine_bytes(rollout: dict[str, Any] | None, rtp: int, batch: int, sequences: int) -> float:
    """Bytes per GPU of a rollout engine of tensor-parallel size rtp generating `batch` sequences at once:
    its share of the weights and of those sequences' KV cache (each to prompt_len + response_len tokens)."""
    assert rollout is not None
    return (rollout["weights"] + rollout["kv_cache"] / sequences * batch) / rtp


def _engines(phases: dict[str, list[tuple[float, float]]], dp: int, usable: float, rollout: dict[str, Any] | None,
             rtp: int, count: int, sequences: int, max_seqs: int) -> tuple[int, int]:
    """(sequences each colocated engine generates at once, waves): the engines share the batch; each holds
    what its GPUs have left beside the resident models, as a serving engine fills the memory it is given
    (vLLM's gpu_memory_utilization), never more than its scheduler admits (max_num_seqs), and runs the rest of
    its share as sequences finish."""
    assert rollout is not None
    resident = max((sum(_at(t, dp) for t in terms) for name, terms in phases.items() if name == "resident"), default=0.0)
    per_sequence = rollout["kv_cache"] / sequences / rtp
    room = usable - resident - rollout["weights"] / rtp
    share = math.ceil(sequences / max(1, count // rtp))
    fit = min(share, max_seqs, int(room // per_sequence) if per_sequence > 0 else share)
    return fit, (math.ceil(share / fit) if fit > 0 else 0)


def _mean_response(w: Workload | ResolvedWorkload) -> int:
    assert w.response_len is not None
    return w.mean_response_len or w.response_len


def updates(w: Workload | ResolvedWorkload) -> int:
    """Optimizer steps a step's sequences make: the sequences over global_batch_size (NeMo RL's
    train_global_batch_size, verl's ppo_mini_batch_size x rollout.n, OpenRLHF's train_batch_size), one without it."""
    return sequences(w) // (w.global_batch_size or sequences(w))


def packing(w: Workload | ResolvedWorkload, dp: int, pp: int) -> tuple[int, float]:
    """(micro-batches each data-parallel rank runs per optimizer step, tokens each computes): the update's
    sequences packed into bins of micro_batch_size x (prompt_len + response_len) tokens (rl_lengths.packed_bins),
    the bins dealt to the ranks in turn (NeMo RL shard_by_batch_size), so the rank with the most sets the pace.
    Past one pipeline stage every bin is padded to the longest, which is near the capacity (Megatron-Core's
    pipeline schedule sends activations of one seq_length; NeMo RL's train() passes pad_full_seq_to); with one
    stage a bin computes the tokens it holds."""
    assert w.prompt_len is not None and w.response_len is not None
    batch = sequences(w) // updates(w)
    capacity = (w.prompt_len + w.response_len) * w.micro_batch_size
    bins = rl_lengths.packed_bins(batch, rl_lengths.scale(_mean_response(w), w.response_len), w.response_len,
                                  w.prompt_len, capacity)
    held = batch * (w.prompt_len + _mean_response(w)) / bins
    return math.ceil(bins / dp), float(capacity) if pp > 1 else held


def phase_times(w: ResolvedWorkload, roles: Roles, plan: dict[str, Any], gpu: dict[str, Any],
                generation: Answer | None, trainers: dict[str, Answer], floor_s: float, switch_s: float,
                load_rate: float, host_s: float, step_host_s: float,
                moves: dict[str, float]) -> dict[str, float] | None:
    """Seconds per step of each phase on this plan, from the sub-answers' own estimates; None where a rule made
    no estimate (a GPU type without a published rate for the precision), as a training ask then has no speed."""
    n = plan["trainer_gpus"]
    times: dict[str, float] = {}
    policy = trainers.get("policy")
    o_train = _option(policy, gpu["gpu"]) if policy is not None else None
    if o_train is None or not o_train.tokens_per_s or o_train.count != n:
        return None
    # the trained roles on the trainer's GPUs in the plan's layout: the training rules' own throughput there, over
    # the micro-batches the update's sequences pack into (its sub-ask's global batch: the slowest rank's
    # micro-batches on every rank, so its pipeline bubble and optimizer step are counted per update)
    per_rank, held = packing(w, plan["dp"], plan["pp"])
    computed = updates(w) * per_rank * plan["dp"] * held  # the step's tokens as the trainer's micro-batches hold them
    train_s = computed / o_train.tokens_per_s
    if generation is not None:
        o = _option(generation, gpu["gpu"])
        engine = _decoder(generation, o, floor_s, host_s, step_host_s) if o is not None else None
        if engine is None:
            return None
        times["generation"] = _generation_s(w, plan, engine[1], engine[0])
    for role in FROZEN:
        if role in roles.answers:
            # a log-prob (or score) pass is the trainer's forward pass over the step's tokens (verl and OpenRLHF run
            # it on the training engine, micro-batched): 2/6 of a training step's FLOP at the training rate, scaled
            # by the model's size against the policy's
            times[role] = train_s * _forward_share(plan) * _params(roles, role) / _params(roles, "policy")
    for role, answer in trainers.items():
        o = _option(answer, gpu["gpu"])
        if o is None or not o.tokens_per_s or o.count != n:
            return None
        # the updates, plus the old log-probs' (or the values') forward pass before them
        times["training" if role == "policy" else "critic"] = \
            computed / o.tokens_per_s * (1 + _forward_share(plan))
    if w.framework == MEGATRON and plan["pp"] > 1:
        # the trainer's sub-answers split its work evenly over the pipeline's stages; Megatron-Core splits the layers
        # evenly and leaves the output layer on the last stage, which every micro-batch waits for
        seq = w.prompt_len + w.response_len
        for role, phase in (("policy", "training"), ("critic", "critic"), ("reference", "reference"), ("reward", "reward")):
            if phase in times:
                times[phase] *= last_stage(roles.answers[role].workload, plan["pp"], seq)
    if "rollout" in roles.replicas:
        weights = roles.replicas["rollout"][0]["weights"]
        # the new weights reach each engine GPU: gathered from the trainer's shards over the node's link
        # (colocated: the reload after a level-2 sleep) or sent to the rollout GPUs (split), and loaded tensor by
        # tensor into the engine, no faster than a published refit moved them (policy rl-weight-load-rate)
        times["sync"] = weights / plan["rollout_tp"] / min(_sync_link(plan, gpu), load_rate)
        if plan["placement"] == "colocated":
            times["switch"] = switch_s
    moved = _host_bytes(w, roles, plan, moves)
    if moved:
        times["offload"] = moved / gpu["pcie_bandwidth"]
    return times


def last_stage(w: ResolvedWorkload, pp: int, seq: int) -> float:
    """The last pipeline stage's work over what the trainer's sub-answer already charged the pipeline: Megatron-Core
    puts as many layers on every stage as it can, ceil(layers / pp) on the fullest, and the output layer on the last
    stage; the input embedding is a lookup, no multiply. The sub-answer's step already runs at the fullest stage's
    pace (bottleneck.interconnect.step imbalance, planner.stage_imbalance), so only the output layer is added here.
    FLOP per token: a layer's 2·(its parameters) + 2·seq·d_model of attention, the output layer's 2·vocab·d_model."""
    if pp <= 1:
        return 1.0
    out = 2 * w.vocab_size * w.hidden_size
    embedding = 0 if w.tied_embeddings else out  # an untied input embedding's parameters, counted in params
    layers = 2 * w.active_params - out - embedding + 2 * w.layers * seq * w.hidden_size
    # the last stage's work, (layers·I + pp·out) / pp with I the imbalance, over the (layers + out)·I / pp charged
    return (layers + pp * out / stage_imbalance(w.layers, pp)) / (layers + out)


def _host_bytes(w: ResolvedWorkload, roles: Roles, plan: dict[str, Any], moves: dict[str, float]) -> float:
    """Bytes each GPU moves between its memory and the host's every step. Frozen models offloaded between their
    passes (verl's ref param_offload, OpenRLHF's --ref_reward_offload): each GPU's shard of their weights in and
    out. Framework megatron, as NeMo RL's Megatron backend runs it: a GPU's tensor- and pipeline-parallel shard of
    the trained weights (whole over data parallelism: the distributed optimizer shards only the optimizer states)
    out to the host while a colocated engine generates and back for the log-probs, the reference's log-probs
    computed by swapping its weights into the policy's model and back, the optimizer states out and back, and a
    colocated engine's weights out at its level-1 sleep and back at its wake."""
    parts = plan["parts"]
    frozen = {r: 2 * parts[r]["weights"] for r in FROZEN if r in parts}
    if w.framework != MEGATRON:
        return sum(frozen.values())
    shard = {r: roles.replicas[r][0]["weights"] / (plan["tp"] * plan["pp"]) for r in (*TRAINED, "reference")
             if r in roles.replicas}
    moved = moves[OPTIMIZER_MOVES] * sum(parts[r]["optimizer"] for r in TRAINED if r in parts)
    if "reference" in shard:  # the policy's shard out, the reference's in, the policy's back
        frozen["reference"] = (moves[SWAP_MOVES] - 1) * shard["policy"] + shard["reference"]
    if plan["placement"] == "colocated" and "rollout" in roles.replicas:
        moved += moves[WEIGHT_MOVES] * sum(shard[r] for r in TRAINED if r in shard)
        moved += moves[ENGINE_MOVES] * roles.replicas["rollout"][0]["weights"] / plan["rollout_tp"]
    return moved + sum(frozen.values())


def _forward_share(plan: dict[str, Any]) -> float:
    """A forward pass's share of a training step's time: 2 of 6·N·D FLOP, of 8·N·D when checkpointing recomputes
    the forward pass in the backward."""
    return FORWARD_SHARE * 6 / (8 if plan["checkpointing"] else 6)


def _params(roles: Roles, role: str) -> float:
    return float(roles.answers[role].workload.params)


def _decoder(generation: Answer, o: Option, floor_s: float, host_s: float,
             step_host_s: float) -> tuple[rl_lengths.Decoder, int] | None:
    """An engine's token step from the decode rule's own terms in this option's trace, with the rollout engine's
    serial host work each step (step_host_s) and per running sequence (host_s), and the sequences it ran at once
    there; None where the rule made no estimate."""
    v = next(({x["name"]: x["value"] for x in step.values} for step in o.trace
              if step.rule.split("@")[0] == "rec.throughput.decode"), None)
    if v is None or not o.tokens_per_s:
        return None
    rw = generation.workload
    assert rw.prompt_len is not None and rw.output_len is not None
    conc = int(v["concurrency"])
    context = conc * (rw.prompt_len + rw.output_len / 2)  # the rule's decode context (resolve.decode_context)
    fixed = 2 * rw.layers * v["allreduce_s"]  # the all-reduces' latency, paid whatever the batch
    engine = rl_lengths.Decoder(
        weights_s=v["weight_bytes_read"] / v["read_rate"], flop_s=v["matmul_flops"] / conc / v["compute_rate"],
        kv_s=v["kv_read"] / v["read_rate"] / context, per_seq_s=v["elementwise_s"] + (v["tp_s"] - fixed) / conc,
        fixed_s=fixed, floor_s=max(v["launch_s"], floor_s), prefill_s=v["batch_prefill_s"] / conc, host_s=host_s,
        step_host_s=step_host_s)
    return engine, conc


def _generation_s(w: ResolvedWorkload, plan: dict[str, Any], batch: int, engine: rl_lengths.Decoder) -> float:
    """The generation phase: every engine decodes its share of the step's responses with continuous batching, at
    most `batch` at once (the decode rule's concurrency), the longest of the step's responses among them
    (rl_lengths)."""
    assert w.response_len is not None and w.prompt_len is not None
    s = sequences(w)
    engines = max(1, (plan["rollout_gpus"] or plan["trainer_gpus"]) // max(plan["rollout_tp"], 1))
    share = math.ceil(s / engines)
    mu = rl_lengths.scale(_mean_response(w), w.response_len)
    longest = rl_lengths.expected_longest(s, mu, w.response_len)
    lens = rl_lengths.lengths(share, mu, w.response_len, longest)
    return rl_lengths.decode_time(lens, min(batch, share), w.prompt_len, engine)


def _sync_link(plan: dict[str, Any], gpu: dict[str, Any]) -> float:
    """The link the new weights cross: NVLink inside a node (or PCIe), the network between nodes."""
    inside = gpu["scale_up_bandwidth"] or gpu["peer_bandwidth"]
    if plan["count"] <= gpu["gpus_per_node"]:  # past one node, the weights gathered from the trainer's shards cross it
        return inside
    return min(inside, gpu["node_network_bandwidth"])


def _layout_key(plan: dict[str, Any]) -> tuple[int, int, bool, int, int]:
    return plan["trainer_gpus"], plan["zero_stage"], plan["checkpointing"], plan["tp"], plan["pp"]


# The workload field that names each role's model, for errors its sub-ask raises about the model
# the roles' names in Chinese sentences (the JSON keys stay as the contract names them)
ROLE_ZH = {"policy": "策略模型", "reference": "参考模型", "reward": "奖励模型", "critic": "价值模型", "rollout": "生成引擎"}
_MODEL_FIELD = {"reference": "reference_model", "reward": "reward_model", "critic": "critic_model"}


# (role, field of its sub-ask) -> the RL workload's field it is derived from (role_workloads); "*" any role
_DERIVED_FROM = {("*", "global_batch_size"): "rollout_batch", ("rollout", "batch_size"): "rollout_batch",
                 ("*", "batch_size"): "micro_batch_size", ("*", "seq_len"): "response_len",
                 ("rollout", "prompt_len"): "prompt_len", ("*", "prompt_len"): "response_len",
                 ("rollout", "tensor_parallel"): "rollout_tensor_parallel",
                 ("*", "output_len"): "response_len"}


def _asked(sub: SubAsk, role: str, job: dict[str, Any]) -> Answer:
    """A role's sub-ask; an error names the RL workload's field and the role, not the sub-ask's fields."""
    try:
        return sub(job)
    except WorkloadError as err:
        if err.field in ("model", *_MODEL_FIELDS):
            field = _MODEL_FIELD.get(role, "model")
        else:  # a field role_workloads derived names the RL workload's field it came from, one the user set
            field = _DERIVED_FROM.get((role, err.field), _DERIVED_FROM.get(("*", err.field), err.field))
        raise WorkloadError(field, message("rl_role", detail=err.message, role=role, task=job["task"])) from None


def _framework(kb: KnowledgeBase, w: Workload) -> str | None:
    """The framework that trains the run's models: the workload's, which must run the RL task, else the task's
    default (kb/frameworks)."""
    if not kb.frameworks:
        return w.framework
    if w.framework is None:
        return default_framework(kb, w.task)
    f = kb.frameworks.get(w.framework)
    if f is None or w.task not in f.tasks:
        runs = [fid for fid, fw in sorted(kb.frameworks.items()) if w.task in fw.tasks and fw.status != "deprecated"]
        raise WorkloadError("framework", message("framework_task", framework=w.framework, task=w.task, runs=runs))
    return w.framework


def check_rl(kb: KnowledgeBase, w: Workload) -> None:
    """Raise the WorkloadError an ask of this RL workload would, without answering it: its framework and each
    role's job as it resolves (gpukb lint checks measurements with it)."""
    from ..answer.workload import parse_workload
    from .resolve import resolve

    for role, job in role_workloads(w, _framework(kb, w)).items():
        _asked(lambda fields: resolve(kb, parse_workload(fields)), role, job)  # type: ignore[arg-type,return-value]


def ask_rl(kb: KnowledgeBase, w: Workload, sub: SubAsk) -> Answer:
    """An RL workload's Answer: each model asked as its own job, then placed together per GPU type."""
    framework = _framework(kb, w)
    jobs = role_workloads(w, framework)
    answers = {role: _asked(sub, role, job) for role, job in jobs.items()}
    resolved = _resolved(kb, w, answers)
    roles = Roles(answers)
    policy = policy_fact(kb)
    gpus = {g: gpu_fact(kb, kb.gpus[g], resolved.precision, resolved.kv_cache_precision, resolved.systems) for g in resolved.gpus}
    placements = [w.rl_placement] if w.rl_placement else (["colocated", "split"] if "rollout" in answers else ["colocated"])
    plans: dict[str, list[dict[str, Any]]] = {}
    blocked = {g: o for g in gpus if (o := _blocking(answers, g)) is not None}
    for g, gfact in gpus.items():
        if g in blocked:
            continue
        plans[g] = [p for p in (place(kb, resolved, roles, gfact, policy, where) for where in placements) if p]
    # colocated engines decode their share of the batch at their own tensor-parallel size: one sub-ask per
    # (share, size), over the GPU types that need it
    generation: dict[tuple[int, int], list[str]] = {}
    for g, options in plans.items():
        for p in options:
            if p["fits"] and p["placement"] == "colocated" and "rollout" in answers:
                generation.setdefault((p["engine_batch"], p["rollout_tp"]), []).append(g)
    engines = {key: _asked(sub, "rollout", {**jobs["rollout"], "batch_size": key[0], "tensor_parallel": key[1],
                                            "output_len": _mean_response(w), "gpus": sorted(set(gs))})
               for key, gs in generation.items()}
    # the trained roles on exactly the trainer's GPUs in its layout: one sub-ask per layout, over its GPU types
    layouts: dict[tuple[Any, ...], list[str]] = {}
    for g, options in plans.items():
        for p in options:
            if p["fits"]:
                layouts.setdefault(_layout_key(p), []).append(g)
    # each update's sequences as the micro-batches they pack into, the slowest rank's count on every rank
    micro = {key: packing(resolved, key[0] // (key[3] * key[4]), key[4])[0] * key[0] // (key[3] * key[4])
             * resolved.micro_batch_size for key in layouts}
    trainers = {key: {role: _asked(sub, role, {**jobs[role], "gpu_count": key[0], "placement": "all",
                                               "global_batch_size": micro[key],
                                               "zero_stage": key[1], "activation_checkpointing": key[2],
                                               "tensor_parallel": key[3], "pipeline_parallel": key[4],
                                               "gpus": sorted(set(gs))})
                      for role in TRAINED if role in jobs}
                for key, gs in layouts.items()}
    switch_s, load_rate = float(kb.policy(SWITCH)), float(kb.policy(LOAD_RATE))
    floor_s, host_s, step_host_s = float(policy["decode_step_floor"]), float(kb.policy(HOST)), float(kb.policy(HOST_STEP))
    # a knowledge base from before these policies (validate --base reads one with this code) moved nothing: its model
    moves = {m: float(kb.policy(m)) if m in kb.policies else 0.0 for m in MOVES}
    c = Collector(kb, len(gpus))
    pfact = c.new_fact("policy", policy, 0)
    wfact = c.new_fact("workload", workload_fact(kb, resolved), 0)
    facts: list[dict[str, Any]] = []
    chosen: dict[str, dict[str, Any]] = {}
    for g, options in plans.items():
        timed = []
        for p in (p for p in options if p["fits"]):
            gen = (answers.get("rollout") if p["placement"] == "split"
                   else engines.get((p["engine_batch"], p["rollout_tp"])) if "rollout" in answers else None)
            times = phase_times(resolved, roles, p, gpus[g], gen, trainers[_layout_key(p)], floor_s, switch_s,
                                load_rate, host_s, step_host_s, moves)
            # the fewest GPU-seconds per step; a plan no rule could time after every timed one, by its GPUs
            cost = p["count"] * sum(times.values()) if times is not None else math.inf
            timed.append((cost, p["placement"] != "colocated", p, times))
        if not timed:  # nothing fits: the closest miss, for the rules to reject
            if options:
                chosen[g] = options[0]
                facts.append(_record_plan(c, resolved, wfact, pfact, gpus[g], options[0], {}, False, []))
            continue
        timed.sort(key=lambda t: (t[0], t[2]["count"], t[1]))
        _, _, plan, times = timed[0]
        chosen[g] = plan
        facts.append(_record_plan(c, resolved, wfact, pfact, gpus[g], plan, times, len(timed) > 1 and not w.rl_placement,
                                  timed))
    with ENGINE.session(kb, c, wfact) as session:
        session.assert_facts([pfact, wfact, *facts])
    return _answer(kb, c, resolved, answers, chosen, list(blocked.values()))


def _blocking(answers: dict[str, Answer], gpu: str) -> Option | None:
    """A role's sub-answer that rejects this GPU type outright (a precision it lacks, a model it cannot hold
    within gpu_count), which rejects the whole run there. The rollout engine's own memory is not one: it only
    rules out the split placement, as colocated engines share the batch over all the GPUs."""
    for role, answer in answers.items():
        o = _option(answer, gpu)
        if o is not None and not o.fits and not (role == "rollout" and all(
                f.kind == "memory_capacity" for f in o.findings if f.severity == "error")):
            return o
    return None


def _resolved(kb: KnowledgeBase, w: Workload, answers: dict[str, Answer]) -> ResolvedWorkload:
    """The RL workload as answered: the policy's resolution, with the task, the run's fields and assumptions."""
    base = answers["policy"].workload
    notes = list(zip(base.assumptions, base.assumptions_zh or base.assumptions, strict=True))  # (English, Chinese)
    if w.framework is None and base.framework in kb.frameworks:
        f = kb.frameworks[base.framework]
        notes.insert(0, (f"framework not given: {f.id} ({f.name}) trains the models, the default for {w.task}: "
                         f"{' '.join(f.default_reason.split())}",
                         f"未指定框架：{term('zh', w.task)}默认用 {f.id} 训练各模型。{' '.join(f.default_reason_zh.split())}"))
    if w.task != "dpo" and w.mean_response_len is None:
        notes.append((f"response_len ({w.response_len:,} tokens) is the cap the engine stops a response at, and every "
                      "response is taken to reach it: a step waits for its longest response (the long tail), so "
                      "generation is timed at the cap; give mean_response_len, the published or measured average, "
                      "when responses are shorter on average",
                      f"response_len（{w.response_len:,} 个 token）是推理引擎截断回复的上限，这里按每条回复都生成到上限计："
                      "一步要等最长的回复（长尾）生成完，因此生成按上限计时；回复平均更短时，请给出 mean_response_len"
                      "（已发表或实测的平均长度）"))
    elif w.task != "dpo":
        notes.append((f"responses average mean_response_len ({w.mean_response_len:,} tokens) and stop at the cap "
                      f"response_len ({w.response_len:,}), their lengths an exponential clipped there: training and "
                      "scoring count the average; each engine decodes its share with continuous batching, the batch "
                      "thinning as responses end, until the step's longest (its expected length) is done",
                      f"回复平均长 mean_response_len（{w.mean_response_len:,} 个 token），到上限 response_len"
                      f"（{w.response_len:,}）截断，长度服从在上限处截断的指数分布：训练和打分按平均长度计；"
                      "每个推理引擎以连续批处理解码自己那一份，随着回复陆续结束批量变小，直到这一步最长的回复"
                      "（其期望长度）生成完"))
    if base.framework == MEGATRON:
        notes.append(("framework megatron: each step moves the trainer's states as NeMo RL's Megatron backend does: its "
                      "weights to host memory while a colocated engine generates and back for the log-probs, the "
                      "reference's weights swapped into the policy's model for its log-probs, the optimizer states out "
                      "and back, a colocated engine sleeping at level 1 (its weights to host memory); past one pipeline "
                      "stage the layers are split evenly and every micro-batch waits for the last stage, which also "
                      "holds the output layer",
                      "框架为 megatron：按 NeMo RL 的 Megatron 后端计每一步的数据搬运：共置引擎生成期间训练端权重换出到"
                      "主机内存，算对数概率前再换回；参考模型的对数概率通过把其权重换入策略模型来计算；优化器状态先换出、"
                      "训练前再换回；共置的生成引擎以 1 级休眠（权重换出到主机内存）。流水线并行时各级均分层数，输出层"
                      "落在最后一级，每个微批次都要等这一级算完"))
    if w.reference_model is None:
        notes.append(("reference_model not given: a frozen copy of the policy's initial weights (the KL term's reference)",
                      "未指定 reference_model：用策略模型初始权重的冻结副本（KL 项的参考）"))
    if w.task != "dpo" and w.reward_model is None:
        notes.append(("reward_model not given: a rule-based reward (a verifier or a function), no reward model on GPUs",
                      "未指定 reward_model：用基于规则的奖励（验证器或函数），GPU 上不放奖励模型"))
    if w.task == "ppo" and w.critic_model is None:
        notes.append(("critic_model not given: a critic of the policy's architecture, trained like the policy",
                      "未指定 critic_model：价值模型与策略模型同架构，训练方式也相同"))
    if w.task == "ppo":
        notes.append(("the critic is sized with its model's output layer and loss, as the policy is: a value head's "
                      "scalar output holds less, so its memory and time are upper bounds",
                      "价值模型和策略模型一样按完整的输出层和损失估算：价值头只输出一个标量，实际占用更少，"
                      "因此其显存和耗时是上限"))
    ref = answers.get("reference")
    return base.model_copy(update={
        "task": w.task, "rollout_batch": w.rollout_batch,
        "samples_per_prompt": None if w.task == "dpo" else sequences(w) // (w.rollout_batch or 1),
        "prompt_len": w.prompt_len, "response_len": w.response_len, "rl_placement": w.rl_placement,
        "rollout_tensor_parallel": w.rollout_tensor_parallel,
        "mean_response_len": w.mean_response_len,
        "reference_model": ref.workload.model if ref else "none",
        "reward_model": answers["reward"].workload.model if "reward" in answers else None,
        "critic_model": answers["critic"].workload.model if "critic" in answers else None,
        "kv_cache_precision": w.kv_cache_precision, "global_batch_size": w.global_batch_size, "placement": w.placement,
        "assumptions": tuple(en for en, _ in notes), "assumptions_zh": tuple(zh for _, zh in notes)})


def _record_plan(c: Collector, w: ResolvedWorkload, wfact: dict[str, Any], pfact: dict[str, Any], gpu: dict[str, Any],
                 plan: dict[str, Any], times: dict[str, float] | None, chose: bool,
                 timed: list[tuple[float, bool, dict[str, Any], dict[str, float] | None]]) -> dict[str, Any]:
    """The trace step of one GPU type's RL plan; its `rl` fact is what the RL rules read."""
    assert w.prompt_len is not None and w.response_len is not None
    fields = {"gpu": plan["gpu"], "placement": plan["placement"], "count": plan["count"],
              "trainer_gpus": plan["trainer_gpus"], "rollout_gpus": plan["rollout_gpus"],
              "per_gpu_bytes": plan["per_gpu_bytes"], "usable_bytes": plan["usable_bytes"],
              "fits": plan["fits"], "limit": plan["limit"], "timed": times is not None,
              "needed_gpus": plan.get("needed_gpus", 0),
              "tokens": sequences(w) * (w.prompt_len + _mean_response(w)), "waves": plan["waves"],
              "engine_batch": plan["engine_batch"],
              **{f"{r}_bytes": plan["memory_by_role"].get(r, 0.0) for r in ROLES},
              **{f"{ph}_s": (times or {}).get(ph, 0.0) for ph in PHASES}}
    roles = ", ".join(f"{r} {v / 1e9:,.1f} GB" for r, v in plan["memory_by_role"].items())
    phases = ", ".join(f"{ph} {t:,.1f} s" for ph, t in times.items()) if times else "not estimated"
    why = ""
    if chose:
        other = ", ".join(f"{p['placement']} {p['count']} GPUs x {sum(t.values()):,.1f} s" if t is not None
                          else f"{p['placement']} {p['count']} GPUs, not timed" for _, _, p, t in timed)
        why = f" Placement chosen: {plan['placement']}, the fewest GPU-seconds per step ({other})."
    where = (f"all models and {plan['trainer_gpus'] // max(plan['rollout_tp'], 1)} rollout engine(s) of tp "
             f"{plan['rollout_tp']} on the same {plan['count']} GPUs, each generating {plan['engine_batch']} sequences at "
             f"once ({plan['waves']} wave(s) for its share), the KV cache freed before the optimizer runs"
             if plan["placement"] == "colocated" else
             f"trained and frozen models on {plan['trainer_gpus']} GPUs, the rollout engine on {plan['rollout_gpus']} "
             "of its own")
    # the rollout engine's serial host time between two decode steps, which its generation phase counts
    step_host, per_seq = float(c.kb.policy(HOST_STEP)), float(c.kb.policy(HOST))
    host = (f" Each decode step of a rollout engine also waits {step_host * 1e3:.2f} ms for its host, plus "
            f"{per_seq * 1e6:.1f} µs a running sequence (synchronous scheduling)." if times and "generation" in times else "")
    host_zh = (f"生成引擎每个解码步还要等主机 {step_host * 1e3:.2f} ms，每条正在生成的序列另加 {per_seq * 1e6:.1f} µs"
               "（同步调度）。" if times and "generation" in times else "")
    sentence = (f"{plan['gpu']}: {plan['placement']}, {where}; trainer layout dp={plan['dp']}, tp={plan['tp']}, "
                f"pp={plan['pp']}, ZeRO-{plan['zero_stage']}, checkpointing {'on' if plan['checkpointing'] else 'off'}. "
                f"Per GPU: {roles}; the peak phase needs {plan['per_gpu_bytes'] / 1e9:,.1f} GB of "
                f"{plan['usable_bytes'] / 1e9:,.1f} GB usable. Phases per step: {phases}.{host}{why}")
    where_zh = ("所有模型与生成引擎共用同一组 GPU，优化器运行前释放 KV 缓存" if plan["placement"] == "colocated"
                else f"训练与冻结模型用 {plan['trainer_gpus']} 块 GPU，生成引擎独占 {plan['rollout_gpus']} 块")
    roles_zh = "，".join(f"{ROLE_ZH.get(r, r)} {v / 1e9:,.1f} GB" for r, v in plan["memory_by_role"].items())
    phases_zh = "，".join(f"{rl_word('zh', ph)} {t:,.1f} s" for ph, t in times.items()) if times else "未估算"
    sentence_zh = (f"{plan['gpu']}：{rl_word('zh', plan['placement'])}，共 {plan['count']} 块 GPU，{where_zh}；"
                   f"每块 GPU：{roles_zh}；峰值阶段需要 {plan['per_gpu_bytes'] / 1e9:,.1f} GB，可用 "
                   f"{plan['usable_bytes'] / 1e9:,.1f} GB。每步各阶段：{phases_zh}。{host_zh}")
    values = [Value(name=k, value=v, expr=_EXPRS.get(k)) for k, v in fields.items()]
    (fact,) = c.record(
        rule="planner.rl-placement@2", stage="requirements",
        title="RL run: the models of one step placed on the same or separate GPUs, memory per role and phase times",
        inputs={"w": wfact, "p": pfact, "g": c.new_fact("gpu", gpu, 0)}, values=values, claims=cited(c.kb, CLAIMS),
        sources=SOURCES, sentence=sentence, outputs=[("rl", fields)],
        title_zh="RL 训练：一步中各模型放在同一组或不同 GPU 上，各角色显存与各阶段时间", sentence_zh=sentence_zh)
    return fact


_EXPRS = {
    "per_gpu_bytes": "max over phases (train each trained role, forward each frozen role with its weights brought in, "
                     "rollout) of resident (trained weights + optimizer) + that phase's transients + runtime overhead",
    "policy_bytes": "planner PARTS (weights + gradients + optimizer + activations) of the policy's training replica",
    "critic_bytes": "planner PARTS (weights + gradients + optimizer + activations) of the critic's training replica",
    "reference_bytes": "planner PARTS (weights + activations) of the reference's forward pass",
    "reward_bytes": "planner PARTS (weights + activations) of the reward model's forward pass",
    "rollout_bytes": "colocated: (rollout weights + KV cache of engine_batch sequences) / rollout_tp, engine_batch the "
                     "engine's share of the batch, what its GPUs have left beside the resident models or max_num_seqs "
                     "(policy rl-rollout-max-seqs), the least; split: the serving plan of the whole batch",
    "waves": "ceil(the engine's share of the batch / engine_batch)",
    "generation_s": "each engine's share of the responses, lengths a clipped exponential of mean mean_response_len and "
                    "cap response_len (the step's expected longest among them), decoded with continuous batching at "
                    "most engine_batch at once, a token step affine between the decode rule's step at batch 1 and at "
                    "engine_batch, plus the engine's serial host work between two steps, a fixed part (policy "
                    "rl-rollout-host-per-step) and a part per running sequence (policy rl-rollout-host-per-sequence) "
                    "(gpukb.estimate.rl_lengths)",
    "reference_s": "training time of the step's packed micro-batches x forward share (2/6, 2/8 with checkpointing) x reference "
                   "params / policy params: the log-prob pass on the training engine",
    "reward_s": "training time of the step's packed micro-batches x forward share (2/6, 2/8 with checkpointing) x "
                "reward params / policy params: the scoring pass on the training engine",
    "training_s": "updates (sequences / global_batch_size) x micro-batches per rank (the update's sequences packed "
                  "first-fit decreasing into bins of micro_batch_size x (prompt_len + response_len) tokens, dealt to "
                  "the data-parallel ranks) x data-parallel ranks x tokens a micro-batch computes (the bin's capacity "
                  "past one pipeline stage, its tokens with one) / training tokens_per_s on the trainer GPUs in their "
                  "layout at that global batch x (1 + forward share: the old log-probs' pass); framework megatron past one "
                  "pipeline stage x the last stage's work over an even share (its even share of the layers and the output "
                  "layer: rl.last_stage), as for the reference, reward and critic passes",
    "critic_s": "as training_s, the critic's tokens_per_s, x (1 + forward share: the values' pass)",
    "sync_s": "rollout weights / rollout_tp / min(link: NVLink or PCIe inside a node, the network between nodes; "
              "policy rl-weight-load-rate)",
    "switch_s": "colocated: policy rl-engine-switch-time (the engine's sleep and wake, its KV cache re-allocated)",
    "offload_s": "bytes a GPU moves to and from host memory a step / PCIe bandwidth: 2 x the frozen models' weights per "
                 "GPU (brought in for their pass, sent back); framework megatron (NeMo RL's backend): the trained weights' "
                 "tp x pp shard x policy rl-trainer-weight-moves (colocated), the reference swapped in and out (policy "
                 "rl-reference-swap-moves), the optimizer states x policy rl-optimizer-moves, a colocated engine's "
                 "weights / rollout_tp x policy rl-engine-weight-moves (its level-1 sleep and wake)",
}


def _answer(kb: KnowledgeBase, c: Collector, w: ResolvedWorkload, answers: dict[str, Answer],
            chosen: dict[str, dict[str, Any]], blocked: list[Option]) -> Answer:
    """The Answer: one option per GPU type with an RL plan, its figures from the rl facts and the RL rules."""
    replica = answers["policy"]._replica
    assert replica is not None
    built = build_answer(c, kb.version, kb.content_hash, w, replica[0], {})  # findings; no plan facts, no options
    steps = {f["gpu"]: f for f in c.of_kind("rl_step")}
    options, rejected = [], []
    for fact in c.of_kind("rl"):
        g = fact["gpu"]
        plan, step = chosen[g], steps.get(g)
        parts = plan["parts"]
        memory = Memory(**{k: round(sum(p.get(k, 0.0) for p in parts.values()))
                           for k in ("weights", "gradients", "optimizer", "activations")},
                        kv_cache=round(fact["rollout_bytes"]), overhead=round(kb.policy("runtime-overhead")),
                        total=round(fact["per_gpu_bytes"]))
        gfact = gpu_fact(kb, kb.gpus[g], w.precision, w.kv_cache_precision, w.systems)
        strategy = Strategy(data_parallel=plan["dp"], tensor_parallel=plan["tp"], pipeline_parallel=plan["pp"],
                            zero_stage=plan["zero_stage"], activation_checkpointing=plan["checkpointing"], offload="none",
                            nodes=math.ceil(fact["count"] / gfact["gpus_per_node"]))
        # the nodes the run rents, as a training plan's (gpukb.estimate.systems): RL holds no offloaded state
        rent = rental(kb, kb.systems[gfact["system"]], fact["count"], 0.0, w.systems) if gfact["system"] else None
        usd_per_hour = (rent.usd_per_hour or None) if rent else (fact["count"] * gfact["usd_per_gpu_hour"] or None)
        step_s = step["step_time_s"] if step else 0.0
        rl = RlEstimate(step_time_s=step["step_time_s"] if step else 0.0,  # a plan that does not fit is not timed
                        phases={p: fact[f"{p}_s"] for p in PHASES if step and _has_phase(p, answers, fact)},
                        memory_by_role={r: round(fact[f"{r}_bytes"]) for r in ROLES if r in answers},
                        placement=fact["placement"], trainer_gpus=fact["trainer_gpus"], rollout_gpus=fact["rollout_gpus"],
                        bound=step["bound"] if step else None)
        own = [f for f in c.facts.values() if f.get("gpu") == g and f["kind"] != "remedy"]
        subs = [s for a in answers.values() if (o := _option(a, g)) is not None for s in o.trace]
        fits = bool(fact["fits"])
        option = Option(gpu=g, count=fact["count"], fits=fits, per_gpu_bytes=round(fact["per_gpu_bytes"]),
                        usable_bytes=round(fact["usable_bytes"]), memory=memory, strategy=strategy,
                        system=rent.system.id if rent else None,
                        host_memory_bytes=round(rent.system.host_memory) if rent else None,
                        usd_per_hour=usd_per_hour if fits else None,
                        usd_per_step=usd_per_hour * step_s / 3600 if usd_per_hour and fits and step_s else None,
                        tokens_per_s=step["tokens_per_s"] if step else None, time_to_train_s=None, efficiency=None,
                        score=step["tokens_per_s"] if step and fits else 0.0, tier=1, branch=None,
                        findings=tuple(f for f in built.findings if f.gpu == g),
                        trace=(*subs, *_lineage(c, [fact, *own])), rl=rl)
        (options if fits else rejected).append(option)
    rejected += blocked  # a role's own answer rejects the GPU type: its option, with the finding that says why
    options.sort(key=lambda o: (o.count, -o.score, o.gpu) if w.objective == "gpus" else (-o.score, o.count, o.gpu))
    best = options[0].gpu if options else ""
    remedies = {}
    for fact in sorted(c.of_kind("remedy"), key=lambda r: (r["remedy"], r.get("gpu", ""))):
        if fact.get("gpu") in (None, "", best) and _improves(fact):
            remedies.setdefault(fact["remedy"], _remedy(c, fact))
    sub_trace = tuple(s for a in answers.values() for s in a.trace)
    findings = (*built.findings, *(f for o in blocked for f in o.findings))
    return built.model_copy(update={"options": tuple(options), "rejected": tuple(sorted(rejected, key=lambda o: o.gpu)),
                                    "memory": _replica_memory(answers), "remedies": tuple(remedies.values()),
                                    "findings": findings,
                                    "trace": (*sub_trace, *c.steps)})


def _has_phase(phase: str, answers: dict[str, Answer], fact: dict[str, Any]) -> bool:
    if phase == "switch":  # only an engine that shares its GPUs with the trainer sleeps and wakes
        return "rollout" in answers and fact["placement"] == "colocated"
    if phase == "offload":  # frozen models, or a Megatron trainer's states, moved to the host and back
        return any(r in answers for r in FROZEN) or fact["offload_s"] > 0
    return {"generation": "rollout", "sync": "rollout", "training": "policy"}.get(phase, phase) in answers


def _replica_memory(answers: dict[str, Answer]) -> Memory:
    """All the run's models before sharding: the trained roles' states, the frozen roles' weights and forward
    activations, the rollout engine's weights and KV cache; one runtime overhead."""
    parts = dict.fromkeys(("weights", "gradients", "optimizer", "activations", "kv_cache"), 0)
    for role, a in answers.items():
        m = a.memory
        parts["weights"] += m.weights
        if role in TRAINED:
            parts["gradients"] += m.gradients
            parts["optimizer"] += m.optimizer
        if role != "rollout":
            parts["activations"] = max(parts["activations"], m.activations)
        else:
            parts["kv_cache"] += m.kv_cache
    overhead = answers["policy"].memory.overhead
    return Memory(**parts, overhead=overhead, total=sum(parts.values()) + overhead)
