"""`gpukb probe`: run a workload's one-GPU plan on the local device and compare with the prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .. import load_kb
from ..core.errors import ASK_ERRORS, KBError
from .common import BAD_INPUT, LangOption, Language, Optim, RootOption, Task, fail, fail_kb, page


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
    lang: LangOption = Language.en,
    root: RootOption = None,
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
        if out_dir is not None:
            pr.check_out(out_dir)  # before the run, not after it
        result = pr.run(load_kb(root), given, device=device, tiny=tiny, layers=layers, steps=steps,
                        force=force, command=pr.command_line(given, {"device": device, "tiny": tiny, "layers": layers,
                                                                     "steps": steps, "force": force}))
    except KBError as error:
        fail_kb(error, lang.value)
    except pr.ProbeError as error:
        fail(error, error.code, lang.value)
    except ASK_ERRORS as error:
        fail(error, BAD_INPUT, lang.value)
    page(pr.report(result, lang.value))
    if out_dir is not None:
        try:
            for path in pr.write(result, out_dir):
                page(f"wrote {path}")
        except pr.ProbeError as error:
            fail(error, error.code, lang.value)
