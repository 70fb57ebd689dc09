"""The answer as `gpukb ask` prints it: a header, the summary, the memory table, the options table (ranked as
the summary says), energy, rejected GPUs, error bands, findings and remedies, all within the terminal's width;
and `--launch`'s command line."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from ..answer.summary import per_million_tokens, ranked_by
from ..core.fmt import Lang, duration, gb
from ..core.terminal import clean
from ..core.words import label, say, term
from .common import cell, out, page, wrap


def _late(seconds: float, deadline_days: float, lang: Lang) -> str:
    """A late option's time, with the digits that show it is past the deadline (30.04 days, not 30.0)."""
    days = seconds / 86400
    if round(days, 1) > deadline_days:
        return duration(seconds, lang)
    places = next((n for n in range(2, 6) if round(days, n) > deadline_days), 6)
    return f"{days:,.{places}f} 天" if lang == "zh" else f"{days:,.{places}f} days"


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


def print_answer(answer: Any, lang: Lang, kb: Any = None) -> None:
    """The answer as tables that fit 80 columns: ids are never cut, empty columns are left out."""
    from .assumed import lines as assumed

    w, m = answer.workload, answer.memory
    out.print(Text(clean(w.model), style="bold") + Text(clean(
        f" · {term(lang, w.task)} · {w.precision}" + (f" · {w.optimizer}" if w.optimizer else "")
        + f" · {label(lang, 'seq')} {w.seq_len}" + (f" · {label(lang, 'grid')} {w.region}" if w.region else "")
        + f"   (kb {answer.kb_version})")))
    page("\n".join(assumed(answer, kb, lang)))  # what the numbers below rest on, before any of them
    if answer.summary is not None:  # the decision first, then the figures behind it
        head, *rest = answer.summary.lines(lang, shown=8)
        for part in wrap(clean(head), out.width):
            out.print(Text(part, style="bold"), soft_wrap=True)
        page("\n".join(f"  {line}" for line in rest))
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
    ranking = ranked_by(w, options[0] if options else None)  # the order the headline names
    # a table titled by a deadline holds the options that meet it; the others are listed apart, with their days
    late = [o for o in options if o.meets_deadline is False] if ranking == "deadline" else []
    options = [o for o in options if o.meets_deadline is not False] if late else options
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
    if any(o.load for o in options):  # under load: the percentiles at the rate and the rate the replicas carry
        columns[2:] = [  # the replicas are the GPU count over the replica's; --explain gives the layout
            ("TTFT ms P50/P99", "right", [_pair(o.load.ttft_p50_s, o.load.ttft_p99_s) if o.load else "" for o in options]),
            ("TPOT ms P50/P99", "right", [_pair(o.load.tpot_p50_s, o.load.tpot_p99_s) if o.load else "" for o in options]),
            ("max req/s", "right", [f"{o.load.max_rate:,.1f}" if o.load else "" for o in options]),
            ("util", "right", [f"{o.load.utilisation:.0%}" if o.load else "" for o in options]),
            ("$/Mtok", "right", [f"{o.usd_per_million_tokens:,.2f}" if o.usd_per_million_tokens else "" for o in options]),
        ]
    elif w.objective == "cost":  # the cost columns replace memory and strategy; the article's pick is marked on the id
        columns[0] = ("GPU", "left", [o.gpu + ("*" if o.branch else "") for o in options])
        keep = ("GPU", "GPUs", "tokens/s", "time to train", "GPU-h", "TTFT ms", "ms/tok")
        columns = [c for c in columns if c[0] in keep]
        columns[2:2] = [  # $/Mtok is what the cheapest-first order sorts by (summary.per_million_tokens)
            ("$/h", "right", [f"{o.usd_per_hour:,.2f}" if o.usd_per_hour else "—" for o in options]),
            ("$/Mtok", "right", [f"{m:,.2f}" if (m := per_million_tokens(o)) is not None else "" for o in options]),
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
    days = f"{w.deadline_days:g}" if w.deadline_days else ""
    order = label(lang, {"speed": "fastest first", "per_gpu": "most tokens/s per GPU first",
                         "cost": "cheapest first", "gpus": "fewest GPUs first",
                         "latency": "fewest GPUs that meet the latency targets first",
                         "load": "fewest GPUs that carry the request rate first",
                         "deadline": "within {days} days, fewest GPU-hours first"}[ranking], days=days)
    if (ranking == "speed" and w.deadline_days and w.task != "inference"
            and not any(o.meets_deadline for o in options)):  # a pinned cluster (placement all) may meet it
        order = label(lang, "none within {days} days: fastest first", days=days)
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
        table.add_row(*map(cell, row))
    out.print(table)
    if late:
        page(label(lang, "Not within {days} days: ", days=days) + ("；" if lang == "zh" else "; ").join(
            f"{o.count} x {o.gpu} {_late(o.time_to_train_s or 0, w.deadline_days, lang)}" for o in late))
    from ..answer.bandtext import shown as quantity

    energy = [f"{o.gpu} {quantity('energy_kwh', o.energy_kwh, lang)}{say(lang, 'sep')}{quantity('co2_kg', o.co2_kg, lang)}"
              for o in options if o.energy_kwh and o.co2_kg]
    if energy:  # beside the time to train: what the run draws at the data centre and emits on the workload's grid
        scope = ({"gpu": "只计 GPU", "node": "整台服务器", "facility": "数据中心总用电"} if lang == "zh" else
                 {"gpu": "GPUs only", "node": "whole servers", "facility": "facility"})[w.energy_scope]  # as the header
        head = (f"能耗与 CO₂（{scope}，电网 {w.region}；rec.energy.training）：" if lang == "zh" else
                f"Energy and CO₂ ({scope}, grid {w.region}; rec.energy.training): ")
        page(head + ("；" if lang == "zh" else "; ").join(energy))
    if picked:
        page(label(lang, "* the article's pick: its decision tree ({branches}) prefers these GPUs; they are marked, "
                         "not ranked up", branches=", ".join(picked)))
    if answer.rejected:
        rejected = Table(title=label(lang, "Rejected"), box=box.SIMPLE_HEAD, padding=(0, 1))
        rejected.add_column("GPU", no_wrap=True)
        rejected.add_column(label(lang, "why"))
        for o in answer.rejected:
            reason = o.deciding_finding
            rejected.add_row(cell(o.gpu), cell(f"{reason.text(lang)} [{reason.rule}]" if reason else ""))
        out.print(rejected)
    best = answer.best
    if best is not None and best.bands:
        from ..answer.bandtext import lines as band_lines

        page(f"{best.gpu} 的误差范围（来自 gpukb validate 核对的已发表实测运行）：" if lang == "zh" else
             f"Error bands of {best.gpu}, from the published runs `gpukb validate` measures:")
        page("\n".join(f"  {line}" for line in band_lines(best, lang)))
    shown = [f for f in answer.findings if f.gpu is None or (best and f.gpu == best.gpu)]
    if shown:
        out.print(f"[bold]{label(lang, 'Findings')}[/]")
        page("\n".join(f"  {term(lang, f.severity)}{say(lang, 'colon')}{f.text(lang)} [{f.rule}]" for f in shown))
    if answer.remedies:
        out.print(f"[bold]{label(lang, 'Remedies')}[/]")
        page("\n".join(f"  {r.heading(lang)}{say(lang, 'colon')}{r.effect_text(lang)} [{r.rule}]"
                        for r in answer.remedies))
    page(label(lang, "Run with --explain for the full trace, --json for everything."))


def _pair(p50: float, p99: float) -> str:
    """Two latencies in ms, 'P50/P99'."""
    return f"{p50 * 1000:,.0f}/{p99 * 1000:,.0f}" if p50 >= 0.1 else f"{p50 * 1000:,.1f}/{p99 * 1000:,.1f}"
