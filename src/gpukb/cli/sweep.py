"""`gpukb sweep`: answer a grid or a file of workloads across processes, as JSON Lines."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..answer.workload import read_size
from ..core import jsontext, safepath, safewrite
from ..core.errors import Invalid, KBError
from .common import BAD_INPUT, RootOption, err, fail, fail_kb, page, split


def sweep(
    model: Annotated[list[str] | None, typer.Option(help="catalog model ids (repeat or comma-separate)")] = None,
    task: Annotated[list[str] | None, typer.Option(help="tasks (repeat or comma-separate)")] = None,
    seq_len: Annotated[list[str] | None, typer.Option(help="sequence lengths, e.g. 4k,32Ki (repeat or comma-separate)")] = None,
    gpu: Annotated[list[str] | None, typer.Option(
        "--gpu", help="GPU ids, each asked alone (repeat or comma-separate); default: each ask weighs the whole catalog")] = None,
    file: Annotated[Path | None, typer.Option(
        help="a YAML or JSON list of workloads, or JSON Lines (one a line; a sweep's own output too), answered first")] = None,
    processes: Annotated[int, typer.Option(
        min=1, help="worker processes, each loading the knowledge base once; at most the CPUs this process may use")] = 1,
    output: Annotated[Path | None, typer.Option(help="write the JSON Lines here instead of stdout")] = None,
    root: RootOption = None,
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
        lengths: list[int] = [read_size(n) for n in split(seq_len)]  # read as the workload reads it: 4k, 4Ki
    except Invalid as error:
        page(f"error: --seq-len: {error}", err)
        raise typer.Exit(BAD_INPUT) from None
    except (OSError, ValueError, SweepFileError) as error:
        page(f"error: {error}", err)
        raise typer.Exit(BAD_INPUT) from None
    models, tasks = split(model), split(task)
    if models or tasks:
        if not (models and tasks):
            page("error: a grid needs both --model and --task", err)
            raise typer.Exit(BAD_INPUT)
        workloads += grid(models, tasks, lengths, split(gpu))
    if not workloads:
        page("error: nothing to answer: give --model and --task, or --file", err)
        raise typer.Exit(BAD_INPUT)
    try:  # a link or a non-file at --output is refused; the file is put in place when the sweep ends
        sink = safewrite.open_output(output) if output is not None else sys.stdout
    except safepath.RefusedPath as refusal:
        fail(ValueError(f"--output {output}: {refusal}"), BAD_INPUT)
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
        fail_kb(error)
    finally:
        if output is not None:
            sink.close()
    first = f" (the first from the file: {first_failed})" if first_failed else ""
    page(f"answered {len(workloads)}, of which {failed} with an error{first}", err)
