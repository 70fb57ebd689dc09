"""The `gpukb` command line: ask, sweep, explain, list, lint, impact, validate, probe, schema."""

from __future__ import annotations

import json
import sys
from enum import Enum, StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .. import load_kb
from ..contrib.reporters import REPORTERS
from ..core import jsontext
from ..core.errors import ASK_ERRORS, BaseRevisionError, KBError, WorkloadError
from ..core.fmt import Lang, duration, gb
from ..core.fmt import bandwidth as fmt_bandwidth
from ..core.messages import Message, message
from ..core.terminal import clean
from ..core.words import label, say, term

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Which GPUs an LLM workload needs, what will hold it back, and what to do — with a trace.")
out = Console(soft_wrap=True)  # the terminal's width; 80 columns (or $COLUMNS) when piped
err = Console(stderr=True, soft_wrap=True)


class Task(StrEnum):
    pretrain = "pretrain"
    full_finetune = "full_finetune"
    lora = "lora"
    qlora = "qlora"
    inference = "inference"
    grpo = "grpo"
    ppo = "ppo"
    dpo = "dpo"


class Precision(StrEnum):
    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


class Optim(StrEnum):
    adamw = "adamw"
    adamw_8bit = "adamw_8bit"
    sgd = "sgd"
    sgd_momentum = "sgd_momentum"
    adafactor = "adafactor"


class Offload(StrEnum):
    none = "none"
    optimizer = "optimizer"
    optimizer_params = "optimizer+params"


class Language(StrEnum):
    en = "en"
    zh = "zh"


class Format(StrEnum):  # the names of reporters.REPORTERS
    text = "text"
    github = "github"
    json = "json"


NOTHING_FITS = 3  # exit code: the ask was valid, but no candidate GPU type can run it within its limits


def _fail_kb(error: KBError, lang: Lang = "en") -> None:
    if lang == "zh":  # a heading and each problem's kind in Chinese; the English stays one problem a line
        err.print(clean(message("kb_invalid", count=len(error.problems)).text(lang)), markup=False, highlight=False)
    for problem in error.problems:
        err.print(clean(problem.text(lang)), markup=False, highlight=False)
    raise typer.Exit(1)


def _fail(error: Exception | Message, code: int, lang: Lang = "en") -> None:
    """`error: ...` on stderr in `lang` (an error with a Message is written in it), then exit `code`."""
    text = error.text(lang) if hasattr(error, "text") else str(error)
    err.print(clean(message("error", detail=text).text(lang)), markup=False, highlight=False)
    raise typer.Exit(code)


def _cell(value: object) -> Text:
    """A table cell shown as the text it is: never read as rich markup, no control characters."""
    return Text(clean(value))


@app.command()
def ask(
    task: Annotated[Task, typer.Option(help="what to do with the model")],
    model: Annotated[str | None, typer.Option(
        help="catalog model id (e.g. llama-3-8b; `gpukb list models`) or its Hugging Face repository "
             "(meta-llama/Llama-3.1-8B, read offline), a config.json or its folder, or hf:ORG/NAME (downloaded)")] = None,
    params: Annotated[str | None, typer.Option(help="parameter count of a custom model, e.g. 7B")] = None,
    layers: Annotated[int | None, typer.Option()] = None,
    hidden_size: Annotated[int | None, typer.Option()] = None,
    heads: Annotated[int | None, typer.Option()] = None,
    kv_heads: Annotated[int | None, typer.Option()] = None,
    vocab_size: Annotated[int | None, typer.Option()] = None,
    intermediate_size: Annotated[int | None, typer.Option()] = None,
    mlp: Annotated[str | None, typer.Option(help="custom models: gated (SwiGLU) or standard")] = None,
    precision: Annotated[Precision | None, typer.Option()] = None,
    optimizer: Annotated[Optim | None, typer.Option()] = None,
    seq_len: Annotated[int | None, typer.Option(help="tokens per sequence (default 4096)")] = None,
    micro_batch_size: Annotated[int | None, typer.Option(help="training sequences per GPU step")] = None,
    global_batch_size: Annotated[int | None, typer.Option(help="training sequences per optimizer step")] = None,
    batch_size: Annotated[int | None, typer.Option(help="inference concurrency")] = None,
    prompt_len: Annotated[int | None, typer.Option(help="inference: prompt tokens per request")] = None,
    output_len: Annotated[int | None, typer.Option(help="inference: output tokens per request")] = None,
    kv_cache_precision: Annotated[str | None, typer.Option(help="inference: bf16, fp16, fp8 or int8")] = None,
    ttft_ms: Annotated[float | None, typer.Option(help="inference: time-to-first-token target in ms")] = None,
    tpot_ms: Annotated[float | None, typer.Option(help="inference: time-per-output-token target in ms")] = None,
    objective: Annotated[str | None, typer.Option(
        help="rank by speed (default), cost (cheapest per token) or gpus (fewest GPUs, then speed)")] = None,
    region: Annotated[str | None, typer.Option(
        help="training: ISO 3166 country code whose grid intensity sets the CO₂ (us default, fr, de, cn, ...)")] = None,
    activation_checkpointing: Annotated[bool | None, typer.Option(
        "--activation-checkpointing/--no-activation-checkpointing", help="default: the engine decides")] = None,
    flash_attention: Annotated[bool | None, typer.Option(
        "--flash-attention/--no-flash-attention", help="training: fused attention (default on)")] = None,
    lora_rank: Annotated[int | None, typer.Option()] = None,
    gpu_count: Annotated[int | None, typer.Option(help="most GPUs usable")] = None,
    gpu: Annotated[list[str] | None, typer.Option(
        "--gpu", help="candidate GPU id (repeat; `gpukb list gpus`); default all")] = None,
    tokens: Annotated[str | None, typer.Option(help="training tokens, e.g. 2T: enables time-to-train")] = None,
    deadline_days: Annotated[float | None, typer.Option(
        help="training with --tokens: days the run may take; each GPU type is sized (whole nodes past one) to "
             "finish within it (pre-training defaults to the horizon of policy pretrain-horizon)")] = None,
    zero_stage: Annotated[int | None, typer.Option()] = None,
    tensor_parallel: Annotated[int | None, typer.Option()] = None,
    pipeline_parallel: Annotated[int | None, typer.Option()] = None,
    expert_parallel: Annotated[int | None, typer.Option(
        help="full training of a mixture of experts: GPUs its routed experts are split over")] = None,
    context_parallel: Annotated[int | None, typer.Option(
        help="training: GPUs each sequence is split over (context parallelism, ring attention)")] = None,
    virtual_pipeline_stages: Annotated[int | None, typer.Option(
        help="training with --pipeline-parallel: model chunks per pipeline rank (interleaved 1F1B)")] = None,
    tp_comm_overlap: Annotated[bool | None, typer.Option(
        "--tp-comm-overlap/--no-tp-comm-overlap",
        help="training: the framework overlaps tensor-parallel traffic with GEMMs (default off)")] = None,
    master_weights: Annotated[bool | None, typer.Option(
        "--master-weights/--no-master-weights",
        help="training in 16 bit: keep an fp32 master copy (default); --no-master-weights: pure bf16 (torchtune)")] = None,
    optimizer_in_backward: Annotated[bool | None, typer.Option(
        "--optimizer-in-backward/--no-optimizer-in-backward",
        help="full training: step each parameter in the backward pass, one gradient alive at a time")] = None,
    offload: Annotated[Offload | None, typer.Option()] = None,
    placement: Annotated[str | None, typer.Option(help="fewest (default) or all: use exactly --gpu-count GPUs")] = None,
    framework: Annotated[str | None, typer.Option(help=(
        "the stack: training hf, torchtune, fsdp, deepspeed, megatron, unsloth; serving vllm, sglang, tensorrt-llm, "
        "llama.cpp, hf; default per task from kb/frameworks, stated in the answer"))] = None,
    rollout_batch: Annotated[int | None, typer.Option(help="RL (grpo, ppo): prompts per step; dpo: pairs per step")] = None,
    samples_per_prompt: Annotated[int | None, typer.Option(help="RL: responses per prompt (GRPO's group size)")] = None,
    response_len: Annotated[int | None, typer.Option(help="RL: the longest response, in tokens")] = None,
    mean_response_len: Annotated[int | None, typer.Option(
        help="RL: the responses' average length (default response_len: all run to the cap)")] = None,
    rl_placement: Annotated[str | None, typer.Option(
        help="RL: colocated (generation and training take turns on the same GPUs) or split (rollout GPUs of their "
             "own); default: the planner chooses and says which")] = None,
    reference_model: Annotated[str | None, typer.Option(help="RL: the frozen reference (default the policy; none)")] = None,
    reward_model: Annotated[str | None, typer.Option(help="RL: a reward model (default none: a rule-based reward)")] = None,
    critic_model: Annotated[str | None, typer.Option(help="ppo: the critic (default the policy's model)")] = None,
    reference_precision: Annotated[Precision | None, typer.Option(help="RL: the reference's precision")] = None,
    reward_precision: Annotated[Precision | None, typer.Option(help="RL: the reward model's precision")] = None,
    critic_precision: Annotated[Precision | None, typer.Option(help="ppo: the critic's precision")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the whole Answer as JSON")] = False,
    launch: Annotated[str | None, typer.Option(
        help="inference: print only the best option's command line for this engine (vllm or sglang)")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="print the full reasoning chain")] = False,
    lang: Annotated[Language, typer.Option(help="language of the text: en or zh (JSON is always English)")] = Language.en,
    root: Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")] = None,
) -> None:
    """Place a workload on GPUs: memory breakdown, options, rejected GPUs, findings, remedies."""
    values: dict[str, Any] = {
        "task": task, "model": model, "params": params, "layers": layers, "hidden_size": hidden_size,
        "heads": heads, "kv_heads": kv_heads, "vocab_size": vocab_size, "intermediate_size": intermediate_size,
        "precision": precision, "optimizer": optimizer, "seq_len": seq_len, "micro_batch_size": micro_batch_size,
        "batch_size": batch_size, "activation_checkpointing": activation_checkpointing,
        "flash_attention": flash_attention, "lora_rank": lora_rank,
        "gpu_count": gpu_count, "gpus": gpu or None, "tokens": tokens, "zero_stage": zero_stage,
        "tensor_parallel": tensor_parallel, "pipeline_parallel": pipeline_parallel, "offload": offload,
        "expert_parallel": expert_parallel, "tp_comm_overlap": tp_comm_overlap,
        "virtual_pipeline_stages": virtual_pipeline_stages, "context_parallel": context_parallel,
        "master_weights": master_weights, "optimizer_in_backward": optimizer_in_backward,
        "mlp": mlp, "global_batch_size": global_batch_size, "prompt_len": prompt_len, "output_len": output_len,
        "kv_cache_precision": kv_cache_precision, "placement": placement, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms,
        "objective": objective, "framework": framework, "deadline_days": deadline_days, "region": region,
        "rollout_batch": rollout_batch, "samples_per_prompt": samples_per_prompt, "response_len": response_len,
        "mean_response_len": mean_response_len, "rl_placement": rl_placement, "reference_model": reference_model,
        "reward_model": reward_model,
        "critic_model": critic_model, "reference_precision": reference_precision,
        "reward_precision": reward_precision, "critic_precision": critic_precision,
    }
    workload = {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items() if v is not None}
    try:
        kb = load_kb(root)
        answer = kb.ask(workload)
    except KBError as error:
        _fail_kb(error, lang.value)
    except ASK_ERRORS as error:
        _fail(error, 2, lang.value)
    if launch is not None:
        _print_launch(answer, launch, kb, lang.value)
        return
    if as_json:
        sys.stdout.write(answer.model_dump_json(indent=2) + "\n")
    elif explain:
        out.print(clean(answer.explain(lang.value)), markup=False, highlight=False)
    else:
        _print_answer(answer, lang.value)
    if not answer.options:  # nothing fits: a script must not read an empty table as an answer
        if as_json or explain:  # the headline on stderr too, where the output itself is for a program or a reader
            err.print(clean(answer.summary.lines(lang.value)[0] if answer.summary else "nothing fits"), markup=False,
                      highlight=False)
        raise typer.Exit(NOTHING_FITS)


def _print_launch(answer: Any, engine: str, kb: Any, lang: Lang = "en") -> None:
    """The best option's command line for `engine` on stdout, after a shell comment naming the option it is
    for (GPU type, count, layout), so a script can still run it."""
    from ..answer.launch import ENGINES, missing, option_comment

    if engine not in ENGINES:
        _fail(message("unknown_engine", engine=engine, engines=list(ENGINES)), 2, lang)
    best = answer.best
    command = (best.launch or {}).get(engine) if best else None
    if command is None:
        why = (answer.summary.lines(lang)[0] if answer.summary else "nothing fits") if best is None \
            else missing(engine, answer.workload)
        _fail(message("launch_failed", why=why), NOTHING_FITS if best is None else 1, lang)
    comment = option_comment(best.gpu, best.count, best.strategy, kb.gpus[best.gpu].devices)
    sys.stdout.write(clean(comment) + "\n" + clean(command) + "\n")


def _header(text: str, cells: list[str]) -> str:
    """A header wider than its column's cells, on two lines at the space that balances them: the numbers set the
    width, so the table keeps 80 columns (Chinese labels are twice as wide per character)."""
    widest = max((cell_len(c) for c in cells), default=0)
    if cell_len(text) <= widest:
        return text
    cuts = [i for i, ch in enumerate(text) if ch == " "]
    if not cuts:
        return text
    cut = min(cuts, key=lambda i: max(cell_len(text[:i].rstrip()), cell_len(text[i:].lstrip())))
    return f"{text[:cut].rstrip()}\n{text[cut:].lstrip()}"


def _placement(o: Any, lang: Lang) -> str:
    """'colocated' or 'split 40+8' (trainer + rollout GPUs) for an RL option."""
    if o.rl is None:
        return ""
    where = term(lang, o.rl.placement)
    return where if not o.rl.rollout_gpus else f"{where} {o.rl.trainer_gpus}+{o.rl.rollout_gpus}"


def _rl_shares(o: Any) -> str:
    """An RL step's shares: generation / policy training / the rest (scoring, critic, sync), in percent."""
    if o.rl is None or not o.rl.step_time_s:
        return ""
    gen, train = o.rl.phases.get("generation", 0.0), o.rl.phases.get("training", 0.0)
    rest = o.rl.step_time_s - gen - train
    return "/".join(f"{100 * t / o.rl.step_time_s:.0f}%" for t in (gen, train, rest))


def _print_answer(answer: Any, lang: Lang) -> None:
    """The answer as tables that fit 80 columns: ids are never cut, empty columns are left out."""

    w, m = answer.workload, answer.memory
    out.print(Text(clean(w.model), style="bold") + Text(clean(
        f" · {term(lang, w.task)} · {w.precision}" + (f" · {w.optimizer}" if w.optimizer else "")
        + f" · {label(lang, 'seq')} {w.seq_len}" + (f" · {label(lang, 'grid')} {w.region}" if w.region else "")
        + f"   (kb {answer.kb_version})")))
    if answer.summary is not None:  # the decision first, then the figures behind it
        head, *rest = answer.summary.lines(lang, shown=8)
        out.print(Text(clean(head), style="bold"), soft_wrap=False)  # wrapped to the terminal, at spaces
        for line in rest:
            out.print(Padding(Text(clean(line)), (0, 0, 0, 2)), soft_wrap=False)
    parts = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead", "total")
    memory = Table(title=label(lang, "One replica, before sharding (GB = 1e9 bytes)"), box=box.SIMPLE_HEAD, padding=(0, 1))
    headers = ("weights", "grads", "optimizer", "activations", "KV cache", "overhead", "total")
    for header in headers:
        memory.add_column(label(lang, header), justify="right", no_wrap=True)
    # a replica of over 1,000 GB (an RL run's every model) drops the unit the title states, to fit 80 columns
    wide = m.total >= 1e12
    memory.add_row(*(f"{getattr(m, n) / 1e9:,.1f}" if wide else gb(getattr(m, n)) for n in parts))
    out.print(memory)
    options = answer.options
    picked = sorted({o.branch for o in options if o.branch})
    columns: list[tuple[str, str, list[str]]] = [
        ("GPU", "left", [o.gpu for o in options]),
        ("GPUs", "right", [str(o.count) for o in options]),
        ("GB/GPU used/usable", "right", [f"{o.per_gpu_bytes / 1e9:,.1f}/{o.usable_bytes / 1e9:,.1f}" for o in options]),
        ("strategy", "left", [o.strategy.tag(lang) for o in options]),
        ("tokens/s", "right", [f"{o.tokens_per_s:,.0f}" if o.tokens_per_s else "—" for o in options]),
        ("time to train", "right", [duration(o.time_to_train_s, lang) if o.time_to_train_s else "" for o in options]),
        ("GPU-h", "right", [f"{o.gpu_hours:,.0f}" if o.gpu_hours else "" for o in options]),
        ("TTFT ms", "right", [f"{o.ttft_s * 1000:,.0f}" if o.ttft_s else "" for o in options]),
        ("ms/tok", "right", [f"{o.tpot_s * 1000:,.1f}" if o.tpot_s else "" for o in options]),
        ("pick", "center", ["*" if o.branch else "" for o in options]),
    ]
    if any(o.rl for o in options):  # RL: the placement, the step time and its split between generation and training
        columns[2:6] = [  # memory per GPU and per role are in --json and --explain; the table keeps 80 columns
            ("placement", "left", [_placement(o, lang) for o in options]),
            ("s/step", "right", [f"{o.rl.step_time_s:,.1f}" if o.rl else "" for o in options]),
            ("gen/train/other", "right", [_rl_shares(o) for o in options]),
        ]
    if w.objective == "cost":  # the cost columns replace memory and strategy; the article's pick is marked on the id
        columns[0] = ("GPU", "left", [o.gpu + ("*" if o.branch else "") for o in options])
        keep = ("GPU", "GPUs", "tokens/s", "time to train", "GPU-h", "ms/tok")
        columns = [c for c in columns if c[0] in keep]
        columns[2:2] = [
            ("$/h", "right", [f"{o.usd_per_hour:,.2f}" if o.usd_per_hour else "—" for o in options]),
            ("$/Mtok", "right", [f"{o.usd_per_million_tokens:,.2f}" if o.usd_per_million_tokens else "" for o in options]),
            ("cost", "right", [f"${o.cost_usd:,.0f}" if o.cost_usd else "" for o in options]),
        ]
    if any(o.gpu_hours for o in options) and w.objective == "cost":  # the time and the cost say what tokens/s would
        columns = [c for c in columns if c[0] != "tokens/s"]
    elif any(o.gpu_hours for o in options):
        # time and GPU-hours decide a run with a token count; its memory per GPU is in --json and --explain,
        # and the article's pick is marked on the id, so the table still fits 80 columns
        columns = [c for c in columns if c[0] not in ("GB/GPU used/usable", "pick")]
        columns[0] = ("GPU", "left", [o.gpu + ("*" if o.branch else "") for o in options])
    columns = [c for c in columns if any(c[2])]  # a column that carries nothing is left out
    order = label(lang, {"speed": "fastest first", "cost": "cheapest first", "gpus": "fewest GPUs first"}[w.objective])
    if w.deadline_days and w.task != "inference" and w.objective == "speed":
        order = label(lang, "within {days} days, fewest GPU-hours first" if options and options[0].meets_deadline
                      else "none within {days} days: fastest first", days=f"{w.deadline_days:g}")
    table = Table(title=label(lang, "Options, {order}", order=order), box=box.SIMPLE_HEAD, padding=(0, 1))
    shown = {header: _header(label(lang, header), cells) for header, _, cells in columns}
    # the strategy folds in what the other columns leave, but never narrower than its header (rich would fold the
    # word itself); where that is too little, memory per GPU leaves the table (it is in the summary, --json, --explain).
    # A column that never wraps is as wide as its widest line, plus a space either side and the divider: 3; the edge 1.
    fixed = sum(max(cell_len(line) for line in [*shown[h].split("\n"), *cells]) for h, _, cells in columns if h != "strategy")
    if "strategy" in shown and fixed + 3 * len(columns) + 1 + cell_len(shown["strategy"]) > out.width:
        columns = [c for c in columns if c[0] != "GB/GPU used/usable"]
    for header, justify, _ in columns:
        wraps = header == "strategy"  # ids and numbers never wrap or get cut; the strategy folds
        table.add_column(shown[header], justify=justify, no_wrap=not wraps, overflow="fold" if wraps else "ellipsis",  # type: ignore[arg-type]
                         min_width=cell_len(shown[header]) if wraps else None)
    for row in zip(*(cells for _, _, cells in columns), strict=True):
        table.add_row(*map(_cell, row))
    out.print(table)
    from ..answer.bandtext import shown as quantity

    energy = [f"{o.gpu} {quantity('energy_kwh', o.energy_kwh, lang)}{say(lang, 'sep')}{quantity('co2_kg', o.co2_kg, lang)}"
              for o in options if o.energy_kwh and o.co2_kg]
    if energy:  # beside the time to train: what the run draws at the data centre and emits on the workload's grid
        head = (f"能耗与 CO₂（数据中心总用电，电网 {w.region}；rec.energy.training）：" if lang == "zh" else
                f"Energy and CO₂ (facility, grid {w.region}; rec.energy.training): ")
        out.print(clean(head + ("；" if lang == "zh" else "; ").join(energy)), markup=False, highlight=False,
                  soft_wrap=False)
    if picked:
        out.print(label(lang, "* the article's pick: its decision tree ({branches}) prefers these GPUs; they are marked, "
                            "not ranked up", branches=", ".join(picked)), markup=False, highlight=False, soft_wrap=False)
    if answer.rejected:
        rejected = Table(title=label(lang, "Rejected"), box=box.SIMPLE_HEAD, padding=(0, 1))
        rejected.add_column("GPU", no_wrap=True)
        rejected.add_column(label(lang, "why"))
        for o in answer.rejected:
            reason = o.deciding_finding
            rejected.add_row(_cell(o.gpu), _cell(f"{reason.text(lang)} [{reason.rule}]" if reason else ""))
        out.print(rejected)
    best = answer.best
    if best is not None and best.bands:
        from ..answer.bandtext import lines as band_lines

        out.print(clean(f"{best.gpu} 的误差范围（来自 gpukb validate 核对的已发表实测运行）：" if lang == "zh" else
                        f"Error bands of {best.gpu}, from the published runs `gpukb validate` measures:"),
                  markup=False, highlight=False, soft_wrap=False)
        for line in band_lines(best, lang):
            out.print(clean(f"  {line}"), markup=False, highlight=False, soft_wrap=False)
    shown = [f for f in answer.findings if f.gpu is None or (best and f.gpu == best.gpu)]
    if shown:
        out.print(f"[bold]{label(lang, 'Findings')}[/]")
        for f in shown:
            out.print(clean(f"  {term(lang, f.severity)}{say(lang, 'colon')}{f.text(lang)} [{f.rule}]"), markup=False,
                      highlight=False)
    if answer.remedies:
        out.print(f"[bold]{label(lang, 'Remedies')}[/]")
        for r in answer.remedies:
            out.print(clean(f"  {r.heading(lang)}{say(lang, 'colon')}{r.effect_text(lang)} [{r.rule}]"), markup=False,
                      highlight=False)
    out.print(label(lang, "Run with --explain for the full trace, --json for everything."), markup=False, highlight=False)


def _split(values: list[str] | None) -> list[str]:
    """Repeated options, each possibly comma-separated: --model a,b --model c -> [a, b, c]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


@app.command()
def sweep(
    model: Annotated[list[str] | None, typer.Option(help="catalog model ids (repeat or comma-separate)")] = None,
    task: Annotated[list[str] | None, typer.Option(help="tasks (repeat or comma-separate)")] = None,
    seq_len: Annotated[list[str] | None, typer.Option(help="sequence lengths (repeat or comma-separate)")] = None,
    gpu: Annotated[list[str] | None, typer.Option(
        "--gpu", help="GPU ids, each asked alone (repeat or comma-separate); default: each ask weighs the whole catalog")] = None,
    file: Annotated[Path | None, typer.Option(
        help="a YAML or JSON list of workloads, or JSON Lines (one a line; a sweep's own output too), answered first")] = None,
    processes: Annotated[int, typer.Option(
        min=1, help="worker processes, each loading the knowledge base once; at most the CPUs this process may use")] = 1,
    output: Annotated[Path | None, typer.Option(help="write the JSON Lines here instead of stdout")] = None,
    root: Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")] = None,
) -> None:
    """Answer a grid of workloads (models x tasks x sequence lengths x GPUs) and/or a file of them
    across processes: one JSON record per line, in input order, with a progress bar on stderr. A
    workload whose ask fails has a record with its `error` and, if it came from --file, `at`: file:line."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..estimate.sweeps import SweepFileError, grid, read_located_workloads
    from ..estimate.sweeps import sweep as run

    workloads: list[dict[str, Any]] = []
    places: list[str] = []  # file:line of each workload from --file
    try:
        if file is not None:
            workloads, places = read_located_workloads(file)
        lengths: list[int] = [int(n) for n in _split(seq_len)]
    except (OSError, ValueError, SweepFileError) as error:
        err.print(f"error: {clean(error)}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    models, tasks = _split(model), _split(task)
    if models or tasks:
        if not (models and tasks):
            err.print("error: a grid needs both --model and --task", markup=False, highlight=False)
            raise typer.Exit(2)
        workloads += grid(models, tasks, lengths, _split(gpu))
    if not workloads:
        err.print("error: nothing to answer: give --model and --task, or --file", markup=False, highlight=False)
        raise typer.Exit(2)
    sink = output.open("w", encoding="utf-8") if output is not None else sys.stdout
    failed, first_failed = 0, ""
    columns = (TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    try:
        with Progress(*columns, console=err, transient=True) as progress:
            bar = progress.add_task("sweep", total=len(workloads))
            for item in run(workloads, processes, root):
                if "error" in item:
                    failed += 1
                    if item["index"] < len(places):
                        item = {**item, "at": places[item["index"]]}  # where the failed workload is
                        first_failed = first_failed or places[item["index"]]
                sink.write(jsontext.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
                sink.flush()  # streamed: a reader sees each record as soon as it is ready
                progress.advance(bar)
    except KBError as error:  # one process: the knowledge base under --root does not load
        _fail_kb(error)
    finally:
        if output is not None:
            sink.close()
    first = f" (the first from the file: {first_failed})" if first_failed else ""
    err.print(f"answered {len(workloads)}, of which {failed} with an error{first}", markup=False, highlight=False)


@app.command("explain")
def explain_entry(
    entry_ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="rule, claim, GPU, model or source ids; `id@version` as a trace cites it is fine")],
    root: Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")] = None,
    lang: Annotated[Language, typer.Option(help="language of the text: en or zh")] = Language.en,
) -> None:
    """Show knowledge-base entries and where they come from, as readable YAML."""
    from ..contrib.entry_text import describe_entry
    from ..core.ids import near_hint, split_versioned

    try:
        kb = load_kb(root)
    except KBError as error:
        _fail_kb(error, lang.value)
    texts, unknown = [], False
    for wanted in entry_ids:
        entry_id, version = split_versioned(wanted)
        if kb.lookup(entry_id) is None and kb.lookup(entry_id.lower()) is not None:
            entry_id = entry_id.lower()  # ids are lowercase slugs: H100-SXM-80GB names h100-sxm-80gb
        text = describe_entry(kb, entry_id, lang.value)
        if text is None:
            unknown = True
            catalog = ("gpus", "models", "rules", "claims")  # what people look up most, suggested first
            entries = sorted(kb.entries(), key=lambda e: catalog.index(e[0].name) if e[0].name in catalog else 9)
            hint = near_hint(entry_id, (entry_id for _, entry_id, _ in entries))
            unknown_id = message("error", detail=message("unknown_entry", entry=entry_id, hint=hint))
            err.print(clean(unknown_id.text(lang.value)), markup=False, highlight=False)
            continue
        found = kb.lookup(entry_id)
        if version is not None and found is not None and found[1].version != version:
            text += message("other_version", asked=version, has=found[1].version).text(lang.value)
        texts.append(text)
    if texts:
        out.print(clean("\n---\n".join(texts)), markup=False, highlight=False)
    if unknown:
        raise typer.Exit(2)


class Catalog(StrEnum):
    gpus = "gpus"
    models = "models"


@app.command("list")
def list_catalog(
    what: Annotated[Catalog, typer.Argument(help="gpus or models")],
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the rows as JSON (bytes, bytes/s, FLOP/s, US dollars; null where unknown)")] = False,
    root: Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")] = None,
) -> None:
    """The catalog's ids, to give to --gpu and --model, with their figures.

    GPUs: memory, bandwidth, dense BF16 TFLOPS, the lowest dated cloud price per GPU-hour and the
    purchase price. Models: parameters, layers, longest context and the Hugging Face repository (which
    --model also accepts). `gpukb explain ID` shows one entry whole."""
    from .listing import gpu_rows, model_rows

    try:
        kb = load_kb(root)
    except KBError as error:
        _fail_kb(error)
    rows = gpu_rows(kb) if what is Catalog.gpus else model_rows(kb)
    if as_json:
        sys.stdout.write(jsontext.dumps(rows, ensure_ascii=False, indent=2) + "\n")
        return
    if what is Catalog.gpus:
        columns = {"id": "left", "name": "left", "memory": "right", "bandwidth": "right", "BF16 TFLOPS": "right",
                   "$/GPU-h": "right", "price": "right"}
        cells = [(r["id"], r["name"], gb(r["memory_bytes"]), fmt_bandwidth(r["memory_bandwidth"]),
                  f"{r['bf16_flops'] / 1e12:,.0f}" if r["bf16_flops"] else "—",
                  f"{r['usd_per_gpu_hour']:,.2f}" if r["usd_per_gpu_hour"] else "—",
                  f"${r['price_usd']:,.0f}" if r["price_usd"] else "—") for r in rows]
        title = "GPUs (--gpu ID; GB = 1e9 bytes; BF16 dense; $/GPU-h: lowest dated cloud on-demand price)"
    else:
        columns = {"id": "left", "name": "left", "params": "right", "layers": "right", "context": "right",
                   "Hugging Face repository": "left"}
        cells = [(r["id"], r["name"], _billions(r["params"], r["active_params"]), str(r["layers"]),
                  f"{r['context_length']:,}", r["hf_repo"] or "—") for r in rows]
        title = "Models (--model ID or its Hugging Face repository; params in billions, active of total for MoE)"
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    for header, justify in columns.items():
        table.add_column(header, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in cells:
        table.add_row(*map(_cell, row))
    # at its full width, wider than the terminal if need be: ids, names and repositories are copied, never cut
    natural = Measurement.get(out, out.options.update_width(1_000), table).maximum
    out.print(title, markup=False, highlight=False)
    Console(soft_wrap=True, width=max(out.width, natural)).print(table)


def _billions(params: int, active: int | None) -> str:
    total = f"{params / 1e9:,.1f}B"
    return f"{active / 1e9:,.1f}B of {total}" if active else total


@app.command()
def lint(
    root: Annotated[Path, typer.Argument(help="checkout holding kb/ and rules/")] = Path("."),
    fmt: Annotated[Format, typer.Option("--format", help="text, github (Actions annotations) or json")] = Format.text,
    base: Annotated[str | None, typer.Option(
        help="git revision to compare with: entry versions, the KB version and CHANGELOG.md must follow the changes",
    )] = None,
    strict: Annotated[bool, typer.Option(help="warnings (codes W...) fail too")] = False,
) -> None:
    """Validate kb/ and rules/ (schema, references, expression safety, dead rules, cycles, sources,
    deprecations), run every rule's tests and, with --base, check the version rules."""
    from ..contrib.lint import lint as run_lint

    result = run_lint(root, base)
    sys.stdout.write(REPORTERS[fmt].report(result.problems, result.notes))
    if result.failed(strict):
        raise typer.Exit(1)


@app.command()
def impact(
    base: Annotated[str, typer.Option(help="git revision to compare with, e.g. origin/main or the PR's base commit")],
    scenarios: Annotated[Path | None, typer.Option(
        help="YAML list of {id, title, workload}; default site/scenarios.yaml, else scenarios.yaml")] = None,
    root: Annotated[Path, typer.Option(help="checkout holding kb/ and rules/")] = Path("."),
    output: Annotated[Path | None, typer.Option(help="also write the Markdown report to this file")] = None,
) -> None:
    """Markdown report for a pull request: how the answers to canonical scenarios change between
    the base revision's KB and the working tree's (best option, GPU counts, fits, findings,
    remedies, and the rules responsible)."""
    from ..contrib.impact import ImpactError, impact_report

    try:
        text = impact_report(root, base, scenarios)
    except KBError as error:
        _fail_kb(error)
    except ImpactError as error:
        err.print(f"error: {clean(error)}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    text = clean(text)
    if output is not None:
        output.write_text(text, encoding="utf-8")
    sys.stdout.write(text)


class ValidateFormat(StrEnum):
    text = "text"
    json = "json"


@app.command()
def validate(
    fmt: Annotated[ValidateFormat, typer.Option("--format", help="text (a table) or json")] = ValidateFormat.text,
    root: Annotated[Path | None, typer.Option(help="checkout holding kb/ and rules/ (default: the packaged KB)")] = None,
    base: Annotated[str | None, typer.Option(
        help="git revision to compare with: fail if the median error grows by more than the allowed step")] = None,
) -> None:
    """Predict every published measurement in kb/measurements/ and compare: measured, predicted, ratio,
    and the rules behind each number; median error and share within ±25%, overall and per quantity; the
    error bands and their leave-one-source-out coverage. A run's energy and CO₂ (derived from its GPU-hours,
    already a point) are gated on their own, each within ±25%, outside the overall median.
    Exits 1 when the accuracy thresholds in kb/policies/ are missed (or, with --base, when the change
    makes the median error worse than the base revision's by more than the allowed step)."""
    from ..estimate import validation as v

    try:
        kb = load_kb(root)
        result = v.validate(kb)
        regression = v.against_base(kb, result, base) if base else None
    except KBError as error:
        _fail_kb(error)
    except (BaseRevisionError, WorkloadError) as error:
        err.print(f"error: {clean(error)}", markup=False, highlight=False)
        raise typer.Exit(2) from None
    if fmt is ValidateFormat.json:
        data = result.to_json()
        if regression is not None:
            data["base"] = regression.to_json()
        sys.stdout.write(jsontext.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(clean(v.render_text(result, regression)))
    if not result.passed or (regression is not None and regression.failed):
        raise typer.Exit(1)


@app.command()
def probe(
    task: Annotated[Task, typer.Option(help="pretrain, full_finetune, lora or inference")],
    model: Annotated[str | None, typer.Option(help="catalog id or config.json path (its architecture is built with "
                                                   "random weights; nothing is downloaded)")] = None,
    seq_len: Annotated[int | None, typer.Option()] = None,
    micro_batch_size: Annotated[int | None, typer.Option()] = None,
    batch_size: Annotated[int | None, typer.Option(help="inference concurrency")] = None,
    prompt_len: Annotated[int | None, typer.Option()] = None,
    output_len: Annotated[int | None, typer.Option()] = None,
    lora_rank: Annotated[int | None, typer.Option()] = None,
    optimizer: Annotated[Optim | None, typer.Option()] = None,
    activation_checkpointing: Annotated[bool | None, typer.Option(
        "--activation-checkpointing/--no-activation-checkpointing")] = None,
    master_weights: Annotated[bool | None, typer.Option("--master-weights/--no-master-weights")] = None,
    framework: Annotated[str | None, typer.Option(help="hf (the stack the probe runs; the only one it can)")] = None,
    device: Annotated[str, typer.Option(help="auto (CUDA if present), cuda or cpu")] = "auto",
    tiny: Annotated[bool, typer.Option("--tiny", help="a 2-layer, 64-wide model of a few tokens: for CPUs and tests")] = False,
    layers: Annotated[int | None, typer.Option(help="run this many layers of the model (a plan too big for one GPU)")] = None,
    steps: Annotated[int, typer.Option(min=1, max=100, help="timed steps after a warm-up")] = 3,
    force: Annotated[bool, typer.Option("--force", help=(
        "run even where gpukb predicts the plan does not fit one GPU, to test that prediction "
        "(running out of memory is then the measured answer, exit 3)"))] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help=(
        "write kb/measurements/ and kb/sources/ entries under this folder (a checkout, for a pull request)"))] = None,
    lang: Annotated[Language, typer.Option(help="language of the text: en or zh")] = Language.en,
    root: Annotated[Path | None, typer.Option(help="a checkout holding kb/ and rules/")] = None,
) -> None:
    """Run the workload's one-GPU plan on the local device for a few steps (extra 'probe': PyTorch) and print
    predicted against measured peak memory (allocated, reserved) and tokens/s. Exit 3 when the run would not
    fit, 2 on bad input or without PyTorch."""
    from ..probe import probe as pr

    given = {"task": task.value, "model": model, "seq_len": seq_len, "micro_batch_size": micro_batch_size,
             "batch_size": batch_size, "prompt_len": prompt_len, "output_len": output_len, "lora_rank": lora_rank,
             "optimizer": optimizer.value if optimizer else None, "activation_checkpointing": activation_checkpointing,
             "master_weights": master_weights, "framework": framework}
    given = {k: v for k, v in given.items() if v is not None}
    try:
        result = pr.run(load_kb(root), given, device=device, tiny=tiny, layers=layers, steps=steps,
                        force=force, command=pr.command_line(given, {"device": device, "tiny": tiny, "layers": layers,
                                                                     "steps": steps, "force": force}))
    except KBError as error:
        _fail_kb(error, lang.value)
    except pr.ProbeError as error:
        _fail(error, error.code, lang.value)
    except ASK_ERRORS as error:
        _fail(error, 2, lang.value)
    out.print(clean(pr.report(result, lang.value)), markup=False, highlight=False)
    if out_dir is not None:
        for path in pr.write(result, out_dir):
            out.print(f"wrote {path}", markup=False, highlight=False)


@app.command()
def schema(
    root: Annotated[Path, typer.Argument(help="checkout whose kb/schema/ to write or check")] = Path("."),
    check: Annotated[bool, typer.Option(help="fail if kb/schema/ is out of date instead of writing")] = False,
) -> None:
    """Write the JSON Schemas generated from the models to kb/schema/."""
    from ..knowledge.loader import json_schemas

    if not (root / "kb" / "manifest.yaml").is_file():  # never create kb/schema/ where there is no knowledge base
        err.print(clean(f"error: no knowledge base at {root} (kb/manifest.yaml is missing): run in a checkout or name one"),
                  markup=False, highlight=False)
        raise typer.Exit(2)
    folder = root / "kb" / "schema"
    stale = []
    for name, document in json_schemas().items():
        text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        path = folder / f"{name}.schema.json"
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        for path in stale:
            err.print(f"{path}: out of date; run `gpukb schema`", markup=False)
        raise typer.Exit(1)


if __name__ == "__main__":  # pragma: no cover
    app()
