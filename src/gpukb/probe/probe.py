"""`gpukb probe`: run a workload's plan on the local device and compare it with the prediction.

The plan is the one gpukb makes for one GPU of the local type (a workload needing more is shrunk with
`layers`, or refused); the run uses random weights in a self-contained PyTorch module of the resolved
architecture (gpukb.probe.model), so nothing is downloaded. The result is printed as predicted against
measured, and written as kb/measurements/ and kb/sources/ entries for a pull request. PyTorch is the
optional extra `probe`; this module imports it only when a run starts.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..answer.workload import TRAINING_TASKS, parse_workload
from ..core import safepath, safewrite
from ..core.fmt import Lang
from ..core.messages import message

if TYPE_CHECKING:
    from ..answer.answer import Answer
    from ..knowledge.kb import KnowledgeBase
    from ..knowledge.schema import Gpu
    from .model import Measured

# A run's own shape for --tiny (tests, CPUs): small enough to train in a second on a laptop's CPU
TINY = {"layers": 2, "hidden_size": 64, "heads": 4, "kv_heads": 2, "intermediate_size": 128, "vocab_size": 512}
TINY_TOKENS = {"seq_len": 32, "micro_batch_size": 2, "batch_size": 2, "prompt_len": 16, "output_len": 8}  # at most
# a shrunk run is a custom model, which gpukb takes as untied (gpukb.estimate.resolve); so is its module
SHAPE_FIELDS = ("layers", "hidden_size", "heads", "kv_heads", "intermediate_size", "vocab_size", "mlp")
# layout pins a one-GPU run drops (it runs on one device)
MULTI_GPU = ("gpu_count", "tensor_parallel", "pipeline_parallel", "expert_parallel", "context_parallel",
             "virtual_pipeline_stages", "zero_stage", "offload", "placement", "gpus")
CPU_MEMORY_SHARE = 0.8  # of the machine's RAM a CPU run may take: the rest is the OS's and the test runner's


class ProbeError(Exception):
    """A probe that cannot run; `code` is the exit status (2 bad input or no PyTorch, 3 would not fit). The
    message is gpukb.core.messages' `key` with its values, written in the reader's language by `text`."""

    def __init__(self, key: str, code: int = 2, **values: object) -> None:
        self.message = message(key, **values)
        super().__init__(str(self.message))
        self.code = code

    def text(self, lang: Lang = "en") -> str:
        return self.message.text(lang)


@dataclass
class Result:
    workload: dict[str, Any]
    device: str
    gpu: str  # the kb GPU id of the local device ("" on CPU)
    predicted: dict[str, float | None]
    measured: dict[str, float | None]
    versions: dict[str, str]
    command: str
    date: str = field(default_factory=lambda: dt.date.today().isoformat())


def probe_params(w: dict[str, Any]) -> int:
    """Parameters of the probe's module for these dimensions: no biases, RMSNorm, embeddings tied or not."""
    h, heads, kv, i, v = w["hidden_size"], w["heads"], w["kv_heads"], w["intermediate_size"], w["vocab_size"]
    head_dim = h // heads
    per_layer = 2 * h * heads * head_dim + 2 * h * kv * head_dim + (3 if w.get("mlp", "gated") == "gated" else 2) * h * i
    return (1 if w.get("tied_embeddings") else 2) * v * h + w["layers"] * (per_layer + 2 * h) + h


def local_gpu(kb: KnowledgeBase, name: str, total_bytes: int) -> str:
    """The kb GPU id of a device CUDA names (e.g. 'NVIDIA H200'): its model token in the id, memory closest."""
    # the model number: the first word with a digit ("h200", "4090", "a100" of "A100-SXM4-80GB")
    model = next((t for t in re.split(r"[^a-z0-9]+", name.lower()) if re.search(r"[0-9]", t)), "")
    if not model:
        return ""
    matches = [g for gid, g in kb.gpus.items() if model in re.split(r"-", gid) and g.status != "deprecated"]
    if not matches:
        return ""
    # the same chip with the same memory comes as SXM and PCIe cards: CUDA names the PCIe and NVL ones
    # ("NVIDIA H100 PCIe", "NVIDIA A100-PCIE-40GB") and not the SXM ones ("NVIDIA H100 80GB HBM3")
    words = set(re.split(r"[^a-z0-9]+", name.lower()))

    def mismatch(g: Gpu) -> int:
        return int(("pcie" in words or "nvl" in words) != (g.form_factor == "pcie")) + int(("nvl" in words) != ("nvl" in g.id))
    return min(matches, key=lambda g: (mismatch(g), abs(g.memory_bytes - total_bytes))).id


def plan(kb: KnowledgeBase, given: dict[str, Any], gpu: str, tiny: bool, layers: int | None) -> dict[str, Any]:
    """The workload the probe runs and predicts: one GPU, framework hf, the shape shrunk if asked."""
    w = {k: v for k, v in given.items() if k not in MULTI_GPU and v is not None}
    framework = w.setdefault("framework", "hf")
    if framework != "hf":
        raise ProbeError("probe_framework", framework=framework)
    if w.get("task") == "qlora":
        raise ProbeError("probe_qlora")
    if w.get("optimizer") in ("adamw_8bit", "adafactor"):
        raise ProbeError("probe_optimizer", optimizer=w["optimizer"])
    if tiny or layers:
        resolved, _ = _resolve(kb, w)
        shape = {name: getattr(resolved, name) for name in SHAPE_FIELDS}
        if tiny:
            shape.update(TINY)
            if w["task"] in TRAINING_TASKS:
                w["seq_len"] = min(w.get("seq_len", TINY_TOKENS["seq_len"]), TINY_TOKENS["seq_len"])
                w["micro_batch_size"] = min(w.get("micro_batch_size", 1), TINY_TOKENS["micro_batch_size"])
            else:  # the context is the prompt plus the output
                w.pop("seq_len", None)
                for name in ("prompt_len", "output_len"):
                    w[name] = min(w.get(name, TINY_TOKENS[name]), TINY_TOKENS[name])
                w["batch_size"] = min(w.get("batch_size", 1), TINY_TOKENS["batch_size"])
        if layers:
            shape["layers"] = layers
        w.pop("model", None)
        w.update(shape, params=probe_params(shape))
    if gpu:
        w.update(gpus=[gpu], gpu_count=1)
    parse_workload(w)  # a clear error, naming the field, before anything runs
    return w


def _resolve(kb: KnowledgeBase, w: dict[str, Any]) -> Any:
    from ..estimate.resolve import resolve

    return resolve(kb, parse_workload(w))


def predict(kb: KnowledgeBase, w: dict[str, Any], on_gpu: bool,
            force: bool = False) -> tuple[Answer, dict[str, float | None]]:
    """gpukb's figures for the run; on a GPU, refuse (ProbeError code 3) a plan that does not fit one
    GPU without offload, which the probe cannot run, unless forced (to test that very prediction)."""
    answer = kb.ask(w)
    option = answer.options[0] if answer.options else None
    if option is not None and (option.count > 1 or option.strategy.offload != "none"):
        option = None  # not the one-GPU plan the probe runs: no speed to compare with
    if on_gpu and not force:
        if option is None:
            why = "; ".join(f.message for o in answer.rejected for f in o.findings)[:400]
            raise ProbeError("probe_no_fit", code=3, gpu=w["gpus"][0], why=why or "no plan fits")
        if option.count > 1 or option.strategy.offload != "none":
            raise ProbeError("probe_needs_more", code=3, gpu=w["gpus"][0], count=option.count,
                             offload=option.strategy.offload)
    m = answer.memory
    predicted: dict[str, float | None] = {
        "peak_allocated": float(m.total - m.overhead), "peak_device": float(m.total),
        "train_tokens_per_s": None, "prefill_tokens_per_s": None, "decode_tokens_per_s": None,
    }
    if option is not None and on_gpu:  # no option: only the memory of one replica is predicted
        if w["task"] in TRAINING_TASKS:
            predicted["train_tokens_per_s"] = option.tokens_per_s / option.count if option.tokens_per_s else None
        else:
            rw = answer.workload
            prompt = rw.prompt_len or rw.seq_len
            predicted["prefill_tokens_per_s"] = rw.batch_size * prompt / option.ttft_s if option.ttft_s else None
            predicted["decode_tokens_per_s"] = rw.batch_size / option.tpot_s if option.tpot_s else None
    return answer, predicted


def _versions(torch: Any, device: Any) -> dict[str, str]:
    from .. import __version__

    versions = {"gpukb": __version__, "torch": torch.__version__, "python": platform.python_version(),
                # the caching allocator's settings change what it reserves (expandable_segments)
                "PYTORCH_CUDA_ALLOC_CONF": os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or "unset"}
    if device.type == "cuda":
        versions["cuda"] = str(torch.version.cuda)
        smi = shutil.which("nvidia-smi")
        if smi:
            run = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=30, check=False)
            versions["driver"] = run.stdout.strip().splitlines()[0] if run.returncode == 0 and run.stdout.strip() else ""
    return versions


def run(kb: KnowledgeBase, given: dict[str, Any], *, device: str = "auto", tiny: bool = False,
        layers: int | None = None, steps: int = 3, command: str = "gpukb probe", force: bool = False) -> Result:
    """Plan, predict, run and measure. Raises ProbeError (with its exit code) when it cannot run, or
    (forced past a predicted misfit) when the device runs out of memory."""
    try:
        import torch
    except ImportError:
        raise ProbeError("probe_no_torch") from None
    from . import model as pm

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ProbeError("probe_no_cuda")
    dev = torch.device(device)
    gpu = ""
    if dev.type == "cuda":
        props = torch.cuda.get_device_properties(dev)
        gpu = local_gpu(kb, props.name, props.total_memory)
        if not gpu:
            raise ProbeError("probe_unknown_gpu", name=props.name)
    w = plan(kb, given, gpu, tiny, layers)
    answer, predicted = predict(kb, w, on_gpu=dev.type == "cuda", force=force)
    if dev.type == "cpu":
        ram = _ram_bytes()
        if ram and predicted["peak_allocated"] and predicted["peak_allocated"] > CPU_MEMORY_SHARE * ram:
            raise ProbeError("probe_cpu_ram", code=3, need=predicted["peak_allocated"] / 1e9, share=CPU_MEMORY_SHARE,
                             ram=ram / 1e9)
    rw = answer.workload
    measured: Measured
    try:
        measured = _measure(pm, rw, answer, dev, steps)
    except torch.cuda.OutOfMemoryError:
        peak = torch.cuda.max_memory_allocated(dev) / 1e9 if dev.type == "cuda" else 0.0
        raise ProbeError("probe_oom", code=3, where=gpu or dev.type, peak=peak,
                         predicted=predicted["peak_allocated"] / 1e9) from None
    return Result(w, dev.type, gpu, predicted, measured.__dict__, _versions(torch, dev), command)


def _measure(pm: Any, rw: Any, answer: Answer, dev: Any, steps: int) -> Measured:
    if rw.task in TRAINING_TASKS:
        return pm.train(pm.Shape.of(rw), dev, task=rw.task, seq=rw.seq_len, micro_batch=rw.micro_batch_size,
                        checkpointing=_checkpointing(answer), lora_rank=rw.lora_rank or 16,
                        optimizer=rw.optimizer or "adamw", master_weights=rw.master_weights, steps=steps)
    prompt = rw.prompt_len or max(1, rw.seq_len - (rw.output_len or 0))
    return pm.serve(pm.Shape.of(rw), dev, batch=rw.batch_size, prompt=prompt, output=rw.output_len or 1, steps=steps)


def _checkpointing(answer: Answer) -> bool:
    if answer.options:
        return answer.options[0].strategy.activation_checkpointing
    return answer.workload.activation_checkpointing is True


def _ram_bytes() -> int:
    try:
        import os

        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


ROWS = (("peak_allocated", "peak memory, allocated (GB)", 1e-9), ("peak_reserved", "peak memory, reserved (GB)", 1e-9),
        ("train_tokens_per_s", "training tokens/s", 1.0), ("prefill_tokens_per_s", "prefill tokens/s", 1.0),
        ("decode_tokens_per_s", "decode tokens/s", 1.0))


# the report's words in Chinese (the glossary's terms); English is the key
REPORT_ZH = {"figure": "指标", "predicted": "预测", "measured": "实测", "ratio": "比值", "unavailable": "无法测量",
             "peak memory, allocated (GB)": "峰值显存，已分配（GB）", "peak memory, reserved (GB)": "峰值显存，已预留（GB）",
             "training tokens/s": "训练 tokens/s", "prefill tokens/s": "预填充 tokens/s", "decode tokens/s": "解码 tokens/s"}


def report(r: Result, lang: Lang = "en") -> str:
    """Predicted against measured, one line per figure; what a device cannot measure says so."""
    def w(text: str) -> str:
        return REPORT_ZH.get(text, text) if lang == "zh" else text

    where = f"{r.device}{f' ({r.gpu})' if r.gpu else ''}"
    lines = [f"在 {where} 上探测：{r.command}" if lang == "zh" else f"probe on {where}: {r.command}",
             f"{w('figure'):32s} {w('predicted'):>14s} {w('measured'):>14s} {w('ratio'):>7s}"]
    for key, label, scale in ROWS:
        label = w(label)
        measured = r.measured.get(key)
        # reserved memory is compared with the plan's device figure (allocator peak plus the runtime overhead)
        predicted = r.predicted.get("peak_device" if key == "peak_reserved" else key)
        if measured is None and predicted is None:
            continue
        shown_m = w("unavailable") if measured is None else f"{measured * scale:,.3f}" if scale != 1 else f"{measured:,.1f}"
        shown_p = "—" if predicted is None else f"{predicted * scale:,.3f}" if scale != 1 else f"{predicted:,.1f}"
        ratio = f"{predicted / measured:.2f}" if predicted and measured else ""
        lines.append(f"{label:32s} {shown_p:>14s} {shown_m:>14s} {ratio:>7s}")
    if r.device == "cpu":
        lines.append("显存：CPU 上无法测量（PyTorch 缓存分配器的计数只针对 CUDA）" if lang == "zh" else
                     "memory: unavailable on CPU (PyTorch's caching-allocator counters are CUDA's)")
    return "\n".join(lines) + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:90]


# each measured quantity's end of the entry id (ids are at most 80 characters)
SUFFIX = {"peak_memory_per_gpu": "mem", "training_tokens_per_s_per_gpu": "tps", "ttft_s": "ttft",
          "decode_tokens_per_s": "decode", "decode_tokens_per_s_total": "decode"}


def _tag(w: dict[str, Any]) -> str:
    """The run's shape in the id, so that one day's probes of one model are distinct entries."""
    task = {"full_finetune": "ft", "pretrain": "pt", "inference": "inf"}.get(w["task"], w["task"])
    if w["task"] in TRAINING_TASKS:
        ckpt = {True: "-ckpt", False: "-nockpt"}.get(w.get("activation_checkpointing"), "")
        return f"{task}-s{w.get('seq_len', '')}-mb{w.get('micro_batch_size', 1)}{ckpt}"
    return f"{task}-b{w.get('batch_size', 1)}-p{w.get('prompt_len', w.get('seq_len', ''))}-o{w.get('output_len', '')}"


def _precision(device: str, task: str) -> str:
    if device == "cpu":
        return "fp32 throughout (no autocast on CPU)"
    if task == "lora":
        return "a bf16 frozen base with fp32 adapters under bf16 autocast"
    return "bf16 autocast over fp32 weights" if task in TRAINING_TASKS else "bf16 weights"


def entries(r: Result, run: int = 1) -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    """(base id, measurement entries, source entry) for kb/measurements/ and kb/sources/; the `run`th of
    the day with this id (a run with other settings than the shape shows) ends in -<run>."""
    w = r.workload
    what = w.get("model") or f"custom-{w['params']}"
    tail = f"-{run}" if run > 1 else ""
    # room for the tail and the longest quantity suffix ("-decode") within an id's 80 characters
    base = _slug(f"probe-{r.gpu or r.device}-{what}-{_tag(w)}-{r.date.replace('-', '')}")[:73 - len(tail)].strip("-")
    base += tail
    setup = (f"gpukb probe on {r.gpu or r.device}: random weights in a PyTorch module of the workload's architecture "
             f"that saves what Transformers' Llama layer saves (RMSNorm in fp32, rotary embedding, grouped-query heads "
             f"inside SDPA; no biases), "
             f"{_precision(r.device, w['task'])}, "
             f"Transformers-style fp32 loss; versions: " + ", ".join(f"{k} {v}" for k, v in r.versions.items() if v))
    common = {"version": 1, "workload": {k: w[k] for k in sorted(w)}, "setup": setup,
              "framework": f"gpukb probe (eager PyTorch {r.versions.get('torch', '')}, the hf stack)",
              "source": base, "locator": r.command,
              "unstated": ["random weights and random tokens: kernels' speed does not depend on the values"]}
    out: list[dict[str, Any]] = []

    def add(quantity: str, value: float | None, unit: str, title: str, **extra: Any) -> None:
        if value is None or value <= 0:
            return
        out.append({"id": f"{base}-{SUFFIX[quantity]}", "title": title, "quantity": quantity,
                    "value": float(f"{value:.4g}"), "unit": unit, **extra, **common,
                    "quote": f"{title}: {value:.4g} {unit}"})

    m = r.measured
    if m.get("peak_allocated") is not None:
        add("peak_memory_per_gpu", m["peak_allocated"] / 2**30, "GiB", "Peak allocated memory (torch.cuda."
            "max_memory_allocated)", memory_counter="allocator")
    add("training_tokens_per_s_per_gpu", m.get("train_tokens_per_s"), "tokens/s", "Training tokens/s")
    batch = w.get("batch_size", 1)
    if m.get("prefill_tokens_per_s"):
        prompt = w.get("prompt_len") or w.get("seq_len")
        add("ttft_s", batch * prompt / m["prefill_tokens_per_s"] if prompt else None, "s", "Prefill time")
    add("decode_tokens_per_s" if batch == 1 else "decode_tokens_per_s_total", m.get("decode_tokens_per_s"), "tokens/s",
        "Decode tokens/s")
    source = {"id": base, "version": 1, "title": f"gpukb probe run: {what} {w['task']} on {r.gpu or r.device}",
              "publisher": "gpukb probe (contributor's run)", "kind": "documentation",
              "path": f"kb/measurements/{base}.yaml", "as_of": dt.date.fromisoformat(r.date)}
    return base, out, source


class _NoAliases(yaml.SafeDumper):
    """Every entry written out in full: the knowledge base's loader refuses YAML aliases (anchors)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def check_out(root: Path) -> None:
    """Refuse --out before a run rather than after it: a file, or kb/measurements or kb/sources under it that
    is a link or leads out of it."""
    try:
        if os.path.lexists(root) and not safepath.is_dir(root):
            info = os.lstat(root)
            raise safepath.RefusedPath(f"it is {'a file' if stat.S_ISREG(info.st_mode) else safepath.kind(info.st_mode)}"
                                       ", not a folder: name the checkout the entries go into")
        for folder in _FOLDERS:
            safewrite.check_folder(root / "kb" / folder, within=root)
    except safepath.RefusedPath as refusal:
        raise ProbeError("probe_out", path=str(root), why=str(refusal)) from None


_FOLDERS = {"measurements": "measurement", "sources": "source"}  # folder under kb/: its schema


def write(r: Result, root: Path) -> list[Path]:
    """Write the entries under root/kb/measurements/ and root/kb/sources/; returns the files written. An
    earlier run's entries are never replaced: a name taken gives the run the next id (-2, -3, ...). A link
    or anything but a regular file at a name is a ProbeError naming it."""
    check_out(root)
    for run in range(1, 1000):
        base, measurements, source = entries(r, run)
        try:
            for folder in _FOLDERS:
                safewrite.check_target(root / "kb" / folder, f"{base}.yaml", within=root)
            break
        except safewrite.RefusedWrite as refusal:
            if not refusal.exists:
                raise ProbeError("probe_out", path=str(root / "kb" / folder / f"{base}.yaml"), why=str(refusal)) from None
    else:
        raise ProbeError("probe_out", path=str(root), why=f"999 runs named {base} already")
    written: list[Path] = []
    for (folder, schema), data in zip(_FOLDERS.items(), (measurements, [source]), strict=True):
        text = (f"# yaml-language-server: $schema=../schema/{schema}.schema.json\n"
                + yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True, width=120))
        try:
            written.append(safewrite.write_file(root / "kb" / folder, f"{base}.yaml", text, within=root))
        except safewrite.RefusedWrite as refusal:  # a name taken since the check: leave no half of a run behind
            for path in written:
                path.unlink(missing_ok=True)
            raise ProbeError("probe_out", path=str(root / "kb" / folder / f"{base}.yaml"), why=str(refusal)) from None
    return written


def command_line(given: dict[str, Any], flags: dict[str, Any]) -> str:
    """The command that reproduces the run, as the measurement's locator."""
    args = ["gpukb", "probe"]
    for name, value in [*given.items(), *flags.items()]:
        option = "--" + name.replace("_", "-")
        if value is True:
            args.append(option)
        elif value is False:
            if name in ("activation_checkpointing", "master_weights"):
                args.append("--no-" + option[2:])
        elif value is not None:
            args += [option, str(value)]
    return shlex.join(args)


__all__ = ["ProbeError", "Result", "check_out", "entries", "plan", "predict", "report", "run", "write"]
