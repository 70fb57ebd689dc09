"""`gpukb list gpus|models|systems`: the catalog's ids, to give to --gpu, --model and --system, with their figures."""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated

import typer
from rich import box
from rich.measure import Measurement
from rich.table import Table

from .. import load_kb
from ..core import jsontext
from ..core.errors import KBError
from ..core.fmt import bandwidth as fmt_bandwidth
from ..core.fmt import gb
from ..core.words import label
from .common import LangOption, Language, RootOption, cell, fail_kb, out, page


class Catalog(StrEnum):
    gpus = "gpus"
    models = "models"
    systems = "systems"


def list_catalog(
    what: Annotated[Catalog, typer.Argument(help="gpus, models or systems")],
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the rows as JSON (bytes, bytes/s, FLOP/s, US dollars; null where unknown)")] = False,
    lang: LangOption = Language.en,
    root: RootOption = None,
) -> None:
    """The catalog's ids, to give to --gpu, --model and --system, with their figures.

    GPUs: memory, bandwidth, dense BF16 TFLOPS, the lowest dated cloud price per GPU-hour and the
    purchase price. Models: parameters, layers, longest context and the Hugging Face repository (which
    --model also accepts). Systems: the GPU and GPUs a node, the network between nodes, host memory and the
    lowest dated price per node-hour. `gpukb explain ID` shows one entry whole."""
    from .listing import gpu_rows, model_rows, system_rows

    try:
        kb = load_kb(root)
    except KBError as error:
        fail_kb(error, lang.value)
    rows = {Catalog.gpus: gpu_rows, Catalog.models: model_rows, Catalog.systems: system_rows}[what](kb)
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
    elif what is Catalog.systems:
        columns = {"id": "left", "gpu": "left", "GPUs": "right", "P2P": "left", "network": "right", "host memory": "right",
                   "$/node-h": "right"}
        cells = [(r["id"], r["gpu"], str(r["gpus_per_node"]),
                  "—" if r["peer_to_peer"] is None else label(lang.value, "yes" if r["peer_to_peer"] else "no"),
                  f"{r['network_bandwidth'] * 8 / 1e9:,.0f} Gb/s" if r["network_bandwidth"] else label(lang.value, "none"),
                  gb(r["host_memory_bytes"]), f"{r['usd_per_node_hour']:,.2f}" if r["usd_per_node_hour"] else "—")
                 for r in rows]
        title = "Systems (--system ID; network: per node between nodes; $/node-h: lowest price)"
    else:
        columns = {"id": "left", "name": "left", "params": "right", "layers": "right", "context": "right",
                   "Hugging Face repository": "left"}
        cells = [(r["id"], r["name"], _billions(r["params"], r["active_params"], lang.value), str(r["layers"]),
                  f"{r['context_length']:,}", r["hf_repo"] or "—") for r in rows]
        title = "Models (--model ID or its Hugging Face repository; params in billions, active of total for MoE)"
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1))
    for header, justify in columns.items():
        table.add_column(label(lang.value, header), justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in cells:
        table.add_row(*map(cell, row))
    page(label(lang.value, title))
    if Measurement.get(out, out.options.update_width(1_000), table).maximum <= out.width:
        out.print(table)
        return
    # narrower than the table: each entry as its id (copied whole, never cut), then its figures, wrapped
    headers = [label(lang.value, h) for h in list(columns)[1:]]
    colon = "：" if lang.value == "zh" else ": "
    page("\n".join(f"{row[0]}\n  " + " · ".join(f"{h}{colon}{v}" for h, v in zip(headers, row[1:], strict=True))
                    for row in cells))


def _billions(params: int, active: int | None, lang: str = "en") -> str:
    total = f"{params / 1e9:,.1f}B"
    if not active:
        return total
    return f"{active / 1e9:,.1f}B（共 {total}）" if lang == "zh" else f"{active / 1e9:,.1f}B of {total}"
